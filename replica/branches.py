"""Branches of stationary points by continuation, the equilibrium, its changes, stability.

Several stationary points of the free entropy coexist over wide ranges of α
(docs/theory.md §5.2, §6). The phase structure is computed for any solver that implements
:class:`replica.interface.ReplicaModel` (one hidden layer, deep, two hidden layers):

1. **Universal branch.** Solved exactly at every α (``model.solve_universal``).
2. **Seeds.** Each of the model's starts (``model.starts()``: informed, uninformed, partial,
   per-layer …) is followed along the α grid by the damped iteration with warm starts, in
   its direction (``up``, ``down`` or ``both``). The damped iteration reaches only fixed
   points that attract it (stable fixed points of the damped map); every non-universal
   point it finds with ``stability < 1`` is a *seed* (a Newton polish of a slow iterate can
   land on a saddle: such points are not seeds).
3. **Branches by continuation.** A branch is a connected curve of stationary points. From
   each seed that does not lie on a branch already traced, the curve is followed in α in
   both directions by natural-parameter continuation: a secant predictor, a Newton corrector
   (MINPACK ``hybr`` on ``F(x) − x``, :func:`replica.engine.solve_fixed_point` with
   ``method="newton"``) and a step control that halves the step when the corrector fails,
   when any overlap would move by more than :data:`MAX_MOVE` in one step (the curve is
   refined where the solution moves fast) or when an overlap would drop to zero (the curve
   would land on another branch with fewer learned overlaps). A branch ends where the step
   falls below :data:`MIN_STEP` (relative): there it ceases to exist, and the end is
   located to that precision by this bisection. Two kinds of ends (``start_kind``,
   ``end_kind``):

   * ``fold`` — a saddle-node: the curve turns back (the stable curve meets an unstable
     one); located by the bisection of the step control (to ~1e-9 relative).
   * ``bifurcation`` — some overlaps go to zero continuously: the curve merges into a
     branch with fewer learned overlaps (the universal branch for a continuous onset). The
     end is then refined by root finding (Brent) on the eigenvalue of that host branch's
     Jacobian nearest 1, which crosses 1 exactly at the branch point.
   * ``grid`` — the curve reaches the first or last α of the grid (``alpha_start`` or
     ``alpha_end`` is then NaN: the event lies outside the grid).

   Two solutions at the same α belong to the same branch only if continuation connects
   them; a curve that exists on two disjoint α intervals is two branches. Where a branch
   ends inside the grid, what the system goes to is traced too (seeds off the grid, found
   independently of it): beyond a fold the damped iteration from the branch's last point,
   beyond a bifurcation the host branch it merged into.

   *Choice:* the corrector accepts unstable points too (a branch keeps its name and is
   followed through a loss of stability; ``stability`` says where), but the continuation
   parameter is α, so it cannot turn around a fold: the unstable middle part of an S-shaped
   curve, between two folds, is not traced (the damped iteration cannot reach it, and it
   never has the largest free entropy of the S: it is the saddle between the two stable
   parts). The two stable parts are two branches, each ending at its fold.
4. **Names.** A branch is named after the phase of the curve, assigned once the curve is traced:
   what its most specialized point has learned (``model.phase`` at the point of largest
   ``model.specialization`` among its grid points *and its located ends*, so that a fold or
   bifurcation between two grid points counts whatever the grid): for one hidden layer ``weak``
   (every readout group has ``Q < 0.5``), ``partial`` (some groups have learned, ``Q ≥ 0.5``,
   others not) or ``specialized`` (every group has ``Q ≥ 0.5``); for two hidden layers what is
   learned (``layer_1``, ``layers_1_2``, …); for deep networks ``specialized`` (every layer) or
   ``layers_1_to_<k>``. The name is fixed along the curve. Curves of the same phase are told
   apart by how strongly they learn it: the one with the largest mmse where they coexist on the
   grid keeps the name, the others get ``-2``, ``-3``, … in order of decreasing mmse (curves that
   never coexist on the grid: in the order of their first α). Neither rule depends on where the
   grid points fall, as long as the grid holds the curves' ends. Where it does not, a curve whose
   points on the grid have not learned (``weak``, :data:`UNLEARNED_PHASES`) may learn beyond it: such
   a curve is followed past its grid ends by the same continuation, for its name only (nothing of it
   is stored), until it ends, its phase is decided or :data:`NAME_EXTENSION_FACTOR` (4) times the
   last α (a quarter of the first) is reached (:func:`_states_past_the_grid`): the sign channel's
   curve through α = 1 … 2 is ``specialized`` on ``--alpha 1:2:3`` as on ``0.05:8:30`` (its overlaps
   pass 0.5 at α ≈ 4.2, beyond the first grid). A curve still below the threshold there is ``weak``.
5. **Stability.** At every stored point, ``stability`` is the leading eigenvalue (largest
   real part) of the Jacobian of the *undamped* map ``F`` (finite differences): ``< 1``
   means linearly stable (the damped iteration with damping close enough to 1 converges
   to it). ``transitions/universal`` gets ``alpha_instability``, where the universal
   branch loses stability (Brent on ``stability − 1``).
6. **Equilibrium and its changes.** At every α the equilibrium is the branch of largest
   free entropy. Every change of the equilibrium branch is located: a crossing of two
   free entropies (Brent on their difference, both branches followed by continuation), or
   the end (fold) of the equilibrium branch, or the birth of a branch that starts above
   (a continuous onset at a bifurcation). ``equilibrium_changes`` lists them in α.
7. **Transitions.** ``alpha_c`` is the first change of the equilibrium away from the
   universal branch — for models with a ``main_phase`` attribute (two hidden layers:
   ``layers_1_2``), the first change to a branch of that phase — and ``alpha_sp`` the first
   α of the branch it goes to (where there is no such change on the grid: the smallest
   ``alpha_start`` of the branches of that phase, NaN when the equilibrium is already in it at the
   first α, so that its spinodal lies below the grid); per branch, ``alpha_sp`` (= its
   ``alpha_start``), ``alpha_end`` and ``alpha_c`` (first α where it becomes the
   equilibrium). All are independent of the α grid (to ~1e-9 relative) as long as they lie
   inside it.

Solvers whose packed vector holds labels besides the unknowns (``model.moving_indices``:
the profile solver of continuous readout laws, :mod:`replica.readout_grid`, whose selection
of roots changes along a curve) are followed by the damped iteration with warm starts
instead of the Newton corrector; their ends are located by bisection on it (relative
precision :data:`LABELLED_END_RTOL`), and a curve leaves only by returning to the universal
point. Models whose labels are constant along a branch (``model.fixed_labels``: two hidden
layers with the profile solver in s) are continued like label-free ones, on their moving entries.

When ``model.universal_only_reason()`` is not None (one hidden layer with ``g ≡ 0`` and
Gaussian weights, docs/theory.md §5.4) only the universal branch is reported, the reason is
logged and returned in :attr:`SweepResult.universal_only_reason`, and the stability stored
is that of the map restricted to ``Q ≡ 0``.

Why one module of this size: continuation, stability, equilibrium selection and
transition location are one algorithm on the same branch records (:class:`BranchData`,
the pass curves, the Newton corrector they share); each step needs the others' intermediate
state, so they are kept together (docs/architecture.md, "Module size").
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import math
import sys
import warnings
from dataclasses import dataclass, field

import numpy as np

from .engine import STATUS_MESSAGES, FixedPointResult, newton_lu
from .interface import hook

__all__ = ["BranchData", "SweepResult", "sweep", "stability", "jacobian", "learned_layers", "UNIVERSAL_TOL",
           "DISTINCT_TOL", "MAX_MOVE", "MIN_STEP"]

logger = logging.getLogger(__name__)

#: overlaps below this (max-norm) count as the universal (zero-overlap) solution
UNIVERSAL_TOL = 1e-6
#: two stationary points closer than this in max-norm of their overlaps are the same point
DISTINCT_TOL = 1e-5
#: points whose overlaps differ by less than this are compared again with the same labels
#: (:func:`_same_point`: one sheet solved on two rule levels differs by the discretization error)
RELABEL_DISTANCE = 1e-2
#: an overlap below this is zero (the continuation never lets a learned overlap reach it)
ZERO_OVERLAP = 1e-12
#: overlaps above this are learned (below: rounding noise of an exact zero, not tracked)
SUPPORT_OVERLAP = 1e-9
#: largest change of any overlap in one continuation step (larger: the step is halved)
MAX_MOVE = 0.05
#: smallest continuation step relative to max(1, α); a branch ends where steps fall below it
MIN_STEP = 1e-9
#: an end where some learned overlap is below this is a bifurcation (merge), else a fold
BIFURCATION_OVERLAP = 1e-4
#: Newton iterations of one solve of the bordered system at a fold (:func:`_refine_fold`)
FOLD_NEWTON_ITER = 12
#: most solves of the bordered system while a fold is refined
FOLD_MAX_SOLVES = 12
#: a refined fold is accepted where the smallest singular value of F_x − I is below this fraction of the
#: largest (measured at refined folds: ~1e-8; at the last point of a bisection to MIN_STEP: ~5e-6)
FOLD_SINGULAR = 1e-4
#: evaluation budget of one Newton corrector, in units of (number of order parameters + 1)
CORRECTOR_MAXFEV = 8
#: iterations and required contraction of the chord-Newton corrector of the continuation
CHORD_MAX_ITER = 20
CHORD_CONTRACTION = 0.7
#: a chord corrector that needed more iterations than this refreshes its Jacobian at the next step; for
#: matrix-free models (:func:`_matrix_free`) a fresh Jacobian costs as many evaluations as unknowns, so Broyden's
#: updates are trusted longer (three hidden layers before the vectorized map: 6.7e4 → 6.2e4 evaluations per
#: sweep, results equal to 1e-12)
CHORD_REFRESH = 3
CHORD_REFRESH_LARGE = 8
#: solvers with labels re-solve from the overlap profile only on steps above this (relative)
LABEL_RESOLVE_STEP = 1e-3
#: solvers with labels: relative precision of the ends located by damped warm-started solves
LABELLED_END_RTOL = 1e-7
#: distance (relative to max(1, α)) beyond a branch end where the system's jump is sought
JUMP_OFFSET = 1e-3
#: a jump beyond a fold starts this many widths of the fold's ghost downstream (:func:`_past_the_ghost`)
GHOST_WIDTHS = 8.0
#: points of a traced curve (nearest first) from which :func:`_curve_through` tries to continue it
CURVE_THROUGH_TRIES = 3
#: above this many moving order parameters, a model without a vectorized map (``update_many``) gets stability
#: from Jacobian–vector products (ARPACK) and Newton–Krylov correctors (:func:`_matrix_free`), and every
#: model's bifurcation ends are the ends found by halving the step (no root of the host's eigenvalue)
ARNOLDI_SIZE = 40
#: with a vectorized map (``update_many``), dense Jacobians up to this many moving order parameters, and
#: Jacobian–vector products above. Three hidden layers (255): 17–20 s of CPU per sweep dense (with the polish
#: of ``DeepFrontModel.solve_from``, limited to the same size), 26–30 s matrix-free. Four hidden layers (676):
#: 83 s dense, 67 s matrix-free (one run each, the other core busy)
DENSE_SIZE = 400
#: restarts of ARPACK for the leading eigenvalue
ARNOLDI_MAXITER = 200
#: eigenvalues ARPACK computes when the one nearest a value is sought (bifurcations of large models)
ARNOLDI_NEAR = 8
#: relative residual of the inner GMRES solves of the matrix-free Newton corrector (inexact Newton)
KRYLOV_RTOL = 1e-3
#: Krylov subspace size before GMRES restarts (at most the number of unknowns)
KRYLOV_RESTART = 60
#: Newton iterations of the matrix-free corrector of :func:`_correct` (seeds, host points)
KRYLOV_NEWTON_ITER = 30
#: at most this many branches per sweep (a safeguard)
MAX_BRANCHES = 64
#: relative tolerance of the root finding for bifurcations and the instability of the universal branch
ROOT_RTOL = 1e-12
#: relative tolerance of the free-entropy crossings (the transitions are promised to ~1e-9)
CROSSING_RTOL = 1e-10
#: a factorized Jacobian is reused by a continuation that starts within this distance (relative to
#: max(1, α)) of the point where it was computed (the corrector refreshes it when it fails)
JACOBIAN_REUSE = 1e-2
#: a damped pass that converges to a linearly unstable point (a saddle on an exactly invariant set, e.g.
#: unlearned neurons at Q = 0 whose zero state has lost its stability) is restarted from that point
#: displaced by this much (max-norm) along the unstable eigenvector, as round-off would displace it
SADDLE_ESCAPE = 1e-6
#: at most this many such restarts of one point (:func:`_escape_saddle`)
SADDLE_ROUNDS = 3


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
        ``stability`` (leading eigenvalue of the Jacobian of the undamped map),
        ``converged`` (bool), ``exists`` (bool), ``iterations`` (int), ``residual``,
        ``start`` (str). Arrays are allocated at the first stored point; a sweep fills the
        fields of branches absent somewhere with NaN (:func:`sweep`).
    alpha_start, alpha_end : float
        Where the branch begins and ends (NaN: at the edge of the grid).
    start_kind, end_kind : str
        ``fold``, ``bifurcation`` or ``grid`` (module docstring); ``""`` for the universal
        branch.
    seed : str
        The start whose damped iteration found the branch.
    """

    name: str
    alpha: np.ndarray
    fields: dict = field(default_factory=dict)
    #: packed solver point of each stored index (for warm starts)
    points: dict = field(default_factory=dict, repr=False)
    alpha_start: float = math.nan
    alpha_end: float = math.nan
    start_kind: str = ""
    end_kind: str = ""
    seed: str = ""

    def __post_init__(self):
        n = self.alpha.size
        self.fields.setdefault("converged", np.zeros(n, dtype=bool))
        self.fields.setdefault("exists", np.zeros(n, dtype=bool))
        self.fields.setdefault("iterations", np.zeros(n, dtype=np.int64))
        self.fields.setdefault("residual", np.full(n, np.nan))
        self.fields.setdefault("start", np.array([""] * n, dtype=object))
        self.fields.setdefault("stability", np.full(n, np.nan))

    def set(self, i, result: FixedPointResult, stability_value: float = math.nan, extra=None):
        """Store ``result`` (with ``info["state"]``) at grid index ``i``, with the per-point fields ``extra``
        (:func:`_channel_fields`)."""
        f = self.fields
        for key, val in {**result.info["state"].record(), **(extra or {})}.items():
            val = np.asarray(val, dtype=float)
            if key not in f:
                f[key] = np.full((self.alpha.size,) + val.shape, np.nan)
            f[key][i] = val
        f["converged"][i] = result.converged
        f["exists"][i] = True
        f["iterations"][i] = result.iterations
        f["residual"][i] = result.residual
        f["start"][i] = result.start
        f["stability"][i] = stability_value
        self.points[i] = np.array(result.x, copy=True)

    def attributes(self) -> dict:
        """``alpha_start``, ``alpha_end``, ``start_kind``, ``end_kind``, ``seed`` (HDF5 attributes)."""
        return {"alpha_start": float(self.alpha_start), "alpha_end": float(self.alpha_end),
                "start_kind": self.start_kind, "end_kind": self.end_kind, "seed": self.seed}

    def __getitem__(self, key):
        return self.fields[key]


