"""Compiled kernels of the two-layer profile solver (:mod:`replica.models._two_layer_profile`).

One call of :func:`evaluate` does what one evaluation of the fixed-point map needs at fixed global
order parameters (``D``, ``inner_v``, ``t_v``): it tabulates the first-layer curve
``s² = T(r) = (r − c(m_{P₁}(r)))/k(m_{P₁}(r))``, refines its interior extrema, places the
equal-potential front, builds the folded Gaussian panel rule in ``s`` with panel ends at the fronts,
solves every node's root, and sums the integrals of the map and of the free entropy. The formulas
are those of the module docstring of :mod:`replica.models._two_layer_profile`; the algorithms
(tabulation grid, Brent refinement of the extrema, Illinois inversion on the monotone pieces,
scan-and-Brent front) are those of :class:`replica.readout_grid.OverlapProfile` and
:func:`replica.readout_grid.equal_potential_threshold`, compiled.

Argument tuples (built by :class:`replica.models._two_layer_profile.EffectiveReadoutProfile`):

* ``curve = (kappa, A, W, cA, cW)``: ``κ = αb/(γ₁D)``, per readout value ``A_v``, ``w_v/γ₁``,
  ``(α/(γ₁D)) p(v) v² g₂'(inner_v)``, ``(γ₂/γ₁) p(v) w_v``;
* ``pot = (b, D, alpha, gamma1, gamma2, pvg, pv, pw)``: what the per-neuron potential adds, with
  ``pvg = p(v) v² g₂'(inner_v)``, ``pv = p(v)``, ``pw = p(v) w_v``;
* ``act1`` (:func:`replica.activations.compiled_activation`), ``p1``, ``p2``
  (:func:`priors.compiled.compiled_prior`).
"""

from __future__ import annotations

import math

import numpy as np

from priors._kernels import kernel
from hciz.compiled import rect_gain, rect_inverse, rect_iota, rect_values
from priors.compiled import spec_free_entropy, spec_overlap

from ..activations import spec_g, spec_g_both, spec_g_prime
from .._curve_kernels import folded_gaussian_panel_rule, illinois_point, illinois_update, running_extrema

__all__ = ["curve_T", "tabulate", "root_snr", "roots", "front", "evaluate", "potential", "evaluate_point",
           "global_channels"]

SELECT_LARGEST = 0.0
SELECT_LOW = 1e300
SELECT_ZERO = -1.0
_SCAN_TOP = 8.5 ** 2
_EPS = 2.220446049250313e-16


@kernel(cache=True, inline="always")
def _h_sum(q, g, gp, curve, p2):  # pragma: no cover - compiled
    """``c(q) = Σ_v (g₁'(q) cA_v + cW_v) m_{P₂}(max(A_v g₁(q) + W_v q, 0))``."""
    A, W, cA, cW = curve[1], curve[2], curve[3], curve[4]
    c = 0.0
    for v in range(A.size):
        snr2 = A[v] * g + W[v] * q
        if snr2 < 0.0:
            snr2 = 0.0
        h = min(max(spec_overlap(p2, snr2), 0.0), 1.0)
        c += (gp * cA[v] + cW[v]) * h
    return c


@kernel(cache=True, inline="always")
def curve_T(r, curve, act1, p1, p2):  # pragma: no cover - compiled
    """``T(r) = (r − c(q))/k(q)``, ``q = m_{P₁}(r)`` (``±inf`` where ``k(q) = κ g₁'(q) ≤ 0``)."""
    q = min(max(spec_overlap(p1, r), 0.0), 1.0)
    g, gp = spec_g_both(act1, q)
    k = curve[0] * gp
    num = r - _h_sum(q, g, gp, curve, p2)
    if k > 0.0:
        return num / k
    return np.inf if num > 0.0 else -np.inf


