r"""What the architecture modules share: one module, so that no architecture imports another.

The architectures of :mod:`replica.models` (``shallow``, ``deep``, ``two_layer``, ``deep_linear``
and its front-rule variant ``deep_fronts``) import from here and not from each other
(``deep_fronts`` subclasses :class:`~replica.models.deep_linear.DeepLinearModel`, the same
architecture family; tested by ``tests/test_architecture.py``). The code moved here verbatim from
``two_layer.py`` and ``deep.py``; those modules still offer the names they offered (``from
replica.models.two_layer import converge_s_grid`` works), but the architectures themselves import
them from this module.

* Constants of the architectures with linear parts (L ≥ 2): :data:`PHASE_THRESHOLD` (0.1: a part
  counts as learned above it; ``shallow`` and ``deep`` have their own 0.5), :data:`DEFAULT_S_GRID`,
  :data:`MAX_GAUSS_HERMITE_S_GRID`, and the defaults of :func:`converge_s_grid`
  (:data:`MAX_S_PANELS`, :data:`S_GRID_TARGET`).
* :func:`layer_priors_and_readout`: the weight prior of each layer and the readout law of a
  multi-layer model.
* :func:`effective_readout_grid`: the folded Gauss–Hermite rule in the effective readout ``s``
  (the composite panel rule of two hidden layers stays in :mod:`replica.models.two_layer`).
* :func:`refined_solve`: a model's equations solved on its refined grid, the change measured
  (``discretization_error`` of ``two_layer``, ``deep_linear`` and ``deep_fronts``).
* :func:`converge_s_grid`: the sweep-level refinement of the panel rule in s (``--s-grid auto``;
  the ``prepare`` hook of the ``two_layer`` architecture in :mod:`replica.models`).
"""

from __future__ import annotations

import logging
import math

import numpy as np

from priors import get_readout_law, get_weight_prior

from ..interface import hook

__all__ = ["PHASE_THRESHOLD", "DEFAULT_S_GRID", "MAX_GAUSS_HERMITE_S_GRID", "MAX_S_PANELS", "S_GRID_TARGET",
           "layer_priors_and_readout", "effective_readout_grid", "refined_solve", "converge_s_grid",
           "NEURON_QUANTILES", "neuron_quantiles"]

logger = logging.getLogger(__name__)

#: a part of a network with linear parts counts as learned when its largest overlap exceeds this
#: (branch names of ``two_layer``, ``deep_linear``, ``deep_fronts``)
PHASE_THRESHOLD = 0.1
#: default number of nodes of the folded Gauss–Hermite rule in s: the ``s_grid`` of ``deep_linear``,
#: the report grid of ``deep_fronts``, a two-layer model whose ``Q₁`` does not depend on s
DEFAULT_S_GRID = 12
#: most nodes of the folded Gauss–Hermite rule (its weights underflow beyond ~180)
MAX_GAUSS_HERMITE_S_GRID = 150
#: most panels :func:`converge_s_grid` refines to
MAX_S_PANELS = 64
#: relative accuracy of mmse and free entropy ``--s-grid auto`` refines the panel rule to
S_GRID_TARGET = 1e-3


def layer_priors_and_readout(weight_prior, n_layers, readout_law, readout_grid=None):
    """Weight prior of each layer and the readout law of a multi-layer model.

    Parameters
    ----------
    weight_prior : str, WeightPrior, or a sequence of them (one per layer)
    n_layers : int
    readout_law : str or ReadoutLaw
    readout_grid : int, optional
        Grid size of continuous readout laws.

    Returns
    -------
    (list of WeightPrior, ReadoutLaw)

    Raises
    ------
    ValueError
        A sequence of priors whose length is not ``n_layers``; unknown names.
    """
    priors = weight_prior if isinstance(weight_prior, (list, tuple)) else [weight_prior] * n_layers
    if len(priors) != n_layers:
        raise ValueError(f"prior: expected 1 or {n_layers} weight priors, got {len(priors)}")
    priors = [get_weight_prior(p) if isinstance(p, str) else p for p in priors]
    if isinstance(readout_law, str):
        readout_law = get_readout_law(readout_law, grid_size=readout_grid)
    return priors, readout_law


