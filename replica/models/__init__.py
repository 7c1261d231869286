"""The architectures: one module per network, each implementing :class:`replica.interface.ReplicaModel`.

=================  ==========================================================================
``shallow``        one hidden layer (docs/theory.md §5): :class:`~replica.models.shallow.ShallowModel`
``deep``           L hidden layers without Hermite degrees ≤ 2 (docs/theory.md §6.1):
                   :class:`~replica.models.deep.DeepModel`
``two_layer``      two hidden layers with linear parts (docs/theory.md §6.2):
                   :class:`~replica.models.two_layer.TwoLayerModel`
``deep_linear``    L ≥ 3 hidden layers with linear parts (docs/deep_linear.md):
                   :class:`~replica.models.deep_linear.DeepLinearModel`
=================  ==========================================================================

Registry
--------
Continuation (:func:`replica.continuation.sweep`), storage, plots, phase diagrams and the command
lines never name an architecture: the command line turns its options into a model with
:func:`build`, which asks the registry. An :class:`Architecture` says when it applies
(``accepts(layers, activations)``) and how to build the model from the resolved options;
:func:`build` takes the named one, or the first that accepts in decreasing ``priority``.

The four built-in architectures are described here without importing their modules, so that
choosing one costs nothing and only the chosen module (and its dependencies) is loaded.
An architecture may also be a *lazy spec*: ``build`` (and ``prepare``) given as a string
``"package.module:function"``, imported only when the architecture builds a model. A new module
in this folder is found that way: the first time the registry is consulted, every module of the
folder that is not built in is registered under its own name as the spec
``"replica.models.<name>:build"`` (with its optional ``prepare``), without being imported; it is
chosen by name (``replica-sweep --architecture <name>``, ``options["architecture"]``), and imported
only then (docs/extending.md, "An architecture"). An architecture that takes part in the
automatic choice gives ``accepts``: code outside the package calls :func:`register` with it.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

from ..interface import hook

__all__ = ["Architecture", "ModelRequest", "register", "architectures", "get_architecture", "select", "choose",
           "build"]


@dataclass(frozen=True)
class ModelRequest:
    """Resolved model options, as an architecture's ``build`` receives them.

    Attributes
    ----------
    layers : int
        Number of hidden layers L ≥ 1.
    activations : tuple of replica.activations.Activation
        One activation, or one per layer (first layer first).
    gammas : tuple of float
        Width ratios, one per layer.
    delta : float
        Label noise Δ ≥ 0.
    weight_prior : priors.WeightPrior
    readout_law : priors.ReadoutLaw
    options : dict
        Every resolved option (``s_grid`` and architecture-specific ones).
    output_channel : priors.output_channels.OutputChannel or None
        Law of the labels (None: Gaussian noise of variance ``delta``); an architecture that builds its
        model without one supports Gaussian labels only (:func:`build` refuses other channels for it).
    """

    layers: int
    activations: tuple
    gammas: tuple
    delta: float
    weight_prior: object
    readout_law: object
    options: dict = field(default_factory=dict)
    output_channel: object = None


@dataclass(frozen=True)
class Architecture:
    """One architecture of the registry.

    Attributes
    ----------
    name : str
        Registry key (the module's name for the built-ins); ``options["architecture"]`` of
        :func:`replica.workflow.model_options.build_model` (``--architecture``) selects it by name.
    build : callable or str
        ``build(request: ModelRequest) -> ReplicaModel``, or the lazy spec ``"package.module:function"``
        of that function (imported at the first build). Raise ``ValueError`` whose message
        starts with an option's name (``"gamma: …"``, ``"s_grid: …"``) for bad input.
    accepts : callable or None
        ``accepts(layers: int, activations: tuple) -> bool``: whether :func:`build` chooses
        this architecture automatically for these options; None: only chosen by name.
    priority : int
        Automatic choice order (larger first); fallbacks use a low priority.
    summary : str
        One line shown in listings and errors.
    prepare : callable, str or None
        ``prepare(model, options, alphas, *, solve_kw, branches) -> ReplicaModel``: the model a sweep of the
        sorted ``alphas`` runs on (:func:`replica.workflow.run.run_sweep`), e.g. a grid refined at those α
        (two hidden layers with ``s_grid="auto"``), or its lazy spec; None: the built model itself.
    solves : callable or None
        ``solves(layers, activations) -> bool``: whether the architecture's equations cover these options
        when it is chosen by name (:func:`choose` refuses it otherwise, instead of building another
        network than the one requested); None: no check.
    """

    name: str
    build: Callable | str
    accepts: Callable | None = None
    priority: int = 0
    summary: str = ""
    prepare: Callable | str | None = None
    solves: Callable | None = None

    def builder(self) -> Callable:
        """The ``build`` function (a lazy spec is imported here).

        Raises
        ------
        ValueError
            ``architecture: …`` when the spec's module or function cannot be imported.
        """
        return _resolve(self.build, self.name)

    def preparer(self) -> Callable | None:
        """The ``prepare`` function or None (a lazy spec is imported here; a module found in the folder
        without a ``prepare`` function has none)."""
        if isinstance(self.prepare, str):
            module, _, attr = self.prepare.partition(":")
            return getattr(importlib.import_module(module), attr, None)
        return self.prepare


def _resolve(spec, name) -> Callable:
    """The callable of ``spec`` (a callable, or ``"package.module:function"``, imported)."""
    if not isinstance(spec, str):
        return spec
    module, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), attr or "build")
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"architecture: {name!r} cannot be loaded from {spec!r} ({exc})") from None


_REGISTRY: dict[str, Architecture] = {}
_DISCOVERED = False
_BUILTIN_MODULES = ("shallow", "deep", "two_layer", "deep_linear", "deep_fronts")


def register(architecture: Architecture, *, replace: bool = False) -> Architecture:
    """Add an architecture to the registry and return it.

    Raises
    ------
    ValueError
        The name is taken (unless ``replace``).
    """
    if not isinstance(architecture, Architecture):
        raise TypeError(f"register: expected an Architecture, got {type(architecture).__name__}")
    if architecture.name in _REGISTRY and not replace:
        raise ValueError(f"architecture {architecture.name!r} is already registered")
    _REGISTRY[architecture.name] = architecture
    return architecture


def unregister(name: str) -> None:
    """Remove an architecture (tests register toy models and remove them afterwards)."""
    _REGISTRY.pop(name, None)


def _discover() -> None:
    """Register every extra module of this folder as a lazy spec under its own name (nothing is imported)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _BUILTIN_MODULES and not info.name.startswith("_") and info.name not in _REGISTRY:
            module = f"{__name__}.{info.name}"
            register(Architecture(info.name, f"{module}:build", None, priority=-100, prepare=f"{module}:prepare",
                                  summary=f"module {module} (chosen by name)"))


def architectures() -> dict:
    """Every registered architecture, ``{name: Architecture}``, in automatic-choice order (no module of an
    architecture is imported)."""
    _discover()
    return dict(sorted(_REGISTRY.items(), key=lambda kv: -kv[1].priority))


def get_architecture(name: str) -> Architecture:
    """The architecture called ``name``.

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones).
    """
    known = architectures()
    if name not in known:
        raise ValueError(f"architecture: unknown architecture {name!r}; valid names: {', '.join(known)}")
    return known[name]


def select(layers: int, activations) -> Architecture:
    """The architecture chosen automatically for ``layers`` hidden layers and these activations.

    Raises
    ------
    ValueError
        No registered architecture accepts them.
    """
    for arch in architectures().values():
        if arch.accepts is not None and arch.accepts(int(layers), tuple(activations)):
            return arch
    raise ValueError(f"no architecture accepts {layers} hidden layer(s) with these activations")


def choose(request: ModelRequest, architecture: str | None = None) -> Architecture:
    """The named architecture, or (``None``, ``""`` or ``"auto"``) the one :func:`select` chooses for ``request``.

    Raises
    ------
    ValueError
        Unknown name, a named architecture whose ``solves`` rule refuses the request (number of layers,
        linear parts), or no architecture accepts the request.
    """
    if architecture in (None, "", "auto"):
        return select(request.layers, request.activations)
    arch = get_architecture(architecture)
    if arch.solves is not None and not arch.solves(request.layers, request.activations):
        raise ValueError(f"architecture: {arch.name} does not solve --layers {request.layers} with these activations "
                         f"({arch.summary or 'see its documentation'})")
    return arch


def build(request: ModelRequest, architecture: str | None = None):
    """Build the model of ``request`` with the named architecture, or the one :func:`select` chooses.

    Returns
    -------
    ReplicaModel

    Raises
    ------
    ValueError
        ``channel: …`` when the request has a non-Gaussian output channel and the architecture's model
        does not take it.
    """
    arch = choose(request, architecture)
    model = arch.builder()(request)
    wanted = request.output_channel
    if wanted is not None and wanted.name != "gaussian" and hook(model, "output_channel") != wanted:
        raise ValueError(f"channel: the {arch.name} architecture supports Gaussian labels only, got {wanted.name}")
    return model


# --------------------------------------------------------------------------- built-in architectures
def _linear_part(activations) -> bool:
    return any(abs(a.mu1) > 1e-10 for a in activations)


def _build_shallow(r: ModelRequest):
    from .shallow import ShallowModel

    return ShallowModel(r.activations[0], r.gammas[0], r.delta, weight_prior=r.weight_prior,
                        readout_law=r.readout_law, output_channel=r.output_channel)


def _s_grid_keywords(value) -> dict:
    """Keywords of :class:`~replica.models.two_layer.TwoLayerModel` for ``options["s_grid"]``: None or
    ``"adaptive"`` (the default: the profile solver, no grid in s), an int N (N Gauss–Hermite nodes),
    ``"panels:P"`` or ``"auto"`` (the panel rule, refined per sweep by
    :func:`~replica.models._common.converge_s_grid`)."""
    if value is None or value == "adaptive":
        return {}
    if value == "auto":
        return {"s_grid": None}
    if isinstance(value, str) and value.startswith("panels:"):
        return {"s_grid": None, "s_panels": int(value[len("panels:"):])}
    return {"s_grid": int(value)}


def _build_two_layer(r: ModelRequest):
    from .two_layer import TwoLayerModel

    acts = list(r.activations) if len(r.activations) == 2 else r.activations[0]
    from ._common import front_rules_solve, readout_front_law

    if r.options.get("s_grid") in (None, "adaptive") and front_rules_solve(r.activations) \
            and readout_front_law(r.readout_law):
        # the profile solver keeps two globals per readout value (a grid in v, whose readout groups specialize one
        # by one: a staircase of sheets); the front-aligned rules follow a front in |v| (docs/deep_linear.md §11)
        from .deep_fronts import DeepFrontModel

        return DeepFrontModel(acts, list(r.gammas), r.delta, weight_prior=r.weight_prior,
                              readout_law=r.readout_law, output_channel=r.output_channel)
    return TwoLayerModel(acts, list(r.gammas), r.delta, weight_prior=r.weight_prior, readout_law=r.readout_law,
                         output_channel=r.output_channel, **_s_grid_keywords(r.options.get("s_grid")))


def _prepare_two_layer(model, options, alphas, *, solve_kw=None, branches="all"):
    """``s_grid="auto"``: the panel rule in s refined at the sweep's α (:func:`~replica.models._common.converge_s_grid`);
    the universal branch is exact on every rule, so a sweep of it alone keeps the built model."""
    import logging

    if options.get("s_grid") != "auto":
        return model
    if branches == "universal":
        logging.getLogger(__name__).info("--s-grid auto: the universal branch is exact on every s rule; "
                                         "grid not refined")
        return model
    from ._common import converge_s_grid

    return converge_s_grid(model, alphas, solve_kw=solve_kw)[0]


#: largest s grid of L >= 3 models: the doubled grid of their discretization_error must exist
MAX_DEEP_LINEAR_S_GRID = 75


def _build_deep_linear(r: ModelRequest):
    from .deep_linear import DeepLinearModel

    s_grid = r.options.get("s_grid")
    acts = list(r.activations) if len(r.activations) == r.layers else r.activations[0]
    if s_grid is None or s_grid == "adaptive":  # the default: front-aligned rules, no fixed grid in s
        from .deep_fronts import DeepFrontModel

        return DeepFrontModel(acts, list(r.gammas), r.delta, weight_prior=r.weight_prior,
                              readout_law=r.readout_law, output_channel=r.output_channel)
    if isinstance(s_grid, str):
        raise ValueError(f"s_grid: {s_grid} is for --layers 2; give 'adaptive' (the default) or a number of nodes")
    if s_grid is not None and int(s_grid) > MAX_DEEP_LINEAR_S_GRID:
        raise ValueError(f"s_grid: at most {MAX_DEEP_LINEAR_S_GRID} nodes for --layers >= 3 (its error estimate "
                         f"solves on twice as many Gauss–Hermite nodes, whose weights underflow beyond 150), got {s_grid}")
    return DeepLinearModel(acts, list(r.gammas), r.delta, weight_prior=r.weight_prior,
                           readout_law=r.readout_law, s_grid=int(s_grid), output_channel=r.output_channel)


def _build_deep(r: ModelRequest):
    if r.options.get("s_grid") is not None:
        raise ValueError("s_grid: only used with a linear part kept (--layers >= 2, activation with μ₁ ≠ 0)")
    from .deep import DeepModel

    return DeepModel(r.activations[0], list(r.gammas), r.delta, weight_prior=r.weight_prior,
                     readout_law=r.readout_law, output_channel=r.output_channel)


def _one_layer(layers, acts):
    return layers == 1


def _two_layers_linear(layers, acts):
    return layers == 2 and _linear_part(acts)


def _deep_linear(layers, acts):
    return layers >= 3 and _linear_part(acts[:1])


register(Architecture("shallow", _build_shallow, _one_layer, priority=30,
                      summary="one hidden layer (docs/theory.md §5)", solves=_one_layer))
register(Architecture("two_layer", _build_two_layer, _two_layers_linear,
                      priority=20, summary="two hidden layers with linear parts (docs/theory.md §6.2)",
                      prepare=_prepare_two_layer, solves=_two_layers_linear))
register(Architecture("deep_linear", _build_deep_linear, _deep_linear, priority=20,
                      summary="L >= 3 hidden layers with linear parts (docs/deep_linear.md)", solves=_deep_linear))
register(Architecture("deep", _build_deep, lambda layers, acts: layers >= 2, priority=0,
                      summary="L hidden layers without Hermite degrees <= 2 (docs/theory.md §6.1)"))