@kernel(cache=True)
def _minimize_T(lo, hi, sign, xatol, curve, act1, p1, p2):  # pragma: no cover - compiled
    """Brent's method for the minimum of ``sign·T`` on ``[lo, hi]`` (golden sections and parabolas),
    stopped when the bracket is below ``xatol`` (as ``scipy.optimize.minimize_scalar(bounded)``)."""
    golden = 0.3819660112501051
    a, b = lo, hi
    x = w = v = a + golden * (b - a)
    fx = fw = fv = sign * curve_T(x, curve, act1, p1, p2)
    d = 0.0
    e = 0.0
    for _ in range(200):
        m = 0.5 * (a + b)
        tol1 = 1.4901161193847656e-08 * abs(x) + xatol / 3.0
        tol2 = 2.0 * tol1
        if abs(x - m) <= tol2 - 0.5 * (b - a):
            break
        parabolic = False
        if abs(e) > tol1:
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            if abs(p) < abs(0.5 * q * e) and p > q * (a - x) and p < q * (b - x):
                e = d
                d = p / q
                u = x + d
                if u - a < tol2 or b - u < tol2:
                    d = tol1 if m >= x else -tol1
                parabolic = True
        if not parabolic:
            e = (b - x) if x < m else (a - x)
            d = golden * e
        u = x + d if abs(d) >= tol1 else (x + tol1 if d >= 0 else x - tol1)
        fu = sign * curve_T(u, curve, act1, p1, p2)
        if fu <= fx:
            if u < x:
                b = x
            else:
                a = x
            v, fv = w, fw
            w, fw = x, fx
            x, fx = u, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, fv = w, fw
                w, fw = u, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu
    return x


@kernel(cache=True)
def tabulate(r_grid, onset, curve, act1, p1, p2):  # pragma: no cover - compiled
    """``T`` on ``r_grid`` (``T[0] = onset``) with its interior extrema refined.

    Returns
    -------
    r, T : ndarray, shape (n,)
        The grid with each interior extremum moved to its refined position.
    minima, maxima : ndarray
        ``T`` at the interior local minima and maxima, in grid order.
    rmin, lmax : ndarray, shape (n,)
        Running minimum from the right and maximum from the left of ``T``.
    """
    n = r_grid.size
    r = r_grid.copy()
    T = np.empty(n)
    for j in range(n):
        T[j] = curve_T(r[j], curve, act1, p1, p2)
    T[0] = onset
    is_ext = np.zeros(n, dtype=np.bool_)
    for j in range(1, n - 1):
        if np.isfinite(T[j]) and (((T[j] < T[j - 1]) and (T[j] <= T[j + 1]))
                                  or ((T[j] > T[j - 1]) and (T[j] >= T[j + 1]))):
            is_ext[j] = True
    n_min = 0
    n_max = 0
    kind = np.zeros(n, dtype=np.int8)
    for j in range(1, n - 1):
        if not is_ext[j]:
            continue
        is_min = T[j] < T[j - 1]
        sign = 1.0 if is_min else -1.0
        lo, hi = r[j - 1], r[j + 1]
        x = _minimize_T(lo, hi, sign, 1e-13 * (1.0 + hi), curve, act1, p1, p2)
        t = curve_T(x, curve, act1, p1, p2)
        if (t < T[j]) if is_min else (t > T[j]):
            r[j] = x
            T[j] = t
        if is_min:
            kind[j] = 1
            n_min += 1
        else:
            kind[j] = -1
            n_max += 1
    minima = np.empty(n_min)
    maxima = np.empty(n_max)
    i_min = 0
    i_max = 0
    for j in range(n):
        if kind[j] == 1:
            minima[i_min] = T[j]
            i_min += 1
        elif kind[j] == -1:
            maxima[i_max] = T[j]
            i_max += 1
    rmin, lmax = running_extrema(T)
    return r, T, minima, maxima, rmin, lmax


@kernel(cache=True)
def _illinois(s, a, b, fa, fb, curve, act1, p1, p2):  # pragma: no cover - compiled
    """Root of ``T − s`` in ``[a, b]`` (``fa < 0 < fb``): Illinois iteration to a relative 1e-14 (as
    :meth:`replica.readout_grid.OverlapProfile._invert`)."""
    out = a
    side = 0
    for _ in range(100):
        x = illinois_point(a, b, fa, fb)
        fx = curve_T(x, curve, act1, p1, p2) - s
        out = x
        a, b, fa, fb, side = illinois_update(a, b, fa, fb, side, x, fx)
        if b - a <= 1e-14 * b or abs(fx) <= 1e-14 * s:
            break
    return out


