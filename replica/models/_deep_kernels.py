"""Compiled fixed-point map of L ≥ 2 hidden layers on front-aligned rules (docs/deep_linear.md §2–§4, §11).

:func:`front_map_rows` evaluates, for every row of a batch of packed overlaps that share their fronts,
what :meth:`replica.models.deep_fronts.DeepFrontModel.update_many` evaluates with NumPy: the forward
pass ``c_ℓ``, ``G_ℓ = g_ℓ(c_ℓ)``, the error ``K_d − K*`` and ``D``, the back-propagated label weights
``U_ℓ``, ``B_ℓ = g_ℓ'(c_ℓ)U_ℓ``, the energetic conjugates, the tilts ``t_P`` and ``τ_P`` of every product,
the products' conjugates from the longest down with their feedback (the gains), the layers'
conjugates, the next overlaps, the probe potentials and the Newton step of every front towards equal
potential with the probe re-seeding, and the ghost rule (a layer whose front is at ``FRONT_MAX`` has no
neuron on the large root). The formulas and their order are those of
:meth:`replica.models.deep_linear.DeepLinearModel.conjugates` and of
:meth:`~replica.models.deep_fronts.DeepFrontModel._new_fronts`; the activations' ``g, g'``
(:func:`replica.activations.compiled_activation`) and the priors' channels
(:func:`priors.compiled.compiled_prior`) are their compiled forms (agreement 1e-13 with the Python
methods), the product channels the compiled tables of :mod:`hciz.compiled`; the three come as numba typed
lists (one compiled specialization for every depth and number of products). The NumPy map stays the
reference (tests/test_deep_kernels_map.py: equal to 1e-12 on random points with fronts at both ends).

Layout (:func:`layout_of`, built once per model): one row per matrix ``W_{ℓ:m}`` in packing order,
``(row layer ℓ, column layer m − 1, offset, rows, columns, channel or −1, top factor, bottom factor)``
(``keys``), ``(w_X, A_{ℓ,m})`` (``kfloat``), the products from the longest down (``order``), the table
``A[ℓ, m]`` (``Atab``), and per label layer 0 … L its offset in the flat label arrays (``loff``).
"""

from __future__ import annotations

import math

import numpy as np

from priors._kernels import kernel
from hciz.compiled import rect_gain, rect_inverse, rect_iota, rect_values
from priors.compiled import spec_free_entropy, spec_overlap

from ..activations import spec_g_both

__all__ = ["layout_of", "front_map_rows", "state_row", "BASE_ROWS"]

_K_ROW, _K_COL, _K_OFF, _K_NR, _K_NC, _K_CH, _K_T, _K_B = range(8)


def layout_of(core) -> tuple:
    """``(keys, kfloat, order, Atab, loff)`` of a :class:`~replica.models.deep_linear.DeepLinearModel`
    (module docstring); label counts are those of its current rules (constant for a front model)."""
    L = core.L
    index = {k: i for i, k in enumerate(core.keys)}
    channel = {P: j for j, P in enumerate(core.products)}
    keys = np.full((len(core.keys), 8), -1, dtype=np.int64)
    kfloat = np.zeros((len(core.keys), 2))
    for i, (ell, m) in enumerate(core.keys):
        sl = core._slices[(ell, m)]
        nr, nc = core.shapes[(ell, m)]
        keys[i, :5] = (ell, m - 1, sl.start, nr, nc)
        if ell != m:
            T, B = core.factors[(ell, m)]
            keys[i, 5:] = (channel[(ell, m)], index[T], index[B])
        kfloat[i] = (core.entries[(ell, m)], core.A(ell, m))
    order = np.array([index[P] for P in sorted(core.products, key=lambda k: -(k[0] - k[1]))], dtype=np.int64)
    Atab = np.zeros((L + 2, L + 2))
    for i in range(1, L + 2):
        for j in range(1, i + 1):
            Atab[i, j] = core.A(i, j)
    sizes = [w.size for w in core.label_weights]
    loff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return keys, kfloat, order, Atab, loff


@kernel(cache=True, inline="always")
def _clip01(x):  # pragma: no cover - compiled
    """``np.clip(x, 0, 1)`` (NaN stays NaN)."""
    if x < 0.0:
        return 0.0
    if x > 1.0:
        return 1.0
    return x