@dataclass
class SweepResult:
    """Everything a sweep produces.

    Attributes
    ----------
    alpha : ndarray, shape (n_alpha,)
    branches : dict[str, BranchData]
        ``universal`` first, then the traced branches in the order of their first α.
    equilibrium : dict
        ``alpha``, ``mmse``, ``free_entropy``, ``branch`` (names), each shape (n_alpha,).
    transitions : dict
        ``alpha_sp``, ``alpha_c`` (NaN when absent) of the first specialization (module
        docstring); for models with ``n_layers ≥ 2`` also ``alpha_sp_layer_<ℓ>``,
        ``alpha_c_layer_<ℓ>``: the same for the first change of the equilibrium into a branch
        that has layer ℓ learned (:func:`learned_layers`).
    readout_values, readout_weights : ndarray, shape (n_readout,)
    branch_transitions : dict[str, dict]
        ``{branch: {"alpha_sp", "alpha_end", "alpha_c"}}`` for every non-universal branch
        and ``{"universal": {"alpha_instability"}}``.
    equilibrium_changes : list of dict
        One per change of the equilibrium branch, ordered in α: ``alpha``, ``from``, ``to``,
        ``mmse_before``, ``mmse_after``, ``kind`` (``crossing``, ``branch_end`` or
        ``branch_start``), ``located`` (always True; kept for readers of older results).
    universal_only_reason : str or None
        Why only the universal branch is reported (docs/theory.md §5.4), or None.
    grids, dataset_axes, s_grid_rule, architecture, state_schema
        What a file stores besides the branches (filled by :func:`replica.workflow.run.run_sweep`; empty
        after a bare :func:`sweep`): the model's extra 1-D coordinates ``{name: ndarray}``, the dimension
        scales ``{dataset: (scale, …)}`` of its stored matrices, its rule in s (str or None), the
        registry name of its architecture and what a state records (:class:`replica.interface.FieldSpec`;
        None: not known).
    """

    alpha: np.ndarray
    branches: dict
    equilibrium: dict
    transitions: dict
    readout_values: np.ndarray
    readout_weights: np.ndarray
    branch_transitions: dict = field(default_factory=dict)
    equilibrium_changes: list = field(default_factory=list)
    universal_only_reason: str | None = None
    grids: dict = field(default_factory=dict)
    dataset_axes: dict | None = None
    s_grid_rule: str | None = None
    architecture: str = ""
    state_schema: tuple | None = None


# --------------------------------------------------------------------------- stability
def jacobian(model, alpha, x, *, order=2, indices=None) -> np.ndarray:
    """Finite-difference Jacobian of the undamped map ``model.update(alpha, ·)`` at ``x``.

    Parameters
    ----------
    model : ReplicaModel
    alpha : float
    x : ndarray, shape (p,)
        Packed point.
    order : {1, 2}, keyword-only
        One-sided differences of first order (step 1e-7) or second order (step 1e-5,
        ``(−3F(x) + 4F(x+h) − F(x+2h))/(2h)``). Components above 0.5 are differenced
        downwards, the others upwards, so that overlaps stay inside [0, 1]. The points come from the
        model's ``update_near`` hook where it has one: an error of the order of the forward difference's
        own, O(h), at first order; at second order the hook's error, quadratic in the distance from ``x``,
        cancels in the stencil like any quadratic term (the stencil is exact on quadratics).
    indices : array_like of int, optional, keyword-only
        Restrict to these components (rows and columns); default the entries the map moves
        (``model.moving_indices(x)`` when the model has it, else all).

    Returns
    -------
    ndarray, shape (m, m)
        ``m = len(indices)`` or ``p``; inside :func:`remembered_jacobians` (every :func:`sweep`) a copy of
        the one computed before at the same arguments, if any.
    """
    x = np.asarray(x, dtype=float)
    memo = _JACOBIANS.get()
    if memo is not None:
        key = (float(alpha), int(order), None if indices is None else np.asarray(indices, dtype=int).tobytes(),
               x.tobytes())
        for entry in memo:
            if entry[0] is model and entry[1] == key:
                return entry[2].copy()
        value = _jacobian(model, alpha, x, order, indices)
        memo.append((model, key, value.copy()))
        while memo and sum(entry[2].nbytes for entry in memo) > JACOBIAN_MEMO_BYTES:
            memo.pop(0)  # the oldest first
        return value
    return _jacobian(model, alpha, x, order, indices)


#: how many bytes of Jacobians a sweep remembers, the most recent first (the chord corrector factorizes at an
#: accepted point; the stability of that point, computed when its curve is complete, takes the same matrix):
#: 64 MiB, about 120 Jacobians of the 255 unknowns of three hidden layers, 18 of 676 (four)
JACOBIAN_MEMO_BYTES = 64 * 2**20
_JACOBIANS = contextvars.ContextVar("replica_jacobian_memo", default=None)


@contextlib.contextmanager
def remembered_jacobians():
    """Within this context :func:`jacobian` returns a copy of the matrix it computed before for the same
    model object, α, order, indices and point (bit for bit), among the last :data:`JACOBIAN_MEMO_BYTES`;
    :func:`sweep` runs in one. Outside, every call computes."""
    token = _JACOBIANS.set([])
    try:
        yield
    finally:
        _JACOBIANS.reset(token)


def _jacobian(model, alpha, x, order, indices) -> np.ndarray:
    idx = _moving(model, x) if indices is None else np.asarray(indices, dtype=int)
    h = (1e-7 if order == 1 else 1e-5) * np.maximum(1.0, np.abs(x[idx]))
    h = np.where(x[idx] > 0.5, -h, h)
    m = idx.size
    steps = (1,) if order == 1 else (1, 2)
    points = np.repeat(x[None, :], 1 + m * len(steps), axis=0)
    for k, s in enumerate(steps):
        points[1 + k * m + np.arange(m), idx] += s * h
    near = hook(model, "update_near") if hook(model, "update_many") is not None else None
    values = (np.asarray(near(alpha, points), dtype=float) if near is not None
              else _evaluate_many(model, alpha, points))[:, idx]
    f0, f1 = values[0], values[1:1 + m]
    if order == 1:
        d = (f1 - f0[None, :]) / h[:, None]
    else:
        f2 = values[1 + m:]
        d = (-3.0 * f0[None, :] + 4.0 * f1 - f2) / (2 * h[:, None])
    return np.ascontiguousarray(d.T)


def _evaluate_many(model, alpha, points) -> np.ndarray:
    """The map at every row of ``points`` (shape (B, p)): one call of the model's ``update_many`` hook
    (a vectorized evaluation) or, without it, one :meth:`update` per row. Shape (B, p)."""
    many = hook(model, "update_many")
    if many is not None:
        return np.asarray(many(alpha, points), dtype=float)
    return np.array([np.asarray(model.update(alpha, y), dtype=float) for y in points])


def stability(model, alpha, x, *, order=2, indices=None, near=None) -> float:
    """Leading eigenvalue of the Jacobian of the undamped map at a packed point.

    Parameters
    ----------
    model, alpha, x, order, indices
        As in :func:`jacobian`.
    near : float, optional, keyword-only
        Return the real part of the eigenvalue closest to ``near`` instead of the largest
        real part (used to follow the eigenvalue that crosses 1 at a bifurcation).

    Returns
    -------
    float
        ``max Re λ_i(J)`` (``< 1``: linearly stable); NaN where ``x`` is not finite (e.g.
        ``R̂₂ = ∞`` at perfect recovery) or the map cannot be differentiated there.
    """
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)):
        return math.nan
    if indices is None and _matrix_free(model, x):
        value = _leading_eigenvalue(model, alpha, x, near=near)
        if np.isfinite(value):
            return value
    with np.errstate(all="ignore"):
        try:
            jac = jacobian(model, alpha, x, order=order, indices=indices)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan
        if jac.size == 0:
            return 0.0
        if not np.all(np.isfinite(jac)):
            return math.nan
        ev = np.linalg.eigvals(jac)
    if near is not None:
        return float(ev[np.argmin(np.abs(ev - near))].real)
    return float(np.max(ev.real))