@kernel(cache=True)
def _invert(s, j, r, T, curve, act1, p1, p2):  # pragma: no cover - compiled
    """``x`` in ``[r_j, r_{j+1}]`` with ``T(x) = s`` (``T`` increasing there).

    Start: the inverse cubic through the four tabulated points around the cell where they increase
    (error ~1e-8 relative on the tabulation grid), then one Newton step with its slope and one secant
    step (error ~1e-8 · 1e-12); a secant correction below 1e-9 relative is accepted without another
    evaluation (superlinear convergence: the error is then at the rounding level). Any step leaving the
    bracket, a non-increasing neighbourhood (next to an extremum of ``T``) or a slow correction hands
    over to the Illinois iteration on the bracket."""
    n = r.size
    a, b = r[j], r[j + 1]
    fa = max(T[j] - s, -1e300)
    fb = min(T[j + 1] - s, 1e300)
    if not (fa < 0.0 and fb > 0.0):
        return _illinois(s, a, b, fa, fb, curve, act1, p1, p2)
    lo, hi = j - 1, j + 2
    if lo < 0 or hi > n - 1 or not (np.isfinite(T[lo]) and np.isfinite(T[hi])
                                     and T[lo] < T[j] and T[j + 1] < T[hi]):
        return _illinois(s, a, b, fa, fb, curve, act1, p1, p2)
    # inverse cubic: r as a polynomial in T through (T[lo..hi], r[lo..hi]), and its slope dr/dT at s
    x0 = 0.0
    slope = 0.0
    for i in range(lo, hi + 1):
        li = 1.0
        dli = 0.0
        for k in range(lo, hi + 1):
            if k == i:
                continue
            den = T[i] - T[k]
            term = (s - T[k]) / den
            dli = dli * term + li / den
            li *= term
        x0 += r[i] * li
        slope += r[i] * dli
    if not (x0 > a and x0 < b and slope > 0.0):
        return _illinois(s, a, b, fa, fb, curve, act1, p1, p2)
    f0 = curve_T(x0, curve, act1, p1, p2) - s
    if f0 == 0.0:
        return x0
    if f0 < 0.0:
        a, fa = x0, f0
    else:
        b, fb = x0, f0
    x1 = x0 - f0 * slope
    if not (x1 > a and x1 < b):
        return _illinois(s, a, b, fa, fb, curve, act1, p1, p2)
    f1 = curve_T(x1, curve, act1, p1, p2) - s
    if f1 == 0.0 or f1 == f0:
        return x1
    if f1 < 0.0:
        a, fa = x1, f1
    else:
        b, fb = x1, f1
    x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
    if x2 > a and x2 < b and abs(x2 - x1) <= 1e-9 * x1:
        return x2
    return _illinois(s, a, b, fa, fb, curve, act1, p1, p2)


@kernel(cache=True)
def root_snr(s, threshold, r, T, rmin, lmax, onset, curve, act1, p1, p2):  # pragma: no cover - compiled
    """``Q̂₁`` of the selected root at ``s²``: the largest root above ``threshold``, the low one below
    (:meth:`replica.readout_grid.OverlapProfile.snr`)."""
    n = r.size
    if threshold == SELECT_ZERO:
        return 0.0
    if s > threshold:
        j = np.searchsorted(rmin, s) - 1
        if j >= n - 1:
            return r[n - 1]
        if j >= 0:
            return _invert(s, j, r, T, curve, act1, p1, p2)
        return 0.0
    if np.isfinite(onset) and s > onset:
        j = np.searchsorted(lmax, s)
        if j < n:
            return _invert(s, j - 1, r, T, curve, act1, p1, p2)
        return r[n - 1]
    return 0.0


@kernel(cache=True)
def potential(s, snr1, curve, pot, act1, p1, p2):  # pragma: no cover - compiled
    """Free entropy per unit mass of the first-layer neurons at ``s²`` on the root ``Q̂₁ = snr1``,
    relative to ``Q ≡ 0`` (:meth:`replica.models._two_layer_profile.TwoLayerProfileSolver.neuron_potential`)."""
    A, W = curve[1], curve[2]
    b, D, alpha, gam1, gam2 = pot[0], pot[1], pot[2], pot[3], pot[4]
    pvg, pv, pw = pot[5], pot[6], pot[7]
    q1 = min(max(spec_overlap(p1, snr1), 0.0), 1.0)
    g1q = spec_g(act1, q1)
    sum_vg = 0.0
    ent2 = 0.0
    rect = 0.0
    for v in range(A.size):
        snr2 = A[v] * g1q + W[v] * q1
        if snr2 < 0.0:
            snr2 = 0.0
        q2 = min(max(spec_overlap(p2, snr2), 0.0), 1.0)
        sum_vg += pvg[v] * q2
        ent2 += pv[v] * (spec_free_entropy(p2, snr2) - q2 * snr2 / 2.0)
        rect += pw[v] * q2
    energetic = g1q * (b * s + sum_vg) / (2.0 * D)
    ent1 = gam1 / alpha * (spec_free_entropy(p1, snr1) - q1 * snr1 / 2.0)
    return energetic + ent1 + gam1 * gam2 / alpha * ent2 + gam2 / (2.0 * alpha) * rect * q1


