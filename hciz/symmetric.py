r"""Symmetric matrix-denoising channel ``Y = √λ S⁰ + Z`` (docs/theory.md §4.1).

Quantities (``ρ_λ`` the limiting spectral density of ``Y``, see :mod:`hciz.spectral`):

* ``mmse_S(λ) = (1 − (4π²/3) ∫ ρ_λ³ dx) / λ``, ``mmse_S(0) = 1``;
* ``m_S(λ) = 1 − mmse_S(λ)`` (overlap), ``m_S'(λ) = −mmse_S'(λ)``;
* ``ι(λ) = ¼ ∫₀^λ mmse_S(t) dt`` (mutual information per d², ``4 ι' = mmse_S``).

Representation
--------------
Everything is tabulated in ``s = 1/√(1+λ) ∈ (0, 1]`` (``s = 1`` is ``λ = 0``; ``s → 0`` is
``λ → ∞`` with ``s ≈ λ^{-1/2}``) through the bounded function ``g(s) = (1 + λ) mmse_S(λ)``
(``g(1) = 1``, ``g(0) = A``), as a piecewise Chebyshev interpolant built adaptively from
direct evaluations.  ``mmse_S = g s²`` is then accurate at every λ including ``λ → ∞``
(no table clipping), and

    ι(λ) = ½ [ (A/2) ln(1 + λ) + ∫_s^1 (g(σ) − A)/σ dσ ],

so ``ι ~ (A/4) ln λ`` exactly in the tail.  ``A = lim λ mmse_S(λ) = 1 − p₀²`` where
``p₀ = max(0, 1 − γ(1 − P(v = 0)))`` is the mass of the atom of ``S⁰`` at 0: as
``λ → ∞`` that atom becomes a semicircle of mass ``p₀`` and variance ``p₀`` (free Fisher
information ``p₀²``) while the rest of the spectrum spreads as ``√λ``.  For ``v ≡ 1``:
``A = 2γ − γ²`` for ``γ < 1`` (noiseless perfect recovery at ``α = A/2 = γ − γ²/2``) and
``A = 1`` for ``γ ≥ 1`` (``α = 1/2``, the number of degrees of freedom of a symmetric
matrix per d²).

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530, §HCIZ (``m_S``, ``ι``).
Maillard, Troiani, Martin, Krzakala, Zdeborová, arXiv 2408.03733 (``v ≡ 1``, Eq. for the
MMSE through ``∫ρ³``).
Bun, Bouchaud, Potters, Phys. Rep. 666 (2017) (rotationally invariant estimator).
"""
from __future__ import annotations

import functools
import logging
import time

import numpy as np

from priors._kernels import kernel

from . import cache, spectral
from ._continuous import ContinuousEngine
from .spectral import SpectralEngine, validate_readout_law

__all__ = ["SymmetricChannel", "symmetric_channel", "readout_channel"]

logger = logging.getLogger(__name__)

_FOUR_PI2_3 = 4.0 * np.pi ** 2 / 3.0
# below _SMALL_LAM, mmse_S is a degree-15 Chebyshev fit on [0, _SMALL_FIT] of direct values
# (the subtraction 1 − (4π²/3)∫ρ³ loses 1e-16/λ); the fit interval is kept short because
# mmse_S of the gaussian readout law has strong curvature already near λ ≈ 0.03
_SMALL_LAM = 0.01
_SMALL_FIT = 0.04


# ----------------------------------------------------------------------------------------
# numba evaluation kernels (piecewise Chebyshev in s)
# ----------------------------------------------------------------------------------------

@kernel(cache=True, warmup=True)
def _piece(s, br):
    lo = 0
    hi = br.shape[0] - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if s >= br[mid]:
            lo = mid
        else:
            hi = mid
    return lo


