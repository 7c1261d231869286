"""Weight priors inside numba kernels: a compact, numba-typed form of a prior's scalar channel.

The solvers that read every neuron's fixed point off an explicit curve
(:mod:`replica.models._two_layer_profile`) evaluate ``m_P(r)`` and ``ψ_P(r)`` millions of times
inside compiled loops. A :class:`~priors.weight_priors.WeightPrior` is a Python object; its
*compiled form* (:func:`compiled_prior`) is a tuple of numbers and arrays that the kernels
:func:`spec_overlap` and :func:`spec_free_entropy` evaluate:

* the Gaussian prior keeps its closed forms, ``m = r/(1 + r)``, ``ψ = r/2 − ½ ln(1 + r)``
  (kind :data:`KIND_GAUSSIAN`, exact);
* every other prior is tabulated once from its own methods (kind :data:`KIND_TABLE`): piecewise
  Chebyshev series of degree :data:`TABLE_DEGREE` on panels of width :data:`TABLE_WIDTH` in
  ``x = ln(1 + r)``, ``0 ≤ x ≤`` :data:`TABLE_X_MAX` (``r`` up to ``e^18 − 1 ≈ 6.6e7``), of
  ``m_P(r)`` and of ``ψ_P(r) − r/2``. ``x`` turns the algebraic (uniform prior: ``1 − m ≈ 1/r``)
  and exponential (Rademacher: ``1 − m ≈ e^{−r/2}``) tails into smooth, slowly varying functions.
  Beyond the table ``m`` keeps its last value (``1 − m < 1e-7`` there for a unit-variance prior
  with ``mmse ≤ 1/r``, which holds for every prior: the Gaussian one is the worst case) and
  ``ψ − r/2`` is continued linearly in ``x`` with its slope at the end. Accuracy against the
  prior's own methods: 1e-13 absolute on the table (``tests/test_priors.py``).

Spec layout: ``(kind, width, coef_m, coef_psi, end_psi, end_slope)`` with ``coef_*`` of shape
``(n_panels, degree + 1)`` (the constant coefficient halved, as in Clenshaw's recurrence).

References
----------
docs/theory.md §3 (scalar channels). Trefethen, *Approximation Theory and Approximation Practice*
(SIAM 2013), ch. 3 (Chebyshev interpolation at Chebyshev points of the first kind).
"""

from __future__ import annotations

import math

import numpy as np

from ._kernels import kernel

__all__ = ["compiled_prior", "spec_overlap", "spec_free_entropy", "chebyshev_panels", "panel_clenshaw",
           "KIND_GAUSSIAN", "KIND_TABLE", "TABLE_X_MAX", "TABLE_WIDTH", "TABLE_DEGREE"]

#: closed-form Gaussian prior
KIND_GAUSSIAN = 0
#: tabulated prior (piecewise Chebyshev in x = ln(1 + r))
KIND_TABLE = 1
#: end of the table in x = ln(1 + r)
TABLE_X_MAX = 18.0
#: panel width in x
TABLE_WIDTH = 0.25
#: Chebyshev degree per panel
TABLE_DEGREE = 20


def chebyshev_panels(func, edges, degree):
    """Chebyshev coefficients of ``func`` on consecutive panels (first-kind points, ``c₀`` halved).

    Parameters
    ----------
    func : callable
        Vectorized function of one variable.
    edges : array_like, shape (n_panels + 1,)
        Increasing panel ends.
    degree : int
        Degree per panel (≥ 1).

    Returns
    -------
    ndarray, shape (n_panels, degree + 1)
        Coefficients for :func:`panel_clenshaw` (``t ∈ [−1, 1]`` on each panel).
    """
    edges = np.asarray(edges, dtype=float)
    k = np.arange(degree + 1)
    t = np.cos(np.pi * (k + 0.5) / (degree + 1))
    lo, half = edges[:-1, None], 0.5 * np.diff(edges)[:, None]
    x = lo + half * (t[None, :] + 1.0)
    values = np.asarray(func(x.ravel()), dtype=float).reshape(x.shape)
    basis = np.cos(np.outer(k, np.pi * (k + 0.5) / (degree + 1)))
    coef = (2.0 / (degree + 1)) * values @ basis.T
    coef[:, 0] *= 0.5
    return np.ascontiguousarray(coef)