@kernel(cache=True)
def _row_conjugates(alpha, delta, x, keys, kfloat, order, Atab, loff, lw, lsq, acts, priors, rects, g_one,
                    gl_x, gl_w, Q, c, G, U, Bw, hat, t, tau, gain, new, t_seen, tau_seen, linear, base,
                    lin):  # pragma: no cover
    """Conjugates and next overlaps of one packed row (``DeepLinearModel.conjugates``), written into the
    work arrays; returns ``(D, finite)``. ``t_seen``/``tau_seen`` carry the last tilt of every product entry
    and its inverse from row to row: an entry whose tilt is bitwise the same reuses its ``τ`` (the rows of a
    finite-difference Jacobian change a few tilts each), so the result is the same as inverting again.

    ``linear``: the row is a point next to the base point whose channel values ``base`` holds
    (:func:`front_map_rows`, :func:`_store_base`); a product entry whose tilt moved by at most
    :data:`_LINEAR_TILT` of its distance from 0 and 1 has its tilt inverse, gain and next overlap to first
    order in the changes of its tilt and conjugate, ``τ = τ₀ + δt/m'(τ₀)``,
    ``gain₀ + (m'(τ₀ + r₀)/m'(τ₀)) δr + (∂gain/∂τ) δτ`` and ``m(τ₀ + r₀) + m'(τ₀ + r₀)(δτ + δr)``, and is flagged
    in ``lin`` (read by the potentials); the others are evaluated."""
    L = Atab.shape[0] - 2
    n_keys = keys.shape[0]
    for i in range(x.size):
        if x[i] != x[i]:  # a NaN row is NaN (the tables must not be read at NaN: their panel index is undefined)
            return np.nan, False
        Q[i] = _clip01(x[i])
    # forward pass (layer 0: the input, c = G = 1)
    c[0] = 1.0
    G[0] = 1.0
    for ell in range(1, L + 1):
        o, n = loff[ell], loff[ell + 1] - loff[ell]
        for i in range(n):
            c[o + i] = 0.0
        for k in range(n_keys):
            if keys[k, 0] != ell:
                continue
            m1 = keys[k, 1]
            A = kfloat[k, 1]
            off, nc = keys[k, 2], keys[k, 4]
            oc = loff[m1]
            for i in range(n):
                s = 0.0
                for j in range(nc):
                    s += Q[off + i * nc + j] * (lw[oc + j] * G[oc + j])
                c[o + i] += A * s
        act = acts[ell - 1]
        for i in range(n):
            gv, gp = spec_g_both(act, c[o + i])
            G[o + i] = gv
            Bw[o + i] = gp  # g' for now; times U below
    mmse = 0.0
    for m in range(1, L + 1):
        o, n = loff[m], loff[m + 1] - loff[m]
        s = 0.0
        for j in range(n):
            s += (lsq[o + j] * (g_one[m - 1] - G[o + j])) * lw[o + j]
        mmse += Atab[L + 1, m + 1] * s
    D = delta + mmse
    # back-propagated label weights
    oL, nL = loff[L], loff[L + 1] - loff[L]
    for i in range(nL):
        U[oL + i] = lsq[oL + i]
        Bw[oL + i] = lsq[oL + i] * Bw[oL + i]
    for m in range(L - 1, 0, -1):
        o, n = loff[m], loff[m + 1] - loff[m]
        for j in range(n):
            U[o + j] = Atab[L + 1, m + 1] * lsq[o + j]
        for k in range(n_keys):
            ell = keys[k, 0]
            if keys[k, 1] != m or ell <= m:  # the matrices (ℓ, m + 1), ℓ > m
                continue
            A = Atab[ell, m + 1]
            off, nr, nc = keys[k, 2], keys[k, 3], keys[k, 4]
            orow = loff[ell]
            for j in range(nc):
                s = 0.0
                for i in range(nr):
                    s += (lw[orow + i] * Bw[orow + i]) * Q[off + i * nc + j]
                U[o + j] += A * s
        for j in range(n):
            Bw[o + j] = Bw[o + j] * U[o + j]
    # energetic conjugates
    scale = alpha / D
    for k in range(n_keys):
        ell, m1, off, nr, nc = keys[k, 0], keys[k, 1], keys[k, 2], keys[k, 3], keys[k, 4]
        coef = (kfloat[k, 1] / kfloat[k, 0]) * scale
        orow, ocol = loff[ell], loff[m1]
        for i in range(nr):
            for j in range(nc):
                hat[off + i * nc + j] = coef * (Bw[orow + i] * G[ocol + j])
                t[off + i * nc + j] = 0.0
                tau[off + i * nc + j] = 0.0
                gain[off + i * nc + j] = 0.0
    # tilts of the products
    for k in range(n_keys):
        if keys[k, 5] < 0:
            continue
        off, nr, nc = keys[k, 2], keys[k, 3], keys[k, 4]
        kT, kB = keys[k, 6], keys[k, 7]
        oT, oB, ninner = keys[kT, 2], keys[kB, 2], keys[kT, 4]
        oin = loff[keys[kT, 1]]
        spec = rects[keys[k, 5]]
        for i in range(nr):
            for j in range(nc):
                s = 0.0
                for r in range(ninner):
                    s += Q[oT + i * ninner + r] * (lw[oin + r] * Q[oB + r * nc + j])
                s = _clip01(s)
                e = off + i * nc + j
                t[e] = s
                lin[e] = False
                if linear and base[_B_OK, e] > 0.0:
                    # τ(t) to first order about the base's tilt where the tilt moved by a small fraction of
                    # its distance from 0 and 1 (τ ~ 1/(1 − t) near 1: there the first order is no guide)
                    t0 = base[_B_T, e]
                    dt = abs(s - t0)
                    lin[e] = dt <= _LINEAR_TILT * (1.0 - t0) and dt <= _LINEAR_TILT * (t0 if t0 > 0.0 else 1.0)
                if lin[e]:
                    tau[e] = max(base[_B_TAU, e] + (s - base[_B_T, e]) * base[_B_DTAU, e], 0.0)
                elif s == t_seen[e]:
                    tau[e] = tau_seen[e]
                else:
                    tau[e] = rect_inverse(spec, min(s, 1.0 - 1e-15)) if s > 0.0 else 0.0
                    t_seen[e] = s
                    tau_seen[e] = tau[e]
    # products from the longest down, then the layers: energetic part + feedback of the longer products
    done = np.zeros(n_keys, dtype=np.bool_)
    for step in range(order.size + L):
        X = order[step] if step < order.size else step - order.size  # layers are keys 0 … L − 1
        offX, nrX, ncX = keys[X, 2], keys[X, 3], keys[X, 4]
        for P in range(n_keys):
            if keys[P, 5] < 0 or not done[P]:
                continue
            kT, kB = keys[P, 6], keys[P, 7]
            if X != kT and X != kB:
                continue
            ratio = kfloat[P, 0] / kfloat[X, 0]
            offP, nrP, ncP = keys[P, 2], keys[P, 3], keys[P, 4]
            if X == kT:
                # (gain ⊙ p_cols) Q_Bᵀ: [i, r] = Σ_k gain[i, k] p[k] Q_B[r, k]
                oB, ocol = keys[kB, 2], loff[keys[P, 1]]
                for i in range(nrX):
                    for r in range(ncX):
                        s = 0.0
                        for kk in range(ncP):
                            s += (gain[offP + i * ncP + kk] * lw[ocol + kk]) * Q[oB + r * ncP + kk]
                        hat[offX + i * ncX + r] += ratio * s
            if X == kB:
                # Q_Tᵀ (p_rows ⊙ gain): [r, k] = Σ_i Q_T[i, r] p[i] gain[i, k]
                oT, orow, nT = keys[kT, 2], loff[keys[P, 0]], keys[kT, 4]
                for r in range(nrX):
                    for kk in range(ncX):
                        s = 0.0
                        for i in range(nrP):
                            s += Q[oT + i * nT + r] * (lw[orow + i] * gain[offP + i * ncP + kk])
                        hat[offX + r * ncX + kk] += ratio * s
        for e in range(nrX * ncX):
            h = hat[offX + e]
            if h < 0.0:
                hat[offX + e] = 0.0
        if keys[X, 5] >= 0:
            spec = rects[keys[X, 5]]
            for e in range(offX, offX + nrX * ncX):
                if lin[e]:
                    gain[e] = (base[_B_GAIN, e] + base[_B_DGAIN_R, e] * (hat[e] - base[_B_HAT, e])
                               + base[_B_DGAIN_TAU, e] * (tau[e] - base[_B_TAU, e]))
                else:
                    gain[e] = rect_gain(spec, tau[e], hat[e], gl_x, gl_w)
        done[X] = True
    finite = math.isfinite(D)
    for e in range(hat.size):
        if not math.isfinite(hat[e]):
            finite = False
    if not finite:  # the row is NaN: no channel is evaluated at a non-finite conjugate
        return D, False
    for k in range(n_keys):
        off, size = keys[k, 2], keys[k, 3] * keys[k, 4]
        if keys[k, 5] < 0:
            pr = priors[keys[k, 0] - 1]
            for e in range(size):
                new[off + e] = spec_overlap(pr, hat[off + e])
        else:
            spec = rects[keys[k, 5]]
            for e in range(off, off + size):
                if lin[e]:
                    new[e] = base[_B_M, e] + base[_B_DM, e] * ((hat[e] - base[_B_HAT, e]) + (tau[e] - base[_B_TAU, e]))
                else:
                    new[e] = rect_values(spec, tau[e] + hat[e])[0]
    return D, finite


