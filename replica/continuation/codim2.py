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

import numpy as np

from .cusps import CriticalPoint, critical_points, locate_cusp  # noqa: F401 - re-exported (their former home)
from .eigenlines import trace_branch_point_line, trace_instability_line  # noqa: F401 - re-exported
from .linepoints import (LinePoint, PhaseLine, _trace, bifurcation_at, crossing_at, fold_at, grid_point,  # noqa: F401
                         jumped, line_window, model_at)
from .settings import active

__all__ = ["LinePoint", "PhaseLine", "model_at", "trace_fold_line", "trace_crossing_line", "trace_instability_line",
           "trace_branch_point_line", "trace_bifurcation_line",
           "trace_phase_lines", "phase_line_tasks", "line_count", "CriticalPoint", "locate_cusp", "critical_points"]

logger = logging.getLogger(__name__)


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


def trace_bifurcation_line(model, name, values, alpha, result, side, solve_kw=None):
    """Follow the bifurcation end at ``alpha`` of the curve through ``result`` (a point of the curve inside it: the
    sweep's grid point next to the end; where its learned overlaps vanish the curve merges into one with fewer, the
    onset of a continuous transition; the curve exists on ``side`` of it, +1 for a branch's start) through the
    requested parameter ``values``, each point re-located as the sweep locates such an end
    (:func:`~replica.continuation.linepoints.bifurcation_at`), from the curve's point as far inside the curve as
    ``result`` is from ``alpha`` (the point stored with each line point). The line where no branch point of the host
    is located: the host's eigenvalue is not followed (a layer of :class:`~replica.models.deep_fronts.DeepFrontModel`
    whose front is at its end has its overlaps set to 0 by the ghost rule, so the host's eigenvalue along them is
    0). Returns a :class:`PhaseLine` of kind ``bifurcation``."""
    solve_kw = dict(solve_kw or {})
    a_inside = float(getattr(result.info.get("state"), "alpha", alpha))
    inside = max(abs(a_inside - alpha), 10.0 * active().jump_offset * max(1.0, abs(alpha)))

    def locate(p, a, xs, move):
        got = bifurcation_at(model_at(model, name, p), a, xs[0], side, inside, solve_kw)
        if got is None or (move is not None and abs(got[0] - a) > max(0.5 * move, active().jump_offset * max(1.0, abs(a)))):
            # not found, or farther from the secant's prediction than half its step: the continuation from the inside
            # point ended on another curve's onset (three hidden layers: two onsets of layers_1_2 that meet at Δ =
            # 0.05; a shorter step predicts better). The floor lets short steps through; ten times it (the search
            # window's) accepted a jump of 0.037 in α after a step of 3.3e-4 in Δ at Δ = 0.0708
            return None
        return got[0], (got[2],)

    return _trace("bifurcation", name, list(values), LinePoint(float(values[0]), float(alpha), (result,)), locate)


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


def line_count(result) -> int:
    """How many lines :func:`trace_phase_lines` follows through ``result``: one per fold end of a branch and per
    branch point on a branch or continuous change of the equilibrium off a non-universal branch, one for the
    universal branch's instability on the grid, one per crossing of the equilibrium."""
    folds = sum((b.start_kind == "fold") + (b.end_kind == "fold") + sum(k != "stability_crossing" for k in
                                                                         getattr(b, "branch_point_kinds", ()))
                for n, b in result.branches.items() if n != "universal")
    unstable = math.isfinite(float(result.branch_transitions.get("universal", {}).get("alpha_instability", math.nan)))
    return folds + len(_bifurcation_ends(result)) + int(unstable) + sum(c["kind"] == "crossing"
                                                                       for c in result.equilibrium_changes)


def _bifurcation_ends(result) -> list:
    """``[(name, branch, α, +1)]``: the branch starts of kind ``bifurcation`` (the onsets of continuous transitions)
    that no other line of :func:`phase_line_tasks` follows (the universal branch's instability, a branch point located
    on another branch: within 1e-6 relative). Not the ends of that kind: at three hidden layers they lie past a
    degenerate branch point of the same branch, where the continuation among the curves that cross there loses the
    curve at an α that depends on its path (``layers_1_2`` at Δ = 0.093: 4.0175 in the sweep, 3.9638 from a point
    traced in Δ), not at a located bifurcation."""
    known = [float(result.branch_transitions.get("universal", {}).get("alpha_instability", math.nan))]
    known += [float(a) for b in result.branches.values() for a in b.branch_points]
    out = []
    for bname, b in result.branches.items():
        if bname == "universal":
            continue
        a = b.alpha_start
        if b.start_kind == "bifurcation" and not any(abs(a - k) <= 1e-6 * max(1.0, abs(a)) for k in known
                                                     if math.isfinite(k)):
            out.append((bname, b, float(a), +1))
    return out


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
    the :class:`PhaseLine`, or None (logged) where no point of a branch can be solved next to the line's start
    (:func:`~replica.continuation.triples.untraced`: the ones no other line passes through, which the command
    warns of). Each task depends only on ``result``, so a run interrupted between tasks continues with the next
    one (``replica-phase-diagram --trace --resume``).

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

    def branch_task(kind, b, a, labels, follow):
        """The line of ``kind`` through the point of branch ``b`` at ``a``, traced by ``follow(grid point)`` from the
        branch's point at the grid α next to ``a``."""
        def trace():
            pt = grid_point(model, alphas, b, a)
            if pt is None:
                logger.info("the %s line of %s (alpha = %.10g) is not traced from here: no point of the branch could be "
                            "solved at the grid alpha next to it", kind, " ".join(labels), a)
                return None
            line = follow(pt)
            line.branches = labels
            return line
        return (kind, labels), float(a), trace

    def which(side):
        return "start" if side > 0 else "end"

    for bname, b in result.branches.items():
        if bname == "universal":
            continue
        for kind, a_end, side in ((b.start_kind, b.alpha_start, +1), (b.end_kind, b.alpha_end, -1)):
            if kind == "fold":
                tasks.append(branch_task("fold", b, a_end, (bname, which(side)), lambda pt, a=a_end, side=side:
                                         trace_fold_line(model, name, values, a, pt, side, solve_kw)))
    for bname, b in result.branches.items():
        if bname == "universal":
            continue
        for a_bp, kind in zip(b.branch_points, getattr(b, "branch_point_kinds", ())):
            if kind in ("branch_point", "degenerate_branch_point"):  # not a complex pair (no curve branches off)
                tasks.append(branch_task("branch_point", b, a_bp, (bname,), lambda pt, a=a_bp:
                                         trace_branch_point_line(model, name, values, a, pt, solve_kw)))
    for bname, b, a_end, side in _bifurcation_ends(result):
        tasks.append(branch_task("bifurcation", b, a_end, (bname, which(side)), lambda pt, a=a_end, side=side:
                                 trace_bifurcation_line(model, name, values, a, pt, side, solve_kw)))
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
                logger.info("the first-order line %s -> %s (alpha = %.10g) is not traced from here: a branch could not "
                            "be solved at the grid alpha next to it", c["from"], c["to"], c["alpha"])
                return None
            line = trace_crossing_line(model, name, values, c["alpha"], a, b, solve_kw)
            line.branches = (c["from"], c["to"])
            return line
        return ("crossing", (c["from"], c["to"])), float(c["alpha"]), trace

    for c in result.equilibrium_changes:
        if c["kind"] == "crossing":
            tasks.append(crossing_task(c))
    return tasks
