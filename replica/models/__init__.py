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
Continuation (:func:`replica.branches.sweep`), storage, plots, phase diagrams and the command
lines never name an architecture: the command line turns its options into a model with
:func:`build`, which asks the registry. An :class:`Architecture` says when it applies
(``accepts(layers, activations)``) and how to build the model from the resolved options;
:func:`build` takes the named one, or the first that accepts in decreasing ``priority``.

The four built-in architectures are described here without importing their modules, so that
choosing one costs nothing and only the chosen module (and its dependencies) is loaded.
A new architecture is one new module in this folder that calls :func:`register` at import
time: :func:`architectures` imports every module of the folder that is not built in the first
time the registry is consulted (docs/extending.md, "An architecture"). Code outside the
package may call :func:`register` too.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Callable

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
        :func:`replica.workflow.model_options.build_model` selects it by name.
    build : callable
        ``build(request: ModelRequest) -> ReplicaModel``. Raise ``ValueError`` whose message
        starts with an option's name (``"gamma: …"``, ``"s_grid: …"``) for bad input.
    accepts : callable
        ``accepts(layers: int, activations: tuple) -> bool``: whether :func:`build` chooses
        this architecture automatically for these options.
    priority : int
        Automatic choice order (larger first); fallbacks use a low priority.
    summary : str
        One line shown in listings and errors.
    prepare : callable or None
        ``prepare(model, options, alphas, *, solve_kw, branches) -> ReplicaModel``: the model a sweep of the
        sorted ``alphas`` runs on (:func:`replica.workflow.run.run_sweep`), e.g. a grid refined at those α
        (two hidden layers with ``s_grid="auto"``); None: the built model itself.
    """

    name: str
    build: Callable
    accepts: Callable
    priority: int = 0
    summary: str = ""
    prepare: Callable | None = None


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
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _BUILTIN_MODULES and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


def architectures() -> dict:
    """Every registered architecture, ``{name: Architecture}``, in automatic-choice order."""
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
        if arch.accepts(int(layers), tuple(activations)):
            return arch
    raise ValueError(f"no architecture accepts {layers} hidden layer(s) with these activations")


def choose(request: ModelRequest, architecture: str | None = None) -> Architecture:
    """The named architecture, or (``None``, ``""`` or ``"auto"``) the one :func:`select` chooses for ``request``.

    Raises
    ------
    ValueError
        Unknown name, or no architecture accepts the request.
    """
    if architecture in (None, "", "auto"):
        return select(request.layers, request.activations)
    return get_architecture(architecture)


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
    model = arch.build(request)
    wanted = request.output_channel
    if wanted is not None and wanted.name != "gaussian" and getattr(model, "output_channel", None) != wanted:
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
    :func:`~replica.models.two_layer.converge_s_grid`)."""
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
    return TwoLayerModel(acts, list(r.gammas), r.delta, weight_prior=r.weight_prior, readout_law=r.readout_law,
                         output_channel=r.output_channel, **_s_grid_keywords(r.options.get("s_grid")))


def _prepare_two_layer(model, options, alphas, *, solve_kw=None, branches="all"):
    """``s_grid="auto"``: the panel rule in s refined at the sweep's α (:func:`~replica.models.two_layer.converge_s_grid`);
    the universal branch is exact on every rule, so a sweep of it alone keeps the built model."""
    import logging

    if options.get("s_grid") != "auto":
        return model
    if branches == "universal":
        logging.getLogger(__name__).info("--s-grid auto: the universal branch is exact on every s rule; "
                                         "grid not refined")
        return model
    from .two_layer import converge_s_grid

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


register(Architecture("shallow", _build_shallow, lambda layers, acts: layers == 1, priority=30,
                      summary="one hidden layer (docs/theory.md §5)"))
register(Architecture("two_layer", _build_two_layer, lambda layers, acts: layers == 2 and _linear_part(acts),
                      priority=20, summary="two hidden layers with linear parts (docs/theory.md §6.2)",
                      prepare=_prepare_two_layer))
register(Architecture("deep_linear", _build_deep_linear,
                      lambda layers, acts: layers >= 3 and _linear_part(acts[:1]), priority=20,
                      summary="L >= 3 hidden layers with linear parts (docs/deep_linear.md)"))
register(Architecture("deep", _build_deep, lambda layers, acts: layers >= 2, priority=0,
                      summary="L hidden layers without Hermite degrees <= 2 (docs/theory.md §6.1)"))