#: rows of the base array of the linear rows (:func:`_store_base`): τ₀, r₀, gain₀, ∂gain/∂r, m(τ₀ + r₀),
#: m'(τ₀ + r₀), t₀, dτ/dt = 1/m'(τ₀), ∂gain/∂τ, ι(τ₀ + r₀), ι(τ₀), mmse(τ₀ + r₀)/2 = ι'(τ₀ + r₀), ι'(τ₀), and
#: 1 where the entry is linearized (its tilt is not clipped at 1)
(_B_TAU, _B_HAT, _B_GAIN, _B_DGAIN_R, _B_M, _B_DM, _B_T, _B_DTAU, _B_DGAIN_TAU, _B_IOTA_SUM, _B_IOTA_TAU,
 _B_DIOTA_SUM, _B_DIOTA_TAU, _B_OK) = range(14)
BASE_ROWS = 14
#: relative step of the central difference of the gain in τ at the base point
_GAIN_TAU_STEP = 1e-6
#: a product entry of a linear row is linearized when its tilt moved by at most this fraction of its distance
#: from 0 and from 1 (the error of the first order is then that fraction of the first-order change)
_LINEAR_TILT = 1e-3


@kernel(cache=True)
def _store_base(keys, rects, t, tau, hat, gain, base, gl_x, gl_w):  # pragma: no cover - compiled
    """The channel values and first derivatives of the base point for the rows next to it
    (:func:`_row_conjugates`, ``linear``; rows :data:`BASE_ROWS`). ``∂gain/∂τ`` is a central difference of
    :func:`hciz.compiled.rect_gain` (step :data:`_GAIN_TAU_STEP` relative), the rest analytic
    (``dτ/dt = 1/m'(τ)``, ``2ι' = mmse``)."""
    for k in range(keys.shape[0]):
        if keys[k, 5] < 0:
            continue
        spec = rects[keys[k, 5]]
        off, size = keys[k, 2], keys[k, 3] * keys[k, 4]
        for e in range(off, off + size):
            m_lam, mmse_lam, dm_lam = rect_values(spec, tau[e] + hat[e])
            _, mmse_tau, dm_tau = rect_values(spec, tau[e])
            base[_B_TAU, e] = tau[e]
            base[_B_HAT, e] = hat[e]
            base[_B_GAIN, e] = gain[e]
            base[_B_DGAIN_R, e] = dm_lam / dm_tau
            base[_B_M, e] = m_lam
            base[_B_DM, e] = dm_lam
            base[_B_T, e] = t[e]
            base[_B_DTAU, e] = 1.0 / dm_tau
            eps = _GAIN_TAU_STEP * max(1.0, tau[e])
            lo = max(tau[e] - eps, 0.0)
            base[_B_DGAIN_TAU, e] = (rect_gain(spec, tau[e] + eps, hat[e], gl_x, gl_w)
                                     - rect_gain(spec, lo, hat[e], gl_x, gl_w)) / (tau[e] + eps - lo)
            base[_B_IOTA_SUM, e] = rect_iota(spec, tau[e] + hat[e])
            base[_B_IOTA_TAU, e] = rect_iota(spec, tau[e])
            base[_B_DIOTA_SUM, e] = 0.5 * mmse_lam
            base[_B_DIOTA_TAU, e] = 0.5 * mmse_tau
            ok = t[e] < 1.0 - 1e-15 and dm_tau > 0.0
            for r in range(BASE_ROWS - 1):
                if not math.isfinite(base[r, e]):
                    ok = False
            base[_B_OK, e] = 1.0 if ok else 0.0