def _leading_eigenvalue(model, alpha, x, near=None) -> float:
    """Largest real part of the eigenvalues of ``F_x`` at ``x`` (or, with ``near``, the real part of
    the eigenvalue closest to ``near`` among the :data:`ARNOLDI_NEAR` of largest modulus) from
    Jacobian–vector products (forward differences along the positive and negative parts of the
    vector, two evaluations each) by ARPACK's implicitly restarted Arnoldi method: for
    models with many order parameters, instead of a dense Jacobian (as many evaluations as
    unknowns). NaN when ARPACK does not converge (the caller then builds the dense Jacobian)."""
    from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigs

    idx = _moving(model, x)
    with np.errstate(all="ignore"):
        try:
            f0 = np.asarray(model.update(alpha, x), dtype=float)[idx]
            scale = 1e-7 * max(1.0, float(np.max(np.abs(x[idx]))))
            evaluate = _near_evaluator(model, alpha, x)

            def one_sided(v):
                """(F(x + h v) − F(x))/h for v ≥ 0: upward steps only, as the dense Jacobian takes them
                at overlaps ≤ 0.5 (an overlap at 0 is clipped from below by the map)."""
                norm = float(np.linalg.norm(v))
                if norm == 0.0:
                    return np.zeros_like(v)
                h = scale / norm
                y = x.copy()
                y[idx] += h * v
                return (np.asarray(evaluate(alpha, y), dtype=float)[idx] - f0) / h

            def matvec(v):
                v = np.asarray(v, dtype=float).ravel()
                return one_sided(np.maximum(v, 0.0)) - one_sided(np.maximum(-v, 0.0))

            op = LinearOperator((idx.size, idx.size), matvec=matvec, dtype=float)
            if near is None:
                ev = eigs(op, k=1, which="LR", tol=1e-8, maxiter=ARNOLDI_MAXITER, return_eigenvectors=False)
            else:
                ev = eigs(op, k=min(ARNOLDI_NEAR, idx.size - 2), which="LM", tol=1e-8, maxiter=ARNOLDI_MAXITER,
                          return_eigenvectors=False)
                ev = ev[np.argmin(np.abs(ev - near))]
        except (ArpackNoConvergence, ArpackError, ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan
    value = float(np.max(np.real(ev)))
    return value if np.isfinite(value) else math.nan


# --------------------------------------------------------------------------- continuation
def _moving(model, x) -> np.ndarray:
    """Entries of the packed vector that the map moves (the continuation's unknowns)."""
    x = np.asarray(x)
    return np.asarray(hook(model, "moving_indices")(x), dtype=int)


def _labelled(model, x) -> bool:
    """Whether the curve through ``x`` is followed as one with labels that may change along it
    (damped steps, :func:`_trace_labelled`): the packed vector holds labels besides the unknowns
    and the model does not declare them constant along a curve (``model.fixed_labels``; two hidden
    layers with the profile solver, whose selection and rule level are fixed per curve, are
    continued by the Newton corrector on their global unknowns)."""
    return _moving(model, x).size < np.size(x) and not hook(model, "fixed_labels")


def _overlaps(result) -> np.ndarray:
    return np.asarray(result.info["state"].overlaps, dtype=float)


def _is_universal(result) -> bool:
    return float(np.max(np.abs(_overlaps(result)), initial=0.0)) < UNIVERSAL_TOL


def _exists(result) -> bool:
    return "state" in result.info and result.converged and not _is_universal(result)


def _matrix_free(model, x) -> bool:
    """Whether the continuation of ``x`` uses Jacobian–vector products instead of dense
    finite-difference Jacobians: more than :data:`ARNOLDI_SIZE` moving order parameters, and no
    vectorized map (the ``update_many`` hook evaluates every column of a dense Jacobian in one call) or
    more than :data:`DENSE_SIZE`."""
    size = _moving(model, x).size
    return size > ARNOLDI_SIZE and (hook(model, "update_many") is None or size > DENSE_SIZE)


def _near_evaluator(model, alpha, x):
    """``f(alpha', z)``: the map at points next to ``(alpha, x)`` for Jacobian–vector products, from the model's
    ``near_map`` hook (an error of the order of the forward difference's own) or ``update``."""
    near = hook(model, "near_map")
    if near is not None:
        return near(alpha, np.asarray(x, dtype=float))
    return model.update


def _difference_operator(model, alpha, y, g, idx, *, alpha_column=False):
    """``(J − I)`` at ``y`` on the moving entries ``idx`` as a :class:`scipy.sparse.linalg.LinearOperator`:
    forward differences of ``F(y) − y`` (``g`` on ``idx``) along the vector, one evaluation per
    product, step ``1e-7 max(1, |y|)/|v|``, by the model's ``near_map`` where it has one
    (:func:`_near_evaluator`). With ``alpha_column`` the vector has one more entry, a
    step in α (the operator of the bordered system without its last row)."""
    from scipy.sparse.linalg import LinearOperator

    evaluate = _near_evaluator(model, alpha, y)
    p = idx.size
    base = 1e-7 * max(1.0, float(np.linalg.norm(y[idx])), abs(alpha) if alpha_column else 0.0)
    count = [0]

    def matvec(v):
        v = np.asarray(v, dtype=float).ravel()
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            return np.zeros(p)
        h = base / norm
        z = y.copy()
        z[idx] += h * v[:p]
        al = alpha + h * v[p] if alpha_column else alpha
        count[0] += 1
        return (np.asarray(evaluate(al, z), dtype=float)[idx] - z[idx] - g) / h

    op = LinearOperator((p, p + 1 if alpha_column else p), matvec=matvec, dtype=float)
    op.evaluations = count  # map evaluations made through the operator (a one-element list)
    return op


def _gmres(op, rhs, restart=KRYLOV_RESTART):
    """GMRES solve of ``op z = rhs`` to the relative residual :data:`KRYLOV_RTOL` (two restarts at most);
    None when the result is not finite."""
    from scipy.sparse.linalg import gmres

    z, _ = gmres(op, rhs, rtol=KRYLOV_RTOL, atol=0.0, restart=min(restart, rhs.size), maxiter=2)
    return z if np.all(np.isfinite(z)) else None


def _converged(model, alpha, y, iterations, residual, evaluations):
    """A continuation result at ``y`` (its state attached), or None when the state cannot be computed."""
    try:
        st = model.state(alpha, y)
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return None
    res = FixedPointResult(y, True, "converged", STATUS_MESSAGES["converged"], iterations, residual, 0.0,
                           "continuation", {"evaluations": evaluations, "polished": True})
    res.info["state"] = st
    return res


def _newton_krylov(model, alpha, x_pred, solve_kw, *, max_iter=KRYLOV_NEWTON_ITER):
    """Matrix-free Newton corrector: ``F(x) = x`` from ``x_pred`` at ``alpha``, each Newton step solved by
    GMRES with Jacobian–vector products (:func:`_difference_operator`; inexact Newton, relative
    residual :data:`KRYLOV_RTOL`). For models with many order parameters the cost is the number of
    Krylov vectors, about the number of eigenvalues of ``F_x`` away from 0, not the number of unknowns.
    Stops when the residual test of :func:`replica.engine.solve_fixed_point` passes (``atol``, ``rtol`` of
    ``solve_kw``); None after ``max_iter`` iterations or when an iterate or a step is not finite. A model
    with the hook ``project`` (a bounded domain, e.g. the fronts of
    :class:`~replica.models.deep_fronts.DeepFrontModel`) has every iterate projected onto it."""
    atol = float(solve_kw.get("atol", 1e-12))
    rtol = float(solve_kw.get("rtol", 1e-10))
    y = np.array(x_pred, dtype=float)
    idx = _moving(model, y)
    evaluations = 0
    project = hook(model, "project")
    with np.errstate(all="ignore"):
        for k in range(max_iter):
            try:
                fy = np.asarray(model.update(alpha, y), dtype=float)
                evaluations += 1
                if not (np.all(np.isfinite(fy)) and np.all(np.isfinite(y))):
                    return None
                g = fy - y
                residual = float(np.max(np.abs(g) / (atol + rtol * np.abs(y)), initial=0.0))
                if residual <= 1.0:
                    return _converged(model, alpha, y, k, residual, evaluations)
                op = _difference_operator(model, alpha, y, g[idx], idx)
                dy = _gmres(op, -g[idx])
                evaluations += op.evaluations[0]
            except (ValueError, ZeroDivisionError, FloatingPointError, np.linalg.LinAlgError):
                return None
            if dy is None:
                return None
            y = y.copy()
            y[idx] += dy
            if project is not None:
                y = np.asarray(project(y), dtype=float)
    return None


def _correct(model, alpha, x_pred, solve_kw):
    """Newton corrector: ``F(x) = x`` from ``x_pred`` at ``alpha`` (where the model has ``update_many``, its
    Jacobians come from one vectorized call each and :func:`replica.engine.newton_lu` solves; else MINPACK
    ``hybr``, at most :data:`CORRECTOR_MAXFEV` ``× (p + 1)`` evaluations; matrix-free models,
    :func:`_matrix_free`, try :func:`_newton_krylov` first, the dense solve where it fails);
    the result, or None when it fails the residual test of :func:`replica.engine.solve_fixed_point`
    (``atol``, ``rtol`` of ``solve_kw``)."""
    atol = float(solve_kw.get("atol", 1e-12))
    rtol = float(solve_kw.get("rtol", 1e-10))
    x_pred = np.asarray(x_pred, dtype=float)
    if not np.all(np.isfinite(x_pred)):
        return None
    idx = _moving(model, x_pred)
    if _matrix_free(model, x_pred):
        r = _newton_krylov(model, alpha, x_pred, solve_kw)
        if r is not None:
            return r
    jac = None
    if hook(model, "update_many") is not None:  # analytic-cost Jacobians: hybr needs none of its own
        def jac(z):
            return jacobian(model, alpha, full(z), order=1, indices=idx) - np.eye(idx.size)

    def full(z):
        y = x_pred.copy()
        y[idx] = z
        return y

    def residual_map(z):
        return (np.asarray(model.update(alpha, full(z)), dtype=float) - full(z))[idx]

    with np.errstate(all="ignore"):
        try:
            if jac is not None:  # Jacobians at the cost of about one evaluation: Newton with LU factors
                z, nfev, njev = newton_lu(residual_map, jac, x_pred[idx],
                                          lambda z, g: float(np.max(np.abs(g) / (atol + rtol * np.abs(z)),
                                                                    initial=0.0)) <= 1.0)
                if z is None:
                    return None
            else:
                from scipy import optimize  # lazy: start-up (docs/architecture.md)
                sol = optimize.root(residual_map, x_pred[idx], method="hybr",
                                    options={"xtol": 1e-13, "maxfev": CORRECTOR_MAXFEV * (idx.size + 1)})
                z, nfev, njev = sol.x, int(sol.nfev), int(getattr(sol, "njev", 0) or 0)
            y = full(np.asarray(z, dtype=float))
            fy = np.asarray(model.update(alpha, y), dtype=float)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return None
        if not (np.all(np.isfinite(y)) and np.all(np.isfinite(fy))):
            return None
        residual = float(np.max(np.abs(fy - y) / (atol + rtol * np.abs(y)), initial=0.0))
        if residual > 1.0:
            return None
        try:
            st = model.state(alpha, y)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return None
    evaluations = nfev + 1 + idx.size * njev  # a Jacobian: p rows
    res = FixedPointResult(y, True, "converged", STATUS_MESSAGES["converged"], 0, residual, 0.0, "continuation",
                           {"evaluations": evaluations, "polished": True})
    res.info["state"] = st
    return res


def _check_step(r, ov_prev, support_prev):
    """Why a corrected point is not the continuation of the previous one (None: it is)."""
    if r is None:
        return "newton"
    ov = _overlaps(r)
    if np.any(support_prev & (np.abs(ov) <= ZERO_OVERLAP)) or _is_universal(r) and np.any(support_prev):
        return "support"
    if float(np.max(np.abs(ov - ov_prev), initial=0.0)) > MAX_MOVE:
        return "move"
    return None


@dataclass
class _End:
    alpha: float  # located α of the end (NaN at the grid edge)
    kind: str  # fold, bifurcation or grid
    result: FixedPointResult  # last point of the curve before the end
    last_alpha: float  # α of that point


class _InverseJacobian:
    """Approximate ``(F_x − I)⁻¹`` on the moving entries: the inverse of a finite-difference Jacobian,
    improved along the corrector's iterates by good-Broyden rank-one updates (so that a factorization
    serves several continuation steps, and models with many order parameters need few Jacobians).

    Held as the LU factors of the Jacobian and the list of its rank-one updates,
    ``H = (J − I)⁻¹ + Σ_k u_k v_kᵀ``: a solve is two triangular solves and one dot product per update,
    as cheap as a product with the explicit inverse, and the factorization costs a third of an inversion
    (676 unknowns: 10 against 30 ms; 2,500 at L = 6: 0.5 against 1.4 s).

    Raises
    ------
    numpy.linalg.LinAlgError
        ``a`` is exactly singular or not finite.
    """

    def __init__(self, a):
        from scipy.linalg import LinAlgWarning, lu_factor  # lazy: start-up (docs/architecture.md)

        if not np.all(np.isfinite(a)):
            raise np.linalg.LinAlgError("Jacobian not finite")
        with warnings.catch_warnings():
            warnings.simplefilter("error", LinAlgWarning)
            try:
                self.lu = lu_factor(a, check_finite=False)
            except LinAlgWarning as exc:  # an exactly zero pivot
                raise np.linalg.LinAlgError(str(exc)) from None
        self.us, self.vs = [], []

    def _apply(self, rhs, trans):
        from scipy.linalg import lu_solve  # lazy: start-up (docs/architecture.md)

        z = lu_solve(self.lu, rhs, trans=trans, check_finite=False)
        left, right = (self.us, self.vs) if trans == 0 else (self.vs, self.us)
        for u, v in zip(left, right):
            z = z + u * float(v @ rhs)
        return z

    def solve(self, rhs):
        """``H rhs``."""
        return self._apply(np.asarray(rhs, dtype=float), 0)

    def copy(self) -> "_InverseJacobian":
        """A copy whose Broyden updates leave this one unchanged (a trial corrector's, :func:`_advance`)."""
        out = object.__new__(_InverseJacobian)
        out.lu, out.us, out.vs = self.lu, list(self.us), list(self.vs)
        return out

    def adopt(self, other: "_InverseJacobian"):
        """Take the updates of ``other`` (a copy of this one that a trial corrector improved)."""
        self.lu, self.us, self.vs = other.lu, list(other.us), list(other.vs)

    def update(self, dx, dg):
        """Broyden's update from a step ``dx`` and the change ``dg`` of ``F(x) − x`` it caused."""
        hdg = self.solve(dg)
        den = float(dx @ hdg)
        if abs(den) > 1e-300 and np.isfinite(den):
            self.us.append((dx - hdg) / den)
            self.vs.append(self._apply(np.asarray(dx, dtype=float), 1))


def _chord(model, alpha, x_pred, lu, solve_kw):
    """Chord-Newton corrector with an approximate inverse of ``J − I`` (:class:`_InverseJacobian`,
    updated by Broyden's rule at every iterate): the result or None.

    Iterates ``y ← y − (J − I)⁻¹ (F(y) − y)`` until the residual test of
    :func:`replica.engine.solve_fixed_point` passes (``atol``, ``rtol`` of ``solve_kw``);
    gives up after :data:`CHORD_MAX_ITER` iterations or when a step is not at least
    :data:`CHORD_CONTRACTION` times shorter than the previous one.
    """
    atol = float(solve_kw.get("atol", 1e-12))
    rtol = float(solve_kw.get("rtol", 1e-10))
    y = np.array(x_pred, dtype=float)
    idx = _moving(model, y)
    previous = math.inf
    g_prev = dy = None
    with np.errstate(all="ignore"):
        for k in range(CHORD_MAX_ITER):
            try:
                fy = np.asarray(model.update(alpha, y), dtype=float)
            except (ValueError, ZeroDivisionError, FloatingPointError):
                return None
            if not (np.all(np.isfinite(fy)) and np.all(np.isfinite(y))):
                return None
            g = fy - y
            residual = float(np.max(np.abs(g) / (atol + rtol * np.abs(y)), initial=0.0))
            if residual <= 1.0:
                return _converged(model, alpha, y, k, residual, k + 1)
            if g_prev is not None:
                lu.update(dy, g[idx] - g_prev)
            dy = lu.solve(-g[idx])
            size = float(np.max(np.abs(dy)))
            if not np.isfinite(size) or size > CHORD_CONTRACTION * previous:
                return None
            previous, g_prev = size, g[idx]
            y = y.copy()
            y[idx] += dy
    return None


def _factor(model, alpha, x):
    """:class:`_InverseJacobian` of ``J − I`` at a packed point (first-order differences), or None if
    singular."""
    with np.errstate(all="ignore"):
        try:
            a = jacobian(model, alpha, x, order=1)
            a = a - np.eye(a.shape[0])
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return None
        if not np.all(np.isfinite(a)):
            return None
        try:
            inv = _InverseJacobian(a)
        except np.linalg.LinAlgError:
            return None
    if not all(np.all(np.isfinite(part)) for part in inv.lu):
        return None
    return inv


def _fold_estimate(points, direction):
    """α of the fold that the accepted points ``[(α, x)…]`` (the last three, in the order accepted)
    approach, or None.

    Near a saddle-node the curve is a parabola ``α = α_f − c ξ²`` in the coordinate ξ along its
    direction of motion: ξ is the projection of ``x`` on the unit vector of the last accepted step,
    the parabola through the three points gives ``α_f`` (its vertex). None unless the vertex lies
    ahead of the last point (in ``direction``) with the curvature of a fold there.
    """
    (a1, x1), (a2, x2), (a3, x3) = points[-3:]
    u = x3 - x2
    norm = float(np.linalg.norm(u))
    if not norm > 0.0:
        return None
    u = u / norm
    xi = np.array([float(u @ (x1 - x3)), float(u @ (x2 - x3)), 0.0])
    al = np.array([a1, a2, a3])
    if not (xi[0] < xi[1] < 0.0):
        return None
    try:
        c2, c1, c0 = np.polyfit(xi, al, 2)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not (np.isfinite(c2) and c2 * direction < 0.0):
        return None
    vertex = -c1 / (2.0 * c2)
    a_fold = c0 - c1 * c1 / (4.0 * c2)
    if not (vertex > 0.0 and np.isfinite(a_fold) and (a_fold - a3) * direction > 0.0):
        return None
    return float(a_fold)


def _bordered_solve(model, alpha0, x0, u, x_ref, xi, solve_kw):
    """Point of the curve through ``x_ref`` with ``u·(x − x_ref) = ξ`` (moving entries): Newton on the
    bordered system ``F(x, α) − x = 0``, ``u·(x − x_ref) = ξ`` in ``(x, α)`` from ``(x0, alpha0)``, with
    forward-difference Jacobians (:func:`jacobian`, ``p + 1`` evaluations each, one vectorized call with
    ``update_many``, and one evaluation for the α column), each kept for the next iterates while their steps
    shrink by :data:`CHORD_CONTRACTION` (a chord iteration: the same point, fewer Jacobians).
    Regular at a fold (where ``F_x − I`` alone is singular), so the curve is followed through it; for
    matrix-free models (:func:`_matrix_free`) each Newton step is solved by GMRES with Jacobian–vector
    products (:func:`_bordered_krylov`).
    Returns ``(α, result)`` or None."""
    atol = float(solve_kw.get("atol", 1e-12))
    rtol = float(solve_kw.get("rtol", 1e-10))
    x = np.array(x0, dtype=float)
    idx = _moving(model, x)
    p = idx.size
    al = float(alpha0)
    factors, previous = None, math.inf  # the dense bordered Jacobian, kept while the steps contract
    with np.errstate(all="ignore"):
        try:
            g = np.asarray(model.update(al, x), dtype=float)[idx] - x[idx]
            for _ in range(FOLD_NEWTON_ITER):
                if not np.all(np.isfinite(g)):
                    return None
                c = float(u @ (x[idx] - x_ref)) - xi
                if np.all(np.abs(g) <= atol + rtol * np.abs(x[idx])) and abs(c) <= atol + rtol * abs(xi):
                    st = model.state(al, x)
                    res = FixedPointResult(x, True, "converged", STATUS_MESSAGES["converged"], 0,
                                           float(np.max(np.abs(g) / (atol + rtol * np.abs(x[idx])), initial=0.0)),
                                           0.0, "continuation", {"polished": True})
                    res.info["state"] = st
                    return al, res
                rhs = -np.concatenate([g, [c]])
                if _matrix_free(model, x):
                    delta = _bordered_krylov(model, al, x, g, idx, u, rhs)
                    if delta is None:
                        return None
                else:
                    delta = None if factors is None else _lu_solve(factors, rhs)
                    if delta is None or not float(np.max(np.abs(delta))) <= CHORD_CONTRACTION * previous:
                        # a fresh Jacobian where the chord step (the Jacobian of an earlier iterate) contracts
                        # too slowly: the point is fixed by the residuals alone, the Jacobian sets the speed
                        jac = np.zeros((p + 1, p + 1))
                        jac[:p, :p] = jacobian(model, al, x, order=1, indices=idx) - np.eye(p)
                        ha = 1e-7 * max(1.0, abs(al))
                        jac[:p, p] = (np.asarray(model.update(al + ha, x), dtype=float)[idx] - x[idx] - g) / ha
                        jac[p, :p] = u
                        factors = _lu_factors(jac)
                        delta = None if factors is None else _lu_solve(factors, rhs)
                        if delta is None:
                            return None
                    previous = float(np.max(np.abs(delta)))
                if not np.all(np.isfinite(delta)):
                    return None
                x = x.copy()
                x[idx] += delta[:p]
                al += float(delta[p])
                if not al > 0.0:
                    return None
                g = np.asarray(model.update(al, x), dtype=float)[idx] - x[idx]
        except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, FloatingPointError):
            return None
    return None


