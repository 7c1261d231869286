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
* :func:`phase_transitions`: changes of the equilibrium phase along a sweep, for any model with
  ``phase``, ``state``, ``solve_universal`` and ``solve_from``.
* :func:`converge_s_grid`: the sweep-level refinement of the panel rule in s (``--s-grid auto``;
  the ``prepare`` hook of the ``two_layer`` architecture in :mod:`replica.models`).
"""

from __future__ import annotations

import logging
import math

import numpy as np

from priors import get_readout_law, get_weight_prior

__all__ = ["PHASE_THRESHOLD", "DEFAULT_S_GRID", "MAX_GAUSS_HERMITE_S_GRID", "MAX_S_PANELS", "S_GRID_TARGET",
           "layer_priors_and_readout", "effective_readout_grid", "refined_solve", "phase_transitions",
           "converge_s_grid", "NEURON_QUANTILES", "neuron_quantiles"]

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
    """
    x = np.asarray(x, dtype=float)
    if not np.any(x):
        return 0.0, None
    fine = model.refined()
    x0 = model.interpolate_to(fine, x)
    a = model.state(alpha, x)
    r = None if corrector is None else corrector(fine, alpha, x0)
    if r is None or fine.phase(r.info["state"]) != model.phase(a):
        r = fine.solve_from(alpha, x0, **solver_options)
    if not r.converged or fine.phase(r.info["state"]) != model.phase(a):
        return math.nan, None
    b = r.info["state"]
    return max(abs(a.mmse - b.mmse) / max(abs(b.mmse), 1e-300),
               abs(a.free_entropy - b.free_entropy) / max(abs(b.free_entropy), 1e-300)), r.x


