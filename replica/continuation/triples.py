"""Where first-order lines meet: triple points of three branches of equal free entropy, and the lines traced
twice (from both ends of the parameter range).

Two crossing lines ``f_A = f_B`` and ``f_A = f_C`` (:func:`~replica.continuation.codim2.trace_crossing_line`)
that pass through one point ``(p*, α*)`` of the plane and share the branch A there make three branches of equal
free entropy: a triple point. Of the three lines that meet there only the pieces on which
the crossing branches have the largest free entropy are phase boundaries; the others continue as crossings
of metastable branches. Such a point is found where ``α₁(p) − α₂(p)`` changes sign between two values of p
that both lines hit (every requested value is hit exactly), and located by Brent's method on that difference,
each line's α re-located at the trial p by its own crossing locator
(the line continued from its nearest traced point to the trial p).

A branch that the sweep at the first value misses (for two hidden layers, tanh2, γ = (0.5, 0.5): a second,
short ``layers_1_2`` sheet, which no start of a sweep at Δ = 0.05 reaches) has its lines traced from a sweep at
the last value, backwards (``replica-phase-diagram --trace``); a line found from both ends is kept once
(:func:`same_line`). A line that neither end's sweep has, but that starts at a triple point, is traced from it
(:func:`third_lines`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from .correctors import correct
from .curves import same_point
from .linepoints import crossing_at, model_at, search_window
from .settings import active

logger = logging.getLogger(__name__)

__all__ = ["untraced", "TriplePoint", "same_line", "distinct_lines", "reached", "run_line_tasks", "triple_points",
           "third_lines", "mark_metastable"]


@dataclass
class TriplePoint:
    """Three branches of equal free entropy: where two first-order lines meet.

    Attributes
    ----------
    parameter, alpha : float
        Its location.
    lines : tuple of int
        Indices of the two crossing lines (in the list given to :func:`triple_points`).
    branches : tuple of str
        The branch names of the two lines (at the values they were traced from).
    results : tuple
        The branch points of the two lines there (solver results; the first line's two, then the second's).
    """

    parameter: float
    alpha: float
    lines: tuple = ()
    branches: tuple = ()
    results: tuple = ()


def _common(l1, l2):
    """``(p, α₁, α₂)`` at the parameter values both lines hit, sorted in p."""
    a2 = {pt.parameter: pt.alpha for pt in l2.points}
    rows = sorted((pt.parameter, pt.alpha, a2[pt.parameter]) for pt in l1.points if pt.parameter in a2)
    return np.array(rows, dtype=float).reshape(-1, 3)


def _overlap(l1, l2):
    """``(p, α₁, α₂)`` on every parameter value where either line has a point, inside the range both cover, each α
    interpolated linearly between its line's points (where the order of the two lines changes; the crossing is
    then located exactly)."""
    def curve(line):
        pts = sorted((pt.parameter, pt.alpha) for pt in line.points)
        return np.array([q for q, _ in pts]), np.array([a for _, a in pts])

    (p1, a1), (p2, a2) = curve(l1), curve(l2)
    lo, hi = max(p1[0], p2[0]), min(p1[-1], p2[-1])
    grid = np.unique(np.concatenate([p1, p2]))
    grid = grid[(grid >= lo) & (grid <= hi)]
    return np.stack([grid, np.interp(grid, p1, a1), np.interp(grid, p2, a2)], axis=1) if grid.size else \
        np.zeros((0, 3))


def same_line(l1, l2) -> bool:
    """Whether two traced lines of one kind are one line (traced from both ends of the range): they share at
    least one requested value and their α agree at every shared value to ``line_same_rtol`` (relative to
    max(1, α))."""
    rtol = active().line_same_rtol
    if l1.kind != l2.kind:
        return False
    rows = _common(l1, l2)
    return rows.shape[0] > 0 and bool(np.all(np.abs(rows[:, 1] - rows[:, 2])
                                             <= rtol * np.maximum(1.0, np.abs(rows[:, 1]))))


def _span(line) -> float:
    values = [pt.parameter for pt in line.points]
    return max(values) - min(values) if values else 0.0


def distinct_lines(lines) -> list:
    """``lines`` with each line once (:func:`same_line`): of two copies, the one that covers the longer range of
    the parameter, in the place of the first. A line lost where it meets another line (two hidden layers with
    Gaussian readouts: the first-order line where the jump's origin turns from the partial sheet to the curve
    leaving its branch point, Δ ≈ 0.084) is a copy of the one traced through that point from the other end of the
    range, which must not be dropped for it."""
    out = []
    for line in lines:
        k = next((k for k, kept in enumerate(out) if same_line(kept, line)), None)
        if k is None:
            out.append(line)
        elif _span(line) > _span(out[k]):
            out[k] = line
    return out


def reached(lines, kind, parameter, alpha) -> bool:
    """Whether a line of ``kind`` among ``lines`` (None entries skipped) passes through ``(parameter, alpha)`` (α to
    ``line_same_rtol`` relative to max(1, α), the parameter exactly: a requested value): a line that a sweep at
    the last value starts there is then already traced from the first, and need not be traced back."""
    rtol = active().line_same_rtol
    return any(line is not None and line.kind == kind and any(
        pt.parameter == parameter and abs(pt.alpha - alpha) <= rtol * max(1.0, abs(alpha)) for pt in line.points)
        for line in lines)


def run_line_tasks(tasks, n_first, last_value, done=(), on_line=None) -> list:
    """Run the line tasks (:func:`~replica.continuation.codim2.phase_line_tasks`) of the sweep at the first value
    (``tasks[:n_first]``), then those of the sweep at the last value (traced backwards), skipping a task of the
    latter whose line a line of the former already reached (:func:`reached`): one entry per task, the
    :class:`~replica.continuation.codim2.PhaseLine` or None. ``done``: the entries of the tasks done before (a
    resumed run); ``on_line(entry)`` is called after each task (a checkpoint, a progress bar)."""
    out = list(done)
    for k in range(len(out), len(tasks)):
        (kind, _), a_start, trace = tasks[k]
        line = None if k >= n_first and reached(out[:n_first], kind, float(last_value), a_start) else trace()
        out.append(line)
        if on_line is not None:
            on_line(line)
    return out


def untraced(tasks, entries, n_first, first_value, last_value) -> list:
    """The tasks of :func:`run_line_tasks` that gave no line (no point of a branch solved next to its start) and
    whose point no traced line of ``entries`` passes through at the value it starts from (``first_value`` for the
    first ``n_first`` tasks, else ``last_value``; :func:`reached`): ``[((kind, branches), α, value)]``, what is
    missing from the diagram. A line that only one end could not start is in it from the other end."""
    lines = [line for line in entries if line is not None]
    out = []
    for k, ((kind, branches), a, _) in enumerate(tasks):
        value = float(first_value if k < n_first else last_value)
        if k < len(entries) and entries[k] is None and not reached(lines, kind, value, a):
            out.append(((kind, branches), float(a), value))
    return out


def _nearest(line, p):
    """The line's traced point nearest ``p`` whose branch points are all known, or None."""
    known = [pt for pt in line.points if pt.results and pt.results[-1] is not None]
    return min(known, key=lambda pt: abs(pt.parameter - p)) if known else None


