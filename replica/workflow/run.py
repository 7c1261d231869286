"""One way to run a sweep: :func:`run_sweep` (used by ``replica-sweep``, phase-diagram lines and figures).

A sweep is always computed the same way, whoever asks for it:

1. the model is built from resolved options by the registry (:func:`replica.models.build`, through
   :func:`replica.workflow.model_options.resolve_model`), which also names its architecture;
2. the architecture's preparation hook runs (``Architecture.prepare``: e.g. ``--s-grid auto`` of two
   hidden layers refines the panel rule in s at the sweep's α, :func:`replica.models.two_layer.converge_s_grid`);
3. :func:`replica.continuation.sweep` traces every branch (``checkpoint`` records and replays the solves);
4. the model's ``discretization_error`` hook (:class:`replica.interface.ModelDefaults`) estimates the
   error of its grid at every stored point (dataset ``discretization_error``);
5. the model's grids, dataset axes, grid rule, state schema and the architecture's name are put into the returned
   :class:`~replica.continuation.SweepResult`, so that :func:`replica.workflow.io.write_sweep` needs no model.

:class:`SweepCheckpoint` (the ``cache`` hook of :func:`replica.continuation.sweep`) lives here too: it replays
stored solves through the model (``model.state``, ``model.solve_from``); :mod:`replica.workflow.io` only
reads and writes its records (:func:`~replica.workflow.io.write_checkpoint`,
:func:`~replica.workflow.io.read_checkpoint`).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from pathlib import Path

import numpy as np

from ..engine import DEFAULT_DAMPING
from ..interface import hook, missing_members, state_schema

__all__ = ["run_sweep", "discretization_errors", "SweepCheckpoint"]

logger = logging.getLogger(__name__)


#: BLAS threads of a sweep (:func:`run_sweep`): the solvers' dense algebra is on matrices of at most a few
#: hundred rows, where a second thread only adds synchronisation (measured in docs/performance.md)
SWEEP_BLAS_THREADS = 1


def run_sweep(request: dict, alphas, *, checkpoint=None, progress: bool = True, branches: str | None = None,
              damping: float | None = None, model=None, blas_threads: int | None = SWEEP_BLAS_THREADS,
              features: bool = True):
    """Build, prepare and sweep the model of ``request``; the result carries everything a file stores.

    Parameters
    ----------
    request : dict
        Resolved model options (:func:`replica.workflow.model_options.build_model`: ``layers``, ``gamma``,
        ``activation``, ``delta``, …, optionally ``architecture``, ``s_grid``), with the solver options
        ``branches`` (``"all"`` or ``"universal"``, default ``"all"``) and ``damping`` (in [0, 1), default
        ``replica.engine.DEFAULT_DAMPING``, 0.5).
    alphas : array_like, shape (n_alpha,)
        Distinct sample ratios α > 0 (sorted here).
    checkpoint : SweepCheckpoint, optional, keyword-only
        Records every solve (and replays those it holds); bound here to the prepared model.
    progress : bool, keyword-only
        Show a progress bar.
    branches, damping : optional, keyword-only
        Override ``request["branches"]`` and ``request["damping"]``.
    model : ReplicaModel, optional, keyword-only
        The model of ``request`` when the caller has built it already (it is not built again).
    blas_threads : int or None, keyword-only
        Threads of the BLAS library while the sweep runs (``threadpoolctl``; default
        :data:`SWEEP_BLAS_THREADS` = 1); None leaves the library's setting.
    features : bool, keyword-only
        Locate every group's own transition (:func:`feature_transitions`; default True). The phase diagram,
        which does not store them, passes False (a 100-atom law: 0.8 s per sweep).

    Returns
    -------
    replica.continuation.SweepResult
        With ``grids``, ``dataset_axes``, ``s_grid_rule``, ``architecture`` and ``state_schema`` filled in, and the dataset
        ``discretization_error`` in every branch for models that estimate it (NaN where a point does not
        exist, did not converge or the estimate failed).

    Raises
    ------
    replica.workflow.config.UsageError
        Invalid options (one line naming the option).
    ValueError
        Empty, non-finite, non-positive or repeated α values.
    TypeError
        The architecture's model lacks a required member of :class:`replica.interface.ReplicaModel`.
    """
    from ..continuation import sweep
    from .model_options import resolve_model

    branches = str(request.get("branches", "all") if branches is None else branches)
    damping = float(request.get("damping", DEFAULT_DAMPING) if damping is None else damping)
    solve_kw = {"damping": damping}
    built, arch = resolve_model(request, build_it=model is None)
    model = built if model is None else model
    missing = missing_members(model)
    if missing:
        raise TypeError(f"architecture {arch.name}: the model lacks the required members {', '.join(missing)} "
                        "(replica.interface.ReplicaModel)")
    alphas = np.sort(np.asarray(alphas, dtype=float))
    prepare = arch.preparer()
    if prepare is not None:
        model = prepare(model, request, alphas, solve_kw=solve_kw, branches=branches)
    if checkpoint is not None:
        checkpoint.bind(model, solve_kw, architecture=arch.name)
    with _blas_limit(blas_threads, scipy_blas=hook(model, "update_many") is not None):
        result = sweep(model, alphas, branches=branches, progress=progress, solve_kw=solve_kw, cache=checkpoint)
        errors = discretization_errors(model, result, solve_kw)
    grids = hook(model, "grids")
    table = feature_transitions(model, result, solve_kw) if features else {}
    errors, equilibrium = feature_corrected(model, errors, table, solve_kw)
    return dataclasses.replace(
        result, branches=errors, grids=dict(grids or {}), feature_transitions=table,
        equilibrium=result.equilibrium if equilibrium is None else equilibrium,
        dataset_axes=hook(model, "dataset_axes"), s_grid_rule=hook(model, "s_grid_rule"), architecture=arch.name,
        state_schema=state_schema(model))


def _blas_limit(threads, scipy_blas=True):
    """``threadpoolctl.threadpool_limits(threads, "blas")``, or nothing for None. The limit reaches only the
    BLAS libraries loaded when it is set, and scipy ships its own OpenBLAS, loaded with ``scipy.linalg``
    (the chord corrector's LU factors, ARPACK, GMRES: models with a vectorized map): with ``scipy_blas`` it
    is imported first (without it a 255-unknown LU took 25 ms of CPU instead of 1.3 ms, the other thread
    spinning). Without, numpy's BLAS alone is limited (the dense solves of :func:`replica.engine.newton_lu`
    and the eigenvalues; MINPACK uses none), and a sweep that needs no ``scipy.linalg`` does not pay its
    import (0.14 s)."""
    if threads is None:
        import contextlib

        return contextlib.nullcontext()
    if scipy_blas:
        import scipy.linalg  # noqa: F401 - lazy (start-up, docs/architecture.md): loads scipy's BLAS before the limit
    from threadpoolctl import threadpool_limits  # lazy: start-up (docs/architecture.md)

    return threadpool_limits(limits=int(threads), user_api="blas")


def feature_transitions(model, result, solve_kw=None) -> dict:
    """Every group's own first-order transition along every branch of ``result`` and at the changes of its
    equilibrium (issue 40: the sequence of feature-learning transitions of a many-feature target).

    Along a branch, between two neighbouring grid points where its ``learned_features`` grows from ``k₀`` to
    ``k₁``, the model's ``feature_transitions`` hook locates the groups ``k₀ … k₁ − 1`` one by one (the α where
    the stationary points with ``k`` and ``k + 1`` groups learned have equal free entropy,
    :meth:`replica.readout_grid.ProfileSolver.feature_transitions`; kind ``feature``). At a change of the
    equilibrium from branch A to B at α_c, the groups learned on B and not on A there jump together (kind
    ``equilibrium_change``; their overlaps from the model's ``feature_point`` hook at α_c). ``equilibrium``
    says whether the entry's branch is the equilibrium at its α (every ``equilibrium_change`` entry is). A model
    with ``feature_point`` and no ``feature_transitions`` (two hidden layers, where every set of learned groups
    is a branch of its own and each group's jump is a located change of the equilibrium between two of them)
    gets the ``equilibrium_change`` entries only.

    Returns
    -------
    dict
        Columns of :data:`replica.workflow.io.FEATURE_DATASETS` (arrays of one length, ordered in α), or an
        empty dict for a model without the hooks (or without groups of readouts).
    """
    locate, point = hook(model, "feature_transitions"), hook(model, "feature_point")
    if locate is None and point is None:
        return {}
    rows = []
    counts = {}
    for name, b in result.branches.items():
        if "learned_features" not in b.fields:
            continue
        k = np.asarray(b["learned_features"], dtype=float)
        ok = np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool) & np.isfinite(k)
        located = []
        for i in range(b.alpha.size - 1):
            if locate is not None and ok[i] and ok[i + 1] and k[i + 1] > k[i]:
                got = locate(float(b.alpha[i]), b.points[i], int(k[i]), float(b.alpha[i + 1]), int(k[i + 1]),
                             solve_kw) or []
                located += [{**r, "branch": name, "kind": "feature"} for r in got]
        counts[name] = (b.alpha, k, ok, located)
        rows += located
    if not counts:
        return {}
    changes = sorted(getattr(result, "equilibrium_changes", []) or [], key=lambda c: float(c["alpha"]))
    first = str(result.equilibrium["branch"][0]) if len(result.equilibrium.get("branch", [])) else "universal"

    def equilibrium_at(a):
        current = first
        for c in changes:
            if float(c["alpha"]) <= a:
                current = str(c["to"])
        return current

    def count_at(name, a, before):
        """Groups learned on branch ``name`` at ``a`` (0 on a branch without groups, the universal one): its count
        at the nearest grid point before (``before``) or after ``a`` where it exists, corrected by its located
        transitions in between; and that grid index (None where there is none)."""
        if name not in counts:
            return 0, None
        alpha, k, ok, located = counts[name]
        idx = np.flatnonzero(ok)
        if idx.size == 0:
            return 0, None
        side = idx[alpha[idx] <= a] if before else idx[alpha[idx] >= a]
        i = int(side[-1] if before else side[0]) if side.size else int(idx[np.argmin(np.abs(alpha[idx] - a))])
        lo, hi = sorted((float(alpha[i]), a))
        moved = sum(1 for r in located if lo < r["alpha"] <= hi)
        return int(k[i]) + (moved if alpha[i] <= a else -moved), i

    def solved_at(name, i, a):
        """Branch ``name`` solved at ``a`` from its grid point ``i``: ``(groups learned, packed point)`` or None."""
        try:
            r = model.solve_from(a, None, result.branches[name].points[i], start="feature",
                                 **dict(solve_kw or {}))
        except (ValueError, FloatingPointError, ZeroDivisionError, KeyError):
            return None
        st = r.info.get("state")
        count = getattr(st, "learned_features", None)
        if not r.converged or count is None or not math.isfinite(float(count)):
            return None
        return int(count), r.x

    for c in changes:
        a_c, frm, to = float(c["alpha"]), str(c["from"]), str(c["to"])
        n_from, i_from = count_at(frm, a_c, True)
        n_to, i_to = count_at(to, a_c, False)
        # the groups a branch learned between α_c and its nearest grid point, where that interval was not
        # located along the branch (the branch starts or ends in it): from the branch solved at α_c
        for name, i, before in ((frm, i_from, True), (to, i_to, False)):
            if locate is None or name not in counts or i is None:
                continue
            alpha, k, _, located = counts[name]
            a_i = float(alpha[i])
            got = solved_at(name, i, a_c) if a_i != a_c else None
            if got is None:
                continue
            n_c, x_c = got
            new = []
            if before and n_c > int(k[i]) and not any(a_i < r["alpha"] <= a_c for r in located):
                new = locate(a_i, result.branches[name].points[i], int(k[i]), a_c, n_c, solve_kw) or []
            elif not before and int(k[i]) > n_c and not any(a_c < r["alpha"] <= a_i for r in located):
                new = locate(a_c, x_c, n_c, a_i, int(k[i]), solve_kw) or []
            new = [{**r, "branch": name, "kind": "feature"} for r in new]
            located += new
            rows += new
            if before:
                n_from = n_c
            else:
                n_to = n_c
        if n_to <= n_from or point is None:
            continue
        before = point(a_c, n_from, result.branches[frm].points.get(i_from), solve_kw) if i_from is not None else None
        after = point(a_c, n_to, result.branches[to].points.get(i_to), solve_kw) if i_to is not None else None
        for g in range(n_from, n_to):
            rows.append({"alpha": a_c, "group": g, "branch": to, "kind": "equilibrium_change",
                         "s": math.nan if after is None else after["s"][g],
                         "mass": math.nan if after is None else after["mass"][g],
                         "overlap_before": 0.0 if before is None else before["overlap"][g],
                         "overlap_after": math.nan if after is None else after["overlap"][g],
                         "mmse_before": float(c.get("mmse_before", math.nan)),
                         "mmse_after": float(c.get("mmse_after", math.nan))})
    rows.sort(key=lambda r: (r["alpha"], r["group"]))
    from .io import FEATURE_DATASETS

    out = {}
    for col in FEATURE_DATASETS:
        if col == "equilibrium":
            out[col] = np.array([r["kind"] == "equilibrium_change" or equilibrium_at(r["alpha"]) == r["branch"]
                                 for r in rows], dtype=bool)
        elif col in ("branch", "kind"):
            out[col] = np.array([str(r[col]) for r in rows], dtype=object)
        elif col == "group":
            out[col] = np.array([int(r[col]) for r in rows], dtype=np.int64)
        else:
            out[col] = np.array([float(r[col]) for r in rows], dtype=float)
    return out


def feature_corrected(model, branches, table, solve_kw=None):
    """The branches with every grid point put in the family of groups that its located transitions count, and
    the equilibrium rebuilt from them (None where nothing changed).

    A branch's solver picks each group's root by the per-neuron potentials, which is right to first order in the
    group's readout mass: within about that mass below a group's own α_p its grid point may have learned the
    group already (a stationary point of lower free entropy than the one without it). Along a branch the groups
    learned at ``alpha[i]`` are those at its first stored point plus its ``feature`` transitions (``table``, of
    :func:`feature_transitions`) in between; where the stored count differs, the point is replaced by the
    model's ``feature_solution`` hook with that count (start ``feature``; its stability recomputed).

    Returns
    -------
    (dict[str, BranchData], dict or None)
        New branch records (copies where a point changed) and the equilibrium of
        :func:`replica.continuation.equilibrium.equilibrium_of`, or None.
    """
    solve = hook(model, "feature_solution")
    if solve is None or not len(table.get("alpha", ())):
        return branches, None
    from ..continuation.equilibrium import equilibrium_of
    from ..continuation.operators import stability
    from ..continuation.records import channel_fields

    alpha_p, where, kind = (np.asarray(table[c]) for c in ("alpha", "branch", "kind"))
    out, changed = dict(branches), 0
    for name, b in branches.items():
        on = np.sort(alpha_p[(kind == "feature") & (where == name)].astype(float))
        if on.size == 0 or "learned_features" not in b.fields:
            continue
        k = np.asarray(b["learned_features"], dtype=float)
        idx = np.flatnonzero(np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool) & np.isfinite(k))
        i0 = int(idx[0])
        k0 = int(k[i0])  # no located transition precedes the first point: its own count
        copy = None
        for i in idx:
            exact = k0 + int(np.sum(on <= b.alpha[i])) - int(np.sum(on <= b.alpha[i0]))
            if exact == int(k[i]):
                continue
            r = solve(float(b.alpha[i]), exact, b.points[i], solve_kw)
            if r is None or not r.converged:
                logger.warning("%s at alpha = %g: no stationary point with the %d groups its transitions count",
                               name, b.alpha[i], exact)
                continue
            if copy is None:
                copy = dataclasses.replace(b, fields={key: np.array(v, copy=True) for key, v in b.fields.items()},
                                           points=dict(b.points))
            copy.set(int(i), r, stability(model, float(b.alpha[i]), r.x), channel_fields(model, r))
            if "discretization_error" in copy.fields:
                copy.fields["discretization_error"][i] = float(getattr(r.info["state"], "discretization_error", 0.0))
            changed += 1
        if copy is not None:
            out[name] = copy
    if not changed:
        return branches, None
    alphas = next(iter(out.values())).alpha
    return out, equilibrium_of(alphas, out)


def discretization_errors(model, result, solve_kw=None) -> dict:
    """The branches of ``result`` with the dataset ``discretization_error`` of the model's estimate added.

    Parameters
    ----------
    model : ReplicaModel
        Its ``discretization_error(alpha, x, **solve_kw)`` hook (relative change of mmse and free entropy on
        the doubled grid; :meth:`replica.models.two_layer.TwoLayerModel.discretization_error`) is called at every
        stored point that exists and converged; a model without the hook leaves the branches as they are.
    result : replica.continuation.SweepResult
        Left unchanged.
    solve_kw : dict, optional
        Solver options of the sweep.

    Returns
    -------
    dict[str, replica.continuation.BranchData]
        New branch records (the same arrays, plus ``discretization_error`` of shape (n_alpha,)).
    """
    estimate = hook(model, "discretization_error")
    if estimate is None:
        return dict(result.branches)
    out = {}
    for name, branch in result.branches.items():
        err = np.full(branch.alpha.size, np.nan)
        for i, x in branch.points.items():
            if branch["exists"][i] and branch["converged"][i]:
                err[i] = estimate(branch.alpha[i], x, **dict(solve_kw or {}))
        out[name] = dataclasses.replace(branch, fields={**branch.fields, "discretization_error": err})
    return out


# --------------------------------------------------------------------------- checkpoints
class SweepCheckpoint:
    """Checkpoint/resume hook for :func:`replica.continuation.sweep` (its ``cache`` argument).

    Every solve of the sweep goes through ``checkpoint(key, i, alpha, compute)``. A point
    already stored is returned without solving: its order parameters are rebuilt from the
    stored packed point with ``model.state(alpha, x)`` (or, if the point is not finite,
    re-solved from it as a warm start), with the stored
    ``converged``/``status``/``iterations``/``residual``; the universal branch is simply
    re-solved (one-dimensional root finding). New points are recorded, and every
    ``every`` seconds the record is written atomically to ``path`` (a valid HDF5 file
    with ``complete = 0``, layout in :mod:`replica.workflow.io`). A resumed sweep therefore follows
    exactly the same warm starts as an uninterrupted one.

    Parameters
    ----------
    path : str or Path
        Checkpoint file.
    model : ReplicaModel or None
        The sweep's model (None: bound later by :func:`run_sweep`, :meth:`bind`).
    alphas : array_like, shape (n_alpha,)
        The α grid of the sweep (sorted here).
    parameters, configuration : dict
        Stored in the root attributes (as :func:`~replica.workflow.io.write_sweep` does).
    every : float, keyword-only
        Seconds between checkpoint writes (0: after every solve).
    solve_kw : dict, keyword-only
        Solver options, for re-solving from a stored point.

    Attributes
    ----------
    lines : list or None
        ``replica-phase-diagram --trace``: the phase lines traced after the sweeps, written with the solves
        (:func:`~replica.workflow.io.write_checkpoint`); None for a sweep.
    prefix : str
        Prepended to the keys of the solves recorded from now on (``replica-phase-diagram --trace`` keeps the
        sweep at the last parameter value under ``top/``); empty by default.
    """

    def __init__(self, path, model, alphas, parameters, configuration=None, *, every=30.0, solve_kw=None):
        self.path = Path(path)
        self.model = model
        self.alphas = np.sort(np.asarray(alphas, dtype=float))
        self.parameters = parameters
        self.configuration = configuration
        self.every = float(every)
        self.solve_kw = dict(solve_kw or {})
        self.records = {}
        self.architecture = ""
        self.reused = 0
        self.computed = 0
        self._last_write = time.monotonic()
        self._dirty = False
        self.lines = None
        self.prefix = ""

    def bind(self, model, solve_kw=None, *, architecture: str = "") -> "SweepCheckpoint":
        """Use ``model`` (and ``solve_kw``) to replay the stored solves, and name its ``architecture`` in the
        file; returns self."""
        self.model = model
        self.architecture = str(architecture)
        if solve_kw is not None:
            self.solve_kw = dict(solve_kw)
        return self

    def _record(self, key):
        from .io import empty_checkpoint_record

        if key not in self.records:
            self.records[key] = empty_checkpoint_record(self.alphas.size)
        return self.records[key]

    @property
    def n_done(self) -> int:
        """Number of stored solves."""
        return int(sum(r["done"].sum() for r in self.records.values()))

    def __call__(self, key, i, alpha, compute):
        stored = self.prefix + key
        rec = self.records.get(stored)
        if rec is not None and rec["done"][i] and key != "universal":
            try:
                got = self._rebuild(rec, i, alpha)
            except ValueError as exc:  # a point this model cannot read (another packing: an older version's file)
                logger.warning("checkpoint: the stored solves of %s do not fit this model (%s); they are solved "
                               "again", stored, str(exc).splitlines()[0])
                rec["done"][:] = False
            else:
                self.reused += 1
                return got
        res = compute()
        self._store(stored, i, res)
        self.computed += 1
        if time.monotonic() - self._last_write >= self.every:
            self.write()
        return res

    def _store(self, key, i, res):
        rec = self._record(key)
        x = np.asarray(res.x, dtype=float).ravel()
        if rec["x"] is None or rec["x"].shape[1] != x.size:
            old = rec["x"]
            rec["x"] = np.full((self.alphas.size, x.size), np.nan)
            if old is not None:  # pragma: no cover - packed size never changes within a model
                rec["done"][:] = False
        rec["x"][i] = x
        rec["done"][i] = True
        rec["has_state"][i] = "state" in res.info
        rec["converged"][i] = bool(res.converged)
        rec["iterations"][i] = int(res.iterations)
        rec["residual"][i] = float(res.residual)
        rec["status"][i] = str(res.status)
        rec["start"][i] = str(res.start)
        rec["damping"][i] = float(res.damping)
        self._dirty = True

    def _rebuild(self, rec, i, alpha):
        from ..engine import STATUS_MESSAGES, FixedPointResult

        x = np.array(rec["x"][i], dtype=float)
        status = str(rec["status"][i])
        res = FixedPointResult(x, bool(rec["converged"][i]), status, STATUS_MESSAGES.get(status, status),
                               int(rec["iterations"][i]), float(rec["residual"][i]), float(rec["damping"][i]),
                               str(rec["start"][i]), {"resumed": True})
        if not rec["has_state"][i]:
            return res
        if np.all(np.isfinite(x)):
            res.info["state"] = self.model.state(alpha, x)
            return res
        again = self.model.solve_from(alpha, None, x, start=res.start, **self.solve_kw)
        again.info["resumed"] = True
        return again

    def write(self):
        """Write the checkpoint atomically to ``path`` (a valid HDF5 file, ``complete = 0``)."""
        from .io import write_checkpoint

        write_checkpoint(self.path, self.alphas, self.records, self.parameters, self.configuration,
                         architecture=self.architecture, lines=self.lines)
        self._last_write = time.monotonic()
        self._dirty = False
        logger.debug("checkpoint of %d solves written to %s", self.n_done, self.path)

    def add_line(self, line) -> None:
        """Record one more traced line (or None: a task that traced none) and write the checkpoint; ``lines`` holds
        it once the write is done (an interrupted write keeps the previous checkpoint, and ``lines`` what it holds)."""
        kept = self.lines
        self.lines = (kept or []) + [line]
        try:
            self.write()
        except BaseException:
            self.lines = kept
            raise

    @property
    def dirty(self) -> bool:
        """Whether solves were recorded since the last :meth:`write`."""
        return self._dirty

    def load_records(self, path) -> "SweepCheckpoint":
        """Add the solves stored in the checkpoint file ``path`` (written by :meth:`write`); returns self.

        Raises
        ------
        ValueError, replica.workflow.safe_write.ResultFileError
            As :func:`replica.workflow.io.read_checkpoint` (no checkpoint, another α grid, unreadable file).
        """
        from .io import read_checkpoint

        for key, stored in read_checkpoint(path, self.alphas).items():
            rec = self._record(key)
            rec.update({name: val for name, val in stored.items() if name in rec})
        return self

    @classmethod
    def load(cls, path, model, alphas, parameters, configuration=None, **kw) -> "SweepCheckpoint":
        """Reload the checkpoint stored in ``path`` by an interrupted sweep (later writes go to ``path``).

        Raises
        ------
        ValueError
            The file is not a checkpoint or its α grid differs from ``alphas``.
        """
        return cls(path, model, alphas, parameters, configuration, **kw).load_records(path)