def phase_transitions(model, result, *, solve_kw=None, rtol=1e-7) -> list:
    """Changes of the equilibrium phase along a sweep, located by free-entropy crossings.

    :func:`replica.branches.sweep` names the branches of this model by phase
    (:meth:`~replica.models.two_layer.TwoLayerModel.phase`) and reports, per branch, its spinodal and its crossing with
    the universal branch; the equilibrium may also change between two non-universal phases
    (``layer_1`` → ``layers_1_2``), which this function locates. Every stored point is
    classified by ``model.phase`` of its state (:func:`~replica.models.two_layer.phase_name` for this model; any model
    with ``phase``, ``state``, ``size``, ``solve_universal`` and ``solve_from`` works, e.g.
    :class:`replica.models.deep_linear.DeepLinearModel`); where the equilibrium phase
    changes from P at ``α_i`` to Q at ``α_{i+1}``, P is followed up from ``α_i`` and Q down
    from ``α_{i+1}`` (warm starts; where a phase ends inside the bracket, its spinodal is
    located by bisection on existence with Newton solves) and the crossing ``f_Q = f_P`` is
    found by Brent's method.

    Changes *inside* a phase are not reported: on the quadrature grid of ``s`` the groups
    of first-layer neurons specialize one by one (a staircase that becomes a continuous
    onset as ``n_s → ∞``, docs/two_layer.md).

    Parameters
    ----------
    model : TwoLayerModel or DeepLinearModel
    result : SweepResult
        Output of :func:`replica.branches.sweep` for ``model``.
    solve_kw : dict, optional, keyword-only
        Options of the solver.
    rtol : float, keyword-only
        Relative tolerance on the located α.

    Returns
    -------
    list of dict
        One per change: ``alpha``, ``from``, ``to``, ``located`` (bool), ``bracket``
        (α_i, α_{i+1}) and ``kind``: ``crossing`` (``f_Q = f_P``), ``spinodal`` (Q is born
        inside the bracket with ``f_Q ≥ f_P``, or P disappears first), or ``grid`` (a
        phase could not be followed; ``alpha`` is the grid midpoint, ``located`` False).
    """
    from scipy import optimize

    solve_kw = dict(solve_kw or {})
    alphas = result.alpha
    points = []  # per α: {phase: (free entropy, packed point)}
    for i in range(alphas.size):
        found = {}
        for b in result.branches.values():
            if not (b["exists"][i] and b["converged"][i]):
                continue
            x = b.points.get(i)
            x = model.solve_universal(float(alphas[i])).x if x is None else x
            name = model.phase(model.state(float(alphas[i]), x))
            f = float(b["free_entropy"][i])
            if name not in found or f > found[name][0]:
                found[name] = (f, x)
        points.append(found)
    eq = [max(p, key=lambda k: p[k][0]) for p in points]

    def solve(phase, al, warm, newton=False):
        """(free entropy, point) of ``phase`` at ``al`` from ``warm``; raises _PhaseLost."""
        if phase == "universal":
            u = model.solve_universal(al)
            return u.info["state"].free_entropy, u.x
        kw = {**solve_kw, "method": "newton"} if newton else solve_kw
        r = model.solve_from(al, None, warm, start=phase, **kw)
        if not r.converged or model.phase(r.info["state"]) != phase:
            raise _PhaseLost(f"{phase} lost at alpha = {al:g}")
        return r.info["state"].free_entropy, r.x

    def edge(phase, a_in, x_in, a_out):
        """Farthest α from ``a_in`` towards ``a_out`` where ``phase`` still exists, and its point."""
        try:
            return a_out, solve(phase, a_out, x_in)[1]
        except _PhaseLost:
            pass
        while abs(a_out - a_in) > rtol * abs(a_in):
            mid = 0.5 * (a_in + a_out)
            try:
                x_in, a_in = solve(phase, mid, x_in, newton=True)[1], mid
            except _PhaseLost:
                a_out = mid
        return a_in, x_in

    out = []
    for i in range(alphas.size - 1):
        P, Q = eq[i], eq[i + 1]
        if P == Q:
            continue
        lo, hi = float(alphas[i]), float(alphas[i + 1])
        entry = {"alpha": 0.5 * (lo + hi), "from": P, "to": Q, "located": False, "bracket": (lo, hi),
                 "kind": "grid"}
        try:
            p_hi, xp = edge(P, lo, points[i][P][1], hi)
            q_lo, xq = edge(Q, hi, points[i + 1][Q][1], lo)
            a, b = max(lo, q_lo), min(hi, p_hi)
            if a > b:
                raise _PhaseLost("the two phases do not coexist in the bracket")
            warm = {P: xp, Q: xq}
            ends = {}

            def diff(al):
                if al in ends:  # brentq evaluates the ends first: reuse them (warm starts moved on)
                    return ends[al]
                fq, warm[Q] = solve(Q, al, warm[Q])
                fp, warm[P] = solve(P, al, warm[P])
                return fq - fp

            ends[a] = diff(a)
            if ends[a] >= 0.0:  # Q is born (at its spinodal a) as the equilibrium
                entry.update(alpha=a, located=True, kind="spinodal")
            elif ends.setdefault(b, diff(b)) < 0.0:  # P disappears (at b) while still the equilibrium
                entry.update(alpha=b, located=True, kind="spinodal")
            else:
                entry["alpha"] = float(optimize.brentq(diff, a, b, rtol=rtol, xtol=1e-14))
                entry.update(located=True, kind="crossing")
        except (_PhaseLost, ValueError) as exc:
            logger.info("phase change %s -> %s in [%g, %g] not located: %s", P, Q, lo, hi, exc)
        out.append(entry)
    return out


def converge_s_grid(model, alphas, *, target=S_GRID_TARGET, max_panels=MAX_S_PANELS, probes=3,
                    starts=("layer_1", "informed"), solve_kw=None):
    """The model on the coarsest panel rule in ``s`` that is converged at a sweep's α values.

    A sweep-level choice (the packed vector keeps one size along every branch, as the
    continuation of :func:`replica.branches.sweep` needs): at ``probes`` α values of the sweep
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


class _PhaseLost(Exception):
    """A followed stationary point changed phase (or was lost) inside a bracket."""


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