def _alpha_at(model, name, line, p, solve_kw):
    """α of the crossing line at ``p``: the line continued from its nearest traced point to ``p``
    (:func:`~replica.continuation.codim2.trace_crossing_line`, with its step control: the nearest point may be a
    whole requested interval away). ``(α, (ra, rb))``, or None where the line is lost before ``p``."""
    from .codim2 import trace_crossing_line  # lazily: codim2's callers import this module

    near = _nearest(line, p)
    if near is None:
        return None
    ra, rb = near.results
    if near.parameter == p:
        return near.alpha, (ra, rb)
    m = model_at(model, name, near.parameter)
    got = trace_crossing_line(m, name, [near.parameter, p], near.alpha, ra, rb, solve_kw)
    end = got.points[-1]
    return (end.alpha, end.results) if end.parameter == p else None


def triple_points(model, name, lines, solve_kw=None) -> list:
    """The triple points of the crossing lines in ``lines``: for every pair of distinct crossing lines whose α
    changes order strictly between two consecutive parameter values of their points (:func:`_overlap`), the root
    of ``α₁(p) − α₂(p)`` by Brent's
    method (to ``root_rtol`` in p; each α re-located by continuing its line, :func:`_alpha_at`), kept where the
    two lines share one branch point there and not both (two copies of one line meet everywhere). Returns a list
    of :class:`TriplePoint`, one per meeting point (the first pair found of three lines that meet at one point).
    A bracket in which a line cannot be continued is skipped with a warning."""
    from scipy import optimize  # lazy: start-up (docs/architecture.md)

    solve_kw = dict(solve_kw or {})
    crossings = [(k, line) for k, line in enumerate(lines) if line.kind == "crossing"]
    found = []
    for i, (k1, l1) in enumerate(crossings):
        for k2, l2 in crossings[i + 1:]:
            rows = _overlap(l1, l2)
            if rows.shape[0] < 2 or same_line(l1, l2):
                continue
            d = rows[:, 1] - rows[:, 2]
            for j in range(rows.shape[0] - 1):
                if not d[j] * d[j + 1] < 0.0:
                    continue
                memo = {}

                def h(p):
                    if p not in memo:
                        a = _alpha_at(model, name, l1, p, solve_kw)
                        b = _alpha_at(model, name, l2, p, solve_kw)
                        memo[p] = (math.nan if a is None or b is None else a[0] - b[0], a, b)
                    if not math.isfinite(memo[p][0]):
                        raise ValueError("a crossing is lost inside the bracket")
                    return memo[p][0]

                try:
                    p_star = float(optimize.brentq(h, rows[j, 0], rows[j + 1, 0], xtol=1e-14,
                                                   rtol=active().root_rtol))
                    h(p_star)
                except ValueError:
                    logger.warning("the crossing lines %s and %s change order between %s = %g and %g, but a line "
                                   "could not be continued there: no triple point located", " -> ".join(l1.branches),
                                   " -> ".join(l2.branches), name, rows[j, 0], rows[j + 1, 0])
                    continue
                _, a, b = memo[p_star]
                m = model_at(model, name, p_star)
                (ra, rb), (rc, rd) = a[1], b[1]

                def same(r1, r2):
                    return (r1 is None and r2 is None) or (r1 is not None and r2 is not None
                                                           and same_point(m, a[0], r1, r2))
                if same(ra, rc) and same(rb, rd):
                    continue  # one pair of branches: the same line
                if not any(same(r1, r2) for r1 in (ra, rb) for r2 in (rc, rd)):
                    continue  # two crossings of four branches that pass one point: not three of equal f
                tol = active().triple_rtol
                if any(abs(t.parameter - p_star) <= tol * max(1.0, abs(p_star))
                       and abs(t.alpha - a[0]) <= tol * max(1.0, abs(a[0])) for t in found):
                    continue  # a third line through a point already found
                found.append(TriplePoint(p_star, 0.5 * (a[0] + b[0]), (k1, k2), (l1.branches, l2.branches),
                                         a[1] + b[1]))
    return found


