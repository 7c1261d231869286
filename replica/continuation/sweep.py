"""The sweep: the universal branch, the damped passes and their curves, names, equilibrium and transitions
(:func:`sweep`)."""

from __future__ import annotations

import logging
import math
import sys

import numpy as np

from ..interface import hook
from .branchpoints import snap_bifurcation_ends
from .equilibrium import equilibrium_changes, equilibrium_of, transition_entry
from .events import alpha_instability
from .jacobians import remembered_jacobians
from .naming import name_curves
from .operators import stability
from .records import BranchData, SweepResult, channel_fields, fill_missing_fields, learned_layers
from .seeds import damped_pass, degenerate_switches, routed_solve
from .settings import active, using

__all__ = ["NoProgress", "progress_bar", "validate_grid", "sweep"]

logger = logging.getLogger(__name__)


class NoProgress:
    def update(self, n=1):
        pass

    def refresh(self):
        pass

    def close(self):
        pass


def progress_bar(total, progress, passes):
    """A tqdm bar, or a no-op one without importing tqdm (start-up, docs/architecture.md); ``passes``: how many
    passes over the grid ``total`` counts (named in the bar, so that 12 steps of a 3-point grid read as such)."""
    if not progress:
        return NoProgress()
    if "ipykernel" in sys.modules:  # a notebook: its widget bar
        from tqdm.auto import tqdm
    else:  # what tqdm.auto gives in a terminal, without importing asyncio (~50 ms)
        from tqdm.std import tqdm

    # one step per grid point of every pass (universal, then each start): a point where a pass follows a
    # traced branch costs no solve, so the unit is the point, not the solve
    desc = "α sweep" if passes == 1 else f"α sweep ({total // passes} α × {passes} passes)"
    return tqdm(total=total, desc=desc, unit="point", leave=False)


def validate_grid(alphas, branches):
    alphas = np.asarray(alphas, dtype=float)
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError("alpha grid must be a non-empty 1-D list of numbers")
    if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
        raise ValueError("alpha values must be finite and > 0")
    if np.any(np.diff(np.sort(alphas)) == 0):  # not np.unique: it imports numpy.ma (7 ms of start-up)
        raise ValueError("alpha values must be distinct")
    if branches not in ("all", "universal"):
        raise ValueError(f"branches must be 'all' or 'universal', got {branches!r}")
    return np.sort(alphas)


def sweep(model, alphas, *, branches="all", progress=True, solve_kw=None, locate=True,
          cache=None, settings=None) -> SweepResult:
    """Trace every branch of ``model`` on the α grid by continuation (:mod:`replica.continuation`).

    Parameters
    ----------
    model : ReplicaModel
        The problem (:class:`replica.interface.ReplicaModel`: one hidden layer, deep, two
        hidden layers).
    alphas : array_like, shape (n_alpha,)
        Strictly positive, distinct sample ratios (sorted internally).
    branches : {"all", "universal"}, keyword-only
        ``"universal"`` solves only the universal branch.
    progress : bool, keyword-only
        Show a tqdm progress bar.
    solve_kw : dict, keyword-only
        Extra options for the model's damped solver (damping, tolerances, max_iter).
    locate : bool, keyword-only
        Locate the equilibrium changes and transitions (False: only the branches).
    cache : callable, optional, keyword-only
        Checkpoint/resume hook (default None: solve everything). Every solve of the
        universal branch and of the damped passes that seed the continuation is routed
        through ``cache(key, i, alpha, compute)``, where ``key`` is ``"universal"`` or
        ``"<start>:<down|up>"``, ``i`` the index in the sorted grid and ``compute()``
        performs the solve (with the warm start of the pass); the hook returns a
        :class:`FixedPointResult` — stored or freshly computed — and may record it
        (see :class:`replica.workflow.run.SweepCheckpoint`). The continuation (Newton steps from the
        seeds), stability and transitions are deterministic and always recomputed.

    settings : ContinuationSettings, optional, keyword-only
        The continuation's tolerances and budgets (:mod:`replica.continuation.settings`); default the
        settings in force (:func:`~replica.continuation.settings.active`, the package's defaults outside a
        :func:`~replica.continuation.settings.using` block).

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        Empty, non-finite, non-positive or repeated α values; unknown ``branches``.
    TypeError
        ``settings`` is not a :class:`~replica.continuation.settings.ContinuationSettings`.
    """
    alphas = validate_grid(alphas, branches)
    with using(active() if settings is None else settings), remembered_jacobians():
        return _sweep(model, alphas, branches, progress, dict(solve_kw or {}), locate, cache)