def _lu_factors(a):
    """LU factors of ``a`` (``scipy.linalg.lu_factor``), or None when ``a`` is singular or not finite."""
    try:
        return _InverseJacobian(a).lu
    except np.linalg.LinAlgError:
        return None


def _lu_solve(factors, rhs):
    """``a⁻¹ rhs`` from :func:`_lu_factors`; None when not finite."""
    from scipy.linalg import lu_solve  # lazy: start-up (docs/architecture.md)

    z = lu_solve(factors, rhs, check_finite=False)
    return z if np.all(np.isfinite(z)) else None


def _bordered_krylov(model, alpha, x, g, idx, u, rhs):
    """Newton step of the bordered system of :func:`_bordered_solve` by GMRES: the operator
    ``(v, s) ↦ ((F_x − I) v + F_α s, u·v)`` from Jacobian–vector products (one evaluation each)."""
    from scipy.sparse.linalg import LinearOperator

    top = _difference_operator(model, alpha, x, g, idx, alpha_column=True)
    op = LinearOperator((idx.size + 1, idx.size + 1), dtype=float,
                        matvec=lambda w: np.concatenate([top.matvec(w), [float(u @ np.ravel(w)[:idx.size])]]))
    return _gmres(op, rhs)


def _refine_fold(model, accepted, direction, solve_kw):
    """The fold that the last three accepted points ``[(α, result)…]`` of a continuation approach.

    The curve is parametrized by ``ξ``, the coordinate along the last accepted step; near a
    saddle-node ``α(ξ)`` is a parabola whose vertex is the fold. Each iteration fits the parabola
    through the three points nearest the vertex, solves the bordered system (:func:`_bordered_solve`)
    at its vertex and stops when the fold's α moves by less than a tenth of :data:`MIN_STEP`
    (relative). Returns ``(α_fold, result)`` (a point of the curve at the fold) or None when the
    points do not behave as a fold (then the caller goes on halving its step).
    """
    (a1, r1), (a2, r2), (a3, r3) = accepted[-3:]
    x3 = np.asarray(r3.x, dtype=float)
    idx = _moving(model, x3)
    ref = x3[idx]
    u = ref - np.asarray(r2.x, dtype=float)[idx]
    norm = float(np.linalg.norm(u))
    if not norm > 0.0:
        return None
    u = u / norm
    pts = [(float(u @ (np.asarray(r.x, dtype=float)[idx] - ref)), float(a), r) for a, r in ((a1, r1), (a2, r2), (a3, r3))]
    best = None
    for _ in range(FOLD_MAX_SOLVES):
        pts.sort(key=lambda t: t[0])
        xi = np.array([t[0] for t in pts[-3:]])
        al = np.array([t[1] for t in pts[-3:]])
        try:
            c2, c1, c0 = np.polyfit(xi - xi[-1], al, 2)
        except (np.linalg.LinAlgError, ValueError):
            break
        if not (np.isfinite(c2) and c2 * direction < 0.0):
            break
        vertex = xi[-1] - c1 / (2.0 * c2)
        a_pred = c0 - c1 * c1 / (4.0 * c2)
        # predictor: the quadratic through the points in ξ, for every moving entry
        xs = np.array([np.asarray(t[2].x, dtype=float) for t in pts[-3:]])
        coef = np.polyfit(xi - xi[-1], xs[:, idx], 2)
        x0 = xs[-1].copy()
        x0[idx] = coef[0] * (vertex - xi[-1]) ** 2 + coef[1] * (vertex - xi[-1]) + coef[2]
        got = _bordered_solve(model, a_pred, x0, u, ref, vertex, solve_kw)
        if got is None:
            break
        a_new, r_new = got
        # the geometry of the fold, for the jump beyond it (:func:`_jump_seeds`): α ≈ α_f − c ξ² along u
        r_new.info["fold"] = {"direction": u, "curvature": abs(float(c2))}
        done = best is not None and abs(a_new - best[0]) <= 0.1 * MIN_STEP * max(1.0, abs(a_new))
        if best is None or (a_new - best[0]) * direction > 0.0:
            best = (a_new, r_new)
        if done:
            break
        pts.append((vertex, a_new, r_new))
        # keep the three points closest to the vertex
        pts.sort(key=lambda t: abs(t[0] - vertex))
        pts = pts[:3]
    return best if best is not None and _singular(model, best[0], best[1].x) else None