@kernel(cache=True, inline="always")
def _entropic_sum(k, first, stride, count, weights, wo, keys, priors, rects, Q, hat, tau, lin,
                  base):  # pragma: no cover
    """``Σ_i weights[wo + i] · term(first + i·stride)`` over ``count`` entries of matrix ``k``, with the entropic
    term ``ψ_P(Q̂) − QQ̂/2`` of a layer or ``r(1 − Q)/2 − ι(τ + r) + ι(τ)`` of a product (the channel's tables
    taken out of their tuple once: indexing a tuple of tables costs more than a term)."""
    s = 0.0
    if keys[k, 5] < 0:
        pr = priors[keys[k, 0] - 1]
        for i in range(count):
            e = first + i * stride
            h = hat[e]
            s += (spec_free_entropy(pr, h) - Q[e] * h / 2.0) * weights[wo + i]
        return s
    spec = rects[keys[k, 5]]
    for i in range(count):
        e = first + i * stride
        h = hat[e]
        if lin[e]:  # ι to first order about the base point (2ι' = mmse)
            dt = tau[e] - base[_B_TAU, e]
            i_sum = base[_B_IOTA_SUM, e] + base[_B_DIOTA_SUM, e] * (dt + (h - base[_B_HAT, e]))
            i_tau = base[_B_IOTA_TAU, e] + base[_B_DIOTA_TAU, e] * dt
        else:
            i_sum = rect_iota(spec, tau[e] + h)
            i_tau = rect_iota(spec, tau[e])
        s += (h * (1.0 - Q[e]) / 2.0 - i_sum + i_tau) * weights[wo + i]
    return s