@kernel(cache=True)
def _potential_difference(s, r, T, rmin, lmax, onset, curve, pot, act1, p1, p2):  # pragma: no cover - compiled
    """Potential of the largest minus the low root at ``s²``; NaN where they coincide."""
    hi = root_snr(s, SELECT_LARGEST, r, T, rmin, lmax, onset, curve, act1, p1, p2)
    lo = root_snr(s, SELECT_LOW, r, T, rmin, lmax, onset, curve, act1, p1, p2)
    if abs(hi - lo) <= 1e-12 * (1.0 + abs(hi)):
        return np.nan
    return potential(s, hi, curve, pot, act1, p1, p2) - potential(s, lo, curve, pot, act1, p1, p2)


@kernel(cache=True)
def _brent_root(a, b, fa, fb, xtol, rtol, r, T, rmin, lmax, onset, curve, pot, act1, p1, p2):  # pragma: no cover
    """Brent's root of the potential difference in ``[a, b]`` (``fa·fb ≤ 0``) to ``xtol + rtol|x|``."""
    c, fc = a, fa
    d = e = b - a
    for _ in range(200):
        if fb * fc > 0.0:
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):
            a, fa = b, fb
            b, fb = c, fc
            c, fc = a, fa
        tol = 2.0 * _EPS * abs(b) + 0.5 * (xtol + rtol * abs(b))
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0.0:
            return b
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:
                p = 2.0 * m * s
                q = 1.0 - s
            else:
                q = fa / fc
                rr = fb / fc
                p = s * (2.0 * m * q * (q - rr) - (b - a) * (rr - 1.0))
                q = (q - 1.0) * (rr - 1.0) * (s - 1.0)
            if p > 0.0:
                q = -q
            else:
                p = -p
            if 2.0 * p < min(3.0 * m * q - abs(tol * q), abs(e * q)):
                e = d
                d = p / q
            else:
                d = m
                e = m
        else:
            d = m
            e = m
        a, fa = b, fb
        if abs(d) > tol:
            b += d
        else:
            b += tol if m > 0 else -tol
        fb = _potential_difference(b, r, T, rmin, lmax, onset, curve, pot, act1, p1, p2)
        if not np.isfinite(fb):
            return b
    return b


@kernel(cache=True)
def front(r, T, minima, maxima, rmin, lmax, onset, scan_base, curve, pot, act1, p1, p2):  # pragma: no cover
    """``s²`` of the equal-potential front (:func:`replica.readout_grid.equal_potential_threshold`):
    :data:`SELECT_LARGEST` when the largest root wins wherever there is a choice, :data:`SELECT_LOW`
    when it never does up to ``s = 8.5``, else the last sign change of the potential difference on a
    scan (dense in every bistable window), refined by Brent's method (relative 1e-12)."""
    if minima.size == 0:
        return SELECT_LARGEST
    first = np.min(minima)
    if not first < _SCAN_TOP:
        return SELECT_LARGEST
    # window ends: extrema of T and its onset, inside [first, top]
    cand = np.concatenate((minima, maxima, np.array([onset, _SCAN_TOP])))
    keep = np.zeros(cand.size, dtype=np.bool_)
    for i in range(cand.size):
        keep[i] = np.isfinite(cand[i]) and cand[i] >= first and cand[i] <= _SCAN_TOP
    ends = np.unique(cand[keep])
    pieces = [np.array([first * (1.0 + 1e-12)])]
    for i in range(ends.size - 1):
        lo, hi = ends[i] * (1.0 + 1e-9), ends[i + 1] * (1.0 - 1e-9)
        if hi <= 0.0:
            continue
        if lo <= 0.0:  # s² ≥ 0: a window reaching below 0 is scanned from 0 on
            pieces.append(np.linspace(0.0, hi, 10)[1:])
        else:
            pieces.append(np.exp(np.linspace(math.log(lo), math.log(hi), 9)))
    pieces.append(scan_base[scan_base > first])
    total = 0
    for p in pieces:
        total += p.size
    allpts = np.empty(total)
    k = 0
    for p in pieces:
        allpts[k:k + p.size] = p
        k += p.size
    scan = np.unique(allpts)
    d = np.empty(scan.size)
    for i in range(scan.size):
        d[i] = _potential_difference(scan[i], r, T, rmin, lmax, onset, curve, pot, act1, p1, p2)
    n_choice = 0
    any_neg = False
    any_pos = False
    j = -1
    for i in range(scan.size):
        if np.isfinite(d[i]):
            n_choice += 1
            if d[i] < 0.0:
                any_neg = True
            if d[i] > 0.0:
                any_pos = True
            if d[i] <= 0.0:
                j = i
    if n_choice == 0 or not any_neg:
        return SELECT_LARGEST
    if not any_pos:
        return SELECT_LOW
    k = -1
    for i in range(j + 1, scan.size):
        if np.isfinite(d[i]) and d[i] > 0.0:
            k = i
            break
    if k < 0:
        return SELECT_LOW
    if k > j + 1:  # another bistable window above, entered on the largest root: select from its start
        return scan[k - 1]
    return _brent_root(scan[j], scan[k], d[j], d[k], 1e-14, 1e-12, r, T, rmin, lmax, onset, curve, pot,
                       act1, p1, p2)


