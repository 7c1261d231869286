"""Continuous readout laws and their quadrature rules (docs/theory.md §1, §5.2).

A continuous readout law ``P_v`` enters the one-hidden-layer equations through integrals
``E_v[f(v)] = ∫ f(v) p(v) dv`` of functions that are smooth except at a few points (the
specialization front, where ``Q(v)`` jumps, and the onset of ``Q > 0``).  Two rules are
provided:

* :meth:`ContinuousLaw.quantile_rule` — ``n``-point Gauss–Legendre rule in the quantile
  ``u = F(v)``: every node carries probability (the smallest weight is ``O(1/n²)``, never an
  underflow), nodes are placed where the law has mass.  Used for fixed grids
  (``--readout-grid N``) and to report ``Q(v)``.
* :meth:`ContinuousLaw.panel_rule` — composite Gauss–Legendre rule on panels whose ends
  include given breakpoints, graded towards them (``v − a ∝ t²``): square-root singularities
  at a breakpoint (the shape of ``Q(v)`` next to a fold) become smooth, so the rule converges
  exponentially in the number of nodes per panel when the breakpoints are the non-smooth
  points of the integrand.

Laws: :class:`GaussianLaw` (``N(0, 1)``), :class:`UniformLaw` (uniform on ``[−√3, √3]``),
:class:`DensityLaw` (any density on a finite interval, rescaled to ``E v² = 1``).
"""

from __future__ import annotations

import abc
import functools
import math

import numpy as np

from ._lazy import lazy_import

special = lazy_import("scipy.special")  # ~0.1-0.3 s: loaded when first used

__all__ = ["ContinuousLaw", "GaussianLaw", "UniformLaw", "DensityLaw", "PowerLawDensity", "CONTINUOUS_LAWS",
           "composite_rule"]

#: Gaussian law integrated on [−GAUSSIAN_RANGE, GAUSSIAN_RANGE] (mass outside: 2Φ(−8.5) ≈ 2e-17)
GAUSSIAN_RANGE = 8.5


@functools.lru_cache(maxsize=32)
def _gauss_legendre(n):
    x, w = special.roots_legendre(int(n))
    x.setflags(write=False)
    w.setflags(write=False)
    return x, w


class ContinuousLaw(abc.ABC):
    """A readout law with a density, ``E v² = 1``.

    Attributes
    ----------
    name : str
        Name (``gaussian``, ``uniform``, or given to :class:`DensityLaw`).
    lower, upper : float
        Finite integration range (the support, truncated where the mass outside is below
        1e-16 for unbounded laws).
    panel_width : float
        Largest panel of :meth:`panel_rule` (the scale on which the density varies).
    """

    name: str
    lower: float
    upper: float
    panel_width: float

    @abc.abstractmethod
    def pdf(self, v):
        """Density ``p(v)`` (ndarray in, ndarray out; 0 outside the support)."""

    @abc.abstractmethod
    def cdf(self, v):
        """Distribution function ``F(v)``."""

    @abc.abstractmethod
    def ppf(self, u):
        """Quantile function ``F⁻¹(u)``, ``u ∈ (0, 1)``."""

    @property
    def symmetric(self) -> bool:
        """Whether ``p(−v) = p(v)`` (then ``E v = 0``)."""
        return False

    def sample(self, rng, shape):
        """Draw iid ``v ~ p`` (``E v² = 1``) by inversion, ``F⁻¹(U)`` with ``U`` uniform on (0, 1).

        Parameters
        ----------
        rng : numpy.random.Generator
            Source of randomness.
        shape : int or tuple of int
            Shape of the draw.

        Returns
        -------
        ndarray
            float64 array of ``shape`` with entries in the support.
        """
        return np.asarray(self.ppf(rng.random(shape)), dtype=float)

    def key(self) -> tuple:
        """Hashable identity of the law (for caches and equality)."""
        return (type(self).__name__, self.name)

    def quantile_rule(self, n):
        """``n``-point Gauss–Legendre rule in the quantile ``u = F(v)``.

        Parameters
        ----------
        n : int
            Number of nodes, ``n ≥ 1``.

        Returns
        -------
        values : ndarray, shape (n,)
            Increasing nodes ``F⁻¹(u_i)``.
        weights : ndarray, shape (n,)
            Positive weights summing to 1 (``w_i/2`` of the Gauss–Legendre rule on [−1, 1]),
            none below ``~1/n²``.

        Raises
        ------
        ValueError
            ``n < 1``.
        """
        n = int(n)
        if n < 1:
            raise ValueError(f"grid_size must be >= 1, got {n}")
        x, w = _gauss_legendre(n)
        u = 0.5 * (x + 1.0)
        return np.asarray(self.ppf(u), dtype=float), 0.5 * w

    def panel_rule(self, breakpoints=(), n=8):
        """Composite rule for ``∫ f(v) p(v) dv`` with panel ends at ``breakpoints``.

        Panels: the grid ``lower + k·panel_width`` refined by the breakpoints inside
        ``(lower, upper)``; on each panel ``[a, b]`` the ``n``-point Gauss–Legendre rule,
        in ``t ∈ [0, 1]`` with ``v = a + (b − a)t²`` (or ``b − (b − a)t²``) next to one
        breakpoint and in ``θ ∈ [0, π]``, ``v = a + (b − a)(1 − cos θ)/2``, between two: a
        square-root singularity at a breakpoint becomes smooth.

        Parameters
        ----------
        breakpoints : array_like
            Points where the integrand is not smooth (jumps, kinks, square-root
            singularities); those outside ``(lower, upper)`` are ignored.
        n : int
            Nodes per panel, ``n ≥ 1``.

        Returns
        -------
        nodes, weights : ndarray, shape (n_panels · n,)
            ``weights`` include the density; ``Σ weights f(nodes) ≈ E f(v)``.
        """
        nodes, jac = composite_rule(self.lower, self.upper, self.panel_width, breakpoints, n)
        return nodes, (jac * self.pdf(nodes))

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


