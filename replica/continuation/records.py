"""What a sweep produces: the branch records (:class:`BranchData`), the sweep's result (:class:`SweepResult`),
the located end of a curve (:class:`End`) and the per-point fields shared by every branch."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..engine import FixedPointResult
from ..interface import hook

__all__ = ["BranchData", "SweepResult", "End", "learned_layers", "channel_fields", "fill_missing_fields"]


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
    branch_points, branch_point_kinds : tuple
        α of every located crossing of 1 by the leading eigenvalue along the branch, and its kind
        (``branch_point`` or ``stability_crossing``, :mod:`replica.continuation.branchpoints`).
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
    #: located branch points along the branch (:mod:`replica.continuation.branchpoints`): α and kind each
    branch_points: tuple = ()
    branch_point_kinds: tuple = ()

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
        (:func:`channel_fields`)."""
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
        """``alpha_start``, ``alpha_end``, ``start_kind``, ``end_kind``, ``seed``, ``branch_points`` (float array)
        and ``branch_point_kinds`` (their kinds, comma-separated) (HDF5 attributes)."""
        return {"alpha_start": float(self.alpha_start), "alpha_end": float(self.alpha_end),
                "start_kind": self.start_kind, "end_kind": self.end_kind, "seed": self.seed,
                "branch_points": np.asarray(self.branch_points, dtype=float),
                "branch_point_kinds": ",".join(self.branch_point_kinds)}

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
    feature_transitions : dict
        One-hidden-layer profile solver with a discrete readout law: every group's own first-order
        transition, one entry per group and branch (:func:`replica.workflow.run.feature_transitions`).
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
    #: the located per-group transitions (:func:`replica.workflow.run.feature_transitions`): columns of
    #: :data:`replica.workflow.io.FEATURE_DATASETS`; empty for models without groups of readouts
    feature_transitions: dict = field(default_factory=dict)


@dataclass
class End:
    alpha: float  # located α of the end (NaN at the grid edge)
    kind: str  # fold, bifurcation or grid
    result: FixedPointResult  # last point of the curve before the end
    last_alpha: float  # α of that point


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


def channel_fields(model, result) -> dict:
    """Classification errors of a point for a ±1 output channel (:meth:`OutputChannelTerms.channel_fields
    <replica.models._output.OutputChannelTerms.channel_fields>`); ``{}`` for other channels and models
    without one."""
    fields = hook(model, "channel_fields")
    return fields(float(result.info["state"].mmse)) if fields is not None else {}


def fill_missing_fields(branches):
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