@kernel(cache=True)
def roots(s2, threshold, r, T, rmin, lmax, onset, curve, act1, p1, p2):  # pragma: no cover - compiled
    """Everything the selected roots at ``s² = s2`` fix: ``(Q̂₁, Q₁, g₁(Q₁), Q̂₂ (n_v, n), Q₂ (n_v, n))``."""
    A, W = curve[1], curve[2]
    n = s2.size
    n_v = A.size
    snr1 = np.empty(n)
    q1 = np.empty(n)
    g1q = np.empty(n)
    snr2 = np.empty((n_v, n))
    q2 = np.empty((n_v, n))
    for i in range(n):
        x = root_snr(s2[i], threshold, r, T, rmin, lmax, onset, curve, act1, p1, p2)
        snr1[i] = x
        q = min(max(spec_overlap(p1, x), 0.0), 1.0)
        q1[i] = q
        g = spec_g(act1, q)
        g1q[i] = g
        for v in range(n_v):
            y = A[v] * g + W[v] * q
            if y < 0.0:
                y = 0.0
            snr2[v, i] = y
            q2[v, i] = min(max(spec_overlap(p2, y), 0.0), 1.0)
    return snr1, q1, g1q, snr2, q2


@kernel(cache=True)
def evaluate(r, T, rmin, lmax, onset, threshold, breakpoints, t, wt, curve, act1, p1, p2):  # pragma: no cover
    """Rule and roots of one evaluation: ``(nodes, weights, Q̂₁, Q₁, g₁(Q₁), Q̂₂, Q₂, ent1, ent2)`` with
    ``ent1 = Σ w (ψ₁(Q̂₁) − Q₁Q̂₁/2)`` and ``ent2[v] = Σ w (ψ₂(Q̂₂) − Q₂Q̂₂/2)`` (the entropic sums
    of the free entropy)."""
    nodes, weights = folded_gaussian_panel_rule(np.sqrt(breakpoints), t, wt)
    snr1, q1, g1q, snr2, q2 = roots(nodes * nodes, threshold, r, T, rmin, lmax, onset, curve, act1, p1, p2)
    ent1 = 0.0
    for i in range(nodes.size):
        ent1 += weights[i] * (spec_free_entropy(p1, snr1[i]) - q1[i] * snr1[i] / 2.0)
    n_v = snr2.shape[0]
    ent2 = np.zeros(n_v)
    for v in range(n_v):
        for i in range(nodes.size):
            ent2[v] += weights[i] * (spec_free_entropy(p2, snr2[v, i]) - q2[v, i] * snr2[v, i] / 2.0)
    return nodes, weights, snr1, q1, g1q, snr2, q2, ent1, ent2


@kernel(cache=True)
def curve_T_many(r, curve, act1, p1, p2):  # pragma: no cover - compiled
    """:func:`curve_T` at every entry of the 1-D array ``r``."""
    out = np.empty(r.size)
    for i in range(r.size):
        out[i] = curve_T(r[i], curve, act1, p1, p2)
    return out