def composite_rule(lower, upper, panel_width, breakpoints=(), n=8):
    """The panels and nodes of :meth:`ContinuousLaw.panel_rule` on ``[lower, upper]`` without the density:
    ``(nodes, jacobian weights)``, ``Σ w f(nodes) ≈ ∫ f`` (panels of at most ``panel_width``, ends at the
    ``breakpoints`` inside, graded towards them)."""
    lo, hi = float(lower), float(upper)
    m = max(1, int(math.ceil((hi - lo) / panel_width - 1e-9)))
    base = np.linspace(lo, hi, m + 1)
    b = np.asarray(breakpoints, dtype=float).ravel()
    b = np.unique(b[np.isfinite(b) & (b > lo) & (b < hi)])
    pts = np.concatenate([base, b])
    flag = np.concatenate([np.zeros(base.size, dtype=bool), np.ones(b.size, dtype=bool)])
    order = np.argsort(pts, kind="stable")
    pts, flag = pts[order], flag[order]
    keep = np.concatenate([[True], np.diff(pts) > 1e-13 * (1.0 + np.abs(pts[1:]))])
    # a breakpoint merged into a neighbouring grid point keeps the grading there
    special_end = np.logical_or.reduceat(flag, np.flatnonzero(keep))
    pts = pts[keep]
    pts[0], pts[-1] = lo, hi
    a, c = pts[:-1], pts[1:]
    left, right = special_end[:-1], special_end[1:]
    x, w = _gauss_legendre(n)
    t = 0.5 * (x + 1.0)  # GL on [0, 1]
    wt = 0.5 * w
    width = (c - a)[:, None]
    # plain Gauss–Legendre
    nodes = a[:, None] + width * t[None, :]
    jac = width * wt[None, :]
    # graded at the left end: v = a + (c − a) t²
    gl = left & ~right
    nodes[gl] = a[gl, None] + width[gl] * (t * t)[None, :]
    jac[gl] = width[gl] * (2.0 * t * wt)[None, :]
    # graded at the right end: v = c − (c − a) t²
    gr = right & ~left
    nodes[gr] = c[gr, None] - width[gr] * (t * t)[None, :]
    jac[gr] = width[gr] * (2.0 * t * wt)[None, :]
    # both ends: v = a + (c − a)(1 − cos πt)/2
    gb = left & right
    nodes[gb] = a[gb, None] + 0.5 * width[gb] * (1.0 - np.cos(np.pi * t))[None, :]
    jac[gb] = 0.5 * width[gb] * (np.pi * np.sin(np.pi * t) * wt)[None, :]
    return nodes.ravel(), jac.ravel()


