"""Scalar Gaussian channels of weight priors (docs/theory.md §3).

For a prior ``P`` with mean 0 and variance 1 and a signal-to-noise ratio ``r >= 0`` the scalar
channel is ``Y = sqrt(r) W + Z`` with ``W ~ P`` and ``Z ~ N(0, 1)``.  Every prior supplies

* ``overlap(r)``            ``m_P(r) = E[W E[W|Y]]`` (``= 1 - mmse`` for unit variance),
* ``mmse(r)``               ``1 - m_P(r)``, computed without cancellation for large ``r``,
* ``free_entropy(r)``       ``psi_P(r) = E ln ∫ dP(w) exp(sqrt(r) w Y - r w^2/2)``,
* ``overlap_derivative(r)`` ``m_P'(r)``,
* ``overlap_inverse(m)``    ``m_P^{-1}(m)`` for ``0 <= m < 1``,
* ``sample(rng, shape)``    iid draws ``W ~ P`` (the teachers and initial students of the
  finite-size simulations, :mod:`replica.simulations`).

The registry :data:`WEIGHT_PRIORS` (name → class) is the one list of priors: every command that
takes ``--prior`` (``replica-sweep``, ``replica-phase-diagram``, ``replica-experiment``,
``replica-sgd``) builds its choices and help text from it (:func:`weight_prior_names`,
:func:`describe_weight_priors`). A new prior is a subclass registered with
:func:`register_weight_prior`.

All methods are vectorised: a scalar or an array goes in, a float64 array (0-d for scalars)
of the same shape comes out.  Quadrature nodes are fixed and precomputed; no method performs
an adaptive integration at call time.

References
----------
docs/theory.md §3.  D. Guo, S. Shamai, S. Verdú, "Mutual information and minimum mean-square error
in Gaussian channels", IEEE Trans. Inf. Theory 51 (2005) (I-MMSE, ``psi' = m/2``).
"""

from __future__ import annotations

import abc
import math

import numpy as np
from numpy.polynomial import chebyshev as _cheb

from ._kernels import kernel
from ._lazy import lazy_import

special = lazy_import("scipy.special")  # ~0.1-0.3 s: loaded when first used

__all__ = [
    "WeightPrior",
    "GaussianPrior",
    "RademacherPrior",
    "UniformPrior",
    "WEIGHT_PRIORS",
    "get_weight_prior",
    "register_weight_prior",
    "unregister_weight_prior",
    "weight_prior_names",
    "describe_weight_priors",
]

_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _as_snr(r):
    """Convert ``r`` to a float64 array and check ``r >= 0`` (NaN propagates)."""
    r = np.asarray(r, dtype=np.float64)
    if np.any(r < 0):
        raise ValueError("signal-to-noise ratio r must be >= 0")
    return r


@kernel(cache=True)
def _piecewise_clenshaw(x, edges, coef):  # pragma: no cover - compiled
    """Evaluate the piecewise Chebyshev series ``coef[panel]`` at the points ``x`` (1-D)."""
    n_panels = edges.size - 1
    out = np.empty(x.size)
    for i in range(x.size):
        xi = x[i]
        p = np.searchsorted(edges, xi, side="right") - 1
        if p < 0:
            p = 0
        elif p > n_panels - 1:
            p = n_panels - 1
        half = 0.5 * (edges[p + 1] - edges[p])
        t2 = 2.0 * ((xi - edges[p]) / half - 1.0)
        b1 = 0.0
        b2 = 0.0
        for j in range(coef.shape[1] - 1, 0, -1):
            b1, b2 = t2 * b1 - b2 + coef[p, j], b1
        out[i] = 0.5 * t2 * b1 - b2 + coef[p, 0]
    return out


