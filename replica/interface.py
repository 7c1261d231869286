"""The interface every solver implements (one hidden layer, deep, two hidden layers).

Continuation, branch naming, stability, equilibrium selection (:mod:`replica.continuation`),
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
eigenvalue of the Jacobian of ``F`` (:func:`replica.continuation.stability`).
"""

from __future__ import annotations

import functools
import inspect
import types
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .engine import FixedPointResult

__all__ = ["ReplicaModel", "ReplicaState", "ModelDefaults", "RecordedArguments", "records_arguments", "hook", "HOOKS",
           "REQUIRED", "missing_members", "FieldSpec", "state_schema", "default_schema", "schema_to_json",
           "schema_from_json"]


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
    """A replica-symmetric solver, as used by :func:`replica.continuation.sweep`.

    Attributes
    ----------
    readout_values, readout_weights : ndarray, shape (n_readout,)
        Atoms and weights of the readout law (stored with every sweep).

    The optional hooks (``main_phase``, ``grids``, ``dataset_axes``, ``moving_indices``,
    ``fixed_labels``, ``envelope_identity``, ``discretization_error``, ``s_grid_rule``,
    ``universal_only_reason``, ``universal_indices``, ``state_schema``, …) are declared once, with
    their defaults, in :class:`ModelDefaults`, and read through :func:`hook`.

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
        A scalar that grows with what is learned (branch names compare curves by it,
        :mod:`replica.continuation`, "Names").
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


#: the members every model has (:class:`ReplicaModel`); the others are hooks with defaults (:class:`ModelDefaults`)
REQUIRED = ("readout_values", "readout_weights", "starts", "solve_universal", "solve_from", "update", "state", "phase",
            "specialization")


def missing_members(model) -> list:
    """The required members (:data:`REQUIRED`) that ``model`` lacks, in that order (``[]``: a complete model)."""
    return [name for name in REQUIRED if getattr(model, name, None) is None]


# --------------------------------------------------------------------------- optional hooks
class ModelDefaults:
    """The optional members of a :class:`ReplicaModel`, each with its default (what a model without it gets).

    A model may inherit from this class or not (the built-in models do): the machinery reads every optional
    member through :func:`hook`, which falls back on the attribute of this class (methods bound to the model).
    Reading a name that is not declared here is an error, so that a misspelt hook is not silently ignored
    (``tests/test_model_protocol.py`` checks that every name the package passes to :func:`hook` is declared).

    Attributes
    ----------
    main_phase : str or None
        Phase whose first appearance as the equilibrium defines the top-level ``alpha_sp``/``alpha_c``
        (two hidden layers: ``layers_1_2``). Default None: the first change away from the universal branch.
    n_layers : int
        Number of hidden layers; ≥ 2 adds the per-layer transitions ``alpha_{sp,c}_layer_<ℓ>``. Default 1.
    grids : dict
        Extra 1-D coordinates ``{name: ndarray}`` stored with every branch (two hidden layers: ``s_values``,
        ``s_weights``). Default ``{}``.
    dataset_axes : dict or None
        ``{dataset: (scale, …)}``: dimension scales (``readout_values`` or ``grids`` entries) of the axes after
        α of stored matrices (L ≥ 3: rows and columns of every ``W_{ℓ:m}``). Default None.
    s_grid_rule : str or None
        Description of the model's rule in s, stored as the root attribute ``s_grid_rule``. Default None.
    fixed_labels : bool
        True when the labels of the packed vector (entries outside :meth:`moving_indices`) are constant
        along a branch: the continuation then uses the Newton corrector on the moving entries. Default False
        (labelled curves are followed by damped steps).
    envelope_identity : bool
        True when the free entropy is ``Ψ_out(mmse) + G/α`` with ``G`` a function of the order parameters
        only: equilibrium crossings are then located with ``df/dα = −(f − Ψ_out)/α``. Default False.
    discretization_error : callable or None
        ``discretization_error(alpha, x, **solver_options) -> float``: the relative change of mmse and free
        entropy of the point ``x`` on the doubled grid (dataset ``discretization_error``). Default None
        (no estimate, no dataset).
    relabel : callable or None
        ``relabel(alpha, x, like) -> x or None``: the point ``x`` re-solved with the labels of ``like``
        (profile solvers, so that one sheet found on two rule levels is one branch). Default None.
    energetic : callable or None
        ``energetic(mmse) -> float``: the output-channel term ``Ψ_out`` of the free entropy. Default None
        (Gaussian labels of variance ``model.delta``: ``−½ ln 2πe(Δ + mmse)``).
    channel_fields : callable or None
        ``channel_fields(mmse) -> dict``: per-point fields of ±1 output channels. Default None.
    output_channel : priors.output_channels.OutputChannel or None
        The law of the labels the model was built with. Default None: Gaussian labels only
        (:func:`replica.models.build` refuses other channels for it).
    project : callable or None
        ``project(x) -> x``: the packed point put back into the model's domain (entries bounded by the
        rules, e.g. the fronts of :class:`~replica.models.deep_fronts.DeepFrontModel`), applied to the
        iterates of the matrix-free Newton corrector and of the chord corrector. Default None (no bound).
    lower_bounds : callable or None
        ``lower_bounds(x) -> (indices, lower)``: the entries of the packed vector ``x`` bounded below by the
        model's domain and their bounds, arrays of one shape (:class:`~replica.models.deep_fronts.DeepFrontModel`:
        every overlap, at 0). A curve along which such an entry falls linearly to its bound ends
        at the entry's root, located by the continuation (:func:`replica.continuation.stepper.bound_end`): beyond
        it the point is outside the domain, and its projection onto the domain is the host's. Default None.
    without_overlaps : callable or None
        ``without_overlaps(x, mask) -> x``: the packed point with the overlaps selected by ``mask`` (shape
        of ``state.overlaps``) set to 0, the start of the host branch at a bifurcation. Default None: the
        overlaps are the leading packed entries and are zeroed there.
    update_many : callable or None
        ``update_many(alpha, X) -> ndarray``: the map at every row of ``X`` (shape (B, p)) in one vectorized
        call, shape (B, p), equal row by row to ``update`` (NaN rows where it is not finite; a row that makes
        ``update`` raise, e.g. a NaN front, raises for the batch). Finite-difference
        Jacobians then take one call, and models with more than ``arnoldi_size`` unknowns (the size policy,
        :func:`replica.continuation.operators.dense_jacobians`) use dense Jacobians instead of Jacobian–vector
        products. Default None (one ``update`` per column).
    update_near : callable or None
        ``update_near(alpha, X) -> ndarray``: ``update_many`` for the points of a forward-difference Jacobian,
        ``X[0]`` and rows next to it, allowed to differ from ``update`` at each row by the square of its
        distance from ``X[0]`` (the order of the forward difference's own error): the first-order Jacobians
        of :func:`replica.continuation.jacobian` use it. Default None (``update_many``).
    near_map : callable or None
        ``near_map(alpha, x) -> f``: ``f(alpha', z)`` evaluates the map at points ``z`` (shape (p,) or (B, p))
        next to ``(alpha, x)``, allowed to differ from ``update`` by the square of the distance from
        ``(alpha, x)``, as ``update_near``, with the work that depends on ``x`` only done once: the
        Jacobian–vector products of the matrix-free correctors and of ARPACK use it. Default None
        (``update``).
    refined : callable or None
        ``refined() -> ReplicaModel``: the same model on a rule with twice the nodes (in ``s``, or on each side
        of every front; built once), on which :func:`replica.models._common.refined_solve` re-solves a point for
        the ``discretization_error`` of models with a quadrature rule (and
        :func:`~replica.models._common.converge_s_grid` refines the panels of ``s_grid="auto"``). Default None:
        the model has no rule to refine (``refined_solve`` refuses it; a model without one has no
        ``discretization_error`` either).
    interpolate_to : callable or None
        ``interpolate_to(fine, x) -> ndarray``: the packed point ``x`` (shape (p,)) carried onto the rule of
        ``fine = refined()`` (shape of ``fine``'s packed vector), the start of the solve of ``refined_solve``;
        needed with ``refined``. Default None (no rule to carry a point onto).
    with_parameter : callable or None
        ``with_parameter(name, value) -> ReplicaModel``: a copy of the model at another value of one of its
        constructor's parameters (``delta``, ``gamma`` or ``gammas``, …), the rest unchanged: the phase lines of
        :mod:`replica.continuation.codim2` follow a branch's fold or crossing in that parameter. Raises
        ValueError (one line) for a parameter the model does not have or a value outside its domain. Default
        None: the model gives no such copy (phase lines are refused; :class:`RecordedArguments` provides it).
    feature_transitions : callable or None
        ``feature_transitions(a0, x0, k0, a1, k1, solve_kw) -> list of dict or None``: every group of readouts
        learned along a curve between the grid points ``a0`` (packed point ``x0``, ``k0`` groups learned) and
        ``a1`` (``k1``), each at its own located α (:func:`replica.workflow.run.feature_transitions`; the
        one-hidden-layer profile solver with a discrete law). Default None.
    feature_point : callable or None
        ``feature_point(alpha, k, x_guess, solve_kw) -> dict or None``: per group ``s``, ``mass`` and mean
        ``overlap`` of the stationary point with the ``k`` strongest groups learned (two hidden layers: the
        branch through ``x_guess``, whose learned groups are fixed). Default None.
    feature_solution : callable or None
        ``feature_solution(alpha, k, x_guess, solve_kw) -> FixedPointResult or None``: that stationary point as
        a solution of :meth:`solve_from` (packed point, ``info["state"]``); with it the grid points of a branch
        are put in the family its located transitions count. Default None.
    """

    main_phase = None
    n_layers = 1
    grids: dict = {}
    dataset_axes = None
    s_grid_rule = None
    fixed_labels = False
    envelope_identity = False
    discretization_error = None
    relabel = None
    energetic = None
    channel_fields = None
    output_channel = None
    project = None
    lower_bounds = None
    without_overlaps = None
    update_many = None
    update_near = None
    near_map = None
    refined = None
    interpolate_to = None
    feature_transitions = None
    feature_point = None
    feature_solution = None
    with_parameter = None

    def moving_indices(self, x) -> np.ndarray:
        """Entries of the packed vector ``x`` (shape (p,)) that the map moves; default all, ``arange(p)``."""
        return np.arange(np.size(x))

    def universal_only_reason(self) -> str | None:
        """The reason why only the universal branch is Bayes-optimal (then no other branch is traced;
        docs/theory.md §5.4), or None (default)."""
        return None

    def universal_indices(self):
        """Indices of the packed vector free on the universal branch (its stability is that of the map
        restricted to them when :meth:`universal_only_reason` is set); default None (every index)."""
        return None

    def state_schema(self) -> tuple:
        """What a state's :meth:`ReplicaState.record` holds, as :class:`FieldSpec` entries (plots read it).

        Default ``()``: nothing declared (the overlaps panel of its sweeps stays empty, with a warning)."""
        return ()


def records_arguments(init):
    """Decorator of a model's ``__init__``: the arguments of the outermost call are kept on the instance, so
    that :meth:`RecordedArguments.with_parameter` can build the same model at another parameter value (a
    subclass whose ``__init__`` calls its parent's keeps its own call)."""
    signature = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        if "_init_arguments" not in vars(self):
            bound = signature.bind(self, *args, **kwargs)
            arguments = dict(bound.arguments)
            arguments.pop(next(iter(signature.parameters)))  # self
            self._init_arguments = (type(self), arguments)
        init(self, *args, **kwargs)

    return wrapper


class RecordedArguments:
    """Mixin of models whose ``__init__`` is decorated by :func:`records_arguments`: provides the hook
    ``with_parameter`` of :class:`ModelDefaults` (put it before :class:`ModelDefaults` in the bases)."""

    def with_parameter(self, name: str, value):
        """The same model with the constructor argument ``name`` set to ``value``; a scalar ``value`` for ``name``
        where the constructor takes the per-layer ``<name>s`` (``gamma`` → ``gammas``) sets every layer's.

        A parameter of the model's named output channel (``output_channel``, one of
        :data:`priors.output_channels.OUTPUT_CHANNELS`): ``delta`` (probit), ``threshold`` (probit, sign) or
        ``temperature`` (logistic; ``channel_threshold``, the command line's name, is ``threshold``) builds the
        channel again with that value (:func:`priors.output_channels.get_output_channel`), and the model with it.

        Raises
        ------
        ValueError
            The model's constructor has no parameter ``name`` and its channel none of that name (one line naming
            those it has), or the constructor or the channel refuses ``value``.
        """
        saved = vars(self).get("_init_arguments")
        if saved is None:
            raise ValueError(f"{type(self).__name__} was not built through a recorded constructor")
        cls, arguments = saved
        names = [n for n in inspect.signature(cls.__init__).parameters if n != "self"]
        channel = arguments.get("output_channel")
        if name == "channel_threshold":  # the command line's name of the channel's threshold
            name = "threshold"
        if channel is not None and name in _channel_parameters(channel):
            from priors.output_channels import get_output_channel

            params = {k: v for k, v in channel.parameters().items() if k != "name"}
            try:
                params[name] = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be a number, got {value!r}") from None
            if channel.name == "sign":
                params.pop("delta", None)  # noiseless: no Δ to give
            new = get_output_channel(channel.name, **params)
            changed = {"output_channel": new}
            if "delta" in names and arguments.get("delta") is not None:
                changed["delta"] = new.delta  # the model's Δ is the channel's (make_output_channel checks it)
            return cls(**{**arguments, **changed})
        if channel is not None and name == "delta" and not _channel_parameters(channel) and \
                channel.name not in _named_channels():
            # a channel given by its likelihood: the model's Δ is not read (the channel is the law of the labels)
            raise ValueError(f"the {channel.name} channel of {cls.__name__} has no parameter 'delta' to vary (a channel "
                             "given by its likelihood: build it again with the new value)")
        if name not in names and f"{name}s" in names and np.ndim(value) == 0:
            # one value for a per-layer parameter (``gamma`` of a model with ``gammas``): every layer's
            name, value = f"{name}s", [value] * len(arguments[f"{name}s"])
        if name not in names:
            extra = sorted(_channel_parameters(channel)) if channel is not None else []
            raise ValueError(f"{cls.__name__} has no parameter {name!r} to vary (it has: {', '.join(names)}"
                             + (f"; its {channel.name} channel: {', '.join(extra)}" if extra else "") + ")")
        return cls(**{**arguments, name: value})


def _named_channels() -> tuple:
    from priors.output_channels import OUTPUT_CHANNELS

    return tuple(OUTPUT_CHANNELS)


def _channel_parameters(channel) -> set:
    """The parameters of a named output channel that :meth:`RecordedArguments.with_parameter` can vary (those of
    :data:`priors.output_channels.CHANNEL_OPTIONS`): by the channel's class, not its name (a channel given by its
    likelihood may carry a built-in's name); none for a channel given by its likelihood or a Gaussian one."""
    from priors.output_channels import CHANNEL_OPTIONS, LogisticChannel, ProbitChannel

    key = getattr(channel, "name", None)
    if (type(channel) is ProbitChannel and key in ("probit", "sign")) or (type(channel) is LogisticChannel
                                                                          and key == "logistic"):
        return set(CHANNEL_OPTIONS[key])
    return set()


#: names of the optional hooks (:class:`ModelDefaults`)
HOOKS = tuple(name for name in vars(ModelDefaults) if not name.startswith("_"))


def hook(model, name: str):
    """The model's optional member ``name``, or its default from :class:`ModelDefaults`.

    Parameters
    ----------
    model : ReplicaModel
    name : str
        One of :data:`HOOKS`.

    Returns
    -------
    object
        The model's attribute when it has one, else the default (a method of :class:`ModelDefaults` is
        returned bound to ``model``).

    Raises
    ------
    AttributeError
        ``name`` is not a declared hook.
    """
    if name not in HOOKS:
        raise AttributeError(f"{name!r} is not an optional hook of a replica model; declared: {', '.join(HOOKS)}")
    try:
        return getattr(model, name)
    except AttributeError:
        default = vars(ModelDefaults)[name]
        return types.MethodType(default, model) if isinstance(default, types.FunctionType) else default


# --------------------------------------------------------------------------- what a state records
@dataclass(frozen=True)
class FieldSpec:
    """One per-point field of a state's record, as plots and files describe it.

    Attributes
    ----------
    name : str
        Key in :meth:`ReplicaState.record` (and dataset name in a sweep file).
    label : str
        Matplotlib label (TeX between ``$``), e.g. ``"$Q$"``.
    role : str
        ``"overlap"`` (drawn in the overlaps panel, against α, averaged over its axes), ``"layer"`` (one
        row of the per-layer maps and one line of the overlaps panel of networks with several layers,
        ``label`` its tick label, in the schema's order), ``"conjugate"``, ``"error"``, or ``"other"``.
    axes : tuple of str
        Names of the axes after α (dimension scales: ``readout_values``, ``s_values``, …); averages over
        ``readout_values`` and ``s_values`` use ``readout_weights`` and ``s_weights``, other axes are plain means.
    known_mean : bool
        The field includes the known part ``γ (E v)²`` of ``S = Wᵀ diag(v) W/√(kd)``, subtracted when drawn.
    """

    name: str
    label: str = ""
    role: str = "other"
    axes: tuple = ()
    known_mean: bool = False


def default_schema() -> tuple:
    """The plotted fields of the one-hidden-layer record (:meth:`replica.models.shallow.ShallowModel.state_schema`),
    also assumed for sweep files written before files stored their schema: ``overlap_W`` (Q(v), over the
    readout values) and ``R2`` (R₂, with the known mean). Deep and two-layer records are drawn per layer
    (:mod:`replica.workflow.plotting`)."""
    return (FieldSpec("overlap_W", "$Q$", "overlap", ("readout_values",)),
            FieldSpec("R2", "$R_2-(R_d-1)$", "overlap", (), known_mean=True))


def state_schema(model) -> tuple:
    """The :class:`FieldSpec` entries of ``model`` (its ``state_schema()`` hook, :class:`ModelDefaults`)."""
    return tuple(hook(model, "state_schema")())


def schema_to_json(schema) -> str:
    """A schema as JSON (the root attribute ``state_schema`` of a sweep file)."""
    import json

    return json.dumps([{"name": f.name, "label": f.label, "role": f.role, "axes": list(f.axes),
                        "known_mean": bool(f.known_mean)} for f in schema])


def schema_from_json(text) -> tuple:
    """Inverse of :func:`schema_to_json`.

    Raises
    ------
    ValueError
        Not a JSON list of field descriptions.
    """
    import json

    try:
        return tuple(FieldSpec(str(d["name"]), str(d.get("label", "")), str(d.get("role", "other")),
                               tuple(d.get("axes", ())), bool(d.get("known_mean", False))) for d in json.loads(text))
    except (TypeError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"state_schema: not a list of field descriptions ({exc})") from None