@kernel(cache=True, warmup=True)
def _clenshaw(c, x):
    b1 = 0.0
    b2 = 0.0
    x2 = 2.0 * x
    for k in range(c.shape[0] - 1, 0, -1):
        b1, b2 = c[k] + x2 * b1 - b2, b1
    return c[0] + x * b1 - b2


@kernel(cache=True, warmup=True)
def _eval(s, br, C):
    p = _piece(s, br)
    a = br[p]
    b = br[p + 1]
    x = (2.0 * s - a - b) / (b - a)
    return _clenshaw(C[p], x)


@kernel(cache=True, warmup=True)
def _mmse_s(lam, br, C):
    if lam == np.inf:
        return 0.0
    if lam == 0.0:
        return 1.0
    s2 = 1.0 / (1.0 + lam)
    # mmse_S ≤ 1 exactly (the table value at s → 1 carries ~1e-12 noise)
    return min(_eval(np.sqrt(s2), br, C) * s2, 1.0)


@kernel(cache=True, warmup=True)
def _dmmse_s(lam, br, C, D):
    """−mmse'(λ) = (g' s² + 2 g s) s³ / 2."""
    if lam == np.inf:
        return 0.0
    s = 1.0 / np.sqrt(1.0 + lam)
    g = _eval(s, br, C)
    dg = _eval(s, br, D)
    return 0.5 * (dg * s * s + 2.0 * g * s) * s * s * s


@kernel(cache=True, warmup=True)
def _iota_s(lam, br, K, Ktot, A):
    if lam == np.inf:
        return np.inf
    if lam == 0.0:
        return 0.0
    s = 1.0 / np.sqrt(1.0 + lam)
    return 0.5 * (0.5 * A * np.log1p(lam) + Ktot - _eval(s, br, K))


@kernel(cache=True, warmup=True)
def _inverse_s(m, br, C, D, A):
    """λ with 1 − g(s)s² = m (Newton in s, bisection safeguard on [0, 1])."""
    q = 1.0 - m
    if q >= 1.0:
        return 0.0
    lo = 0.0
    hi = 1.0
    s = np.sqrt(q / A) if A > 0 else 0.5
    if not (0.0 < s < 1.0):
        s = 0.5
    for it in range(100):
        g = _eval(s, br, C)
        f = g * s * s - q
        if f > 0:
            hi = s
        else:
            lo = s
        df = _eval(s, br, D) * s * s + 2.0 * g * s
        sn = s - f / df
        if not (lo < sn < hi):
            sn = 0.5 * (lo + hi)
        if abs(sn - s) <= 1e-17 + 2e-16 * s:
            s = sn
            break
        s = sn
    lam = (1.0 - s) * (1.0 + s) / (s * s)
    # one Newton step directly in λ (improves relative accuracy of small λ)
    if lam > 0:
        mm = 1.0 - _mmse_s(lam, br, C)
        dm = _dmmse_s(lam, br, C, D)
        if dm > 0:
            lam2 = lam - (mm - m) / dm
            if lam2 > 0 and abs(lam2 - lam) < 1e-6 * lam + 1e-300:
                lam = lam2
    return lam


@kernel(cache=True, warmup=True, loop_arg=0)
def _vec_mmse(lam, br, C, out):
    for i in range(lam.shape[0]):
        out[i] = _mmse_s(lam[i], br, C)


@kernel(cache=True, warmup=True, loop_arg=0)
def _vec_dmmse(lam, br, C, D, out):
    for i in range(lam.shape[0]):
        out[i] = _dmmse_s(lam[i], br, C, D)


@kernel(cache=True, warmup=True, loop_arg=0)
def _vec_iota(lam, br, K, Ktot, A, out):
    for i in range(lam.shape[0]):
        out[i] = _iota_s(lam[i], br, K, Ktot, A)


@kernel(cache=True, warmup=True, loop_arg=0)
def _vec_inverse(m, br, C, D, A, out):
    for i in range(m.shape[0]):
        out[i] = _inverse_s(m[i], br, C, D, A)