def _singular(model, alpha, x) -> bool:
    """Whether ``F_x − I`` is singular at ``x`` (a saddle-node): its smallest singular value below
    :data:`FOLD_SINGULAR` times its largest (matrix-free models, :func:`_matrix_free`: the eigenvalue
    of ``F_x`` nearest 1 within :data:`FOLD_SINGULAR` of it, from Jacobian–vector products). A vertex of
    α along the curve where it is not is a turn of the parabola fit, not a fold."""
    if _matrix_free(model, x):
        value = _leading_eigenvalue(model, alpha, x, near=1.0)
        if np.isfinite(value):
            return abs(value - 1.0) <= FOLD_SINGULAR
    with np.errstate(all="ignore"):
        try:
            a = jacobian(model, alpha, x, order=1)
            sv = np.linalg.svd(a - np.eye(a.shape[0]), compute_uv=False)
        except (ValueError, ZeroDivisionError, FloatingPointError, np.linalg.LinAlgError):
            return False
    return bool(sv.size and np.all(np.isfinite(sv)) and sv[-1] <= FOLD_SINGULAR * sv[0])


def _advance(model, a0, r0, a_target, slope, solve_kw, jac_cache=None, trail=None):
    """Continue from the point ``r0`` at ``a0`` to ``a_target`` with step control.

    Predictor: secant (``slope``); corrector: chord Newton with ``J − I`` factorized at the
    last accepted point (refreshed after a slow corrector step, and once before a step is
    halved); the step is halved when the corrector fails or :func:`_check_step` rejects the
    point, doubled after a success. Where the corrector fails and the last three accepted points
    show a fold ahead (:func:`_fold_estimate`), the fold is located by :func:`_refine_fold` (the
    curve followed through it in a coordinate along the curve, the vertex of ``α`` found by parabolic
    interpolation) instead of bisection of the step to :data:`MIN_STEP`. Returns ``(result at
    a_target or None, slope, failure)`` where ``failure`` is None or ``(last α, last result, reason,
    learned overlaps)`` when the curve ends before ``a_target`` (at a located fold, or where steps fall
    below :data:`MIN_STEP`). ``jac_cache`` (a dict, optional) carries the last factorized Jacobian
    between calls on one curve: it is reused when it was computed within :data:`JACOBIAN_REUSE` of
    ``a0`` and left there for the next call. ``trail`` (a list, optional) receives every accepted
    point ``(α, result)`` (later solves on the curve start from the nearest of them).
    """
    a, r = a0, r0
    x = np.asarray(r0.x, dtype=float)
    ov = _overlaps(r0)
    support = np.abs(ov) > SUPPORT_OVERLAP
    h = abs(a_target - a0)
    lu, fresh = None, False
    if jac_cache and abs(jac_cache["alpha"] - a0) <= JACOBIAN_REUSE * max(1.0, abs(a0)):
        lu = jac_cache["lu"]
    idx = _moving(model, x)
    accepted = [(a, r0)]
    direction = 1.0 if a_target >= a0 else -1.0
    fold_tried = False
    while True:
        rem = a_target - a
        if rem == 0.0:
            return r, slope, None
        step = math.copysign(min(h, abs(rem)), rem)
        a_new = a_target if abs(step) >= abs(rem) * (1 - 1e-12) else a + step
        step = a_new - a
        x_pred = x if slope is None else x + slope * step
        if lu is None:
            lu, fresh = _factor(model, a, x), True
            if jac_cache is not None and lu is not None:
                jac_cache.update(alpha=a, lu=lu)
        # the corrector updates a copy of the inverse Jacobian; its Broyden updates are kept only when
        # the point is accepted: the updates of a failed or rejected trial (a step past a fold, or onto
        # another sheet) can wreck the inverse (changes of 1e6 measured on ReLU with the sign channel),
        # and every shorter step would then fail with it, down to MIN_STEP: a false fold
        trial = None if lu is None else lu.copy()
        r_new = None if trial is None else _chord(model, a_new, x_pred, trial, solve_kw)
        why = _check_step(r_new, ov, support)
        if why is not None and fresh and _labelled(model, x) \
                and abs(step) > LABEL_RESOLVE_STEP * max(1.0, abs(a)):
            # a solver with labels (the profile solver's selection of roots): the labels
            # may have to change along the curve; re-solve from the current overlap profile
            r_alt = model.solve_from(a_new, ov, None, start="continuation", **solve_kw)
            if r_alt.converged and "state" in r_alt.info and _check_step(r_alt, ov, support) is None:
                r_new, why, trial = r_alt, None, None  # the chord trial failed: its updates are dropped
        if why == "newton" and not fresh:
            lu = None  # retry the same step with the Jacobian at the current point
            continue
        if why is None:
            if trial is not None:
                lu.adopt(trial)  # in place: a cached factorization (jac_cache) keeps the accepted updates
            slope = (np.asarray(r_new.x) - x) / step
            a, r, x, ov = a_new, r_new, np.asarray(r_new.x, dtype=float), _overlaps(r_new)
            accepted.append((a, r))
            if trail is not None:
                trail.append((a, r))
            support |= np.abs(ov) > SUPPORT_OVERLAP  # learned overlaps stay tracked down to zero
            h = 2.0 * abs(step)
            if r_new.iterations > (CHORD_REFRESH_LARGE if _matrix_free(model, x) else CHORD_REFRESH):
                lu = None
            fresh = False
            fold_tried = False
        else:
            h = 0.5 * abs(step)
            if why == "newton" and len(accepted) >= 3 and not fold_tried and not _labelled(model, x):
                fold_tried = True
                a_fold = _fold_estimate([(al, np.asarray(rr.x, dtype=float)[idx]) for al, rr in accepted[-3:]],
                                        direction)
                if a_fold is not None and 0.0 < (a_fold - a) * direction < abs(step):
                    got = _refine_fold(model, accepted, direction, solve_kw)
                    if got is not None and 0.0 <= (got[0] - a) * direction < abs(step) \
                            and _check_step(got[1], ov, support) in (None, "move"):
                        return None, slope, (got[0], got[1], why, support)
            if h < MIN_STEP * max(1.0, abs(a)):
                return None, slope, (a, r, why, support)


def _host_point(model, alpha, result, solve_kw):
    """The branch with fewer learned overlaps that ``result`` (near a bifurcation) merges into: the
    vanishing overlaps set to 0 (``model.without_overlaps(x, mask)`` where the model has it, else the
    leading packed entries, which must then be the overlaps), then the Newton corrector."""
    ov = _overlaps(result)
    vanishing = np.abs(ov) < BIFURCATION_OVERLAP
    if np.all(vanishing):
        r = model.solve_universal(alpha)
        return r.x if np.all(np.isfinite(r.x)) else None
    x = np.array(result.x, dtype=float)
    without = hook(model, "without_overlaps")
    if without is not None:
        x = np.asarray(without(x, vanishing), dtype=float)
    elif _moving(model, x).size != x.size or ov.size > x.size:
        return None  # overlaps are not the leading packed entries: no host to build
    else:
        x[:ov.size][vanishing] = 0.0
    r = _correct(model, alpha, x, solve_kw)
    return None if r is None else r.x


def _locate_bifurcation(model, a_last, r_last, direction, solve_kw):
    """Refine a bifurcation end: where the host's eigenvalue nearest 1 crosses 1 (Brent)."""

    def g(al):
        xh = _host_point(model, al, r_last, solve_kw)
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
                    return float(optimize.brentq(g, lo, hi, xtol=1e-14, rtol=ROOT_RTOL))
                except ValueError:  # pragma: no cover - defensive
                    return a_last
    logger.debug("bifurcation near alpha = %g not refined (no sign change of the host eigenvalue)", a_last)
    return a_last


class _Curve:
    """A traced branch: Newton-corrected points on the grid and its two located ends."""

    def __init__(self, seed):
        self.seed = seed
        self.results = {}  # grid index -> FixedPointResult
        self.stability = {}  # grid index -> leading eigenvalue of the Jacobian
        self.ends = {}  # -1 (lower), +1 (upper) -> _End
        self.jumps = {}  # -1, +1 -> the curve (or "universal") the system goes to beyond that end
        self.trail = []  # every point (α, result) the continuation accepted, grid points or not

    def lo(self, alphas):
        e = self.ends.get(-1)
        return alphas[0] if e is None or not np.isfinite(e.alpha) else e.alpha

    def hi(self, alphas):
        e = self.ends.get(+1)
        return alphas[-1] if e is None or not np.isfinite(e.alpha) else e.alpha

    def matches(self, i, result, tol=DISTINCT_TOL, *, model=None, alpha=None) -> bool:
        """Whether ``result`` is this curve's point at grid index ``i`` (overlaps within ``tol``).

        With ``model`` and ``alpha``: a point solved with other labels (another rule level of a
        profile solver, whose discretization moves it by ~1e-5) is first re-solved with this
        curve's labels (``model.relabel``), so that one sheet found twice is one branch."""
        r = self.results.get(i)
        return r is not None and _same_point(model, alpha, r, result, tol)