class _PiecewiseChebyshev:
    """Piecewise Chebyshev interpolant on consecutive panels ``edges[i] <= r < edges[i+1]``.

    Built once from a (slow, accurate) vectorised function sampled at the Chebyshev points of
    the first kind of each panel; evaluation gathers each point's coefficients and runs one
    vectorised Clenshaw recurrence.  ``derivative()`` and ``antiderivative()`` return exact
    derivatives/antiderivatives (from 0 = ``edges[0]``) of the interpolant.
    """

    def __init__(self, edges, degree, func=None, *, coef=None):
        self.edges = np.asarray(edges, dtype=np.float64)
        self.lo = self.edges[:-1]
        self.half = 0.5 * np.diff(self.edges)
        if coef is None:
            k = np.arange(degree + 1)
            t = np.cos(np.pi * (k + 0.5) / (degree + 1))
            r = self.lo[:, None] + self.half[:, None] * (t[None, :] + 1.0)
            vals = np.asarray(func(r.ravel()), dtype=np.float64).reshape(r.shape)
            T = np.cos(np.outer(k, np.pi * (k + 0.5) / (degree + 1)))
            coef = (2.0 / (degree + 1)) * vals @ T.T
            coef[:, 0] *= 0.5
        self.coef = np.ascontiguousarray(coef, dtype=np.float64)

    def __call__(self, r):
        r = np.asarray(r, dtype=np.float64)
        return _piecewise_clenshaw(r.ravel(), self.edges, self.coef).reshape(r.shape)

    def derivative(self):
        coef = np.array([_cheb.chebder(c) / h for c, h in zip(self.coef, self.half)])
        return _PiecewiseChebyshev(self.edges, None, coef=coef)

    def antiderivative(self):
        coef = np.array([_cheb.chebint(c, lbnd=-1.0) * h for c, h in zip(self.coef, self.half)])
        coef[1:, 0] += np.cumsum([_cheb.chebval(1.0, c) for c in coef[:-1]])
        return _PiecewiseChebyshev(self.edges, None, coef=coef)


