"""Curves (traced branches): tracing through a seed in both directions, their located ends, where the system
jumps beyond an end, and solving a curve at any α."""

from __future__ import annotations

import math

import numpy as np

from ..engine import DEFAULT_DAMPING
from ..interface import hook
from .correctors import correct
from .events import host_point, locate_bifurcation
from .operators import roots_on_host, stability
from .problem import is_found, is_labelled, is_universal, overlaps_of, unknowns
from .records import End
from .settings import active
from .stepper import advance

__all__ = ["Curve", "UniversalCurve", "UNIVERSAL", "same_point", "damped_step", "trace_labelled", "trace_curve",
           "bifurcation_end", "past_the_ghost", "jump_seeds", "point_on_curve",
           "solve_on_curve"]


class Curve:
    """A traced branch: Newton-corrected points on the grid and its two located ends."""

    #: the universal branch is :data:`UNIVERSAL`, not a traced curve
    is_universal = False

    def __init__(self, seed):
        self.seed = seed
        self.results = {}  # grid index -> FixedPointResult
        self.stability = {}  # grid index -> leading eigenvalue of the Jacobian
        self.ends = {}  # -1 (lower), +1 (upper) -> End
        self.jumps = {}  # -1, +1 -> the curve (possibly UNIVERSAL) the system goes to beyond that end
        self.trail = []  # every point (α, result) the continuation accepted, grid points or not
        self.branch_points = []  # located crossings of 1 by the leading eigenvalue (branchpoints.BranchPoint)

    def lo(self, alphas):
        e = self.ends.get(-1)
        return alphas[0] if e is None or not np.isfinite(e.alpha) else e.alpha

    def hi(self, alphas):
        e = self.ends.get(+1)
        return alphas[-1] if e is None or not np.isfinite(e.alpha) else e.alpha

    def matches(self, i, result, tol=None, *, model=None, alpha=None) -> bool:
        """Whether ``result`` is this curve's point at grid index ``i`` (overlaps within ``tol``).

        With ``model`` and ``alpha``: a point solved with other labels (another rule level of a
        profile solver, whose discretization moves it by ~1e-5) is first re-solved with this
        curve's labels (``model.relabel``), so that one sheet found twice is one branch."""
        r = self.results.get(i)
        return r is not None and same_point(model, alpha, r, result, tol)


class UniversalCurve:
    """The universal branch as a curve: solved exactly at every α (``model.solve_universal``), no ends, no
    traced points. One instance, :data:`UNIVERSAL`, stands for it wherever a curve is expected (the
    equilibrium's members, the jumps at the ends of traced curves)."""

    is_universal = True
    seed = "universal"

    def __init__(self):
        self.results, self.stability, self.ends, self.jumps, self.trail, self.branch_points = {}, {}, {}, {}, [], []

    def lo(self, alphas):
        return alphas[0]

    def hi(self, alphas):
        return alphas[-1]

    def __repr__(self):
        return "UNIVERSAL"


#: the universal branch as a curve
UNIVERSAL = UniversalCurve()


def same_point(model, alpha, r, result, tol=None) -> bool:
    """Whether the results ``r`` and ``result`` at ``alpha`` are one stationary point (overlaps within
    ``tol``, after re-solving ``result`` with the labels of ``r`` where they differ and the model can,
    ``model.relabel``)."""
    if tol is None:
        tol = active().distinct_tol
    d = float(np.max(np.abs(overlaps_of(r) - overlaps_of(result)), initial=0.0))
    if d < tol:
        return True
    relabel = hook(model, "relabel")
    if relabel is None or alpha is None or not d < active().relabel_distance:
        return False
    x = relabel(float(alpha), result.x, r.x)
    if x is None:
        return False
    ov = np.asarray(model.state(float(alpha), x).overlaps, dtype=float)
    return float(np.max(np.abs(overlaps_of(r) - ov), initial=0.0)) < tol


def damped_step(model, a, r, solve_kw):
    """The damped iteration warm-started at ``r`` (solvers with labels): the result at ``a`` if
    it is not the universal point, else None."""
    nxt = model.solve_from(a, None, r.x, start="continuation", **solve_kw)
    # the profile's front moves across the atoms (overlaps jump from 0 to O(1) at the front):
    # only a return to the universal point counts as leaving the curve
    ok = nxt.converged and "state" in nxt.info and not is_universal(nxt)
    return nxt if ok else None


