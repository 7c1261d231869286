r"""Readout profiles ``Q(v)`` of the one-hidden-layer equations, solved through global order parameters.

At fixed global order parameters the overlap of a neuron depends on its readout ``v`` only
through ``s = v²`` (docs/theory.md §5.2, docs/theory.md §5.2):

    Q̂(v) = s (A g'(Q(v)) + B Q(v)),      Q(v) = m_P(Q̂(v)),
    A = α/(γ D),   B = (m_S(τ + R̂₂) − m_S(τ)) / (γ m_S'(τ)),   D = Δ + K_d − K*
    (for a generic output channel ``D`` is its effective variance at ``mmse = K_d − K*``, docs/theory.md §10).

Writing ``r = Q̂`` and ``k(r) = A g'(m_P(r)) + B m_P(r)``, the fixed points of a neuron with
``v² = s`` are the SNRs ``r`` with ``T(r) = s``, where

    T(r) = r / k(r),           T(0+) = 1/B   (m_P'(0) = 1 for a unit-variance prior).

``T`` is explicit, so the whole family of solutions is known from one curve:
``φ(r) = s k(r) − r`` is positive exactly where ``T(r) < s``. The root reached by damped
iteration from above (the *largest* stable root: informed start) is
``r_max(s) = sup{r : T(r) < s}``; the one reached from ``Q = 0+`` (the *low* root) is ``0``
when ``s ≤ T(0+)`` (``Q = 0`` stable) and ``inf{r > 0 : T(r) ≥ s}`` otherwise. ``r_max``
jumps where ``s`` crosses a local minimum of ``T`` (a fold: the specialization front, with
``r − r* ∝ √(s − s*)`` beyond it), ``r_low`` where it crosses a local maximum, and both have a
kink at ``T(0+)``. :class:`OverlapProfile` tabulates ``T`` on a grid of ``r``, refines its
extrema, and inverts it on the monotone pieces (vectorized regula falsi).

The integrals over ``v`` of the equations (``E_v[v² Q²]``, ``E_v[v²(g(1) − g(Q))]``, the
entropic term of the free entropy) then use a composite rule whose panels end at the
non-smooth points ``v = ±√s_k`` (:meth:`priors.continuous_laws.ContinuousLaw.panel_rule`),
graded towards them: the rule converges exponentially in the number of nodes per panel. The
solver of :class:`replica.models.shallow.ShallowModel` iterates only on the two global unknowns
``(D, M = E_v[v² Q²])`` (``τ = m_S⁻¹(M)``, ``R̂₂ = α μ₂²/D``); the cost of one evaluation is a
few hundred vectorized scalar evaluations, whatever the number of nodes.

Which root a neuron sits on is the *selection* of a stationary point: ``s_threshold``
(``r_max`` for ``v² > s_threshold``, ``r_low`` below), with :data:`SELECT_LARGEST` (= 0, every
neuron on its largest root: the informed start), :data:`SELECT_LOW` (every neuron on its low
root: the uninformed start) and :data:`SELECT_ZERO` (``Q ≡ 0``: the universal branch).
Every threshold above the spinodal ``min T`` gives a stationary point; the informed start uses
:data:`SELECT_EQUILIBRIUM`, which puts every neuron on its root of larger per-neuron free entropy
(:func:`equal_potential_threshold`): the stationary point of largest ``f`` among them, and the only
one whose ``f(α)`` obeys the envelope identity. The largest-root selection (front at the spinodal)
is metastable for the neurons between the two fronts (tanh(2x), Gaussian readouts, γ = 0.5,
Δ = 0.1: mmse 0.05091 vs 0.05190 at α = 1).

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530 and 2505.24849 (equations of the
one-hidden-layer theory; progressive specialization of neurons with larger ``|v|``).
"""

from __future__ import annotations

import functools
import logging
import math

import numpy as np

from priors.readout_laws import continuous_readout_law

logger = logging.getLogger(__name__)

__all__ = ["OverlapProfile", "ProfileSolver", "readout_groups", "SELECT_LARGEST", "SELECT_LOW", "SELECT_ZERO", "SELECT_EQUILIBRIUM",
           "selection_from_overlaps", "equal_potential_threshold", "DEFAULT_TARGET", "BASE_NODES", "MAX_LEVEL"]

#: every neuron on its largest stable root (informed start)
SELECT_LARGEST = 0.0
#: every neuron on the root reached from Q = 0+ (uninformed start)
SELECT_LOW = 1e300
#: Q ≡ 0 (the universal branch)
SELECT_ZERO = -1.0
#: every neuron on the root of larger per-neuron free entropy (the front at the equal-potential point;
#: :func:`equal_potential_threshold`)
SELECT_EQUILIBRIUM = -2.0
# s scanned for the equal-potential front (readouts and effective readouts up to |v| = 8.5)
_FRONT_SCAN = np.geomspace(1e-4, 8.5**2, 61)
#: relative accuracy of mmse and free entropy that the adaptive rule is refined to
DEFAULT_TARGET = 1e-3
#: nodes per panel of the coarsest adaptive rule (doubled at every refinement)
BASE_NODES = 8
#: refinements of the adaptive rule at most (nodes per panel BASE_NODES · 2**MAX_LEVEL)
MAX_LEVEL = 5

# grid of u = r/(1 + r) on which T is tabulated: clustered at both ends, up to r ≈ 1e12
_U_GRID = np.sort(np.concatenate([  # sorted and distinct (not np.unique: it imports numpy.ma, 7 ms of start-up)
    0.5 * (1.0 - np.cos(np.pi * np.arange(0, 161) / 160.0))[:-1],
    1.0 - np.logspace(-3, -12, 28),
]))
_U_GRID = _U_GRID[np.concatenate([[True], np.diff(_U_GRID) > 0])]
_R_GRID = _U_GRID / (1.0 - _U_GRID)


def selection_from_overlaps(values, overlaps, threshold=0.5) -> float:
    """Selection ``s_threshold`` of a start profile given on readout values.

    Parameters
    ----------
    values : ndarray, shape (n,)
        Readout values where ``overlaps`` is given.
    overlaps : float or ndarray, shape (n,)
        Start ``Q(v)``; a neuron starts on its largest root where ``Q ≥ threshold``.
    threshold : float

    Returns
    -------
    float
        :data:`SELECT_LARGEST` if every neuron starts high, :data:`SELECT_LOW` if none does,
        else the square of the midpoint between the largest ``|v|`` starting low and the
        smallest ``|v|`` starting high.
    """
    a = np.abs(np.asarray(values, dtype=float))
    q = np.broadcast_to(np.asarray(overlaps, dtype=float), a.shape)
    high = q >= threshold
    if np.all(high):
        return SELECT_LARGEST
    if not np.any(high):
        return SELECT_LOW
    lo_max = float(np.max(a[~high]))
    hi_min = float(np.min(a[high]))
    cut = 0.5 * (lo_max + hi_min) if hi_min > lo_max else hi_min
    return cut * cut