class WeightPrior(abc.ABC):
    """Scalar Gaussian channel ``Y = sqrt(r) W + Z`` of a unit-variance weight prior.

    Subclasses implement :meth:`mmse`, :meth:`free_entropy` and :meth:`overlap_derivative`;
    :meth:`overlap` and :meth:`overlap_inverse` are derived.

    Notes
    -----
    ``psi_P'(r) = m_P(r)/2`` (I-MMSE), ``psi_P(0) = 0``, ``m_P(0) = 0`` and ``m_P`` increases
    from 0 to 1 (docs/theory.md §3).
    """

    #: registry name of the prior
    name: str = ""
    #: short description for the commands' help texts (law and support), e.g. ``"±1"``
    summary: str = ""

    def sample(self, rng, shape):
        """Draw iid weights ``W ~ P`` (mean 0, variance 1).

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of randomness (the only one used).
        shape : int or tuple of int
            Shape of the draw.

        Returns
        -------
        ndarray
            float64 array of ``shape``, entries iid from the prior (unit variance).

        Raises
        ------
        NotImplementedError
            The prior defines no sampler; the solver (``replica-sweep``) still works, the
            finite-size commands (``replica-experiment``, ``replica-sgd``) refuse the prior with
            this one-line message.
        """
        raise NotImplementedError(f"weight prior {self.name!r} cannot draw samples (define "
                                  f"{type(self).__name__}.sample(rng, shape))")

    # -- to implement -----------------------------------------------------------------------
    @abc.abstractmethod
    def mmse(self, r):
        """Minimum mean-square error ``1 - m_P(r)``.

        Parameters
        ----------
        r : float or ndarray
            Signal-to-noise ratio, ``r >= 0``.

        Returns
        -------
        ndarray
            Same shape as ``r``, float64, in ``(0, 1]``.

        Raises
        ------
        ValueError
            If any ``r < 0``.
        """

    @abc.abstractmethod
    def free_entropy(self, r):
        """Free entropy ``psi_P(r) = E ln ∫ dP(w) exp(sqrt(r) w Y - r w^2/2)``.

        Parameters
        ----------
        r : float or ndarray
            Signal-to-noise ratio, ``r >= 0``.

        Returns
        -------
        ndarray
            Same shape as ``r``; ``psi_P(0) = 0`` and ``psi_P' = m_P/2``.

        Raises
        ------
        ValueError
            If any ``r < 0``.
        """

    @abc.abstractmethod
    def overlap_derivative(self, r):
        """Derivative ``m_P'(r)`` of the overlap.

        Parameters
        ----------
        r : float or ndarray
            Signal-to-noise ratio, ``r >= 0``.

        Returns
        -------
        ndarray
            Same shape as ``r``, positive.

        Raises
        ------
        ValueError
            If any ``r < 0``.
        """

    # -- derived ----------------------------------------------------------------------------
    def overlap(self, r):
        """Overlap ``m_P(r) = E[W E[W|Y]]`` of the scalar channel.

        Parameters
        ----------
        r : float or ndarray
            Signal-to-noise ratio, ``r >= 0``.

        Returns
        -------
        ndarray
            Same shape as ``r``, float64, in ``[0, 1)``.

        Raises
        ------
        ValueError
            If any ``r < 0``.

        Notes
        -----
        ``m_P(r) = 1 - mmse_P(r)`` for a unit-variance prior (docs/theory.md §3).
        """
        return 1.0 - self.mmse(r)

    def overlap_inverse(self, m, *, rtol=1e-13):
        """Inverse ``r = m_P^{-1}(m)`` of the overlap.

        Parameters
        ----------
        m : float or ndarray
            Overlap, ``0 <= m < 1`` (works at least up to ``m = 1 - 1e-9``).
        rtol : float, optional
            Relative tolerance on ``r`` (keyword-only).

        Returns
        -------
        ndarray
            Same shape as ``m``, ``r >= 0`` with ``m_P(r) = m``.

        Raises
        ------
        ValueError
            If any ``m`` lies outside ``[0, 1)`` or is not finite.

        Notes
        -----
        Safeguarded Newton iteration on ``ln mmse(r) = ln(1 - m)`` (close to linear in ``r`` or
        ``ln r`` for all priors), with a bisection bracket; vectorised over ``m``.
        """
        m = np.asarray(m, dtype=np.float64)
        if not np.all(np.isfinite(m)) or np.any((m < 0) | (m >= 1)):
            raise ValueError("overlap m must satisfy 0 <= m < 1")
        shape = m.shape
        mf = m.ravel()
        target = np.log1p(-mf)
        lo = np.zeros_like(mf)
        hi = np.ones_like(mf)
        # bracket: grow hi until mmse(hi) <= 1 - m
        for _ in range(200):
            bad = np.log(self.mmse(hi)) > target
            if not np.any(bad):
                break
            lo = np.where(bad, hi, lo)
            hi = np.where(bad, 4.0 * hi, hi)
        # initial guess: r = m/(1-m) (exact for Gaussian), clipped to the bracket
        r = np.clip(mf / (1.0 - mf), lo, hi)
        for _ in range(100):
            mm = self.mmse(r)
            f = np.log(mm) - target
            lo = np.where(f > 0, r, lo)
            hi = np.where(f <= 0, r, hi)
            dfdr = -self.overlap_derivative(r) / mm
            with np.errstate(divide="ignore", invalid="ignore"):
                step = f / dfdr
            r_new = r - step
            outside = ~np.isfinite(r_new) | (r_new <= lo) | (r_new >= hi)
            r_new = np.where(outside, 0.5 * (lo + hi), r_new)
            done = np.abs(r_new - r) <= rtol * np.maximum(r_new, 1e-300)
            r = r_new
            if np.all(done | (mf == 0)):
                break
        r = np.where(mf == 0, 0.0, r)
        return r.reshape(shape)

    def __repr__(self):
        return f"{type(self).__name__}()"


class GaussianPrior(WeightPrior):
    """Standard Gaussian prior ``N(0, 1)``.

    Notes
    -----
    ``m = r/(1+r)``, ``psi = r/2 - ln(1+r)/2``, ``m' = 1/(1+r)^2``, ``m^{-1}(m) = m/(1-m)``
    (docs/theory.md §3).
    """

    name = "gaussian"
    summary = "N(0, 1)"

    def sample(self, rng, shape):
        """iid ``N(0, 1)`` draws, float64 array of ``shape`` (see :meth:`WeightPrior.sample`)."""
        return rng.standard_normal(shape)

    def mmse(self, r):
        r = _as_snr(r)
        return 1.0 / (1.0 + r)

    def overlap(self, r):
        r = _as_snr(r)
        return r / (1.0 + r)

    def free_entropy(self, r):
        r = _as_snr(r)
        return 0.5 * r - 0.5 * np.log1p(r)

    def overlap_derivative(self, r):
        r = _as_snr(r)
        return 1.0 / (1.0 + r) ** 2

    def overlap_inverse(self, m, *, rtol=1e-13):
        m = np.asarray(m, dtype=np.float64)
        if not np.all(np.isfinite(m)) or np.any((m < 0) | (m >= 1)):
            raise ValueError("overlap m must satisfy 0 <= m < 1")
        return m / (1.0 - m)