# ----------------------------------------------------------------------------------------

_TABLE_NAMES = ("breakpoints", "g", "dg", "k_integral", "k_total")


def _consistent(stored, resolution):
    """Shapes of a cached table agree with each other and with ``resolution``."""
    br, C, D, K, tot = (stored[n] for n in _TABLE_NAMES)
    p = br.size - 1
    return (br.ndim == 1 and p >= 1 and C.shape == (p, resolution) and D.shape == C.shape
            and K.shape == (p, resolution + 1) and tot.shape == ()
            and bool(np.all(np.diff(br) > 0)))


def _as_lam(lam):
    arr = np.asarray(lam, dtype=float)
    if np.any(np.isnan(arr)) or np.any(arr < 0):
        raise ValueError("lam must be >= 0 (not NaN)")
    return arr


class SymmetricChannel:
    r"""Symmetric HCIZ channel ``Y = √λ S⁰ + Z`` for one (γ, readout law).

    Parameters
    ----------
    gamma : float
        Width ratio ``γ = k/d > 0``.
    values, weights : array_like, shape (K,)
        Discrete readout law (continuous laws discretized by the caller, e.g. on
        Gauss–Hermite nodes); weights non-negative, summing to 1 (±1e-10).  The module
        assumes ``E v² = 1`` only through the normalization ``mmse_S(0) = 1`` of docs/theory.md.
    resolution : int, optional
        Chebyshev nodes per piece of the table (default 24).  The table is built lazily at
        the first cached evaluation and refined adaptively until the interpolant agrees with
        direct evaluation to about 1e-12; it is then stored in the on-disk cache of
        :mod:`hciz.cache` (``$REPLICA_HCIZ_CACHE``, ``off`` to disable) and later channels
        with the same (γ, law, resolution) read it from there.
    law : {None, "gaussian", "uniform"}, optional
        If given, the atoms are only used for :attr:`mean_shift` and the exact continuous
        law (``N(0, 1)``, resp. uniform on ``[−√3, √3]``) is used for the spectrum
        (:mod:`hciz._continuous`): ``p₀ = max(0, 1 − γ)``.

    Raises
    ------
    ValueError
        On ``γ ≤ 0``, weights not summing to 1, negative weights, non-finite values.

    Notes
    -----
    All evaluation methods accept a float or an ndarray and return float64 of the same
    shape.  ``mmse``, ``overlap`` (``m_S``), ``overlap_derivative`` (``m_S'``),
    ``mutual_information`` (``ι``) are defined for ``λ ∈ [0, ∞]``; ``overlap_inverse`` for
    ``m ∈ [0, 1)``.

    References
    ----------
    Barbier et al., arXiv 2501.18530; Maillard et al., arXiv 2408.03733 (``v ≡ 1``);
    Bun, Bouchaud, Potters, Phys. Rep. 666 (2017).
    """

    def __init__(self, gamma, values, weights, *, resolution=None, law=None):
        self.gamma, self.values, self.weights, self.zero_weight = validate_readout_law(
            gamma, values, weights)
        self.resolution = int(resolution) if resolution is not None else 24
        if self.resolution < 8:
            raise ValueError("resolution must be >= 8")
        self.law = _normalize_law(law)
        if self.law is None:
            p0 = max(0.0, 1.0 - self.gamma * (1.0 - self.zero_weight))
        else:
            p0 = max(0.0, 1.0 - self.gamma)
        self._A = 1.0 - p0 * p0
        self._spectral = None
        self._table = None
        self.build_seconds = None

    @property
    def _engine(self):
        """The spectral engine of ``S⁰``, built at its first use: its λ-independent sampling costs
        O(atoms² · points) (35 s of CPU and 1.5 GB for 1,000 atoms), and a model whose activation has no
        degree-2 part never asks for it (μ₂ = 0: docs/theory.md §5.2)."""
        if self._spectral is None:
            self._spectral = (SpectralEngine(self.gamma, self.values, self.weights) if self.law is None
                              else ContinuousEngine(self.gamma, self.law))
        return self._spectral

    # ------------------------------------------------------------------ properties
    @property
    def mmse_lambda_limit(self):
        """``A = lim_{λ→∞} λ mmse_S(λ) = 1 − p₀²`` with ``p₀ = max(0, 1 − γ P(v ≠ 0))``."""
        return self._A

    @property
    def mean_shift(self):
        """``γ (E v)² = R_d − 1``: squared mean of ``S⁰`` (known part added to overlaps)."""
        return self.gamma * float(np.dot(self.weights, self.values)) ** 2

    # ------------------------------------------------------------------ direct evaluation
    def direct_mmse(self, lam):
        """Uncached high-accuracy ``mmse_S(λ)``.

        Parameters
        ----------
        lam : float or ndarray, λ ≥ 0 (finite)

        Returns
        -------
        ndarray or float, same shape

        Raises
        ------
        ValueError
            If some λ is negative, NaN or infinite.

        Notes
        -----
        ``mmse_S(λ) = (1 − (4π²/3) ∫ρ_λ³ dx) / λ`` with the adaptive band quadrature of
        :meth:`hciz.spectral.SpectralEngine.band_moments` (bands split at necks; about
        1e-15 on ``m_S`` against 20-digit references).  For ``λ < 0.01`` the subtraction
        ``1 − (4π²/3)∫ρ³`` loses ``1e-16/λ``; there a degree-15 Chebyshev interpolant of
        ``mmse_S`` on ``[0, 0.04]`` (nodes ≥ 1e-4, value 1 at 0 not needed) is used
        instead, whose noise is bounded by ~1e-12.

        References
        ----------
        Maillard et al., arXiv 2408.03733 (MMSE through ``∫ρ³``); Barbier et al.,
        arXiv 2501.18530.
        """
        arr = _as_lam(lam)
        flat = arr.ravel()
        if np.any(~np.isfinite(flat)):
            raise ValueError("direct_mmse needs finite lam")
        out = np.empty(flat.shape)
        big = flat >= _SMALL_LAM
        if np.any(big):
            out[big] = self._direct_g(flat[big]) / (1.0 + flat[big])
        small = ~big
        if np.any(small):
            c = getattr(self, "_small_fit", None)
            if c is None:
                n = 16
                k = np.arange(n)
                xn = np.cos(np.pi * (k + 0.5) / n)
                ln = 0.5 * _SMALL_FIT * (xn + 1.0)
                vals = self._direct_g(ln) / (1.0 + ln)
                c = np.polynomial.chebyshev.chebfit(xn, vals, n - 1)
                self._small_fit = c
            out[small] = np.polynomial.chebyshev.chebval(flat[small] / (0.5 * _SMALL_FIT) - 1.0,
                                                         c)
            out[small & (flat == 0)] = 1.0
        return out.reshape(arr.shape) if arr.shape else float(out[0])

    def _direct_g(self, lams):
        """g = (1+λ) mmse_S(λ) from the band quadrature, λ > 0 (array)."""
        lams = np.asarray(lams, dtype=float)
        if self.law is not None:
            i3, _, bad = self._engine.moments(lams)
            if bad.size:
                logger.warning("continuous-law quadrature not converged at %d of %d lambdas",
                               bad.size, lams.size)
        else:
            i3, _, _ = self._engine.band_moments(lams)
        F = 1.0 - _FOUR_PI2_3 * i3
        return F * (1.0 + lams) / lams

    # ------------------------------------------------------------------ table
    def _build(self):
        t0 = time.perf_counter()
        n = self.resolution
        k = np.arange(n)
        xn = np.cos(np.pi * (k + 0.5) / n)[::-1]  # first-kind nodes, increasing
        A = self._A
        todo = [(0.0, 0.05), (0.05, 0.15), (0.15, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 0.85),
                (0.85, 1.0)]
        done = []
        tol = 2e-13
        it = 0
        while todo:
            it += 1
            ss = np.concatenate([0.5 * (a + b) + 0.5 * (b - a) * xn for a, b in todo])
            lam = (1.0 - ss) * (1.0 + ss) / (ss * ss)
            g = np.empty(ss.size)
            small = lam < _SMALL_LAM
            if np.any(~small):
                g[~small] = self._direct_g(lam[~small])
            if np.any(small):
                g[small] = self.direct_mmse(lam[small]) * (1.0 + lam[small])
            new = []
            for j, (a, b) in enumerate(todo):
                vals = g[j * n:(j + 1) * n]
                c = np.polynomial.chebyshev.chebfit(xn, vals, n - 1)
                err = np.max(np.abs(c[-3:]))
                # pieces narrower than 0.02 are accepted at a 1e-11 tail: the remaining
                # tail there is quadrature noise or a band-splitting kink of g, not resolution
                if (err <= tol or (b - a) < 2e-4 or it > 14
                        or ((b - a) < 0.02 and err <= 1e-11)):
                    # mmse_S = g s²: a g-error e moves m_S by at most e b² (near s = 0,
                    # i.e. λ → ∞, g may be non-smooth, e.g. like √s at γ = 1)
                    if err * b * b > 1e-11:
                        logger.warning("table piece [%g, %g] accepted with tail %.1e", a, b, err)
                    elif err > tol:
                        logger.debug("table piece [%g, %g] accepted with tail %.1e", a, b, err)
                    done.append((a, b, c))
                else:
                    mid = 0.5 * (a + b)
                    new += [(a, mid), (mid, b)]
            todo = new
        done.sort(key=lambda e: e[0])
        br = np.array([d[0] for d in done] + [1.0])
        C = np.array([d[2] for d in done])
        D = np.zeros_like(C)
        Kc = np.zeros((C.shape[0], n + 1))
        cheb = np.polynomial.chebyshev
        cum = np.zeros(C.shape[0] + 1)
        for p in range(C.shape[0]):
            a, b = br[p], br[p + 1]
            hw = 0.5 * (b - a)
            d = cheb.chebder(C[p]) / hw
            D[p, :d.size] = d
            # k(s) = (g - A)/s sampled on the piece, antiderivative in s
            s_nodes = 0.5 * (a + b) + hw * xn
            kv = (cheb.chebval(xn, C[p]) - A) / s_nodes
            kc = cheb.chebfit(xn, kv, n - 1)
            ki = cheb.chebint(kc, lbnd=-1) * hw  # ∫_a^s k
            Kc[p, :ki.size] = ki
            cum[p + 1] = cum[p] + cheb.chebval(1.0, ki)
        Kc[:, 0] += cum[:-1]  # now ∫_0^s k for s in piece p
        self._table = (br, C, D, Kc, float(cum[-1]))
        self.build_seconds = time.perf_counter() - t0
        logger.info("symmetric channel table (gamma=%g, %d atoms): %d pieces in %.2f s",
                    self.gamma, self.values.size, C.shape[0], self.build_seconds)

    @property
    def table(self):
        """``(breakpoints, g coefficients, g' coefficients, ∫k coefficients, ∫₀¹k)``.

        Built at first use, or read from the on-disk cache (:mod:`hciz.cache`), to which a
        newly built table is written.
        """
        if self._table is None:
            key = cache.table_key(self.gamma, self.values, self.weights, self.resolution,
                                  self.law)
            stored = cache.load_table(key, _TABLE_NAMES)
            if stored is not None and _consistent(stored, self.resolution):
                self._table = tuple(stored[n] for n in _TABLE_NAMES[:4]) + (
                    float(stored["k_total"]),)
                logger.debug("symmetric channel table (gamma=%g) read from the cache",
                             self.gamma)
            else:
                where = cache.cache_dir()
                logger.info("building the HCIZ table of the symmetric channel (gamma=%g, %s readout law): "
                            "done once, %s", self.gamma, self.law or f"{self.values.size}-atom",
                            f"then read from the cache {where}" if where is not None
                            else "not cached (REPLICA_HCIZ_CACHE=off)")
                self._build()
                cache.save_table(key, dict(zip(_TABLE_NAMES, self._table)))
        return self._table

    # ------------------------------------------------------------------ cached evaluation
    def _apply(self, kernel_scalar, kernel_vec, x, *extra):
        if isinstance(x, (float, int)) and not isinstance(x, bool):
            return kernel_scalar(float(x), *extra)
        arr = np.asarray(x, dtype=float)
        flat = np.ascontiguousarray(arr.ravel())
        out = np.empty(flat.shape)
        kernel_vec(flat, *extra, out)
        if arr.shape == ():
            return float(out[0])
        return out.reshape(arr.shape)

    def _check(self, lam):
        if isinstance(lam, (float, int)):
            if not lam >= 0:
                raise ValueError(f"lam must be >= 0, got {lam}")
        else:
            _as_lam(lam)

    def mmse(self, lam):
        """``mmse_S(λ)`` (table).  λ ∈ [0, ∞] (float or ndarray); ValueError if λ < 0."""
        self._check(lam)
        br, C, _, _, _ = self.table
        return self._apply(_mmse_s, _vec_mmse, lam, br, C)

    def overlap(self, lam):
        """``m_S(λ) = 1 − mmse_S(λ)`` ∈ [0, 1).  λ ∈ [0, ∞]; ValueError if λ < 0."""
        r = self.mmse(lam)
        return 1.0 - r

    def overlap_derivative(self, lam):
        """``m_S'(λ) = −mmse_S'(λ)`` (> 0).  λ ∈ [0, ∞]; ValueError if λ < 0."""
        self._check(lam)
        br, C, D, _, _ = self.table
        return self._apply(_dmmse_s, _vec_dmmse, lam, br, C, D)

    def mutual_information(self, lam):
        """``ι(λ) = ¼ ∫₀^λ mmse_S``; ``ι ≈ (A/4) ln λ`` as λ → ∞.  ValueError if λ < 0."""
        self._check(lam)
        br, _, _, K, Ktot = self.table
        return self._apply(_iota_s, _vec_iota, lam, br, K, Ktot, self._A)

    def overlap_inverse(self, m):
        """λ ≥ 0 with ``m_S(λ) = m``.

        Parameters
        ----------
        m : float or ndarray, 0 ≤ m < 1

        Returns
        -------
        float or ndarray, same shape

        Raises
        ------
        ValueError
            If some ``m`` is outside ``[0, 1)`` or NaN.
        """
        if isinstance(m, (float, int)):
            if not (0.0 <= m < 1.0):
                raise ValueError(f"overlap_inverse needs 0 <= m < 1, got {m}")
        else:
            arr = np.asarray(m, dtype=float)
            if np.any(~((arr >= 0) & (arr < 1))):
                raise ValueError("overlap_inverse needs 0 <= m < 1")
        br, C, D, _, _ = self.table
        return self._apply(_inverse_s, _vec_inverse, m, br, C, D, self._A)

    # ------------------------------------------------------------------ spectral delegation
    def density(self, x, lam):
        """``ρ_λ(x)``; see :func:`hciz.spectral.density`."""
        if self.law is not None:
            x = np.asarray(x, dtype=float)
            m = self._engine.stieltjes_real(x, spectral._check_lam(lam))
            return np.maximum(m.imag, 0.0) / np.pi
        return spectral.density(x, lam=lam, gamma=self.gamma, values=self.values,
                                weights=self.weights)

    def support(self, lam):
        """Bands of ``ρ_λ``; see :func:`hciz.spectral.support` (gaussian law: ℝ)."""
        if self.law is not None:
            return [(float(a), float(b))
                    for a, b in self._engine.bands(spectral._check_lam(lam))]
        return spectral.support(lam=lam, gamma=self.gamma, values=self.values,
                                weights=self.weights)

    def stieltjes(self, z, lam):
        """``m(z)`` of ``ρ_λ``; see :func:`hciz.spectral.stieltjes`."""
        if self.law is not None:
            z = np.asarray(z)
            if np.iscomplexobj(z) and np.any(z.imag < 0):
                raise ValueError("stieltjes needs Im z >= 0")
            return self._engine.solve(z.astype(complex), spectral._check_lam(lam))
        return spectral.stieltjes(z, lam=lam, gamma=self.gamma, values=self.values,
                                  weights=self.weights)

    def __repr__(self):
        return (f"SymmetricChannel(gamma={self.gamma}, atoms={self.values.size}, "
                f"resolution={self.resolution}, law={self.law!r})")