@kernel(cache=True)
def c_many(q, curve, act1, p2):  # pragma: no cover - compiled
    """``c(q)`` of the curve at every entry of the 1-D array ``q``."""
    out = np.empty(q.size)
    for i in range(q.size):
        qi = min(max(q[i], 0.0), 1.0)
        out[i] = _h_sum(qi, spec_g(act1, qi), spec_g_prime(act1, qi), curve, p2)
    return out


@kernel(cache=True)
def snr_many(s, threshold, r, T, rmin, lmax, onset, curve, act1, p1, p2):  # pragma: no cover - compiled
    """:func:`root_snr` at every entry of the 1-D array ``s``."""
    out = np.empty(s.size)
    for i in range(s.size):
        out[i] = root_snr(s[i], threshold, r, T, rmin, lmax, onset, curve, act1, p1, p2)
    return out


@kernel(cache=True)
def roots_from_snr(snr1, curve, act1, p1, p2):  # pragma: no cover - compiled
    """``(Q₁, g₁(Q₁), Q̂₂ (n_v, n), Q₂ (n_v, n))`` at the first-layer SNRs ``snr1`` (1-D)."""
    A, W = curve[1], curve[2]
    n = snr1.size
    n_v = A.size
    q1 = np.empty(n)
    g1q = np.empty(n)
    snr2 = np.empty((n_v, n))
    q2 = np.empty((n_v, n))
    for i in range(n):
        q = min(max(spec_overlap(p1, snr1[i]), 0.0), 1.0)
        q1[i] = q
        g = spec_g(act1, q)
        g1q[i] = g
        for v in range(n_v):
            y = A[v] * g + W[v] * q
            if y < 0.0:
                y = 0.0
            snr2[v, i] = y
            q2[v, i] = min(max(spec_overlap(p2, y), 0.0), 1.0)
    return q1, g1q, snr2, q2


@kernel(cache=True)
def potential_many(s, snr1, curve, pot, act1, p1, p2):  # pragma: no cover - compiled
    """:func:`potential` at every pair of the 1-D arrays ``s``, ``snr1``."""
    out = np.empty(s.size)
    for i in range(s.size):
        out[i] = potential(s[i], snr1[i], curve, pot, act1, p1, p2)
    return out


@kernel(cache=True)
def global_channels(alpha, D, inner, t, consts, v2, act2, rect, gl_x, gl_w):  # pragma: no cover - compiled
    """What the globals fix per readout value: ``(g₂'(inner_v), τ_v, r₂:₁(v), w_v, Q₂:₁(v))`` with
    ``m_rect(τ_v) = t_v``, ``r₂:₁ = α a v² g₂'/(γ₂D)``, ``w_v = (m(τ + r) − m(τ))/m'(τ)``,
    ``Q₂:₁ = m_rect(τ + r)``; ``consts = (a, b, γ₁, γ₂, g₁(1), g₂(1), Δ)``."""
    a, gam2 = consts[0], consts[3]
    n_v = inner.size
    g2p = np.empty(n_v)
    tau = np.empty(n_v)
    r21 = np.empty(n_v)
    gain = np.empty(n_v)
    q21 = np.empty(n_v)
    for v in range(n_v):
        g2p[v] = spec_g_prime(act2, inner[v])
        tau[v] = rect_inverse(rect, min(t[v], 1.0 - 1e-15)) if t[v] > 0.0 else 0.0
        r21[v] = max(alpha * a * v2[v] * g2p[v] / (gam2 * D), 0.0)
        gain[v] = rect_gain(rect, tau[v], r21[v], gl_x, gl_w)
        q21[v] = rect_values(rect, tau[v] + r21[v])[0]
    return g2p, tau, r21, gain, q21


@kernel(cache=True)
def _breakpoints(onset, minima, maxima, threshold):  # pragma: no cover - compiled
    """``s²`` where the selected profile may be non-smooth: onset and extrema of ``T`` (finite, > 0) and
    the front ``threshold`` when it selects (``0 < threshold < SELECT_LOW``)."""
    cand = np.concatenate((np.array([onset]), minima, maxima, np.array([threshold])))
    keep = np.zeros(cand.size, dtype=np.bool_)
    for i in range(cand.size - 1):
        keep[i] = np.isfinite(cand[i]) and cand[i] > 0.0
    keep[cand.size - 1] = threshold > 0.0 and threshold < SELECT_LOW
    return np.unique(cand[keep])