class RademacherPrior(WeightPrior):
    """Rademacher prior ``W = ±1`` with probability 1/2 each.

    Notes
    -----
    With ``x = r + sqrt(r) z`` (docs/theory.md §3):
    ``m = E tanh x = 1 - E sech^2 x``, ``psi = E ln cosh x - r/2`` and
    ``m' = E[sech^2 x (1 - tanh x)]`` (Stein's lemma).

    For ``r < 1`` the expectations use Gauss–Hermite quadrature in ``z`` (100 nodes).  For
    ``r >= 1`` they are written as integrals over ``x`` against
    ``K(x, r) = exp(-r/2 - x^2/(2r)) / sqrt(2 pi r)``, e.g.
    ``mmse = ∫ sech^2(x) e^x K(x, r) dx``, whose integrand is analytic in the strip
    ``|Im x| < pi/2`` and decays exponentially, so the trapezoidal rule (step 1/4 on
    ``[-25, 50]``) is spectrally accurate and the ``exp(-r/2)`` decay of the mmse is kept with
    full relative accuracy (needed by :meth:`overlap_inverse` near ``m = 1``).

    These direct evaluations (``*_direct`` methods) are sampled once on the panels
    ``[0,1], [1,3], [3,9], [9,27], [27,81]`` (Chebyshev, degree 40): calls evaluate
    piecewise-Chebyshev interpolants of ``ln mmse`` (so the relative accuracy of ``mmse`` is
    kept), of ``(ln mmse)' = -m'/mmse`` and of ``psi(r) - r/2``; beyond
    ``r = 81`` (``mmse < 1e-18``) the direct quadrature is used.
    """

    name = "rademacher"
    summary = "±1"
    _R_SWITCH = 1.0

    def sample(self, rng, shape):
        """iid ``±1`` draws with probability 1/2 each, float64 array of ``shape``
        (see :meth:`WeightPrior.sample`)."""
        return rng.choice(np.array([-1.0, 1.0]), size=shape)

    def __init__(self):
        z, w = special.roots_hermitenorm(100)
        self._z = z
        self._wz = w / _SQRT_2PI
        h = 0.25
        x = np.arange(-25.0, 50.0 + h / 2, h)
        self._x = x
        self._h = h
        ax = np.abs(x)
        e = np.exp(-2.0 * ax)
        # sech^2(x) e^x, evaluated without overflow
        self._sech2_ex = np.where(x >= 0, 4.0 * np.exp(-x) / (1.0 + e) ** 2,
                                  4.0 * np.exp(3.0 * x) / (1.0 + e) ** 2)
        # tanh(x) sech^2(x) e^x
        self._tsech2_ex = np.tanh(x) * self._sech2_ex
        # log1p(exp(-2x)) e^x
        self._lg_ex = np.where(x >= 0, np.log1p(np.exp(-2.0 * ax)) * np.exp(x),
                               (-2.0 * x + np.log1p(np.exp(2.0 * x))) * np.exp(x))

    def _kernel(self, r):
        """``h K(x, r)`` on the trapezoid grid, shape ``(n_r, n_x)``, and its log-derivative."""
        x = self._x[None, :]
        rr = r[:, None]
        K = self._h * np.exp(-0.5 * rr - x * x / (2.0 * rr) - 0.5 * np.log(2 * np.pi * rr))
        dlogK = -0.5 + x * x / (2.0 * rr * rr) - 0.5 / rr
        return K, dlogK

    def _split(self, r):
        r = _as_snr(r)
        flat = r.ravel()
        small = flat < self._R_SWITCH
        return r.shape, flat, small

    def mmse_direct(self, r):
        """``mmse(r)`` by direct quadrature (see class Notes)."""
        shape, flat, small = self._split(r)
        out = np.empty_like(flat)
        if np.any(small):
            rs = flat[small]
            x = rs[:, None] + np.sqrt(rs)[:, None] * self._z[None, :]
            out[small] = 1.0 - np.tanh(x) @ self._wz
        if np.any(~small):
            K, _ = self._kernel(flat[~small])
            out[~small] = K @ self._sech2_ex
        out[np.isnan(flat)] = np.nan
        return out.reshape(shape)

    def free_entropy_direct(self, r):
        """``psi(r)`` by direct quadrature (see class Notes)."""
        shape, flat, small = self._split(r)
        out = np.empty_like(flat)
        if np.any(small):
            rs = flat[small]
            x = np.abs(rs[:, None] + np.sqrt(rs)[:, None] * self._z[None, :])
            lncosh = x + np.log1p(np.exp(-2.0 * x)) - math.log(2.0)
            out[small] = lncosh @ self._wz - 0.5 * rs
        if np.any(~small):
            rl = flat[~small]
            K, _ = self._kernel(rl)
            out[~small] = 0.5 * rl - math.log(2.0) + K @ self._lg_ex
        out[np.isnan(flat)] = np.nan
        return out.reshape(shape)

    def overlap_derivative_direct(self, r):
        """``m'(r)`` by direct quadrature (see class Notes)."""
        shape, flat, small = self._split(r)
        out = np.empty_like(flat)
        if np.any(small):
            rs = flat[small]
            x = rs[:, None] + np.sqrt(rs)[:, None] * self._z[None, :]
            t = np.tanh(x)
            out[small] = ((1.0 - t * t) * (1.0 - t)) @ self._wz
        if np.any(~small):
            K, dlogK = self._kernel(flat[~small])
            out[~small] = -(K * dlogK) @ self._sech2_ex
        out[np.isnan(flat)] = np.nan
        return out.reshape(shape)

    _TABLE_EDGES = (0.0, 1.0, 3.0, 9.0, 27.0, 81.0)
    _TABLE_DEGREE = 40

    def _tables(self):
        if not hasattr(self, "_log_mmse"):
            self._log_mmse = _PiecewiseChebyshev(self._TABLE_EDGES, self._TABLE_DEGREE,
                                                 lambda r: np.log(self.mmse_direct(r)))
            self._log_mmse_d = _PiecewiseChebyshev(
                self._TABLE_EDGES, self._TABLE_DEGREE,
                lambda r: -self.overlap_derivative_direct(r) / self.mmse_direct(r))
            self._psi_shift = _PiecewiseChebyshev(
                self._TABLE_EDGES, self._TABLE_DEGREE,
                lambda r: self.free_entropy_direct(r) - 0.5 * r)

    def _dispatch(self, r, table, direct):
        r = _as_snr(r)
        self._tables()
        flat = r.ravel()
        inside = flat <= self._TABLE_EDGES[-1]
        if np.all(inside):
            return table(flat).reshape(r.shape)
        out = np.empty_like(flat)
        out[inside] = table(flat[inside])
        out[~inside] = direct(flat[~inside])
        return out.reshape(r.shape)

    def mmse(self, r):
        return self._dispatch(r, lambda x: np.exp(self._log_mmse(x)), self.mmse_direct)

    def overlap_derivative(self, r):
        return self._dispatch(
            r, lambda x: -np.exp(self._log_mmse(x)) * self._log_mmse_d(x),
            self.overlap_derivative_direct)

    def free_entropy(self, r):
        return self._dispatch(r, lambda x: self._psi_shift(x) + 0.5 * x,
                              self.free_entropy_direct)