@functools.lru_cache(maxsize=64)
def _cached(gamma, vbytes, wbytes, resolution, law):
    values = np.frombuffer(vbytes, dtype=float)
    weights = np.frombuffer(wbytes, dtype=float)
    return SymmetricChannel(gamma, values, weights, resolution=resolution, law=law)


def _normalize_law(law):
    if law is None:
        return None
    name = str(law).lower()
    alias = {"gaussian": "gaussian", "gauss": "gaussian", "normal": "gaussian",
             "uniform": "uniform", "unif": "uniform"}
    if name not in alias:
        raise ValueError(f"law must be None, 'gaussian' or 'uniform', got {law!r}")
    return alias[name]


def symmetric_channel(gamma, values, weights, *, resolution=None, law=None):
    """Cached :class:`SymmetricChannel` for (γ, readout law, resolution).

    Parameters
    ----------
    gamma : float, > 0
    values, weights : array_like, shape (K,)
    resolution : int, optional
    law : {None, "gaussian", "uniform"}, optional
        Exact continuous readout law overriding the atoms (see :class:`SymmetricChannel`).

    Returns
    -------
    SymmetricChannel
        The same instance (and table) for equal arguments.

    Raises
    ------
    ValueError
        As :class:`SymmetricChannel`.
    """
    g, v, w, _ = validate_readout_law(gamma, values, weights)
    res = None if resolution is None else int(resolution)
    return _cached(g, v.tobytes(), w.tobytes(), res, _normalize_law(law))


