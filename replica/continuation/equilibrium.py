"""The equilibrium (branch of largest free entropy) on the grid, every change of it located, and the
transitions read from those changes."""

from __future__ import annotations

import logging
import math

import numpy as np

from .curves import UNIVERSAL, solve_on_curve
from .events import envelope_slope, locate_crossing

__all__ = ["equilibrium_changes", "change_record", "EQUILIBRIUM_EXTRA_FIELDS", "equilibrium_of", "transition_entry"]

logger = logging.getLogger(__name__)


def equilibrium_changes(model, alphas, curves, names, solve_kw):
    """Every change of the branch of largest free entropy, located (module docstring)."""
    members = [("universal", UNIVERSAL)] + list(zip(names, curves))
    cache = {}
    nodes = set(float(a) for a in alphas)
    for _, c in members[1:]:
        for e in c.ends.values():
            if np.isfinite(e.alpha) and alphas[0] < e.alpha < alphas[-1]:
                nodes.add(float(e.alpha))
    nodes = sorted(nodes)
    grid_index = {float(a): i for i, a in enumerate(alphas)}

    def exists(c, a):
        return c.is_universal or c.lo(alphas) <= a <= c.hi(alphas)

    def state(c, a):
        if not c.is_universal:
            i = grid_index.get(a)
            if i is not None and i in c.results:
                return c.results[i].info["state"]
            for e in c.ends.values():
                if e.alpha == a:  # a located end: its last point lies within active().min_step of it
                    return e.result.info["state"]
        return solve_on_curve(model, c, alphas, a, solve_kw, cache)

    def fe(c, a):
        st = state(c, a)
        return -math.inf if st is None else float(st.free_entropy)

    def argmax(cands, a, other):
        vals = [(fe(c, a), fe(c, other), name) for name, c in cands]
        top = max(v[0] for v in vals)
        tied = [v for v in vals if v[0] >= top - 1e-13 * max(1.0, abs(top)) or v[0] == top]
        return max(tied, key=lambda v: v[1])[2]

    by_name = dict(members)
    changes = []
    prev_right = None
    def bifurcates_at(cands, a):
        return any(not c.is_universal and any(e.kind == "bifurcation" and e.alpha == a for e in c.ends.values())
                   for _, c in cands)

    for s, t in zip(nodes[:-1], nodes[1:]):
        cands = [(name, c) for name, c in members if exists(c, s) and exists(c, t)]
        # at a bifurcation a branch and its host have the same f (ties below rounding):
        # compare them inside the interval instead
        mid = 0.5 * (s + t)
        a_left = mid if bifurcates_at(cands, s) else s
        a_right = mid if bifurcates_at(cands, t) else t
        left, right = argmax(cands, a_left, t), argmax(cands, a_right, s)
        if prev_right is not None and left != prev_right:
            pc = by_name[prev_right]
            ended = not pc.is_universal and pc.hi(alphas) <= s
            changes.append(change_record(model, by_name, prev_right, left, s, "branch_end" if ended else "branch_start",
                                   state))
        if left != right:
            cp, cq = by_name[left], by_name[right]

            def diff(a, cp=cp, cq=cq):
                sq, sp = state(cq, a), state(cp, a)
                if sq is None or sp is None:
                    return fe(cq, a) - fe(cp, a), None
                slope = envelope_slope(model, a, sq) - envelope_slope(model, a, sp)
                return float(sq.free_entropy) - float(sp.free_entropy), slope

            try:
                a_c = locate_crossing(diff, a_left, a_right)
            except ValueError:
                logger.info("equilibrium change %s -> %s in [%g, %g] not bracketed", left, right, a_left, a_right)
                a_c = 0.5 * (a_left + a_right)
            changes.append(change_record(model, by_name, left, right, a_c, "crossing", state))
        prev_right = right
    # a branch end and a branch start at the same point (two located ends of one bifurcation,
    # each to ~1e-9): one change, not a zigzag through a third branch
    merged = []
    for c in changes:
        if merged and merged[-1]["to"] == c["from"] and c["kind"] != "crossing" \
                and abs(c["alpha"] - merged[-1]["alpha"]) <= 1e-6 * max(1.0, abs(c["alpha"])):
            prev = merged.pop()
            if prev["from"] != c["to"]:
                merged.append({**prev, "to": c["to"], "mmse_after": c["mmse_after"]})
            continue
        merged.append(c)
    return merged


def change_record(model, by_name, frm, to, alpha, kind, state):
    before, after = state(by_name[frm], alpha), state(by_name[to], alpha)
    return {"alpha": float(alpha), "from": frm, "to": to, "kind": kind, "located": True,
            "mmse_before": math.nan if before is None else float(before.mmse),
            "mmse_after": math.nan if after is None else float(after.mmse)}


#: per-point fields carried into the equilibrium next to mmse (present for ±1 output channels)
EQUILIBRIUM_EXTRA_FIELDS = ("classification_error", "sign_disagreement", "learned_features", "learned_mass")


def equilibrium_of(alphas, branches):
    n = alphas.size
    best = np.full(n, -np.inf)
    name = np.array(["universal"] * n, dtype=object)
    carried = ("mmse",) + tuple(k for k in EQUILIBRIUM_EXTRA_FIELDS
                                if any(k in b.fields for b in branches.values()))
    values = {k: np.full(n, np.nan) for k in carried}
    for bname, b in branches.items():
        if "free_entropy" not in b.fields:  # branch found nowhere on the grid
            continue
        f = b["free_entropy"]
        ok = b["exists"] & b["converged"] & (np.isfinite(f) | np.isposinf(f))
        better = ok & (f > best)
        best[better] = f[better]
        name[better] = bname
        for k in carried:
            if k in b.fields:
                values[k][better] = b[k][better]
    return {"alpha": alphas.copy(), **values, "free_entropy": best, "branch": name}


def transition_entry(out, names, changes, equilibrium, target, leaves=None) -> dict:
    """``alpha_sp``, ``alpha_c`` of the first change of the equilibrium into a branch with ``target(name)``
    (or, with ``leaves``, the first change with ``leaves(change)``): ``alpha_c`` the change, ``alpha_sp``
    the first α of the branch it goes to. Without such a change on the grid: ``alpha_c`` NaN and
    ``alpha_sp`` where a target branch first appears inside the grid, NaN when the equilibrium is already
    in a target branch at the first α (its spinodal lies below the grid)."""
    if leaves is None:
        change = next((c for c in changes if target(c["to"]) and not target(c["from"])), None)
    else:
        change = next((c for c in changes if leaves(c)), None)
    if change is not None:
        return {"alpha_sp": float(out[change["to"]].alpha_start), "alpha_c": float(change["alpha"])}
    first = next((str(b) for b in equilibrium["branch"][equilibrium["free_entropy"] > -np.inf]), "")
    starts_ = [out[nm].alpha_start for nm in names if target(nm) and np.isfinite(out[nm].alpha_start)]
    alpha_sp = float(min(starts_)) if starts_ and not target(first) else math.nan
    return {"alpha_sp": alpha_sp, "alpha_c": math.nan}
