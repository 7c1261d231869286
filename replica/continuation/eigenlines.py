"""Phase lines where an eigenvalue of the fixed-point map crosses 1, followed in the plane of α and a second
parameter (:mod:`replica.continuation.codim2` traces them with the fold and crossing lines): the universal branch's
loss of stability, and a branch point of another branch (a curve branches off it: a continuous transition where
the equilibrium follows that curve). Each point is the root of that eigenvalue minus 1 along α by Brent's method
in a window around the line's prediction, the curve solved at each trial α by Newton's method."""

from __future__ import annotations

import math

import numpy as np

from ..interface import hook
from .linepoints import LinePoint, _trace, line_window, model_at, search_window
from .operators import stability
from .settings import active

__all__ = ["trace_instability_line", "trace_branch_point_line"]


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