@kernel(cache=True)
def _potential(alpha, D, ell, j, keys, kfloat, Atab, loff, lw, lsq, priors, rects, g_one, Q, G, U, hat, t, tau,
               gain, lin, base):  # pragma: no cover - compiled
    """``φ(j) = ∂f/∂p(j)`` of node ``j`` of inner layer ``ell`` (``DeepFrontModel.neuron_potentials``): the
    products' ι to first order about ``base`` at the entries flagged in ``lin`` (:func:`_row_conjugates`)."""
    L = Atab.shape[0] - 2
    o = loff[ell]
    dgap = Atab[L + 1, ell + 1] * lsq[o + j] * g_one[ell - 1] - G[o + j] * U[o + j]
    phi = -dgap / (2.0 * D)
    for k in range(keys.shape[0]):
        a, b1, off, nr, nc = keys[k, 0], keys[k, 1], keys[k, 2], keys[k, 3], keys[k, 4]
        if a == ell:  # row j of the matrix, weighted by the column labels
            s = _entropic_sum(k, off + j * nc, 1, nc, lw, loff[b1], keys, priors, rects, Q, hat, tau, lin, base)
            phi += kfloat[k, 0] / alpha * s
        if b1 == ell:  # column j, weighted by the row labels
            s = _entropic_sum(k, off + j, nc, nr, lw, loff[a], keys, priors, rects, Q, hat, tau, lin, base)
            phi += kfloat[k, 0] / alpha * s
    for P in range(keys.shape[0]):
        if keys[P, 5] < 0:
            continue
        kT, kB = keys[P, 6], keys[P, 7]
        if keys[kT, 1] != ell:
            continue
        offP, nrP, ncP = keys[P, 2], keys[P, 3], keys[P, 4]
        oT, nT = keys[kT, 2], keys[kT, 4]
        oB, nB = keys[kB, 2], keys[kB, 4]
        orow, ocol = loff[keys[P, 0]], loff[keys[P, 1]]
        s = 0.0
        for r in range(nrP):
            qt = Q[oT + r * nT + j]
            for kk in range(ncP):
                e = offP + r * ncP + kk
                gv = gain[e] if t[e] < 1.0 else 0.0
                s += ((lw[orow + r] * gv) * lw[ocol + kk]) * qt * Q[oB + j * nB + kk]
        phi += kfloat[P, 0] / (2.0 * alpha) * s
    return phi