@kernel(cache=True)
def evaluate_point(alpha, D, inner, t, threshold, consts, pv, v2, act1, act2, p1, p2, rect, r_grid, scan_base,
                   t_gl, w_gl, gl_x, gl_w):  # pragma: no cover - compiled
    """One evaluation of the two-layer map at the globals ``(D, inner, t)`` with a selection (not
    :data:`SELECT_ZERO`): the module docstring of :mod:`replica.models._two_layer_profile`.

    Returns a tuple: the per-readout quantities ``(g₂', τ, r₂:₁, w, Q₂:₁)``, the curve ``(κ, A, W, cA,
    cW)``, its table ``(onset, r, T, rmin, lmax, minima, maxima)``, the selection used, the rule
    ``(nodes, weights)`` and roots ``(Q̂₁, Q₁, g₁(Q₁), Q̂₂, Q₂)``, the new globals ``(inner', t', D')``,
    and the free-entropy sums ``(ent1, Σ_v p(v) ent2_v, rect)`` with
    ``rect = Σ_v p(v)[r(1 − Q₂:₁)/2 − ι(τ' + r) + ι(τ')]``, ``m_rect(τ') = t'``.
    """
    a, b, gam1, gam2, g1_one, g2_one, delta = consts
    g2p, tau, r21, gain, q21 = global_channels(alpha, D, inner, t, consts, v2, act2, rect, gl_x, gl_w)
    n_v = inner.size
    curve = (alpha * b / (gam1 * D), alpha * v2 * g2p / (gam1 * gam2 * D), gain / gam1,
             alpha / (gam1 * D) * pv * v2 * g2p, gam2 / gam1 * pv * gain)
    tiny = 1e-9
    q_tiny = min(max(spec_overlap(p1, tiny), 0.0), 1.0)
    c_tiny = _h_sum(q_tiny, spec_g(act1, q_tiny), spec_g_prime(act1, q_tiny), curve, p2)
    onset = np.inf if tiny - c_tiny > 0.0 else -np.inf
    r, T, minima, maxima, rmin, lmax = tabulate(r_grid, onset, curve, act1, p1, p2)
    pot = (b, D, alpha, gam1, gam2, pv * v2 * g2p, pv, pv * gain)
    if threshold == -2.0:  # SELECT_EQUILIBRIUM: every neuron on its root of larger free entropy
        threshold = front(r, T, minima, maxima, rmin, lmax, onset, scan_base, curve, pot, act1, p1, p2)
    bp = _breakpoints(onset, minima, maxima, threshold)
    nodes, weights, snr1, q1, g1q, snr2, q2, ent1, ent2 = evaluate(r, T, rmin, lmax, onset, threshold, bp, t_gl,
                                                                   w_gl, curve, act1, p1, p2)
    inner_new = np.empty(n_v)
    t_new = np.empty(n_v)
    gap2 = 0.0
    ent2_sum = 0.0
    rect_sum = 0.0
    for v in range(n_v):
        acc_i = 0.0
        acc_t = 0.0
        for i in range(nodes.size):
            acc_i += weights[i] * g1q[i] * q2[v, i]
            acc_t += weights[i] * q1[i] * q2[v, i]
        inner_new[v] = a * q21[v] + acc_i
        t_new[v] = acc_t
        gap2 += pv[v] * v2[v] * (g2_one - spec_g(act2, min(max(inner_new[v], 0.0), 1.0)))
        ent2_sum += pv[v] * ent2[v]
        tp = min(max(t_new[v], 0.0), 1.0 - 1e-15)
        tau_new = rect_inverse(rect, tp) if tp > 0.0 else 0.0
        rect_sum += pv[v] * (r21[v] * (1.0 - q21[v]) / 2.0 - rect_iota(rect, tau_new + r21[v])
                             + rect_iota(rect, tau_new))
    gap1 = 0.0
    for i in range(nodes.size):
        gap1 += weights[i] * nodes[i] * nodes[i] * (g1_one - g1q[i])
    D_new = delta + b * gap1 + gap2
    return (g2p, tau, r21, gain, q21, curve, onset, r, T, rmin, lmax, minima, maxima, threshold, nodes, weights,
            snr1, q1, g1q, snr2, q2, inner_new, t_new, D_new, ent1, ent2_sum, rect_sum)
