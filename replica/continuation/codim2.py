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
with the sweeps at those values. A line ends where the step in p falls below ``min_step`` (relative): the
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
from .correctors import correct
from .events import envelope_slope, locate_crossing
from .problem import is_universal
from .settings import active
from .stepper import advance

__all__ = ["LinePoint", "PhaseLine", "model_at", "fold_at", "crossing_at", "trace_fold_line", "trace_crossing_line"]

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
        ``fold`` (a spinodal: where a branch begins or ends) or ``crossing`` (equal free entropies of two
        branches: a first-order transition line).
    parameter : str
        The name of the second parameter (``delta``, ``gamma``, …).
    points : list of LinePoint
        In the order traced (increasing or decreasing p), every accepted step.
    end : str
        Why the line ends: ``range`` (the last requested p was reached) or ``lost`` (the step in p fell below
        ``min_step`` there: the fold or crossing disappears, or meets another line).
    """

    kind: str
    parameter: str
    points: list = field(default_factory=list)
    end: str = "range"

    def at(self, value) -> float:
        """α of the line at a requested parameter value (exactly hit by the continuation); NaN if absent."""
        for pt in self.points:
            if pt.parameter == value:
                return pt.alpha
        return math.nan


def model_at(model, name, value):
    """The model at ``name = value`` (its ``with_parameter`` hook).

    Raises
    ------
    ValueError
        The model has no such hook (one line), no such parameter, or refuses the value.
    """
    make = hook(model, "with_parameter")
    if make is None:
        raise ValueError(f"{type(model).__name__} cannot be copied at another {name} (no with_parameter hook)")
    return make(name, value)


def fold_at(model, alpha, x, side, width, solve_kw):
    """The fold of the curve through ``x`` near ``alpha``, on the side ``side`` of which the curve exists
    (+1: for α above the fold, a branch's start; −1: below it, a branch's end): the curve solved at
    ``alpha + side·width`` (Newton from ``x``), then continued towards ``alpha − side·width`` until it ends,
    the end located as the sweep locates it. Returns ``(α_fold, result at the fold)`` or None where the
    curve is not found or does not end in that window."""
    start = alpha + side * width
    if not start > 0.0:
        return None
    r = correct(model, start, x, solve_kw).result
    if r is None or is_universal(r):
        return None
    target = max(alpha - side * width, 0.5 * start) if side > 0 else alpha - side * width
    _, _, failure = advance(model, start, r, target, None, solve_kw)
    if failure is None:
        return None
    a_end, r_end, why, _ = failure
    if why == "support":  # the curve ends by support loss there, not at a fold
        return None
    return float(a_end), r_end


def crossing_at(model_a, model_b, alpha, xa, xb, width, solve_kw):
    """The crossing of the free entropies of two curves (``xa`` on ``model_a``'s universal branch when it is
    None) near ``alpha``: both solved at ``alpha`` (Newton), then the root of ``f_b − f_a`` in
    ``[alpha − width, alpha + width]`` by :func:`~replica.continuation.events.locate_crossing` (each curve
    continued from ``alpha``). Returns ``(α_c, result a, result b)`` or None."""
    points = {}

    def solve(which, a):
        if which == "a" and xa is None:
            return model_a.solve_universal(a)
        m, x = (model_a, xa) if which == "a" else (model_b, xb)
        if ("base", which) not in points:
            r0 = correct(m, alpha, x, solve_kw).result
            if r0 is None:
                return None
            points[("base", which)] = r0
        r0 = points[("base", which)]
        if a == alpha:
            return r0
        return advance(m, alpha, r0, a, None, solve_kw)[0]

    values = {}

    def value(a):
        if a in values:
            return values[a]
        values[a] = _value(a)
        return values[a]

    def _value(a):
        ra, rb = solve("a", a), solve("b", a)
        if ra is None or rb is None:
            return math.nan, None
        sa, sb = ra.info["state"], rb.info["state"]
        slope = envelope_slope(model_b, a, sb) - envelope_slope(model_a, a, sa)
        points[a] = (ra, rb)
        return float(sb.free_entropy) - float(sa.free_entropy), slope

    if solve("a", alpha) is None or solve("b", alpha) is None:
        return None
    lo, hi = max(alpha - width, 0.5 * alpha), alpha + width
    for _ in range(4):  # a side where a curve does not exist (below a branch's fold): halve it
        if math.isfinite(value(lo)[0]) and math.isfinite(value(hi)[0]):
            break
        lo = lo if math.isfinite(value(lo)[0]) else 0.5 * (lo + alpha)
        hi = hi if math.isfinite(value(hi)[0]) else 0.5 * (hi + alpha)
    try:
        a_c = locate_crossing(value, lo, hi)
    except ValueError:
        return None
    if a_c not in points:
        value(a_c)
    if a_c not in points:
        return None
    ra, rb = points[a_c]
    return float(a_c), ra, rb


def _trace(kind, name, values, first, locate):
    """Natural continuation in the parameter through the requested ``values`` (sorted, starting at the value of
    ``first``). ``locate(p, alpha_pred, xs_pred, move) -> (alpha, results) or None``, ``move`` the predicted
    change of α. The first step is a sixteenth of the first interval (there is no secant yet to predict the
    line's slope), and the steps double after every success."""
    s = active()
    line = PhaseLine(kind, name, [first])
    p_targets = list(values[1:])
    h = abs(p_targets[0] - first.parameter) / 16.0 if p_targets else 0.0
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
        got = locate(p, alpha, xs, abs(alpha - last.alpha))
        if got is None:
            h = 0.5 * abs(step)
            if h < s.min_step * max(1.0, abs(last.parameter)):
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
    ``values[0]`` the model's own). ``width`` (default ``10·jump_offset·max(1, α)`` plus a tenth of the
    predicted change of α): the window of :func:`fold_at` around each prediction. Returns a :class:`PhaseLine` of kind ``fold``."""
    solve_kw = dict(solve_kw or {})

    def locate(p, a, xs, move):
        w = width if width is not None else 10.0 * active().jump_offset * max(1.0, abs(a)) + 0.1 * move
        got = fold_at(model_at(model, name, p), a, xs[0], side, w, solve_kw)
        return None if got is None else (got[0], (got[1],))

    return _trace("fold", name, list(values), LinePoint(float(values[0]), float(alpha), (result,)), locate)


def trace_crossing_line(model, name, values, alpha, result_a, result_b, solve_kw=None, *, width=None):
    """Follow the crossing at ``alpha`` of the free entropies of two curves through ``result_a`` (None: the
    universal branch) and ``result_b`` through the requested parameter ``values`` (sorted, ``values[0]`` the
    model's own). ``width`` (default ``10·jump_offset·max(1, α)`` plus a tenth of the predicted change of α):
    the bracket of :func:`crossing_at` around each prediction (halved on a side where a curve is not found). Returns a :class:`PhaseLine` of kind ``crossing``."""
    solve_kw = dict(solve_kw or {})

    def locate(p, a, xs, move):
        m = model_at(model, name, p)
        w = width if width is not None else 10.0 * active().jump_offset * max(1.0, abs(a)) + 0.1 * move
        got = crossing_at(m, m, a, xs[0], xs[1], w, solve_kw)
        return None if got is None else (got[0], (None if result_a is None else got[1], got[2]))

    first = LinePoint(float(values[0]), float(alpha), (result_a, result_b))
    return _trace("crossing", name, list(values), first, locate)