def _same_point(model, alpha, r, result, tol=DISTINCT_TOL) -> bool:
    """Whether the results ``r`` and ``result`` at ``alpha`` are one stationary point (overlaps within
    ``tol``, after re-solving ``result`` with the labels of ``r`` where they differ and the model can,
    ``model.relabel``)."""
    d = float(np.max(np.abs(_overlaps(r) - _overlaps(result)), initial=0.0))
    if d < tol:
        return True
    relabel = hook(model, "relabel")
    if relabel is None or alpha is None or not d < RELABEL_DISTANCE:
        return False
    x = relabel(float(alpha), result.x, r.x)
    if x is None:
        return False
    ov = np.asarray(model.state(float(alpha), x).overlaps, dtype=float)
    return float(np.max(np.abs(_overlaps(r) - ov), initial=0.0)) < tol


def _damped_step(model, a, r, solve_kw):
    """The damped iteration warm-started at ``r`` (solvers with labels): the result at ``a`` if
    it is not the universal point, else None."""
    nxt = model.solve_from(a, None, r.x, start="continuation", **solve_kw)
    # the profile's front moves across the atoms (overlaps jump from 0 to O(1) at the front):
    # only a return to the universal point counts as leaving the curve
    ok = nxt.converged and "state" in nxt.info and not _is_universal(nxt)
    return nxt if ok else None


def _trace_labelled(model, alphas, i0, r0, solve_kw):
    """:func:`_trace` for solvers whose packed vector holds labels (the profile solver of
    :mod:`replica.readout_grid`): the curve is followed by the damped iteration with warm
    starts, and each end is located by bisection on the same step (to ``LABELLED_END_RTOL``)."""
    curve = _Curve(r0.start)
    curve.results[i0] = r0
    n = alphas.size
    for direction in (+1, -1):
        r, j = r0, i0 + direction
        while True:
            if not 0 <= j < n:
                curve.ends[direction] = _End(math.nan, "grid", r, float(alphas[j - direction]))
                break
            nxt = _damped_step(model, float(alphas[j]), r, solve_kw)
            if nxt is None:
                inside, outside, r_in = float(alphas[j - direction]), float(alphas[j]), r
                while abs(outside - inside) > LABELLED_END_RTOL * max(1.0, abs(inside)):
                    mid = 0.5 * (inside + outside)
                    got = _damped_step(model, mid, r_in, solve_kw)
                    if got is None:
                        outside = mid
                    else:
                        inside, r_in = mid, got
                ov = _overlaps(r_in)
                kind = "bifurcation" if float(np.max(np.abs(ov), initial=0.0)) < BIFURCATION_OVERLAP else "fold"
                curve.ends[direction] = _End(inside, kind, r_in, inside)
                break
            curve.results[j] = nxt
            r, j = nxt, j + direction
    curve.stability = {j: stability(model, alphas[j], r.x, order=1) for j, r in curve.results.items()}
    return curve


def _trace(model, alphas, a0, seed_result, solve_kw):
    """Follow the curve through ``seed_result`` (at ``a0``, a grid point or not) in both
    directions along the grid; None when the curve touches no grid point and does not end inside
    the grid on both sides."""
    if _labelled(model, seed_result.x):
        on_grid = np.flatnonzero(alphas == a0)
        return _trace_labelled(model, alphas, int(on_grid[0]), seed_result, solve_kw) if on_grid.size else None
    r0 = _correct(model, a0, seed_result.x, solve_kw)
    if r0 is None or _is_universal(r0) or \
            float(np.max(np.abs(_overlaps(r0) - _overlaps(seed_result)), initial=0.0)) > DISTINCT_TOL * 10:
        r0 = seed_result  # the damped point is the better estimate (Newton wandered off)
    curve = _Curve(seed_result.start)
    curve.trail.append((float(a0), r0))
    n = alphas.size
    on_grid = np.flatnonzero(alphas == a0)
    if on_grid.size:
        curve.results[int(on_grid[0])] = r0
    for direction in (+1, -1):
        r, slope, a = r0, None, a0
        j = int(np.searchsorted(alphas, a0, side="right")) if direction > 0 else \
            int(np.searchsorted(alphas, a0, side="left")) - 1
        while True:
            if not 0 <= j < n:
                curve.ends[direction] = _End(math.nan, "grid", r, a)
                break
            r_next, slope, failure = _advance(model, a, r, float(alphas[j]), slope, solve_kw, trail=curve.trail)
            if r_next is None:
                a_last, r_last, why, learned = failure
                ov = _overlaps(r_last)
                small = bool(np.any(np.abs(ov[learned]) < BIFURCATION_OVERLAP))
                if why == "support" or small:
                    # many order parameters (vectorized map or not): the end found by halving the step (to
                    # MIN_STEP) is the bifurcation; the host's eigenvalue root adds digits below that at
                    # ~10⁴ evaluations per end
                    a_end = a_last if _moving(model, r_last.x).size > ARNOLDI_SIZE else \
                        _locate_bifurcation(model, a_last, r_last, direction, solve_kw)
                    curve.ends[direction] = _End(a_end, "bifurcation", r_last, a_last)
                else:
                    curve.ends[direction] = _End(a_last, "fold", r_last, a_last)
                break
            curve.results[j] = r_next
            r, a = r_next, float(alphas[j])
            j += direction
    if not curve.results and not all(e.kind in ("fold", "bifurcation") for e in curve.ends.values()):
        return None
    # a curve between two grid points (both ends located inside one interval) has no point on the grid
    # but takes part in the equilibrium (its free entropy may be the largest there): it is kept, with
    # its continuation steps as its points
    curve.stability = {j: stability(model, alphas[j], r.x, order=1) for j, r in curve.results.items()}
    return curve


def _past_the_ghost(model, alpha, end):
    """Start of the damped iteration that finds where the system goes beyond a fold ``end`` at ``alpha``.

    Beyond a saddle-node the iterate crawls through the ghost of the fold, a bottleneck of width
    ``~√(δ/c)`` along the fold's direction ``u`` (``δ = |α − α_f|``, ``α ≈ α_f − c ξ²`` along ``u``,
    :func:`_refine_fold`), for ``~1/√(δc)`` iterations, before it falls onto the attractor the fold
    leads to. The damped iteration starts at the fold point moved :data:`GHOST_WIDTHS` bottleneck
    widths downstream along ``u`` (the side the map moves it to), on the same slow manifold, so that
    the attractor is the same and most of the crawl is skipped. Without the fold's geometry (an end
    located by bisection): the fold point itself.
    """
    x = np.array(end.result.x, dtype=float)
    fold = end.result.info.get("fold")
    if not fold or not fold["curvature"] > 0.0:
        return x
    idx = _moving(model, x)
    u = np.asarray(fold["direction"], dtype=float)
    with np.errstate(all="ignore"):
        try:
            flow = float(u @ (np.asarray(model.update(alpha, x), dtype=float)[idx] - x[idx]))
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return x
    if not (np.isfinite(flow) and flow != 0.0):
        return x
    width = math.sqrt(abs(alpha - end.alpha) / fold["curvature"])
    x[idx] += math.copysign(GHOST_WIDTHS * width, flow) * u
    return x


def _jump_seeds(model, alphas, curve, solve_kw):
    """Where ``curve`` ends inside the grid, the points the system goes to (off-grid seeds).

    Beyond a fold the damped iteration from the curve's last point (warm start) lands on
    another attractor; beyond a bifurcation the host branch (the overlaps that vanished set to
    zero, then Newton) takes over. Returns ``[(direction, alpha, result)]`` of stable non-universal
    points; an end whose jump lands on the universal point is recorded in ``curve.jumps``.
    """
    out = []
    for direction, e in curve.ends.items():
        if e.kind == "grid" or not np.isfinite(e.alpha):
            continue
        a = e.alpha + direction * JUMP_OFFSET * max(1.0, abs(e.alpha))
        if not alphas[0] < a < alphas[-1]:
            continue
        if e.kind == "fold":
            r = model.solve_from(a, None, _past_the_ghost(model, a, e), start=curve.seed, **solve_kw)
        else:
            xh = _host_point(model, a, e.result, solve_kw)
            r = None if xh is None else _correct(model, a, xh, solve_kw)
        if r is not None and r.converged and "state" in r.info and _is_universal(r):
            curve.jumps[direction] = "universal"
        elif r is not None and _exists(r) and stability(model, a, r.x, order=1) < 1.0:
            r.start = curve.seed
            out.append((direction, a, r))
    return out


def _solve_on_curve(model, curve, alphas, alpha, solve_kw, cache):
    """State of ``curve`` at ``alpha`` (continuation from its nearest solved point); None if absent.

    ``cache`` keeps, per curve, every state solved here, the points they were solved at (later
    calls continue from the nearest of them: the iterates of a root finding approach each other)
    and the last factorized Jacobian (:func:`_advance`)."""
    key = (id(curve), float(alpha))
    if key in cache:
        return cache[key]
    if curve == "universal":
        out = model.solve_universal(alpha).info["state"]
        cache[key] = out
        return out
    solved = cache.setdefault(("solved", id(curve)), [])
    jac = cache.setdefault(("jacobian", id(curve)), {})
    # grid points, the continuation's own steps and earlier solves first: the last points before an
    # end sit next to a singular Jacobian
    nodes = [(float(alphas[i]), r) for i, r in curve.results.items()] + curve.trail + solved
    if not nodes or not any(abs(a - alpha) <= np.max(np.diff(alphas), initial=0.0) for a, _ in nodes):
        nodes += [(e.last_alpha, e.result) for e in curve.ends.values()]
    a0, r0 = min(nodes, key=lambda t: abs(t[0] - alpha))
    if a0 == alpha:
        out = r0.info["state"]
    else:
        r, _, _ = _advance(model, a0, r0, float(alpha), None, solve_kw, jac_cache=jac)
        out = None if r is None else r.info["state"]
        if r is not None:
            solved.append((float(alpha), r))
    cache[key] = out
    return out


# --------------------------------------------------------------------------- naming
#: phases (``model.phase``) of a state that has learned nothing above the phase threshold: a curve whose
#: grid points and located ends all have one of them is continued past its grid ends before it is named
#: (:func:`_states_past_the_grid`)
UNLEARNED_PHASES = ("universal", "weak")
#: how far a curve is continued past a grid end for its name only: up to this factor beyond the last α of
#: the grid (upper end), down to the first α divided by it (lower end); α is a scale, so the bound is a
#: ratio, alike for every grid and spacing (past α = 2 it reaches 8, beyond the sign channel's fold at 4.28)
NAME_EXTENSION_FACTOR = 4.0
#: that range is followed in this many legs of equal ratio in α (each by :func:`_advance`, with its own
#: step control); the continuation stops after the first leg at which the phase is decided
NAME_EXTENSION_LEGS = 24
#: and in at most this many accepted continuation steps per end (a bound on the cost of a slow curve)
NAME_EXTENSION_STEPS = 200