def equal_potential_threshold(profile, potential, slope=None) -> float:
    """Selection that puts every neuron on the root of larger per-neuron free entropy.

    Every threshold above the spinodal ``min T`` (largest root above it, low root below) gives a
    stationary point; the one of largest ``f`` puts each neuron on the root with the larger
    ``potential`` (the first-order change of ``f`` when a group of neurons of vanishing mass moves
    from ``Q = 0`` to that root). The largest-root selection (:data:`SELECT_LARGEST`, the front at the
    spinodal) is metastable for the neurons in between, and only the equal-potential front makes
    ``f(α)`` satisfy the envelope identity ``df/dα = ∂f/∂α``.

    Parameters
    ----------
    profile : OverlapProfile
        With ``snr`` and ``minima``.
    potential : callable
        ``potential(s, snr)`` for arrays of ``s`` (``v²``) and root SNRs, relative to ``Q = 0``.
    slope : callable, optional
        ``slope(snr)``: ``∂potential/∂s`` at a root. Since every root is a stationary point of the
        potential in ``Q̂``, it is the total derivative along the root (envelope theorem), and the
        difference of the two roots' slopes is the exact derivative of the potential difference in
        ``s``: the sign change is then refined by Newton's method inside its bracket (bisection where a
        step leaves it), about 3 evaluations of both roots instead of Brent's 8.

    Returns
    -------
    float
        :data:`SELECT_LARGEST` when the largest root wins wherever it differs from the low one (or
        there is one root per ``s``), :data:`SELECT_LOW` when it never wins up to ``s = 8.5²``,
        otherwise the last sign change of the potential difference on a scan, refined to relative 1e-12
        (Newton with ``slope``, else Brent's method).
    """
    if profile.minima.size == 0:
        return SELECT_LARGEST

    roots = {}

    def diff(s):
        """Potential of the largest minus the low root; NaN where they coincide (no choice)."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        hi, lo = _both_roots(profile, s)
        roots["hi"], roots["lo"] = hi, lo
        out = potential(s, hi) - potential(s, lo)
        return np.where(np.abs(hi - lo) <= 1e-12 * (1.0 + np.abs(hi)), np.nan, out)

    first = float(profile.minima.min())  # below the first birth of a second root there is no choice
    if not first < _FRONT_SCAN[-1]:
        return SELECT_LARGEST
    # the bistable windows lie between the extrema of T and its onset: scan each of them densely
    ends = np.concatenate([profile.minima, profile.maxima, [profile.onset, _FRONT_SCAN[-1]]])
    ends = np.unique(ends[np.isfinite(ends) & (ends >= first) & (ends <= _FRONT_SCAN[-1])])
    # s ≥ 0: a window reaching below 0 (a negative extremum of a curve s = T(r)) is scanned from 0 on
    inner = [np.geomspace(a * (1.0 + 1e-9), b * (1.0 - 1e-9), 9) if a > 0.0
             else np.linspace(0.0, b * (1.0 - 1e-9), 10)[1:] for a, b in zip(ends[:-1], ends[1:]) if b > 0.0]
    scan = np.unique(np.concatenate([[first * (1.0 + 1e-12)], *inner, _FRONT_SCAN[_FRONT_SCAN > first]]))
    d = diff(scan)
    choice = np.flatnonzero(np.isfinite(d))
    if choice.size == 0 or np.all(d[choice] >= 0.0):
        return SELECT_LARGEST
    if not np.any(d[choice] > 0.0):
        return SELECT_LOW
    j = int(choice[d[choice] <= 0.0][-1])
    later = choice[(choice > j) & (d[choice] > 0.0)]
    if later.size == 0:
        return SELECT_LOW
    k = int(later[0])
    if k > j + 1:  # another bistable window above, entered on the largest root: select from its start
        return float(scan[k - 1])
    a, b = float(scan[j]), float(scan[k])
    if slope is not None:
        hi, lo = roots["hi"][[j, k]], roots["lo"][[j, k]]
        da, db = slope(hi) - slope(lo)
        x0 = _hermite_root(a, b, float(d[j]), float(d[k]), float(da), float(db))
        return _newton_in_bracket(profile, potential, slope, a, b, x0)
    from scipy import optimize  # lazy: start-up (docs/architecture.md)

    return float(optimize.brentq(lambda z: float(diff(z)[0]), a, b, xtol=1e-14, rtol=1e-12))


def _compiled_specs(prior, activation):
    """``(compiled_prior(prior), compiled_activation(activation))`` for :class:`OverlapProfile`, or None where
    either has no compiled form (an activation that is not a :class:`~replica.activations.Activation`, a prior
    whose channel cannot be tabulated): the NumPy methods then."""
    from priors.compiled import compiled_prior

    from .activations import Activation, compiled_activation

    if not isinstance(activation, Activation):
        return None
    try:
        return compiled_prior(prior), compiled_activation(activation)
    except (TypeError, ValueError, AttributeError, FloatingPointError):
        return None


def _g_inside(activation):
    """``g`` for correlations already clipped to [0, 1]: the unchecked form where the activation has one
    (:meth:`replica.activations.Activation.g_inside`; the hot loops of the threshold's root finding)."""
    return getattr(activation, "g_inside", activation.g)


def _g_prime_inside(activation):
    """``g'`` for correlations already clipped to [0, 1] (:func:`_g_inside`)."""
    return getattr(activation, "g_prime_inside", activation.g_prime)


def _both_roots(profile, s):
    """The largest and the low root at ``s`` (:meth:`OverlapProfile.both_roots`, or two calls of ``snr`` for a
    profile whose ``snr`` is its own, e.g. the compiled one of the two-layer profiles)."""
    if isinstance(profile, OverlapProfile) and type(profile).snr is OverlapProfile.snr:
        return profile.both_roots(s)
    return profile.snr(s, SELECT_LARGEST), profile.snr(s, SELECT_LOW)


def _hermite_root(a, b, fa, fb, da, db) -> float:
    """A start for :func:`_newton_in_bracket`: the root in ``(a, b)`` of the cubic that matches ``Φ`` and ``Φ'``
    at both ends (``fa ≤ 0 < fb``; error of the order of ``(b − a)⁴``), by bisection and Newton on the cubic;
    the secant point where a slope is not finite."""
    h = b - a
    secant = a - fa * h / (fb - fa) if fb > fa else 0.5 * (a + b)
    if not (math.isfinite(da) and math.isfinite(db)):
        return secant
    # p(t) = fa + t (h da) + t² c2 + t³ c3 on [0, 1], p(0) = fa, p(1) = fb, p'(0) = h da, p'(1) = h db
    c1 = h * da
    c2 = 3.0 * (fb - fa) - 2.0 * c1 - h * db
    c3 = 2.0 * (fa - fb) + c1 + h * db
    lo, hi = 0.0, 1.0
    t = (secant - a) / h
    for _ in range(60):
        p = fa + t * (c1 + t * (c2 + t * c3))
        if p <= 0.0:
            lo = t
        else:
            hi = t
        dp = c1 + t * (2.0 * c2 + 3.0 * t * c3)
        nxt = t - p / dp if dp != 0.0 else 0.5 * (lo + hi)
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if abs(nxt - t) <= 1e-15:
            break
        t = nxt
    return a + t * h


def _newton_in_bracket(profile, potential, slope, a, b, x) -> float:
    """Root of ``Φ(s) = potential(s, r_max(s)) − potential(s, r_low(s))`` in ``[a, b]`` (``Φ(a) ≤ 0 < Φ(b)``)
    by Newton's method from ``x`` with ``Φ' = slope(r_max) − slope(r_low)`` (:func:`equal_potential_threshold`),
    each step kept inside the shrinking bracket (bisection otherwise), to ``|Δs| ≤ 1e-14 + 1e-12 s``: the last
    step or, in the quadratic regime (a step below 1e-6 s and shorter than the one before), the error that
    step leaves, ``|δ_k|³/δ_{k−1}²``."""
    if not a < x < b:
        x = 0.5 * (a + b)
    previous = math.inf
    for _ in range(100):
        z = np.array([x])
        hi, lo = _both_roots(profile, z)
        f = float((potential(z, hi) - potential(z, lo))[0])
        if f == 0.0 or not math.isfinite(f):
            return x
        if f < 0.0:
            a = x
        else:
            b = x
        df = float((slope(hi) - slope(lo))[0])
        step = f / df if df != 0.0 and math.isfinite(df) else math.inf
        nxt = x - step
        newton = a < nxt < b
        if not newton:
            nxt = 0.5 * (a + b)
        tol = 1e-14 + 1e-12 * abs(x)
        if abs(nxt - x) <= tol or b - a <= tol:
            return nxt
        if newton and abs(step) <= 1e-6 * abs(x) and abs(step) < abs(previous) \
                and abs(step) ** 3 / previous**2 <= tol:
            return nxt
        previous = step if newton else math.inf
        x = nxt
    return x


class OverlapProfile:
    """Fixed points ``Q(v)`` of all neurons at given global order parameters.

    Parameters
    ----------
    prior : WeightPrior
        ``P_W`` (unit variance), with vectorized ``overlap`` (``m_P``).
    activation : Activation
        With vectorized ``g`` and ``g_prime`` on [0, 1].
    A, B : float
        ``A = α/(γD) ≥ 0`` and ``B = gain/γ ≥ 0`` (module docstring).

    Attributes
    ----------
    onset : float
        ``T(0+) = 1/B`` (``inf`` when ``B = 0``): ``Q = 0`` is unstable for ``v² > onset``.
    minima, maxima : ndarray
        Values of ``T`` at its interior local minima and maxima (where the largest and the
        low root jump).
    """

    #: compiled forms ``(prior, activation)`` of the curve (:mod:`replica._profile_kernels`), or None (NumPy)
    _specs = None

    def __init__(self, prior, activation, A, B, *, unit=None):
        self.prior = prior
        self.activation = activation
        self.A = max(float(A), 0.0)
        self.B = max(float(B), 0.0)
        self._specs = _compiled_specs(prior, activation)
        if unit is not None and self.B == 0.0 and self.A > 0.0 and unit.A == 1.0 and unit.B == 0.0:
            self._scaled(unit)
            return
        self._tabulate(math.inf if self.B == 0.0 else 1.0 / self.B)

    def _scaled(self, unit):
        """The tables of ``unit`` (the profile of ``A = 1``, ``B = 0`` of the same prior and activation) divided
        by ``A``: with ``B = 0`` (no degree-2 part, ``R̂₂ = 0``) ``T = T₁/A`` exactly, so the extrema sit at the
        same ``r`` and every value scales; no tabulation, no refinement of the extrema."""
        a = self.A
        self.onset = math.inf
        self.minima, self.maxima = unit.minima / a, unit.maxima / a
        self._r = unit._r
        self._T = unit._T / a
        self._Rmin, self._Lmax = unit._Rmin / a, unit._Lmax / a

    def _tabulate(self, onset):
        """Tabulate ``T`` (``T(0+) = onset``), refine its interior extrema and build the running
        extrema the root selection reads (shared by every curve ``s = T(r)``, e.g.
        :class:`replica.models._two_layer_profile.EffectiveReadoutProfile`)."""
        r = _R_GRID.copy()
        T = self.T(r)
        self.onset = float(onset)
        T[0] = self.onset
        # refine the interior extrema of T (bounded Brent on the neighbouring cells)
        minima, maxima = [], []
        interior = np.flatnonzero((np.isfinite(T[1:-1])) & (
            ((T[1:-1] < T[:-2]) & (T[1:-1] <= T[2:])) | ((T[1:-1] > T[:-2]) & (T[1:-1] >= T[2:])))) + 1
        for j in interior:
            is_min = T[j] < T[j - 1]
            sign = 1.0 if is_min else -1.0
            lo, hi = r[j - 1], r[j + 1]
            from scipy import optimize  # lazy: start-up (docs/architecture.md)
            res = optimize.minimize_scalar(lambda x: sign * float(self.T(np.array([x]))[0]), bounds=(lo, hi),
                                           method="bounded", options={"xatol": 1e-13 * (1.0 + hi)})
            x = float(res.x)
            t = float(self.T(np.array([x]))[0])
            if (t < T[j]) if is_min else (t > T[j]):
                r[j], T[j] = x, t
            (minima if is_min else maxima).append(T[j])
        self.minima = np.array(minima)
        self.maxima = np.array(maxima)
        self._r = r
        self._T = T
        # running minimum from the right and running maximum from the left
        self._Rmin = np.minimum.accumulate(T[::-1])[::-1]
        self._Lmax = np.maximum.accumulate(T)

    def T(self, r):
        """``T(r) = r / (A g'(m_P(r)) + B m_P(r))`` (``inf`` where the denominator vanishes)."""
        r = np.asarray(r, dtype=float)
        if self._specs is not None:
            from ._profile_kernels import curve_T_many

            return curve_T_many(np.ascontiguousarray(r.ravel()), self.A, self.B, *self._specs).reshape(r.shape)
        q = np.clip(self.prior.overlap(r), 0.0, 1.0)
        k = self.A * _g_prime_inside(self.activation)(q) + self.B * q
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(k > 0, r / np.where(k > 0, k, 1.0), np.inf)
        return out

    def breakpoints(self) -> np.ndarray:
        """Values of ``s = v²`` where the selected ``Q(v)`` may be non-smooth."""
        pts = np.concatenate([[self.onset], self.minima, self.maxima])
        return np.unique(pts[np.isfinite(pts) & (pts > 0)])

    def _invert(self, s, j):
        """``r`` in ``[r_j, r_{j+1}]`` with ``T(r) = s`` (``T`` increasing there), vectorized
        Illinois (regula falsi) iteration on the shrinking set of unconverged nodes (compiled, one node
        after the other, where the curve has compiled forms)."""
        if self._specs is not None:
            from ._profile_kernels import invert_many

            return invert_many(np.ascontiguousarray(s, dtype=float), np.ascontiguousarray(j, dtype=np.int64),
                               self._r, self._T, self.A, self.B, *self._specs)
        lo, hi = self._r[j].copy(), self._r[j + 1].copy()
        flo = np.maximum(self._T[j] - s, -1e300)
        fhi = np.minimum(self._T[j + 1] - s, 1e300)
        out = lo.copy()
        act = np.arange(s.size)
        side = np.zeros(s.size, dtype=np.int8)
        for _ in range(100):
            if act.size == 0:
                break
            a, b, fa, fb = lo[act], hi[act], flo[act], fhi[act]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                x = (a * fb - b * fa) / (fb - fa)
            bad = ~((x > a) & (x < b))
            if np.any(bad):
                x[bad] = 0.5 * (a[bad] + b[bad])
            fx = self.T(x) - s[act]
            out[act] = x
            up = fx > 0
            sd = side[act]
            # Illinois: halve the value kept at the end that did not move twice in a row
            fa[up & (sd == 1)] *= 0.5
            fb[~up & (sd == -1)] *= 0.5
            b[up] = x[up]
            fb[up] = fx[up]
            dn = ~up
            a[dn] = x[dn]
            fa[dn] = fx[dn]
            lo[act], hi[act], flo[act], fhi[act] = a, b, fa, fb
            side[act] = np.where(up, 1, -1)
            # relative accuracy 1e-14 of Q̂: far below what the outer solve (rtol 1e-10) resolves
            done = (b - a <= 1e-14 * b) | (np.abs(fx) <= 1e-14 * s[act])
            act = act[~done]
        return out

    def snr(self, s, s_threshold=SELECT_LARGEST):
        """SNRs ``Q̂ = r`` of the selected fixed points at ``v² = s``.

        Parameters
        ----------
        s : ndarray
            ``v² ≥ 0``.
        s_threshold : float
            Selection: the largest root for ``s > s_threshold``, the low root elsewhere;
            :data:`SELECT_ZERO` gives 0 everywhere.

        Returns
        -------
        ndarray, same shape as ``s``
            ``Q̂(v) ≥ 0``; ``Q(v) = m_P(Q̂(v))``.
        """
        s = np.asarray(s, dtype=float)
        out, at, s_inv, j_inv = self._plan(s.ravel(), s_threshold)
        if at.size:
            out[at] = self._invert(s_inv, j_inv)
        return out.reshape(s.shape)

    def both_roots(self, s):
        """``(snr(s, SELECT_LARGEST), snr(s, SELECT_LOW))``, equal bit for bit, with one vectorized
        inversion for both (:func:`equal_potential_threshold` asks for the two roots at every trial ``s``)."""
        s = np.asarray(s, dtype=float).ravel()
        hi, at_hi, s_hi, j_hi = self._plan(s, SELECT_LARGEST)
        lo, at_lo, s_lo, j_lo = self._plan(s, SELECT_LOW)
        if at_hi.size or at_lo.size:
            r = self._invert(np.concatenate([s_hi, s_lo]), np.concatenate([j_hi, j_lo]))
            hi[at_hi], lo[at_lo] = r[:at_hi.size], r[at_hi.size:]
        return hi, lo

    def _plan(self, s, s_threshold):
        """The selected roots at the 1-D ``s`` that need no inversion, and the inversions the others need:
        ``(out, positions, s, j)`` with ``out[positions] = _invert(s, j)`` still to be filled in."""
        out = np.zeros(s.shape)
        at, s_inv, j_inv = [], [], []
        if s_threshold == SELECT_ZERO or s.size == 0:
            return out, np.zeros(0, dtype=int), np.zeros(0), np.zeros(0, dtype=int)
        n = self._r.size
        high = s > s_threshold
        # largest root: last j with T_j < s (running minimum from the right)
        if np.any(high):
            pos = np.flatnonzero(high)
            j = np.searchsorted(self._Rmin, s[pos], side="left") - 1
            top = j >= n - 1
            out[pos[top]] = self._r[-1]
            mid = (j >= 0) & ~top
            at.append(pos[mid])
            s_inv.append(s[pos[mid]])
            j_inv.append(j[mid])
        low = ~high
        if np.any(low) and np.isfinite(self.onset):
            pos = np.flatnonzero(low & (s > self.onset))
            j = np.searchsorted(self._Lmax, s[pos], side="left")
            ok = j < n
            out[pos[~ok]] = self._r[-1]
            at.append(pos[ok])
            s_inv.append(s[pos[ok]])
            j_inv.append(j[ok] - 1)
        if not at:
            return out, np.zeros(0, dtype=int), np.zeros(0), np.zeros(0, dtype=int)
        return out, np.concatenate(at), np.concatenate(s_inv), np.concatenate(j_inv)


def readout_groups(v2):
    """The groups of equal ``|v|`` of a discrete readout law: ``(group of each atom, v² of each group)``.

    Parameters
    ----------
    v2 : array_like, shape (K,)
        The atoms' ``v²`` (compared after rounding to 12 decimals).

    Returns
    -------
    group_of_atom : ndarray of int, shape (K,)
        Index into ``groups`` (0 = the strongest), −1 for an atom at ``v = 0`` (no group: it carries no feature).
    groups : ndarray, shape (n_groups,)
        The distinct positive ``v²``, largest first.
    """
    v2 = np.round(np.asarray(v2, dtype=float), 12)
    groups = np.unique(v2[v2 > 0.0])[::-1]
    index = groups.size - 1 - np.searchsorted(groups[::-1], v2)
    return np.where(v2 > 0.0, index, -1), groups


class ProfileSolver:
    """Solver of the one-hidden-layer equations through ``(D, M)`` and readout profiles.

    Used by :class:`replica.models.shallow.ShallowModel` for continuous readout laws and for
    discrete laws with many atoms. The packed point of a solution is ``x = (D, M,
    s_threshold, level, discretization_error)``: ``D = Δ + K_d − K*`` (the output channel's effective
    variance, :meth:`~replica.models.shallow.ShallowModel.effective_variance`), ``M = E_v[v² Q(v)²]``,
    the selection (module docstring), the rule it was solved on and its error estimate. Only
    ``(D, M)`` are iterated.

    Parameters
    ----------
    model : ShallowModel
    target : float, keyword-only
        Relative accuracy of mmse and free entropy of the adaptive rule
        (:data:`DEFAULT_TARGET`).
    base_nodes : int, keyword-only
        Nodes per panel of the coarsest adaptive rule (:data:`BASE_NODES`).

    Notes
    -----
    Rules: a discrete law without a continuous law (``law.law is None``) uses its atoms
    (exact, ``discretization_error = 0``); a fixed grid (``fixed_grid``) uses its atoms, and
    the error estimate is the change of the solution on the quantile grid of twice as many
    nodes; otherwise the composite rule of :meth:`priors.continuous_laws.ContinuousLaw.panel_rule`
    with ``base_nodes · 2**level`` nodes per panel, refined (continuation: each level starts
    from the previous solution) until two successive levels agree to ``target/10``, at most
    :data:`MAX_LEVEL` times.
    """

    #: number of global unknowns at the head of the packed point (``(D, M)``)
    n_globals = 2

    def __init__(self, model, *, target=DEFAULT_TARGET, base_nodes=BASE_NODES):
        self.model = model
        self.base_nodes = int(base_nodes)
        law = model.readout_law
        self.law = getattr(law, "law", None)
        self.adaptive = self.law is not None and not getattr(law, "fixed_grid", False)
        self.target = float(target)
        self._fine_atoms = None
        self._last = None  # (key, result) of the last evaluation (state() re-reads the solved point)

    # ------------------------------------------------------------------ rules
    def rule(self, profile, s_threshold, level):
        """Nodes and weights (including the density) of the rule of ``level``."""
        m = self.model
        if self.law is None or (not self.adaptive and level == 0):
            return m.readout_values, m.readout_weights
        if not self.adaptive:
            if self._fine_atoms is None:
                fine = continuous_readout_law(self.law, 2 * m.n_readout, default_size=m.n_readout)
                self._fine_atoms = (np.asarray(fine.values), np.asarray(fine.weights))
            return self._fine_atoms
        s_pts = profile.breakpoints() if profile is not None else np.zeros(0)
        if 0.0 < s_threshold < SELECT_LOW:
            s_pts = np.append(s_pts, s_threshold)
        v = np.sqrt(s_pts)
        return self.law.panel_rule(np.concatenate([v, -v, [0.0]]), self.base_nodes * 2**level)

    # ------------------------------------------------------------------ map
    def evaluate(self, alpha, y, s_threshold, level):
        """Everything the map needs at the global point ``y = (D, M)``.

        Returns
        -------
        dict
            ``tau, R2_hat, gain, profile, nodes, weights, snr, overlap, M, R2, D`` (the new
            ``D`` and ``M`` computed from the profile).
        """
        key = (float(alpha), *(float(z) for z in y), float(s_threshold), int(level))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        out = self._evaluate(alpha, y, s_threshold, level)
        self._last = (key, out)
        return out

    def _evaluate(self, alpha, y, s_threshold, level):
        m = self.model
        D = max(float(y[0]), 1e-300)
        M = min(max(float(y[1]), 0.0), 1.0 - 1e-15)
        R2_hat = alpha * m.mu2**2 / D
        # τ = m_S⁻¹(M), R₂ = m_S(τ + R̂₂) + R_d − 1; for μ₂ = 0 (R̂₂ = 0) without the HCIZ table (τ NaN)
        tau, R2 = m.s_channel(M, R2_hat)
        if s_threshold == SELECT_ZERO:
            profile, gain = None, 0.0
        else:
            gain = m.tilt_gain(tau, R2_hat)
            profile = OverlapProfile(m.weight_prior, m.activation, alpha / (m.gamma * D), gain / m.gamma,
                                     unit=self._unit_profile if gain == 0.0 else None)
        if s_threshold == SELECT_EQUILIBRIUM:
            s_threshold = equal_potential_threshold(
                profile, lambda s, snr: self.neuron_potential(alpha, D, gain, s, snr),
                lambda snr: self.neuron_potential_slope(alpha, D, gain, snr)) if profile else SELECT_LARGEST
        nodes, weights = self.rule(profile, s_threshold, level)
        s = nodes * nodes
        snr = profile.snr(s, s_threshold) if profile is not None else np.zeros(s.shape)
        Q = np.clip(m.weight_prior.overlap(snr), 0.0, 1.0)
        M_new = float(weights @ (s * Q * Q))
        g_gap = float(weights @ (s * (m.g1 - m.activation.g(Q))))
        mmse = m.mu2**2 * (m.R_d - R2) / 2.0 + g_gap
        D_new = m.effective_variance(mmse)
        return {"tau": tau, "R2_hat": R2_hat, "gain": gain, "profile": profile, "nodes": nodes,
                "weights": weights, "snr": snr, "overlap": Q, "M": M_new, "R2": R2, "D": D_new, "mmse": mmse,
                "threshold": s_threshold}

    def neuron_potential(self, alpha, D, gain, s, snr):
        """Free entropy per unit mass of the neurons with ``v² = s`` on the root ``Q̂ = snr``, relative to
        ``Q = 0``: ``s g(Q)/(2D) + (γ/α)[ψ_P(Q̂) − QQ̂/2] + gain · s Q²/(4α)`` (its stationary point in
        ``(Q, Q̂)`` is ``Q̂ = s(A g'(Q) + B Q)``; used by :func:`equal_potential_threshold`)."""
        m = self.model
        q = np.clip(m.weight_prior.overlap(snr), 0.0, 1.0)
        return (s * _g_inside(m.activation)(q) / (2.0 * D) + m.gamma / alpha * (m.weight_prior.free_entropy(snr) - q * snr / 2.0)
                + gain * s * q * q / (4.0 * alpha))

    def neuron_potential_slope(self, alpha, D, gain, snr):
        """``∂/∂s`` of :meth:`neuron_potential` at fixed root: ``g(Q)/(2D) + gain · Q²/(4α)``; at a root (a
        stationary point in ``Q̂``) the derivative of the potential along the root."""
        m = self.model
        q = np.clip(m.weight_prior.overlap(snr), 0.0, 1.0)
        return _g_inside(m.activation)(q) / (2.0 * D) + gain * q * q / (4.0 * alpha)

    def labels(self, x):
        """``(globals, s_threshold, level, discretization_error)`` of a packed point (level 0 and error 0
        when absent)."""
        x = np.asarray(x, dtype=float)
        n = self.n_globals
        return (x[:n], float(x[n]), int(x[n + 1]) if x.size > n + 1 else 0,
                float(x[n + 2]) if x.size > n + 2 else 0.0)

    def relabel(self, alpha, x, like):
        """The solution ``x`` re-solved on the rule level of the packed point ``like`` (chord-Newton steps
        from ``x``), as a packed point with ``like``'s level; ``x`` itself when the levels agree, None when
        the selections differ or the solve fails. Used to recognize one stationary point solved on two
        rule levels (:func:`replica.continuation.curves.same_point`)."""
        y, sel, level, error = self.labels(x)
        _, sel_like, level_like, _ = self.labels(like)
        if sel != sel_like:
            return None
        if level == level_like:
            return np.asarray(x, dtype=float)
        r = self._refine(float(alpha), y, sel, level_like, "relabel", {})
        return None if r is None else np.concatenate([r.x, [sel, level_like, error]])

    def packed_update(self, alpha, x):
        """The model's map on its packed point: the globals moved by :meth:`update`, labels unchanged."""
        x = np.asarray(x, dtype=float)
        y, sel, level, _ = self.labels(x)
        return np.concatenate([self.update(alpha, y, sel, level), x[self.n_globals:]])

    def update(self, alpha, y, s_threshold, level=0):
        """The map ``(D, M) → (D', M')`` at fixed selection and rule."""
        e = self.evaluate(alpha, y, s_threshold, level)
        return np.array([e["D"], e["M"]])

    @staticmethod
    def _project(y):
        z = np.array(y, dtype=float)
        z[0] = max(z[0], 1e-300)
        z[1] = min(max(z[1], 0.0), 1.0 - 1e-15)
        return z

    # ------------------------------------------------------------------ state
    def state(self, alpha, x):
        """The model's state (``model.state_type``: :class:`replica.models.shallow.ShallowState`) at ``x``.

        ``x = (D, M, s_threshold[, level[, discretization_error]])`` (level 0 and error 0 when
        absent).
        """
        m = self.model
        y, s_threshold, level, error = self.labels(x)
        e = self.evaluate(alpha, y, s_threshold, level)
        w, Q, snr = e["weights"], e["overlap"], e["snr"]
        energetic = m.energetic(e["mmse"])
        tau, R2_hat = e["tau"], e["R2_hat"]
        entropic = float(w @ (m.weight_prior.free_entropy(snr) - Q * snr / 2.0))
        if math.isfinite(energetic) and np.isfinite(R2_hat):
            # ι(τ + R̂₂) − ι(τ) is 0 at R̂₂ = 0 (μ₂ = 0): no HCIZ table read there (τ is NaN)
            tilt_term = 0.0 if R2_hat == 0.0 else \
                m.channel.mutual_information(tau + R2_hat) - m.channel.mutual_information(tau)
            f = float(energetic + (m.R_d - e["R2"]) * R2_hat / (4 * alpha)
                      + m.gamma / alpha * entropic - tilt_term / alpha)
        else:
            f = math.inf
        # the profile on the reporting grid (the law's atoms)
        rv = m.readout_values
        snr_r = e["profile"].snr(rv * rv, e["threshold"]) if e["profile"] is not None else np.zeros(rv.size)
        count = self.learned_groups(snr_r, e["threshold"])
        mass = self.learned_mass(e["nodes"] * e["nodes"], e["snr"], e["threshold"], e["weights"])
        return m.state_type(
            alpha=float(alpha), overlap_W=np.clip(m.weight_prior.overlap(snr_r), 0.0, 1.0),
            overlap_W_hat=snr_r, R2=e["R2"], R2_hat=R2_hat, tau=tau, mmse=e["mmse"], free_entropy=f,
            mutual_information=m.mutual_information(alpha, f), discretization_error=error,
            learned_features=float(count), learned_mass=float(mass))

    @functools.cached_property
    def _unit_profile(self):
        """The profile of ``A = 1``, ``B = 0`` that every profile with ``B = 0`` scales (:meth:`OverlapProfile._scaled`)."""
        return OverlapProfile(self.model.weight_prior, self.model.activation, 1.0, 0.0)

    # ------------------------------------------------------------------ learned groups
    @functools.cached_property
    def groups(self) -> np.ndarray:
        """The distinct ``v²`` of the law's atoms, largest first (a group: the atoms of one ``|v|``), shape
        (n_groups,) (:func:`readout_groups`)."""
        return readout_groups(self.model.v2)[1]

    @functools.cached_property
    def group_of_atom(self) -> np.ndarray:
        """The group of each of the law's atoms (index into :attr:`groups`, 0 = the strongest), shape (n_readout,);
        −1 for an atom at ``v = 0`` (:func:`readout_groups`)."""
        return readout_groups(self.model.v2)[0]

    @staticmethod
    def _on_specialized_root(s, snr, threshold):
        """Nodes on their largest root (``s > threshold``) where that root is not ``Q̂ = 0``."""
        if not threshold < SELECT_LOW:
            return np.zeros(np.shape(s), bool)
        return (np.asarray(s, dtype=float) > threshold) & (np.asarray(snr, dtype=float) > 0.0)

    def learned_groups(self, snr, threshold) -> int:
        """Groups learned at the selected roots ``snr`` of the law's atoms: the leading run, strongest first, of
        the groups (:attr:`groups`) all of whose atoms sit on their specialized root."""
        on = self._on_specialized_root(self.model.v2, snr, threshold)
        idx = self.group_of_atom
        ok = idx >= 0
        atoms = np.bincount(idx[ok], minlength=self.groups.size)
        done = np.bincount(idx[ok], weights=on[ok].astype(float), minlength=self.groups.size)
        complete = (atoms > 0) & (done == atoms)
        return int(np.argmin(complete)) if not np.all(complete) else int(self.groups.size)

    def learned_mass(self, s, snr, threshold, weights) -> float:
        """Readout mass ``Σ weights`` of the nodes ``s = v²`` (a rule's, with its weights) on their specialized
        root."""
        return float(np.sum(np.asarray(weights, dtype=float)[self._on_specialized_root(s, snr, threshold)]))

    def family_threshold(self, k) -> float:
        """A selection (a fixed ``s_threshold``) with exactly the ``k`` strongest groups on their largest root:
        between the ``k``-th and the ``(k+1)``-th group's ``v²`` (:data:`SELECT_LOW` for ``k = 0``,
        :data:`SELECT_LARGEST` when every group is)."""
        g = self.groups
        if k <= 0:
            return SELECT_LOW
        if k >= g.size:
            return SELECT_LARGEST
        return float(0.5 * (g[k - 1] + g[k]))

    def family_point(self, alpha, k, y0, solve_kw=None):
        """The stationary point with exactly the ``k`` strongest groups learned (:meth:`family_threshold`) at
        ``alpha``, from the globals ``y0``: ``(y, state)`` or None. Newton steps from ``y0`` (a point of a
        neighbouring family or α), the damped iteration where they fail."""
        r = self.family_result(alpha, k, y0, solve_kw)
        return None if r is None else (r.x[:self.n_globals], r.info["state"])

    def family_result(self, alpha, k, y0, solve_kw=None):
        """:meth:`family_point` as the :class:`~replica.engine.FixedPointResult` of :meth:`solve` (packed
        ``x = (D, M, s_threshold, 0, 0)``, ``info["state"]``, start ``feature``), or None (a discrete law: the
        atoms are the rule, no discretization error)."""
        from .engine import solve_fixed_point

        opts = dict(solve_kw or {})
        sel = self.family_threshold(k)
        r = self._refine(alpha, y0, sel, 0, "feature", opts)
        if r is None:
            opts.setdefault("guarded_newton", True)
            opts.setdefault("project", self._project)
            r = solve_fixed_point(lambda u: self.update(alpha, u, sel, 0), np.array(y0, dtype=float), start="feature",
                                  **opts)
            if not r.converged:
                return None
        st = self.state(alpha, np.concatenate([r.x, [sel, 0]]))
        st.discretization_error = 0.0
        r.x = np.concatenate([r.x, [sel, 0, 0.0]])
        r.info["state"] = st
        return r

    def feature_transitions(self, a0, x0, k0, a1, k1, solve_kw=None) -> list:
        """Every group's own first-order transition between two points of one curve: the groups ``k0 … k1 − 1``
        (the curve has ``k0`` groups learned at ``a0``, packed point ``x0``, and ``k1 > k0`` at ``a1``), each at
        the α where the stationary points with ``k`` and ``k + 1`` groups learned (fixed selections,
        :meth:`family_point`) have equal free entropy, located by :func:`replica.continuation.events.locate_crossing`
        (Newton with the envelope slopes ``df/dα``) to its ``crossing_rtol`` (1e-12), each bracket starting at the
        previous group's α.

        Returns
        -------
        list of dict
            ``alpha``, ``group`` (0 = the strongest), ``s`` (the group's ``v²``), ``mass``, ``overlap_before``,
            ``overlap_after`` (the group's ``Q`` on both stationary points at ``alpha``), ``mmse_before``,
            ``mmse_after``; a group whose crossing is not bracketed is left out (logged).
        """
        from .continuation.events import envelope_slope, locate_crossing

        m = self.model
        out = []
        solved = {}  # (α, k) -> (y, state) or None, shared by the groups of the interval
        by_group = {}  # k -> [(α, order of solving, y)] of the solved points: the start of the next solve
        y_start = np.asarray(x0, dtype=float)[:self.n_globals]

        def guess_for(a, kk):
            """The solved point nearest in ``|α − b| + 10|k − j|`` (the first solved among equals), searched group by
            group outwards from ``kk`` until no farther group can be nearer: a scan of every solved point per solve
            took 3.7 s of a 27 s profiled sweep with 1,000 groups."""
            best = None
            for dist in range(len(self.groups) + 1):
                if best is not None and 10.0 * dist > best[0]:
                    break
                for j in {kk - dist, kk + dist}:
                    for b, order, y in by_group.get(j, ()):
                        cand = (abs(a - b) + 10.0 * dist, order, y)
                        if best is None or cand[:2] < best[:2]:
                            best = cand
            return y_start if best is None else best[2]

        def point(a, kk):
            key = (float(a), int(kk))
            if key not in solved:
                got = self.family_point(a, kk, guess_for(a, kk), solve_kw)
                solved[key] = got
                if got is not None:
                    by_group.setdefault(int(kk), []).append((float(a), len(solved), got[0]))
            return solved[key]

        def value(a, k):
            """``f_{k+1} − f_k`` and its slope; NaN where group k has no specialized root (the two coincide)."""
            pk, pk1 = point(a, k), point(a, k + 1)
            if pk is None or pk1 is None:
                return math.nan, None
            atoms = self.group_of_atom == k
            if not np.any(pk1[1].overlap_W_hat[atoms] > pk[1].overlap_W_hat[atoms]):
                return math.nan, None
            df = float(pk1[1].free_entropy) - float(pk[1].free_entropy)
            return df, envelope_slope(m, a, pk1[1]) - envelope_slope(m, a, pk[1])

        lo, hi = float(a0), float(a1)
        spacing = None  # the last distance between two located groups: the next one is about as far
        for k in range(int(k0), int(k1)):
            step = spacing if spacing is not None else (hi - lo) / 32.0
            start = lo
            if not math.isfinite(value(start, k)[0]):  # the group's root appears inside: from where it exists
                ts = [t for t in [lo + step * j / 4.0 for j in range(1, 9)] if t < hi] + \
                    [lo + (hi - lo) * j / 32.0 for j in range(1, 33)]
                start = next((t for t in sorted(set(ts)) if math.isfinite(value(t, k)[0])), None)
                if start is None:  # e.g. a degree-2 part: the group specializes continuously, without a jump
                    logger.debug("group %d has no specialized root in [%g, %g]", k, lo, hi)
                    continue
            a_k = None
            # a bracket of twice the last spacing first (many close groups); then the interval; then beyond a1:
            # the curve's own selection (equal potentials at its globals, first order in a group's mass) may
            # count a group as learned at a1 a little before the two stationary points' free entropies cross
            # (measured: 4e-4 in α for 100 atoms), and the crossing then lies just above a1
            tops = ([start + 2.0 * spacing] if spacing is not None and start + 2.0 * spacing < hi else []) + \
                [hi, hi + (hi - float(a0))]
            for top in tops:
                try:
                    a_k = locate_crossing(lambda a, k=k: value(a, k), start, top)
                    break
                except ValueError:
                    continue
            if a_k is None:
                logger.info("feature transition of group %d in [%g, %g] not bracketed", k, start, hi)
                continue
            before, after = point(a_k, k), point(a_k, k + 1)
            if before is None or after is None:
                continue
            atoms = self.group_of_atom == k
            out.append({"alpha": float(a_k), "group": k, "s": float(self.groups[k]),
                        "mass": float(np.sum(m.readout_weights[atoms])),
                        "overlap_before": float(np.mean(before[1].overlap_W[atoms])),
                        "overlap_after": float(np.mean(after[1].overlap_W[atoms])),
                        "mmse_before": float(before[1].mmse), "mmse_after": float(after[1].mmse)})
            spacing = max(a_k - lo, 1e-9 * max(1.0, a_k)) if out[:-1] else None
            lo = a_k
        return out

    # ------------------------------------------------------------------ solve
    def _refine(self, alpha, y, sel, level, start, options):
        """Solution on the rule ``level`` from the solution ``y`` of the previous rule
        (:func:`_chord_newton`), as a converged :class:`FixedPointResult`, or ``None``."""
        from .engine import DEFAULT_ATOL, DEFAULT_DAMPING, DEFAULT_RTOL, STATUS_MESSAGES, FixedPointResult

        atol, rtol = options.get("atol", DEFAULT_ATOL), options.get("rtol", DEFAULT_RTOL)
        with np.errstate(all="ignore"):
            z, fz, n = _chord_newton(lambda u: self.update(alpha, u, sel, level), np.array(y, dtype=float),
                                     atol, rtol, self._project)
        if z is None:
            return None
        res = float(np.max(np.abs(fz - z) / (atol + rtol * np.abs(z))))
        return FixedPointResult(z, True, "converged", STATUS_MESSAGES["converged"], 1, res,
                                options.get("damping", DEFAULT_DAMPING), start, {"evaluations": n, "polished": True})

    def initial_point(self, alpha, overlaps):
        """Packed start ``(D, M, s_threshold)`` from a start profile on the reporting grid (a profile high
        everywhere selects :data:`SELECT_EQUILIBRIUM`: every neuron on its root of larger free entropy)."""
        m = self.model
        Q0 = np.clip(np.broadcast_to(np.asarray(overlaps, dtype=float), (m.n_readout,)), 0.0, 1.0)
        sel = selection_from_overlaps(m.readout_values, Q0)
        if sel == SELECT_LARGEST:  # every neuron that can specialize: each on its root of larger free entropy
            sel = SELECT_EQUILIBRIUM
        M0 = min(float(m.readout_weights @ (m.v2 * Q0 * Q0)), 1.0 - 1e-12)
        R2_hat = m.solve_universal(alpha).info["state"].R2_hat
        if not np.isfinite(R2_hat):
            R2_hat = 1e6
        _, R2 = m.s_channel(M0, R2_hat)
        D0 = m.effective_variance(m.mu2**2 * (m.R_d - R2) / 2.0 + float(
            m.readout_weights @ (m.v2 * (m.g1 - m.activation.g(Q0)))))
        return np.array([max(D0, 1e-12), M0, sel])

    def solve(self, alpha, x0, *, start="", **solver_options):
        """Solve from the packed point ``x0``, refining the rule (class Notes).

        Parameters
        ----------
        alpha : float
        x0 : ndarray, shape (3,) or (5,)
            ``(D, M, s_threshold)`` or a previous solution ``(D, M, s_threshold, level,
            error)``; a previous solution restarts one level below its own.
        start : str
        **solver_options
            Passed to :func:`replica.engine.solve_fixed_point` (default ``guarded_newton=True``).

        Returns
        -------
        FixedPointResult
            ``x = (D, M, s_threshold, level, discretization_error)``; ``info["state"]`` with
            ``discretization_error``: the relative change of mmse and free entropy between the
            solutions of the last two rules (NaN when the refined solve failed).
        """
        from .engine import solve_fixed_point

        alpha = float(alpha)
        x0 = np.asarray(x0, dtype=float)
        n = self.n_globals
        sel = float(x0[n])
        level = max(int(x0[n + 1]) - 1, 0) if x0.size > n + 1 and self.adaptive else 0
        solver_options.setdefault("guarded_newton", True)
        solver_options.setdefault("project", self._project)
        y = np.array(x0[:n], dtype=float)
        previous = res = res_state = None
        res_level = 0
        error = 0.0
        while True:
            r = None
            if res is not None and solver_options.get("method", "damped") == "damped":
                # a refinement moves the point by the quadrature error only: chord-Newton steps
                r = self._refine(alpha, y, sel, level, start, solver_options)
            if r is None:
                r = solve_fixed_point(lambda z, lv=level: self.update(alpha, z, sel, lv), y, start=start,
                                      **solver_options)
            if r.status == "nan" or not r.converged:
                if res is None:
                    r.x = np.concatenate([r.x, [sel, level, math.nan]])
                    if r.status != "nan":
                        r.info["state"] = self.state(alpha, r.x)
                    return r
                error = math.nan  # the refinement failed: no estimate
                break
            st = self.state(alpha, np.concatenate([r.x, [sel, level]]))
            if previous is not None:
                error = _relative_change(previous, st)
            if self.law is None:
                res, res_state, res_level = r, st, level
                break
            if not self.adaptive:  # fixed grid: solve on the atoms, estimate on twice as many nodes
                if level == 0:
                    res, res_state, res_level, previous = r, st, level, st
                    level, y = 1, r.x
                    continue
                break
            res, res_state, res_level = r, st, level
            if previous is not None and (error <= 0.1 * self.target or level >= MAX_LEVEL):
                break
            previous = st
            level, y = level + 1, r.x
        res.x = np.concatenate([res.x, [sel, res_level, error]])
        res_state.discretization_error = float(error)
        res.info["state"] = res_state
        res.info["level"] = res_level
        return res


def _chord_newton(update, y, atol, rtol, project, max_steps=8):
    """Newton steps with one forward-difference Jacobian for ``F(y) = y`` from a close point.

    Returns ``(y, F(y), evaluations)`` once the residual test ``|F(y) − y| ≤ atol + rtol|y|``
    passes, or ``(None, None, evaluations)``.
    """
    fy = update(y)
    evaluations = 1
    inverse = None
    for _ in range(max_steps):
        if not np.all(np.isfinite(fy)):
            return None, None, evaluations
        if np.all(np.abs(fy - y) <= atol + rtol * np.abs(y)):
            return y, fy, evaluations
        if inverse is None:
            jac = np.empty((y.size, y.size))
            for j in range(y.size):
                h = 1e-7 * max(1.0, abs(y[j]))
                yh = y.copy()
                yh[j] += h
                jac[:, j] = (update(yh) - fy) / h
            evaluations += y.size
            try:
                inverse = np.linalg.inv(np.eye(y.size) - jac)
            except np.linalg.LinAlgError:
                return None, None, evaluations
        y = project(y + inverse @ (fy - y))
        fy = update(y)
        evaluations += 1
    return None, None, evaluations


def _relative_change(a, b) -> float:
    """Largest relative change of mmse and free entropy between two states."""
    out = 0.0
    for x, y in ((a.mmse, b.mmse), (a.free_entropy, b.free_entropy)):
        if np.isfinite(x) and np.isfinite(y):
            out = max(out, abs(x - y) / max(abs(y), 1e-300))
        elif x != y:
            return math.inf
    return out
