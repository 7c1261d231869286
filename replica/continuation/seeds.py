"""Seeds of the continuation: damped passes along the grid, saddles left along their unstable direction, and
the curves traced from each seed and from the jumps at their ends."""

from __future__ import annotations

import logging
import math

import numpy as np

from ..interface import hook
from .branchpoints import branch_points, switch_branches
from .correctors import check_step
from .curves import jump_seeds, same_point, trace_curve
from .operators import stability, unstable_direction
from .problem import is_found, is_labelled, is_universal, overlaps_of, unknowns
from .settings import active
from .stepper import advance

__all__ = ["routed_solve", "damped_pass", "escape_saddle", "curve_through", "add_curve", "degenerate_switches"]

logger = logging.getLogger(__name__)


def routed_solve(cache, key, i, alpha, compute):
    """Run ``compute()`` directly, or through the resume hook ``cache`` (see :func:`sweep`)."""
    if cache is None:
        return compute()
    return cache(key, i, alpha, compute)


def damped_pass(model, alphas, order, overlaps0, start, key, curves, solve_kw, pbar, cache):
    """One damped pass along ``order`` from the start ``overlaps0``, with warm starts; every
    stable non-universal point it reaches that lies on no traced branch is traced at once
    (appended to ``curves``).

    Where the pass's previous point lies on a traced branch whose point at the next α is
    linearly stable, the damped iteration is not run: from a warm start on a stable branch
    it converges to that branch's next point (the grid step is taken as small compared with
    the basin of attraction), so the pass simply follows the branch. Where that branch ends
    (fold or bifurcation) before the next α, the pass goes where the system jumps at that end
    (the curve its jump seed landed on, :func:`jump_seeds`, if it is stable at the next α; the
    universal point if the jump landed there): a quasi-static sweep through the end, instead of a
    damped iteration from the previous point across the ghost of the fold.
    """
    warm, on = None, None
    previous = None
    for i in order:
        if pbar is not None:
            pbar.update(1)
        if on is not None and i in on.results and on.stability.get(i, math.nan) < 1.0:
            warm, previous = on.results[i].x, i
            continue
        if on is not None and previous is not None and i not in on.results:
            direction = 1 if i > previous else -1
            end = on.ends.get(direction)
            target = on.jumps.get(direction)
            between = end is not None and np.isfinite(end.alpha) and \
                min(alphas[previous], alphas[i]) < end.alpha < max(alphas[previous], alphas[i])
            if between and target is not None and target.is_universal:
                warm, on, previous = None, None, i
                continue
            if between and target is not None and i in target.results \
                    and target.stability.get(i, math.nan) < 1.0:
                warm, on, previous = target.results[i].x, target, i
                continue
        previous = i
        res = routed_solve(cache, key, i, alphas[i],
                     lambda a=alphas[i], w=warm: model.solve_from(a, overlaps0, w, start=start, **solve_kw))
        if not is_found(res):
            # branch lost (spinodal) or failure: later points restart from the fresh start
            warm, on = None, None
            continue
        warm = res.x
        on = next((c for c in curves if c.matches(i, res, model=model, alpha=alphas[i])), None)
        if on is not None:
            continue
        if not stability(model, alphas[i], res.x, order=1) < 1.0:
            # not an attractor of the damped iteration (a Newton polish can land on a saddle next to a slow
            # ghost, and an exactly invariant set holds the iteration on a saddle): leave it along the
            # unstable direction; what is still unstable is not a seed
            res = escape_saddle(model, float(alphas[i]), res, start, solve_kw)
            if res is None:
                logger.debug("unstable point from start %s at alpha = %g is not a seed", start, alphas[i])
                continue
            warm = res.x
            on = next((c for c in curves if c.matches(i, res, model=model, alpha=alphas[i])), None)
            if on is not None:
                continue
        on = add_curve(model, alphas, float(alphas[i]), res, curves, solve_kw)