def _states_past_the_grid(model, curve, states, solve_kw):
    """``states`` (the curve's own) and the states of ``curve`` beyond its ends of kind ``grid``, for its
    name only (:func:`_name_curves`).

    Where the grid cuts a curve (its first or last α lies inside the curve), the grid points need not hold
    the curve's most specialized point: a curve whose overlaps pass the phase threshold only past the
    last α would be named ``weak`` on that grid and ``specialized`` on a longer one. From each such end
    (the upper one first: overlaps grow with α on most curves) the curve is followed by the tracer's
    continuation (:func:`_advance` with its step control, fold location and checks; the damped iteration
    with warm starts for solvers with labels, :func:`_damped_step`) in :data:`NAME_EXTENSION_LEGS` legs up
    to :data:`NAME_EXTENSION_FACTOR` beyond the grid, until the curve ends (fold, bifurcation, or no step
    accepted), its phase is decided (the most specialized state met is not in :data:`UNLEARNED_PHASES`;
    the other end is then not followed), or :data:`NAME_EXTENSION_STEPS` steps have been accepted. Returns
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
        labelled = _labelled(model, r.x)
        for leg in range(1, NAME_EXTENSION_LEGS + 1):
            a_next = a0 * NAME_EXTENSION_FACTOR ** (direction * leg / NAME_EXTENSION_LEGS)
            trail, end = [], None
            if labelled:
                nxt = _damped_step(model, a_next, r, solve_kw)
                if nxt is not None:
                    trail.append((a_next, nxt))
            else:
                nxt, slope, failure = _advance(model, a, r, a_next, slope, solve_kw, jac_cache=jac, trail=trail)
                end = None if failure is None else failure[1]  # the last point before the end (a located fold)
            met += [rr.info["state"] for _, rr in trail if "state" in rr.info]
            if end is not None and "state" in end.info:
                met.append(end.info["state"])
            steps += len(trail)
            if nxt is None:
                break
            a, r = a_next, nxt
            if steps >= NAME_EXTENSION_STEPS or decided():
                break
        logger.debug("named past the grid end at alpha = %g: followed to alpha = %g (%d steps)", a0, a, steps)
    return met


def _name_curves(model, curves, alphas, solve_kw=None):
    """Names of the traced curves after the phase each describes (module docstring, "Names").

    Returns the names and the order of the curves (by first α, then last α), names listed in that order.
    A curve's phase is ``model.phase`` at its most specialized point among its grid points and its located
    ends (a fold or bifurcation is located independently of the grid); a curve below the phase threshold
    there (:data:`UNLEARNED_PHASES`) and cut by the grid is first continued past its grid ends
    (:func:`_states_past_the_grid`: the name must not depend on where the grid stops; nothing of that
    continuation is stored). Curves of one phase are told apart by how strongly they learn it: the weakest
    keeps the name, stronger ones get ``-2``, ``-3``, … (:func:`_weaker`). ``solve_kw``: the options of the
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
            states = _states_past_the_grid(model, c, states, solve_kw)
            base = model.phase(max(states, key=model.specialization))
        groups.setdefault("weak" if base in UNLEARNED_PHASES else base, []).append(k)
    names = {}
    for base, members in groups.items():
        ranked = sorted(members, key=functools.cmp_to_key(lambda i, j: _weaker(curves[i], curves[j], alphas)))
        for rank, k in enumerate(ranked, start=1):
            names[k] = base if rank == 1 else f"{base}-{rank}"
    return [names[k] for k in order], order


def _weaker(a, b, alphas) -> int:
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


# --------------------------------------------------------------------------- equilibrium
def _envelope_slope(model, alpha, st) -> float:
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


def _locate_crossing(value, a, b, rtol=CROSSING_RTOL):
    """Root of a free-entropy difference in ``[a, b]``: Newton steps with the slope that ``value``
    returns (``(difference, slope or None/NaN)``; the envelope identity, :func:`_envelope_slope`)
    inside the bracket, regula falsi where a step leaves it or no slope is known; stops when a
    Newton step is below ``rtol`` relative (its error is then of second order) or the bracket is.

    Raises
    ------
    ValueError
        The difference has the same sign at both ends.
    """
    fa, _ = value(a)
    fb, _ = value(b)
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if not fa * fb < 0.0:
        raise ValueError("no sign change")
    x = a - fa * (b - a) / (fb - fa)
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


