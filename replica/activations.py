"""Activations: Hermite coefficients, dual kernels and the part ``g`` above degree two.

Conventions (docs/theory.md §2): probabilists' Hermite polynomials ``He_l``,
``mu_l = E[sigma(z) He_l(z)]``, ``sigma = sum_l mu_l He_l / l!`` and, for standard Gaussians
``u, w`` with correlation ``q``,

    dual kernel   kappa(q) = E[sigma(u) sigma(w)] = sum_l mu_l^2 q^l / l!
    g(q)          = kappa(q) - mu_0^2 - mu_1^2 q - mu_2^2 q^2 / 2   (= sum_{l>=3} ...)
    g'(q)         = E[sigma'(u) sigma'(w)] - mu_1^2 - mu_2^2 q        (Price's theorem)

``g`` is always the exact dual kernel minus its first three terms, never a truncated series.

How the dual kernels are evaluated
----------------------------------
* closed forms: ReLU (arc-cosine kernel), erf (arcsine kernel), polynomial activations
  (``quadratic``, ``hermite:...``; finite Hermite sums);
* ``elu``, ``tanh``, ``tanh2``, ``sigmoid``, ``softplus``: ``kappa(q) = E_u[sigma(u)
  E_xi sigma(q u + sqrt(1-q^2) xi)]`` by Gauss–Legendre quadrature in ``u`` on
  ``[-12, -b], [-b, 0], [0, b], [b, 12]`` (60 nodes each, ``b ~ 8 sqrt(1-q^2)``) and
  Gauss–Legendre quadrature in ``xi`` on two panels split where the argument crosses 0
  (50 nodes each; the inner expectation is in closed form for ELU), evaluated once (lazily,
  about 0.5 s CPU per activation) on the Chebyshev nodes of 12 equal panels in
  ``theta = arccos q`` (degree 22 each).  Calls evaluate this
  piecewise-Chebyshev interpolant, which is accurate to about 1e-13 (measured against the
  direct quadrature in ``tests/test_activations.py``); ``theta`` removes the
  ``sqrt(1 -+ q)`` branch points at ``q = ±1``.  The same is done for the kernel of
  ``sigma'``, which gives ``g'``.

References
----------
docs/theory.md §2 and §6.1.  Y. Cho, L. Saul, "Kernel methods for deep learning", NeurIPS 2009
(arc-cosine kernel).  C. Williams, "Computing with infinite networks", NeurIPS 1996 (erf kernel).
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np

from priors._kernels import kernel
from priors._lazy import lazy_import

special = lazy_import("scipy.special")  # ~0.1-0.3 s: loaded when first used

__all__ = ["Activation", "ACTIVATIONS", "get_activation", "describe_activations", "compiled_activation", "spec_g",
           "spec_g_prime", "spec_g_both"]

#: what a name of :data:`ACTIVATIONS` (defined below, after the table of built-in functions) does not
#: say, for the help texts
ACTIVATION_NOTES = {"elu": "α = 1", "tanh2": "= tanh 2x", "quadratic": "= x²/√2"}


def describe_activations():
    """One line for the commands' help texts: every name of :data:`ACTIVATIONS` (with its note) and the
    ``hermite:`` syntax."""
    names = [f"{name} ({ACTIVATION_NOTES[name]})" if name in ACTIVATION_NOTES else name for name in ACTIVATIONS]
    return (", ".join(names) + " or Hermite coefficients 'hermite:2=1.4142,3=1' (σ = Σ μ_ℓ He_ℓ/ℓ!)")

_SQRT_2PI = math.sqrt(2.0 * math.pi)

# ---------------------------------------------------------------------------------------------
# quadrature rules
# ---------------------------------------------------------------------------------------------
_U_MAX = 12.0
_N_HALF = 120
_N_INNER = 100
_HERMITE_MAX_DEGREE = 60
#: relative size (to E σ²) below which g(1) = Σ_{ℓ≥3} μ_ℓ²/ℓ! is rounding noise and set to 0
_G_ROUNDING = 64 * np.finfo(float).eps
_N_PANELS = 12
_PANEL_DEGREE = 22


_HERMITE_RULE_EDGES = (0.0, 1.0, 2.0, 3.0, 4.5, 6.0, 8.0, 10.0, 13.0, 16.0, 20.0)


@functools.lru_cache(maxsize=None)
def _hermite_rule(n_per_panel=30):
    """Composite Gauss–Legendre rule for ``E f(z)``, symmetric panels on ``[-20, 20]``.

    Panels split at 0 (kinks of ReLU/ELU) and graded outwards; weights include the Gaussian
    density.  Used for Hermite coefficients up to degree 60 and ``nu`` (``He_60 phi`` is
    negligible beyond ``|z| = 20``).
    """
    t, w = np.polynomial.legendre.leggauss(n_per_panel)
    edges = _HERMITE_RULE_EDGES
    x = np.concatenate([0.5 * (b - a) * (t + 1.0) + a for a, b in zip(edges[:-1], edges[1:])])
    wx = np.concatenate([0.5 * (b - a) * w for a, b in zip(edges[:-1], edges[1:])])
    nodes = np.concatenate([-x[::-1], x])
    weights = np.concatenate([wx[::-1], wx]) * np.exp(-0.5 * nodes ** 2) / _SQRT_2PI
    return nodes, weights


def _normalized_hermite(x, degree):
    """``He_l(x)/sqrt(l!)`` for ``l = 0..degree``, shape ``(degree+1, len(x))``."""
    h = np.empty((degree + 1, x.size))
    h[0] = 1.0
    if degree >= 1:
        h[1] = x
    for ell in range(2, degree + 1):
        h[ell] = (x * h[ell - 1] - math.sqrt(ell - 1) * h[ell - 2]) / math.sqrt(ell)
    return h


# ---------------------------------------------------------------------------------------------
# piecewise Chebyshev interpolation in theta = arccos(q)
# ---------------------------------------------------------------------------------------------
class _ThetaInterpolant:
    """Piecewise Chebyshev interpolant of ``f(q)`` in ``theta = arccos q`` on ``[0, pi]``."""

    def __init__(self, func, n_panels=_N_PANELS, degree=_PANEL_DEGREE, *, cache_name=None):
        self.n_panels = n_panels
        self.width = math.pi / n_panels
        self._func, self._degree = func, degree
        self._cache_name = cache_name

    @functools.cached_property
    def coef(self) -> np.ndarray:
        """Chebyshev coefficients per panel, shape (n_panels, degree + 1), computed at the first use (the
        kernels of a built-in activation take 0.3–0.6 s of quadrature, which the commands that only check
        an activation's name and Hermite content never need) and, for an interpolant with a ``cache_name``
        (the built-in activations' dual kernels), kept in the table cache of :mod:`hciz.cache` under that
        name, its size and a digest of this module's source (read back in about a millisecond)."""
        key = None
        if self._cache_name is not None:
            import hashlib
            from pathlib import Path

            from hciz.cache import load_table

            source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:20]
            key = (f"activation-theta-interpolant-v1;{self._cache_name};panels={self.n_panels};"
                   f"degree={self._degree};source={source}")
            stored = load_table(key, ("coef",))
            if stored is not None and stored["coef"].shape == (self.n_panels, self._degree + 1):
                return stored["coef"]
        coef = self._build()
        if key is not None:
            from hciz.cache import save_table

            save_table(key, {"coef": coef})
        return coef

    def _build(self) -> np.ndarray:
        func, degree, n_panels = self._func, self._degree, self.n_panels
        k = np.arange(degree + 1)
        t = np.cos(np.pi * (k + 0.5) / (degree + 1))          # Chebyshev points of 1st kind
        lo = self.width * np.arange(n_panels)[:, None]
        theta = lo + 0.5 * self.width * (t[None, :] + 1.0)
        values = func(np.cos(theta.ravel())).reshape(theta.shape)
        # Chebyshev coefficients by the discrete cosine transform
        T = np.cos(np.outer(np.arange(degree + 1), np.pi * (k + 0.5) / (degree + 1)))
        coef = (2.0 / (degree + 1)) * values @ T.T
        coef[:, 0] *= 0.5
        return np.ascontiguousarray(coef)                      # (n_panels, degree+1)

    def __call__(self, q):
        """Evaluate at ``q`` (array, already inside ``[-1, 1]``)."""
        q = np.asarray(q, dtype=np.float64)
        return _theta_clenshaw(q.ravel(), self.coef).reshape(q.shape)


@kernel(cache=True)
def _theta_clenshaw(q, coef):  # pragma: no cover - compiled
    """Evaluate the piecewise Chebyshev series in ``theta = arccos q`` (equal panels)."""
    n_panels = coef.shape[0]
    out = np.empty(q.size)
    for i in range(q.size):
        x = math.acos(min(1.0, max(-1.0, q[i]))) * (n_panels / math.pi)
        p = min(int(x), n_panels - 1)
        t2 = 4.0 * (x - p) - 2.0
        b1 = 0.0
        b2 = 0.0
        for j in range(coef.shape[1] - 1, 0, -1):
            b1, b2 = t2 * b1 - b2 + coef[p, j], b1
        out[i] = 0.5 * t2 * b1 - b2 + coef[p, 0]
    return out


# ---------------------------------------------------------------------------------------------
# base functions: sigma, sigma', and (optionally) closed-form kernels
# ---------------------------------------------------------------------------------------------
def _relu(x):
    return np.maximum(x, 0.0)


def _relu_d(x):
    return (x > 0).astype(np.float64)


def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


def _elu_d(x):
    return np.where(x > 0, 1.0, np.exp(np.minimum(x, 0.0)))


def _tanh2(x):
    return np.tanh(2.0 * x)


def _tanh_d(x):
    return 1.0 - np.tanh(x) ** 2


def _tanh2_d(x):
    return 2.0 * (1.0 - np.tanh(2.0 * x) ** 2)


def _sigmoid(x):
    return special.expit(x)


def _sigmoid_d(x):
    s = special.expit(x)
    return s * (1.0 - s)


def _softplus(x):
    return np.logaddexp(0.0, x)


def _erf_d(x):
    return 2.0 / math.sqrt(math.pi) * np.exp(-x * x)


def _elu_inner(m, s):
    """``E_xi elu(m + s xi)`` in closed form (``s >= 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = m / s
        pos = m * special.ndtr(a) + s * np.exp(-0.5 * a * a) / _SQRT_2PI
        neg = np.exp(m + 0.5 * s * s + special.log_ndtr(-a - s)) - special.ndtr(-a)
        val = pos + neg
    return np.where(s > 0, val, _elu(m))


def _elu_d_inner(m, s):
    """``E_xi elu'(m + s xi)`` in closed form (``s >= 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = m / s
        val = special.ndtr(a) + np.exp(m + 0.5 * s * s + special.log_ndtr(-a - s))
    return np.where(s > 0, val, _elu_d(m))


def _relu_kernel(q):
    q = np.clip(q, -1.0, 1.0)
    return q / 4.0 + (np.sqrt(1.0 - q * q) + q * np.arcsin(q)) / (2.0 * math.pi)


def _relu_d_kernel(q):
    return 0.25 + np.arcsin(np.clip(q, -1.0, 1.0)) / (2.0 * math.pi)


def _erf_kernel(q):
    return 2.0 / math.pi * np.arcsin(2.0 * np.clip(q, -1.0, 1.0) / 3.0)


def _erf_d_kernel(q):
    return 4.0 / math.pi / np.sqrt(9.0 - 4.0 * np.clip(q, -1.0, 1.0) ** 2)


def _erf(x):
    return special.erf(x)


def _factorial(n):
    """``n!`` as float64 (exact integers correctly rounded), elementwise; no scipy import."""
    n = np.asarray(n)
    out = np.array([float(math.factorial(int(k))) for k in n.ravel()], dtype=float).reshape(n.shape)
    return out if out.ndim else float(out)


# name: (sigma, sigma', kernel or None, kernel of sigma' or None, inner or None, inner')
_BUILTINS = {
    "relu": (_relu, _relu_d, _relu_kernel, _relu_d_kernel, None, None),
    "elu": (_elu, _elu_d, None, None, _elu_inner, _elu_d_inner),
    "tanh": (np.tanh, _tanh_d, None, None, None, None),
    "tanh2": (_tanh2, _tanh2_d, None, None, None, None),
    "erf": (_erf, _erf_d, _erf_kernel, _erf_d_kernel, None, None),
    "sigmoid": (_sigmoid, _sigmoid_d, None, None, None, None),
    "softplus": (_softplus, _sigmoid, None, None, None, None),
}

#: the one list of activation names (plus the ``hermite:L=C,...`` syntax): the table above and the
#: polynomial ``quadratic``. The solver, the simulations (JAX and numba forms in
#: :mod:`replica.simulations`) and every command's help read it; a new activation is one entry of
#: ``_BUILTINS`` (σ, σ', and optionally closed-form kernels)
ACTIVATIONS = (*_BUILTINS, "quadratic")


def _direct_kernel(func, inner, q):
    """``E[f(u) f(w)]`` with ``corr(u, w) = q`` by direct quadrature (loop over q).

    Outer integral over ``u``: Gauss–Legendre on ``[-U, -b], [-b, 0], [0, b], [b, U]`` with
    ``b = min(max(8 s, 1e-3), 4)``, ``s = sqrt(1 - q^2)``, so that the boundary layer of width
    ``s`` of a smoothed kink at ``u = 0`` is resolved.  Inner expectation over ``xi``: closed
    form ``inner(m, s)`` if given, otherwise Gauss–Legendre on ``[-U, xi0]`` and ``[xi0, U]``
    with ``xi0 = -q u / s`` the point where the argument crosses 0 (next to the complex poles
    of tanh-like activations).
    """
    q = np.atleast_1d(np.asarray(q, dtype=np.float64))
    t, wt = special.roots_legendre(_N_HALF // 2)
    ti, wti = special.roots_legendre(_N_INNER // 2)
    out = np.empty(q.shape)
    for i, qi in enumerate(q.ravel()):
        s = math.sqrt(max(0.0, 1.0 - qi * qi))
        b = min(max(8.0 * s, 1e-3), 4.0)
        edges = [(-_U_MAX, -b), (-b, 0.0), (0.0, b), (b, _U_MAX)]
        u = np.concatenate([0.5 * (hi - lo) * t + 0.5 * (hi + lo) for lo, hi in edges])
        wu = np.concatenate([0.5 * (hi - lo) * wt for lo, hi in edges])
        wu = wu * np.exp(-0.5 * u * u) / _SQRT_2PI
        m = qi * u
        if s == 0.0:
            h = func(m)
        elif inner is not None:
            h = inner(m, s)
        else:
            xi0 = np.clip(-m / s, -_U_MAX, _U_MAX)[:, None]
            left = 0.5 * (xi0 + _U_MAX) * ti[None, :] + 0.5 * (xi0 - _U_MAX)
            right = 0.5 * (_U_MAX - xi0) * ti[None, :] + 0.5 * (_U_MAX + xi0)
            xi = np.concatenate([left, right], axis=1)
            wxi = np.concatenate([0.5 * (xi0 + _U_MAX) * wti[None, :] + 0.0 * left,
                                  0.5 * (_U_MAX - xi0) * wti[None, :] + 0.0 * right], axis=1)
            wxi = wxi * np.exp(-0.5 * xi * xi) / _SQRT_2PI
            h = np.sum(func(m[:, None] + s * xi) * wxi, axis=1)
        out.ravel()[i] = (func(u) * wu) @ h
    return out


# ---------------------------------------------------------------------------------------------
class Activation:
    """An activation with its Hermite coefficients, dual kernel and ``g``.

    Instances come from :func:`get_activation`; the constructor is internal.

    Attributes
    ----------
    name : str
        Specification, including modifiers (e.g. ``"tanh2[drop=0,1,2,unit]"``).
    drop_hermite : tuple of int
        Hermite degrees removed from the base activation.
    scale : float
        Multiplicative factor applied after dropping (``1/sqrt(nu)`` if unit variance).

    Notes
    -----
    With base activation ``s``, dropped set ``D`` and scale ``c``:
    ``sigma = c (s - sum_{l in D} mu_l He_l / l!)``, so ``mu_l -> c mu_l`` (0 on ``D``) and
    ``kappa = c^2 (kappa_s - sum_{l in D} mu_l^2 q^l / l!)`` exactly.
    """

    def __init__(self, name, func, derivative, *, kernel, derivative_kernel,
                 hermite_coefficients=None, drop_hermite=(), scale=1.0):
        self.name = name
        self._func = func
        self._derivative = derivative
        self._kernel = kernel
        self._derivative_kernel = derivative_kernel
        self._base_mu = hermite_coefficients
        self.drop_hermite = tuple(sorted(set(int(d) for d in drop_hermite)))
        self.scale = float(scale)

    # -- Hermite coefficients ----------------------------------------------------------------
    @functools.cached_property
    def _base_hermite(self):
        """``mu_l`` of the base activation, ``l = 0.._HERMITE_MAX_DEGREE``."""
        if self._base_mu is not None:
            mu = np.zeros(_HERMITE_MAX_DEGREE + 1)
            mu[: len(self._base_mu)] = self._base_mu
            return mu
        u, wu = _hermite_rule()
        h = _normalized_hermite(u, _HERMITE_MAX_DEGREE)
        sqrt_fact = np.sqrt(_factorial(np.arange(_HERMITE_MAX_DEGREE + 1)))
        return (h @ (wu * self._func(u))) * sqrt_fact

    @functools.cached_property
    def _base_nu(self):
        if self._base_mu is not None:
            ell = np.arange(len(self._base_mu))
            return float(np.sum(np.asarray(self._base_mu) ** 2 / _factorial(ell)))
        u, wu = _hermite_rule()
        return float(wu @ self._func(u) ** 2)

    def hermite(self, ell):
        """Hermite coefficient ``mu_l = E[sigma(z) He_l(z)]``.

        Parameters
        ----------
        ell : int
            Degree, ``0 <= ell <= 60``.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            If ``ell`` is negative or above 60.
        """
        ell = int(ell)
        if not 0 <= ell <= _HERMITE_MAX_DEGREE:
            raise ValueError(f"Hermite degree must be in 0..{_HERMITE_MAX_DEGREE}, got {ell}")
        if ell in self.drop_hermite:
            return 0.0
        return self.scale * float(self._base_hermite[ell])

    @property
    def mu0(self):
        """``mu_0 = E sigma(z)``."""
        return self.hermite(0)

    @property
    def mu1(self):
        """``mu_1 = E[z sigma(z)]``."""
        return self.hermite(1)

    @property
    def mu2(self):
        """``mu_2 = E[(z^2 - 1) sigma(z)]``."""
        return self.hermite(2)

    @property
    def nu(self):
        """``nu = E sigma(z)^2 = sum_l mu_l^2 / l!``."""
        mu = self._base_hermite
        removed = sum(mu[d] ** 2 / math.factorial(d) for d in self.drop_hermite)
        return self.scale ** 2 * (self._base_nu - removed)

    @property
    def g1(self):
        """``g(1) = nu - mu_0^2 - mu_1^2 - mu_2^2/2 = sum_{l>=3} mu_l^2/l! >= 0``.

        Exactly 0 when the difference is at the rounding level of ``nu`` (polynomials of degree
        <= 2, e.g. ``quadratic``, whose ``g`` vanishes identically): the subtraction would
        otherwise leave ``±2e-16`` and a negative mmse past perfect recovery.
        """
        g1 = self.nu - self.mu0 ** 2 - self.mu1 ** 2 - self.mu2 ** 2 / 2.0
        return 0.0 if g1 <= _G_ROUNDING * max(self.nu, 0.0) else float(g1)

    # -- evaluation ---------------------------------------------------------------------------
    def __call__(self, x):
        """Evaluate ``sigma(x)`` elementwise (float64 array of the shape of ``x``)."""
        x = np.asarray(x, dtype=np.float64)
        y = self._func(x)
        if self.drop_hermite:
            flat = x.ravel()
            h = _normalized_hermite(flat, max(self.drop_hermite))
            for d in self.drop_hermite:
                y = y - (self._base_hermite[d] / math.sqrt(math.factorial(d))
                         * h[d].reshape(x.shape))
        return self.scale * y

    def derivative(self, x):
        """Evaluate ``sigma'(x)`` elementwise (float64 array of the shape of ``x``).

        With base ``s``, dropped set ``D`` and scale ``c``:
        ``sigma' = c (s' - sum_{l in D, l >= 1} mu_l He_{l-1} / (l-1)!)`` (``He_l' = l He_{l-1}``).
        """
        x = np.asarray(x, dtype=np.float64)
        y = self._derivative(x)
        degrees = [d for d in self.drop_hermite if d >= 1]
        if degrees:
            h = _normalized_hermite(x.ravel(), max(degrees) - 1)
            for d in degrees:
                y = y - (self._base_hermite[d] / math.sqrt(math.factorial(d - 1))
                         * h[d - 1].reshape(x.shape))
        return self.scale * y

    def _polynomial(self, q, degrees, shift=0):
        """``sum_{l in degrees} mu_l^2 q^(l-shift) / (l-shift)!`` for the base activation."""
        key = (tuple(sorted(degrees)), shift)
        cache = self.__dict__.setdefault("_poly_cache", {})
        if key not in cache:
            a = np.zeros(max(max(key[0], default=0) - shift, 0) + 1)
            for d in key[0]:
                if d - shift >= 0:
                    a[d - shift] += self._base_hermite[d] ** 2 / math.factorial(d - shift)
            cache[key] = a
        a = cache[key]
        out = np.full_like(q, a[-1])
        for c in a[-2::-1]:                                    # Horner
            out = out * q + c
        return out

    @staticmethod
    def _check_q(q):
        q = np.asarray(q, dtype=np.float64)
        if not np.all(np.abs(q) <= 1.0 + 1e-12):
            raise ValueError("correlation q must lie in [-1, 1] (and not be NaN)")
        return np.minimum(np.maximum(q, -1.0), 1.0)

    def dual_kernel(self, q):
        """Dual kernel ``kappa(q) = E[sigma(u) sigma(w)]``, ``corr(u, w) = q``.

        Parameters
        ----------
        q : float or ndarray
            Correlation(s) in ``[-1, 1]``.

        Returns
        -------
        ndarray
            Same shape as ``q``.

        Raises
        ------
        ValueError
            If ``|q| > 1``.
        """
        q = self._check_q(q)
        return self.scale ** 2 * (self._kernel(q) - self._polynomial(q, self.drop_hermite))

    def g(self, q):
        """Part of the dual kernel above degree two, ``g(q) = sum_{l>=3} mu_l^2 q^l / l!``.

        Parameters
        ----------
        q : float or ndarray
            Correlation(s) in ``[-1, 1]``.

        Returns
        -------
        ndarray
            Same shape as ``q``.

        Raises
        ------
        ValueError
            If ``|q| > 1``.

        Notes
        -----
        ``g(q) = kappa(q) - mu_0^2 - mu_1^2 q - mu_2^2 q^2/2`` with the exact dual kernel
        (docs/theory.md §2).
        """
        return self.g_inside(self._check_q(q))

    def g_inside(self, q):
        """:meth:`g` for ``q`` already inside ``[-1, 1]`` (float64 array; no check: the hot loops of the deep
        solvers, which clip their correlations first)."""
        if self._g_vanishes():  # no Hermite component above degree two: g ≡ 0 exactly
            return np.zeros_like(q)
        return self.scale ** 2 * (self._kernel(q) - self._polynomial(q, self._g_degrees))

    def _g_vanishes(self) -> bool:
        """``g1 == 0``, remembered for the current ``(scale, drop_hermite)`` (``g1`` sums the Hermite series: ~10 µs,
        and :meth:`g_inside` is called ~10⁴ times per sweep)."""
        key = (self.scale, self.drop_hermite)
        got = self.__dict__.get("_g_vanishes_at")
        if got is None or got[0] != key:
            got = self.__dict__["_g_vanishes_at"] = (key, self.g1 == 0.0)
        return got[1]

    @functools.cached_property
    def _g_degrees(self):
        return set(self.drop_hermite) | {0, 1, 2}

    @functools.cached_property
    def _g_prime_degrees(self):
        return set(self.drop_hermite) | {1, 2}

    def g_prime(self, q):
        """Derivative ``g'(q) = E[sigma'(u) sigma'(w)] - mu_1^2 - mu_2^2 q``.

        Parameters
        ----------
        q : float or ndarray
            Correlation(s) in ``[-1, 1]``.

        Returns
        -------
        ndarray
            Same shape as ``q``.

        Raises
        ------
        ValueError
            If ``|q| > 1``.

        Notes
        -----
        Price's theorem: ``kappa'(q) = E[sigma'(u) sigma'(w)]``, the dual kernel of
        ``sigma'`` whose Hermite coefficients are ``mu_{l+1}``.
        """
        return self.g_prime_inside(self._check_q(q))

    def g_prime_inside(self, q):
        """:meth:`g_prime` for ``q`` already inside ``[-1, 1]`` (float64 array; no check)."""
        return self.scale ** 2 * (self._derivative_kernel(q) - self._polynomial(q, self._g_prime_degrees, shift=1))

    def __repr__(self):
        return f"Activation({self.name!r})"


# ---------------------------------------------------------------------------------------------
def _hermite_kernels(mu):
    mu = np.asarray(mu, dtype=np.float64)
    ell = np.arange(len(mu))
    a = mu ** 2 / _factorial(ell)

    def kernel(q):
        return np.polynomial.polynomial.polyval(q, a)

    def derivative_kernel(q):
        return np.polynomial.polynomial.polyval(q, a[1:] * ell[1:]) if len(a) > 1 else 0.0 * q

    def func(x):
        x = np.asarray(x, dtype=np.float64)
        h = _normalized_hermite(x.ravel(), len(mu) - 1)
        c = mu / np.sqrt(_factorial(ell))
        return (c @ h).reshape(x.shape)

    def derivative(x):
        x = np.asarray(x, dtype=np.float64)
        if len(mu) < 2:
            return np.zeros_like(x)
        h = _normalized_hermite(x.ravel(), len(mu) - 2)
        c = mu[1:] / np.sqrt(_factorial(ell[:-1]))
        return (c @ h).reshape(x.shape)

    return func, derivative, kernel, derivative_kernel


def _parse_hermite(spec, body):
    coeffs = {}
    if not body.strip():
        raise ValueError(f"activation {spec!r}: no terms after 'hermite:'")
    for item in body.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*=\s*(\S+)\s*", item)
        if m is None:
            raise ValueError(f"activation {spec!r}: term {item.strip()!r} is not DEGREE=COEFF")
        ell = int(m.group(1))
        try:
            c = float(m.group(2))
        except ValueError:
            raise ValueError(f"activation {spec!r}: malformed coefficient "
                             f"{m.group(2)!r}") from None
        if not math.isfinite(c):
            raise ValueError(f"activation {spec!r}: coefficient of degree {ell} is not finite")
        if ell > _HERMITE_MAX_DEGREE:
            raise ValueError(f"activation {spec!r}: degree {ell} above {_HERMITE_MAX_DEGREE}")
        if ell in coeffs:
            raise ValueError(f"activation {spec!r}: degree {ell} given twice")
        coeffs[ell] = c
    mu = np.zeros(max(coeffs) + 1)
    for ell, c in coeffs.items():
        mu[ell] = c
    with np.errstate(over="ignore"):
        nu = float(np.sum(mu ** 2 / _factorial(np.arange(mu.size))))
    if not math.isfinite(nu):
        raise ValueError(f"activation {spec!r}: infinite variance E sigma^2")
    return mu


@functools.lru_cache(maxsize=None)
def _base_activation(key):
    if key == "quadratic":
        mu = np.array([1.0 / math.sqrt(2.0), 0.0, math.sqrt(2.0)])
        func, der, ker, dker = _hermite_kernels(mu)
        return Activation("quadratic", lambda x: np.asarray(x, float) ** 2 / math.sqrt(2.0),
                          lambda x: math.sqrt(2.0) * np.asarray(x, float),
                          kernel=ker, derivative_kernel=dker, hermite_coefficients=mu)
    if key.startswith("hermite:"):
        mu = _parse_hermite(key, key[len("hermite:"):])
        func, der, ker, dker = _hermite_kernels(mu)
        return Activation(key, func, der, kernel=ker, derivative_kernel=dker,
                          hermite_coefficients=mu)
    func, der, ker, dker, inner, dinner = _BUILTINS[key]
    if ker is None:
        ker = _ThetaInterpolant(lambda q: _direct_kernel(func, inner, q), cache_name=f"{key};kernel")
        dker = _ThetaInterpolant(lambda q: _direct_kernel(der, dinner, q), cache_name=f"{key};derivative-kernel")
    return Activation(key, func, der, kernel=ker, derivative_kernel=dker)


def get_activation(spec, *, drop_hermite=(), unit_variance=False):
    """Return the activation described by ``spec``, optionally modified.

    Parameters
    ----------
    spec : str
        One of ``ACTIVATIONS`` (``relu``, ``elu`` (alpha = 1), ``tanh``, ``tanh2`` =
        ``tanh(2x)``, ``erf``, ``sigmoid``, ``softplus``, ``quadratic`` = ``x^2/sqrt(2)``) or
        ``"hermite:L=C,L=C,..."`` meaning ``sigma = sum_L C He_L / L!`` (so ``mu_L = C``).
    drop_hermite : iterable of int, optional
        Hermite degrees removed: ``sigma - sum_{l in drop} mu_l He_l / l!``.
    unit_variance : bool, optional
        Rescale (after dropping) so that ``E sigma^2 = 1``.

    Returns
    -------
    Activation

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones), malformed ``hermite:`` terms,
        non-finite coefficients, bad ``drop_hermite`` degrees, ``unit_variance`` with zero
        or infinite variance, or a constant activation (every Hermite component of degree
        ``>= 1`` zero, e.g. ``quadratic`` without degree 2, or ``hermite:0=1``): the labels
        would not depend on the weights, so there is nothing to learn.

    Examples
    --------
    docs/theory.md §6.1: ``get_activation("tanh2", drop_hermite=(0, 1, 2), unit_variance=True)``
    has ``mu0 = mu1 = mu2 = 0`` and ``g(1) = 1``.
    """
    if not isinstance(spec, str):
        raise ValueError(f"activation specification must be a string, got {spec!r}")
    key = spec.strip().lower().replace(" ", "")
    if key not in ACTIVATIONS and not key.startswith("hermite:"):
        raise ValueError(f"unknown activation {spec!r}; valid: " + ", ".join(ACTIVATIONS)
                         + ", or hermite:L=C,...")
    base = _base_activation(key)
    try:
        drop = tuple(sorted(set(int(d) for d in drop_hermite)))
    except (TypeError, ValueError):
        raise ValueError(f"drop_hermite must be integers, got {drop_hermite!r}") from None
    if any(not 0 <= d <= _HERMITE_MAX_DEGREE for d in drop):
        raise ValueError(f"drop_hermite degrees must be in 0..{_HERMITE_MAX_DEGREE}")
    if not drop and not unit_variance:
        _refuse_constant(base, spec, drop)
        return base
    act = Activation(base.name, base._func, base._derivative, kernel=base._kernel,
                     derivative_kernel=base._derivative_kernel,
                     hermite_coefficients=base._base_mu, drop_hermite=drop)
    act.__dict__["_base_hermite"] = base._base_hermite
    act.__dict__["_base_nu"] = base._base_nu
    mods = []
    if drop:
        mods.append("drop=" + ",".join(map(str, drop)))
    if unit_variance:
        nu = act.nu
        if not math.isfinite(nu) or nu <= 1e-300:
            raise ValueError(f"activation {spec!r}: variance {nu!r} after dropping degrees "
                             f"{drop} cannot be normalised to 1")
        act.scale = 1.0 / math.sqrt(nu)
        mods.append("unit")
    _refuse_constant(act, spec, drop)
    act.name = f"{base.name}[{';'.join(mods)}]"
    return act


def _refuse_constant(act, spec, drop):
    """ValueError if ``σ`` is constant: its variance about its mean, ``ν − μ₀² = Σ_{ℓ≥1} μ_ℓ²/ℓ!``, vanishes
    (to rounding of the variance before dropping)."""
    scale = float(getattr(act, "scale", 1.0))
    spread = act.nu - act.mu0 ** 2
    if spread <= _G_ROUNDING * scale ** 2 * abs(float(act._base_nu)):
        removed = f" after dropping Hermite degrees {', '.join(map(str, drop))}" if drop else ""
        raise ValueError(f"activation {spec!r} is constant{removed} (every Hermite component of degree >= 1 is "
                         "zero): the output does not depend on the weights, there is nothing to learn")


# ---------------------------------------------------------------------------------------------
# compiled form of g and g' (for numba kernels)
# ---------------------------------------------------------------------------------------------
#: |q| below which the compiled form sums the Hermite series of g (terms above degree 60 are
#: below ν·0.3^61 ≈ 1e-32), so that g(q) = O(q³) and g'(q) = O(q²) keep their relative accuracy
SERIES_SWITCH = 0.3


def compiled_activation(act) -> tuple:
    """The numba-typed form of ``g`` and ``g'`` of an activation, built once per instance.

    ``|q| ≤`` :data:`SERIES_SWITCH`: the Hermite series ``g(q) = Σ_{ℓ=3}^{60} μ_ℓ² q^ℓ/ℓ!`` (Horner,
    cut where the terms fall below 1e-20 at ``|q|`` = :data:`SERIES_SWITCH`), exact in relative terms
    where ``g`` is small; elsewhere a piecewise Chebyshev interpolant in ``θ = arccos q`` (12 panels,
    degree 22, as the dual kernels of this module) of :meth:`Activation.g` and
    :meth:`Activation.g_prime`. Agreement with those methods: 1e-13 (``tests/test_activations.py``).

    Parameters
    ----------
    act : Activation

    Returns
    -------
    tuple
        ``(series_g, series_g_prime, switch, coef_g, coef_g_prime)`` for :func:`spec_g`,
        :func:`spec_g_prime` and :func:`spec_g_both`: ``series_g[ℓ]`` the coefficient of ``q^ℓ`` (0 below
        degree 3), ``series_g_prime[ℓ]`` that of ``q^ℓ`` in ``g'``, ``coef_*`` of shape (12, 23).
    """
    cached = act.__dict__.get("_compiled_spec")
    if cached is not None:
        return cached
    ell = np.arange(_HERMITE_MAX_DEGREE + 1)
    mu = np.array([act.hermite(k) for k in ell])
    series = np.where(ell >= 3, mu ** 2 / _factorial(ell), 0.0)
    if act.g1 == 0.0:
        series[:] = 0.0
    series_d = np.zeros_like(series)
    series_d[:-1] = series[1:] * ell[1:]

    def cut(c):
        big = np.flatnonzero(np.abs(c) * SERIES_SWITCH ** np.arange(c.size) > 1e-20)
        return np.ascontiguousarray(c[:big[-1] + 1] if big.size else c[:1])

    g_table = _ThetaInterpolant(lambda q: act.g(np.clip(q, -1.0, 1.0)))
    gp_table = _ThetaInterpolant(lambda q: act.g_prime(np.clip(q, -1.0, 1.0)))
    series, series_d = cut(series), cut(series_d)
    n = max(series.size, series_d.size)  # one length: spec_g_both runs both recurrences in one loop
    series, series_d = (np.ascontiguousarray(np.pad(c, (0, n - c.size))) for c in (series, series_d))
    spec = (series, series_d, float(SERIES_SWITCH), g_table.coef, gp_table.coef)
    act.__dict__["_compiled_spec"] = spec
    return spec


@kernel(cache=True, inline="always")
def _horner(series, q):  # pragma: no cover - compiled
    out = 0.0
    for j in range(series.size - 1, -1, -1):
        out = out * q + series[j]
    return out


@kernel(cache=True, inline="always")
def _theta_series(coef, p, t2):  # pragma: no cover - compiled
    b1 = 0.0
    b2 = 0.0
    for j in range(coef.shape[1] - 1, 0, -1):
        b1, b2 = t2 * b1 - b2 + coef[p, j], b1
    return 0.5 * t2 * b1 - b2 + coef[p, 0]


@kernel(cache=True, inline="always")
def spec_g_both(spec, q):  # pragma: no cover - compiled
    """``(g(q), g'(q))`` of a compiled activation (:func:`compiled_activation`) at one ``q`` (clipped to
    [−1, 1]): one ``arccos`` and the two recurrences interleaved."""
    if q > 1.0:
        q = 1.0
    elif q < -1.0:
        q = -1.0
    if abs(q) <= spec[2]:
        sg, sd = spec[0], spec[1]
        out_g = 0.0
        out_d = 0.0
        for j in range(sg.size - 1, -1, -1):
            out_g = out_g * q + sg[j]
            out_d = out_d * q + sd[j]
        return out_g, out_d
    cg, cd = spec[3], spec[4]
    n_panels = cg.shape[0]
    x = math.acos(q) * (n_panels / math.pi)
    p = min(int(x), n_panels - 1)
    t2 = 4.0 * (x - p) - 2.0
    b1 = 0.0
    b2 = 0.0
    d1 = 0.0
    d2 = 0.0
    for j in range(cg.shape[1] - 1, 0, -1):
        b1, b2 = t2 * b1 - b2 + cg[p, j], b1
        d1, d2 = t2 * d1 - d2 + cd[p, j], d1
    return 0.5 * t2 * b1 - b2 + cg[p, 0], 0.5 * t2 * d1 - d2 + cd[p, 0]


@kernel(cache=True, inline="always")
def _spec_one(series, coef, switch, q):  # pragma: no cover - compiled
    if q > 1.0:
        q = 1.0
    elif q < -1.0:
        q = -1.0
    if abs(q) <= switch:
        return _horner(series, q)
    n_panels = coef.shape[0]
    x = math.acos(q) * (n_panels / math.pi)
    p = min(int(x), n_panels - 1)
    return _theta_series(coef, p, 4.0 * (x - p) - 2.0)


@kernel(cache=True, inline="always")
def spec_g(spec, q):  # pragma: no cover - compiled
    """``g(q)`` of a compiled activation (:func:`compiled_activation`) at one ``q`` (clipped to [−1, 1])."""
    return _spec_one(spec[0], spec[3], spec[2], q)


@kernel(cache=True, inline="always")
def spec_g_prime(spec, q):  # pragma: no cover - compiled
    """``g'(q)`` of a compiled activation at one ``q`` (clipped to [−1, 1])."""
    return _spec_one(spec[1], spec[4], spec[2], q)