def escape_saddle(model, alpha, res, start, solve_kw):
    """A linearly stable point reached by the damped iteration from the unstable converged point ``res``
    displaced by ``saddle_escape`` along its unstable eigenvector, or None.

    Round-off displaces a damped iteration from such a saddle only where the map's kernels are inexact
    at the invariant set (``g'(0)`` computed with cancellation), so the step is taken explicitly: the
    same branches with exact and inexact kernels. The overlaps of an invariant set sit at their lower
    bound 0 (the map clips them), and zero-mass nodes (probes, the empty panel of a front at 0) give a
    degenerate unstable eigenvalue whose eigenvector mixes signs, so the step is ``|v|``, repeated at most
    ``saddle_rounds`` times while the point is still unstable. A point with no moving entry at 0 is
    not on such a set: None at once (it is no seed, as before)."""
    project = hook(model, "project")
    if not np.any(np.asarray(res.x, dtype=float)[unknowns(model, res.x)] == 0.0):
        return None  # no entry at its bound: not held on an invariant set
    for _ in range(active().saddle_rounds):
        found = unstable_direction(model, alpha, res.x)
        if found is None:
            return None
        idx, vec = found
        x = np.array(res.x, dtype=float)
        x[idx] += active().saddle_escape * np.abs(vec)
        if project is not None:
            x = project(x)
        res = model.solve_from(alpha, x, x, start=start, **solve_kw)
        if not is_found(res):
            return None
        if stability(model, alpha, res.x, order=1) < 1.0:
            logger.debug("start %s at alpha = %g: saddle left along its unstable direction", start, alpha)
            return res
    return None


def curve_through(model, alphas, curves, alpha, result, solve_kw):
    """The traced curve that passes through the point ``result`` at ``alpha`` (off the grid), or None.

    Every curve that exists at ``alpha`` is continued there from the nearest of its grid points and
    continuation steps (a few corrector steps; from the next nearest, up to ``curve_through_tries``,
    where that fails, and as a last resort by the damped iteration warm-started at the nearest point when
    it is linearly stable and within two ``jump_offset`` of ``alpha``);
    the point lies on it when the overlaps agree to ``distinct_tol``. Avoids tracing a whole branch
    again to learn that a jump landed on it (three hidden layers: a jump next to the branch point of
    ``layers_1_2`` at α ≈ 3.878 was otherwise traced as a short extra branch)."""
    ov = overlaps_of(result)
    for c in curves:
        if not c.lo(alphas) <= alpha <= c.hi(alphas):
            continue
        nodes = [(float(alphas[i]), r) for i, r in c.results.items()] + c.trail
        if not nodes:
            continue
        nearest = sorted(nodes, key=lambda t: abs(t[0] - alpha))
        for a0, r0 in nearest[:active().curve_through_tries]:
            r = r0 if a0 == alpha else advance(model, a0, r0, float(alpha), None, solve_kw)[0]
            if r is not None:
                break
        else:
            # continuation fails from every point tried (next to a branch point, where the corrector
            # meets a near-singular Jacobian): the damped iteration warm-started at the nearest point, when
            # that point is within two jump offsets and linearly stable (the damped iteration then stays on
            # its curve), kept where it lands within one accepted continuation step of it (:func:`check_step`)
            a0, r0 = nearest[0]
            r = None
            if abs(a0 - alpha) <= 2.0 * active().jump_offset * max(1.0, abs(alpha)) \
                    and stability(model, a0, r0.x, order=1) < 1.0:
                r = model.solve_from(float(alpha), None, r0.x, start="continuation", **solve_kw)
                ov0 = overlaps_of(r0)
                if not (is_found(r) and check_step(r, ov0, np.abs(ov0) > active().support_overlap) is None):
                    r = None
        if r is not None and same_point(model, alpha, r, result):
            return c
    return None


