"""The equilibrium (branch of largest free entropy) on the grid, every change of it located, and the
transitions read from those changes."""

from __future__ import annotations

import logging
import math

import numpy as np

from .curves import UNIVERSAL, solve_on_curve
from .events import envelope_slope, locate_crossing
from .settings import active

__all__ = ["equilibrium_changes", "without_unsolved_zigzags", "change_record", "EQUILIBRIUM_EXTRA_FIELDS", "equilibrium_of", "transition_entry"]

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

    def crossings(cands, left, right, lo, hi, depth):
        """Append the crossing from ``left`` to ``right`` in ``[lo, hi]``; where a third candidate has the larger f
        at the located crossing, the equilibrium changes twice in the interval: left → third → right, each
        located in its part (two hidden layers with Gaussian readouts, grid 1.025:3.025:5: the partial sheet,
        unstable past its branch point, → the curve leaving it → the full sheet, in one interval of nodes)."""
        cp, cq = by_name[left], by_name[right]

        def diff(a):
            sq, sp = state(cq, a), state(cp, a)
            if sq is None or sp is None:
                return fe(cq, a) - fe(cp, a), None
            slope = envelope_slope(model, a, sq) - envelope_slope(model, a, sp)
            return float(sq.free_entropy) - float(sp.free_entropy), slope

        try:
            a_c = locate_crossing(diff, lo, hi)
        except ValueError:
            logger.info("equilibrium change %s -> %s in [%g, %g] not bracketed", left, right, lo, hi)
            a_c = None
        if a_c is not None and depth < active().crossing_splits:
            top = argmax(cands, a_c, hi)
            f_pair = max(fe(cp, a_c), fe(cq, a_c))
            if top not in (left, right) and fe(by_name[top], a_c) > f_pair + 1e-13 * max(1.0, abs(f_pair)):
                crossings(cands, left, top, lo, a_c, depth + 1)
                crossings(cands, top, right, a_c, hi, depth + 1)
                return
        changes.append(change_record(model, by_name, left, right, 0.5 * (lo + hi) if a_c is None else a_c,
                                     "crossing", state))

    for s, t in zip(nodes[:-1], nodes[1:]):
        cands = [(name, c) for name, c in members if exists(c, s) and exists(c, t)]
        # at a bifurcation a branch and its host have the same f (ties below rounding): compare them just inside
        # the interval instead, ``jump_offset`` from the end (at most a quarter of the interval), so that a
        # crossing inside it stays bracketed (at its midpoint, as before, a crossing between the end and the
        # midpoint was missed: two layers with Gaussian readouts, the crossing at α = 2.0513 in
        # [2.0274, 2.0877] on the grid 1.025:3.025:5, and one between two bifurcation ends at Δ = 0.12)
        inside = min(active().jump_offset * max(1.0, abs(s)), 0.25 * (t - s))
        a_left = s + inside if bifurcates_at(cands, s) else s
        a_right = t - inside if bifurcates_at(cands, t) else t
        left, right = argmax(cands, a_left, t), argmax(cands, a_right, s)
        if prev_right is not None and left != prev_right:
            pc = by_name[prev_right]
            ended = not pc.is_universal and pc.hi(alphas) <= s
            changes.append(change_record(model, by_name, prev_right, left, s, "branch_end" if ended else "branch_start",
                                   state))
        if left != right:
            crossings(cands, left, right, a_left, a_right, 0)
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
    return without_unsolved_zigzags(merged)


def without_unsolved_zigzags(changes):
    """``changes`` without each pair ``B → A``, ``A → B`` in a row whose first change has a branch not solved at it
    (an mmse of NaN): the equilibrium went back to where it was, and the excursion rests on a free entropy of
    ``−inf`` where a branch could not be continued (two hidden layers with Gaussian readouts, grid 0.5:4:15: the
    curve leaving the branch point → the partial sheet, unstable and not solved at 2.0284 → back at 2.0313,
    two sheets whose free entropies differ by 1e-10)."""
    out, k = [], 0
    while k < len(changes):
        c = changes[k]
        nxt = changes[k + 1] if k + 1 < len(changes) else None
        unsolved = not (math.isfinite(c["mmse_before"]) and math.isfinite(c["mmse_after"]))
        if unsolved and nxt is not None and nxt["from"] == c["to"] and nxt["to"] == c["from"]:
            k += 2
            continue
        out.append(c)
        k += 1
    return out


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
