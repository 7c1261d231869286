"""Command line ``replica-sgd``: online SGD on the teacher–student network, and its figures.

Same model options as ``replica-sweep``/``replica-experiment`` (``--gamma --activation
--prior --readout --delta``) plus the SGD options.  Writes one HDF5 file (layout in
:func:`replica.workflow.sgd_results.write_sgd`).  Conventions (:mod:`replica.simulations.sgd`): time
``t = n/(k d)`` with ``n`` the samples seen (``α = n/d² = γ t``), learning rate ``η`` per
sample with the update ``W += η Σ_b e_b (v ⊙ σ'(h_b)) x_bᵀ/√(dk)``.

Examples::

    replica-sgd --activation elu --dim 64 --gamma 0.5 --seed 0 -o sgd.h5
    replica-sgd --plot sgd.h5                 # sgd_histograms.png, sgd_error.png
    replica-sgd --plot sgd.h5 --reference --theory-timeout 900 --overwrite
    replica-sgd --activation relu --dim 128 --time 3000 -o relu.h5 --figures
    replica-sgd --activation elu --dim 64 --time 100 -o elu.h5 --closure   # + closure/ group
    replica-sgd --closure elu.h5              # only the closure prediction for that file
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from replica.workflow.cli import warn_readout_rescaling
from replica.workflow.config import LIMITS, CommandParser, UsageError, check_memory, number_type

__all__ = ["main", "build_parser"]

logger = logging.getLogger(__name__)

PROG = "replica-sgd"


def build_parser() -> argparse.ArgumentParser:
    """Argument parser of ``replica-sgd``."""
    from .. import __version__
    from .model_options import add_simulation_name_options

    p = CommandParser(
        prog=PROG,
        description=(
            "Online SGD (fresh samples every step) of the student W of λ(x;W) = vᵀσ(Wx/√d)/√k "
            "(readout v fixed and known) on the squared loss, with labels from a teacher of the "
            "same architecture plus √Δ noise.  Records the test error, the learned linear "
            "(Wᵀv) and quadratic (Wᵀdiag(v)W) parts, histograms of the k×k teacher–student "
            "cosine matrix, the fraction of specialized student neurons and the signs of their "
            "matches.  Time t = n/(k d) (n samples seen; α = n/d² = (k/d) t).  Writes HDF5."),
        epilog="The default run (d = 64, γ = 0.5, t = 1000) takes a couple of minutes on 2 CPU "
               "cores.  --plot FILE.h5 draws the figures of an existing file.",
    )
    m = p.add_argument_group("model (as replica-sweep)")
    m.add_argument("--gamma", type=number_type("--gamma", minimum=LIMITS["gamma"][0], maximum=LIMITS["gamma"][1],
                                               upper_strict=False), default=0.5,
                   help="width ratio γ = k/d in [1e-4, 1e4]; k = round(γ d) (default 0.5)")
    add_simulation_name_options(m, activation="activation σ (--backend numba: the names with a compiled form)",
                                prior="weight prior of the teacher and of the random initial student")
    m.add_argument("--delta", type=number_type("--delta", minimum=0, maximum=LIMITS["delta"][1], upper_strict=False),
                   default=0.1, help="label-noise variance 0 <= Δ <= 1e4 (default 0.1)")

    s = p.add_argument_group("SGD")
    s.add_argument("--dim", type=number_type("--dim", minimum=0, strict=True, integer=True), default=64,
                   help="input dimension d (default 64)")
    s.add_argument("--lr", type=number_type("--lr", minimum=0, strict=True), default=0.5,
                   help="learning rate η > 0 per sample: W += η Σ_b e_b (v⊙σ'(h_b)) x_bᵀ/√(dk) "
                        "(gradients of the batch summed); O(1) values are d-independent in t "
                        "(default 0.5)")
    s.add_argument("--batch", type=number_type("--batch", minimum=0, strict=True, integer=True), default=4,
                   help="fresh samples per step B; keep B ≪ d for online dynamics (default 4)")
    s.add_argument("--steps", type=number_type("--steps", minimum=0, strict=True, integer=True), default=None,
                   help="number of SGD steps (overrides --time; n = steps·B samples)")
    s.add_argument("--time", type=number_type("--time", minimum=0, strict=True), default=1000.0,
                   help="final time t = n/(k d) when --steps is not given (default 1000)")
    s.add_argument("--record-every", default="log:20",
                   help="recording times: 'log:N' = N log-spaced records per decade of steps, or a "
                        "time interval Δt in units of t (default log:20)")
    s.add_argument("--seed", type=number_type("--seed", minimum=0, integer=True), default=0,
                   help="random seed of teacher, initialization, data and test set (default 0)")
    s.add_argument("--n-test", type=number_type("--n-test", minimum=0, strict=True, integer=True), default=4000,
                   help="fixed noiseless test inputs for the test error (default 4000)")
    s.add_argument("--init-scale", type=number_type("--init-scale", minimum=0, strict=True), default=1.0,
                   help="initial rows = scale × a draw from the prior (|w_i|² ≈ scale² d; default 1)")
    s.add_argument("--bins", type=number_type("--bins", minimum=2, maximum=100_000, upper_strict=False, integer=True),
                   default=100,
                   help="histogram bins on [-1, 1] (default 100)")
    s.add_argument("--threshold", type=number_type("--threshold", minimum=0, strict=True, maximum=1), default=0.7,
                   help="|cosine with the best-matched teacher neuron| above which a student neuron "
                        "counts as specialized; the Gaussian bulk's best matches reach ≈0.5 at "
                        "d ≈ 64 once the quadratic part is learned (default 0.7)")
    s.add_argument("--backend", choices=("numba", "numpy"), default="numba",
                   help="compiled inner loop or plain NumPy reference (default numba)")

    o = p.add_argument_group("output and control")
    o.add_argument("-o", "--output", default=None,
                   help="HDF5 output (default sgd.h5); with --plot: prefix of the figure files, or a "
                        "name like fig.pdf whose suffix sets the format (fig_histograms.pdf, fig_error.pdf; "
                        "default: the input file without .h5, PNG)")
    o.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    o.add_argument("--figures", action="store_true", help="also draw the figures after the run")
    o.add_argument("--plot", metavar="FILE.h5", default=None,
                   help="do not run: draw the figures of FILE.h5 (PREFIX_histograms.png, "
                        "PREFIX_error.png)")
    o.add_argument("--reference", action="store_true",
                   help="compute the replica reference levels (universal branch and Bayes-optimal "
                        "mmse at α = n/d²) and store them in the HDF5 file (after the run, or in "
                        "FILE.h5 with --plot; stored levels are replaced only with --overwrite); slow the "
                        "first time for a new (activation, γ, Δ)")
    o.add_argument("--closure", nargs="?", const=True, default=None, metavar="FILE.h5",
                   help="add the Gaussian-closure prediction (docs/dynamics.md: test error, "
                        "linear/quadratic overlaps, bulk width vs t) to the run's HDF5 file as "
                        "group closure/ (after the run, or in FILE.h5 of --plot); with FILE.h5 and "
                        "no run: only compute it for that file's parameters (readout ones only); the file "
                        "is rewritten atomically, and an existing closure/ is replaced only with --overwrite")
    o.add_argument("--no-theory", action="store_true",
                   help="figures without the replica reference levels (they need the solver)")
    o.add_argument("--theory-timeout", type=number_type("--theory-timeout", minimum=0, strict=True), default=300.0,
                   help="seconds allowed to the replica solver for the reference levels; "
                        "without them after that (default 300)")
    o.add_argument("--dpi", type=number_type("--dpi", minimum=LIMITS["dpi"][0], maximum=LIMITS["dpi"][1],
                                             upper_strict=False, integer=True), default=150,
                   help="figure resolution, 10 to 2400 (default 150)")
    o.add_argument("--config", metavar="FILE.toml", default=None,
                   help="read options from a TOML file with the same keys as the long options (e.g. "
                        "dim = 64, activation = 'elu'; a table [sgd] for this command only); the command "
                        "line overrides it")
    chatter = o.add_mutually_exclusive_group()
    chatter.add_argument("--quiet", action="store_true", help="no progress bar, warnings only")
    chatter.add_argument("--verbose", action="store_true", help="debug messages (not with --quiet)")
    o.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return p


#: first word of an SGDConfig message → the option it is about
_CONFIG_OPTIONS = {
    "dim": "--dim", "gamma": "--gamma", "delta": "--delta", "lr": "--lr", "batch": "--batch", "steps": "--steps",
    "time": "--time", "n_test": "--n-test", "init_scale": "--init-scale", "bins": "--bins",
    "threshold": "--threshold", "seed": "--seed", "record": "--record-every",
}


def _check_sgd_memory(config, args):
    """Refuse runs whose arrays (test set, weights, overlap matrices, records) exceed the memory."""
    import math

    d, k = config.dim, config.width
    text = str(config.record).strip().lower()
    if text.startswith("log:"):
        records = int(text[4:]) * (math.log10(config.num_steps) + 1) + 2
    else:
        records = config.num_steps * config.batch / (k * d) / float(text) + 2
    nbytes = 8.0 * (config.n_test * (d + 2 * k) + 4 * k * d + 3 * k * k + records * (2 * k + config.bins + 10))
    check_memory(nbytes, "--dim/--gamma/--n-test/--record-every",
                 f"d = {d}, k = {k}, {config.n_test} test inputs and about {records:.3g} records")


def _parse_drop(text):
    text = text.strip()
    if not text:
        return ()
    try:
        return tuple(int(t) for t in text.split(","))
    except ValueError:
        raise ValueError(f"--drop-hermite must be a comma list of integers, got {text!r}") from None


def _store_reference(path, args, *, locked=False):
    from replica.workflow.safe_write import SafeOutput

    from .sgd_results import store_reference_levels

    if not locked:  # the file is rewritten: same lock as any writer of it
        with SafeOutput(path, overwrite=True, checkpoints=False, option="--plot"):
            from replica.workflow.safe_write import open_h5

            with open_h5(path, option="--plot") as h5:
                stored = "reference_alpha" in h5
            if stored and not args.overwrite:  # adding levels is allowed; replacing them needs --overwrite
                raise UsageError(f"--reference: {path} already holds reference levels; pass --overwrite to "
                                 "recompute and replace them")
            return _store_reference(path, args, locked=True)
    logger.info("computing the replica reference levels (limit %g s)", args.theory_timeout)
    levels = store_reference_levels(path, timeout=args.theory_timeout)
    for message in levels["errors"][:3]:
        logger.warning("reference levels: %s", message)


def _store_closure(path, *, locked=False, option="--closure", overwrite=False):
    """Add the group ``closure/`` to an SGD file (rewritten atomically under its lock). Adding it to a
    finished file is allowed without ``--overwrite``; replacing an existing ``closure/`` needs it."""
    from replica.workflow.safe_write import SafeOutput

    from ..simulations.closure import closure_for_run
    from .sgd_results import read_sgd, write_closure

    path = Path(path)
    if not locked:  # the file is rewritten: same lock as any writer of it
        if not path.is_file():
            raise ValueError(f"{option}: no such file: {path}")
        with SafeOutput(path, overwrite=True, checkpoints=False, option=option):
            return _store_closure(path, locked=True, option=option, overwrite=overwrite)
    import time

    import numpy as np

    data = read_sgd(path, option=option)
    if isinstance(data.get("closure"), dict) and not overwrite:
        raise UsageError(f"{option}: {path} already has a closure/ group; pass --overwrite to replace it")
    times = np.asarray(data["time"], dtype=float)
    # the integration up to the run's last time is one call without progress of its own (about a minute for
    # the default t = 1000): say so before, and how long it took after
    logger.info("computing the Gaussian-closure prediction (docs/dynamics.md) at %d times up to t = %.4g; this "
                "can take a minute", times.size, float(np.max(times)) if times.size else 0.0)
    t0 = time.perf_counter()
    result = closure_for_run(data["parameters"], times=data["time"])
    if not result.success:
        logger.warning("closure: integration stopped early: %s", result.message)
    write_closure(path, result)
    logger.info("closure prediction (%s regime) stored in %s/closure in %.1f s", result.parameters["regime"], path,
                time.perf_counter() - t0)


#: figure formats accepted as the suffix of ``-o`` with ``--plot``
FIGURE_SUFFIXES = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def _figure_prefix(prefix, path):
    """``-o`` of ``--plot``: a prefix (``sgd`` → ``sgd_histograms.png``), or a figure name whose
    suffix sets the format (``sgd.pdf`` → ``sgd_histograms.pdf``); default: the input without .h5."""
    if not prefix:
        return Path(path).with_suffix(""), ".png"
    prefix = Path(prefix)
    if prefix.suffix.lower() in FIGURE_SUFFIXES:
        return prefix.with_suffix(""), prefix.suffix.lower()
    if prefix.suffix:
        raise UsageError(f"-o/--output: unknown figure format {prefix.suffix!r} in {prefix} (give a prefix without "
                         f"a suffix, or a name ending in {', '.join(FIGURE_SUFFIXES)})")
    return prefix, ".png"


def _plot(path, prefix, args, *, store_reference=True):
    from replica.workflow.safe_write import check_output_directory

    from .sgd_results import read_sgd
    from .sgd_plots import make_figures

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--plot: no such file: {path}")
    data = read_sgd(path, option="--plot")  # one-line error for a locked, damaged or non-SGD file
    prefix, suffix = _figure_prefix(prefix, path)
    check_output_directory(Path(f"{prefix}_error{suffix}"), option="--output")
    if args.reference and store_reference:
        _store_reference(path, args)
        data = read_sgd(path, option="--plot")
    if args.closure is True and store_reference:
        _store_closure(path, option="--plot", overwrite=args.overwrite)
        data = read_sgd(path, option="--plot")
    outputs = make_figures(data, prefix, theory=not args.no_theory, dpi=args.dpi,
                           theory_timeout=args.theory_timeout, overwrite=args.overwrite, suffix=suffix)
    for out in outputs:
        logger.info("wrote %s", out)


def main(argv=None) -> int:
    """Entry point of ``replica-sgd``; returns the exit status (the shared runner of the commands,
    :func:`replica.workflow.cli.run_command`: one-line errors, SIGTERM handled like Ctrl-C)."""
    from .cli import run_command

    return run_command(PROG, build_parser, _run, argv, input_errors=(ValueError, FileExistsError, FloatingPointError))


def _run(args) -> int:
    try:
        return _run_command(args)
    except KeyboardInterrupt as exc:  # no checkpoint: the old file stays, one line says so
        target = args.output or "sgd.h5"
        if not getattr(exc, "note", None):  # (set where the run was already written)
            exc.note = f"nothing saved; {target} {'unchanged' if Path(target).exists() else 'not written'}"
        raise


def _run_command(args) -> int:
    if args.plot is not None:
        if isinstance(args.closure, str):
            raise UsageError("--closure FILE.h5 cannot be combined with --plot; use --plot FILE.h5 --closure")
        _plot(args.plot, args.output, args)
        return 0
    if isinstance(args.closure, str):               # prediction only, for an existing file
        _store_closure(args.closure, overwrite=args.overwrite)
        return 0
    if args.closure is True and args.readout.strip().lower() != "ones":
        raise UsageError("--closure is implemented for --readout ones only")
    from replica.workflow.safe_write import SafeOutput

    from ..simulations.sgd import SGDConfig, run_sgd
    from .sgd_results import specialization_time, write_sgd

    output = Path(args.output or "sgd.h5")
    try:
        config = SGDConfig(activation=args.activation, gamma=args.gamma, delta=args.delta,
                           prior=args.prior, readout=args.readout, dim=args.dim, lr=args.lr,
                           batch=args.batch, steps=args.steps, time=args.time,
                           record=args.record_every, seed=args.seed, n_test=args.n_test,
                           init_scale=args.init_scale, bins=args.bins, threshold=args.threshold,
                           drop_hermite=_parse_drop(args.drop_hermite),
                           unit_variance=args.unit_variance)
    except ValueError as exc:
        message = str(exc).splitlines()[0]
        option = _CONFIG_OPTIONS.get(message.split(" ", 1)[0])
        raise UsageError(f"{option}: {message}" if option and not message.startswith("--") else message) from None
    _check_sgd_memory(config, args)
    # validate every model option before the output and before spending time
    from ..simulations.sgd import activation_functions, check_backend
    from .model_options import check_simulation_names

    check_simulation_names(prior=config.prior, readout=config.readout)
    try:
        activation_functions(config.activation, drop_hermite=config.drop_hermite,
                             unit_variance=config.unit_variance)
        check_backend(config.activation, args.backend)
    except ValueError as exc:
        raise UsageError(f"--activation: {str(exc).splitlines()[0]}") from None
    warn_readout_rescaling(config.readout)
    with SafeOutput(output, overwrite=args.overwrite, checkpoints=False):
        logger.info("d=%d k=%d lr=%g batch=%d steps=%d (t_max=%.4g, n=%d samples)", config.dim,
                    config.width, config.lr, config.batch, config.num_steps,
                    config.num_steps * config.batch / (config.width * config.dim),
                    config.num_steps * config.batch)
        result = run_sgd(config, progress=not args.quiet, backend=args.backend)
        from replica.workflow.config import resolved_configuration

        from .safe_write import signals_deferred

        written = False
        try:
            with signals_deferred():  # an interrupt during the write is raised after it, with the note below
                write_sgd(result, output, overwrite=True, configuration=resolved_configuration(args))
                written = True
            t_spec = specialization_time(result.time, result.specialized_fraction)
            logger.info("wrote %s in %.1f s: final test error %.4g, specialized fraction %.2f, "
                        "t_spec %.4g (first time the specialized fraction stays >= 0.5)", output, result.wall_time,
                        result.test_error[-1], result.specialized_fraction[-1], t_spec)
            if args.reference:
                _store_reference(output, args, locked=True)
            if args.closure is True:
                _store_closure(output, locked=True)
        except KeyboardInterrupt as exc:
            if not written:
                raise
            extra = " and ".join(w for w, on in (("--reference", args.reference), ("--closure", args.closure is True))
                                 if on)
            exc.note = (f"{output} written with the finished run" + (f"; {extra} not added (add with "
                        f"replica-sgd --plot {output} {extra})" if extra else ""))
            raise
    if args.figures:
        _plot(output, output.with_suffix(""), args, store_reference=False)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
