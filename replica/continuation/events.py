"""Located events along a curve: bifurcation ends (root of the host branch's eigenvalue), the loss of stability
of the universal branch, and crossings of free entropies (with the envelope identity for the slope)."""

from __future__ import annotations

import logging
import math

import numpy as np

from ..interface import hook
from .correctors import correct
from .operators import stability
from .problem import overlaps_of, unknowns
from .settings import active

__all__ = ["host_point", "zero_overlaps", "locate_bifurcation", "alpha_instability", "envelope_slope", "locate_crossing"]

logger = logging.getLogger(__name__)


def host_point(model, alpha, result, solve_kw):
    """The branch with fewer learned overlaps that ``result`` (near a bifurcation) merges into: the
    vanishing overlaps set to 0 (``model.without_overlaps(x, mask)`` where the model has it, else the
    leading packed entries, which must then be the overlaps), then the Newton corrector."""
    ov = overlaps_of(result)
    vanishing = np.abs(ov) < active().bifurcation_overlap
    if np.all(vanishing):
        r = model.solve_universal(alpha)
        return r.x if np.all(np.isfinite(r.x)) else None
    x = zero_overlaps(model, result.x, vanishing)
    if x is None:
        return None
    corrected = correct(model, alpha, x, solve_kw)
    return corrected.result.x if corrected.converged else None


def zero_overlaps(model, x, mask):
    """Packed ``x`` with the overlaps selected by ``mask`` (shape of the state's ``overlaps``) set to exactly 0
    (``model.without_overlaps(x, mask)`` where the model has it, else the leading packed entries, which must then
    be the overlaps), or None where the overlaps are not the leading entries. A subspace of zero overlaps is
    invariant under the map, so Newton's method from such a point stays on the host branch even next to a branch
    point, where a residue of 1e-13 would let it fall onto the branching curve."""
    x = np.array(x, dtype=float)
    mask = np.asarray(mask, dtype=bool)
    without = hook(model, "without_overlaps")
    if without is not None:
        return np.asarray(without(x, mask), dtype=float)
    if unknowns(model, x).size != x.size or mask.size > x.size:
        return None  # overlaps are not the leading packed entries: no host to build
    x[:mask.size][mask] = 0.0
    return x


def locate_bifurcation(model, a_last, r_last, direction, solve_kw):
    """Refine a bifurcation end: where the host's eigenvalue nearest 1 crosses 1 (Brent)."""

    def g(al):
        xh = host_point(model, al, r_last, solve_kw)
        if xh is None:
            return math.nan
        return stability(model, al, xh, near=1.0) - 1.0

    g0 = g(a_last)
    if not np.isfinite(g0):
        return a_last
    scale = max(1.0, abs(a_last))
    for sign in (direction, -direction):
        for k in range(8, 1, -1):
            b = a_last + sign * scale * 10.0 ** (-k)
            if b <= 0:
                break
            gb = g(b)
            if np.isfinite(gb) and gb * g0 <= 0:
                lo, hi = (a_last, b) if a_last < b else (b, a_last)
                try:
                    from scipy import optimize  # lazy: start-up (docs/architecture.md)
                    return float(optimize.brentq(g, lo, hi, xtol=1e-14, rtol=active().root_rtol))
                except ValueError:  # pragma: no cover - defensive
                    return a_last
    logger.debug("bifurcation near alpha = %g not refined (no sign change of the host eigenvalue)", a_last)
    return a_last


def alpha_instability(model, alphas, universal, indices):
    """First α where the universal branch loses linear stability (Brent on stability − 1)."""
    s = universal["stability"]
    for i in range(1, alphas.size):
        if np.isfinite(s[i - 1]) and np.isfinite(s[i]) and s[i - 1] < 1.0 <= s[i]:
            def g(al):
                return stability(model, al, model.solve_universal(al).x, indices=indices) - 1.0

            try:
                from scipy import optimize  # lazy: start-up (docs/architecture.md)
                return float(optimize.brentq(g, alphas[i - 1], alphas[i], xtol=1e-14, rtol=active().root_rtol))
            except ValueError:  # pragma: no cover - defensive
                return math.nan
    return math.nan


def envelope_slope(model, alpha, st) -> float:
    """``df/dα`` along a branch of stationary points at ``st``, or NaN.

    Models whose free entropy is ``Ψ_out(mmse) + G/α`` with ``G`` a function of the order parameters
    only (``model.envelope_identity``: every architecture of this package, docs/theory.md §5.2, §6 and
    §10; ``Ψ_out = −½ ln(2πe(Δ + mmse))`` for Gaussian labels) have, at a stationary point,
    ``df/dα = ∂f/∂α = −(f − Ψ_out(mmse))/α`` (the envelope theorem: the order parameters' own variation
    does not count).
    """
    if not hook(model, "envelope_identity"):
        return math.nan
    f = float(st.free_entropy)
    if hook(model, "energetic") is not None:
        psi = float(model.energetic(float(st.mmse)))
    else:  # a model without an output channel: Gaussian labels of variance model.delta
        D = float(model.delta) + float(st.mmse)
        psi = -0.5 * math.log(2 * math.pi * math.e * D) if D > 0.0 else math.inf
    if not (math.isfinite(psi) and math.isfinite(f)):
        return math.nan
    return -(f - psi) / float(alpha)


def locate_crossing(value, a, b, rtol=None):
    """Root of a free-entropy difference in ``[a, b]``: Newton steps with the slope that ``value``
    returns (``(difference, slope or None/NaN)``; the envelope identity, :func:`envelope_slope`)
    inside the bracket, regula falsi where a step leaves it or no slope is known; stops when a
    Newton step is below ``rtol`` relative (its error is then of second order) or the bracket is.

    Raises
    ------
    ValueError
        The difference has the same sign at both ends.
    """
    if rtol is None:
        rtol = active().crossing_rtol
    fa, _ = value(a)
    fb, _ = value(b)
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if not fa * fb < 0.0:
        raise ValueError("no sign change")
    x = a - fa * (b - a) / (fb - fa)
    if not a < x < b:  # an end not solved (its difference ±inf): regula falsi gives NaN, bisect instead
        x = 0.5 * (a + b)
    for _ in range(100):
        fx, dx = value(x)
        if fx == 0.0 or not math.isfinite(fx):
            return x
        if (fx < 0.0) == (fa < 0.0):
            a, fa = x, fx
        else:
            b, fb = x, fx
        x_new = x - fx / dx if dx is not None and math.isfinite(dx) and dx != 0.0 else math.nan
        newton = a < x_new < b
        if newton and abs(x_new - x) <= rtol * max(1.0, abs(x)):
            return float(x_new)
        if not newton:
            x_new = a - fa * (b - a) / (fb - fa)
            if not a < x_new < b:
                x_new = 0.5 * (a + b)
        if b - a <= rtol * max(1.0, abs(x)):
            return float(0.5 * (a + b))
        x = x_new
    return float(x)
