"""Resolved command-line options → a model of :mod:`replica.models`.

The commands (:mod:`replica.workflow.cli`), the phase-diagram workers
(:mod:`replica.workflow.phase_diagram`) and the figures build their models here: the options are
checked (one-line :class:`~replica.workflow.config.UsageError` naming the option), the
activations, weight prior and readout law are looked up by name, and the architecture registry
(:mod:`replica.models`) chooses and builds the solver.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from .config import UsageError

__all__ = ["build_model", "check_readout_grid", "output_channel_options", "s_grid_type", "split_activations",
           "prior_help", "readout_help", "activation_help", "add_simulation_name_options", "check_simulation_names"]

#: default label-noise variance Δ of ``--delta`` (the noiseless ``--channel sign`` has Δ = 0)
DEFAULT_DELTA = 0.1


def output_channel_options(channel="gaussian", delta=None, temperature=None, threshold=None) -> dict:
    """Check ``--channel`` with the options that parametrize it; returns the entries of the resolved
    ``parameters`` (``delta``, and ``channel``, ``temperature``, ``channel_threshold`` for non-Gaussian
    channels, so that Gaussian runs keep the parameters of files written before channels existed).

    ``--delta`` is the noise variance of ``gaussian`` and ``probit`` (default 0.1); ``sign`` is noiseless
    (``Δ = 0``); ``logistic`` has its ``--temperature`` instead (default 1); ``--channel-threshold`` θ applies to
    ``probit`` and ``sign`` (default 0). The pre-output λ that the channel reads is the teacher's *centred*
    pre-output (its known mean removed; docs/theory.md §10).

    Raises
    ------
    UsageError
        Unknown channel, or an option that the channel does not use.
    """
    from priors.output_channels import CHANNEL_OPTIONS, OUTPUT_CHANNELS

    name = str(channel).strip().lower()
    if name not in OUTPUT_CHANNELS:
        raise UsageError(f"--channel: unknown output channel {channel!r}; choose from {', '.join(OUTPUT_CHANNELS)}")
    takes = CHANNEL_OPTIONS[name]
    if temperature is not None and "temperature" not in takes:
        raise UsageError(f"--temperature: only for --channel logistic (got --channel {name})")
    if threshold is not None and "threshold" not in takes:
        raise UsageError(f"--channel-threshold: only for --channel probit or sign (got --channel {name})")
    if name == "sign":
        if delta not in (None, 0, 0.0):
            raise UsageError(f"--delta: --channel sign is noiseless (Δ = 0), got --delta {delta}; "
                             "use --channel probit for noise before the sign")
        delta = 0.0
    elif name == "logistic":
        if delta is not None:
            raise UsageError("--delta: --channel logistic has no noise variance; its noise is --temperature T")
        delta = 0.0
    out = {"delta": DEFAULT_DELTA if delta is None else delta}
    if name != "gaussian":
        out["channel"] = name
    if "temperature" in takes:
        out["temperature"] = 1.0 if temperature is None else float(temperature)
    if "threshold" in takes:
        out["channel_threshold"] = 0.0 if threshold is None else float(threshold)
    return out


def s_grid_type(text):
    """argparse type of ``--s-grid``: ``adaptive``, ``N`` (Gauss–Hermite nodes), ``panels:P`` or ``auto``; returns
    an int or the string."""
    from ..models.two_layer import MAX_GAUSS_HERMITE_S_GRID

    s = str(text).strip()
    if s in ("auto", "adaptive"):
        return s
    if s.startswith("panels:"):
        p = s[len("panels:"):]
        if not (p.isdigit() and 1 <= int(p) <= 1024):
            raise argparse.ArgumentTypeError(f"panels:P needs an integer P in [1, 1024], got {text!r}")
        return f"panels:{int(p)}"
    try:
        n = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--s-grid must be 'adaptive', an integer N (Gauss–Hermite nodes), "
                                         f"'panels:P' or 'auto', got {text!r}") from None
    if not 1 <= n <= MAX_GAUSS_HERMITE_S_GRID:
        raise argparse.ArgumentTypeError(f"--s-grid must be in [1, {MAX_GAUSS_HERMITE_S_GRID}] (L >= 3: "
                                         f"[1, {MAX_GAUSS_HERMITE_S_GRID // 2}]; Gauss–Hermite weights underflow "
                                         f"beyond; L = 2: use 'panels:P' for finer grids), got {text!r}")
    return n


# --------------------------------------------------------------------------- help texts from the registries
def prior_help(subject="weight prior P_W"):
    """Help text of ``--prior``, generated from :data:`priors.WEIGHT_PRIORS` (names and summaries)."""
    from priors.weight_priors import describe_weight_priors

    return f"{subject}: {describe_weight_priors()} (unit variance; default gaussian)"


def readout_help():
    """Help text of ``--readout``, generated from :data:`priors.READOUT_LAWS`."""
    from priors.readout_laws import describe_readout_laws

    return f"readout law P_v (E v² = 1): {describe_readout_laws()} (default ones)"


def activation_help(prefix="activation σ"):
    """Help text of ``--activation``, generated from :data:`replica.activations.ACTIVATIONS`."""
    from ..activations import describe_activations

    return f"{prefix}: {describe_activations()}"


def add_simulation_name_options(group, *, activation, prior) -> None:
    """Add ``--activation --drop-hermite --unit-variance --prior --readout`` of the simulation commands
    (``replica-experiment``, ``replica-sgd``), with choices and help texts from the registries.

    Parameters
    ----------
    group : argparse argument group
    activation, prior : str
        What the activation and the prior are in this command (first words of their help).
    """
    from priors.weight_priors import weight_prior_names

    group.add_argument("--activation", default="relu", help=activation_help(activation) + " (default relu)")
    group.add_argument("--drop-hermite", default="",
                       help="comma list of Hermite degrees removed from the activation, e.g. '1' "
                            "(docs/theory.md §6.1; default none)")
    group.add_argument("--unit-variance", action="store_true",
                       help="rescale the activation to E σ(z)² = 1 after dropping components")
    group.add_argument("--prior", choices=weight_prior_names(), default="gaussian", help=prior_help(prior))
    group.add_argument("--readout", default="ones", help=readout_help())


def check_simulation_names(*, prior=None, readout=None) -> None:
    """Refuse, before any work, a weight prior or readout law that a finite-size simulation cannot draw.

    Parameters
    ----------
    prior : str, optional
        Name of a registered weight prior (it must define ``sample``).
    readout : str, optional
        Readout-law specification (:func:`priors.get_readout_law`).

    Raises
    ------
    UsageError
        ``--prior: …`` or ``--readout: …``, one line.
    """
    from ..simulations.teacher_student import sample_readout, weight_prior

    try:
        if prior is not None:
            weight_prior(prior)
    except ValueError as exc:
        raise UsageError(f"--prior: {str(exc).splitlines()[0]}") from None
    try:
        if readout is not None:
            sample_readout(readout, 1, np.random.default_rng(0))
    except ValueError as exc:
        raise UsageError(f"--readout: {str(exc).splitlines()[0]}") from None


def check_readout_grid(readout, grid) -> None:
    """Refuse ``--readout-grid`` with a readout law it does not apply to (only the continuous laws
    ``gaussian`` and ``uniform`` are discretized; a discrete law would ignore it silently)."""
    from priors.continuous_laws import CONTINUOUS_LAWS

    if grid is not None and str(readout).strip().lower() not in CONTINUOUS_LAWS:
        raise UsageError(f"--readout-grid: applies only to the continuous readout laws ("
                         f"{', '.join(sorted(CONTINUOUS_LAWS))}), not to --readout {readout}")


def split_activations(text) -> list:
    """Split ``--activation`` into one specification per layer.

    Commas separate layers, except inside a Hermite specification, whose ``degree=value``
    items continue it: ``"tanh2,erf"`` → ``["tanh2", "erf"]``,
    ``"hermite:1=1,3=0.5,erf"`` → ``["hermite:1=1,3=0.5", "erf"]``.

    Raises
    ------
    UsageError
        An empty item.
    """
    import re

    parts = []
    for piece in str(text).split(","):
        piece = piece.strip()
        if parts and parts[-1].startswith("hermite:") and re.match(r"^\d+\s*=", piece):
            parts[-1] += "," + piece
        else:
            parts.append(piece)
    if any(not p for p in parts):
        raise UsageError(f"--activation: empty activation name in {text!r}")
    return parts


def _activation(name, drop, unit_variance):
    from ..activations import get_activation

    try:
        act = get_activation(name, drop_hermite=drop, unit_variance=unit_variance)
    except ValueError as exc:
        msg = str(exc).splitlines()[0]
        if "drop_hermite" in msg:
            raise UsageError(f"--drop-hermite: {msg}") from None
        if unit_variance and "normalised" in msg:
            raise UsageError(f"--unit-variance: {msg}") from None
        raise UsageError(f"--activation: {msg}") from None
    with np.errstate(all="ignore"):
        try:
            values = {"μ₀": act.mu0, "μ₁": act.mu1, "μ₂": act.mu2, "E σ²": act.nu, "g(1)": act.g1}
        except (ValueError, FloatingPointError, OverflowError, ZeroDivisionError) as exc:
            raise UsageError(f"--activation: {name!r} cannot be evaluated ({exc})") from None
    for sym, val in values.items():
        val = float(val)
        if math.isnan(val):
            raise UsageError(f"--activation: {name!r} has a NaN Hermite coefficient or kernel ({sym} = nan)")
        if not math.isfinite(val):
            raise UsageError(f"--activation: {name!r} has infinite variance ({sym} = {val})")
    return act


def build_model(options: dict):
    """Build the model described by resolved options (one value per option): :func:`resolve_model` without
    the architecture.

    Parameters
    ----------
    options : dict
        ``layers``, ``gamma`` (list, one per layer), ``activation`` (one specification, or one per
        layer separated by commas, see :func:`split_activations`), ``drop_hermite`` (list),
        ``unit_variance``, ``prior``, ``readout``, ``readout_grid`` (int or None), ``delta``;
        optionally ``channel``, ``temperature``, ``channel_threshold`` (:func:`output_channel_options`),
        ``s_grid`` (layers >= 2 with a linear part) and ``architecture`` (a name of
        :func:`replica.models.architectures`; default: the automatic choice of
        :func:`replica.models.select`).

    Returns
    -------
    ReplicaModel
        ShallowModel (layers = 1), TwoLayerModel (layers = 2 and ``μ₁ ≠ 0``: docs/theory.md §6.2),
    DeepLinearModel (layers >= 3 and ``μ₁ ≠ 0``: docs/deep_linear.md) or DeepModel (otherwise,
    docs/theory.md §6.1)

    Raises
    ------
    UsageError
        Invalid option, with the option's name (``--activation: unknown activation …``).
    """
    return resolve_model(options)[0]


def resolve_model(options: dict, *, build_it: bool = True) -> tuple:
    """The model described by resolved options and the registry entry that builds it.

    Parameters
    ----------
    options : dict
        As for :func:`build_model`.
    build_it : bool, keyword-only
        False: only check the options and choose the architecture (the model is then None).

    Returns
    -------
    model : ReplicaModel or None
    architecture : replica.models.Architecture

    Raises
    ------
    UsageError
        Invalid option, with the option's name (as :func:`build_model`).
    """
    from priors import get_readout_law, get_weight_prior

    layers = int(options["layers"])
    gammas = [float(g) for g in options["gamma"]]
    delta = float(options["delta"])
    if not (math.isfinite(delta) and delta >= 0):
        raise UsageError(f"--delta: must be a finite number >= 0, got {delta}")
    if any(not (math.isfinite(g) and g > 0) for g in gammas):
        raise UsageError(f"--gamma: width ratios must be finite numbers > 0, got {gammas}")
    names = split_activations(options["activation"])
    if len(names) not in (1, layers):
        raise UsageError(f"--activation: give one activation, or one per layer ({layers} for --layers {layers}), "
                         f"got {len(names)}: {options['activation']!r}")
    acts = [_activation(name, tuple(options.get("drop_hermite") or ()), bool(options.get("unit_variance")))
            for name in names]
    if len(acts) > 1 and not (layers >= 2 and any(abs(a.mu1) > 1e-10 for a in acts)):
        if len(set(names)) > 1:
            raise UsageError("--activation: one activation per layer needs activations with a linear part "
                             "(--layers >= 2: docs/theory.md §6.2, docs/deep_linear.md); the deep solver of "
                             "docs/theory.md §6.1 takes one activation")
    if options.get("s_grid") is not None and layers < 2:
        raise UsageError(f"--s-grid: only used with --layers >= 2 (got --layers {layers})")
    try:
        prior = get_weight_prior(options["prior"])
    except ValueError as exc:
        raise UsageError(f"--prior: {str(exc).splitlines()[0]}") from None
    grid = options.get("readout_grid")
    check_readout_grid(options["readout"], grid)
    try:
        readout = get_readout_law(options["readout"], grid_size=grid)
    except ValueError as exc:
        msg = str(exc).splitlines()[0]
        raise UsageError(f"--readout-grid: {msg}" if msg.startswith("grid_size") else f"--readout: {msg}") from None
    from priors.continuous_laws import PowerLawDensity

    from ..models._common import front_rules_solve

    if layers >= 2 and isinstance(getattr(readout, "law", None), PowerLawDensity) \
            and (grid is not None or not front_rules_solve(acts)):
        # the front-aligned rules (odd activations with a linear part) put a front in |v| on it (docs/deep_linear.md
        # §11); a grid of a heavy-tailed law on the two-layer profile solver has no result in 5 min (measured)
        raise UsageError(f"--readout: the continuum law {options['readout']} with --layers {layers} needs odd "
                         f"activations with a linear part and no --readout-grid (its readouts then get a front in "
                         f"|v|); or give the number of atoms (powerlaw:beta=B,k=K)")
    from ..models import ModelRequest, build, choose

    from priors.output_channels import get_output_channel

    try:
        channel = get_output_channel(options.get("channel", "gaussian"), delta=delta,
                                     temperature=options.get("temperature"),
                                     threshold=options.get("channel_threshold"))
    except ValueError as exc:
        raise UsageError(f"--channel: {str(exc).splitlines()[0]}") from None
    request = ModelRequest(layers, tuple(acts), tuple(gammas), delta, prior, readout, dict(options),
                           output_channel=None if channel.name == "gaussian" else channel)
    try:
        arch = choose(request, options.get("architecture"))
        return (build(request, arch.name) if build_it else None), arch
    except ValueError as exc:
        msg = str(exc).splitlines()[0]
        for key, opt in (("activation", "--activation"), ("prior", "--prior"), ("gamma", "--gamma"),
                         ("delta", "--delta"), ("readout", "--readout"), ("s_grid", "--s-grid"),
                         ("channel", "--channel"),
                         ("architecture", "--architecture")):
            if msg.startswith(key + "s "):  # "gammas must be …": the whole message reads better
                raise UsageError(f"{opt}: {msg}") from None
            if msg.startswith(key):
                raise UsageError(f"{opt}: {msg[len(key):].lstrip(' :')}") from None
        raise UsageError(f"--layers {layers}: {msg}") from None
