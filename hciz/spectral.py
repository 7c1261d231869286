r"""Spectral law of ``√λ S⁰ + Z`` (generalized Wishart ⊞ semicircle).

``S⁰ = Wᵀ diag(v) W / √(k d)`` with ``W`` (k×d) iid of unit variance, ``k = γ d``, ``v`` iid
from a discrete readout law (atoms ``values`` with probabilities ``weights``), and ``Z`` a GOE
matrix whose spectrum is the semicircle on [−2, 2] (THEORY.md §4.1).

Conventions
-----------
Stieltjes transform ``m(z) = ∫ ρ(x) / (x − z) dx`` (``Im m > 0`` for ``Im z > 0``), density
``ρ(x) = Im m(x + i0) / π``.  The law of ``√λ S⁰`` is a generalized Marchenko–Pastur law with
population ``t = √λ v / √γ`` and ratio ``γ``; its free convolution with the semicircle has the
explicit inverse

.. math::  z(m) = -1/m - m + γ\, E_v[\, t / (1 + t m) \,].

Outside the support ``m(x)`` is real and ``z'(m(x)) > 0``; the support edges are the images
``z(m_c)`` of the real critical points ``z'(m_c) = 0``.  Every band is found from those
critical points.  Inside a band, ``m(x + i0)`` is the root of largest ``Im m`` of the
polynomial form of ``z(m) = x`` (companion matrices, ≤ 10 atoms) or, for more atoms, is
obtained by Newton continuation in ``η = Im z`` from far away (``m ≈ −1/z``) down to the real
axis, which always tracks the physical root (continuation along the real axis can jump to
spurious roots).  Exact continuous laws (gaussian, uniform): :mod:`hciz._continuous`.

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530 (HCIZ channel of shallow networks).
Maillard, Troiani, Martin, Krzakala, Zdeborová, arXiv 2408.03733 (case ``v ≡ 1``).
J. W. Silverstein, S.-I. Choi, J. Multivariate Anal. 54 (1995) (support from ``z'(m) > 0``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numba
import numpy as np
from scipy.special import roots_legendre

__all__ = [
    "generalized_wishart_inverse_stieltjes",
    "stieltjes",
    "density",
    "support",
    "validate_readout_law",
]

logger = logging.getLogger(__name__)

_PRUNE_WEIGHT = 1e-15
_POLY_MAX_ATOMS = 10  # companion-matrix roots up to this many atoms, continuation beyond  # atoms lighter than this are dropped (effect below 1e-14 on any output)


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
    ``z = −1/m − m``; ``v ≡ 1`` gives the cubic of THEORY.md §4.1.
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


@numba.njit(cache=True, error_model='numpy')
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


@numba.njit(cache=True, error_model='numpy')
def _newton(m, x, t, gw, maxit):
    """Newton for z(m) = x keeping Im m > 0.  Returns (m, converged)."""
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
        if abs(step) <= 4e-16 * abs(m):
            return m, True
    z, zp, _ = _z_and_derivs(m, t, gw)
    return m, abs(z - x) <= 1e-12 * (abs(x) + 1.0)


# ----------------------------------------------------------------------------------------
# support: real critical points of z(m)
# ----------------------------------------------------------------------------------------

@dataclass
class _Bands:
    """Bands of ρ_λ for one λ: arrays of left/right edges and their critical points."""

    left: np.ndarray
    right: np.ndarray
    mc_left: np.ndarray
    zpp_left: np.ndarray
    necks: np.ndarray = None


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
    z = np.empty(m.size)
    zpp = np.empty(m.size)
    for i in range(m.size):
        zz, _, z2 = _z_and_derivs(complex(m[i]), t, gw)
        z[i] = zz.real
        zpp[i] = z2.real
    # a root where z' goes from + to − (slo > 0) is the upper end of a positive interval,
    # i.e. the right edge of a gap = left edge of a band, except for the roots around 0.
    # Positive interval containing 0: (r1, 0) ∪ (0, r2), r1 < 0 < r2 are the nearest roots.
    pos = mu_roots > 0
    neg = mu_roots < 0
    if not (np.any(pos) and np.any(neg)):
        raise RuntimeError("critical points around m = 0 not found")
    i2 = np.nonzero(pos)[0][0]  # r2: left edge of the leftmost band
    i1 = np.nonzero(neg)[0][-1]  # r1: right edge of the rightmost band
    edges = [(z[i2], "L", m[i2], zpp[i2]), (z[i1], "R", m[i1], zpp[i1])]
    for i in range(mu_roots.size):
        if i in (i1, i2):
            continue
        if slo[i] < 0:  # z' goes − to +: lower end of a gap interval -> right edge of a band
            edges.append((z[i], "R", m[i], zpp[i]))
        else:
            edges.append((z[i], "L", m[i], zpp[i]))
    edges.sort(key=lambda e: e[0])
    kinds = [e[1] for e in edges]
    if kinds != ["L", "R"] * (len(edges) // 2):
        logger.warning("inconsistent band structure at lam=%g (%s); keeping outer hull", lam,
                       "".join(kinds))
        edges = [e for e in edges if e[1] == "L"][:1] + [e for e in edges if e[1] == "R"][-1:]
    left = np.array([e[0] for e in edges[0::2]])
    right = np.array([e[0] for e in edges[1::2]])
    mcl = np.array([e[2] for e in edges[0::2]])
    zppl = np.array([e[3] for e in edges[0::2]])
    return _Bands(left, right, mcl, zppl)


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
        self.mass_tol = 5e-13

    # -- support ---------------------------------------------------------------------
    def bands(self, lams):
        lams = np.atleast_1d(np.asarray(lams, dtype=float))
        out = [None] * lams.size
        pos = np.nonzero(lams > 0)[0]
        for i in np.nonzero(lams == 0)[0]:
            out[i] = _Bands(np.array([-2.0]), np.array([2.0]), np.array([1.0]),
                            np.array([-2.0]))
        if pos.size:
            for i, b in zip(pos, _find_bands(lams[pos], self.gamma, self.sampler)):
                out[i] = b
        return out

    def _t(self, lam):
        return np.sqrt(lam / self.gamma) * self.sampler.v

    # -- band quadrature ---------------------------------------------------------------
    def band_moments(self, lams, n_theta=96, max_theta=6144):
        """∫ρ³ dx and ∫ρ dx for each λ (vectorized over λ and bands).

        Gauss–Legendre in θ on every band (``x = a + (b−a)(1−cos θ)/2``), doubled until the
        total mass is 1 to ``mass_tol`` and ``∫ρ³`` is stable to 1e-14 (bands with a near
        neck, i.e. close to a splitting, need more nodes).
        """
        lams = np.atleast_1d(np.asarray(lams, dtype=float))
        bl = self.bands(lams)
        a = np.concatenate([b.left for b in bl])
        bb = np.concatenate([b.right for b in bl])
        mc = np.concatenate([b.mc_left for b in bl])
        zp = np.concatenate([b.zpp_left for b in bl])
        idx = np.concatenate([np.full(b.left.size, i) for i, b in enumerate(bl)])
        if self.sampler.v.size == 0:
            tt = np.zeros((lams.size, 1))
            gw = np.zeros(1)
        else:
            tt = np.sqrt(lams / self.gamma)[:, None] * self.sampler.v[None, :]
            gw = self.gw

        use_poly = 0 < self.sampler.v.size <= _POLY_MAX_ATOMS

        def run(sel, n):
            theta, wth = _gl_theta(n)
            if use_poly:
                x = a[sel, None] + 0.5 * (bb - a)[sel, None] * (1.0 - np.cos(theta))[None, :]
                out = np.empty(x.shape, dtype=np.complex128)
                for li in np.unique(idx[sel]):
                    rows = idx[sel] == li
                    out[rows] = self._poly_root(x[rows], lams[li])
            else:
                x = a[sel, None] + 0.5 * (bb - a)[sel, None] * (1.0 - np.cos(theta))[None, :]
                out = np.empty(x.shape, dtype=np.complex128)
                _eta_solve(np.ascontiguousarray(x), idx[sel], tt, gw, out)
            rho = out.imag / np.pi
            jac = 0.5 * (bb[sel] - a[sel])[:, None] * np.sin(theta)[None, :] * wth[None, :]
            return np.sum(rho ** 3 * jac, axis=1), np.sum(rho * jac, axis=1)

        allb = np.arange(a.size)
        b3, b1 = run(allb, n_theta)
        i1 = np.bincount(idx, weights=b1, minlength=lams.size)
        i3 = np.bincount(idx, weights=b3, minlength=lams.size)
        bad = np.abs(i1 - 1.0) > self.mass_tol
        # bands with a neck (near-split): composite rule graded toward the neck
        for li in np.nonzero(bad)[0]:
            necks = bl[li].necks
            if necks is None or necks.size == 0:
                continue
            for p in np.nonzero(idx == li)[0]:
                inside = necks[(necks > a[p]) & (necks < bb[p])]
                if inside.size == 0:
                    continue
                thn = np.arccos(np.clip(1.0 - 2.0 * (inside - a[p]) / (bb[p] - a[p]), -1, 1))
                th, wt = _graded_theta(thn, depth=18)
                b3[p], b1[p] = self._band_rule(p, li, th, wt, a, bb, mc, zp, tt, gw, lams,
                                               use_poly)
        i1 = np.bincount(idx, weights=b1, minlength=lams.size)
        i3g = np.bincount(idx, weights=b3, minlength=lams.size)
        fixed = bad & (np.abs(i1 - 1.0) <= self.mass_tol)
        i3 = np.where(fixed, i3g, i3)
        bad = bad & ~fixed
        n = n_theta
        while np.any(bad) and n < max_theta:
            n *= 2
            sel = np.nonzero(bad[idx])[0]
            c3, c1 = run(sel, n)
            b3[sel], b1[sel] = c3, c1
            j1 = np.bincount(idx, weights=b1, minlength=lams.size)
            j3 = np.bincount(idx, weights=b3, minlength=lams.size)
            bad = bad & ((np.abs(j1 - 1.0) > self.mass_tol) | (np.abs(j3 - i3) > 1e-14))
            i1, i3 = j1, j3
        if np.any(bad):
            err = float(np.max(np.abs(i1[bad] - 1.0)))
            logger.log(logging.WARNING if err > 1e-10 else logging.DEBUG,
                       "band quadrature not converged at %d of %d lambdas (mass error %.1e)",
                       int(bad.sum()), lams.size, err)
        return i3, i1, bl

    def _band_rule(self, p, li, th, wt, a, bb, mc, zp, tt, gw, lams, use_poly):
        if use_poly:
            x = a[p] + 0.5 * (bb[p] - a[p]) * (1.0 - np.cos(th))
            o = self._poly_root(x[None, :], lams[li])
        else:
            x = a[p] + 0.5 * (bb[p] - a[p]) * (1.0 - np.cos(th))
            o = np.empty((1, th.size), dtype=np.complex128)
            _eta_solve(x[None, :], np.array([li], dtype=np.int64), tt, gw, o)
        rr = o[0].imag / np.pi
        jj = 0.5 * (bb[p] - a[p]) * np.sin(th) * wt
        return np.sum(rr ** 3 * jj), np.sum(rr * jj)

    def _poly_root(self, x, lam):
        """Root of z(m) = x with largest Im m (companion matrices), Newton-polished."""
        t = self._t(lam)
        w = self.sampler.w
        # z(m) = x  <=>  (-1 - x m - m²) Π(1 + t m) + γ m Σ_j w_j t_j Π_{i≠j}(1 + t_i m) = 0
        prod = np.array([1.0])
        for tj in t:
            prod = np.polymul(prod, [tj, 1.0])
        P0 = np.polymul([-1.0, 0.0, -1.0], prod)  # (-m² - 1) Π
        acc = np.zeros(1)
        for j in range(t.size):
            pj = np.array([1.0])
            for i in range(t.size):
                if i != j:
                    pj = np.polymul(pj, [t[i], 1.0])
            acc = np.polyadd(acc, self.gamma * w[j] * t[j] * pj)
        P0 = np.polyadd(P0, np.polymul([1.0, 0.0], acc))
        Q = np.polymul([1.0, 0.0], prod)  # m Π, coefficient of -x
        deg = P0.size - 1
        Q = np.concatenate([np.zeros(deg + 1 - Q.size), Q])
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


@numba.njit(cache=True, error_model='numpy')
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


@numba.njit(cache=True, error_model='numpy')
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


_GL_CACHE = {}


def _graded_theta(points, n=16, ratio=0.2, depth=16):
    """Composite Gauss–Legendre rule on [0, π] graded geometrically toward ``points``."""
    br = [0.0, np.pi]
    for p in points:
        br.append(p)
        h = np.pi * ratio ** np.arange(1, depth)
        br.extend(p + h)
        br.extend(p - h)
    br = np.unique(np.clip(np.array(br), 0.0, np.pi))
    xg, wg = np.polynomial.legendre.leggauss(n)
    lo, hi = br[:-1], br[1:]
    th = (0.5 * (hi - lo)[:, None] * (xg[None, :] + 1.0) + lo[:, None]).ravel()
    wt = (0.5 * (hi - lo)[:, None] * wg[None, :]).ravel()
    return th, wt


def _gl_theta(n):
    if n not in _GL_CACHE:
        # scipy's Legendre nodes are O(n) (numpy's leggauss is an O(n³) eigensolve)
        xg, wg = roots_legendre(n)
        _GL_CACHE[n] = (0.5 * np.pi * (xg + 1.0), 0.5 * np.pi * wg)
    return _GL_CACHE[n]


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