def trace_labelled(model, alphas, i0, r0, solve_kw):
    """:func:`trace_curve` for solvers whose packed vector holds labels (the profile solver of
    :mod:`replica.readout_grid`): the curve is followed by the damped iteration with warm
    starts, and each end is located by bisection on the same step (to ``labelled_end_rtol``), each step of it
    limited to ``labelled_end_budget`` damped iterations (at damping 0.5; ``× 0.5/(1 − η)`` at damping η, by
    default ``replica.engine.DEFAULT_DAMPING``): one that has not converged by then is outside the curve (past a
    fold the iteration would crawl through the fold's ghost for ∝ 1/√(α − α_end) iterations)."""
    # the iterations a step needs grow like 1/(1 − η) with the damping η (the budget is for η = 0.5)
    eta = float(solve_kw.get("damping", DEFAULT_DAMPING))
    budget = int(math.ceil(active().labelled_end_budget * 0.5 / max(1.0 - eta, 1e-12)))
    bisect_kw = {**solve_kw, "max_iter": min(int(solve_kw.get("max_iter", budget)), budget)}
    curve = Curve(r0.start)
    curve.results[i0] = r0
    n = alphas.size
    for direction in (+1, -1):
        r, j = r0, i0 + direction
        while True:
            if not 0 <= j < n:
                curve.ends[direction] = End(math.nan, "grid", r, float(alphas[j - direction]))
                break
            nxt = damped_step(model, float(alphas[j]), r, solve_kw)
            if nxt is None:
                inside, outside, r_in = float(alphas[j - direction]), float(alphas[j]), r
                while abs(outside - inside) > active().labelled_end_rtol * max(1.0, abs(inside)):
                    mid = 0.5 * (inside + outside)
                    got = damped_step(model, mid, r_in, bisect_kw)  # a step that crawls past the end is outside
                    if got is None:
                        outside = mid
                    else:
                        inside, r_in = mid, got
                        curve.trail.append((mid, got))  # later solves near the end start from here
                ov = overlaps_of(r_in)
                small = float(np.max(np.abs(ov), initial=0.0)) < active().bifurcation_overlap
                kind = "bifurcation" if small else "fold"
                curve.ends[direction] = End(inside, kind, r_in, inside)
                break
            curve.results[j] = nxt
            r, j = nxt, j + direction
    curve.stability = {j: stability(model, alphas[j], r.x, order=1) for j, r in curve.results.items()}
    return curve


def trace_curve(model, alphas, a0, seed_result, solve_kw):
    """Follow the curve through ``seed_result`` (at ``a0``, a grid point or not) in both
    directions along the grid; None when the curve touches no grid point and does not end inside
    the grid on both sides."""
    if is_labelled(model, seed_result.x):
        on_grid = np.flatnonzero(alphas == a0)
        return trace_labelled(model, alphas, int(on_grid[0]), seed_result, solve_kw) if on_grid.size else None
    r0 = correct(model, a0, seed_result.x, solve_kw, newton_if_small=True).result
    if r0 is None or is_universal(r0) or \
            float(np.max(np.abs(overlaps_of(r0) - overlaps_of(seed_result)), initial=0.0)) > active().distinct_tol * 10:
        r0 = seed_result  # the damped point is the better estimate (Newton wandered off)
    curve = Curve(seed_result.start)
    curve.trail.append((float(a0), r0))
    n = alphas.size
    on_grid = np.flatnonzero(alphas == a0)
    if on_grid.size:
        curve.results[int(on_grid[0])] = r0
    for direction in (+1, -1):
        r, slope, a = r0, None, a0
        j = int(np.searchsorted(alphas, a0, side="right")) if direction > 0 else \
            int(np.searchsorted(alphas, a0, side="left")) - 1
        while True:
            if not 0 <= j < n:
                curve.ends[direction] = End(math.nan, "grid", r, a)
                break
            r_next, slope, failure = advance(model, a, r, float(alphas[j]), slope, solve_kw, trail=curve.trail)
            if r_next is None:
                a_last, r_last, _, _ = failure
                a_end = bifurcation_end(model, failure, direction, solve_kw)
                curve.ends[direction] = End(a_last, "fold", r_last, a_last) if a_end is None else \
                    End(a_end, "bifurcation", r_last, a_last)
                break
            curve.results[j] = r_next
            r, a = r_next, float(alphas[j])
            j += direction
    if not curve.results and not all(e.kind in ("fold", "bifurcation") for e in curve.ends.values()):
        return None
    # a curve between two grid points (both ends located inside one interval) has no point on the grid
    # but takes part in the equilibrium (its free entropy may be the largest there): it is kept, with
    # its continuation steps as its points
    curve.stability = {j: stability(model, alphas[j], r.x, order=1) for j, r in curve.results.items()}
    return curve


def bifurcation_end(model, failure, direction, solve_kw):
    """α of the end ``failure`` of a continuation in ``direction`` (:func:`~replica.continuation.stepper.advance`)
    where it is a bifurcation (an entry fell to its lower bound, the corrector lost the curve by support loss, or some
    learned overlap is below ``bifurcation_overlap`` there: the curve merges into one with fewer learned overlaps),
    None where it is a fold.
    Many order parameters (vectorized map or not): the end found by halving the step (to ``min_step``) is the
    bifurcation; where the host's eigenvalue can be followed (:func:`roots_on_host`) its root adds digits below
    that, at ~10⁴ evaluations per end."""
    a_last, r_last, why, learned = failure
    ov = overlaps_of(r_last)
    # "bound": an entry fell to its lower bound, at its root located by the stepper (bound_end)
    if not (why in ("support", "bound") or bool(np.any(np.abs(ov[learned]) < active().bifurcation_overlap))):
        return None
    return locate_bifurcation(model, a_last, r_last, direction, solve_kw) if roots_on_host(model, r_last.x) else a_last


