"""Names of the traced curves after the phase each describes (``replica.continuation``, "Names")."""

from __future__ import annotations

import functools
import logging

import numpy as np

from .curves import damped_step
from .problem import is_labelled
from .settings import active
from .stepper import advance

__all__ = ["UNLEARNED_PHASES", "states_past_the_grid", "name_curves", "weaker"]

logger = logging.getLogger(__name__)


#: phases (``model.phase``) of a state that has learned nothing above the phase threshold: a curve whose
#: grid points and located ends all have one of them is continued past its grid ends before it is named
#: (:func:`states_past_the_grid`)
UNLEARNED_PHASES = ("universal", "weak")


def states_past_the_grid(model, curve, states, solve_kw):
    """``states`` (the curve's own) and the states of ``curve`` beyond its ends of kind ``grid``, for its
    name only (:func:`name_curves`).

    Where the grid cuts a curve (its first or last α lies inside the curve), the grid points need not hold
    the curve's most specialized point: a curve whose overlaps pass the phase threshold only past the
    last α would be named ``weak`` on that grid and ``specialized`` on a longer one. From each such end
    (the upper one first: overlaps grow with α on most curves) the curve is followed by the tracer's
    continuation (:func:`advance` with its step control, fold location and checks; the damped iteration
    with warm starts for solvers with labels, :func:`damped_step`) in ``name_extension_legs`` legs up
    to ``name_extension_factor`` beyond the grid, until the curve ends (fold, bifurcation, or no step
    accepted), its phase is decided (the most specialized state met is not in :data:`UNLEARNED_PHASES`;
    the other end is then not followed), or ``name_extension_steps`` steps have been accepted. Returns
    ``states`` and the states met (every accepted step, and the located fold point); nothing is stored in
    the curve."""
    met = list(states)

    def decided():
        return model.phase(max(met, key=model.specialization)) not in UNLEARNED_PHASES

    for direction, e in sorted(curve.ends.items(), reverse=True):
        if e.kind != "grid" or "state" not in e.result.info or not (np.isfinite(e.last_alpha) and e.last_alpha > 0):
            continue
        if decided():
            break
        a0 = a = float(e.last_alpha)
        r, slope, jac, steps = e.result, None, {}, 0
        labelled = is_labelled(model, r.x)
        for leg in range(1, active().name_extension_legs + 1):
            a_next = a0 * active().name_extension_factor ** (direction * leg / active().name_extension_legs)
            trail, end = [], None
            if labelled:
                nxt = damped_step(model, a_next, r, solve_kw)
                if nxt is not None:
                    trail.append((a_next, nxt))
            else:
                nxt, slope, failure = advance(model, a, r, a_next, slope, solve_kw, jac_cache=jac, trail=trail)
                end = None if failure is None else failure[1]  # the last point before the end (a located fold)
            met += [rr.info["state"] for _, rr in trail if "state" in rr.info]
            if end is not None and "state" in end.info:
                met.append(end.info["state"])
            steps += len(trail)
            if nxt is None:
                break
            a, r = a_next, nxt
            if steps >= active().name_extension_steps or decided():
                break
        logger.debug("named past the grid end at alpha = %g: followed to alpha = %g (%d steps)", a0, a, steps)
    return met


def name_curves(model, curves, alphas, solve_kw=None):
    """Names of the traced curves after the phase each describes (module docstring, "Names").

    Returns the names and the order of the curves (by first α, then last α), names listed in that order.
    A curve's phase is ``model.phase`` at its most specialized point among its grid points and its located
    ends (a fold or bifurcation is located independently of the grid); a curve below the phase threshold
    there (:data:`UNLEARNED_PHASES`) and cut by the grid is first continued past its grid ends
    (:func:`states_past_the_grid`: the name must not depend on where the grid stops; nothing of that
    continuation is stored). Curves of one phase are told apart by how strongly they learn it: the weakest
    keeps the name, stronger ones get ``-2``, ``-3``, … (:func:`weaker`). ``solve_kw``: the options of the
    sweep's solver (:func:`sweep`)."""
    solve_kw = dict(solve_kw or {})
    order = sorted(range(len(curves)), key=lambda k: (curves[k].lo(alphas), curves[k].hi(alphas)))
    groups = {}
    for k in order:
        c = curves[k]
        states = [r.info["state"] for r in c.results.values()] or [r.info["state"] for _, r in c.trail]
        states += [e.result.info["state"] for e in c.ends.values()
                   if e.kind in ("fold", "bifurcation") and "state" in e.result.info]
        base = model.phase(max(states, key=model.specialization))
        if base in UNLEARNED_PHASES and any(e.kind == "grid" for e in c.ends.values()):
            states = states_past_the_grid(model, c, states, solve_kw)
            base = model.phase(max(states, key=model.specialization))
        groups.setdefault("weak" if base in UNLEARNED_PHASES else base, []).append(k)
    names = {}
    for base, members in groups.items():
        ranked = sorted(members, key=functools.cmp_to_key(lambda i, j: weaker(curves[i], curves[j], alphas)))
        for rank, k in enumerate(ranked, start=1):
            names[k] = base if rank == 1 else f"{base}-{rank}"
    return [names[k] for k in order], order


def weaker(a, b, alphas) -> int:
    """Order of two curves of one phase, weakest first: by the mmse at the first grid α where both exist
    (larger first), else (they never coexist on the grid) by their first and last α."""
    common = sorted(set(a.results) & set(b.results))
    if common:
        i = common[0]
        ma, mb = float(a.results[i].info["state"].mmse), float(b.results[i].info["state"].mmse)
        if ma != mb:
            return -1 if ma > mb else 1
    ka, kb = (a.lo(alphas), a.hi(alphas)), (b.lo(alphas), b.hi(alphas))
    return -1 if ka < kb else (1 if ka > kb else 0)