def third_lines(model, name, lines, triples, values, solve_kw=None) -> list:
    """The first-order lines that start at a triple point and were not traced: of the three crossings of the
    three branches there, the one between the two branches the point's two lines do not share (e.g. a transition
    between two sheets that merge inside the range, in neither end's sweep: two hidden layers, Δ ∈ [0.05, 0.2],
    the lower and the upper ``layers_1_2`` sheets), followed from
    the point through the requested ``values`` on the side where it is a phase boundary (on the other, the third
    branch has the larger free entropy: :func:`_beaten`) by :func:`~replica.continuation.codim2.trace_crossing_line`
    (a side where it is lost at once gives nothing). Returns the new lines."""
    from .codim2 import trace_crossing_line  # codim2 imports this module's callers' helpers: here, lazily

    values = np.asarray(values, dtype=float)
    solve_kw = dict(solve_kw or {})
    out = []
    for t in triples:
        if len(_through(model, name, lines, t, solve_kw)) >= 3:
            continue  # the third line is traced already (from the last value)
        m = model_at(model, name, t.parameter)
        named = list(zip(t.results, t.branches[0] + t.branches[1]))
        distinct = []  # (result or None for the universal branch, name)
        for r, label in named:
            if not any((r is None and d is None) or (r is not None and d is not None and same_point(m, t.alpha, d, r))
                       for d, _ in distinct):
                distinct.append((r, label))
        if len(distinct) != 3:
            continue

        def index(r):
            return next(i for i, (d, _) in enumerate(distinct) if (r is None and d is None) or (
                r is not None and d is not None and same_point(m, t.alpha, d, r)))

        used = {frozenset((index(t.results[0]), index(t.results[1]))), frozenset((index(t.results[2]), index(t.results[3])))}
        third = [pair for pair in (frozenset((0, 1)), frozenset((0, 2)), frozenset((1, 2))) if pair not in used]
        if len(third) != 1:
            continue
        i, j = sorted(third[0], key=lambda k: distinct[k][0] is not None)  # the universal branch first
        (ra, na), (rb, nb) = distinct[i], distinct[j]
        (rc, _), = [distinct[k] for k in range(3) if k not in (i, j)]
        for side in (values[values > t.parameter], values[values < t.parameter][::-1]):
            if side.size == 0 or _beaten(model, name, t, side[0], ra, rb, rc, solve_kw):
                continue  # no value there, or the third branch is above the crossing: a metastable piece
            line = trace_crossing_line(m, name, np.concatenate([[t.parameter], side]), t.alpha, ra, rb, solve_kw)
            line.branches = (na, nb)
            if len(line.points) > 1:
                out.append(line)
    return out