def _equilibrium_changes(model, alphas, curves, names, solve_kw):
    """Every change of the branch of largest free entropy, located (module docstring)."""
    members = [("universal", "universal")] + list(zip(names, curves))
    cache = {}
    nodes = set(float(a) for a in alphas)
    for _, c in members[1:]:
        for e in c.ends.values():
            if np.isfinite(e.alpha) and alphas[0] < e.alpha < alphas[-1]:
                nodes.add(float(e.alpha))
    nodes = sorted(nodes)
    grid_index = {float(a): i for i, a in enumerate(alphas)}

    def exists(c, a):
        return c == "universal" or c.lo(alphas) <= a <= c.hi(alphas)

    def state(c, a):
        if c != "universal":
            i = grid_index.get(a)
            if i is not None and i in c.results:
                return c.results[i].info["state"]
            for e in c.ends.values():
                if e.alpha == a:  # a located end: its last point lies within MIN_STEP of it
                    return e.result.info["state"]
        return _solve_on_curve(model, c, alphas, a, solve_kw, cache)

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
        return any(c != "universal" and any(e.kind == "bifurcation" and e.alpha == a for e in c.ends.values())
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
            ended = pc != "universal" and pc.hi(alphas) <= s
            changes.append(_change(model, by_name, prev_right, left, s, "branch_end" if ended else "branch_start",
                                   state))
        if left != right:
            cp, cq = by_name[left], by_name[right]

            def diff(a, cp=cp, cq=cq):
                sq, sp = state(cq, a), state(cp, a)
                if sq is None or sp is None:
                    return fe(cq, a) - fe(cp, a), None
                slope = _envelope_slope(model, a, sq) - _envelope_slope(model, a, sp)
                return float(sq.free_entropy) - float(sp.free_entropy), slope

            try:
                a_c = _locate_crossing(diff, a_left, a_right)
            except ValueError:
                logger.info("equilibrium change %s -> %s in [%g, %g] not bracketed", left, right, a_left, a_right)
                a_c = 0.5 * (a_left + a_right)
            changes.append(_change(model, by_name, left, right, a_c, "crossing", state))
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


def _change(model, by_name, frm, to, alpha, kind, state):
    before, after = state(by_name[frm], alpha), state(by_name[to], alpha)
    return {"alpha": float(alpha), "from": frm, "to": to, "kind": kind, "located": True,
            "mmse_before": math.nan if before is None else float(before.mmse),
            "mmse_after": math.nan if after is None else float(after.mmse)}


#: per-point fields carried into the equilibrium next to mmse (present for ±1 output channels)
EQUILIBRIUM_EXTRA_FIELDS = ("classification_error", "sign_disagreement")


def _equilibrium(alphas, branches):
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


def _alpha_instability(model, alphas, universal, indices):
    """First α where the universal branch loses linear stability (Brent on stability − 1)."""
    s = universal["stability"]
    for i in range(1, alphas.size):
        if np.isfinite(s[i - 1]) and np.isfinite(s[i]) and s[i - 1] < 1.0 <= s[i]:
            def g(al):
                return stability(model, al, model.solve_universal(al).x, indices=indices) - 1.0

            try:
                from scipy import optimize  # lazy: start-up (docs/architecture.md)
                return float(optimize.brentq(g, alphas[i - 1], alphas[i], xtol=1e-14, rtol=ROOT_RTOL))
            except ValueError:  # pragma: no cover - defensive
                return math.nan
    return math.nan


# --------------------------------------------------------------------------- the sweep
def _solve(cache, key, i, alpha, compute):
    """Run ``compute()`` directly, or through the resume hook ``cache`` (see :func:`sweep`)."""
    if cache is None:
        return compute()
    return cache(key, i, alpha, compute)


def _curve_through(model, alphas, curves, alpha, result, solve_kw):
    """The traced curve that passes through the point ``result`` at ``alpha`` (off the grid), or None.

    Every curve that exists at ``alpha`` is continued there from the nearest of its grid points and
    continuation steps (a few corrector steps; from the next nearest, up to :data:`CURVE_THROUGH_TRIES`,
    where that fails, and as a last resort by the damped iteration warm-started at the nearest point when
    it is linearly stable and within two :data:`JUMP_OFFSET` of ``alpha``);
    the point lies on it when the overlaps agree to :data:`DISTINCT_TOL`. Avoids tracing a whole branch
    again to learn that a jump landed on it (three hidden layers: a jump next to the branch point of
    ``layers_1_2`` at α ≈ 3.878 was otherwise traced as a short extra branch)."""
    ov = _overlaps(result)
    for c in curves:
        if not c.lo(alphas) <= alpha <= c.hi(alphas):
            continue
        nodes = [(float(alphas[i]), r) for i, r in c.results.items()] + c.trail
        if not nodes:
            continue
        nearest = sorted(nodes, key=lambda t: abs(t[0] - alpha))
        for a0, r0 in nearest[:CURVE_THROUGH_TRIES]:
            r = r0 if a0 == alpha else _advance(model, a0, r0, float(alpha), None, solve_kw)[0]
            if r is not None:
                break
        else:
            # continuation fails from every point tried (next to a branch point, where the corrector
            # meets a near-singular Jacobian): the damped iteration warm-started at the nearest point, when
            # that point is within two jump offsets and linearly stable (the damped iteration then stays on
            # its curve), kept where it lands within one accepted continuation step of it (:func:`_check_step`)
            a0, r0 = nearest[0]
            r = None
            if abs(a0 - alpha) <= 2.0 * JUMP_OFFSET * max(1.0, abs(alpha)) \
                    and stability(model, a0, r0.x, order=1) < 1.0:
                r = model.solve_from(float(alpha), None, r0.x, start="continuation", **solve_kw)
                ov0 = _overlaps(r0)
                if not (_exists(r) and _check_step(r, ov0, np.abs(ov0) > SUPPORT_OVERLAP) is None):
                    r = None
        if r is not None and _same_point(model, alpha, r, result):
            return c
    return None


def _add_curve(model, alphas, a0, seed, curves, solve_kw):
    """Trace the curve through ``seed`` unless continuation joins it to a traced one, then
    trace what the system jumps to at its ends (:func:`_jump_seeds`, recorded in ``jumps`` of the
    curve it leaves); returns the curve the seed lies on (None if it touches no grid point)."""
    new = _trace(model, alphas, a0, seed, solve_kw)
    if new is None:
        return None
    same = next((c for c in curves if any(c.matches(j, rj, model=model, alpha=alphas[j])
                                           for j, rj in new.results.items())), None)
    if same is not None:  # continuation connected it to a traced curve: one branch
        logger.debug("seed %s at alpha = %g joins a traced branch", seed.start, a0)
        return same
    curves.append(new)
    queue = [new]
    while queue and len(curves) < MAX_BRANCHES:
        source = queue.pop(0)
        for direction, a, r in _jump_seeds(model, alphas, source, solve_kw):
            known = _curve_through(model, alphas, curves, a, r, solve_kw)
            if known is not None:  # the jump lands on a traced branch: nothing new to trace
                source.jumps[direction] = known
                continue
            c = _trace(model, alphas, a, r, solve_kw)
            if c is None:
                continue
            known = next((d for d in curves if any(d.matches(j, rj, model=model, alpha=alphas[j])
                                                   for j, rj in c.results.items())), None)
            source.jumps[direction] = c if known is None else known
            if known is None:
                curves.append(c)
                queue.append(c)
    return new


class _NoProgress:
    def update(self, n=1):
        pass

    def refresh(self):
        pass

    def close(self):
        pass


def _progress_bar(total, progress):
    """A tqdm bar, or a no-op one without importing tqdm (start-up, docs/architecture.md)."""
    if not progress:
        return _NoProgress()
    if "ipykernel" in sys.modules:  # a notebook: its widget bar
        from tqdm.auto import tqdm
    else:  # what tqdm.auto gives in a terminal, without importing asyncio (~50 ms)
        from tqdm.std import tqdm

    # one step per grid point of every pass (universal, then each start): a point where a pass follows a
    # traced branch costs no solve, so the unit is the point, not the solve
    return tqdm(total=total, desc="α sweep", unit="point", leave=False)


def _pass(model, alphas, order, overlaps0, start, key, curves, solve_kw, pbar, cache):
    """One damped pass along ``order`` from the start ``overlaps0``, with warm starts; every
    stable non-universal point it reaches that lies on no traced branch is traced at once
    (appended to ``curves``).

    Where the pass's previous point lies on a traced branch whose point at the next α is
    linearly stable, the damped iteration is not run: from a warm start on a stable branch
    it converges to that branch's next point (the grid step is taken as small compared with
    the basin of attraction), so the pass simply follows the branch. Where that branch ends
    (fold or bifurcation) before the next α, the pass goes where the system jumps at that end
    (the curve its jump seed landed on, :func:`_jump_seeds`, if it is stable at the next α; the
    universal point if the jump landed there): a quasi-static sweep through the end, instead of a
    damped iteration from the previous point across the ghost of the fold.
    """
    warm, on = None, None
    previous = None
    for i in order:
        if pbar is not None:
            pbar.update(1)
        if on is not None and i in on.results and on.stability.get(i, math.nan) < 1.0:
            warm, previous = on.results[i].x, i
            continue
        if on is not None and previous is not None and i not in on.results:
            direction = 1 if i > previous else -1
            end = on.ends.get(direction)
            target = on.jumps.get(direction)
            between = end is not None and np.isfinite(end.alpha) and \
                min(alphas[previous], alphas[i]) < end.alpha < max(alphas[previous], alphas[i])
            if between and target == "universal":
                warm, on, previous = None, None, i
                continue
            if between and target is not None and i in target.results \
                    and target.stability.get(i, math.nan) < 1.0:
                warm, on, previous = target.results[i].x, target, i
                continue
        previous = i
        res = _solve(cache, key, i, alphas[i],
                     lambda a=alphas[i], w=warm: model.solve_from(a, overlaps0, w, start=start, **solve_kw))
        if not _exists(res):
            # branch lost (spinodal) or failure: later points restart from the fresh start
            warm, on = None, None
            continue
        warm = res.x
        on = next((c for c in curves if c.matches(i, res, model=model, alpha=alphas[i])), None)
        if on is not None:
            continue
        if not stability(model, alphas[i], res.x, order=1) < 1.0:
            # not an attractor of the damped iteration (a Newton polish can land on a saddle next to a slow
            # ghost, and an exactly invariant set holds the iteration on a saddle): leave it along the
            # unstable direction; what is still unstable is not a seed
            res = _escape_saddle(model, float(alphas[i]), res, start, solve_kw)
            if res is None:
                logger.debug("unstable point from start %s at alpha = %g is not a seed", start, alphas[i])
                continue
            warm = res.x
            on = next((c for c in curves if c.matches(i, res, model=model, alpha=alphas[i])), None)
            if on is not None:
                continue
        on = _add_curve(model, alphas, float(alphas[i]), res, curves, solve_kw)


def _unstable_direction(model, alpha, x):
    """``(moving indices, real part of the eigenvector of the leading eigenvalue)`` of the Jacobian of the
    map at ``x``, scaled to max-norm 1: ARPACK on one-sided forward differences where :func:`_matrix_free`
    says so (as :func:`_leading_eigenvalue`), else the dense first-order Jacobian; None where that fails."""
    idx = _moving(model, x)
    if idx.size == 0:
        return None
    with np.errstate(all="ignore"):
        try:
            if _matrix_free(model, x):
                from scipy.sparse.linalg import LinearOperator, eigs

                f0 = np.asarray(model.update(alpha, x), dtype=float)[idx]
                scale = 1e-7 * max(1.0, float(np.max(np.abs(x[idx]))))

                def one_sided(v):  # upward steps only, as _leading_eigenvalue (the map clips at 0)
                    norm = float(np.linalg.norm(v))
                    if norm == 0.0:
                        return np.zeros_like(v)
                    y = np.array(x, dtype=float)
                    y[idx] += scale / norm * v
                    return (np.asarray(model.update(alpha, y), dtype=float)[idx] - f0) * (norm / scale)

                def matvec(v):
                    v = np.asarray(v, dtype=float).ravel()
                    return one_sided(np.maximum(v, 0.0)) - one_sided(np.maximum(-v, 0.0))

                op = LinearOperator((idx.size, idx.size), matvec=matvec, dtype=float)
                _, vec = eigs(op, k=1, which="LR", tol=1e-6, maxiter=ARNOLDI_MAXITER)
                vec = vec[:, 0]
            else:
                jac = jacobian(model, alpha, x, order=1, indices=idx)
                values, vectors = np.linalg.eig(jac)
                vec = vectors[:, int(np.argmax(values.real))]
        except Exception:  # noqa: BLE001 - ARPACK or LAPACK failures: no direction, the point is no seed
            return None
    vec = np.real(vec)
    top = float(np.max(np.abs(vec)))
    if not (np.isfinite(top) and top > 0.0):
        return None
    return idx, vec / top


def _escape_saddle(model, alpha, res, start, solve_kw):
    """A linearly stable point reached by the damped iteration from the unstable converged point ``res``
    displaced by :data:`SADDLE_ESCAPE` along its unstable eigenvector, or None.

    Round-off displaces a damped iteration from such a saddle only where the map's kernels are inexact
    at the invariant set (``g'(0)`` computed with cancellation), so the step is taken explicitly: the
    same branches with exact and inexact kernels. The overlaps of an invariant set sit at their lower
    bound 0 (the map clips them), and zero-mass nodes (probes, the empty panel of a front at 0) give a
    degenerate unstable eigenvalue whose eigenvector mixes signs, so the step is ``|v|``, repeated at most
    :data:`SADDLE_ROUNDS` times while the point is still unstable. A point with no moving entry at 0 is
    not on such a set: None at once (it is no seed, as before)."""
    project = hook(model, "project")
    if not np.any(np.asarray(res.x, dtype=float)[_moving(model, res.x)] == 0.0):
        return None  # no entry at its bound: not held on an invariant set
    for _ in range(SADDLE_ROUNDS):
        found = _unstable_direction(model, alpha, res.x)
        if found is None:
            return None
        idx, vec = found
        x = np.array(res.x, dtype=float)
        x[idx] += SADDLE_ESCAPE * np.abs(vec)
        if project is not None:
            x = project(x)
        res = model.solve_from(alpha, x, x, start=start, **solve_kw)
        if not _exists(res):
            return None
        if stability(model, alpha, res.x, order=1) < 1.0:
            logger.debug("start %s at alpha = %g: saddle left along its unstable direction", start, alpha)
            return res
    return None


def _validate(alphas, branches):
    alphas = np.asarray(alphas, dtype=float)
    if alphas.ndim != 1 or alphas.size == 0:
        raise ValueError("alpha grid must be a non-empty 1-D list of numbers")
    if not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
        raise ValueError("alpha values must be finite and > 0")
    if np.unique(alphas).size != alphas.size:
        raise ValueError("alpha values must be distinct")
    if branches not in ("all", "universal"):
        raise ValueError(f"branches must be 'all' or 'universal', got {branches!r}")
    return np.sort(alphas)


def sweep(model, alphas, *, branches="all", progress=True, solve_kw=None, locate=True,
          cache=None) -> SweepResult:
    """Trace every branch of ``model`` on the α grid by continuation (module docstring).

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

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        Empty, non-finite, non-positive or repeated α values; unknown ``branches``.
    """
    alphas = _validate(alphas, branches)
    with remembered_jacobians():
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
    pbar = _progress_bar(n * (1 + len(passes)), progress)

    # universal branch, with its stability (restricted to its own subspace under the ruling)
    uni_indices = hook(model, "universal_indices")() if reason else None
    universal = BranchData("universal", alphas)
    for i, a in enumerate(alphas):
        r = _solve(cache, "universal", i, a, lambda a=a: model.solve_universal(a))
        universal.set(i, r, stability(model, a, r.x, indices=uni_indices), _channel_fields(model, r))
        pbar.update(1)
    out = {"universal": universal}

    # seeds from the damped passes, each traced by continuation as soon as it is found
    curves = []
    for name, ov0, order, key in passes:
        _pass(model, alphas, order, ov0, name, key, curves, solve_kw, pbar, cache)
    pbar.refresh()  # the last points of a pass along a traced branch are quick: show the bar at its total
    pbar.close()

    names, order = _name_curves(model, curves, alphas, solve_kw) if curves else ([], [])
    curves = [curves[k] for k in order]
    for name, c in zip(names, curves):
        b = BranchData(name, alphas, seed=c.seed)
        for i in sorted(c.results):
            r = c.results[i]
            b.set(i, r, c.stability[i], _channel_fields(model, r))
        lo, hi = c.ends.get(-1), c.ends.get(+1)
        b.alpha_start, b.start_kind = (lo.alpha, lo.kind) if lo else (math.nan, "grid")
        b.alpha_end, b.end_kind = (hi.alpha, hi.kind) if hi else (math.nan, "grid")
        out[name] = b
    _fill_missing_fields(out)

    equilibrium = _equilibrium(alphas, out)
    transitions = {"alpha_sp": math.nan, "alpha_c": math.nan}
    per_branch = {"universal": {"alpha_instability": _alpha_instability(model, alphas, universal, uni_indices)}}
    changes = []
    if locate and curves:
        changes = _equilibrium_changes(model, alphas, curves, names, solve_kw)
        for name in names:
            b = out[name]
            first = next((c["alpha"] for c in changes if c["to"] == name), math.nan)
            per_branch[name] = {"alpha_sp": float(b.alpha_start), "alpha_end": float(b.alpha_end),
                                "alpha_c": float(first)}
        main = hook(model, "main_phase")
        if main is None:  # the first change away from the universal branch
            transitions = _entry(out, names, changes, equilibrium, lambda nm: nm != "universal",
                                 leaves=lambda c: c["from"] == "universal")
        else:  # the first time the equilibrium reaches the model's main phase
            transitions = _entry(out, names, changes, equilibrium, lambda nm: nm.split("-")[0] == main)
        n_layers = int(hook(model, "n_layers"))
        if n_layers >= 2:  # where each layer becomes learned (docs/two_layer.md, docs/deep_linear.md)
            for ell in range(1, n_layers + 1):
                tr = _entry(out, names, changes, equilibrium, lambda nm, ell=ell: ell in learned_layers(nm, n_layers))
                transitions[f"alpha_sp_layer_{ell}"] = tr["alpha_sp"]
                transitions[f"alpha_c_layer_{ell}"] = tr["alpha_c"]
    return SweepResult(alphas, out, equilibrium, transitions, np.asarray(model.readout_values),
                       np.asarray(model.readout_weights), per_branch, changes, reason)


def learned_layers(name, n_layers) -> frozenset:
    """Layers a phase or branch name says are learned (``-2`` repeat suffixes ignored).

    ``layer_ℓ`` → {ℓ}, ``layers_ℓ_ℓ'_…`` → {ℓ, ℓ', …} (a ``+product`` suffix adds none),
    ``specialized`` → every layer, anything else (``universal``, ``weak``, ``product``) → none.

    Parameters
    ----------
    name : str
    n_layers : int

    Returns
    -------
    frozenset of int
    """
    base = str(name).split("-")[0].split("+")[0]
    if base == "specialized":
        return frozenset(range(1, int(n_layers) + 1))
    for prefix in ("layers_", "layer_"):
        if base.startswith(prefix):
            parts = base[len(prefix):].split("_")
            if all(p.isdigit() for p in parts):
                return frozenset(int(p) for p in parts)
    return frozenset()


def _entry(out, names, changes, equilibrium, target, leaves=None) -> dict:
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


def _channel_fields(model, result) -> dict:
    """Classification errors of a point for a ±1 output channel (:meth:`OutputChannelTerms.channel_fields
    <replica.models._output.OutputChannelTerms.channel_fields>`); ``{}`` for other channels and models
    without one."""
    fields = hook(model, "channel_fields")
    return fields(float(result.info["state"].mmse)) if fields is not None else {}


def _fill_missing_fields(branches):
    """Give every branch every per-point field (NaN, False or "" where it does not exist)."""
    template = {}
    for b in branches.values():
        for key, val in b.fields.items():
            template.setdefault(key, val)
    for b in branches.values():
        for key, val in template.items():
            if key not in b.fields:
                if val.dtype == object:
                    b.fields[key] = np.array([""] * val.shape[0], dtype=object)
                elif val.dtype == bool:
                    b.fields[key] = np.zeros(val.shape, dtype=bool)
                else:
                    b.fields[key] = np.full(val.shape, np.nan)
