"""The interface every solver implements (one hidden layer, deep, two hidden layers).

Continuation, branch naming, stability, equilibrium selection (:mod:`replica.branches`),
storage (:mod:`replica.workflow.io`), plots and phase diagrams use the solvers only through
:class:`ReplicaModel` and the states they return only through :class:`ReplicaState`, so
that the continuation is written once. :class:`replica.models.shallow.ShallowModel`,
:class:`replica.models.deep.DeepModel` and :class:`replica.models.two_layer.TwoLayerModel` implement it
(``tests/test_branches.py`` checks it with ``isinstance(model, ReplicaModel)``).

Packed points
-------------
Every solver works on one packed vector ``x`` of shape ``(p,)`` holding its order
parameters, the overlaps of ``state.overlaps`` first (e.g. ``(Q(v)…, R̂₂)`` for one hidden
layer); ``update(alpha, x)`` is the
*undamped* fixed-point map ``F`` on it, whose fixed points are the stationary points of
the free entropy. The damped iteration of :mod:`replica.engine` and the Newton corrector of
the continuation solve ``F(x) = x``; the linear stability of a point is the leading
eigenvalue of the Jacobian of ``F`` (:func:`replica.branches.stability`).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from .engine import FixedPointResult

__all__ = ["ReplicaModel", "ReplicaState"]


@runtime_checkable
class ReplicaState(Protocol):
    """One stationary point with everything derived from it.

    Attributes
    ----------
    alpha : float
        Sample ratio α = n/d².
    mmse : float
        Bayes-optimal excess test error (noise and known mean excluded).
    free_entropy : float
        Replica-symmetric free entropy per d² (the equilibrium maximizes it; ``+inf`` at
        perfect recovery with Δ = 0).
    overlaps : ndarray, shape (n_overlaps,)
        The specialization overlaps, all zero on the universal branch; used to tell
        stationary points apart and to detect where a branch merges into another one.
    """

    alpha: float
    mmse: float
    free_entropy: float

    @property
    def overlaps(self) -> np.ndarray: ...

    def record(self) -> dict:
        """Per-point fields stored in a branch group (name → float or ndarray)."""
        ...


@runtime_checkable
class ReplicaModel(Protocol):
    """A replica-symmetric solver, as used by :func:`replica.branches.sweep`.

    Attributes
    ----------
    readout_values, readout_weights : ndarray, shape (n_readout,)
        Atoms and weights of the readout law (stored with every sweep).
    main_phase : str, optional
        Phase whose first appearance as the equilibrium defines the top-level
        ``alpha_sp``/``alpha_c`` (two hidden layers: ``layers_1_2``); absent: the first
        change away from the universal branch.
    grids : dict, optional
        Extra 1-D coordinates stored with every branch (two hidden layers: ``s_values``,
        ``s_weights``).
    dataset_axes : dict, optional
        ``{dataset: (scale, …)}``: dimension scales (``readout_values`` or ``grids`` entries) of the
        axes after α of stored matrices (L ≥ 3: rows and columns of every ``W_{ℓ:m}``).
    moving_indices(x), optional
        Entries of the packed vector the map moves (default all): the unknowns of the
        continuation and of the stability Jacobian (one hidden layer with the profile solver
        of :mod:`replica.readout_grid`: ``(D, M)``; its selection and rule level are labels).
    envelope_identity : bool, optional
        True when the free entropy is ``−½ ln(2πe(Δ + mmse)) + G/α`` with ``G`` a function of the
        order parameters only (and the model has ``delta``): the equilibrium crossings are then
        located by Newton steps with ``df/dα = −(f + ½ ln 2πe(Δ + mmse))/α`` (default: no slope).
    fixed_labels : bool, optional
        True when those labels are constant along a branch (two hidden layers with the profile
        solver in s): the continuation then uses the Newton corrector on the moving entries, with
        folds and bifurcations located as for label-free solvers; otherwise (default) labelled
        curves are followed by damped steps.

    Methods
    -------
    starts()
        ``{name: (packed initial point or overlaps, direction)}`` with direction
        ``"up"``, ``"down"`` or ``"both"``: where the damped iteration looks for
        stationary points (the seeds of the continuation).
    solve_universal(alpha)
        The universal branch (nothing beyond the parts every phase learns), exactly.
    solve_from(alpha, overlaps, warm=None, *, start="", **solver_options)
        Damped iteration from a start (``overlaps``) or from a packed point ``warm``;
        ``method="newton"`` solves ``F(x) = x`` by Newton from ``warm`` (the corrector of
        the continuation). Returns a :class:`FixedPointResult` with ``info["state"]``.
    update(alpha, x)
        The undamped map ``F`` on the packed vector.
    state(alpha, x)
        The :class:`ReplicaState` at a packed point.
    phase(state)
        Name of what a state has learned (``universal``, ``weak``, ``partial``,
        ``specialized``, ``layer_1``, …); branches are named after it.
    specialization(state)
        A scalar that grows with what is learned (the branch is named after its most
        specialized point).
    universal_only_reason()
        ``None``, or the reason why only the universal branch is Bayes-optimal for this
        model (then no other branch is traced; docs/theory.md §5.4).
    universal_indices()
        Indices of the packed vector that are free on the universal branch (its stability
        is that of the map restricted to them when ``universal_only_reason()`` is set).
    """

    readout_values: np.ndarray
    readout_weights: np.ndarray

    def starts(self) -> dict: ...

    def solve_universal(self, alpha: float) -> FixedPointResult: ...

    def solve_from(self, alpha: float, overlaps, warm=None, *, start: str = "", **solver_options
                   ) -> FixedPointResult: ...

    def update(self, alpha: float, x: np.ndarray) -> np.ndarray: ...

    def state(self, alpha: float, x: np.ndarray) -> ReplicaState: ...

    def phase(self, state) -> str: ...

    def specialization(self, state) -> float: ...

    def universal_only_reason(self) -> str | None: ...

    def universal_indices(self) -> np.ndarray: ...