def past_the_ghost(model, alpha, end):
    """Start of the damped iteration that finds where the system goes beyond a fold ``end`` at ``alpha``.

    Beyond a saddle-node the iterate crawls through the ghost of the fold, a bottleneck of width
    ``~√(δ/c)`` along the fold's direction ``u`` (``δ = |α − α_f|``, ``α ≈ α_f − c ξ²`` along ``u``,
    :func:`refine_fold`), for ``~1/√(δc)`` iterations, before it falls onto the attractor the fold
    leads to. The damped iteration starts at the fold point moved ``ghost_widths`` bottleneck
    widths downstream along ``u`` (the side the map moves it to), on the same slow manifold, so that
    the attractor is the same and most of the crawl is skipped. Without the fold's geometry (an end
    located by bisection): the fold point itself.
    """
    x = np.array(end.result.x, dtype=float)
    fold = end.result.info.get("fold")
    if not fold or not fold["curvature"] > 0.0:
        return x
    idx = unknowns(model, x)
    u = np.asarray(fold["direction"], dtype=float)
    with np.errstate(all="ignore"):
        try:
            flow = float(u @ (np.asarray(model.update(alpha, x), dtype=float)[idx] - x[idx]))
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return x
    if not (np.isfinite(flow) and flow != 0.0):
        return x
    width = math.sqrt(abs(alpha - end.alpha) / fold["curvature"])
    x[idx] += math.copysign(active().ghost_widths * width, flow) * u
    return x


def jump_seeds(model, alphas, curve, solve_kw):
    """Where ``curve`` ends inside the grid, the points the system goes to (off-grid seeds).

    Beyond a fold the damped iteration from the curve's last point (warm start) lands on
    another attractor; beyond a bifurcation the host branch (the overlaps that vanished set to
    zero, then Newton) takes over. Returns ``[(direction, alpha, result)]`` of stable non-universal
    points; an end whose jump lands on the universal point is recorded in ``curve.jumps``.
    """
    out = []
    for direction, e in curve.ends.items():
        if e.kind == "grid" or not np.isfinite(e.alpha):
            continue
        a = e.alpha + direction * active().jump_offset * max(1.0, abs(e.alpha))
        if not alphas[0] < a < alphas[-1]:
            continue
        if e.kind == "fold":
            r = model.solve_from(a, None, past_the_ghost(model, a, e), start=curve.seed, **solve_kw)
        else:
            xh = host_point(model, a, e.result, solve_kw)
            r = None if xh is None else correct(model, a, xh, solve_kw).result
        if r is not None and r.converged and "state" in r.info and is_universal(r):
            curve.jumps[direction] = UNIVERSAL
        elif r is not None and is_found(r) and stability(model, a, r.x, order=1) < 1.0:
            r.start = curve.seed
            out.append((direction, a, r))
    return out


def point_on_curve(model, curve, alphas, alpha, solve_kw, cache):
    """The point (:class:`~replica.engine.FixedPointResult`) of ``curve`` at ``alpha`` by continuation from its
    nearest solved point; None where the continuation does not reach it.

    ``cache`` keeps, per curve, every point solved here, the points they were solved at (later
    calls continue from the nearest of them: the iterates of a root finding approach each other)
    and the last factorized Jacobian (:func:`advance`)."""
    key = ("point", id(curve), float(alpha))
    if key in cache:
        return cache[key]
    if curve.is_universal:
        out = model.solve_universal(alpha)
        cache[key] = out
        return out
    solved = cache.setdefault(("solved", id(curve)), [])
    jac = cache.setdefault(("jacobian", id(curve)), {})
    # grid points, the continuation's own steps and earlier solves first: the last points before an
    # end sit next to a singular Jacobian
    nodes = [(float(alphas[i]), r) for i, r in curve.results.items()] + curve.trail + solved
    if not nodes or not any(abs(a - alpha) <= np.max(np.diff(alphas), initial=0.0) for a, _ in nodes):
        nodes += [(e.last_alpha, e.result) for e in curve.ends.values()]
    a0, r0 = min(nodes, key=lambda t: abs(t[0] - alpha))
    if a0 == alpha:
        out = r0
    else:
        out, _, _ = advance(model, a0, r0, float(alpha), None, solve_kw, jac_cache=jac)
        if out is not None:
            solved.append((float(alpha), out))
    cache[key] = out
    return out


def solve_on_curve(model, curve, alphas, alpha, solve_kw, cache):
    """State of ``curve`` at ``alpha`` (:func:`point_on_curve`); None if absent."""
    r = point_on_curve(model, curve, alphas, alpha, solve_kw, cache)
    return None if r is None else r.info["state"]