class UniformPrior(WeightPrior):
    """Uniform prior on ``[-sqrt(3), sqrt(3)]`` (unit variance).

    Notes
    -----
    Writing ``a = sqrt(3)``: the posterior of ``W`` given ``Y = y`` is ``N(y/sqrt(r), 1/r)``
    truncated to ``[-a, a]``.

    * ``r >= 9``: the two edges of the support decouple up to relative corrections of order
      ``Phi(-2 a sqrt(r)) < 1e-25`` and ``mmse(r) = 1/r + C/(a r^{3/2})`` with
      ``C = ∫ [Phi(b) - b phi(b) - phi(b)^2/Phi(b) - 1{b>0}] db = -0.90319728556862535...``
      (edge correction of a truncated Gaussian, computed with mpmath); ``m'`` and ``psi``
      follow by differentiation and integration.
    * ``r < 9``: ``mmse = E_Y Var(W|Y)`` by Gauss–Legendre quadrature in ``y`` (160 nodes)
      and in ``w`` (120 nodes), done once on Chebyshev nodes of the panels
      ``[0,1], [1,3], [3,9]`` (degree 44 each); calls evaluate the Chebyshev interpolant of
      ``mmse``, its derivative (``m' = -mmse'``) and its antiderivative
      (``psi(r) = r/2 - ∫_0^r mmse/2``).
    """

    name = "uniform"
    summary = "on ±√3"
    A = math.sqrt(3.0)

    def sample(self, rng, shape):
        """iid draws uniform on ``[-√3, √3]`` (unit variance), float64 array of ``shape``
        (see :meth:`WeightPrior.sample`)."""
        return rng.uniform(-self.A, self.A, size=shape)
    #: edge constant of the large-r expansion (see class Notes), from mpmath with 40 digits
    EDGE_CONSTANT = -0.9031972855686253536325326415361421783185
    _R_ASYMPTOTIC = 9.0
    _PANELS = (0.0, 1.0, 3.0, 9.0)
    _DEGREE = 44

    def __init__(self):
        self._yt, self._wy = special.roots_legendre(160)
        self._wt, self._ww = special.roots_legendre(120)
        self._build()

    # direct (slow, accurate) evaluation, used only to build the interpolants and in tests
    def mmse_direct(self, r):
        """``mmse(r)`` by direct two-dimensional quadrature (for ``0 <= r <= 9``).

        Parameters
        ----------
        r : float or ndarray
            Signal-to-noise ratio, ``0 <= r <= 9``.

        Returns
        -------
        ndarray
            Same shape as ``r``.
        """
        r = _as_snr(r)
        out = np.array([self._mmse_direct_scalar(float(v)) for v in r.ravel()])
        return out.reshape(r.shape)

    def _mmse_direct_scalar(self, r):
        a = self.A
        sr = math.sqrt(r)
        ymax = a * sr + 12.0
        y = 0.5 * ymax * (self._yt + 1.0)             # y in [0, ymax]; integrand is even
        wy = 0.5 * ymax * self._wy
        w = a * self._wt                               # w in [-a, a]
        ww = self._ww / 2.0                            # uniform density 1/(2a) times a
        logl = sr * w[None, :] * y[:, None] - 0.5 * r * w[None, :] ** 2
        lmax = logl.max(axis=1, keepdims=True)
        lik = np.exp(logl - lmax) * ww[None, :]
        norm = lik.sum(axis=1)
        mean = (lik @ w) / norm
        var = (lik * (w[None, :] - mean[:, None]) ** 2).sum(axis=1) / norm
        py = norm * np.exp(lmax[:, 0] - 0.5 * y * y) / _SQRT_2PI
        return 2.0 * float(np.sum(wy * py * var))

    def _build(self):
        self._mmse_table = _PiecewiseChebyshev(self._PANELS, self._DEGREE, self.mmse_direct)
        self._mmse_table_d = self._mmse_table.derivative()
        self._mmse_table_int = self._mmse_table.antiderivative()
        self._mmse_integral_at_asymptotic = float(
            self._mmse_table_int(np.array([self._R_ASYMPTOTIC]))[0])

    def _panel_eval(self, flat, which):
        if which == "value":
            return self._mmse_table(flat)
        if which == "derivative":
            return self._mmse_table_d(flat)
        return self._mmse_table_int(flat)

    def _split(self, r):
        r = _as_snr(r)
        flat = r.ravel()
        big = flat >= self._R_ASYMPTOTIC
        small = ~big & ~np.isnan(flat)
        return r.shape, flat, small, big

    def mmse(self, r):
        shape, flat, small, big = self._split(r)
        out = np.full_like(flat, np.nan)
        if np.any(small):
            out[small] = self._panel_eval(flat[small], "value")
        if np.any(big):
            rb = flat[big]
            out[big] = (1.0 + self.EDGE_CONSTANT / (self.A * np.sqrt(rb))) / rb
        return out.reshape(shape)

    def overlap_derivative(self, r):
        shape, flat, small, big = self._split(r)
        out = np.full_like(flat, np.nan)
        if np.any(small):
            out[small] = -self._panel_eval(flat[small], "derivative")
        if np.any(big):
            rb = flat[big]
            out[big] = (1.0 + 1.5 * self.EDGE_CONSTANT / (self.A * np.sqrt(rb))) / rb ** 2
        return out.reshape(shape)

    def free_entropy(self, r):
        shape, flat, small, big = self._split(r)
        out = np.full_like(flat, np.nan)
        if np.any(small):
            rs = flat[small]
            out[small] = 0.5 * rs - 0.5 * self._panel_eval(rs, "integral")
        if np.any(big):
            rb = flat[big]
            R = self._R_ASYMPTOTIC
            integral = (self._mmse_integral_at_asymptotic + np.log(rb / R)
                        - 2.0 * self.EDGE_CONSTANT / self.A * (rb ** -0.5 - R ** -0.5))
            out[big] = 0.5 * rb - 0.5 * integral
        return out.reshape(shape)


