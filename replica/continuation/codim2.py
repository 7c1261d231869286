"""Phase lines in the plane of α and a second parameter p (Δ, γ, …), followed as curves.

A sweep locates, at one value of p, where each branch begins or ends (a fold: the spinodal ``alpha_sp``)
and where the equilibrium changes (a crossing of two free entropies: ``alpha_c``). Each such point moves
with p along a line. :func:`trace_fold_line` and :func:`trace_crossing_line` follow one line by natural
continuation in p: the model at the next p (the model's ``with_parameter`` hook, :class:`ModelDefaults
<replica.interface.ModelDefaults>`), a secant predictor in (p, α, x), and the point re-located there by the
same locators as the sweep's (the fold by the step control and fold refinement of
:func:`~replica.continuation.stepper.advance`, the crossing by the envelope-slope Newton of
:func:`~replica.continuation.events.locate_crossing`); the step in p halves where the point is not found
and doubles after a success, and the requested values of p are hit exactly, so that a line can be compared
with the sweeps at those values. A line ends where the step in p falls below ``line_min_step`` (relative): the
fold or crossing is lost there (a branch ceases to exist, or two lines meet); the end is reported, not
extrapolated.

Cost: a few corrector solves per step instead of a whole α sweep per p value (one hidden layer, tanh2:
about 15 solves per step against ~1,000 map evaluations of a 40-point sweep).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from ..interface import hook
from .cusps import CriticalPoint, critical_points, locate_cusp  # noqa: F401 - re-exported (their former home)
from .linepoints import crossing_at, fold_at, grid_point, jumped, line_window, model_at, search_window
from .operators import stability
from .settings import active

__all__ = ["LinePoint", "PhaseLine", "model_at", "trace_fold_line", "trace_crossing_line", "trace_instability_line",
           "trace_branch_point_line",
           "trace_phase_lines", "phase_line_tasks", "line_count", "CriticalPoint", "locate_cusp", "critical_points"]

logger = logging.getLogger(__name__)


@dataclass
class LinePoint:
    """One located point of a phase line: the parameter, α, and the branch point(s) there (results)."""

    parameter: float
    alpha: float
    results: tuple


@dataclass
class PhaseLine:
    """A traced phase line.

    Attributes
    ----------
    kind : str
        ``fold`` (a spinodal: where a branch begins or ends), ``crossing`` (equal free entropies of two
        branches: a first-order transition line), ``instability`` (the universal branch loses stability) or
        ``branch_point`` (another curve branches off a curve: a continuous transition where that curve is the
        equilibrium).
    parameter : str
        The name of the second parameter (``delta``, ``gamma``, …).
    points : list of LinePoint
        In the order traced (increasing or decreasing p), every accepted step.
    end : str
        Why the line ends: ``range`` (the last requested p was reached) or ``lost`` (the step in p fell below
        ``line_min_step`` there: the fold or crossing disappears, or meets another line).
    branches : tuple of str
        The branch names at the first p: the branch whose fold it is and ``start`` or ``end`` (which of its
        ends), ``universal`` (instability), or the two branches that cross.
    """

    kind: str
    parameter: str
    points: list = field(default_factory=list)
    end: str = "range"
    branches: tuple = ()

    def at(self, value) -> float:
        """α of the line at a requested parameter value (exactly hit by the continuation); NaN if absent."""
        for pt in self.points:
            if pt.parameter == value:
                return pt.alpha
        return math.nan


def _trace(kind, name, values, first, locate):
    """Natural continuation in the parameter through the requested ``values`` (sorted, starting at the value of
    ``first``). ``locate(p, alpha_pred, xs_pred, move) -> (alpha, results) or None``, ``move`` the predicted
    change of α (None before there is a secant). The first step is a quarter of the first interval (there is
    no secant yet to predict the line's slope), and the steps double after every full step that succeeds."""
    s = active()
    line = PhaseLine(kind, name, [first])
    p_targets = list(values[1:])
    h = abs(p_targets[0] - first.parameter) / 4.0 if p_targets else 0.0
    while p_targets:
        last = line.points[-1]
        target = p_targets[0]
        step = math.copysign(min(h, abs(target - last.parameter)), target - last.parameter)
        p = target if abs(step) >= abs(target - last.parameter) * (1 - 1e-12) else last.parameter + step
        if len(line.points) >= 2:  # secant predictor in (p, α, x)
            prev = line.points[-2]
            t = (p - last.parameter) / (last.parameter - prev.parameter)
            alpha = last.alpha + t * (last.alpha - prev.alpha)
            xs = tuple(None if x1 is None else np.asarray(x1.x) + t * (np.asarray(x1.x) - np.asarray(x0.x))
                       for x0, x1 in zip(prev.results, last.results))
        else:
            alpha, xs = last.alpha, tuple(None if r is None else np.asarray(r.x) for r in last.results)
        got = locate(p, alpha, xs, abs(alpha - last.alpha) if len(line.points) >= 2 else None)
        if got is None:
            h = 0.5 * abs(step)
            if h < s.line_min_step * max(1.0, abs(last.parameter)):
                line.end = "lost"
                logger.info("%s line lost at %s = %.10g (alpha = %.10g)", kind, name, last.parameter, last.alpha)
                return line
            continue
        line.points.append(LinePoint(float(p), got[0], got[1]))
        if p == target:
            p_targets.pop(0)
        if abs(step) >= h * (1 - 1e-12):  # a full step: double it (a step cut short at a target keeps h)
            h = 2.0 * abs(step)
    return line


def trace_fold_line(model, name, values, alpha, result, side, solve_kw=None, *, width=None):
    """Follow the fold (spinodal) at ``alpha`` of the curve through ``result`` (the curve exists on ``side``
    of it: +1 for a branch's start) from ``values[0]`` through the requested parameter ``values`` (sorted,
    ``values[0]`` the model's own). ``width`` (default
    :func:`~replica.continuation.linepoints.search_window`: ``10·jump_offset·max(1, α)`` plus a tenth of the
    predicted change of α, ten times that for the first step): the window of
    :func:`~replica.continuation.linepoints.fold_at` around each prediction. Returns a :class:`PhaseLine` of
    kind ``fold``."""
    solve_kw = dict(solve_kw or {})

    geometry, fails = [result.info.get("fold")], [0]

    def locate(p, a, xs, move):
        w = line_window(width, a, move, fails)
        got = fold_at(model_at(model, name, p), a, xs[0], side, w, solve_kw, geometry[0])
        if got is not None and got[1].info.get("fold"):
            geometry[0] = got[1].info["fold"]
        fails[0] = 0 if got is not None else fails[0] + 1
        return None if got is None else (got[0], (got[1],))

    return _trace("fold", name, list(values), LinePoint(float(values[0]), float(alpha), (result,)), locate)


def trace_crossing_line(model, name, values, alpha, result_a, result_b, solve_kw=None, *, width=None):
    """Follow the crossing at ``alpha`` of the free entropies of two curves through ``result_a`` (None: the
    universal branch) and ``result_b`` through the requested parameter ``values`` (sorted, ``values[0]`` the
    model's own). ``width`` (default as :func:`trace_fold_line`'s): the bracket of
    :func:`~replica.continuation.linepoints.crossing_at` around each prediction (halved on a side where a curve
    is not found). Returns a :class:`PhaseLine` of kind ``crossing``."""
    solve_kw = dict(solve_kw or {})

    fails = [0]

    def locate(p, a, xs, move):
        m = model_at(model, name, p)
        got = crossing_at(m, m, a, xs[0], xs[1], line_window(width, a, move, fails), solve_kw)
        if got is not None and move is not None and any(jumped(m, a, x, r) for x, r in zip(xs, got[1:])):
            got = None  # a branch fell onto a neighbouring sheet: a shorter step (a secant predicts the points; the
            # first step starts from the sweep's grid points, not from the line's point)
        fails[0] = 0 if got is not None else fails[0] + 1
        return None if got is None else (got[0], (None if result_a is None else got[1], got[2]))

    first = LinePoint(float(values[0]), float(alpha), (result_a, result_b))
    return _trace("crossing", name, list(values), first, locate)


def trace_instability_line(model, name, values, alpha, solve_kw=None, *, width=None):
    """Follow the loss of stability of the universal branch (its leading eigenvalue crossing 1 at ``alpha``)
    through the requested parameter ``values``: at each step the root of that eigenvalue minus 1 by Brent's
    method in ``[α − w, α + w]`` around the prediction (``w`` as :func:`trace_fold_line`'s window; the
    eigenvalue of the map restricted to the universal subspace where the model rules so). Returns a
    :class:`PhaseLine` of kind ``instability``."""
    from scipy import optimize  # lazy: start-up (docs/architecture.md)

    def locate(p, a, xs, move):
        m = model_at(model, name, p)
        indices = hook(m, "universal_indices")() if hook(m, "universal_only_reason")() else None
        w = width if width is not None else search_window(a, move)

        def g(al):
            return stability(m, al, m.solve_universal(al).x, indices=indices) - 1.0

        lo, hi = max(a - w, 0.5 * a), a + w
        try:
            if not g(lo) * g(hi) < 0.0:
                return None
            root = float(optimize.brentq(g, lo, hi, xtol=1e-14, rtol=active().root_rtol))
        except ValueError:
            return None
        return root, (m.solve_universal(root),)

    first = LinePoint(float(values[0]), float(alpha), (model.solve_universal(float(alpha)),))
    return _trace("instability", name, list(values), first, locate)


def trace_branch_point_line(model, name, values, alpha, result, solve_kw=None, *, width=None):
    """Follow a branch point of a curve through ``result`` (its leading eigenvalue crossing 1 at ``alpha`` while
    the curve goes on: another curve branches off there, a continuous transition when it is the equilibrium's) through
    the requested parameter ``values``: at each step the root of that eigenvalue minus 1 along the curve by Brent's
    method in ``[α − w, α + w]`` around the prediction (``w`` as :func:`trace_fold_line`'s window), the curve
    solved at each trial α by Newton from the predicted point with the curve's vanishing overlaps set to exactly 0
    (:func:`~replica.continuation.events.zero_overlaps`), as
    :func:`~replica.continuation.branchpoints.branch_points` locates it in a sweep (second-order differences).
    Returns a :class:`PhaseLine` of kind ``branch_point``."""
    from scipy import optimize  # lazy: start-up (docs/architecture.md)

    from .correctors import correct
    from .events import zero_overlaps
    from .problem import overlaps_of

    solve_kw = dict(solve_kw or {})
    fails = [0]
    vanishing = np.abs(overlaps_of(result)) < active().bifurcation_overlap  # the host's unlearned overlaps

    class _Lost(Exception):
        pass

    def locate(p, a, xs, move):
        m = model_at(model, name, p)
        solved = {}

        def g(al):
            al = float(al)
            if al not in solved:
                x = zero_overlaps(m, xs[0], vanishing) if np.any(vanishing) else xs[0]
                solved[al] = None if x is None else correct(m, al, x, solve_kw).result
            r = solved[al]
            value = math.nan if r is None else stability(m, al, r.x, order=2) - 1.0
            if not math.isfinite(value):
                raise _Lost
            return value

        w = line_window(width, a, move, fails)
        lo, hi = max(a - w, 0.5 * a), a + w
        try:
            if not g(lo) * g(hi) < 0.0:
                raise _Lost
            root = float(optimize.brentq(g, lo, hi, xtol=1e-14, rtol=active().root_rtol))
            g(root)
        except (_Lost, ValueError):
            fails[0] += 1
            return None
        fails[0] = 0
        return root, (solved[root],)

    first = LinePoint(float(values[0]), float(alpha), (result,))
    return _trace("branch_point", name, list(values), first, locate)


def line_count(result) -> int:
    """How many lines :func:`trace_phase_lines` follows through ``result``: one per fold end of a branch and per
    branch point on a branch, one for the universal branch's instability on the grid, one per crossing of the
    equilibrium."""
    folds = sum((b.start_kind == "fold") + (b.end_kind == "fold") + sum(k != "stability_crossing" for k in
                                                                         getattr(b, "branch_point_kinds", ()))
                for n, b in result.branches.items() if n != "universal")
    unstable = math.isfinite(float(result.branch_transitions.get("universal", {}).get("alpha_instability", math.nan)))
    return folds + int(unstable) + sum(c["kind"] == "crossing" for c in result.equilibrium_changes)


def trace_phase_lines(model, result, name, values, solve_kw=None, *, progress=None) -> list:
    """Every phase line through a sweep: the fold where a branch begins or ends (a spinodal), the universal
    branch's loss of stability and each crossing of the equilibrium (a first-order transition), followed
    through ``values`` of the parameter
    ``name`` (sorted; ``values[0]`` the model's own, at which ``result`` was swept).

    Parameters
    ----------
    model : ReplicaModel
        With the ``with_parameter`` hook.
    result : SweepResult
        Its sweep (:func:`replica.continuation.sweep`) at ``values[0]``.
    name : str
        The parameter (``delta``, …).
    values : array_like
        Requested values, sorted, starting at the model's own.
    solve_kw : dict, optional
    progress : callable, optional, keyword-only
        Called once per line traced (a progress bar's ``update``).

    Returns
    -------
    list of PhaseLine
        Folds first (in the order of the branches), then the branch points of the other branches, then the
        universal branch's instability (where it loses stability on the grid: a continuous transition starts
        there), then crossings (in α).

    Raises
    ------
    ValueError
        The model cannot be copied at another value (:func:`model_at`), or ``values`` is not sorted.
    """
    lines = []
    for _, _, task in phase_line_tasks(model, result, name, values, solve_kw):
        line = task()
        if line is not None:
            lines.append(line)
        if progress is not None:
            progress()
    return lines


def phase_line_tasks(model, result, name, values, solve_kw=None) -> list:
    """The lines of :func:`trace_phase_lines` as separate tasks, in its order (one per :func:`line_count`):
    ``(label, alpha, trace)`` with ``label = (kind, branches)``, ``alpha`` where the line starts and ``trace()``
    the :class:`PhaseLine`, or None (with
    a warning) where no point of a branch can be solved next to the line's start. Each task depends only on
    ``result``, so a run interrupted between tasks continues with the next one (``replica-phase-diagram
    --trace --resume``).

    Raises
    ------
    ValueError
        As :func:`trace_phase_lines`.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or values.size < 2 or not (np.all(np.diff(values) > 0) or np.all(np.diff(values) < 0)):
        raise ValueError(f"{name}: at least two distinct values, sorted, are needed to trace a line")
    model_at(model, name, float(values[0]))  # refused at once when the model has no copies
    alphas = np.asarray(result.alpha, dtype=float)
    tasks = []

    def fold_task(bname, b, a_end, side):
        which = "start" if side > 0 else "end"

        def trace():
            pt = grid_point(model, alphas, b, a_end)
            if pt is None:
                logger.warning("the fold line at the %s of %s (alpha = %.10g) is not traced: no point of the branch "
                               "could be solved at the grid alpha next to it", which, bname, a_end)
                return None
            line = trace_fold_line(model, name, values, a_end, pt, side, solve_kw)
            line.branches = (bname, which)
            return line
        return ("fold", (bname, which)), float(a_end), trace

    for bname, b in result.branches.items():
        if bname == "universal":
            continue
        for kind, a_end, side in ((b.start_kind, b.alpha_start, +1), (b.end_kind, b.alpha_end, -1)):
            if kind == "fold":
                tasks.append(fold_task(bname, b, a_end, side))
    def branch_point_task(bname, b, a_bp):
        def trace():
            pt = grid_point(model, alphas, b, a_bp)
            if pt is None:
                logger.warning("the branch-point line of %s (alpha = %.10g) is not traced: no point of the branch "
                               "could be solved at the grid alpha next to it", bname, a_bp)
                return None
            line = trace_branch_point_line(model, name, values, a_bp, pt, solve_kw)
            line.branches = (bname,)
            return line
        return ("branch_point", (bname,)), float(a_bp), trace

    for bname, b in result.branches.items():
        if bname == "universal":
            continue
        for a_bp, kind in zip(b.branch_points, getattr(b, "branch_point_kinds", ())):
            if kind in ("branch_point", "degenerate_branch_point"):  # not a complex pair (no curve branches off)
                tasks.append(branch_point_task(bname, b, a_bp))
    a_inst = float(result.branch_transitions.get("universal", {}).get("alpha_instability", math.nan))
    if math.isfinite(a_inst):
        def instability():
            line = trace_instability_line(model, name, values, a_inst, solve_kw)
            line.branches = ("universal",)
            return line
        tasks.append((("instability", ("universal",)), a_inst, instability))

    def crossing_task(c):
        def trace():
            a = None if c["from"] == "universal" else grid_point(model, alphas, result.branches[c["from"]],
                                                                   c["alpha"])
            b = None if c["to"] == "universal" else grid_point(model, alphas, result.branches[c["to"]], c["alpha"])
            if b is None or (a is None and c["from"] != "universal"):
                logger.warning("the first-order line %s -> %s (alpha = %.10g) is not traced: a branch could not be "
                               "solved at the grid alpha next to it", c["from"], c["to"], c["alpha"])
                return None
            line = trace_crossing_line(model, name, values, c["alpha"], a, b, solve_kw)
            line.branches = (c["from"], c["to"])
            return line
        return ("crossing", (c["from"], c["to"])), float(c["alpha"]), trace

    for c in result.equilibrium_changes:
        if c["kind"] == "crossing":
            tasks.append(crossing_task(c))
    return tasks