def _sweep(model, alphas, branches, progress, solve_kw, locate, cache) -> SweepResult:
    n = alphas.size
    reason = hook(model, "universal_only_reason")()
    if reason and branches == "all":
        logger.info("universal branch only: %s", reason)
    starts = model.starts() if branches == "all" and not reason else {}
    passes = []
    for name, (overlaps0, direction) in starts.items():
        if direction in ("down", "both"):
            passes.append((name, overlaps0, range(n - 1, -1, -1), f"{name}:down"))
        if direction in ("up", "both"):
            passes.append((name, overlaps0, range(n), f"{name}:up"))
    pbar = progress_bar(n * (1 + len(passes)), progress, 1 + len(passes))

    # universal branch, with its stability (restricted to its own subspace under the ruling)
    uni_indices = hook(model, "universal_indices")() if reason else None
    universal = BranchData("universal", alphas)
    for i, a in enumerate(alphas):
        r = routed_solve(cache, "universal", i, a, lambda a=a: model.solve_universal(a))
        universal.set(i, r, stability(model, a, r.x, indices=uni_indices), channel_fields(model, r))
        pbar.update(1)
    out = {"universal": universal}

    # seeds from the damped passes, each traced by continuation as soon as it is found
    curves = []
    for name, ov0, order, key in passes:
        damped_pass(model, alphas, order, ov0, name, key, curves, solve_kw, pbar, cache)
    if curves:
        degenerate_switches(model, alphas, curves, solve_kw)
    pbar.refresh()  # the last points of a pass along a traced branch are quick: show the bar at its total
    pbar.close()

    snap_bifurcation_ends(model, curves)
    names, order = name_curves(model, curves, alphas, solve_kw) if curves else ([], [])
    curves = [curves[k] for k in order]
    for name, c in zip(names, curves):
        b = BranchData(name, alphas, seed=c.seed)
        for i in sorted(c.results):
            r = c.results[i]
            b.set(i, r, c.stability[i], channel_fields(model, r))
        lo, hi = c.ends.get(-1), c.ends.get(+1)
        b.alpha_start, b.start_kind = (lo.alpha, lo.kind) if lo else (math.nan, "grid")
        b.alpha_end, b.end_kind = (hi.alpha, hi.kind) if hi else (math.nan, "grid")
        b.branch_points = tuple(float(bp.alpha) for bp in c.branch_points)
        b.branch_point_kinds = tuple(bp.kind for bp in c.branch_points)
        out[name] = b
    fill_missing_fields(out)

    equilibrium = equilibrium_of(alphas, out)
    transitions = {"alpha_sp": math.nan, "alpha_c": math.nan}
    per_branch = {"universal": {"alpha_instability": alpha_instability(model, alphas, universal, uni_indices)}}
    changes = []
    if locate and curves:
        changes = equilibrium_changes(model, alphas, curves, names, solve_kw)
        for name in names:
            b = out[name]
            first = next((c["alpha"] for c in changes if c["to"] == name), math.nan)
            per_branch[name] = {"alpha_sp": float(b.alpha_start), "alpha_end": float(b.alpha_end),
                                "alpha_c": float(first)}
        main = hook(model, "main_phase")
        if main is None:  # the first change away from the universal branch
            transitions = transition_entry(out, names, changes, equilibrium, lambda nm: nm != "universal",
                                 leaves=lambda c: c["from"] == "universal")
        else:  # the first time the equilibrium reaches the model's main phase
            transitions = transition_entry(out, names, changes, equilibrium, lambda nm: nm.split("-")[0] == main)
        n_layers = int(hook(model, "n_layers"))
        if n_layers >= 2:  # where each layer becomes learned (docs/two_layer.md, docs/deep_linear.md)
            for ell in range(1, n_layers + 1):
                tr = transition_entry(out, names, changes, equilibrium,
                                      lambda nm, ell=ell: ell in learned_layers(nm, n_layers))
                transitions[f"alpha_sp_layer_{ell}"] = tr["alpha_sp"]
                transitions[f"alpha_c_layer_{ell}"] = tr["alpha_c"]
    return SweepResult(alphas, out, equilibrium, transitions, np.asarray(model.readout_values),
                       np.asarray(model.readout_weights), per_branch, changes, reason)