class GaussianLaw(ContinuousLaw):
    """``v ~ N(0, 1)``, integrated on ``[−8.5, 8.5]``."""

    name = "gaussian"
    lower = -GAUSSIAN_RANGE
    upper = GAUSSIAN_RANGE
    panel_width = 1.0

    @property
    def symmetric(self):
        return True

    def pdf(self, v):
        v = np.asarray(v, dtype=float)
        return np.exp(-0.5 * v * v) / math.sqrt(2.0 * math.pi)

    def cdf(self, v):
        return special.ndtr(np.asarray(v, dtype=float))

    def ppf(self, u):
        return special.ndtri(np.asarray(u, dtype=float))

    def sample(self, rng, shape):
        """iid ``N(0, 1)`` draws, float64 array of ``shape`` (see :meth:`ContinuousLaw.sample`)."""
        return rng.standard_normal(shape)


class UniformLaw(ContinuousLaw):
    """``v`` uniform on ``[−√3, √3]``."""

    name = "uniform"
    lower = -math.sqrt(3.0)
    upper = math.sqrt(3.0)
    panel_width = 2.0 * math.sqrt(3.0)

    @property
    def symmetric(self):
        return True

    def pdf(self, v):
        v = np.asarray(v, dtype=float)
        return np.where(np.abs(v) <= self.upper, 1.0 / (2.0 * self.upper), 0.0)

    def cdf(self, v):
        return np.clip((np.asarray(v, dtype=float) + self.upper) / (2.0 * self.upper), 0.0, 1.0)

    def ppf(self, u):
        return self.upper * (2.0 * np.asarray(u, dtype=float) - 1.0)

    def sample(self, rng, shape):
        """iid draws uniform on ``[−√3, √3]``, float64 array of ``shape`` (see :meth:`ContinuousLaw.sample`)."""
        return rng.uniform(-self.upper, self.upper, size=shape)


class DensityLaw(ContinuousLaw):
    """Readout law given by an (unnormalised) density on a finite interval.

    Parameters
    ----------
    pdf : callable
        ``p(x) ≥ 0`` on ``[a, b]`` (vectorized: ndarray in, ndarray out); normalised here.
    support : (float, float)
        Finite interval ``a < b`` outside which ``p = 0``.
    name : str
        Name of the law (part of its identity: two laws with the same name and support
        compare equal).
    breakpoints : sequence of float, optional
        Points of ``[a, b]`` where ``p`` is not smooth (kept as panel ends).

    Notes
    -----
    The law of ``v = x/c``, ``c = √(E x²)``, so that ``E v² = 1``; moments and the
    distribution function are computed with a composite 32-point Gauss–Legendre rule on 256
    panels of ``[a, b]`` (plus ``breakpoints``), the quantile function by monotone
    interpolation of that table.

    Raises
    ------
    ValueError
        Non-finite or empty support, a negative or non-finite density, zero mass, or
        ``E x² = 0``.
    """

    def __init__(self, pdf, support, *, name="density", breakpoints=()):
        a, b = (float(s) for s in support)
        if not (math.isfinite(a) and math.isfinite(b) and a < b):
            raise ValueError(f"density law: support must be a finite interval a < b, got {support!r}")
        self._raw = pdf
        self.name = str(name)
        self._support = (a, b)
        edges = np.unique(np.concatenate([np.linspace(a, b, 257),
                                          [x for x in breakpoints if a < x < b]]))
        x, w = _gauss_legendre(32)
        half = 0.5 * np.diff(edges)
        nodes = (0.5 * (edges[:-1] + edges[1:]))[:, None] + half[:, None] * x[None, :]
        p = np.asarray(pdf(nodes.ravel()), dtype=float).reshape(nodes.shape)
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ValueError(f"density law {name!r}: the density must be finite and >= 0 on the support")
        mass = half[:, None] * w[None, :] * p
        z = float(mass.sum())
        if not z > 0:
            raise ValueError(f"density law {name!r}: the density has zero mass")
        m2 = float((mass * nodes**2).sum()) / z
        if not m2 > 0:
            raise ValueError(f"density law {name!r}: E v^2 = 0")
        self._scale = math.sqrt(m2)
        self._z = z
        self.lower, self.upper = a / self._scale, b / self._scale
        self.panel_width = (self.upper - self.lower) / 8.0
        self._breaks = np.array([x / self._scale for x in breakpoints if a < x < b])
        # distribution function at the panel edges (table for cdf/ppf)
        self._edges = edges / self._scale
        self._cum = np.concatenate([[0.0], np.cumsum(mass.sum(axis=1)) / z])
        self._cum[-1] = 1.0

    def key(self):
        return (type(self).__name__, self.name, self._support)

    def pdf(self, v):
        v = np.asarray(v, dtype=float)
        inside = (v >= self.lower) & (v <= self.upper)
        x = np.where(inside, v, self.lower) * self._scale
        return np.where(inside, np.asarray(self._raw(x), dtype=float) * self._scale / self._z, 0.0)

    def cdf(self, v):
        return np.interp(np.asarray(v, dtype=float), self._edges, self._cum)

    def ppf(self, u):
        return np.interp(np.asarray(u, dtype=float), self._cum, self._edges)

    def panel_rule(self, breakpoints=(), n=8):
        return super().panel_rule(np.concatenate([np.asarray(breakpoints, float).ravel(), self._breaks]), n)