def add_curve(model, alphas, a0, seed, curves, solve_kw):
    """Trace the curve through ``seed`` unless continuation joins it to a traced one, then
    trace what the system jumps to at its ends (:func:`jump_seeds`, recorded in ``jumps`` of the
    curve it leaves) and the curves that cross it at its branch points (located and switched to by
    :mod:`replica.continuation.branchpoints`, recorded in ``branch_points``), and so on for every new
    curve; returns the curve the seed lies on (None if it touches no grid point)."""
    new = trace_curve(model, alphas, a0, seed, solve_kw)
    if new is None:
        return None
    same = next((c for c in curves if any(c.matches(j, rj, model=model, alpha=alphas[j])
                                           for j, rj in new.results.items())), None)
    if same is not None:  # continuation connected it to a traced curve: one branch
        logger.debug("seed %s at alpha = %g joins a traced branch", seed.start, a0)
        return same
    curves.append(new)
    queue = [new]
    while queue and len(curves) < active().max_branches:
        source = queue.pop(0)
        for direction, a, r in jump_seeds(model, alphas, source, solve_kw):
            known = curve_through(model, alphas, curves, a, r, solve_kw)
            if known is not None:  # the jump lands on a traced branch: nothing new to trace
                source.jumps[direction] = known
                continue
            c = trace_curve(model, alphas, a, r, solve_kw)
            if c is None:
                continue
            known = next((d for d in curves if any(d.matches(j, rj, model=model, alpha=alphas[j])
                                                   for j, rj in c.results.items())), None)
            source.jumps[direction] = c if known is None else known
            if known is None:
                curves.append(c)
                queue.append(c)
        cache = {}
        first = next(iter(source.results.values()), None)
        # curves with labels that change along them are followed by damped steps, not by the continuation
        # that branch points need (:func:`~replica.continuation.problem.is_labelled`)
        labelled = first is None or is_labelled(model, first.x)
        source.branch_points = [] if labelled else branch_points(model, alphas, source, solve_kw, cache)
        for bp in source.branch_points:
            for a, r in switch_branches(model, alphas, source, bp, solve_kw, cache):
                if len(curves) >= active().max_branches or curve_through(model, alphas, curves, a, r, solve_kw):
                    continue
                c = trace_curve(model, alphas, a, r, solve_kw)
                if c is None or any(d.matches(j, rj, model=model, alpha=alphas[j])
                                    for d in curves for j, rj in c.results.items()):
                    continue
                logger.debug("branch point at alpha = %.10g: a crossing curve traced", bp.alpha)
                curves.append(c)
                queue.append(c)
    return new


def degenerate_switches(model, alphas, curves, solve_kw):
    """Trace the curves that bifurcate at the degenerate branch points of ``curves`` where no traced curve has
    a bifurcation end (within 1e-6, relative), appending them to ``curves``.

    Several eigenvalues cross 1 together there (the zero-mass nodes of a front at its bound 0 move alike: their
    null space gives no direction to switch along, :func:`~replica.continuation.branchpoints.switch_branches`).
    The curve that bifurcates is the attractor the damped iteration reaches from the curve's own, unstable
    point beyond the branch point: at ``degenerate_switch_offset`` beyond it on the unstable side (away from the
    curve's nearest grid point below it where that one is stable, towards it where not; the grid point above
    where there is none below; nothing where its stability is not finite), the damped iteration warm-started at
    the curve's nearest traced point lands on the saddle or next to it, and :func:`escape_saddle` leaves it
    along the unstable direction. The damped passes find such a curve only where a grid point lies on it; this
    finds it on coarse grids too (two hidden layers with Gaussian readouts: the curve leaving the partially
    specialized sheet at its branch point α = 2.0274, on ``0.5:4:8``, ``1.025:3.025:5`` and six other grids
    as on ``1.98:2.06:9``). The solves do not go through the sweep's resume cache (a resumed sweep repeats
    them)."""
    s = active()
    for c in list(curves):
        for bp in c.branch_points:
            if bp.kind != "degenerate_branch_point" or len(curves) >= s.max_branches:
                continue
            tol = 1e-6 * max(1.0, abs(bp.alpha))
            if any(e.kind == "bifurcation" and abs(e.alpha - bp.alpha) <= tol
                   for d in curves if d is not c for e in d.ends.values()):
                continue
            below = [i for i in c.results if alphas[i] < bp.alpha]
            above = [i for i in c.results if alphas[i] > bp.alpha]
            nearest = max(below) if below else min(above) if above else None
            value = math.nan if nearest is None else c.stability.get(nearest, math.nan)
            if not math.isfinite(value):
                continue
            # the unstable side: away from a stable grid point, towards an unstable one
            side = (1.0 if value < 1.0 else -1.0) * (1.0 if below else -1.0)
            a = bp.alpha + side * s.degenerate_switch_offset * max(1.0, abs(bp.alpha))
            if not alphas[0] < a < alphas[-1]:
                continue
            nodes = [(float(alphas[i]), r) for i, r in c.results.items()] + c.trail
            _, near = min(nodes, key=lambda t: abs(t[0] - a))
            res = model.solve_from(a, None, near.x, start=c.seed, **solve_kw)
            if not is_found(res):
                continue
            if not stability(model, a, res.x, order=1) < 1.0:
                res = escape_saddle(model, a, res, c.seed, solve_kw)
                if res is None:
                    continue
            if is_universal(res) or curve_through(model, alphas, curves, a, res, solve_kw) is not None:
                continue
            res.start = c.seed
            logger.debug("degenerate branch point at alpha = %.10g: the curve leaving it traced from alpha = %g",
                         bp.alpha, a)
            add_curve(model, alphas, a, res, curves, solve_kw)