#: the registry: name → :class:`WeightPrior` subclass (edit through :func:`register_weight_prior`)
WEIGHT_PRIORS = {
    "gaussian": GaussianPrior,
    "rademacher": RademacherPrior,
    "uniform": UniformPrior,
}

_INSTANCES: dict = {}


def register_weight_prior(cls, *, replace=False):
    """Register a weight prior under ``cls.name`` (usable as a class decorator).

    Parameters
    ----------
    cls : type
        A subclass of :class:`WeightPrior` with a non-empty ``name`` (lower case, no spaces, no
        comma) and a constructor without arguments; it should define :meth:`WeightPrior.sample`
        and a ``summary`` for the help texts.
    replace : bool, keyword-only
        Allow replacing a registered prior of the same name.

    Returns
    -------
    type
        ``cls`` itself.

    Raises
    ------
    TypeError
        ``cls`` is not a :class:`WeightPrior` subclass.
    ValueError
        Empty or malformed name, or a name already registered (without ``replace``).
    """
    if not (isinstance(cls, type) and issubclass(cls, WeightPrior)):
        raise TypeError(f"register_weight_prior needs a WeightPrior subclass, got {cls!r}")
    name = str(cls.name)
    if not name or name != name.strip().lower() or any(c in name for c in " ,=:"):
        raise ValueError(f"weight prior name {name!r}: lower case, without spaces, commas, '=' or ':'")
    if name in WEIGHT_PRIORS and not replace:
        raise ValueError(f"weight prior {name!r} already registered")
    WEIGHT_PRIORS[name] = cls
    _INSTANCES.pop(name, None)
    return cls


