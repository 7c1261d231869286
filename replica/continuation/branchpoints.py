"""Branch points of a traced curve and branch switching.

A curve of stationary points whose leading eigenvalue of ``F_x`` crosses 1 while the curve goes on (a
fold ends the curve instead) passes a *branch point*: another curve of stationary points crosses it
there (a pitchfork or a transcritical point of the fixed-point map; in this package usually a curve on
which more overlaps are learned, which ends there by support loss, the ``bifurcation`` end of
:mod:`replica.continuation.curves`). :func:`branch_points` locates every such crossing by root finding
(Brent on the leading eigenvalue minus 1 along the curve, to ``root_rtol``), and tells a simple real
eigenvalue crossing 1 (``branch_point``) from several crossing together (``degenerate_branch_point``) and
from a complex pair whose real part crosses 1 (``stability_crossing``: the damped iteration loses the
point, no curve crosses).
:func:`switch_branches` returns points of the curves that cross at a branch point: the curve's own point
at ``α* ± jump_offset`` displaced along the null vector of ``F_x − I`` (the eigenvector of the eigenvalue
1 at α*), by ``switch_offset`` × (0.1, 1, 3) on either side, then corrected by Newton at fixed α; the
points that are not the curve's own are seeds the sweep traces as branches (the tangent of the crossing
curve lies in the span of the null vector and the curve's own tangent; the displacement along the null
vector and Newton at α* ± jump_offset reach it for a transcritical point, where the crossing curve is at
distance O(jump_offset), and for a pitchfork, at distance O(√jump_offset)). The same method as the
branch switching of BifurcationKit.jl's ``BranchSwitching`` without the normal form: the corrector does
what the normal form's amplitude would.

References: Y. A. Kuznetsov, *Elements of Applied Bifurcation Theory* (3rd ed., Springer 2004), §10.2
(branch points of one-parameter families and branch switching).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from ..engine import FixedPointResult
from ..interface import hook
from .correctors import correct
from .curves import point_on_curve, same_point
from .operators import nearest_eigenpair, stability
from .problem import is_universal, overlaps_of, unknowns
from .settings import active

__all__ = ["BranchPoint", "crossing_intervals", "end_intervals", "branch_points", "switch_branches", "snap_bifurcation_ends"]

logger = logging.getLogger(__name__)


@dataclass
class BranchPoint:
    """A located crossing of 1 by the leading eigenvalue of ``F_x`` along a curve.

    Attributes
    ----------
    alpha : float
        Where it is (root of the leading eigenvalue minus 1 along the curve).
    kind : str
        ``branch_point`` (a simple real eigenvalue crosses 1: another curve of stationary points crosses),
        ``degenerate_branch_point`` (several eigenvalues cross 1 together, within 1e-6: the null space has
        several dimensions, as where the nodes of a rule in s cross together; not switched here: one null vector
        of many gives an arbitrary combination; :func:`~replica.continuation.seeds.degenerate_switches` reaches
        the curve that leaves it by the damped iteration) or ``stability_crossing`` (a complex pair: no curve crosses).
    result : FixedPointResult
        The curve's point at ``alpha``.
    eigenvalue : complex
        The eigenvalue of ``F_x`` nearest 1 there.
    direction : ndarray, shape (m,)
        Its eigenvector on the moving entries (real part, max-norm 1): the null vector of ``F_x − I``.
    multiplicity : int
        How many eigenvalues lie within 1e-6 of it.
    """

    alpha: float
    kind: str
    result: FixedPointResult
    eigenvalue: complex
    direction: np.ndarray
    multiplicity: int = 1


def crossing_intervals(curve) -> list:
    """``[(i, j)]``: consecutive grid indices of ``curve`` whose stored stability lies on either side of 1."""
    idx = sorted(i for i in curve.results if np.isfinite(curve.stability.get(i, math.nan)))
    return [(i, j) for i, j in zip(idx[:-1], idx[1:])
            if j == i + 1 and (curve.stability[i] - 1.0) * (curve.stability[j] - 1.0) < 0.0]


def end_intervals(model, alphas, curve) -> list:
    """``[(lo, hi)]``: the α intervals between the outermost grid point of ``curve`` and the last point before
    one of its ``bifurcation`` ends, where the stability at that point (first-order differences, like the grid
    points') lies on the other side of 1 from the grid point's. A curve that passes a branch point after its
    last grid point and then ends by support loss on the unstable part crosses 1 there, between two grid
    points, only on a coarse grid (two hidden layers with Gaussian readouts on ``0.5:4:8``: the crossing at
    α = 2.0275, the end at 2.0313, the next grid point at 2.5): without these intervals the branch point and the
    curve that bifurcates there are found on fine grids only. At every end the eigenvalue tends to 1 (measured at
    the last points before bifurcation ends: 0.99999993–0.99999995, first- and second-order values differing by
    up to 7.5e-7): an interval is kept only where the first-order value is on the other side of 1, and
    :func:`branch_points` then needs the second-order values at both ends to differ in sign. Fold ends are left
    out: a crossing found there would be the fold itself, not a branch point."""
    out = []
    for direction, e in curve.ends.items():
        if e.kind != "bifurcation" or not math.isfinite(e.last_alpha):
            continue
        grid = [i for i in curve.results if np.isfinite(curve.stability.get(i, math.nan))]
        if not grid:
            continue
        i = max(grid) if direction > 0 else min(grid)
        a_grid = float(alphas[i])
        if not (e.last_alpha - a_grid) * direction > 0.0:
            continue
        value = stability(model, e.last_alpha, e.result.x, order=1)
        if math.isfinite(value) and (value - 1.0) * (curve.stability[i] - 1.0) < 0.0:
            out.append((min(a_grid, e.last_alpha), max(a_grid, e.last_alpha)))
    return out


class _NotOnCurve(Exception):
    """The curve could not be solved at a trial α of the root finding."""


def branch_points(model, alphas, curve, solve_kw, cache) -> list:
    """Every crossing of 1 by the leading eigenvalue of ``F_x`` between two grid points of ``curve`` or between
    its outermost grid point and the last point before a bifurcation end, located by Brent's method
    (:func:`crossing_intervals`, :func:`end_intervals`; the curve solved at each trial α by continuation,
    :func:`~replica.continuation.curves.point_on_curve`, the eigenvalue from second-order differences or,
    above the size policy's dense limit, from ARPACK). A crossing the root finding cannot bracket or follow
    (the curve not solved at a trial α) is logged and skipped. Returns a list of :class:`BranchPoint`,
    ordered in α."""
    out = []
    intervals = [(float(alphas[i]), float(alphas[j])) for i, j in crossing_intervals(curve)]
    for lo, hi in sorted(intervals + end_intervals(model, alphas, curve)):
        def g(a):
            r = point_on_curve(model, curve, alphas, float(a), solve_kw, cache)
            value = math.nan if r is None else stability(model, float(a), r.x, order=2) - 1.0
            if not math.isfinite(value):
                raise _NotOnCurve
            return value

        try:
            if not g(lo) * g(hi) < 0.0:  # the second-order eigenvalue does not change sign: no crossing
                continue
            from scipy import optimize  # lazy: start-up (docs/architecture.md)

            root = float(optimize.brentq(g, lo, hi, xtol=1e-14, rtol=active().root_rtol))
        except (_NotOnCurve, ValueError):
            logger.debug("stability crossing in [%g, %g] not located", lo, hi)
            continue
        r = point_on_curve(model, curve, alphas, root, solve_kw, cache)
        pair = None if r is None else nearest_eigenpair(model, root, r.x, 1.0)
        if pair is None:
            continue
        value, vec, multiplicity = pair
        if abs(value.imag) > 1e-6:
            kind = "stability_crossing"
        else:
            kind = "branch_point" if multiplicity == 1 else "degenerate_branch_point"
        out.append(BranchPoint(root, kind, r, value, vec, multiplicity))
    return out


def switch_branches(model, alphas, curve, bp, solve_kw, cache) -> list:
    """Points ``[(α, result)]`` of the curves that cross ``curve`` at the branch point ``bp`` (module
    docstring): at ``α* ± jump_offset · max(1, α*)`` inside the grid, the curve's own point displaced along
    the null vector, corrected by Newton at fixed α; kept when converged, not universal, with no overlap
    below ``−support_overlap`` (overlaps are non-negative), and neither the curve's own point nor one
    already kept (:func:`~replica.continuation.curves.same_point`). Empty unless ``bp.kind`` is ``branch_point``."""
    if bp.kind != "branch_point":
        return []
    s = active()
    project = hook(model, "project")
    found = []
    for side in (1.0, -1.0):
        a = bp.alpha + side * s.jump_offset * max(1.0, abs(bp.alpha))
        if not alphas[0] <= a <= alphas[-1]:
            continue
        host = point_on_curve(model, curve, alphas, a, solve_kw, cache)
        if host is None:
            continue
        idx = unknowns(model, host.x)
        if idx.size != bp.direction.size:
            continue
        for scale in (0.1, 1.0, 3.0):
            for sign in (1.0, -1.0):
                x = np.array(host.x, dtype=float)
                x[idx] += sign * scale * s.switch_offset * bp.direction
                if project is not None:
                    x = np.asarray(project(x), dtype=float)
                r = correct(model, a, x, solve_kw).result
                if r is None or is_universal(r) or np.any(overlaps_of(r) < -s.support_overlap):
                    continue
                if same_point(model, a, host, r) or any(aa == a and same_point(model, a, rr, r) for aa, rr in found):
                    continue
                r.start = curve.seed
                found.append((a, r))
    if found:
        logger.debug("branch point at alpha = %.10g: %d crossing point(s)", bp.alpha, len(found))
    return found


def snap_bifurcation_ends(model, curves):
    """Give the bifurcation ends (support loss) of large models the α of the host's branch point they meet.

    A curve that ends by support loss merges into a host curve where the host's eigenvalue crosses 1: its
    end *is* the host's branch point. For models up to ``arnoldi_size`` unknowns the end is refined by that
    root already (:func:`~replica.continuation.events.locate_bifurcation`); above, it is where the step
    control stopped. Such an end within 1e-6 (relative) of a located branch point of any curve takes the
    branch point's α (three hidden layers: ``layers_1_2-2`` starts at the degenerate branch point of
    ``layers_1_2``, 3.878042827, instead of where halving its step stopped, 5e-9 away)."""
    from .operators import roots_on_host

    points = [bp.alpha for c in curves for bp in c.branch_points if bp.kind != "stability_crossing"]
    if not points:
        return
    for c in curves:
        for e in c.ends.values():
            if e.kind != "bifurcation" or not np.isfinite(e.alpha) or roots_on_host(model, e.result.x):
                continue
            near = [a for a in points if abs(a - e.alpha) <= 1e-6 * max(1.0, abs(e.alpha))]
            if near:
                e.alpha = min(near, key=lambda a: abs(a - e.alpha))