@kernel(cache=True, inline="always")
def panel_clenshaw(coef, p, t):  # pragma: no cover - compiled
    """Chebyshev series ``coef[p]`` at ``t ∈ [−1, 1]`` (constant coefficient halved)."""
    t2 = 2.0 * t
    b1 = 0.0
    b2 = 0.0
    for j in range(coef.shape[1] - 1, 0, -1):
        b1, b2 = t2 * b1 - b2 + coef[p, j], b1
    return 0.5 * t2 * b1 - b2 + coef[p, 0]


def compiled_prior(prior) -> tuple:
    """The numba-typed form of a weight prior (module docstring), built once per prior instance.

    Parameters
    ----------
    prior : WeightPrior
        Unit-variance prior with vectorized ``overlap`` and ``free_entropy``.

    Returns
    -------
    tuple
        ``(kind, width, coef_m, coef_psi, end_psi, end_slope)`` for :func:`spec_overlap` and
        :func:`spec_free_entropy`.
    """
    cached = prior.__dict__.get("_compiled_spec")
    if cached is not None:
        return cached
    from .weight_priors import GaussianPrior

    if type(prior) is GaussianPrior:
        dummy = np.zeros((1, 1))
        spec = (KIND_GAUSSIAN, 1.0, dummy, dummy, 0.0, 0.0)
    else:
        n = int(round(TABLE_X_MAX / TABLE_WIDTH))
        edges = TABLE_WIDTH * np.arange(n + 1)

        def overlap(x):
            return np.asarray(prior.overlap(np.expm1(x)), dtype=float)

        def psi_shift(x):
            r = np.expm1(x)
            return np.asarray(prior.free_entropy(r), dtype=float) - 0.5 * r

        coef_psi = chebyshev_panels(psi_shift, edges, TABLE_DEGREE)
        x_end = np.array([edges[-1] - 1e-6, edges[-1]])
        ends = psi_shift(x_end)
        spec = (KIND_TABLE, float(TABLE_WIDTH), chebyshev_panels(overlap, edges, TABLE_DEGREE), coef_psi,
                float(ends[1]), float((ends[1] - ends[0]) / 1e-6))
    prior.__dict__["_compiled_spec"] = spec
    return spec


@kernel(cache=True, inline="always")
def _table_value(coef, width, x):  # pragma: no cover - compiled
    """Piecewise series on panels ``[p w, (p + 1) w]`` at ``0 ≤ x ≤ n_panels · w``."""
    n = coef.shape[0]
    u = x / width
    p = int(u)
    if p > n - 1:
        p = n - 1
    return panel_clenshaw(coef, p, 2.0 * (u - p) - 1.0)


@kernel(cache=True, inline="always")
def spec_overlap(spec, r):  # pragma: no cover - compiled
    """``m_P(r)`` of a compiled prior at one ``r ≥ 0``."""
    if spec[0] == 0:
        return r / (1.0 + r)
    x = math.log1p(r)
    xmax = spec[2].shape[0] * spec[1]
    if x > xmax:
        x = xmax
    return _table_value(spec[2], spec[1], x)


@kernel(cache=True, inline="always")
def spec_free_entropy(spec, r):  # pragma: no cover - compiled
    """``ψ_P(r)`` of a compiled prior at one ``r ≥ 0``."""
    if spec[0] == 0:
        return 0.5 * r - 0.5 * math.log1p(r)
    x = math.log1p(r)
    xmax = spec[3].shape[0] * spec[1]
    if x > xmax:
        return 0.5 * r + spec[4] + spec[5] * (x - xmax)
    return 0.5 * r + _table_value(spec[3], spec[1], x)
