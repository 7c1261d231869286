"""Command line ``replica-experiment``: finite-size sampling and training runs.

Same model options as ``replica-sweep`` (``--layers --gamma --activation --prior --readout
--delta --alpha``) plus the simulation options.  Writes one HDF5 file (layout in
:mod:`replica.workflow.experiment_io`).

Example (the default sizes finish in minutes on 2 CPU cores)::

    replica-experiment --activation relu --gamma 0.5 --delta 0.1 --readout ones \\
        --prior gaussian --alpha 1,6 --dim 40 --teachers 2 --sampler hmc \\
        --init informed,uninformed --seed 0 -o exp.h5

Larger runs on a GPU (install ``jax[cuda12]``; ``--device auto`` picks the GPU), e.g. the
published protocol at d = 150 (docs/theory.md §7)::

    replica-experiment --dim 150 --teachers 9 --alpha 0.5:8:16 --steps 20000 \\
        --kept 200 --sampler hmc --init informed,uninformed -o hmc_d150.h5

(see ``scripts/experiments/README.md`` for timings and settings).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from replica.workflow.cli import add_output_channel_options, warn_readout_rescaling
from replica.workflow.config import LIMITS, CommandParser, UsageError, check_memory, number_type

__all__ = ["main", "build_parser"]

logger = logging.getLogger(__name__)

PROG = "replica-experiment"


def build_parser() -> argparse.ArgumentParser:
    """Argument parser of ``replica-experiment``."""
    from .. import __version__
    from ..simulations.experiment import DEFAULT_STEPS, INITS
    from ..simulations.samplers import SAMPLERS
    from .model_options import add_simulation_name_options

    p = CommandParser(
        prog=PROG,
        description=(
            "Finite-size numerics for the Bayes-optimal teacher–student network of docs/theory.md §1: "
            "sample the posterior with HMC/NUTS (Gaussian prior) or Metropolis (Rademacher prior) "
            "from the teacher (informed) or from a random start (uninformed), or train with Adam; "
            "measure half the Gibbs error on fresh test inputs, matched overlaps, R₂, overlap "
            "histograms and a Nishimori check, averaged over teachers; write HDF5."),
        epilog="Defaults finish in minutes on 2 CPU cores at d ≈ 40; see scripts/experiments/README.md "
               "for GPU settings.",
    )
    model = p.add_argument_group("model (as replica-sweep)")
    model.add_argument("--layers", type=number_type("--layers", minimum=0, strict=True, maximum=100, upper_strict=False,
                                                    integer=True), default=1,
                       help="number of hidden layers 1 <= L <= 100 (default 1)")
    model.add_argument("--gamma", default="0.5",
                       help="width ratios γ_ℓ = k_ℓ/d, a comma list with one value per layer "
                            "(one value is used for every layer; default 0.5)")
    add_simulation_name_options(model, activation="activation of every layer", prior="weight prior of every layer")
    model.add_argument("--delta", type=number_type("--delta", minimum=0, maximum=LIMITS["delta"][1], upper_strict=False),
                       default=None, help="label-noise variance Δ <= 1e4 of the gaussian and probit channels (> 0 for "
                                          "the samplers; default 0.1)")
    add_output_channel_options(
        model, note="; the labels are drawn with the channel and HMC/NUTS sample the posterior with its "
                    "log-likelihood (other samplers: gaussian only); ±1 channels also store the classification "
                    "errors of the Bayes and Gibbs classifiers on --n-test fresh labels and a Nishimori check. "
                    "sign is refused (exit 2): its step likelihood has no gradient for HMC; use probit with a "
                    "small --delta")
    model.add_argument("--alpha", default="1,6",
                       help="sample ratios α = n/d²: 'a,b,c' or inclusive 'start:stop:num' (default 1,6)")

    sim = p.add_argument_group("simulation")
    sim.add_argument("--dim", type=number_type("--dim", minimum=0, strict=True, integer=True), default=40,
                     help="input dimension d; widths k_ℓ = round(γ_ℓ d), n = round(α d²) (default 40)")
    sim.add_argument("--teachers", type=number_type("--teachers", minimum=0, strict=True, integer=True), default=2,
                     help="number of independent teachers averaged over (default 2)")
    sim.add_argument("--sampler", choices=SAMPLERS, default="hmc",
                     help="hmc/nuts (BlackJAX, Gaussian prior), metropolis (single flips, Rademacher "
                          "prior), adam (training on the squared loss), sgd (plain SGD, one sample per "
                          "update; --steps passes, 1 = online) or gamp-rie (message passing with "
                          "a rotationally invariant matrix denoiser, one hidden layer, reaches the "
                          "universal branch; docs/gamp_rie.md) (default hmc)")
    sim.add_argument("--init", default=None,
                     help="comma list of starts: informed (at the teacher), uninformed (random draw "
                          "from the prior; gamp-rie: the prior mean), partial:F (one hidden layer: the fraction F "
                          "of hidden units with the strongest teacher readouts at the teacher, the others random; "
                          "e.g. the theory's learned_mass) (default informed,uninformed; gamp-rie: uninformed)")
    sim.add_argument("--steps", type=number_type("--steps", minimum=0, strict=True, integer=True), default=None,
                     help="HMC/NUTS transitions, Metropolis sweeps, Adam updates, SGD passes over the "
                          "samples or GAMP-RIE iterations (at most) per run (default "
                          + ", ".join(f"{k} {v}" for k, v in DEFAULT_STEPS.items()) + ")")
    sim.add_argument("--warmup-fraction", type=number_type("--warmup-fraction", minimum=0, maximum=1),
                     default=0.5, help="fraction of steps for step-size adaptation/burn-in, not measured "
                                       "(default 0.5)")
    sim.add_argument("--kept", type=number_type("--kept", minimum=0, strict=True, integer=True), default=50,
                     help="posterior samples kept (evenly thinned) after warm-up; Adam, SGD: trace points "
                          "(default 50)")
    sim.add_argument("--n-test", type=number_type("--n-test", minimum=0, strict=True, integer=True), default=10_000,
                     help="fresh noiseless test inputs for the error (default 10000)")
    sim.add_argument("--seed", type=number_type("--seed", minimum=0, integer=True), default=0,
                     help="random seed (default 0)")
    sim.add_argument("--leapfrog-steps", type=number_type("--leapfrog-steps", minimum=0, strict=True, integer=True),
                     default=10, help="HMC leapfrog steps per transition (default 10)")
    sim.add_argument("--target-acceptance", type=number_type("--target-acceptance", minimum=0, strict=True,
                                                             maximum=1), default=0.8,
                     help="target acceptance rate in (0, 1) of the step-size adaptation (default 0.8)")
    sim.add_argument("--initial-step-size", type=number_type("--initial-step-size", minimum=0, strict=True),
                     default=0.05, help="initial HMC/NUTS step size (default 0.05)")
    sim.add_argument("--max-doublings", type=number_type("--max-doublings", minimum=0, strict=True, maximum=20,
                                                         upper_strict=False, integer=True),
                     default=8, help="NUTS: at most 2^N leapfrog steps per transition, N <= 20 (default 8)")
    sim.add_argument("--learning-rate", type=number_type("--learning-rate", minimum=0, strict=True), default=None,
                     help="learning rate of adam (default 0.01) and of sgd (per sample, default 0.1)")
    sim.add_argument("--batch-fraction", type=number_type("--batch-fraction", minimum=0, strict=True), default=0.25,
                     help="Adam minibatch size as a fraction of n (default 0.25)")
    sim.add_argument("--x64", action="store_true", help="double precision (default float32)")
    sim.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                     help="JAX platform: auto uses a GPU when JAX sees one, else the CPU (default auto)")

    out = p.add_argument_group("output")
    out.add_argument("-o", "--output", default="experiment.h5", help="output HDF5 file (default experiment.h5)")
    out.add_argument("--overwrite", action="store_true",
                     help="replace an existing output file (kept until the new one is complete)")
    out.add_argument("--resume", action="store_true",
                     help="continue an interrupted run (same options): finished chains are read from the "
                          "checkpoint OUTPUT-stem.checkpoint.h5 written after every chain")
    out.add_argument("--config", metavar="FILE.toml", default=None,
                     help="read options from a TOML file with the same keys as the long options (e.g. "
                          "dim = 40, init = 'informed,uninformed'; a table [experiment] for this command "
                          "only); the command line overrides it")
    chatter = out.add_mutually_exclusive_group()
    chatter.add_argument("--quiet", action="store_true", help="no progress bar, warnings only")
    chatter.add_argument("--verbose", action="store_true", help="debug messages (not with --quiet)")
    out.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


def _parse_alpha(text: str):
    from replica.workflow.cli import parse_alpha_grid

    return tuple(float(a) for a in parse_alpha_grid(text))


def _parse_list(name, text, convert):
    items = [s.strip() for s in text.split(",") if s.strip()]
    try:
        return tuple(convert(s) for s in items)
    except ValueError:
        raise UsageError(f"{name}: expected a comma list, got {text!r}") from None


#: first word of an ExperimentConfig.validate message → the option it is about
_FIELD_OPTIONS = {
    "layers": "--layers", "gamma": "--gamma", "alpha": "--alpha", "dim": "--dim", "teachers": "--teachers",
    "prior": "--prior", "sampler": "--sampler", "hmc": "--sampler", "nuts": "--sampler", "metropolis": "--sampler",
    "init": "--init", "delta": "--delta", "posterior": "--delta", "steps": "--steps",
    "warmup_fraction": "--warmup-fraction", "num_kept": "--kept", "num_integration_steps": "--leapfrog-steps",
    "target_acceptance": "--target-acceptance", "learning_rate": "--learning-rate", "gamp-rie": "--sampler",
    "initial_step_size": "--initial-step-size", "channel": "--channel",
}


def config_from_args(args):
    """Build and validate an :class:`~replica.simulations.experiment.ExperimentConfig` from parsed arguments.

    Raises
    ------
    UsageError
        Any inconsistent option (one-line message).
    """
    from ..simulations.experiment import DEFAULT_STEPS, INITS, ExperimentConfig
    from ..simulations.samplers import TRAINERS

    gamma = _parse_list("--gamma", args.gamma, float)
    lo, hi = LIMITS["gamma"]
    if any(not lo <= g <= hi for g in gamma):
        raise UsageError(f"--gamma: width ratios must be in [{lo:g}, {hi:g}], got {args.gamma!r}")
    if len(gamma) == 1:
        gamma = gamma * args.layers
    if len(gamma) != args.layers:
        expected = "1 value" if args.layers == 1 else f"1 value or {args.layers} (one per layer)"
        raise UsageError(f"--gamma: expected {expected} for --layers {args.layers}, got {len(gamma)}")
    if args.init is None:  # GAMP-RIE has only the uninformed start (the prior mean)
        init = ("uninformed",) if args.sampler == "gamp-rie" else INITS
    else:
        init = _parse_list("--init", args.init, str)
    from ..simulations.experiment import partial_fraction

    for name in init:
        try:
            partial = partial_fraction(name)
        except ValueError as exc:
            raise UsageError(f"--init: {exc}") from None
        if name not in INITS and partial is None:
            raise UsageError(f"--init: unknown start {name!r} (choose from {', '.join(INITS)} or partial:F)")
        if partial is not None and args.layers != 1:
            raise UsageError(f"--init: the partially informed start {name} is for one hidden layer "
                             f"(got --layers {args.layers})")
    if len(set(init)) != len(init) or not init:
        raise UsageError(f"--init: give each start once, got {args.init!r}")
    from replica.workflow.model_options import check_simulation_names, output_channel_options

    check_simulation_names(prior=args.prior)
    channel = output_channel_options(args.channel, args.delta, args.temperature, args.channel_threshold)
    try:
        config = ExperimentConfig(
            layers=args.layers, gamma=gamma, activation=args.activation,
            drop_hermite=_parse_list("--drop-hermite", args.drop_hermite, int),
            unit_variance=args.unit_variance, prior=args.prior, readout=args.readout, delta=channel["delta"],
            channel=channel.get("channel", "gaussian"), temperature=channel.get("temperature", 1.0),
            channel_threshold=channel.get("channel_threshold", 0.0),
            alpha=_parse_alpha(args.alpha), dim=args.dim, teachers=args.teachers, sampler=args.sampler,
            init=init, steps=args.steps if args.steps is not None else DEFAULT_STEPS[args.sampler],
            warmup_fraction=args.warmup_fraction, num_kept=args.kept, n_test=args.n_test, seed=args.seed,
            num_integration_steps=args.leapfrog_steps, target_acceptance=args.target_acceptance,
            initial_step_size=args.initial_step_size, max_num_doublings=args.max_doublings,
            learning_rate=args.learning_rate if args.learning_rate is not None else TRAINERS.get(args.sampler, 0.01),
            batch_fraction=args.batch_fraction, x64=args.x64)
    except ValueError as exc:
        message = str(exc)
        option = _FIELD_OPTIONS.get(message.split(" ", 1)[0])
        raise UsageError(f"{option}: {message}" if option else message) from None
    _check_model_names(config)
    _check_experiment_memory(config)
    warn_readout_rescaling(config.readout)
    return config


def _check_experiment_memory(config) -> None:
    """Refuse before allocating when the data of the largest α (n = α d² inputs of dimension d,
    and the test set) or the kept samples do not fit in memory."""
    d = config.dim
    n = max(config.architecture.num_samples(a) for a in config.alpha)
    itemsize = 8 if config.x64 else 4
    params = sum(w * p for w, p in zip(config.architecture.widths, (d,) + tuple(config.architecture.widths)))
    nbytes = itemsize * ((n + config.n_test) * (d + 2) + (config.num_kept + 4) * params)
    check_memory(nbytes, "--alpha/--dim", f"n = α d² = {n:.3g} samples of dimension d = {d} "
                 f"(plus {config.n_test} test inputs and {config.num_kept} kept samples)")


def _check_model_names(config) -> None:
    """Fail early (before any sampling) on an unknown activation or readout law."""
    from ..simulations.activations import get_jax_activation
    from .model_options import check_simulation_names

    check_simulation_names(readout=config.readout)
    try:
        get_jax_activation(config.activation, drop_hermite=config.drop_hermite,
                           unit_variance=config.unit_variance)
    except (ValueError, KeyError) as exc:
        raise UsageError(f"--activation: {exc}") from None


def main(argv=None) -> int:
    """Entry point of ``replica-experiment``; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default ``sys.argv[1:]``).
    """
    from .cli import run_command

    return run_command(PROG, build_parser, _run, argv, missing_extra="experiments")


def _run(args) -> int:
    from replica.workflow.safe_write import SafeOutput

    output = Path(args.output)
    config = config_from_args(args)  # every option is checked before the output and before JAX starts
    import jax

    if args.device != "auto":
        jax.config.update("jax_platforms", {"cpu": "cpu", "gpu": "cuda"}[args.device])
    try:
        devices = jax.devices()
    except Exception as exc:  # noqa: BLE001 - JAX raises RuntimeError or AssertionError here
        reason = (str(exc).splitlines() or [""])[0] or "no backend for this platform"
        raise UsageError(f"--device {args.device}: JAX found no such device ({reason}); "
                         "for a GPU install jax[cuda12]") from None
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    from ..simulations.experiment import run_experiment
    from .experiment_io import read_experiment_checkpoint, write_experiment, write_experiment_checkpoint

    with SafeOutput(output, overwrite=args.overwrite, resume=args.resume) as target:
        from replica.workflow.io import read_root_attrs

        if target.finished and target.same_finished_run(
                lambda: read_root_attrs(output, kinds=("experiment",), option="--resume").get("parameters", {}),
                json.loads(config.to_json())):
            logger.info("%s is already complete; nothing to resume", output)
            return 0
        chains = {}
        if target.resume_from is not None:
            chains = read_experiment_checkpoint(target.resume_from, config)
            logger.info("resuming %s: %d chains already done", target.resume_from, len(chains))
        done = dict(chains)

        def keep(key, record):  # every finished chain goes to the checkpoint at once
            done[key] = record
            write_experiment_checkpoint(target.checkpoint, config, done)

        logger.info("JAX devices: %s", ", ".join(str(d) for d in devices))
        logger.info("d=%d widths=%s n=%s sampler=%s steps=%d inits=%s teachers=%d", config.dim,
                    config.architecture.widths, [config.architecture.num_samples(a) for a in config.alpha],
                    config.sampler, config.steps, ",".join(config.init), config.teachers)
        begin = time.perf_counter()
        from replica.workflow.cli import unwrapped_interrupts

        try:
            with unwrapped_interrupts():
                results = run_experiment(config, progress=not args.quiet, chains=chains, on_chain=keep)
        except KeyboardInterrupt as exc:
            total = len(config.alpha) * config.teachers * len(config.init)
            exc.note = target.interrupted_note(f"{len(done)} of {total} chains" if done else None)
            raise
        from replica.workflow.config import resolved_configuration

        target.finish(lambda: write_experiment(output, config, results, overwrite=True,
                                               configuration=resolved_configuration(args)))
    logger.info("wrote %s in %.1f s", output, time.perf_counter() - begin)
    for init, result in results.items():
        for alpha, mean, sem in zip(result.alpha, result.datasets["mmse_mean"], result.datasets["mmse_sem"]):
            if config.teachers > 1:
                logger.info("%s alpha=%g mmse=%.5f ± %.5f", init, alpha, mean, sem)
            else:
                logger.info("%s alpha=%g mmse=%.5f (one teacher: no error bar)", init, alpha, mean)
        if "classification_error_mean" in result.datasets:
            for alpha, mean, sem in zip(result.alpha, result.datasets["classification_error_mean"],
                                        result.datasets["classification_error_sem"]):
                logger.info("%s alpha=%g classification error=%.4f ± %.4f", init, alpha, mean, sem)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
