"""Branches of stationary points, equilibrium selection and transitions.

Several stationary points of the free entropy coexist over wide ranges of α
(docs/theory.md §5.2). A sweep therefore

1. solves the universal branch (``Q ≡ 0``) at every α;
2. follows each of the model's starts (``model.starts()``) with warm starts in its
   direction: the informed start (``Q ≈ 1``) *downwards* — so that the specialized
   branch is tracked to its spinodal — and upwards, the uninformed start (small ``Q``)
   *upwards* (continuous instabilities of the universal point), and partial starts
   (``Q ≈ 1`` only for readouts with ``|v|`` above a quantile, or only in inner layers)
   downwards;
3. keeps, at every α, the distinct non-universal stationary points, ordered by the
   model's ``specialization`` measure (``E_v[v² Q²]`` for one hidden layer): the
   largest is ``specialized``, the next ``partial``; models with a ``phase(state)``
   method (two hidden layers) get one branch per phase instead (``layer_1``,
   ``layers_1_2``, …; within a phase the point of largest free entropy);
4. picks the equilibrium as the branch of largest free entropy, and locates the
   transitions by root finding independently of the α grid:
   ``alpha_sp`` (smallest α where a branch exists, by bisection on existence) and
   ``alpha_c`` (first crossing of the free entropies of the branch and the universal
   branch, by Brent's method), for every non-universal branch; the model's main branch
   (``model.specialized_branch``, default ``specialized``) gives the top-level pair.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize
from tqdm.auto import tqdm

from .engine import FixedPointResult

__all__ = ["BranchData", "SweepResult", "sweep", "locate_transitions", "UNIVERSAL_TOL", "DISTINCT_TOL"]

logger = logging.getLogger(__name__)

#: overlaps below this (max-norm) count as the universal (zero-overlap) solution
UNIVERSAL_TOL = 1e-6
#: two stationary points closer than this in max-norm of their overlaps are the same point
DISTINCT_TOL = 1e-5
#: storage order of phase-named branches (models with ``phase``); others follow
_PHASE_ORDER = {"universal": 0, "specialized": 1, "partial": 2}
#: iteration cap of the damped existence test in the bisection for ``alpha_sp``
EXISTENCE_MAX_ITER = 300


@dataclass
class BranchData:
    """One branch on the α grid; entries are NaN where the branch does not exist.

    Attributes
    ----------
    name : str
    alpha : ndarray, shape (n_alpha,)
    fields : dict[str, ndarray]
        The model's per-point record (e.g. ``mmse``, ``free_entropy``,
        ``mutual_information``, ``R2``, ``R2_hat``, ``tau`` with shape (n_alpha,);
        ``overlap_W``, ``overlap_W_hat`` with shape (n_alpha, n_readout)), plus
        ``converged`` (bool), ``exists`` (bool), ``iterations`` (int), ``residual``,
        ``start`` (str). Arrays are allocated at the first stored point.
    """

    name: str
    alpha: np.ndarray
    fields: dict = field(default_factory=dict)
    #: packed solver point of each stored index (for warm starts)
    points: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        n = self.alpha.size
        self.fields.setdefault("converged", np.zeros(n, dtype=bool))
        self.fields.setdefault("exists", np.zeros(n, dtype=bool))
        self.fields.setdefault("iterations", np.zeros(n, dtype=np.int64))
        self.fields.setdefault("residual", np.full(n, np.nan))
        self.fields.setdefault("start", np.array([""] * n, dtype=object))

    def set(self, i, result: FixedPointResult):
        """Store ``result`` (with ``info["state"]``) at grid index ``i``."""
        f = self.fields
        for key, val in result.info["state"].record().items():
            val = np.asarray(val, dtype=float)
            if key not in f:
                f[key] = np.full((self.alpha.size,) + val.shape, np.nan)
            f[key][i] = val
        f["converged"][i] = result.converged
        f["exists"][i] = True
        f["iterations"][i] = result.iterations
        f["residual"][i] = result.residual
        f["start"][i] = result.start
        self.points[i] = np.array(result.x, copy=True)

    def __getitem__(self, key):
        return self.fields[key]


@dataclass
class SweepResult:
    """Everything a sweep produces.

    Attributes
    ----------
    alpha : ndarray, shape (n_alpha,)
    branches : dict[str, BranchData]
    equilibrium : dict
        ``alpha``, ``mmse``, ``free_entropy``, ``branch`` (names), each shape (n_alpha,).
    transitions : dict
        ``alpha_sp``, ``alpha_c`` (NaN when absent) of the model's main non-universal branch
        (``model.specialized_branch``, default ``"specialized"``).
    readout_values, readout_weights : ndarray, shape (n_readout,)
    branch_transitions : dict[str, dict]
        ``{branch: {"alpha_sp": float, "alpha_c": float}}`` for every non-universal branch:
        where it appears and where it becomes the equilibrium (its free-entropy crossing
        with the universal branch, or with the previous equilibrium branch for models with
        ``phase_transitions``).
    equilibrium_changes : list of dict
        For models with ``phase_transitions`` (two hidden layers): every change of the
        equilibrium phase (see :func:`replica.two_layer.phase_transitions`); else empty.
    """

    alpha: np.ndarray
    branches: dict
    equilibrium: dict
    transitions: dict
    readout_values: np.ndarray
    readout_weights: np.ndarray
    branch_transitions: dict = field(default_factory=dict)
    equilibrium_changes: list = field(default_factory=list)


def _is_universal(result) -> bool:
    return float(np.max(np.abs(result.info["state"].overlaps), initial=0.0)) < UNIVERSAL_TOL


def _exists(result) -> bool:
    return "state" in result.info and result.converged and not _is_universal(result)


def _solve(cache, key, i, alpha, compute):
    """Run ``compute()`` directly, or through the resume hook ``cache`` (see :func:`sweep`)."""
    if cache is None:
        return compute()
    return cache(key, i, alpha, compute)


def _follow(model, alphas, order, overlaps0, start, solve_kw, pbar=None, *, key=None, cache=None):
    """Continuation along ``order`` from ``overlaps0``; returns {index: result} where it exists."""
    out = {}
    warm = None
    for i in order:
        res = _solve(cache, key, i, alphas[i],
                     lambda a=alphas[i], w=warm: model.solve_from(a, overlaps0, w, start=start, **solve_kw))
        if pbar is not None:
            pbar.update(1)
        if _exists(res):
            out[i] = res
            warm = res.x
        else:
            # branch lost (spinodal) or failure: later points restart from the fresh start
            warm = None
    return out


def sweep(model, alphas, *, branches="all", progress=True, solve_kw=None, locate=True,
          cache=None) -> SweepResult:
    """Trace every branch of ``model`` on the α grid.

    Parameters
    ----------
    model : ShallowModel or any model with ``solve_universal``, ``solve_from``, ``starts``
        The problem (activation, γ, Δ, priors).
    alphas : array_like, shape (n_alpha,)
        Strictly positive, distinct sample ratios (sorted internally).
    branches : {"all", "universal"}, keyword-only
        ``"universal"`` solves only the zero-overlap branch.
    progress : bool, keyword-only
        Show a tqdm progress bar.
    solve_kw : dict, keyword-only
        Extra options for the model's solver (damping, tolerances, max_iter).
    locate : bool, keyword-only
        Locate ``alpha_sp`` and ``alpha_c`` by root finding.
    cache : callable, optional, keyword-only
        Checkpoint/resume hook (default None: solve everything). Every solve of the
        universal branch and of the continuation passes is routed through
        ``cache(key, i, alpha, compute)``, where ``key`` is ``"universal"`` or
        ``"<start>:<down|up>"``, ``i`` the index in the sorted grid and ``compute()``
        performs the solve (with the warm start of the pass); the hook returns a
        :class:`FixedPointResult` — stored or freshly computed — and may record it
        (see :class:`replica.io.SweepCheckpoint`). Transitions are always recomputed.

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        Empty, non-finite, non-positive or repeated α values; unknown ``branches``.
    """
    alphas = np.asarray(alphas, dtype=float)
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError("alpha grid must be a non-empty 1-D list of numbers")
    if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
        raise ValueError("alpha values must be finite and > 0")
    if np.unique(alphas).size != alphas.size:
        raise ValueError("alpha values must be distinct")
    if branches not in ("all", "universal"):
        raise ValueError(f"branches must be 'all' or 'universal', got {branches!r}")
    alphas = np.sort(alphas)
    solve_kw = dict(solve_kw or {})
    n = alphas.size
    starts = model.starts() if branches == "all" else {}
    passes = []
    for name, (overlaps0, direction) in starts.items():
        if direction in ("down", "both"):
            passes.append((name, overlaps0, range(n - 1, -1, -1), f"{name}:down"))
        if direction in ("up", "both"):
            passes.append((name, overlaps0, range(n), f"{name}:up"))
    pbar = tqdm(total=n * (1 + len(passes)), disable=not progress, desc="α sweep", unit="solve", leave=False)

    universal = BranchData("universal", alphas)
    for i, a in enumerate(alphas):
        universal.set(i, _solve(cache, "universal", i, a, lambda a=a: model.solve_universal(a)))
        pbar.update(1)
    out = {"universal": universal}

    if passes:
        follows = [_follow(model, alphas, order, ov0, name, solve_kw, pbar, key=key, cache=cache)
                   for name, ov0, order, key in passes]
        phase = getattr(model, "phase", None)
        named = {}
        for i in range(n):
            distinct = []
            for fol in follows:
                r = fol.get(i)
                if r is None:
                    continue
                ov = r.info["state"].overlaps
                if all(np.max(np.abs(ov - d.info["state"].overlaps)) > DISTINCT_TOL for d in distinct):
                    distinct.append(r)
            distinct.sort(key=lambda r: -model.specialization(r.info["state"]))
            if phase is None:
                # ranked names: the most specialized point, then the next one
                chosen = list(zip(("specialized", "partial"), distinct))
                if len(distinct) > 2:
                    logger.info("α=%g: %d distinct non-universal points, keeping two", alphas[i], len(distinct))
            else:
                # one branch per phase; within a phase the point of largest free entropy
                by_phase = {}
                for r in distinct:
                    name = phase(r.info["state"])
                    if name == "universal":
                        continue
                    if name not in by_phase or (r.info["state"].free_entropy
                                                > by_phase[name].info["state"].free_entropy):
                        by_phase[name] = r
                chosen = list(by_phase.items())
            for name, r in chosen:
                if name not in named:
                    named[name] = BranchData(name, alphas)
                named[name].set(i, r)
        if phase is None:
            named.setdefault("specialized", BranchData("specialized", alphas))
        out.update(sorted(named.items(), key=lambda kv: _PHASE_ORDER.get(kv[0], len(_PHASE_ORDER))))
    pbar.close()

    equilibrium = _equilibrium(alphas, out)
    main = getattr(model, "specialized_branch", "specialized")
    transitions = {"alpha_sp": math.nan, "alpha_c": math.nan}
    per_branch = {}
    if branches == "all" and locate:
        for name in out:
            if name != "universal":
                per_branch[name] = locate_transitions(model, alphas, out, solve_kw, name=name)
        transitions = dict(per_branch.get(main, transitions))
    result = SweepResult(alphas, out, equilibrium, transitions,
                         np.asarray(model.readout_values), np.asarray(model.readout_weights), per_branch)
    if per_branch and hasattr(model, "phase_transitions"):
        # the equilibrium can change between two non-universal phases: there a branch's
        # alpha_c is its crossing with the previous equilibrium, not with the universal branch
        result.equilibrium_changes = model.phase_transitions(result, solve_kw=solve_kw)
        seen = set()
        for change in result.equilibrium_changes:
            to = change["to"]
            if change["located"] and to in per_branch and to not in seen:
                seen.add(to)
                per_branch[to]["alpha_c"] = float(change["alpha"])
        result.transitions = dict(per_branch.get(main, transitions))
    return result


def _equilibrium(alphas, branches):
    n = alphas.size
    best = np.full(n, -np.inf)
    name = np.array(["universal"] * n, dtype=object)
    mmse = np.full(n, np.nan)
    for bname, b in branches.items():
        if "free_entropy" not in b.fields:  # branch found nowhere on the grid
            continue
        f = b["free_entropy"]
        ok = b["exists"] & b["converged"] & np.isfinite(f) | (b["exists"] & np.isposinf(f))
        better = ok & (f > best)
        best[better] = f[better]
        name[better] = bname
        mmse[better] = b["mmse"][better]
    return {"alpha": alphas.copy(), "mmse": mmse, "free_entropy": best, "branch": name}


def locate_transitions(model, alphas, branches, solve_kw=None, *, rtol=1e-7, name=None) -> dict:
    """Locate ``alpha_sp`` and ``alpha_c`` of one branch by root finding between grid points.

    Parameters
    ----------
    model : ShallowModel
    alphas : ndarray, shape (n_alpha,)
    branches : dict[str, BranchData]
        As returned inside :func:`sweep`.
    rtol : float
        Relative tolerance on the located α (default 1e-7, so the transitions are
        converged to better than 1e-6 relative).
    name : str, optional, keyword-only
        The branch (default ``model.specialized_branch`` or ``"specialized"``). For models
        that name branches by phase (``model.phase(state)``), a solve counts as the branch
        only where it lands in the same phase.

    Returns
    -------
    dict
        ``alpha_sp``: smallest α where the branch exists (bisection on
        existence, warm-started from the nearest existing point above: a Newton solve,
        and where it finds nothing, at most ``EXISTENCE_MAX_ITER`` damped iterations with
        guarded Newton steps);
        ``alpha_c``: first α where the free entropy of the branch crosses that of the
        universal branch (Brent). NaN when absent or when the
        event lies outside the grid.
    """
    solve_kw = dict(solve_kw or {})
    # existence near a spinodal is tested with a Newton solve from the nearest existing
    # point: damped iteration slows down critically there and would misplace alpha_sp
    newton_kw = {**solve_kw, "method": "newton"}
    # ... and where that finds nothing, the damped iteration with guarded Newton steps; its
    # iterations are capped because below a fold the iterate lingers at the ghost of the branch
    fallback_kw = {**solve_kw, "guarded_newton": True, "max_iter": EXISTENCE_MAX_ITER}
    if name is None:
        name = getattr(model, "specialized_branch", "specialized")
    spec = branches.get(name)
    phase = getattr(model, "phase", None)

    def on_branch(r):
        return _exists(r) and (phase is None or phase(r.info["state"]) == name)

    out = {"alpha_sp": math.nan, "alpha_c": math.nan}
    if spec is None:
        return out
    exists = spec["exists"] & spec["converged"]
    idx = np.flatnonzero(exists)
    spec_points = spec.points
    if idx.size == 0:
        return out
    # ---- alpha_sp: first existing index, refined by bisection on existence below it
    i = idx[0]
    sp_point = None  # (α, packed point) of the specialized branch at alpha_sp
    if i > 0:
        lo, hi = alphas[i - 1], alphas[i]
        warm = model.solve_from(hi, None, spec_points[i], start="informed", **solve_kw).x
        while hi - lo > rtol * hi:
            mid = 0.5 * (lo + hi)
            r = model.solve_from(mid, None, warm, start="informed", **newton_kw)
            if not on_branch(r):
                # the Newton solve can fail, or land on the universal point, where the branch
                # exists (next to a fold or a continuous onset): ask the damped iteration
                r = model.solve_from(mid, None, warm, start="informed", **fallback_kw)
            if on_branch(r):
                hi, warm = mid, r.x
            else:
                lo = mid
        out["alpha_sp"] = float(hi)
        sp_point = (float(hi), warm)

    # ---- alpha_c: first sign change of f_spec − f_univ along the branch, starting at alpha_sp
    univ = branches["universal"]

    def fdiff_at(al, warm):
        r = model.solve_from(al, None, warm, start="informed", **solve_kw)
        if not on_branch(r):
            return -np.inf, warm
        fu = model.solve_universal(al).info["state"].free_entropy
        return r.info["state"].free_entropy - fu, r.x

    nodes = []  # (α, f_spec − f_univ, packed point) on an unbroken run of the branch
    if sp_point is not None:
        d_sp, x_sp = fdiff_at(sp_point[0], sp_point[1])
        nodes.append((sp_point[0], d_sp, x_sp))
    for j, k in enumerate(idx):
        if j > 0 and k != idx[j - 1] + 1:
            break
        nodes.append((float(alphas[k]), float(spec["free_entropy"][k] - univ["free_entropy"][k]), spec_points[k]))
    if nodes and nodes[0][1] >= -1e-12 * max(1.0, abs(univ["free_entropy"][idx[0]])):
        # born with f ≥ f_univ: continuous transition (or already the equilibrium at the grid start)
        out["alpha_c"] = out["alpha_sp"] if sp_point is not None else math.nan
        return out
    for (a_lo, d_lo, _), (a_hi, d_hi, x_hi) in zip(nodes[:-1], nodes[1:]):
        if d_lo < 0 <= d_hi:
            warm = [x_hi]

            def fdiff(al):
                # the bracket's ends are known (brentq evaluates them first)
                if al == a_lo:
                    return d_lo
                if al == a_hi:
                    return d_hi
                d, warm[0] = fdiff_at(al, warm[0])
                return d

            try:
                out["alpha_c"] = float(optimize.brentq(fdiff, a_lo, a_hi, rtol=rtol, xtol=1e-14))
            except ValueError as exc:  # pragma: no cover - defensive
                logger.warning("alpha_c bracketing failed: %s", exc)
            break
    return out
