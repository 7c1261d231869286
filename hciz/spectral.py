r"""Spectral law of ``√λ S⁰ + Z`` (generalized Wishart ⊞ semicircle).

``S⁰ = Wᵀ diag(v) W / √(k d)`` with ``W`` (k×d) iid of unit variance, ``k = γ d``, ``v`` iid
from a discrete readout law (atoms ``values`` with probabilities ``weights``), and ``Z`` a GOE
matrix whose spectrum is the semicircle on [−2, 2] (docs/theory.md §4.1).

Conventions
-----------
Stieltjes transform ``m(z) = ∫ ρ(x) / (x − z) dx`` (``Im m > 0`` for ``Im z > 0``), density
``ρ(x) = Im m(x + i0) / π``.  The law of ``√λ S⁰`` is a generalized Marchenko–Pastur law with
population ``t = √λ v / √γ`` and ratio ``γ``; its free convolution with the semicircle has the
explicit inverse

.. math::  z(m) = -1/m - m + γ\, E_v[\, t / (1 + t m) \,].

Outside the support ``m(x)`` is real and ``z'(m(x)) > 0``; the support edges are the images
``z(m_c)`` of the real critical points ``z'(m_c) = 0``.  For ≤ 10 atoms all critical points
are the roots of a polynomial of degree ``2K + 2`` (companion matrices, all λ at once); the
complex ones locate necks, where two bands nearly touch (``z(m*)`` lies just off the real
axis).  For more atoms the critical points are bracketed on a fixed sampling of the real
``m`` axis.

Inside a band the root of ``z(m) = x`` with ``Im m > 0`` is unique (clearing denominators
gives a polynomial of degree ``K + 2`` with at least ``K`` real roots), so any Newton iterate
converging there is the physical root: pointwise evaluations use the companion matrix
(≤ 10 atoms) or Newton continuation in ``η = Im z`` from far away (``m ≈ −1/z``); the band
quadrature of ``∫ρ³`` continues Newton from node to node and falls back to η-continuation.
Exact continuous laws (gaussian, uniform): :mod:`hciz._continuous`.

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530 (HCIZ channel of shallow networks).
Maillard, Troiani, Martin, Krzakala, Zdeborová, arXiv 2408.03733 (case ``v ≡ 1``).
J. W. Silverstein, S.-I. Choi, J. Multivariate Anal. 54 (1995) (support from ``z'(m) > 0``).

Why one module of this size: :class:`SpectralEngine` is one algorithm — the
self-consistent equation of the generalized Wishart ⊞ semicircle law, its band edges, and the
quadratures over the bands that the symmetric channel's tables need — whose numba kernels and
band bookkeeping are private to it (docs/architecture.md, "Module size").
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from priors._kernels import kernel

__all__ = [
    "generalized_wishart_inverse_stieltjes",
    "stieltjes",
    "density",
    "support",
    "validate_readout_law",
]

logger = logging.getLogger(__name__)

_PRUNE_WEIGHT = 1e-15  # atoms lighter than this are dropped (effect below 1e-14 on any output)
_POLY_MAX_ATOMS = 10  # companion-matrix roots up to this many atoms, sampling beyond


def validate_readout_law(gamma, values, weights, *, atol=1e-10):
    """Check and normalize a discrete readout law.

    Parameters
    ----------
    gamma : float
        Width ratio ``k/d``, must be finite and > 0.
    values, weights : array_like, shape (K,)
        Atoms of the readout law and their probabilities (non-negative, summing to 1).
    atol : float
        Tolerance on ``|Σ weights − 1|``.

    Returns
    -------
    gamma : float
    values, weights : ndarray, shape (K',)
        Atoms with weight above 1e-15 (renormalized), merged duplicates removed, sorted.
    zero_weight : float
        Total weight of the atoms at ``v = 0`` (kept in ``weights`` but inert in ``z(m)``).

    Raises
    ------
    ValueError
        If ``gamma ≤ 0`` or not finite, shapes differ, weights negative or not summing to 1,
        or values not finite.
    """
    gamma = float(gamma)
    if not np.isfinite(gamma) or gamma <= 0:
        raise ValueError(f"gamma must be finite and > 0, got {gamma}")
    values = np.atleast_1d(np.asarray(values, dtype=float)).ravel()
    weights = np.atleast_1d(np.asarray(weights, dtype=float)).ravel()
    if values.shape != weights.shape or values.size == 0:
        raise ValueError("values and weights must be non-empty arrays of the same shape")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(weights))):
        raise ValueError("values and weights must be finite")
    if np.any(weights < 0):
        raise ValueError("weights must be non-negative")
    total = weights.sum()
    if abs(total - 1.0) > atol:
        raise ValueError(f"weights must sum to 1 (got {total!r})")
    keep = weights > _PRUNE_WEIGHT
    values, weights = values[keep], weights[keep]
    order = np.argsort(values, kind="stable")
    values, weights = values[order], weights[order]
    # merge exact duplicates
    uniq, inv = np.unique(values, return_inverse=True)
    if uniq.size != values.size:
        weights = np.bincount(inv, weights=weights)
        values = uniq
    weights = weights / weights.sum()
    zero_weight = float(weights[values == 0.0].sum())
    return gamma, values, weights, zero_weight


# ----------------------------------------------------------------------------------------
# inverse Stieltjes transform and its derivatives
# ----------------------------------------------------------------------------------------

def generalized_wishart_inverse_stieltjes(m, *, lam, gamma, values, weights):
    """Inverse Stieltjes transform ``z(m)`` of the law of ``√λ S⁰ + Z``.

    Parameters
    ----------
    m : complex or array_like of complex, any shape
        Point(s) in the domain of the inverse (``m ≠ 0``, ``1 + t m ≠ 0``).
    lam : float
        SNR ``λ ≥ 0``.
    gamma : float
        Width ratio ``γ = k/d > 0``.
    values, weights : array_like, shape (K,)
        Discrete readout law.

    Returns
    -------
    z : ndarray, same shape as ``m`` (complex if ``m`` is complex, else float)

    Raises
    ------
    ValueError
        On an invalid law, ``γ ≤ 0`` or ``λ < 0``.

    Notes
    -----
    ``z(m) = −1/m − m + γ Σ_j w_j t_j / (1 + t_j m)``, ``t_j = √λ v_j / √γ``
    (Silverstein equation of the generalized Marchenko–Pastur law, shifted by the
    R-transform ``R(g) = g`` of the semicircle).  ``λ = 0`` gives the semicircle
    ``z = −1/m − m``; ``v ≡ 1`` gives the cubic of docs/theory.md §4.1.
    """
    gamma, values, weights, _ = validate_readout_law(gamma, values, weights)
    lam = _check_lam(lam)
    m = np.asarray(m)
    t = np.sqrt(lam / gamma) * values
    mm = m[..., None]
    return -1.0 / m - m + gamma * np.sum(weights * t / (1.0 + t * mm), axis=-1)


def _check_lam(lam):
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam must be finite and >= 0, got {lam}")
    return lam


@kernel(cache=True, error_model='numpy')
def _z_and_derivs(m, t, gw):
    """z(m), z'(m), z''(m) for complex m; gw = γ·w."""
    s0 = 0.0 + 0.0j
    s1 = 0.0 + 0.0j
    s2 = 0.0 + 0.0j
    for j in range(t.shape[0]):
        r = 1.0 / (1.0 + t[j] * m)
        tr = t[j] * r
        s0 += gw[j] * tr
        s1 += gw[j] * tr * tr
        s2 += gw[j] * tr * tr * tr
    im = 1.0 / m
    z = -im - m + s0
    zp = im * im - 1.0 - s1
    zpp = -2.0 * im * im * im + 2.0 * s2
    return z, zp, zpp


@kernel(cache=True, error_model='numpy')
def _newton(m, x, t, gw, maxit):
    """Newton for z(m) = x keeping Im m > 0.  Returns (m, converged).

    Converged once an undamped step is below 1e-12 |m| (quadratic convergence: the iterate
    is then exact to rounding)."""
    for it in range(maxit):
        z, zp, _ = _z_and_derivs(m, t, gw)
        if zp == 0:
            m = m + complex(0.0, 1e-14 * (abs(m) + 1e-300))
            continue
        step = (z - x) / zp
        new = m - step
        k = 0
        while new.imag <= 0.0 and k < 60:
            step *= 0.5
            new = m - step
            k += 1
        m = new
        if k == 0 and abs(step) <= 1e-12 * abs(m):
            return m, True
    z, zp, _ = _z_and_derivs(m, t, gw)
    return m, abs(z - x) <= 1e-12 * (abs(x) + 1.0)


# ----------------------------------------------------------------------------------------
# support: real critical points of z(m)
# ----------------------------------------------------------------------------------------

@dataclass
class _Bands:
    """Bands of ρ_λ for one λ.

    ``left``, ``right``: band edges (sorted); ``necks``: points ``Re z(m*)`` inside a band
    where ``ρ_λ`` nearly vanishes (``m*`` a complex critical point of ``z``), and
    ``neck_width`` the distance ``|Im z(m*)|`` of the branch point to the real axis (∞ when
    unknown).
    """

    left: np.ndarray
    right: np.ndarray
    necks: np.ndarray = None
    neck_width: np.ndarray = None


def _sample_offsets():
    lo = np.logspace(-12, -1.5, 64)
    mid = np.linspace(0.035, 0.965, 64)
    return np.concatenate([lo, mid, 1.0 - lo[::-1]])


_BOUNDED = _sample_offsets()
_UNBOUNDED = np.logspace(-10, 10, 801)


class _CriticalPointSampler:
    """λ-independent sampling of the real μ axis (m = μ √(γ/λ), t m = v μ)."""

    def __init__(self, values, weights):
        v = values[values != 0.0]
        w = weights[values != 0.0]
        self.v, self.w = v, w
        poles = np.unique(np.concatenate([[0.0], -1.0 / v]))
        self.poles = poles
        pts, kinds_l, kinds_r, owner = [], [], [], []
        # interval (-inf, poles[0])
        p0 = poles[0]
        pts.append(p0 - _UNBOUNDED[::-1] * max(1.0, abs(p0)))
        for i in range(poles.size - 1):
            p, q = poles[i], poles[i + 1]
            pts.append(p + (q - p) * _BOUNDED)
        pl = poles[-1]
        pts.append(pl + _UNBOUNDED * max(1.0, abs(pl)))
        self.intervals = pts
        self.mu = np.concatenate(pts)
        # sign of z' at the interval ends: pole 0 -> +inf, t-pole -> -inf, infinity -> -1
        self.end_sign = np.where(poles == 0.0, 1.0, -1.0)
        self.B = self._B(self.mu)

    def _B(self, mu):
        """Σ w v²/(1+vμ)² and its μ-derivative factor, vectorized."""
        r = 1.0 / (1.0 + np.multiply.outer(mu, self.v))
        vr = self.v * r
        return np.sum(self.w * vr * vr, axis=-1)

    def _B12(self, mu):
        r = 1.0 / (1.0 + np.multiply.outer(mu, self.v))
        vr = self.v * r
        vr2 = vr * vr
        return np.sum(self.w * vr2, axis=-1), np.sum(self.w * vr2 * vr, axis=-1)


def _zprime_mu(mu, lam, gamma, B):
    return lam / (gamma * mu * mu) - 1.0 - lam * B


def _find_bands(lams, gamma, sampler: _CriticalPointSampler):
    """Bands of ρ_λ for each λ > 0 in ``lams`` (list of _Bands)."""
    lams = np.asarray(lams, dtype=float)
    nl = lams.size
    zp = _zprime_mu(sampler.mu[None, :], lams[:, None], gamma, sampler.B[None, :])
    # assemble per-interval sign sequences with the end signs
    brackets_lo, brackets_hi, brackets_l, brackets_sign = [], [], [], []
    neck_l, neck_lo, neck_hi = [], [], []
    start = 0
    npole = sampler.poles.size
    for k, pts in enumerate(sampler.intervals):
        n = pts.size
        block = zp[:, start:start + n]
        start += n
        left_sign = -1.0 if k == 0 else sampler.end_sign[k - 1]
        right_sign = -1.0 if k == npole else sampler.end_sign[k]
        left_mu = -np.inf if k == 0 else sampler.poles[k - 1]
        right_mu = np.inf if k == npole else sampler.poles[k]
        s = np.sign(block)
        s[s == 0] = 1.0
        sfull = np.concatenate([np.full((nl, 1), left_sign), s, np.full((nl, 1), right_sign)],
                               axis=1)
        mufull = np.concatenate([[left_mu], pts, [right_mu]])
        if n >= 3:
            inner = block[:, 1:-1]
            lm_l, lm_j = np.nonzero((inner > block[:, :-2]) & (inner >= block[:, 2:])
                                    & (inner < 0))
            neck_l.append(lm_l)
            neck_lo.append(pts[lm_j])
            neck_hi.append(pts[lm_j + 2])
        li, ji = np.nonzero(sfull[:, 1:] != sfull[:, :-1])
        if li.size == 0:
            continue
        lo = mufull[ji]
        hi = mufull[ji + 1]
        # unbounded ends never bracket (sign at infinity equals last sample's when far enough)
        good = np.isfinite(lo) & np.isfinite(hi)
        brackets_lo.append(lo[good])
        brackets_hi.append(hi[good])
        brackets_l.append(li[good])
        brackets_sign.append(sfull[li, ji][good])  # sign of z' at the lower end
    if brackets_lo:
        lo = np.concatenate(brackets_lo)
        hi = np.concatenate(brackets_hi)
        li = np.concatenate(brackets_l)
        slo = np.concatenate(brackets_sign)
    else:
        lo = hi = slo = np.zeros(0)
        li = np.zeros(0, dtype=int)
    roots = _refine_roots(lo, hi, slo, lams[li], gamma, sampler)
    # necks: local maxima of z' below 0 (golden section), mapped to x = z(m*)
    if neck_l:
        nl_ = np.concatenate(neck_l)
        a_ = np.concatenate(neck_lo)
        b_ = np.concatenate(neck_hi)
    else:
        nl_ = np.zeros(0, dtype=int)
        a_ = b_ = np.zeros(0)
    gr = 0.5 * (np.sqrt(5.0) - 1.0)
    lamn = lams[nl_]
    for _ in range(60):
        c_ = b_ - gr * (b_ - a_)
        d_ = a_ + gr * (b_ - a_)
        fc = _zprime_mu(c_, lamn, gamma, sampler._B(c_))
        fd = _zprime_mu(d_, lamn, gamma, sampler._B(d_))
        left = fc > fd
        b_ = np.where(left, d_, b_)
        a_ = np.where(left, a_, c_)
    mu_n = 0.5 * (a_ + b_)
    fmax = _zprime_mu(mu_n, lamn, gamma, sampler._B(mu_n))
    out = []
    for i in range(nl):
        sel = li == i
        bands = _assemble(roots[sel], slo[sel], lams[i], gamma, sampler)
        seln = (nl_ == i) & (fmax < 0)
        mn = mu_n[seln] * np.sqrt(gamma / lams[i])
        t = np.sqrt(lams[i] / gamma) * sampler.v
        xs = np.array([_z_and_derivs(complex(q), t, gamma * sampler.w)[0].real for q in mn])
        bands.necks = xs
        bands.neck_width = np.full(xs.size, np.inf)
        out.append(bands)
    return out


def _refine_roots(lo, hi, slo, lam, gamma, sampler):
    """Safeguarded Newton/bisection for z'(μ) = 0 in brackets (endpoints may be poles)."""
    lo = lo.copy()
    hi = hi.copy()
    x = 0.5 * (lo + hi)
    for _ in range(200):
        B1, B2 = sampler._B12(x)
        f = _zprime_mu(x, lam, gamma, B1)
        df = -2.0 * lam / (gamma * x ** 3) + 2.0 * lam * B2
        same = np.sign(f) == slo
        lo = np.where(same, x, lo)
        hi = np.where(same, hi, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            xn = x - f / df
        bad = ~np.isfinite(xn) | (xn <= np.minimum(lo, hi)) | (xn >= np.maximum(lo, hi))
        xn = np.where(bad, 0.5 * (lo + hi), xn)
        done = np.abs(xn - x) <= 1e-15 * np.abs(x) + 1e-300
        x = xn
        if np.all(done):
            break
    return x


def _assemble(mu_roots, slo, lam, gamma, sampler):
    """Turn the sorted critical points (μ) of one λ into bands in x."""
    order = np.argsort(mu_roots)
    mu_roots = mu_roots[order]
    slo = slo[order]
    scale = np.sqrt(gamma / lam)
    m = mu_roots * scale
    t = np.sqrt(lam / gamma) * sampler.v
    gw = gamma * sampler.w
    z = np.array([_z_and_derivs(complex(mi), t, gw)[0].real for mi in m])
    # a root where z' goes from + to − (slo > 0) is the upper end of a positive interval,
    # i.e. the right edge of a gap = left edge of a band, except for the roots around 0.
    # Positive interval containing 0: (r1, 0) ∪ (0, r2), r1 < 0 < r2 are the nearest roots.
    pos = mu_roots > 0
    neg = mu_roots < 0
    if not (np.any(pos) and np.any(neg)):
        raise RuntimeError("critical points around m = 0 not found")
    i2 = np.nonzero(pos)[0][0]  # r2: left edge of the leftmost band
    i1 = np.nonzero(neg)[0][-1]  # r1: right edge of the rightmost band
    edges = [(z[i2], "L"), (z[i1], "R")]
    for i in range(mu_roots.size):
        if i in (i1, i2):
            continue
        if slo[i] < 0:  # z' goes − to +: lower end of a gap interval -> right edge of a band
            edges.append((z[i], "R"))
        else:
            edges.append((z[i], "L"))
    edges.sort(key=lambda e: e[0])
    kinds = [e[1] for e in edges]
    if kinds != ["L", "R"] * (len(edges) // 2):
        logger.warning("inconsistent band structure at lam=%g (%s); keeping outer hull", lam,
                       "".join(kinds))
        edges = [e for e in edges if e[1] == "L"][:1] + [e for e in edges if e[1] == "R"][-1:]
    left = np.array([e[0] for e in edges[0::2]])
    right = np.array([e[0] for e in edges[1::2]])
    return _Bands(left, right)


# ----------------------------------------------------------------------------------------
# support of few-atom laws: every critical point at once (companion matrices)
# ----------------------------------------------------------------------------------------

class _CriticalPolynomial:
    """Numerator of ``z'(m)`` for a law with few atoms, in ``μ = c m`` (``c = √(λ/γ)``).

    ``z'(m) = c² [1/μ² − γ Σ_j w_j v_j² / (1 + v_j μ)²] − 1``; multiplied by
    ``μ² Π_j (1 + v_j μ)²`` it is the polynomial ``c² A(μ) − B(μ)`` of degree ``2K + 2``
    with λ-independent ``A`` and ``B`` (coefficients highest degree first).
    """

    def __init__(self, gamma, v, w):
        self.gamma, self.v, self.w = gamma, v, w
        lin2 = [np.polymul([vj, 1.0], [vj, 1.0]) for vj in v]
        pi2 = np.array([1.0])
        for q in lin2:
            pi2 = np.polymul(pi2, q)
        A = pi2
        for j in range(v.size):
            pj = np.array([1.0])
            for i in range(v.size):
                if i != j:
                    pj = np.polymul(pj, lin2[i])
            A = np.polysub(A, gamma * w[j] * v[j] ** 2 * np.polymul([1.0, 0.0, 0.0], pj))
        self.B = np.polymul([1.0, 0.0, 0.0], pi2)
        self.A = np.concatenate([np.zeros(self.B.size - A.size), A])
        self.poles = np.unique(np.concatenate([[0.0], -1.0 / v]))

    def h(self, mu, c2):
        """``z'(m)/c²`` at ``μ`` (any shape, broadcast with ``c2``) and its μ-derivative."""
        r = 1.0 / (1.0 + mu[..., None] * self.v)
        vr = self.v * r
        h = 1.0 / (mu * mu) - self.gamma * np.sum(self.w * vr * vr, axis=-1) - 1.0 / c2
        dh = -2.0 / mu ** 3 + 2.0 * self.gamma * np.sum(self.w * vr ** 3, axis=-1)
        return h, dh

    def z(self, mu, c):
        """``z(m)`` at ``m = μ / c``."""
        r = 1.0 / (1.0 + mu[..., None] * self.v)
        return -c / mu - mu / c + self.gamma * c * np.sum(self.w * self.v * r, axis=-1)

    def roots(self, lams):
        """All critical points ``μ`` for each λ > 0: complex array, shape (L, 2K + 2)."""
        c2 = lams / self.gamma
        coef = c2[:, None] * self.A[None, :] - self.B[None, :]
        deg = coef.shape[1] - 1
        comp = np.zeros((lams.size, deg, deg))
        comp[:, 0, :] = -coef[:, 1:] / coef[:, :1]
        comp[:, np.arange(1, deg), np.arange(deg - 1)] = 1.0
        mu = np.linalg.eigvals(comp).astype(complex)
        # Newton polish on the rational form (the monomial basis loses accuracy when the
        # roots spread over several scales, i.e. at large λ)
        for _ in range(2):
            with np.errstate(all="ignore"):
                h, dh = self.h(mu, c2[:, None])
                step = h / dh
            ok = np.isfinite(step) & (np.abs(step) < 0.1 * np.abs(mu))
            mu = np.where(ok, mu - step, mu)
        return mu


def _poly_bands(lams, crit):
    """Bands and necks of ρ_λ for each λ > 0 from all critical points (few atoms).

    The intervals of real ``μ`` between consecutive critical points (or a critical point and
    the pole ``μ = 0``) on which ``z' > 0`` map onto the gaps of the support
    (Silverstein–Choi); complex critical points ``m*`` whose value ``z(m*)`` lies close to a
    band mark necks, where two bands nearly touch.
    """
    lams = np.asarray(lams, dtype=float)
    mu = crit.roots(lams)
    real = np.abs(mu.imag) <= 1e-7 * np.abs(mu)
    out = []
    for i, lam in enumerate(lams):
        c = np.sqrt(lam / crit.gamma)
        mr = np.unique(mu[i, real[i]].real)
        pts = np.unique(np.concatenate([mr, crit.poles]))
        is_crit = np.isin(pts, mr)
        mid = 0.5 * (pts[:-1] + pts[1:])
        rising = crit.h(mid, c * c)[0] > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            zc = crit.z(pts, c)  # (values at the poles are not used)
        lo_edge = hi_edge = None
        gaps = []
        for k in np.nonzero(rising)[0]:
            p, q = pts[k], pts[k + 1]
            if is_crit[k] and q == 0.0:
                hi_edge = zc[k]  # (μ_c, 0) ↦ (z(μ_c), +∞): right edge of the support
            elif p == 0.0 and is_crit[k + 1]:
                lo_edge = zc[k + 1]  # (0, μ_c) ↦ (−∞, z(μ_c)): left edge of the support
            elif is_crit[k] and is_crit[k + 1]:
                gaps.append((zc[k], zc[k + 1]))
        if lo_edge is None or hi_edge is None:
            raise RuntimeError(f"outer band edges not found at lam={lam!r}")
        left, right = [lo_edge], []
        for g0, g1 in sorted(gaps):
            if lo_edge < g0 < g1 < hi_edge and g0 > left[-1]:
                right.append(g0)
                left.append(g1)
        right.append(hi_edge)
        left, right = np.array(left), np.array(right)
        cplx = mu[i, ~real[i] & (mu[i].imag > 0)]
        zn = crit.z(cplx, c)
        band = np.searchsorted(left, zn.real) - 1
        inside = (band >= 0) & (zn.real < right[np.maximum(band, 0)])
        width = np.abs(zn.imag)
        near = inside & (width < 0.5 * (right - left)[np.maximum(band, 0)])
        out.append(_Bands(left, right, zn.real[near], width[near]))
    return out


# ----------------------------------------------------------------------------------------
# spectral engine
# ----------------------------------------------------------------------------------------

class SpectralEngine:
    """Vectorized evaluations for one (γ, readout law).

    Parameters
    ----------
    gamma : float
    values, weights : array_like, shape (K,)
    """

    def __init__(self, gamma, values, weights):
        self.gamma, self.values, self.weights, self.zero_weight = validate_readout_law(
            gamma, values, weights)
        self.sampler = _CriticalPointSampler(self.values, self.weights)
        self.gw = self.gamma * self.sampler.w
        self.crit = (_CriticalPolynomial(self.gamma, self.sampler.v, self.sampler.w)
                     if self.sampler.v.size <= _POLY_MAX_ATOMS else None)

    # -- support ---------------------------------------------------------------------
    def bands(self, lams):
        """Bands (and necks) of ρ_λ for each λ ≥ 0 in ``lams`` (list of ``_Bands``)."""
        lams = np.atleast_1d(np.asarray(lams, dtype=float))
        out = [None] * lams.size
        pos = np.nonzero(lams > 0)[0]
        for i in np.nonzero(lams == 0)[0]:
            out[i] = _Bands(np.array([-2.0]), np.array([2.0]), np.zeros(0), np.zeros(0))
        if pos.size:
            found = (_poly_bands(lams[pos], self.crit) if self.crit is not None
                     else _find_bands(lams[pos], self.gamma, self.sampler))
            for i, b in zip(pos, found):
                out[i] = b
        return out

    def _t(self, lam):
        return np.sqrt(lam / self.gamma) * self.sampler.v

    # -- band quadrature ---------------------------------------------------------------
    def band_moments(self, lams, *, rtol=1e-15, mass_tol=1e-12, max_rounds=60,
                     max_panels=None):
        """``∫ρ_λ³ dx`` and ``∫ρ_λ dx`` for each λ (vectorized over λ, bands and nodes).

        Every band is split at its necks; on each piece ``[a, b]``,
        ``x = a + (b − a)(1 − cos θ)/2`` turns the square-root edges into analytic
        behaviour in θ, and an adaptive composite 16-point Gauss–Legendre rule in θ
        (initial panels graded geometrically toward ends that face a nearby branch point:
        a neck or the edge across a narrow gap) bisects every panel whose two halves
        disagree with it by more than ``rtol·max(λ, 1e-2)`` on ``∫ρ³`` (``m_S`` moves by
        ``(4π²/3) δ∫ρ³ / λ``, so by about 1e-14 per panel) or ``mass_tol`` on ``∫ρ``.
        A total mass off by more than 1e-9 is logged as a warning (below: debug).

        Parameters
        ----------
        lams : array_like, shape (L,)
            SNRs λ ≥ 0.
        rtol, mass_tol : float
            Panel tolerances (see above).
        max_rounds : int
            Bisection rounds; panels still open after them are accepted as they are.
        max_panels : int, optional
            Open panels are all accepted once more than this many (default 2000 per λ)
            remain, which bounds the work where the roots are too noisy for the tolerances.

        Returns
        -------
        i3, i1 : ndarray, shape (L,)
            ``∫ρ_λ³`` and ``∫ρ_λ`` (= 1 up to quadrature error).
        bands : list of ``_Bands``
        """
        lams = np.atleast_1d(np.asarray(lams, dtype=float))
        bl = self.bands(lams)
        L, A, B, T0, T1 = [], [], [], [], []
        for i, b in enumerate(bl):
            for j in range(b.left.size):
                a_, b_ = b.left[j], b.right[j]
                sel = (b.necks > a_) & (b.necks < b_)
                order = np.argsort(b.necks[sel])
                cuts = np.concatenate([[a_], b.necks[sel][order], [b_]])
                dist = np.concatenate([b.neck_width[sel][order], [0.0]])
                # branch points facing the outer edges: the neighbouring band's edge
                gl = a_ - b.right[j - 1] if j > 0 else np.inf
                gr = b.left[j + 1] - b_ if j + 1 < b.left.size else np.inf
                d_lo = np.concatenate([[gl], dist[:-1]])
                d_hi = np.concatenate([dist[:-1], [gr]])
                for k in range(cuts.size - 1):
                    p, q = cuts[k], cuts[k + 1]
                    if not q > p:
                        continue
                    br = _initial_theta_panels(d_lo[k] / (q - p), d_hi[k] / (q - p))
                    n = br.size - 1
                    L.append(np.full(n, i))
                    A.append(np.full(n, p))
                    B.append(np.full(n, q))
                    T0.append(br[:-1])
                    T1.append(br[1:])
        L, A, B, T0, T1 = (np.concatenate(q) for q in (L, A, B, T0, T1))
        tt = (np.sqrt(lams / self.gamma)[:, None] * self.sampler.v[None, :]
              if self.sampler.v.size else np.zeros((lams.size, 1)))
        gw = self.gw if self.sampler.v.size else np.zeros(1)
        if self.crit is not None:
            P0, Q = (q.astype(complex) for q in self._root_polynomials(lams))
        else:
            P0 = Q = np.zeros((lams.size, 0), dtype=complex)
        tol3 = rtol * np.maximum(lams, 1e-2)
        if max_panels is None:
            max_panels = 2000 * lams.size

        def integrate(Li, Ai, Bi, t0, t1):
            h = 0.5 * (t1 - t0)
            theta = t0[:, None] + h[:, None] * (_GL_X + 1.0)[None, :]
            m = np.empty(theta.shape, dtype=np.complex128)
            _panel_stieltjes(theta, Ai, Bi, Li, tt, gw, P0, Q, m)
            rho = np.maximum(m.imag, 0.0) / np.pi
            jac = (0.5 * (Bi - Ai) * h)[:, None] * np.sin(theta) * _GL_W[None, :]
            return np.sum(rho ** 3 * jac, axis=1), np.sum(rho * jac, axis=1)

        i3 = np.zeros(lams.size)
        i1 = np.zeros(lams.size)
        V3, V1 = integrate(L, A, B, T0, T1)
        unresolved = 0
        for _ in range(max_rounds):
            if L.size == 0:
                break
            # halves interleaved, so that consecutive panels are usually adjacent
            M = 0.5 * (T0 + T1)
            L2, A2, B2 = (np.repeat(q, 2) for q in (L, A, B))
            t0 = np.column_stack([T0, M]).ravel()
            t1 = np.column_stack([M, T1]).ravel()
            c3, c1 = integrate(L2, A2, B2, t0, t1)
            s3 = c3[0::2] + c3[1::2]
            s1 = c1[0::2] + c1[1::2]
            # absolute tolerances, floored at the rounding noise of the roots (1e-13 relative)
            ok = (((np.abs(s3 - V3) <= np.maximum(tol3[L], 1e-13 * np.abs(s3)))
                   & (np.abs(s1 - V1) <= np.maximum(mass_tol, 1e-13 * np.abs(s1))))
                  | (T1 - T0 < 1e-13))
            if L.size > max_panels:
                unresolved += int(np.count_nonzero(~ok))
                ok[:] = True
            i3 += np.bincount(L[ok], weights=s3[ok], minlength=lams.size)
            i1 += np.bincount(L[ok], weights=s1[ok], minlength=lams.size)
            keep = np.repeat(~ok, 2)
            L, A, B, T0, T1 = L2[keep], A2[keep], B2[keep], t0[keep], t1[keep]
            V3, V1 = c3[keep], c1[keep]
        if L.size:
            unresolved += L.size
            i3 += np.bincount(L, weights=V3, minlength=lams.size)
            i1 += np.bincount(L, weights=V1, minlength=lams.size)
        err = np.abs(i1 - 1.0)
        if np.any(err > 1e-11) or unresolved:
            logger.log(logging.WARNING if np.max(err) > 1e-9 else logging.DEBUG,
                       "band quadrature: mass error %.1e (%d panels not converged)",
                       float(np.max(err)), unresolved)
        return i3, i1, bl

    def _root_polynomials(self, lams):
        """``(P, Q)``, shape (L, K + 3): ``z(m) = x`` ⇔ ``P(m) − x Q(m) = 0`` (≤ 10 atoms).

        With ``μ = c m``, ``c = √(λ/γ)``, ``c μ Π_j(1 + v_j μ) [z(m) − x]`` is the
        polynomial ``c² U(μ) + V(μ) − x c W(μ)`` with λ-independent
        ``U = −Π_j(1 + v_j μ) + γ μ Σ_j w_j v_j Π_{i≠j}(1 + v_i μ)``,
        ``V = −μ² Π_j(1 + v_j μ)``, ``W = μ Π_j(1 + v_j μ)``; in ``m`` (divided by ``c²``)
        the coefficients of ``m^k`` are ``(U_k + V_k/c²) c^k`` and ``W_k c^{k−1}``
        (returned highest degree first).
        """
        v, w = self.sampler.v, self.sampler.w
        pi = np.array([1.0])
        for vj in v:
            pi = np.polymul(pi, [vj, 1.0])
        S = np.zeros(1)
        for j in range(v.size):
            pj = np.array([1.0])
            for i in range(v.size):
                if i != j:
                    pj = np.polymul(pj, [v[i], 1.0])
            S = np.polyadd(S, w[j] * v[j] * pj)
        deg = v.size + 2
        pad = lambda q: np.concatenate([np.zeros(deg + 1 - q.size), q])[::-1]  # noqa: E731
        U = pad(np.polyadd(-pi, self.gamma * np.polymul([1.0, 0.0], S)))
        V = pad(-np.polymul([1.0, 0.0, 0.0], pi))
        W = pad(np.polymul([1.0, 0.0], pi))
        c = np.sqrt(np.asarray(lams, dtype=float) / self.gamma)[:, None]
        k = np.arange(deg + 1)
        # V_k = 0 for k < 2 and W_0 = 0: c ** max(·, 0) keeps λ = 0 finite (the semicircle
        # polynomial −1 − x m − m², with leading zeros)
        P = U * c ** k + V * c ** np.maximum(k - 2, 0)
        Q = W * c ** np.maximum(k - 1, 0)
        return P[:, ::-1], Q[:, ::-1]

    def _poly_root(self, x, lam):
        """Root of z(m) = x with largest Im m (companion matrices), Newton-polished."""
        t = self._t(lam)
        (P0,), (Q,) = self._root_polynomials([lam])
        lead = np.argmax(P0 != 0)  # λ = 0: lower degree
        P0, Q = P0[lead:], Q[lead:]
        deg = P0.size - 1
        xf = x.ravel()
        coef = P0[None, :] - xf[:, None] * Q[None, :]
        comp = np.zeros((xf.size, deg, deg))
        comp[:, 0, :] = -coef[:, 1:] / coef[:, :1]
        comp[:, np.arange(1, deg), np.arange(deg - 1)] = 1.0
        r = np.linalg.eigvals(comp)
        m = r[np.arange(xf.size), np.argmax(r.imag, axis=1)]
        gw = self.gw
        for _ in range(3):
            rr = 1.0 / (1.0 + np.multiply.outer(m, t))
            tr = t * rr
            z = -1.0 / m - m + tr @ gw
            zp = 1.0 / m ** 2 - 1.0 - (tr * tr) @ gw
            step = (z - xf) / zp
            newm = m - step
            ok = np.isfinite(newm) & (newm.imag > 0) & (np.abs(step) < 0.5 * m.imag + 1e-300)
            m = np.where(ok, newm, m)
        return m.reshape(x.shape)

    # -- pointwise ---------------------------------------------------------------------
    def stieltjes_real(self, x, lam):
        """m(x + i0) for real x (complex array)."""
        x = np.asarray(x, dtype=float)
        flat = x.ravel()
        res = np.empty(flat.shape, dtype=complex)
        (b,) = self.bands([lam])
        t = self._t(lam)
        gw = self.gw if t.size else np.zeros(1)
        if t.size == 0:
            t = np.zeros(1)
        inside = np.zeros(flat.shape, dtype=bool)
        for j in range(b.left.size):
            a_, b_ = b.left[j], b.right[j]
            sel = np.nonzero((flat > a_) & (flat < b_))[0]
            if sel.size == 0:
                continue
            if 0 < self.sampler.v.size <= _POLY_MAX_ATOMS:
                res[sel] = self._poly_root(flat[sel][None, :], lam)[0]
                inside[sel] = True
                continue
            out = np.empty((1, sel.size), dtype=complex)
            _eta_solve(np.ascontiguousarray(flat[sel][None, :]), np.zeros(1, dtype=np.int64),
                       t[None, :], gw, out)
            res[sel] = out[0]
            inside[sel] = True
        # outside: real m on the branch with z' > 0 (bisection in m between known points)
        out_idx = np.nonzero(~inside)[0]
        if out_idx.size:
            res[out_idx] = self._stieltjes_outside(flat[out_idx], lam, b)
        return res.reshape(x.shape)

    def _stieltjes_outside(self, x, lam, b):
        """Real m(x) for x outside the support, via the complex solver slightly off axis."""
        m = self.stieltjes_complex(x + 0j, lam, eta_min=0.0)
        return m.real + 0j

    def stieltjes_complex(self, z, lam, eta_min=None):
        """m(z) for Im z ≥ 0 by Newton with continuation in Im z from far away."""
        z = np.asarray(z, dtype=complex)
        flat = z.ravel()
        t = self._t(lam)
        gw = self.gw
        res = np.empty(flat.shape, dtype=complex)
        for i, zi in enumerate(flat):
            res[i] = _stieltjes_point(zi, t if t.size else np.zeros(1),
                                      gw if t.size else np.zeros(1))
        return res.reshape(z.shape)


@kernel(cache=True, error_model='numpy')
def _eta_solve(x, lam_idx, tt, gw, out):
    """m(x + i0) at real nodes x[p, :] (law tt[lam_idx[p]]) by η-continuation.

    Continuation in η = Im z from far away always tracks the physical root (the root with
    Im m > 0 is unique for η > 0), unlike continuation along the real axis, which can jump
    to spurious roots of z(m) = x when the law has many atoms.
    """
    for p in range(x.shape[0]):
        t = tt[lam_idx[p]]
        for i in range(x.shape[1]):
            out[p, i] = _stieltjes_point(complex(x[p, i], 0.0), t, gw)


@kernel(cache=True, error_model='numpy')
def _stieltjes_point(z, t, gw):
    """m(z) for Im z ≥ 0 by Newton continuation in η = Im z (geometric from 10 + |z|).

    η is divided by 5 per stage (≤ 4 Newton steps each) and set to its target once it is
    below 1e-3 Im m (the root then moves by much less than its distance to the axis).
    """
    x = z.real
    eta_t = max(z.imag, 0.0)
    eta = max(10.0 + 2.0 * abs(z), eta_t)
    m = -1.0 / complex(x, eta)
    # fixed-point warm-up at large η
    for k in range(50):
        zz = complex(x, eta)
        s = 0.0 + 0.0j
        for j in range(t.shape[0]):
            s += gw[j] * t[j] / (1.0 + t[j] * m)
        m = 1.0 / (-zz - m + s)
    for stage in range(400):
        zz = complex(x, eta)
        final = eta <= eta_t
        nit = 100 if final else 4
        for it in range(nit):
            zv, zp, _ = _z_and_derivs(m, t, gw)
            step = (zv - zz) / zp
            new = m - step
            k = 0
            while (new.imag < 0.0 or not np.isfinite(new.real) or not np.isfinite(new.imag)) \
                    and k < 60:
                step *= 0.5
                new = m - step
                k += 1
            if np.isfinite(new.real) and np.isfinite(new.imag):
                m = new
            if abs(step) <= 1e-15 * abs(m):
                break
        if final:
            break
        eta_new = 0.2 * eta
        if eta_new < 1e-3 * m.imag or eta_new < 1e-15 * (1.0 + abs(x)):
            eta_new = eta_t
        eta = max(eta_new, eta_t)
    return m


_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)


def _initial_theta_panels(d_lo, d_hi):
    """Breakpoints in θ ∈ [0, π] graded toward ends facing a branch point.

    ``d_lo``, ``d_hi``: distance of the nearest branch point beyond (or, for a neck, above)
    each end, relative to the piece length.  With ``x − a = (b − a) sin²(θ/2)`` it sits at
    ``|θ| ≈ 2√d``; panels grow geometrically (×4) from there.
    """
    br = [0.0, np.pi]
    for d, sign, end in ((d_lo, 1.0, 0.0), (d_hi, -1.0, np.pi)):
        if d < 0.05:
            th = 2.0 * np.sqrt(max(d, 1e-30))
            while th < 0.25 * np.pi:
                br.append(end + sign * th)
                th *= 4.0
    return np.unique(np.array(br))


@kernel(cache=True, error_model='numpy')
def _panel_stieltjes(theta, a, b, lam_idx, tt, gw, P0, Q, out):
    """``m(x + i0)`` at ``x = a_p + (b_p − a_p)(1 − cos θ)/2`` for every node of every panel.

    Nodes of a panel are visited in order and Newton starts from the extrapolation of the
    two previous roots; the root with ``Im m > 0`` is unique for ``x`` inside a band, so a
    converged Newton iterate with ``Im m > 0`` is the physical root.  The first node of a
    panel starts from the last root of the previous panel when both lie on the same piece
    (same λ and ``[a, b]``).  Where Newton fails: the companion-matrix root of largest
    ``Im m`` of ``P0[λ] − x Q[λ]`` (when given, ≤ 10 atoms), else η-continuation
    (:func:`_stieltjes_point`).
    """
    n = theta.shape[1]
    use_poly = P0.shape[1] > 0
    for p in range(theta.shape[0]):
        li = lam_idx[p]
        t = tt[li]
        h = 0.5 * (b[p] - a[p])
        same = (p > 0 and li == lam_idx[p - 1] and a[p] == a[p - 1] and b[p] == b[p - 1])
        prev = out[p - 1, n - 1] if same else 0j
        prev2 = 0j
        for i in range(n):
            x = a[p] + h * (1.0 - np.cos(theta[p, i]))
            ok = False
            m = prev
            if i > 0 or same:
                start = prev
                if i > 1:
                    r = (theta[p, i] - theta[p, i - 1]) / (theta[p, i - 1] - theta[p, i - 2])
                    start = prev + (prev - prev2) * r
                    if start.imag <= 0.0:
                        start = prev
                m, ok = _newton(start, x, t, gw, 30)
                ok = ok and m.imag > 1e-10 * abs(m)
            if not ok:
                if use_poly:
                    m = _companion_root(P0[li] - x * Q[li])
                    m2, ok2 = _newton(m, x, t, gw, 30)
                    if ok2 and m2.imag > 0.0:
                        m = m2
                else:
                    m = _stieltjes_point(complex(x, 0.0), t, gw)
            out[p, i] = m
            prev2 = prev
            prev = m


@kernel(cache=True)
def _companion_root(coef):
    """Root of largest imaginary part of the polynomial ``coef`` (highest degree first)."""
    lead = 0
    while coef[lead] == 0:  # λ = 0: lower degree
        lead += 1
    coef = coef[lead:]
    deg = coef.shape[0] - 1
    comp = np.zeros((deg, deg), dtype=np.complex128)
    for j in range(deg):
        comp[0, j] = -coef[j + 1] / coef[0]
    for j in range(1, deg):
        comp[j, j - 1] = 1.0
    r = np.linalg.eigvals(comp)
    return r[np.argmax(r.imag)]


_ENGINES = {}


def _engine(gamma, values, weights):
    g, v, w, _ = validate_readout_law(gamma, values, weights)
    key = (g, v.tobytes(), w.tobytes())
    eng = _ENGINES.get(key)
    if eng is None:
        eng = SpectralEngine(g, v, w)
        if len(_ENGINES) > 64:
            _ENGINES.clear()
        _ENGINES[key] = eng
    return eng


# ----------------------------------------------------------------------------------------
# public functional API
# ----------------------------------------------------------------------------------------

def stieltjes(z, *, lam, gamma, values, weights):
    """Stieltjes transform ``m(z) = ∫ρ_λ(x)/(x − z) dx`` of the law of ``√λ S⁰ + Z``.

    Parameters
    ----------
    z : complex or array_like, any shape
        Points with ``Im z ≥ 0``; real points give the boundary value ``m(x + i0)``.
    lam : float
        SNR ``λ ≥ 0``.
    gamma : float
        Width ratio ``γ > 0``.
    values, weights : array_like, shape (K,)
        Discrete readout law (weights sum to 1).

    Returns
    -------
    m : ndarray of complex, same shape as ``z``

    Raises
    ------
    ValueError
        If ``Im z < 0`` somewhere, ``λ < 0``, ``γ ≤ 0`` or the law is invalid.

    Notes
    -----
    Root of ``z(m) = z`` (see :func:`generalized_wishart_inverse_stieltjes`) with
    ``Im m > 0``; on the real axis inside a band it is continued from the band edge.
    """
    eng = _engine(gamma, values, weights)
    lam = _check_lam(lam)
    z = np.asarray(z)
    if np.iscomplexobj(z) and np.any(z.imag < 0):
        raise ValueError("stieltjes needs Im z >= 0")
    zc = z.astype(complex)
    out = np.empty(zc.shape, dtype=complex)
    real = zc.imag == 0
    if np.any(real):
        out[real] = eng.stieltjes_real(zc.real[real], lam)
    if np.any(~real):
        out[~real] = eng.stieltjes_complex(zc[~real], lam)
    return out


def density(x, *, lam, gamma, values, weights):
    """Density ``ρ_λ(x)`` of the limiting spectrum of ``√λ S⁰ + Z``.

    Parameters
    ----------
    x : float or array_like, any shape
    lam, gamma, values, weights : see :func:`stieltjes`.

    Returns
    -------
    rho : ndarray of float, same shape as ``x`` (0 outside the support)

    Raises
    ------
    ValueError
        As :func:`stieltjes`.
    """
    eng = _engine(gamma, values, weights)
    lam = _check_lam(lam)
    x = np.asarray(x, dtype=float)
    m = eng.stieltjes_real(x, lam)
    return np.maximum(m.imag, 0.0) / np.pi


def support(*, lam, gamma, values, weights):
    """Support of ``ρ_λ`` as a sorted list of bands ``[(a₁, b₁), (a₂, b₂), …]``.

    Parameters
    ----------
    lam, gamma, values, weights : see :func:`stieltjes`.

    Returns
    -------
    bands : list of tuple(float, float)

    Raises
    ------
    ValueError
        As :func:`stieltjes`.

    Notes
    -----
    Edges are ``z(m_c)`` at the real critical points ``z'(m_c) = 0``; the intervals of real
    ``m`` where ``z'(m) > 0`` map onto the gaps (Silverstein–Choi).  Critical points are
    bracketed on a fixed sampling of every interval between poles of ``z`` and refined by
    safeguarded Newton; a gap narrower than the sampling can be missed very close to the
    value of λ where it opens.
    """
    eng = _engine(gamma, values, weights)
    lam = _check_lam(lam)
    (b,) = eng.bands([lam])
    return [(float(l), float(r)) for l, r in zip(b.left, b.right)]