def _through(model, name, lines, t, solve_kw):
    """The crossing lines of ``lines`` through the triple point ``t``: their α at its parameter value, re-located
    by each line's own locator, is its α to ``triple_rtol``."""
    out = []
    for line in lines:
        if line.kind != "crossing":
            continue
        got = _alpha_at(model, name, line, t.parameter, solve_kw)
        if got is not None and abs(got[0] - t.alpha) <= active().triple_rtol * max(1.0, abs(t.alpha)):
            out.append(line)
    return out


def _beaten(model, name, t, toward, ra, rb, rc, solve_kw):
    """Whether, a little beyond the triple point ``t`` towards the parameter value ``toward`` (a quarter of the way,
    at most ``triple_rtol``·10³ relative), the branch ``rc`` has a larger free entropy than the crossing of
    ``ra`` (None: the universal branch) and ``rb`` there: that side of the crossing line is metastable."""
    step = min(0.25 * abs(toward - t.parameter), 1e3 * active().triple_rtol * max(1.0, abs(t.parameter)))
    p = t.parameter + math.copysign(step, toward - t.parameter)
    m = model_at(model, name, p)
    got = crossing_at(m, m, t.alpha, None if ra is None else ra.x, rb.x, search_window(t.alpha, None), solve_kw)
    if got is None:
        return False
    c = correct(m, got[0], np.asarray(rc.x, dtype=float), solve_kw).result if rc is not None else m.solve_universal(got[0])
    if c is None or "state" not in c.info:
        return False
    f = float(got[2].info["state"].free_entropy)
    return float(c.info["state"].free_entropy) > f + active().metastable_margin * max(1.0, abs(f))


def _state(model, alpha, r):
    st = r.info.get("state") if hasattr(r, "info") else None
    return st if st is not None else model.state(alpha, np.asarray(r.x, dtype=float))


def mark_metastable(model, name, lines, triples, solve_kw=None) -> None:
    """Set ``line.metastable`` (a list of bool, one per point) on every line of ``lines``: True on a crossing line
    beyond a triple point where a third branch has a larger free entropy than the two that cross (there the
    crossing is one of metastable branches, not a phase boundary); False elsewhere.

    For each triple point the crossing lines through it are those whose α at its parameter value (re-located by
    the line's own locator) is its α to ``triple_rtol``; on each side of it, each such line's traced point nearest to it is
    compared with the branch points of the other lines' nearest points on that side, corrected at the line's
    ``(p, α)``: a distinct one with a larger free entropy marks the line's points on that side."""
    solve_kw = dict(solve_kw or {})
    for line in lines:
        line.metastable = [False] * len(line.points)
    for t in triples:
        through = _through(model, name, lines, t, solve_kw)
        for side in (-1.0, 1.0):
            nearest = {}
            for line in through:
                pts = [(k, pt) for k, pt in enumerate(line.points) if (pt.parameter - t.parameter) * side > 0
                       and pt.results and pt.results[-1] is not None]
                if pts:
                    nearest[id(line)] = min(pts, key=lambda kp: abs(kp[1].parameter - t.parameter))
            for line in through:
                if id(line) not in nearest:
                    continue
                _, pt = nearest[id(line)]
                m = model_at(model, name, pt.parameter)
                own = [r for r in pt.results if r is not None]
                f_own = max(float(_state(m, pt.alpha, r).free_entropy) for r in own)
                if len(own) < len(pt.results):  # the universal branch crosses
                    f_own = max(f_own, float(m.solve_universal(pt.alpha).info["state"].free_entropy))
                higher = False
                for other in through:
                    if other is line or id(other) not in nearest:
                        continue
                    for r in nearest[id(other)][1].results:
                        if r is None:
                            continue
                        c = correct(m, pt.alpha, np.asarray(r.x, dtype=float), solve_kw).result
                        if c is None or "state" not in c.info or any(same_point(m, pt.alpha, c, _Point(o, m, pt.alpha))
                                                                    for o in own):
                            continue
                        higher |= float(c.info["state"].free_entropy) > f_own + active().metastable_margin * max(
                            1.0, abs(f_own))
                if higher:
                    for k, q in enumerate(line.points):
                        if (q.parameter - t.parameter) * side > 0:
                            line.metastable[k] = True


class _Point:
    """A branch point with its state, for :func:`~replica.continuation.curves.same_point`."""

    def __init__(self, r, model, alpha):
        self.x = np.asarray(r.x, dtype=float)
        self.info = {"state": _state(model, alpha, r)}