def unregister_weight_prior(name):
    """Remove a registered weight prior (tests, plug-ins); a missing name is ignored."""
    WEIGHT_PRIORS.pop(name, None)
    _INSTANCES.pop(name, None)


def weight_prior_names():
    """Registered names, in registration order (the ``choices`` of every ``--prior``).

    Returns
    -------
    tuple of str
    """
    return tuple(WEIGHT_PRIORS)


def describe_weight_priors():
    """One line for the help texts: ``"gaussian (N(0, 1)), rademacher (±1), uniform (on ±√3)"``."""
    return ", ".join(f"{name} ({cls.summary})" if cls.summary else name for name, cls in WEIGHT_PRIORS.items())


def get_weight_prior(name):
    """Return the (cached) weight prior registered under ``name``.

    Parameters
    ----------
    name : str
        A registered name (:data:`WEIGHT_PRIORS`; built in: ``"gaussian"``, ``"rademacher"``,
        ``"uniform"``), case-insensitive.

    Returns
    -------
    WeightPrior

    Raises
    ------
    ValueError
        If ``name`` is not registered; the message lists the valid names.
    """
    key = str(name).strip().lower()
    if key not in WEIGHT_PRIORS:
        raise ValueError(f"unknown weight prior {name!r}; valid names: "
                         + ", ".join(sorted(WEIGHT_PRIORS)))
    if key not in _INSTANCES:
        _INSTANCES[key] = WEIGHT_PRIORS[key]()
    return _INSTANCES[key]
