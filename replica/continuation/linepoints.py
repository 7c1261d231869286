"""Locators of the points of phase lines at one value of the second parameter (:mod:`replica.continuation.codim2`):
the model copied at that value, a fold re-located near a prediction, a crossing of two free entropies
re-located near a prediction, and the search window around a prediction."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

import numpy as np

from ..interface import hook
from .correctors import correct
from .curves import bifurcation_end, same_point
from .events import envelope_slope, locate_crossing
from .folds import bordered_solve, refine_fold
from .problem import is_universal, unknowns
from .settings import active, using
from .stepper import advance

__all__ = ["LinePoint", "PhaseLine", "model_at", "fold_at", "bifurcation_at", "crossing_at", "search_window",
           "line_window", "grid_point", "cusp_discriminant",
           "jumped"]

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
        equilibrium) or ``bifurcation`` (a branch's end where its learned overlaps vanish, where no branch point of
        its host is located).
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
        if h < s.line_min_step * max(1.0, abs(last.parameter)):  # after a target within rounding of the last point
            h = abs(target - last.parameter) / 4.0
        step = math.copysign(min(h, abs(target - last.parameter)), target - last.parameter)
        p = target if abs(step) >= abs(target - last.parameter) * (1 - 1e-12) or last.parameter + step == \
            last.parameter else last.parameter + step  # (a step below the parameter's rounding: the target itself)
        if len(line.points) >= 2 and abs(last.parameter - line.points[-2].parameter) >= \
                s.line_min_step * max(1.0, abs(last.parameter)):  # secant predictor in (p, α, x), not through two
            # points within rounding of one value
            prev, secant = line.points[-2], True
            t = (p - last.parameter) / (last.parameter - prev.parameter)
            alpha = last.alpha + t * (last.alpha - prev.alpha)
            xs = tuple(None if x1 is None else np.asarray(x1.x) + t * (np.asarray(x1.x) - np.asarray(x0.x))
                       for x0, x1 in zip(prev.results, last.results))
        else:
            alpha, xs, secant = last.alpha, tuple(None if r is None else np.asarray(r.x) for r in last.results), False
        got = locate(p, alpha, xs, abs(alpha - last.alpha) if secant else None)
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


def fold_at(model, alpha, x, side, width, solve_kw, geometry=None):
    """The fold of the curve through ``x`` near ``alpha``, on the side ``side`` of which the curve exists
    (+1: for α above the fold, a branch's start; −1: below it, a branch's end).

    With the ``geometry`` of a nearby fold (``{"direction": u, "curvature": c}``, what
    :func:`~replica.continuation.folds.refine_fold` records): three points of the curve around the predicted
    fold, at ``u·(x' − x) = −δ, 0, δ`` (the bordered system, α free; ``δ = √(width/c)``), handed to the fold
    refinement (δ at most half a continuation step ``max_move`` in the overlaps, quartered where a side fails).
    Otherwise, or where that fails: the curve solved at ``alpha + side·width`` (Newton from
    ``x``), then continued towards ``alpha − side·width`` until it ends, the end located as the sweep locates
    it. Returns ``(α_fold, result at the fold)`` or None where the curve is not found or does not end in that
    window."""
    if geometry is not None and geometry.get("curvature", 0.0) > 0.0:
        got = _fold_from_geometry(model, alpha, x, side, width, geometry, solve_kw)
        if got is not None:
            return got
    target = max(alpha - side * width, 0.5 * (alpha + side * width)) if side > 0 else alpha - side * width
    got = _end_of_curve(model, alpha + side * width, x, target, solve_kw)
    if got is None:
        return None
    (a_end, r_end, why, _), _ = got
    if why == "support":  # the curve ends by support loss there, not at a fold
        return None
    return float(a_end), r_end


def _end_of_curve(model, start, x, target, solve_kw):
    """``(failure, result at start)``: the curve through ``x`` solved at ``start`` (Newton) and continued towards
    ``target`` until it ends (:func:`~replica.continuation.stepper.advance`'s failure: ``(α, result, why,
    learned)``), or None where it is not found there or does not end before ``target``."""
    if not start > 0.0:
        return None
    r = correct(model, start, x, solve_kw).result
    if r is None or is_universal(r):
        return None
    _, _, failure = advance(model, start, r, target, None, solve_kw)
    return None if failure is None else (failure, r)


def bifurcation_at(model, alpha, x, side, inside, solve_kw):
    """The end near ``alpha`` of the curve through ``x`` where its learned overlaps vanish (a bifurcation: the curve
    merges into one with fewer learned overlaps), on the side ``side`` of which the curve exists (+1: a branch's
    start): the curve solved at ``alpha + side·inside`` (Newton from ``x``, a point of the curve about that far
    inside it: at the end itself the curve and its host coincide, and Newton's method from there may fall onto
    the host), continued towards ``alpha − side·inside`` until it ends, the end located as the sweep locates it
    (:func:`~replica.continuation.curves.bifurcation_end`). Returns ``(α_end, result at the end, result inside)`` or
    None where the curve is not found, does not end in that window, or ends at a fold."""
    target = max(alpha - inside, 0.5 * alpha) if side > 0 else alpha + inside
    got = _end_of_curve(model, alpha + side * inside, x, target, solve_kw)
    if got is None:
        return None
    failure, r = got
    a_end = bifurcation_end(model, failure, -side, solve_kw)
    return None if a_end is None else (float(a_end), failure[1], r)


def _fold_from_geometry(model, alpha, x, side, width, geometry, solve_kw):
    """The fast path of :func:`fold_at`: three bordered solves around the predicted fold, then its refinement."""
    x = np.asarray(x, dtype=float)
    idx = unknowns(model, x)
    u = np.asarray(geometry["direction"], dtype=float)
    if u.shape != idx.shape:
        return None
    # points a width apart in α, and no overlap moved by more than half a continuation step (max_move)
    top = float(np.max(np.abs(u), initial=0.0))
    delta = min(math.sqrt(width / geometry["curvature"]), 0.5 * active().max_move / top if top > 0 else math.inf)
    for _ in range(3):  # a side that fails (the curve leaves the domain there): closer points
        accepted = []
        for xi in (-delta, 0.0, delta):
            x0 = x.copy()
            x0[idx] += xi * u
            got = bordered_solve(model, alpha + side * width, x0, u, x[idx], xi, solve_kw)
            if got is None:
                break
            accepted.append(got)
        if len(accepted) == 3:
            break
        delta *= 0.25
    else:
        return None
    # refine_fold reads the points as a continuation approaching the fold against ``side``
    got = refine_fold(model, accepted, -float(side), solve_kw)
    if got is None or not all(np.isfinite(got[1].x)):
        return None
    return float(got[0]), got[1]


def crossing_at(model_a, model_b, alpha, xa, xb, width, solve_kw):
    """The crossing of the free entropies of two curves (``xa`` on ``model_a``'s universal branch when it is
    None) near ``alpha``: both solved at ``alpha`` (Newton), then the root of ``f_b − f_a`` in
    ``[alpha − width, alpha + width]``: Newton steps with the envelope slope from ``alpha`` until a step is
    below ``crossing_rtol`` (relative), else :func:`~replica.continuation.events.locate_crossing` on that
    bracket (each curve continued from ``alpha``). Returns ``(α_c, result a, result b)`` or None."""
    points, factors = {}, {"a": {}, "b": {}}  # each curve's factorized Jacobian, kept between its continuations

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
        # a curve that cannot be continued to ``a`` (next to where the two merge) fails at a step of 1e-6
        # (relative) instead of 1e-9: the crossing's precision comes from its Newton steps, not from this
        with using(replace(active(), min_step=max(active().min_step, 1e-6))):
            return advance(m, alpha, r0, a, None, solve_kw, jac_cache=factors[which])[0]

    values = {}

    def value(a):
        if a in values:
            return values[a]
        values[a] = _value(a)
        return values[a]

    def _value(a):
        ra, rb = solve("a", a), solve("b", a)
        if ra is None or rb is None or is_universal(rb) or (xa is not None and same_point(model_b, a, ra, rb)):
            return math.nan, None  # a curve lost, or both on one point: they no longer cross as two branches
        sa, sb = ra.info["state"], rb.info["state"]
        slope = envelope_slope(model_b, a, sb) - envelope_slope(model_a, a, sa)
        points[a] = (ra, rb)
        return float(sb.free_entropy) - float(sa.free_entropy), slope

    if solve("a", alpha) is None or solve("b", alpha) is None:
        return None
    lo, hi = max(alpha - width, 0.5 * alpha), alpha + width
    a = alpha
    for _ in range(8):  # Newton with the envelope slope from the prediction (it is good: a few steps)
        d, slope = value(a)
        if not (math.isfinite(d) and slope is not None and math.isfinite(slope) and slope != 0.0):
            break
        a_new = a - d / slope
        if not lo <= a_new <= hi:
            break
        if abs(a_new - a) <= active().crossing_rtol * max(1.0, abs(a)):  # the error is of second order
            if math.isfinite(value(a_new)[0]):
                ra, rb = points[a_new]
                return float(a_new), ra, rb
            break
        a = a_new
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


def search_window(alpha, move):
    """Half-width of the search around a predicted point of a line: ``10·jump_offset·max(1, α)`` plus a tenth of
    the predicted change of α; ten times that before a secant predicts the change (``move`` None)."""
    base = 10.0 * active().jump_offset * max(1.0, abs(alpha))
    return 10.0 * base if move is None else base + 0.1 * move


def cusp_discriminant(model, alpha, x, u, h, solve_kw):
    """Whether the curve through ``x`` (near ``alpha``) has two folds next to it: the points of the curve at
    ``u·(x' − x) = ξ`` for ξ in ``h·(−2, −1, 0, 1, 2)`` (bordered solves), a cubic ``α(ξ)`` fitted through
    them,
    and the discriminant ``a₂² − 3a₁a₃`` of its derivative (positive: ``dα/dξ`` has two roots, an S with two
    folds; negative: none). Returns ``(discriminant, cubic coefficients, highest first)`` or None where a
    bordered solve fails."""
    x = np.asarray(x, dtype=float)
    idx = unknowns(model, x)
    xs = h * np.arange(-2.0, 3.0)
    alphas = []
    for xi in xs:
        x0 = x.copy()
        x0[idx] += xi * u
        got = bordered_solve(model, alpha, x0, u, x[idx], float(xi), solve_kw)
        if got is None:
            return None
        alphas.append(got[0])
    a3, a2, a1, a0 = np.polyfit(xs, np.array(alphas), 3)
    return float(a2 * a2 - 3.0 * a1 * a3), (a3, a2, a1, a0)


def line_window(width, alpha, move, fails):
    """The search window of a line's locator: ``width`` or :func:`search_window`, halved after each failure in a
    row (at most 6 times): a shorter step in p needs a narrower window, and a wide one reaches past a short
    branch (two layers, Δ = 0.1: the second ``layers_1_2`` sheet spans α ∈ [1.996, 2.171], the first window
    0.4)."""
    return (width if width is not None else search_window(alpha, move)) * 0.5 ** min(fails[0], 6)


def grid_point(model, alphas, branch, alpha):
    """The branch's point at the grid α nearest ``alpha`` where it exists (Newton-polished), or None. Next to a
    fold Newton's method may fail (the Jacobian is nearly singular there: one hidden layer, tanh(2x), γ = 0.3,
    a grid point 1 % above the fold): then the model's own solver from the stored point, then the next grid
    points, nearest first. A solution counts only where it is the stored point (its moving unknowns within
    1e-6, or, re-solved with the stored point's labels, the same point: :func:`~replica.continuation.curves.same_point`),
    not another stationary point the iteration fell to."""
    ok = np.flatnonzero(branch["exists"])
    for i in ok[np.argsort(np.abs(alphas[ok] - alpha), kind="stable")][:3]:
        x = np.asarray(branch.points[int(i)], dtype=float)
        idx = unknowns(model, x)
        for kw in ({"method": "newton"}, {}):
            r = model.solve_from(float(alphas[i]), None, x, **kw)
            if not (r.converged and "state" in r.info and np.size(r.x) == x.size):
                continue
            if np.all(np.abs(np.asarray(r.x, dtype=float)[idx] - x[idx]) <= 1e-6 * np.maximum(1.0, np.abs(x[idx]))):
                return r
            stored = SimpleNamespace(x=x, info={"state": model.state(float(alphas[i]), x)})
            if same_point(model, float(alphas[i]), stored, r):
                return r  # the stored point on a finer rule (a solver with labels refines it: two layers, Δ = 0.07)
    return None


def jumped(model, alpha, x_pred, r) -> bool:
    """Whether the located branch point ``r`` lies farther than ``max_move`` (in its overlaps) from the predicted
    ``x_pred``: the corrector fell onto another sheet (two hidden layers, Δ = 0.083: the lower ``layers_1_2``
    sheet's crossing with ``layer_1`` taken for the upper one's, 2.4e-3 away in α)."""
    if x_pred is None or r is None or "state" not in r.info:
        return False
    try:
        ov = np.asarray(model.state(alpha, np.asarray(x_pred, dtype=float)).overlaps, dtype=float)
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return False
    return bool(np.max(np.abs(np.asarray(r.info["state"].overlaps, dtype=float) - ov), initial=0.0)
                > active().max_move)