def effective_readout_grid(n_s: int):
    """Folded Gauss–Hermite rule for ``E_s f(s²)``, ``s ~ N(0, 1)``.

    Parameters
    ----------
    n_s : int
        Number of positive nodes (≥ 1); the rule is the ``2 n_s``-point probabilists'
        Gauss–Hermite rule folded onto ``s > 0`` (exact for ``E s^{2j}``, ``j < 2 n_s``).

    Returns
    -------
    s_values : ndarray, shape (n_s,)
        Increasing positive nodes.
    s_weights : ndarray, shape (n_s,)
        Positive weights summing to 1.

    Raises
    ------
    ValueError
        ``n_s`` not an integer in ``[1, MAX_GAUSS_HERMITE_S_GRID]`` (150).
    """
    if isinstance(n_s, bool) or not float(n_s).is_integer() or not 1 <= int(n_s) <= MAX_GAUSS_HERMITE_S_GRID:
        raise ValueError(f"s_grid must be an integer in [1, {MAX_GAUSS_HERMITE_S_GRID}] (Gauss–Hermite weights "
                         f"underflow beyond), got {n_s!r}")
    n_s = int(n_s)
    x, w = np.polynomial.hermite_e.hermegauss(2 * n_s)
    pos = x > 0
    s, p = x[pos], 2.0 * w[pos]
    p = p / p.sum()
    order = np.argsort(s)
    return s[order], p[order]


def refined_solve(model, alpha, x, *, corrector=None, **solver_options):
    """Solve ``model``'s equations on its refined grid from the point ``x`` and measure the change.

    Shared by the ``discretization_error`` of :class:`~replica.models.two_layer.TwoLayerModel` and
    :class:`replica.models.deep_linear.DeepLinearModel` (and by :func:`converge_s_grid`): ``x`` is
    carried onto ``model.refined()`` by ``model.interpolate_to`` and solved there.

    Parameters
    ----------
    model : TwoLayerModel or DeepLinearModel
        Any model with ``refined()``, ``interpolate_to(fine, x)``, ``solve_from``, ``state`` and
        ``phase``.
    alpha : float
        Sample ratio α = n/d² > 0 of the point.
    x : ndarray, shape (model.size,)
        A converged packed point of ``model``.
    corrector : callable or None, keyword-only
        ``corrector(fine, alpha, x0) -> FixedPointResult or None``: a Newton-type solve from the carried
        point ``x0`` tried before the damped iteration (which runs where it returns None or a point of
        another phase). Default None: the damped iteration only.
    **solver_options
        Passed to ``solve_from`` of the refined model.

    Returns
    -------
    error : float
        ``max(|Δ mmse|/mmse, |Δ f|/|f|)`` between the two grids; 0 at ``Q ≡ 0`` (exact on every
        rule); NaN when the refined solve fails or lands in another phase.
    x_fine : ndarray of shape (model.refined().size,) or None
        The converged packed point on the refined grid (None where ``error`` is 0 or NaN).

    Raises
    ------
    TypeError
        ``x`` is not zero and the model has no ``refined``/``interpolate_to`` (their defaults,
        :class:`replica.interface.ModelDefaults`, are None).
    """
    x = np.asarray(x, dtype=float)
    if not np.any(x):
        return 0.0, None
    refine, carry = hook(model, "refined"), hook(model, "interpolate_to")
    if refine is None or carry is None:
        raise TypeError(f"refined_solve: {type(model).__name__} has no refined rule (refined, interpolate_to)")
    fine = refine()
    x0 = carry(fine, x)
    a = model.state(alpha, x)
    r = None if corrector is None else corrector(fine, alpha, x0)
    if r is None or fine.phase(r.info["state"]) != model.phase(a):
        r = fine.solve_from(alpha, x0, **solver_options)
    if not r.converged or fine.phase(r.info["state"]) != model.phase(a):
        return math.nan, None
    b = r.info["state"]
    return max(abs(a.mmse - b.mmse) / max(abs(b.mmse), 1e-300),
               abs(a.free_entropy - b.free_entropy) / max(abs(b.free_entropy), 1e-300)), r.x