@kernel(cache=True)
def _reseed(new, keys, ell, probe, source, loff):  # pragma: no cover - compiled
    """Copy the rows and columns of node ``source`` of inner layer ``ell`` onto node ``probe``."""
    for k in range(keys.shape[0]):
        off, nr, nc = keys[k, 2], keys[k, 3], keys[k, 4]
        if keys[k, 0] == ell:
            for col in range(nc):
                new[off + probe * nc + col] = new[off + source * nc + col]
        if keys[k, 1] == ell:
            for row in range(nr):
                new[off + row * nc + probe] = new[off + row * nc + source]


@kernel(cache=True)
def _work_arrays(p, nlab):  # pragma: no cover - compiled
    """The work arrays of :func:`_row_conjugates` for ``p`` packed entries and ``nlab`` labels: ``Q, t, gain, new``
    (p,), ``c, G, U, Bw`` (nlab,), the tilt memo ``t_seen`` (NaN) and ``tau_seen``, the linear flags ``lin``."""
    return (np.empty(p), np.empty(p), np.empty(p), np.empty(p), np.empty(nlab), np.empty(nlab), np.empty(nlab),
            np.empty(nlab), np.full(p, np.nan), np.zeros(p), np.zeros(p, dtype=np.bool_))


@kernel(cache=True)
def front_map_rows(alpha, delta, X, fronts, n_panel, front_max, probe_floor, phase_threshold, keys, kfloat,
                   order, Atab, loff, lw, lsq, lside, acts, priors, rects, g_one, gl_x, gl_w, near, base,
                   out):  # pragma: no cover - compiled
    """The map of :meth:`DeepFrontModel.update_many` for rows ``X`` (B, p) of packed overlaps that share
    the (clipped) ``fronts`` (nf,), each at most its ``front_max`` (nf,), written into ``out`` (B, nf + p): the next
    fronts, then the next overlaps; a row whose ``D`` or conjugates are not finite is NaN (module docstring).

    ``near``: 0, every row evaluated in full; 1, the rows after the first are points next to it (the columns
    of a forward-difference Jacobian): their product channels are evaluated to first order about the first
    row's (:func:`_row_conjugates`), which changes each row by the square of its distance from the first, and
    the first row's values are left in ``base`` (shape (:data:`BASE_ROWS`, p)); 2, every row is next to the
    point whose values ``base`` holds (from an earlier call with 1: the Jacobian–vector products about it)."""
    B, p = X.shape
    nf = fronts.size
    hat = np.empty(p)
    tau = np.empty(p)
    Q, t, gain, new, c, G, U, Bw, t_seen, tau_seen, lin = _work_arrays(p, lw.size)
    linear = near == 2
    L = Atab.shape[0] - 2
    for b in range(B):
        D, finite = _row_conjugates(alpha, delta, X[b], keys, kfloat, order, Atab, loff, lw, lsq, acts, priors,
                                    rects, g_one, gl_x, gl_w, Q, c, G, U, Bw, hat, t, tau, gain, new, t_seen,
                                    tau_seen, linear, base, lin)
        if near == 1 and b == 0 and finite:
            _store_base(keys, rects, t, tau, hat, gain, base, gl_x, gl_w)
            linear = True
        if not finite:
            for e in range(nf + p):
                out[b, e] = np.nan
            continue
        # the probes' potentials and roots of every inner layer (before any re-seeding)
        for i in range(nf):
            ell = i + 1
            o = loff[ell]
            phi0 = _potential(alpha, D, ell, 0, keys, kfloat, Atab, loff, lw, lsq, priors, rects, g_one, Q, G, U,
                              hat, t, tau, gain, lin, base)
            phi1 = _potential(alpha, D, ell, 1, keys, kfloat, Atab, loff, lw, lsq, priors, rects, g_one, Q, G, U,
                              hat, t, tau, gain, lin, base)
            dphi = phi1 - phi0
            slope = Atab[L + 1, ell + 1] * (G[o + 1] - G[o]) / (2.0 * D)
            # probe 0's row of Q_ℓ (the layer matrix (ℓ, ℓ) is key ℓ − 1)
            kl = ell - 1
            offl, ncl = keys[kl, 2], keys[kl, 4]
            top = -np.inf
            for col in range(ncl):
                v = Q[offl + col]
                if v > top or v != v:
                    top = v
            large = top > phase_threshold
            if c[o + 1] - c[o] > probe_floor:
                roots = 0
            elif large:
                roots = 1
            else:
                roots = -1
            f = fronts[i]
            u = f * f
            if slope > 1e-14:
                step = -dphi / slope
                if step < -(1.0 + u):
                    step = -(1.0 + u)
                elif step > 1.0 + u:
                    step = 1.0 + u
                w = u + step
                if w < 0.0:
                    w = 0.0
                front = math.sqrt(w)
            else:
                front = math.sqrt(u)
            if front > front_max[i]:
                front = front_max[i]
            first_high = 2 + n_panel
            if roots < 0:
                if c[o + first_high] - c[o] > probe_floor:
                    _reseed(new, keys, ell, 1, first_high, loff)
                    front = f
                else:
                    front = min(f + 0.05 * (1.0 + f), front_max[i])
            last_low = 1 + n_panel
            if roots > 0:
                if f > 1e-12 and c[o + 1] - c[o + last_low] > probe_floor:
                    _reseed(new, keys, ell, 0, last_low, loff)
                    front = f
                else:
                    front = max(f - 0.25 * (1.0 + f), 0.0)
            out[b, i] = front
        # ghosts: a layer whose front is at its end has no neuron on the large root
        for i in range(nf):
            if fronts[i] < front_max[i]:
                continue
            ell = i + 1
            o = loff[ell]
            for k in range(keys.shape[0]):
                off, nr, nc = keys[k, 2], keys[k, 3], keys[k, 4]
                if keys[k, 0] == ell:
                    for row in range(nr):
                        if lside[o + row] == 1:
                            for col in range(nc):
                                new[off + row * nc + col] = 0.0
                if keys[k, 1] == ell:
                    for col in range(nc):
                        if lside[o + col] == 1:
                            for row in range(nr):
                                new[off + row * nc + col] = 0.0
        for e in range(p):
            out[b, nf + e] = new[e]