class PowerLawDensity(ContinuousLaw):
    """The continuum limit ``K → ∞`` of the readout law ``powerlaw:beta=B,k=K`` (``v_p ∝ p^−β``, ``p = 1 … K``,
    weight ``1/K``, ``E v² = 1``): ``v = c u^−β`` with ``u`` uniform on (0, 1) (the rank ``p/K``) and
    ``c = √(1 − 2β)``, i.e. the density ``p(v) = (c^{1/β}/β) v^{−1−1/β}`` on ``[c, ∞)``, for ``0 < β < 1/2``
    (the second moment is infinite from ``β = 1/2`` on). Unbounded, and heavy tailed: most of ``E v²`` comes from
    large ``v`` as ``β → 1/2``.

    :meth:`panel_rule` integrates in ``t = u^{1−2β}`` ∈ (0, 1], where ``v² du = c² dt/(1 − 2β)``: the
    integrands of the profile solver (``v² Q²``, ``v² (g(1) − g(Q))``, the entropic term, all ``∝ v²`` for large
    ``v``) are bounded there, and ``t → 0`` is ``v → ∞``; panels of width 1/8 in ``t`` with ends at the breakpoints
    (graded towards them, :func:`composite_rule`).

    Parameters
    ----------
    beta : float
        ``0 < β < 1/2``.

    Raises
    ------
    ValueError
        ``β`` outside ``(0, 1/2)`` or not finite.
    """

    panel_width = 0.125

    def __init__(self, beta):
        beta = float(beta)
        if not (math.isfinite(beta) and 0.0 < beta < 0.5):
            raise ValueError(f"beta must be in (0, 1/2) for the continuum law (E v^2 is infinite from 1/2 on), "
                             f"got {beta!r}")
        self.beta = beta
        self.c = math.sqrt(1.0 - 2.0 * beta)
        self.name = f"powerlaw:beta={beta!r}"
        self.lower, self.upper = self.c, math.inf

    def key(self):
        return (type(self).__name__, self.beta)

    def pdf(self, v):
        v = np.asarray(v, dtype=float)
        b, c = self.beta, self.c
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = (1.0 / (b * c)) * np.power(np.where(v >= c, v, c) / c, -1.0 - 1.0 / b)
        return np.where(v >= c, out, 0.0)

    def cdf(self, v):
        v = np.asarray(v, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = 1.0 - np.power(np.where(v >= self.c, v, self.c) / self.c, -1.0 / self.beta)
        return np.where(v >= self.c, out, 0.0)

    def ppf(self, u):
        return self.c * np.power(1.0 - np.asarray(u, dtype=float), -self.beta)

    def t_of(self, v):
        """The integration variable ``t = u^{1−2β}`` at ``v ≥ c`` (``u = (v/c)^{−1/β}``, the mass above ``v``)."""
        return np.power(np.asarray(v, dtype=float) / self.c, -(1.0 - 2.0 * self.beta) / self.beta)

    def v_of(self, t):
        """``(v, du/dt)`` at ``t ∈ (0, 1]``: ``v = c t^{−β/(1−2β)}`` and ``du = t^{2β/(1−2β)} dt/(1 − 2β)``."""
        t = np.asarray(t, dtype=float)
        e = 1.0 - 2.0 * self.beta
        return self.c * np.power(t, -self.beta / e), np.power(t, 2.0 * self.beta / e) / e

    def panel_rule(self, breakpoints=(), n=8):
        v_b = np.asarray(breakpoints, dtype=float).ravel()
        v_b = v_b[np.isfinite(v_b) & (v_b > self.c)]
        t, jac = composite_rule(0.0, 1.0, self.panel_width, self.t_of(v_b), n)
        nodes, du = self.v_of(t)
        weights = jac * du
        order = np.argsort(nodes)
        return nodes[order], weights[order]


#: the built-in continuous laws by name
CONTINUOUS_LAWS = {"gaussian": GaussianLaw(), "uniform": UniformLaw()}