def converge_s_grid(model, alphas, *, target=S_GRID_TARGET, max_panels=MAX_S_PANELS, probes=3,
                    starts=("layer_1", "informed"), solve_kw=None):
    """The model on the coarsest panel rule in ``s`` that is converged at a sweep's α values.

    A sweep-level choice (the packed vector keeps one size along every branch, as the
    continuation of :func:`replica.continuation.sweep` needs): at ``probes`` α values of the sweep
    (evenly spaced in rank up to the largest, where the layer-1 front lies innermost and the
    error is largest), the stationary points reached from ``starts`` that are not universal are
    solved, and the panels are doubled (:meth:`~replica.models.two_layer.TwoLayerModel.refined`; each level starts from
    the previous solutions interpolated) until the change on the doubled grid is at most
    ``target`` at every probe, or ``max_panels`` is reached (logged).

    Parameters
    ----------
    model : TwoLayerModel
        Returned unchanged when it uses a fixed Gauss–Hermite grid (``s_grid`` set).
    alphas : array_like
        The sweep's α values (> 0).
    target : float, keyword-only
        Relative accuracy of mmse and free entropy (:data:`S_GRID_TARGET`).
    max_panels : int, keyword-only
        Most panels (:data:`MAX_S_PANELS`).
    probes : int, keyword-only
        Number of probe α values (≥ 1).
    starts : tuple of str, keyword-only
        Names of :meth:`~replica.models.two_layer.TwoLayerModel.starts` solved at every probe.
    solve_kw : dict, optional, keyword-only
        Options of the solver.

    Returns
    -------
    model : TwoLayerModel
        The chosen model (``model`` itself or a refinement).
    info : dict
        ``panels`` (chosen), ``error`` (largest change on its doubled grid over the probes; 0
        when no non-universal point was found; NaN, with ``panels`` None, for a Gauss–Hermite
        model, returned unchanged), ``probes`` (the α values), ``levels`` (list of
        ``(panels, error)`` tried).

    Raises
    ------
    ValueError
        ``alphas`` empty, not finite or not all > 0; ``probes`` < 1.
    """
    solve_kw = dict(solve_kw or {})
    a = np.unique(np.asarray(alphas, dtype=float).ravel())
    if a.size == 0 or not np.all(np.isfinite(a)) or a[0] <= 0:
        raise ValueError("alphas must be finite numbers > 0")
    if int(probes) < 1:
        raise ValueError(f"probes must be >= 1, got {probes!r}")
    if model.s_grid is not None or getattr(model, "profile_solver", None) is not None:
        return model, {"panels": None, "error": math.nan, "probes": [], "levels": []}
    idx = np.unique(np.round(np.linspace(0, a.size - 1, int(probes) + 1)[1:]).astype(int))
    probe_alphas = a[idx]
    points = []
    for al in probe_alphas:
        st = model.starts()
        for name in starts:
            r = model.solve_from(float(al), st[name][0], start=name, **solve_kw)
            if r.converged and model.phase(r.info["state"]) != "universal":
                points.append((float(al), r.x))
    levels = []
    cur = model
    while True:
        errors, refined = [], []
        for al, x in points:
            err, xf = refined_solve(cur, al, x, **solve_kw)
            errors.append(err)
            if xf is not None:
                refined.append((al, xf))
        worst = max(errors, default=0.0)
        worst = math.inf if not np.all(np.isfinite(errors)) else worst
        levels.append((cur.s_panels, worst))
        if worst <= target:
            break
        if 2 * cur.s_panels > max_panels:
            logger.warning("s grid: %d panels (the most --s-grid auto refines to; give --s-grid panels:P for more) "
                           "change mmse or free entropy by %.3g > %g on the doubled grid at alpha in %s",
                           cur.s_panels, worst, target, probe_alphas.tolist())
            break
        cur, points = cur.refined(), refined
    logger.info("s grid: %s, change on the doubled grid %.3g at alpha = %s (levels %s)", cur.s_grid_rule, worst,
                probe_alphas.tolist(), levels)
    return cur, {"panels": cur.s_panels, "error": worst, "probes": probe_alphas.tolist(), "levels": levels}


#: neuron quantiles of the per-neuron maps stored with a sweep (:func:`neuron_quantiles`)
NEURON_QUANTILES = 64


def neuron_quantiles(n: int = NEURON_QUANTILES):
    """Neuron quantiles of the per-neuron maps: neurons ordered by the strength of their effective
    readout, strongest first.

    Parameters
    ----------
    n : int
        Number of quantiles (≥ 1).

    Returns
    -------
    u : ndarray, shape (n,)
        ``(k + ½)/n``: the fraction of first-layer neurons whose effective readout is stronger.
    s : ndarray, shape (n,)
        ``|s|`` at those quantiles: ``P(|s'| > |s|) = u`` for ``s' ~ N(0, 1)``, i.e. ``s = √2 erfc⁻¹(u)``
        (decreasing).
    """
    from scipy import special  # lazy: start-up (docs/architecture.md)

    n = int(n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    u = (np.arange(n) + 0.5) / n
    return u, math.sqrt(2.0) * special.erfcinv(u)


#: below this, a Hermite coefficient of an activation counts as zero (:func:`front_rules_solve`)
ODD_TOLERANCE = 1e-10


def front_rules_solve(activations) -> bool:
    """Whether the front-aligned rules of :class:`~replica.models.deep_fronts.DeepFrontModel` solve these
    activations: odd (``μ₀ = μ₂ = 0``, the condition of :class:`~replica.models.deep_linear.DeepLinearModel`) with
    a linear part in the first layer."""
    acts = list(activations)
    return (all(max(abs(a.mu0), abs(a.mu2)) <= ODD_TOLERANCE for a in acts)
            and bool(acts) and abs(acts[0].mu1) > ODD_TOLERANCE)


def readout_front_law(law) -> bool:
    """Whether a readout law gets a front in ``|v|`` on the front-aligned rules
    (:attr:`~replica.models.deep_fronts.DeepFrontModel.readout_front`): the Gaussian, uniform and continuum
    power-law densities (``law.law``), without a fixed grid."""
    from priors.continuous_laws import GaussianLaw, PowerLawDensity, UniformLaw

    return isinstance(getattr(law, "law", None), (GaussianLaw, UniformLaw, PowerLawDensity)) and not law.fixed_grid