@kernel(cache=True)
def state_row(alpha, delta, x, keys, kfloat, order, Atab, loff, lw, lsq, acts, priors, rects, g_one, gl_x, gl_w,
              hat, tau):  # pragma: no cover - compiled
    """Error and free entropy of one packed point ``x`` on the current rules (``DeepFrontModel.state``):
    ``(mmse, f)``, with the point's conjugates and tilt inverses written into ``hat`` and ``tau`` (shape (p,)).
    ``f = −½ ln 2πeD + Σ_X (w_X/α) Σ_{ρ,κ} p(ρ)p(κ) term_X(ρ, κ)`` with the entropic term ``ψ_P(Q̂) − QQ̂/2`` of a
    layer and ``r(1 − Q)/2 − ι(τ + r) + ι(τ)`` of a product (``DeepLinearModel.free_entropy``, Gaussian labels);
    NaN where the point's conjugates are not finite."""
    Q, t, gain, new, c, G, U, Bw, t_seen, tau_seen, lin = _work_arrays(x.size, lw.size)
    base = np.full((BASE_ROWS, 1), np.nan)
    D, finite = _row_conjugates(alpha, delta, x, keys, kfloat, order, Atab, loff, lw, lsq, acts, priors, rects,
                                g_one, gl_x, gl_w, Q, c, G, U, Bw, hat, t, tau, gain, new, t_seen, tau_seen, False,
                                base, lin)
    if not (finite and D > 0.0):
        return np.nan, np.nan
    f = -0.5 * math.log(2.0 * math.pi * math.e * D)
    for k in range(keys.shape[0]):
        off, nr, nc = keys[k, 2], keys[k, 3], keys[k, 4]
        orow, ocol = loff[keys[k, 0]], loff[keys[k, 1]]
        s = 0.0
        for i in range(nr):
            s += _entropic_sum(k, off + i * nc, 1, nc, lw, ocol, keys, priors, rects, Q, hat, tau, lin,
                               base) * lw[orow + i]
        f += kfloat[k, 0] / alpha * s
    return D - delta, f