def readout_channel(gamma, readout_law, *, resolution=None):
    """The channel of ``S⁰ = W⁰ᵀ diag(v) W⁰/√(kd)`` for a readout-law object.

    Parameters
    ----------
    gamma : float
        Width ratio γ = k/d > 0.
    readout_law : object with ``values``, ``weights`` and optionally ``name``, ``exact``
        E.g. :func:`priors.get_readout_law`. Continuous laws (``exact = False``) named
        ``gaussian`` or ``uniform`` enter exactly, not through their grid: the channel (and
        its table, cached on disk) depends only on (γ, law), whatever the grid size.
        Other continuous laws (a general density) enter through their atoms.
    resolution : int, optional, keyword-only
        Chebyshev nodes per table piece.

    Returns
    -------
    SymmetricChannel

    Raises
    ------
    ValueError
        As :func:`symmetric_channel`.
    """
    name = None if getattr(readout_law, "exact", True) else getattr(readout_law, "name", None)
    if name in ("gaussian", "uniform"):
        # symmetric exact laws: the atoms only give the mean shift γ(E v)² = 0; canonical atoms
        # make the channel (and its cache key) independent of the grid
        return symmetric_channel(gamma, np.array([-1.0, 1.0]), np.array([0.5, 0.5]), resolution=resolution,
                                 law=name)
    return symmetric_channel(gamma, np.asarray(readout_law.values, dtype=float),
                             np.asarray(readout_law.weights, dtype=float), resolution=resolution)
