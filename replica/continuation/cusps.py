"""Critical points of phase lines: where two spinodals (fold lines, :mod:`replica.continuation.codim2`) of one
S-shaped curve merge in a cusp, the end of the first-order transition between the branches they bound."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from .linepoints import cusp_discriminant, model_at
from .settings import active

logger = logging.getLogger(__name__)

__all__ = ["CriticalPoint", "locate_cusp", "critical_points"]


@dataclass
class CriticalPoint:
    """Where two spinodals of one S-shaped curve merge (a cusp): the end of the first-order transition between
    the two branches they bound.

    Attributes
    ----------
    parameter, alpha : float
        Its location.
    lines : tuple of int
        Indices of the two fold lines in the list given to :func:`critical_points` (the second −1 where only one
        of the two spinodals that merge was traced).
    """

    parameter: float
    alpha: float
    lines: tuple = ()


def locate_cusp(model, name, lo, hi, alpha, x, u, solve_kw=None, *, h=None):
    """The cusp between ``lo`` (the curve through ``x`` near ``alpha`` has two folds there) and ``hi`` (none):
    Brent's method on the discriminant of :func:`~replica.continuation.linepoints.cusp_discriminant` (smooth in
    the parameter, zero where the two folds merge; Kuznetsov 2004, §8.2: the normal form ``y³ − μy − λ``
    has the discriminant ``3μ``), to ``root_rtol``. ``u``: the fold direction (unit vector on the moving
    entries), ``h`` the sampling step along it (default ``max_move / 10``). Returns ``(parameter, α)``, α the
    inflection ``α(−a₂/(3a₃))`` of the cubic there, or None where the discriminant has no sign change."""
    from scipy import optimize  # lazy: start-up (docs/architecture.md)

    solve_kw = dict(solve_kw or {})
    h = active().max_move / 10.0 if h is None else h
    u = np.asarray(u, dtype=float)

    def d(p):
        got = cusp_discriminant(model_at(model, name, p), alpha, x, u, h, solve_kw)
        if got is None:
            raise ValueError("curve not found")
        return got[0]

    try:
        if not d(lo) * d(hi) < 0.0:
            return None
        p_star = float(optimize.brentq(d, lo, hi, xtol=1e-14, rtol=active().root_rtol))
    except ValueError:
        return None
    got = cusp_discriminant(model_at(model, name, p_star), alpha, x, u, h, solve_kw)
    if got is None:
        return None
    a3, a2, a1, a0 = got[1]
    xi = -a2 / (3.0 * a3)
    return p_star, float(((a3 * xi + a2) * xi + a1) * xi + a0)


def critical_points(model, name, lines, values, solve_kw=None) -> list:
    """The cusps where fold lines of ``lines`` (:func:`trace_phase_lines`) are lost: for each pair lost at the
    same parameter value (the end of one branch and the start of another, their last points within 1e-3 of each
    other, relative), and for each lost fold line without such a partner (the other spinodal of the S was not
    traced: ``lines`` −1 in the result), :func:`locate_cusp` between that value and the next requested one in
    the line's direction, else between two earlier consecutive points of the line, the latest first, at most
    ``cusp_back_points`` back (the last points may lie past the cusp: two hidden layers, the upper
    ``layers_1_2`` sheet's start at Δ ≈ 0.163, where the fold refinement still converges and the local cubic has
    no S). Two cusps that are one (the two spinodals of an S traced alone, lost at different values: ReLU with
    probit labels, Δ ≈ 0.0037) are kept once, as located from the nearer end (``cusp_same_rtol``). Returns a list
    of :class:`CriticalPoint`."""
    values = np.asarray(values, dtype=float)
    folds = [(k, line) for k, line in enumerate(lines) if line.kind == "fold" and line.end == "lost"]
    out, paired = [], set()

    def cusp(k1, k2, line, alpha):
        end = line.points[-1]
        way = np.sign(end.parameter - line.points[0].parameter) or np.sign(values[-1] - values[0])
        later = np.sort(values[(values - end.parameter) * way > 0] * way) * way
        geometry = end.results[0].info.get("fold") if end.results and end.results[0] is not None else None
        if later.size == 0 or not geometry:
            return False
        got = locate_cusp(model, name, end.parameter, float(later[0]), alpha, end.results[0].x,
                          geometry["direction"], solve_kw)
        # the last points may lie past the cusp already (their cubic has no S: the fold refinement still converges
        # there): a bracket between two earlier points of the line, the latest first
        for j in range(len(line.points) - 2, max(len(line.points) - 2 - active().cusp_back_points, -1), -1):
            if got is not None:
                break
            got = locate_cusp(model, name, line.points[j].parameter, line.points[j + 1].parameter, alpha,
                              end.results[0].x, geometry["direction"], solve_kw)
        if got is not None:
            out.append((CriticalPoint(got[0], got[1], (k1, k2)), abs(got[0] - end.parameter)))
        return got is not None

    for i, (k1, l1) in enumerate(folds):
        for k2, l2 in folds[i + 1:]:
            e1, e2 = l1.points[-1], l2.points[-1]
            if e1.parameter != e2.parameter or abs(e1.alpha - e2.alpha) > 1e-3 * max(1.0, abs(e1.alpha)):
                continue
            paired |= {k1, k2}
            cusp(k1, k2, l1, 0.5 * (e1.alpha + e2.alpha))
    for k, line in folds:
        if k not in paired:
            cusp(k, -1, line, line.points[-1].alpha)
    return _merged(out)


def _merged(located) -> list:
    """The cusps of ``located`` (``(CriticalPoint, distance in the parameter from the end of the line it was located
    from)``) with those that are one (``cusp_same_rtol``: the two spinodals of one S traced alone, each lost at
    another parameter value) replaced by the one located from the nearer end (the local cubic about a point nearer
    the cusp is the better fit), with both lines; both locations are logged."""
    rtol = active().cusp_same_rtol
    out = []
    for cp, dist in located:
        for j, (kept, kept_dist) in enumerate(out):
            if abs(cp.parameter - kept.parameter) <= rtol * abs(kept.parameter) and \
                    abs(cp.alpha - kept.alpha) <= rtol * max(1.0, abs(kept.alpha)):
                lines = tuple(k for k in dict.fromkeys(kept.lines + cp.lines) if k >= 0)[:2]
                logger.info("one cusp located from two spinodals: parameter %.10g and %.10g, alpha %.10g and %.10g",
                            kept.parameter, cp.parameter, kept.alpha, cp.alpha)
                best, best_dist = (cp, dist) if dist < kept_dist else (kept, kept_dist)
                out[j] = (CriticalPoint(best.parameter, best.alpha, lines + (-1,) * (2 - len(lines))), best_dist)
                break
        else:
            out.append((cp, dist))
    return [cp for cp, _ in out]
