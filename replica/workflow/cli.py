"""Command line: ``replica-sweep`` (also ``python -m replica``), ``replica-plot`` and
``replica-phase-diagram``.

* ``replica-sweep`` sweeps the sample ratio α and writes every branch, the equilibrium and
  the transitions to one HDF5 file (layout in :mod:`replica.workflow.io`); the file is a valid
  checkpoint while the sweep runs, and ``--resume`` continues an interrupted sweep.
* ``replica-plot`` draws the figures of a sweep, phase-diagram or experiment file
  (:mod:`replica.workflow.plotting`).
* ``replica-phase-diagram`` computes a grid α × (Δ, γ or another numeric option) in
  parallel with ``dask.distributed`` (:mod:`replica.workflow.phase_diagram`).

Every command takes ``--config FILE.toml`` (:mod:`replica.workflow.config`), ``--quiet``, and
reports bad input as one line naming the option, with exit status 2. Logging is
configured here only.

The three commands share the option groups, the option parsers and one runner (:func:`run_command`:
configuration file, logging, SIGINT/SIGTERM, progress bars, one-line errors); they stay in
one module (about 830 lines) so that none of them imports another's module
(docs/architecture.md, "Module size").
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import logging
import math
import signal
import sys
import time
from pathlib import Path

import numpy as np

from .. import __version__
from ..engine import DEFAULT_DAMPING
from .config import (LIMITS, SHARED_OPTION_KEYS, CommandParser, UsageError, name_config_key, number_type,
                     parse_with_config, resolved_configuration)
from .model_options import (activation_help, build_model, check_readout_grid,  # noqa: F401 - API
                            output_channel_options, prior_help, readout_help, s_grid_type, split_activations)

__all__ = [
    "sweep_main",
    "plot_main",
    "phase_diagram_main",
    "run_command",
    "missing_extra_advice",
    "parse_alpha_grid",
    "parse_number_grid",
    "check_output_path",
    "warn_readout_rescaling",
    "add_output_channel_options",
    "build_sweep_parser",
    "build_plot_parser",
    "build_phase_diagram_parser",
    "build_model",
    "split_activations",
    "UsageError",
]

logger = logging.getLogger(__name__)

DEFAULT_OUTPUT = "replica_sweep.h5"
DEFAULT_PHASE_OUTPUT = "phase_diagram.h5"
#: one-line message of a MemoryError (every command)
OUT_OF_MEMORY = "out of memory; use smaller grids or sizes (nothing written, existing files unchanged)"


# --------------------------------------------------------------------------- parsing helpers
def parse_alpha_grid(text: str) -> np.ndarray:
    """Parse ``--alpha``: a comma list ``a,b,c`` or an inclusive range ``start:stop:num``.

    Raises
    ------
    UsageError
        Malformed numbers, non-positive or non-finite values, num < 1, repeated values.
    """
    return parse_number_grid(text, "--alpha", minimum=0.0, strict=True, maximum=LIMITS["alpha"][1],
                             meaning="α = n/d²")


def parse_number_grid(text: str, option: str, *, minimum=None, strict=False, integer=False,
                      meaning="", maximum=None) -> np.ndarray:
    """Parse a grid of numbers: a comma list ``a,b,c`` or an inclusive range ``start:stop:num``.

    Parameters
    ----------
    text : str
    option : str
        Option name used in messages (e.g. ``"--delta"``).
    minimum : float, optional, keyword-only
        Lower bound of the values.
    strict : bool, keyword-only
        Whether the bound is strict (``> minimum``) or not (``>= minimum``).
    integer : bool, keyword-only
        Values must be integers (returned as int64).
    meaning : str, keyword-only
        Symbol shown in the bound message.
    maximum : float, optional, keyword-only
        Upper bound (inclusive) of the values.

    Returns
    -------
    ndarray, shape (n,)

    Raises
    ------
    UsageError
        Malformed, non-finite, out-of-range or repeated values, ``num < 1``, or more than
        ``LIMITS["grid_points"]`` (1e5) values.
    """
    text = str(text).strip()
    most = LIMITS["grid_points"]
    try:
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop = float(parts[0]), float(parts[1])
            num = int(parts[2])
            if num < 1:
                raise UsageError(f"{option}: the number of points must be >= 1 in {text!r}")
            if num > most:
                raise UsageError(f"{option}: at most {most} points, got {num} in {text!r}")
            if num > 1 and stop <= start:
                raise UsageError(f"{option}: stop must be larger than start in {text!r}")
            grid = np.linspace(start, stop, num)
        else:
            if text.count(",") >= most:
                raise UsageError(f"{option}: at most {most} values, got {text.count(',') + 1}")
            grid = np.array([float(s) for s in text.split(",")])
    except UsageError:
        raise
    except ValueError:
        raise UsageError(f"{option}: expected 'a,b,c' or 'start:stop:num', got {text!r}") from None
    if grid.size == 0 or not np.all(np.isfinite(grid)):
        raise UsageError(f"{option}: values must be finite numbers, got {text!r}")
    if minimum is not None:
        bad = grid <= minimum if strict else grid < minimum
        if np.any(bad):
            rel = ">" if strict else ">="
            what = f" ({meaning})" if meaning else ""
            raise UsageError(f"{option}: values must be {rel} {minimum:g}{what}, got {text!r}")
    if maximum is not None and np.any(grid > maximum):
        what = f" ({meaning})" if meaning else ""
        raise UsageError(f"{option}: values must be <= {maximum:g}{what}, got {_short(text)}")
    if integer:
        if np.any(grid != np.round(grid)):
            raise UsageError(f"{option}: values must be integers, got {text!r}")
        grid = grid.astype(np.int64)
    if np.any(np.diff(np.sort(grid)) == 0):  # not np.unique: it imports numpy.ma (7 ms of start-up)
        raise UsageError(f"{option}: values must be distinct, got {text!r}")
    return grid


def _short(text, width=40):
    text = str(text)
    return repr(text) if len(text) <= width else repr(text[:width] + "…")


def _positive_float(name):
    return number_type(name, minimum=0.0, strict=True)


def _nonnegative_float(name):
    return number_type(name, minimum=0.0)


def parse_int_list(text: str, option: str) -> tuple:
    """Parse a comma list of non-negative integers (empty string → empty tuple)."""
    if not str(text).strip():
        return ()
    try:
        vals = tuple(int(s) for s in str(text).split(","))
    except ValueError:
        raise UsageError(f"{option}: expected a comma list of integers, got {text!r}") from None
    if any(v < 0 for v in vals):
        raise UsageError(f"{option}: degrees must be >= 0, got {text!r}")
    return vals


def parse_gammas(text: str, layers: int) -> list:
    """Parse ``--gamma``: one value, or one per layer."""
    try:
        vals = [float(s) for s in str(text).split(",")]
    except ValueError:
        raise UsageError(f"--gamma: expected a number or a comma list of numbers, got {text!r}") from None
    if any(not math.isfinite(v) or v <= 0 for v in vals):
        raise UsageError(f"--gamma: width ratios must be finite numbers > 0, got {text!r}")
    lo, hi = LIMITS["gamma"]
    if any(not lo <= v <= hi for v in vals):
        raise UsageError(f"--gamma: width ratios must be in [{lo:g}, {hi:g}], got {text!r}")
    if len(vals) == 1:
        vals = vals * layers
    if len(vals) != layers:
        expected = "1 value" if layers == 1 else f"1 value or {layers} (one per layer)"
        raise UsageError(f"--gamma: expected {expected} for --layers {layers}, got {len(vals)}")
    return vals


def check_output_path(path, overwrite: bool, *, resume: bool = False, option="--output"):
    """Refuse existing outputs (unless ``overwrite``/``resume``) and unwritable locations.

    For outputs that are not results under the write protocol (figures); result files go
    through :class:`replica.workflow.safe_write.SafeOutput`, which also locks them. Raises
    :class:`UsageError` with a one-line message naming ``option`` (empty name, a directory,
    an existing or interrupted file, a missing or unwritable directory)."""
    from .safe_write import _is_unfinished, check_output_directory

    path = Path(path)
    check_output_directory(path, option=option)
    if path.exists() and not (overwrite or resume):
        if path.suffix.lower() in (".h5", ".hdf5") and _is_unfinished(path):
            raise UsageError(f"{option}: {path} holds an interrupted run; pass --resume to continue it "
                             "or --overwrite to start again")
        raise UsageError(f"{option}: {path} exists; pass --overwrite to replace it")


def warn_readout_rescaling(spec, option="--readout") -> None:
    """Log one warning when a ``discrete:`` readout law is normalised (``E v² = 1``, weights sum to 1),
    so that ``--readout discrete:2=1`` does not become ``v = 1`` silently."""
    from priors import readout_rescaling

    note = readout_rescaling(spec)
    if note:
        logger.warning("%s %s: %s", option, spec, note)


# --------------------------------------------------------------------------- model options
def add_output_channel_options(g, *, note="; ±1 channels also store classification_error and sign_disagreement",
                               grids=False):
    """``--channel``, ``--temperature`` and ``--channel-threshold`` (the names and meanings of every command that
    takes an output channel; resolved by :func:`~replica.workflow.model_options.output_channel_options`).

    Parameters
    ----------
    g : argparse parser or argument group
    note : str, keyword-only
        Text appended to the help of ``--channel`` (what the command does with the channel).
    grids : bool, keyword-only
        ``--temperature`` and ``--channel-threshold`` kept as text, so that one of them can be the grid of a phase
        diagram (checked by :func:`phase_diagram_options`).
    """
    g.add_argument("--channel", default="gaussian",
                   help="output channel P_out(y | λ) of the labels, λ the teacher's centred pre-output (docs/theory.md "
                        "§10): gaussian (y = λ + √Δ ξ), probit (y = sign(λ − θ + √Δ ξ)), sign (noiseless probit, Δ = 0) "
                        f"or logistic (P(y = +1 | λ) = 1/(1 + e^(−λ/T))){note} (default gaussian)")
    grid = "; or a grid 'start:stop:num' / 'a,b,c' (the second axis)" if grids else ""
    g.add_argument("--temperature", type=None if grids else number_type("--temperature", minimum=0.0, strict=True,
                                                                        maximum=1e4, upper_strict=False),
                   default=None, help=f"--channel logistic only: temperature 0 < T <= 1e4 (default 1){grid}")
    g.add_argument("--channel-threshold", type=None if grids else number_type("--channel-threshold", minimum=-1e4,
                                                                              maximum=1e4, upper_strict=False),
                   default=None, metavar="THETA",
                   help="--channel probit or sign only: decision threshold θ on the centred pre-output, |θ| <= 1e4 "
                        f"(default 0){grid}")


def add_model_options(p, *, grids=False):
    """Model options shared by ``replica-sweep`` and ``replica-phase-diagram``.

    With ``grids=True`` the numeric options ``--delta``, ``--gamma`` and ``--readout-grid``
    are kept as text, so that one of them can be a grid.
    """
    g = p.add_argument_group("model (docs/theory.md §1)")
    g.add_argument("--layers", type=number_type("--layers", minimum=1, maximum=100, upper_strict=False, integer=True),
                   default=1, help="number of hidden layers 1 <= L <= 100 (default 1). L >= 2 with an activation without Hermite "
                        "components of degree <= 2 (--drop-hermite 0,1,2 --unit-variance): docs/theory.md §6.1; L = 2 "
                        "with an odd activation that keeps its linear part (e.g. --activation tanh2 "
                        "--unit-variance): the two-layer solver of docs/theory.md §6.2 (replica.models.two_layer; with "
                        "gaussian, uniform or powerlaw:beta=B readouts the front-aligned rules of docs/deep_linear.md §11, "
                        "a front in |v|); L >= 3 with a linear part: replica.models.deep_linear (docs/deep_linear.md)")
    g.add_argument("--gamma", default="0.5",
                   help="width ratio γ = k/d in [1e-4, 1e4], or one per layer 'γ1,...,γL' (default 0.5)"
                        + ("; or a grid 'start:stop:num' (the second axis)" if grids else ""))
    g.add_argument("--activation", default="relu",
                   help=activation_help() + "; with --layers >= 2 and activations with a linear part also one per layer, first layer first: "
                        "'tanh2,erf' (config file: activation = [\"tanh2\", \"erf\"]) (default relu)")
    g.add_argument("--drop-hermite", default="",
                   help="comma list of Hermite degrees removed from the activation, e.g. '0,1,2' (default none)")
    g.add_argument("--unit-variance", action="store_true",
                   help="rescale the activation (after --drop-hermite) to E σ(z)² = 1")
    g.add_argument("--prior", default="gaussian", help=prior_help())
    g.add_argument("--readout", default="ones", help=readout_help())
    if grids:
        g.add_argument("--readout-grid", default=None,
                       help="continuous readout laws (gaussian, uniform) only: a fixed grid of this many nodes (2 to "
                            "1000000, Gauss–Legendre in the quantile of the law) instead of the default adaptive "
                            "rule (target 1e-4 between refinements, warning above 1e-3; with --layers >= 2 and an odd "
                            "activation: a front in |v| on the last layer, docs/deep_linear.md §11); or a grid "
                            "'a,b,c' of sizes (the second axis)")
        g.add_argument("--delta", default=None,
                       help="label-noise variance Δ >= 0 (gaussian and probit channels), or a grid 'start:stop:num' / "
                            "'a,b,c' (default 0.1)")
    else:
        g.add_argument("--readout-grid", type=number_type("--readout-grid", minimum=2, maximum=1_000_000,
                                                          upper_strict=False, integer=True), default=None,
                       help="continuous readout laws (gaussian, uniform) only: a fixed grid of this many nodes (2 to "
                            "1000000, Gauss–Legendre in the quantile of the law) instead of the default adaptive rule, "
                            "which refines the grid until mmse and free entropy change by less than 1e-4 between "
                            "refinements (per-α estimate in the dataset discretization_error, warning above 1e-3); "
                            "with --layers >= 2 the default for gaussian is a front in |v| on the last layer instead "
                            "(docs/deep_linear.md §11)")
        g.add_argument("--delta", type=number_type("--delta", minimum=0.0, maximum=LIMITS["delta"][1],
                                                   upper_strict=False), default=None,
                       help="label-noise variance 0 <= Δ <= 1e4 of the gaussian and probit channels (default 0.1)")
    add_output_channel_options(g, grids=grids)
    from ..models import architectures

    g.add_argument("--architecture", choices=["auto", *architectures()], default="auto", metavar="NAME",
                   help="solver of the registry (replica.models): " + ", ".join(architectures())
                        + "; or auto, the one the options select (default auto); the name is stored in the root "
                          "attribute 'architecture' of the file")
    g.add_argument("--s-grid", type=s_grid_type, default=None,
                   help="L >= 2 with a linear part only: rule for the effective readout s ~ N(0, 1) of inner-layer "
                        "neurons (s = (vᵀW₂)_j/√k₂ for L = 2). L = 2 default 'adaptive': no grid in s — the profile "
                        "solver follows the layer-1 front and refines its rule until mmse and free entropy are "
                        "converged to 1e-3 (Q₁(s), Q₂(v, s) reported on 76 nodes). L >= 3 default 'adaptive': no grid in "
                        "s either — every inner layer's specialization front is an unknown at equal potential, with "
                        "6-node Gauss rules on each side of it (docs/deep_linear.md §11; profiles reported on 12 "
                        "Gauss–Hermite nodes). N (1 to 150; L >= 3: 1 to 75): a fixed "
                        "Gauss–Hermite grid of N positive nodes; L = 2 only: "
                        "'panels:P' for a fixed composite rule of P panels "
                        "(1 to 1024, 4 nodes each, graded where Q₁(s) jumps), or 'auto' (replica-sweep) for that rule "
                        "refined until mmse and free entropy change by < 1e-3 on the doubled grid at the sweep's α "
                        "(accurate, but slower: docs/two_layer.md). replica-sweep estimates the error of the grid at "
                        "every stored point (dataset discretization_error, warning above 1e-3) and stores the rule of "
                        "L = 2 runs in the root attribute s_grid_rule; replica-phase-diagram stores only the curves")
    s = p.add_argument_group("solver")
    s.add_argument("--alpha", default="0.01:8:101",
                   help="sample ratios 0 < α = n/d² <= 1e8: 'a,b,c' or inclusive 'start:stop:num', at most 100000 "
                        "values (default 0.01:8:101)")
    s.add_argument("--branches", choices=["all", "universal"], default="all",
                   help="'all' traces universal, specialized and partial branches, equilibrium and transitions; "
                        "'universal' only the Q ≡ 0 branch (default all)")
    s.add_argument("--damping", type=number_type("--damping", minimum=0.0, maximum=1.0), default=DEFAULT_DAMPING,
                   help="damping η in [0, 1) of the fixed-point iteration, x ← η x + (1−η) F(x) "
                        f"(default {DEFAULT_DAMPING})")


def add_output_options(p, *, default_output, resume=True, output=True, config_example="delta = 0.1, drop-hermite = '0,1,2'"):
    """Add the shared "output and control" options (``-o``, ``--overwrite``, ``--resume``,
    ``--config``, ``--quiet``, ``--verbose``, ``--version``) to parser ``p``; returns the group."""
    o = p.add_argument_group("output and control")
    if output:
        o.add_argument("-o", "--output", default=default_output,
                       help=f"output HDF5 file (default {default_output})")
    o.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    if resume:
        o.add_argument("--resume", action="store_true",
                       help="continue an interrupted run stored in --output (same options); a finished file "
                            "is left as it is")
    o.add_argument("--config", metavar="FILE.toml", default=None,
                   help="read options from a TOML file with the same keys as the long options "
                        f"(e.g. {config_example}); the command line overrides it")
    chatter = o.add_mutually_exclusive_group()
    chatter.add_argument("--quiet", action="store_true", help="no progress bar, warnings only")
    chatter.add_argument("--verbose", action="store_true", help="debug messages (not with --quiet)")
    o.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return o


# --------------------------------------------------------------------------- main wrapper
class _LineTracker:
    """``sys.stderr`` while a command runs: remembers whether the last text written left its line open (a
    tqdm bar's drawing ends with a carriage return, not a newline), for :class:`_OwnLineHandler`."""

    def __init__(self, stream):
        self._stream = stream
        self.open_line = False

    def write(self, text):
        if text:
            self.open_line = not str(text).endswith("\n")
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _OwnLineHandler(logging.StreamHandler):
    """Every record on a line of its own: while a progress bar is open, written through tqdm's external write
    mode (the bar is cleared, then drawn again below); after a bar's last drawing on a stream that is not a
    terminal (a log file, a pipe: the carriage returns are kept there), after a newline."""

    def emit(self, record):
        stream = self.stream
        try:
            tqdm = sys.modules.get("tqdm.std")
            bars = list(getattr(tqdm.tqdm, "_instances", ())) if tqdm is not None else []
            tty = bool(getattr(stream, "isatty", lambda: False)())
            if getattr(stream, "open_line", False) and not tty:
                stream.write("\n")
            if bars and tty:
                with tqdm.tqdm.external_write_mode(file=stream):
                    super().emit(record)
                return
        except Exception:  # noqa: BLE001 - cosmetic only: fall back to the plain handler
            pass
        super().emit(record)


def _configure_logging(args):
    level = logging.DEBUG if getattr(args, "verbose", False) else (
        logging.WARNING if getattr(args, "quiet", False) else logging.INFO)
    handler = _OwnLineHandler(sys.stderr)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", force=True, handlers=[handler])
    for noisy in ("distributed", "matplotlib", "h5py", "numba", "tornado", "bokeh", "asyncio", "jax", "absl"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C (checkpoint, then exit)."""


def interrupt_in_chain(exc):
    """The ``KeyboardInterrupt`` (Ctrl-C, or :class:`_Terminated` for SIGTERM) among the causes and contexts of
    ``exc``, or None. A signal that arrives while a numba kernel calls back into Python (``_numba_unpickle``)
    comes out of the kernel as a ``SystemError`` ("returned a result with an exception set") whose chain holds
    the interrupt (two hidden layers, SIGTERM during the damped pass: exit 1 and a traceback without this)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


#: the interrupts raised by the signal handlers of the commands, in order (:func:`unwrapped_interrupts`)
_SIGNALLED: list = []


@contextlib.contextmanager
def unwrapped_interrupts():
    """Re-raise an interrupt that reached the block's code as another exception as itself, so that the handlers of
    ``KeyboardInterrupt`` (checkpoint, one line, exit 130/143) see it: one that a compiled kernel wrapped in a
    ``SystemError`` (:func:`interrupt_in_chain`), or one that was lost on the way — SIGTERM during a lazy import of
    scipy leaves a module half imported, and the next import of a name from it fails with an ``ImportError`` whose
    chain holds no interrupt (a traced phase diagram: exit 1 and a traceback without this). An exception is taken
    for a lost interrupt when a command's signal handler raised one while the block ran; an interrupt swallowed
    without a later error is raised when the block ends, or earlier by the function the block receives
    (``with unwrapped_interrupts() as pending: … pending()``, between units of work)."""
    before = len(_SIGNALLED)

    def pending():
        """Raise the interrupt of a signal that arrived in the block and was swallowed where it landed."""
        if len(_SIGNALLED) > before:
            raise _SIGNALLED[-1]

    try:
        yield pending
    except Exception as exc:
        interrupt = interrupt_in_chain(exc)
        if interrupt is None and len(_SIGNALLED) > before:
            interrupt = _SIGNALLED[-1]
        if interrupt is None:
            raise
        raise interrupt from None
    pending()  # swallowed without a later error (a Cython module's import that the signal cut short)


def _in_gc_callback(frame) -> bool:
    """Whether ``frame`` runs a ``gc.callbacks`` function (JAX registers one): an exception raised
    there is swallowed by the garbage collector ("Exception ignored in …"), so an interrupt would
    be lost."""
    import gc

    codes = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _resend_later(signum):
    """Deliver ``signum`` again shortly, outside the garbage collector's callback."""
    import os
    import threading

    timer = threading.Timer(0.05, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


def _raise_terminated(signum, frame):  # pragma: no cover - exercised by subprocess tests
    if _in_gc_callback(frame):
        _resend_later(signum)
        return
    _SIGNALLED.append(_Terminated())
    raise _SIGNALLED[-1]


def _raise_interrupted(signum, frame):  # pragma: no cover - exercised by subprocess tests
    """SIGINT → KeyboardInterrupt, as Python's default handler, but never inside a gc callback."""
    if _in_gc_callback(frame):
        _resend_later(signum)
        return
    _SIGNALLED.append(KeyboardInterrupt())
    raise _SIGNALLED[-1]


def _all_option_keys() -> set:
    """Long-option names of every command (keys a shared configuration file may hold)."""
    return set(SHARED_OPTION_KEYS)


def parse_command_line(prog, parser, argv):
    """Parse ``argv`` with ``--config`` support for any command of the package.

    ``parser`` is an ``ArgumentParser`` or a function building one (called here, so that Ctrl-C
    while its modules load gives the one-line interrupt note, exit 130).

    Returns
    -------
    (argparse.Namespace or None, int or None)
        The arguments, or None and the exit status (0 after ``--help``/``--version``, 2 after
        a one-line error already printed, 130/143 after an interrupt).
    """
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _raise_interrupted)
    except ValueError:  # pragma: no cover - not in the main thread
        pass
    try:
        if not isinstance(parser, argparse.ArgumentParser):  # a builder: its imports are interruptible too
            parser = parser()
        return parse_with_config(parser, argv, shared_keys=_all_option_keys()), None
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return None, 2
    except KeyboardInterrupt as exc:  # while the modules load: nothing started yet
        what = "terminated" if isinstance(exc, _Terminated) else "interrupted"
        print(f"{prog}: {what}; nothing written", file=sys.stderr)
        return None, 143 if isinstance(exc, _Terminated) else 130
    except SystemExit as exc:  # argparse: --help, --version, or a one-line error (exit 2)
        return None, (exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2))


def close_progress_bars():
    """Close the tqdm bars still on screen, so that the one-line interrupt note after them stays visible."""
    tqdm = getattr(sys.modules.get("tqdm.std"), "tqdm", None)  # not imported (--quiet): no bar to close
    if tqdm is None:
        return
    try:
        for bar in list(getattr(tqdm, "_instances", ())):
            bar.close()
    except (Exception, KeyboardInterrupt):  # noqa: BLE001 - cosmetic only (a second Ctrl-C while closing too)
        pass


def missing_extra_advice(extra: str) -> str:
    """``install the extra: pip install 'replica-hciz[EXTRA]'``: the one form that works both from an index or
    a wheel and in a checkout installed with ``pip install -e .`` (pip then adds the extra's packages)."""
    return f"install the extra: pip install 'replica-hciz[{extra}]'"


def run_command(prog, build_parser, run, argv, *, missing_extra=None, input_errors=()):
    """Parse ``argv``, configure logging and SIGTERM, call ``run(args)`` and turn its failures into
    one line and an exit status: 2 bad input (:class:`UsageError`, and the exception classes of
    ``input_errors``: first line of their message) or out of memory, 1 unwritable output, 130/143
    interrupted/terminated (with the exception's ``note`` of what was kept), and with
    ``missing_extra`` (the name of an optional extra) 2 for a missing optional dependency, in a line
    with the install command (:func:`missing_extra_advice`). A :class:`UsageError` about an option whose
    value came from ``--config`` names the key and the file (:func:`replica.workflow.config.name_config_key`).
    Shared by every command (the public runner for a new command of the workflow layer).

    Parameters
    ----------
    prog : str
        Command name used in the messages (``"replica-sgd"``).
    build_parser : callable
        ``build_parser() -> argparse.ArgumentParser`` (a :class:`~replica.workflow.config.CommandParser`).
    run : callable
        ``run(args) -> int``: the command's work on the parsed arguments; its return value is the exit status.
    argv : list of str or None
        Arguments (``None``: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status (0 success; 2, 1, 130, 143 as above). Nothing is raised for the failures listed."""
    args, status = parse_command_line(prog, build_parser, argv)
    if args is None:
        return status
    stderr = sys.stderr
    sys.stderr = _LineTracker(stderr)  # log records after a progress bar start their own line
    try:
        return _run_configured(prog, run, args, missing_extra, input_errors)
    finally:
        if isinstance(sys.stderr, _LineTracker):
            sys.stderr = stderr


def _run_configured(prog, run, args, missing_extra, input_errors):
    """:func:`run_command` once ``args`` are parsed: logging, SIGTERM, the exit statuses."""
    _configure_logging(args)
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # pragma: no cover - not in the main thread
        pass
    unraisable, sys.unraisablehook = sys.unraisablehook, _quiet_unraisable_interrupt
    try:
        with unwrapped_interrupts():
            return run(args)
    except UsageError as exc:
        print(f"{prog}: error: {name_config_key(args, str(exc))}", file=sys.stderr)
        return 2
    except input_errors as exc:
        print(f"{prog}: error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", file=sys.stderr)
        return 2
    except ImportError as exc:
        if missing_extra is None:
            raise
        print(f"{prog}: error: {exc.name or exc} is missing; {missing_extra_advice(missing_extra)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if previous is not None:  # a second SIGTERM while the note is written: ignored (restored below)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        close_progress_bars()
        what = "terminated" if isinstance(exc, _Terminated) else "interrupted"
        note = getattr(exc, "note", "nothing written")
        print(f"{prog}: {what}; {note}", file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    except MemoryError:
        print(f"{prog}: error: {OUT_OF_MEMORY}", file=sys.stderr)
        return 2
    except OSError as exc:
        target = exc.filename or getattr(args, "output", "")
        print(f"{prog}: error: cannot write {target}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        sys.unraisablehook = unraisable
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _quiet_unraisable_interrupt(info):
    """``sys.unraisablehook`` of the commands: an interrupt raised where Python cannot propagate it (a weakref
    callback: "Exception ignored in …" and a traceback on stderr) is kept quiet; the signal handler recorded it and
    :func:`unwrapped_interrupts` raises it where it can. Anything else goes to the default hook."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        return
    sys.__unraisablehook__(info)


# --------------------------------------------------------------------------- replica-sweep
def build_sweep_parser() -> argparse.ArgumentParser:
    """Argument parser of ``replica-sweep``."""
    p = CommandParser(
        prog="replica-sweep",
        description=(
            "Bayes-optimal learning curve of a network with L hidden layers (teacher–student, "
            "width k = γd, n = αd² samples) from the replica/HCIZ theory. Writes every branch "
            "(universal, specialized, partial), the equilibrium and the transitions to HDF5. While the "
            "sweep runs, finished solves go to the checkpoint OUTPUT-stem.checkpoint.h5 (the output itself "
            "is written only at the end): after Ctrl-C or a kill, rerun with --resume."
        ),
    )
    add_model_options(p)
    o = add_output_options(p, default_output=DEFAULT_OUTPUT)
    o.add_argument("--checkpoint-every", type=number_type("--checkpoint-every", minimum=0.0), default=30.0,
                   metavar="SECONDS", help="seconds between checkpoints of an unfinished sweep (default 30; "
                                           "0 = after every solve)")
    return p


def sweep_main(argv=None) -> int:
    """Entry point of ``replica-sweep``; returns the exit status."""
    return run_command("replica-sweep", build_sweep_parser, _run_sweep, argv)


def sweep_parameters(args) -> tuple:
    """Validated model parameters of ``replica-sweep`` (the ``parameters`` attribute) and the α grid."""
    alphas = parse_alpha_grid(args.alpha)
    gammas = parse_gammas(args.gamma, args.layers)
    drop = parse_int_list(args.drop_hermite, "--drop-hermite")
    parameters = {
        "layers": args.layers, "gamma": gammas, "activation": args.activation, "drop_hermite": list(drop),
        "unit_variance": args.unit_variance, "prior": args.prior,
        "readout": args.readout, "readout_grid": args.readout_grid,
        **output_channel_options(args.channel, args.delta, args.temperature, args.channel_threshold),
        "alpha": alphas.tolist(), "branches": args.branches, "damping": args.damping,
    }
    if args.s_grid is not None:  # checked against --layers by build_model, as for the phase diagram
        parameters["s_grid"] = args.s_grid
    if args.architecture != "auto":  # absent: the automatic choice (files of earlier versions resume alike)
        parameters["architecture"] = args.architecture
    return parameters, alphas


def _run_sweep(args) -> int:
    from .io import read_root_attrs, write_sweep
    from .run import SweepCheckpoint, run_sweep
    from .safe_write import SafeOutput

    if not 0.0 <= args.damping < 1.0:
        raise UsageError(f"--damping must be in [0, 1), got {args.damping}")
    parameters, alphas = sweep_parameters(args)
    configuration = resolved_configuration(args)
    model = build_model(parameters)  # every option is checked before the output
    warn_readout_rescaling(args.readout)
    out = Path(args.output)

    with SafeOutput(out, overwrite=args.overwrite, resume=args.resume) as target:
        if target.finished and target.same_finished_run(
                lambda: read_root_attrs(out, kinds=("sweep",), option="--resume").get("parameters", {}), parameters):
            logger.info("%s is already complete; nothing to resume", out)
            print(out)
            return 0
        checkpoint = SweepCheckpoint(target.checkpoint, None, alphas, parameters, configuration,
                                     every=args.checkpoint_every)
        if target.resume_from is not None:
            attrs = read_root_attrs(target.resume_from, kinds=("sweep",), option="--resume")
            target.refuse_other_options(attrs.get("parameters", {}), parameters)
            try:
                checkpoint.load_records(target.resume_from)
            except (ValueError, KeyError) as exc:
                raise UsageError(f"--resume: cannot read the checkpoint in {target.resume_from}: {exc}") from None
            logger.info("resuming %s: %d solves already done (the universal branch, cheap, is always "
                        "recomputed)", target.resume_from, checkpoint.n_done)

        t0 = time.perf_counter()
        try:
            with unwrapped_interrupts():
                result = run_sweep(parameters, alphas, checkpoint=checkpoint, progress=not args.quiet, model=model)
        except KeyboardInterrupt as exc:
            saved = checkpoint.n_done > 0
            if saved and checkpoint.dirty:
                try:
                    checkpoint.write()
                except KeyboardInterrupt:  # a second signal during the write: the previous checkpoint stays
                    pass
            exc.note = target.interrupted_note(f"{checkpoint.n_done} solves" if saved else None)
            raise
        _log_result(result)
        elapsed = time.perf_counter() - t0
        grid = "s grid" if args.layers >= 2 else "readout grid"
        if getattr(model, "readout_grid_nodes", None) is not None:  # front rules with a continuous readout law
            grid = "front rules in s and |v|" if model.readout_front else "s rules and readout grid"
        _warn_discretization(result, grid)
        try:
            target.finish(lambda: write_sweep(out, result, parameters, configuration=configuration))
        except OSError:  # e.g. a full disk: keep every solve for --resume if the checkpoint still fits
            if checkpoint.dirty:
                try:
                    checkpoint.write()
                except OSError:
                    pass
            raise
    tr = result.transitions

    def located(key):
        value = tr.get(key)
        return "none on the grid" if value is None or not np.isfinite(value) else repr(float(value))

    logger.info("sweep of %d α values in %.2f s (%d solves reused, %d computed); alpha_sp = %s, alpha_c = %s",
                alphas.size, elapsed, checkpoint.reused, checkpoint.computed, located("alpha_sp"), located("alpha_c"))
    print(out)
    return 0


def _branch_end(branch, alpha, kind, which) -> str:
    """The α of one end of a branch for the log: located by root finding, or, for an end set by the grid (NaN
    in the file), the α of the branch's first (``which = 0``) or last (``-1``) point on the grid."""
    if kind != "grid" and math.isfinite(alpha):
        return f"{alpha:.9g}"
    on_grid = np.asarray(branch.alpha, float)[np.asarray(branch["exists"], bool)]
    return f"{on_grid[which]:.9g}" if on_grid.size else "none on the grid"


def _log_result(result):
    """Log the branches, the equilibrium changes and the instability of the universal branch of a sweep."""
    if result.universal_only_reason:
        logger.info("universal branch only: %s", result.universal_only_reason)
    for name, b in result.branches.items():
        if name != "universal":
            logger.info("branch %s: alpha %s (%s) to %s (%s)", name, _branch_end(b, b.alpha_start, b.start_kind, 0),
                        b.start_kind, _branch_end(b, b.alpha_end, b.end_kind, -1), b.end_kind)
    for change in result.equilibrium_changes:
        logger.info("equilibrium %s -> %s at alpha = %.9g (%s), mmse %.6g -> %.6g", change["from"],
                    change["to"], change["alpha"], change["kind"], change["mmse_before"], change["mmse_after"])
    instability = result.branch_transitions.get("universal", {}).get("alpha_instability", math.nan)
    if math.isfinite(instability):
        logger.info("the universal branch is linearly unstable above alpha = %.9g", instability)
    features = getattr(result, "feature_transitions", None) or {}
    if features and len(features.get("alpha", ())):
        on = np.asarray(features["equilibrium"], bool)
        a = np.asarray(features["alpha"], float)[on]
        if a.size:
            logger.info("%d feature transitions on the equilibrium (group by group, /feature_transitions), "
                        "alpha = %.9g to %.9g", a.size, a.min(), a.max())


#: whether warnings advise options of replica-sweep (False while replica-figures runs its sweeps: it takes
#: none of them, :func:`without_option_advice`)
_OPTION_ADVICE = contextvars.ContextVar("replica_option_advice", default=True)


@contextlib.contextmanager
def without_option_advice():
    """Run a command in-process for another one (``replica-figures``): its warnings do not advise options
    (``--s-grid``, ``--readout-grid``) that the calling command does not take."""
    token = _OPTION_ADVICE.set(False)
    try:
        yield
    finally:
        _OPTION_ADVICE.reset(token)


def _warn_discretization(result, grid="readout grid"):
    """Warn when the discretization error (of the readout grid, or of the s grid for L >= 2) of a branch
    exceeds its target (advising the option that refines it, unless :func:`without_option_advice`)."""
    from ..readout_grid import DEFAULT_TARGET

    for name, branch in result.branches.items():
        err = branch.fields.get("discretization_error")
        if err is None:
            continue
        ok = branch["exists"] & np.isfinite(err)
        bad = ok & (err > DEFAULT_TARGET)
        unknown = branch["exists"] & ~np.isfinite(err)
        if np.any(bad) or np.any(unknown):
            worst = float(np.max(err[ok])) if np.any(ok) else math.nan
            advice = {"s grid": "a finer --s-grid (L = 2: panels:P or auto)",
                      "s rules and readout grid": "a finer --readout-grid (its error falls like one node's mass)",
                      "front rules in s and |v|": "more nodes per side from Python (DeepFrontModel(panel_nodes=N)); "
                                                  "--s-grid and --readout-grid switch to fixed grids"}.get(
                grid, "the default adaptive rule or a finer --readout-grid")
            logger.warning("branch %s: discretization error of the %s above %g at %d of %d α (largest "
                           "%.2g)%s%s", name, grid, DEFAULT_TARGET,
                           int(np.sum(bad)), int(np.sum(branch["exists"])), worst,
                           f", not estimated at {int(np.sum(unknown))}" if np.any(unknown) else "",
                           f"; use {advice}" if _OPTION_ADVICE.get() else "")


# --------------------------------------------------------------------------- replica-plot
def build_plot_parser() -> argparse.ArgumentParser:
    """Argument parser of ``replica-plot``."""
    p = CommandParser(
        prog="replica-plot",
        description=(
            "Figures of any HDF5 file of the package: replica-sweep (learning curves "
            "with every branch, metastable parts dashed, and the transitions α_sp, α_c; overlap profiles Q(v); "
            "per-layer overlap maps of deep networks), replica-phase-diagram (the equilibrium mmse with the "
            "transition lines), replica-experiment (points, mean ± s.e.m., also overlaid on a sweep with "
            "--experiment), replica-spectrum (m_S, mmse_S, ι against λ and the densities ρ_λ) and replica-sgd "
            "(test error and order parameters against time, overlap histograms)."
        ),
    )
    p.add_argument("file", metavar="FILE.h5", nargs="?", default=None, help="HDF5 file to plot")
    p.add_argument("-o", "--output", default=None,
                   help="figure file, format from the suffix: .png, .pdf, .svg (default FILE.png next to FILE.h5)")
    p.add_argument("--experiment", action="append", default=[], metavar="FILE.h5",
                   help="overlay the experiment points of a replica-experiment file (repeatable)")
    p.add_argument("--reference", action="append", default=[], metavar="FILE.csv[:COLUMN[:ERROR]]",
                   help="overlay a curve from a CSV file with an 'alpha' column: COLUMN (default: mmse, gen_error "
                        "or y_MMSEs) against α, with ERROR as error bars (repeatable)")
    p.add_argument("--kind", choices=["auto", "curve", "classification", "overlaps", "layers", "neurons", "phase"],
                   default="auto",
                   help="what to draw: auto (everything the file allows; the only kind for experiment, spectrum "
                        "and SGD files), curve (learning curve only), classification (the Bayes-optimal "
                        "classification error of ±1 output channels, --channel probit/sign/logistic), overlaps "
                        "(Q(v) profiles / overlaps vs α), "
                        "layers (per-layer maps, deep networks), neurons (per-neuron overlap maps of sweeps with two "
                        "or more hidden layers and linear parts: L = 2, every first-layer neuron and every pair of "
                        "neurons; L >= 3, one map per layer; ordered by readout strength), "
                        "phase (phase diagram) (default auto)")
    p.add_argument("--neurons", action="store_const", const="neurons", dest="kind",
                   help="the same as --kind neurons")
    p.add_argument("--logy", action="store_true", help="logarithmic mmse axis")
    p.add_argument("--title", default=None, help="figure title (default: the model parameters)")
    p.add_argument("--dpi", type=number_type("--dpi", minimum=LIMITS["dpi"][0], maximum=LIMITS["dpi"][1],
                                             upper_strict=False, integer=True), default=200,
                   help="resolution of raster formats, 10 to 2400 (default 200)")
    add_output_options(p, default_output=None, resume=False, output=False)
    return p


def plot_main(argv=None) -> int:
    """Entry point of ``replica-plot``; returns the exit status."""
    return run_command("replica-plot", build_plot_parser, _run_plot, argv)


def _run_plot(args) -> int:
    if args.file is None:
        raise UsageError("FILE.h5: give the HDF5 file to plot (or 'file' in --config)")
    src = Path(args.file)
    if not src.exists():
        raise UsageError(f"FILE.h5: {src} does not exist")
    out = Path(args.output) if args.output else src.with_suffix(".png")
    if out.suffix.lower() not in (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps"):
        raise UsageError(f"--output: unknown figure format {out.suffix!r} (use .png, .pdf or .svg)")
    check_output_path(out, args.overwrite, option="--output")
    for e in args.experiment:
        if not Path(e).exists():
            raise UsageError(f"--experiment: {e} does not exist")
    from . import plotting

    references = []
    for spec in args.reference:
        try:
            references.append(plotting.read_reference(spec))
        except ValueError as exc:
            raise UsageError(f"--reference: {exc}") from None
    try:
        fig = plotting.plot_file(src, experiments=args.experiment, references=references, kind=args.kind,
                                 title=args.title, logy=args.logy)
    except plotting.PlotError as exc:
        raise UsageError(str(exc)) from None
    plotting.save_figure(fig, out, dpi=args.dpi)
    logger.info("wrote %s", out)
    print(out)
    return 0


# --------------------------------------------------------------------------- replica-phase-diagram
#: numeric options that can be the second axis of a phase diagram (the last two: parameters of the output channel,
#: ``--channel logistic`` and ``--channel probit``/``sign``)
PHASE_PARAMETERS = ("delta", "gamma", "readout_grid", "temperature", "channel_threshold")
#: the bounds of the channel parameters on the second axis (as the single-valued options of replica-sweep)
_CHANNEL_GRIDS = {"temperature": dict(minimum=0.0, strict=True, maximum=1e4, meaning="T"),
                  "channel_threshold": dict(minimum=-1e4, maximum=1e4, meaning="θ")}


def build_phase_diagram_parser() -> argparse.ArgumentParser:
    """Argument parser of ``replica-phase-diagram``."""
    p = CommandParser(
        prog="replica-phase-diagram",
        description=(
            "Phase diagram on a grid α × (Δ, γ, --readout-grid or a channel parameter): for every value of the second "
            "parameter a full α sweep (all branches, warm starts in both directions), giving the equilibrium mmse, its "
            "branch and the transition lines α_sp and α_c. Exactly one of --delta, --gamma, --readout-grid, "
            "--temperature, --channel-threshold is a grid ('start:stop:num' or 'a,b,c'). The sweeps run in parallel "
            "with dask.distributed: a local cluster of --workers processes, or an existing cluster (--scheduler "
            "tcp://HOST:PORT)."
        ),
    )
    add_model_options(p, grids=True)
    p.add_argument("--vary", choices=[n.replace("_", "-") for n in PHASE_PARAMETERS], default=None,
                   help="name of the second axis when it is ambiguous (e.g. --gamma 0.5,1 with --layers 2)")
    p.add_argument("--trace", action="store_true",
                   help="follow the phase lines (spinodals, first-order lines, instabilities, branch points, onsets) "
                        "through the values of --delta (or --gamma, --temperature, --channel-threshold) by "
                        "continuation, from α sweeps at the first and the last value, instead of one sweep per value; "
                        "writes a file of phase lines with their critical and triple points (replica-plot draws it); "
                        "runs in this process")
    c = p.add_argument_group("cluster")
    c.add_argument("--workers", type=_workers_type, default=None,
                   help="worker processes of the local cluster, at most 4 per CPU core (default: number of CPU "
                        "cores)")
    c.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="address of a running dask scheduler (instead of a local cluster)")
    add_output_options(p, default_output=DEFAULT_PHASE_OUTPUT)
    return p


def _workers_type(text):
    """``--workers``: an integer from 1 to :func:`replica.workflow.phase_diagram.max_workers`."""
    from .phase_diagram import check_workers

    value = number_type("--workers", minimum=1, integer=True)(text)
    try:
        check_workers(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def phase_diagram_main(argv=None) -> int:
    """Entry point of ``replica-phase-diagram``; returns the exit status."""
    return run_command("replica-phase-diagram", build_phase_diagram_parser, _run_phase_diagram, argv)


def phase_diagram_options(args) -> tuple:
    """Resolve the phase-diagram options.

    Returns
    -------
    parameter : str
        Name of the second axis.
    values : ndarray
        Its grid.
    base : dict
        Model options common to every line (``gamma`` is a list, one per layer).
    alphas : ndarray
    """
    alphas = parse_alpha_grid(args.alpha)
    drop = parse_int_list(args.drop_hermite, "--drop-hermite")
    raw = {"delta": args.delta, "gamma": args.gamma, "readout_grid": args.readout_grid,
           "temperature": args.temperature, "channel_threshold": args.channel_threshold}
    vary = args.vary.replace("-", "_") if args.vary else None
    if vary is None:
        candidates = [k for k, v in raw.items() if v is not None and (":" in str(v) or (
            "," in str(v) and (k != "gamma" or args.layers == 1)))]
        if len(candidates) > 1:
            raise UsageError("--vary: only one of " + ", ".join("--" + k.replace("_", "-") for k in candidates)
                             + " can be a grid")
        if not candidates:
            multi = (" (with --layers >= 2 a comma list of --gamma is one width per layer: add --vary gamma to "
                     "vary every width)" if args.layers > 1 and args.gamma is not None and "," in str(args.gamma)
                     else "")
            raise UsageError("--delta/--gamma/--readout-grid/--temperature/--channel-threshold: give one of them as a "
                             f"grid 'start:stop:num' or 'a,b,c' (the second axis){multi}")
        vary = candidates[0]
    option = "--" + vary.replace("_", "-")
    if raw[vary] is None:
        raise UsageError(f"{option}: give its grid ('a,b,c') when it is the second axis")
    if vary == "delta":
        values = parse_number_grid(raw[vary], option, minimum=0.0, maximum=LIMITS["delta"][1], meaning="Δ")
    elif vary == "gamma":
        values = parse_number_grid(raw[vary], option, minimum=LIMITS["gamma"][0], maximum=LIMITS["gamma"][1],
                                   meaning="γ = k/d")
    elif vary in _CHANNEL_GRIDS:
        values = parse_number_grid(raw[vary], option, **_CHANNEL_GRIDS[vary])
    else:
        values = parse_number_grid(raw[vary], option, minimum=2, maximum=1_000_000, integer=True)
    base = {
        "layers": args.layers, "activation": args.activation, "drop_hermite": list(drop),
        "unit_variance": args.unit_variance, "prior": args.prior, "readout": args.readout,
        "branches": args.branches, "damping": args.damping, "alpha": alphas.tolist(),
    }
    if args.s_grid is not None:
        if args.s_grid == "auto":
            raise UsageError("--s-grid auto: only for replica-sweep (give N or panels:P)")
        base["s_grid"] = args.s_grid
    if args.architecture != "auto":
        base["architecture"] = args.architecture
    for k in ("delta", "gamma", "readout_grid"):
        if k == vary:
            continue
        text = raw[k]
        if k == "delta":
            base[k] = None if text is None else float(_single(text, "--delta", minimum=0.0, maximum=LIMITS["delta"][1]))
        elif k == "gamma":
            base[k] = parse_gammas(text, args.layers)
        elif text is not None:
            base[k] = int(_single(text, "--readout-grid", integer=True, minimum=2, maximum=1_000_000))
        else:
            base[k] = None
    single = {k: None if raw[k] is None else float(_single(raw[k], "--" + k.replace("_", "-"), **_CHANNEL_GRIDS[k]))
              for k in _CHANNEL_GRIDS if k != vary}
    single.update({vary: float(values[0])} if vary in _CHANNEL_GRIDS else {})
    channel = output_channel_options(args.channel, base.get("delta"), single["temperature"],
                                     single["channel_threshold"])
    if vary == "delta":
        if channel.get("channel") in ("sign", "logistic"):
            raise UsageError(f"--vary delta: --channel {channel['channel']} has no noise variance Δ")
        channel.pop("delta")
    elif vary in _CHANNEL_GRIDS:
        channel.pop(vary)
    base.update(channel)
    base["vary"] = vary
    return vary, values, base, alphas


def _single(text, option, *, integer=False, minimum=0.0, maximum=None, strict=False, meaning=""):
    grid = parse_number_grid(text, option, minimum=minimum, integer=integer, maximum=maximum, strict=strict,
                             meaning=meaning)
    if grid.size != 1:
        raise UsageError(f"{option}: only one value allowed here (the grid is on --vary), got {text!r}")
    return grid[0]


def _line_options(base, vary, value) -> dict:
    opts = dict(base)
    opts.pop("vary", None)
    if vary == "gamma":
        opts["gamma"] = [float(value)] * int(base["layers"])
    elif vary == "readout_grid":
        opts["readout_grid"] = int(value)
    else:
        opts[vary] = float(value)
    return opts


#: the symbols of the second axes in messages
_SYMBOLS = {"delta": "Δ", "gamma": "γ", "temperature": "T", "channel_threshold": "θ"}


def _line_label(kind, branches) -> str:
    """How the command's messages name a phase line: ``from -> to`` for a first-order line, else its branch and what
    the line marks on it (``layers_1_2 start``)."""
    return (" -> " if kind == "crossing" else " ").join(branches)


def _run_traced(args, vary, values, base, alphas) -> int:
    """``replica-phase-diagram --trace``: sweeps at the first and the last Δ (or γ), then every phase line through the
    values from the first (:func:`replica.continuation.codim2.phase_line_tasks`) and, backwards, from the last (the
    lines of branches born inside the range), each line once (:func:`replica.continuation.triples.distinct_lines`),
    with the critical and triple points where lines meet, the first-order line that starts at a triple point
    where no sweep saw it, and the pieces of crossing lines beyond a triple point marked metastable; written under
    the lock and atomically. The sweeps' solves
    and every finished line go to the checkpoint (the solves every 30 s and when a sweep is done, each line when it
    is done); ``--resume``
    replays the solves, keeps the finished lines and traces the others: the same file as an uninterrupted run."""
    from ..continuation.codim2 import critical_points, model_at, phase_line_tasks
    from ..continuation.triples import (distinct_lines, mark_metastable, run_line_tasks, third_lines,
                                        triple_points, untraced)
    from .io import read_checkpoint_lines, read_root_attrs, write_phase_lines
    from .model_options import resolve_model
    from .run import SweepCheckpoint, run_sweep
    from .safe_write import SafeOutput

    if vary not in ("delta", "gamma", *_CHANNEL_GRIDS):
        raise UsageError(f"--trace: lines are traced in Δ (--delta), γ (--gamma, every layer's width) or a channel "
                         f"parameter (--temperature, --channel-threshold) as the grid, not --{vary.replace('_', '-')}")
    if args.workers is not None or args.scheduler is not None:
        raise UsageError("--trace: runs in this process (--workers and --scheduler are for grid diagrams)")
    values = np.asarray(values, dtype=float)
    if values.size < 2 or not np.all(np.diff(values) > 0):
        raise UsageError(f"--{vary.replace('_', '-')}: give at least two increasing values to trace the lines through")
    opts = _line_options(base, vary, float(values[0]))
    model, arch = resolve_model(opts)
    if getattr(model, "with_parameter", None) is None:
        raise UsageError(f"--trace: the {arch.name} model gives no copy at another {_SYMBOLS.get(vary, vary)} "
                         "(no with_parameter hook)")
    parameters = dict(base, trace={"parameter": vary, "values": [float(v) for v in values]})
    configuration = resolved_configuration(args)
    out = Path(args.output)
    with SafeOutput(out, overwrite=args.overwrite, resume=args.resume) as target:
        if target.finished and target.same_finished_run(
                lambda: read_root_attrs(out, kinds=("phase_lines",), option="--resume").get("parameters", {}),
                parameters):
            logger.info("%s is already complete; nothing to resume", out)
            print(out)
            return 0
        checkpoint = SweepCheckpoint(target.checkpoint, None, alphas, parameters, configuration)
        done = []
        if target.resume_from is not None:
            attrs = read_root_attrs(target.resume_from, kinds=("sweep",), option="--resume")
            target.refuse_other_options(attrs.get("parameters", {}), parameters)
            try:
                checkpoint.load_records(target.resume_from)
                done = read_checkpoint_lines(target.resume_from)
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise UsageError(f"--resume: cannot read the checkpoint in {target.resume_from}: {exc}") from None
            checkpoint.lines = list(done)  # kept in every checkpoint written from now on (the sweeps' too)
            logger.info("resuming %s: %d solves and %d lines already done", target.resume_from, checkpoint.n_done,
                        len(done))
        pbar = None
        try:
            with unwrapped_interrupts() as pending:
                solve_kw = {"damping": base["damping"]}
                tasks = []
                for end, vals in ((0, values), (1, values[::-1])):
                    m = model if end == 0 else model_at(model, vary, float(values[-1]))
                    checkpoint.prefix = "" if end == 0 else "top/"
                    result = run_sweep(_line_options(base, vary, float(vals[0])), alphas, progress=not args.quiet,
                                       model=m, checkpoint=checkpoint)
                    if checkpoint.dirty:
                        checkpoint.write()  # the sweep's solves, before the lines
                    tasks += phase_line_tasks(m, result, vary, vals, solve_kw)
                    n_first = len(tasks) if end == 0 else n_first
                if not tasks:
                    checkpoint.path.unlink(missing_ok=True)  # nothing to resume
                    raise UsageError(f"--trace: no spinodal, first-order transition or instability of the universal "
                                     f"branch on the α grid at {vary} = {values[0]:g} or {values[-1]:g}: no line "
                                     "passes there (widen --alpha)")
                if any(d is not None and (d.kind, d.branches) != label for d, (label, _, _) in zip(done, tasks)):
                    logger.warning("--resume: the lines in %s are not those of this sweep; tracing them again",
                                   target.resume_from)
                    done = []
                checkpoint.lines = list(done[:len(tasks)])
                pending()
                if not args.quiet:
                    from tqdm.std import tqdm

                    pbar = tqdm(total=len(tasks), initial=len(checkpoint.lines), desc="phase lines", unit="line",
                                leave=False)

                def finished(line):
                    checkpoint.add_line(line)
                    if pbar is not None:
                        pbar.update()
                    pending()

                run_line_tasks(tasks, n_first, values[-1], done=list(checkpoint.lines), on_line=finished)
                for (kind, branches), a, value in untraced(tasks, checkpoint.lines, n_first, values[0], values[-1]):
                    logger.warning("the %s line of %s (alpha = %.10g at %s = %g) is not traced: no point of the branch "
                                   "could be solved at the grid alpha next to it, and no line from the other end "
                                   "passes there", kind, _line_label(kind, branches), a, vary, value)
                lines = distinct_lines([line for line in checkpoint.lines if line is not None])
                critical = critical_points(model, vary, lines, values, solve_kw)
                triples = triple_points(model, vary, lines, solve_kw)
                lines = distinct_lines(lines + third_lines(model, vary, lines, triples, values, solve_kw))
                mark_metastable(model, vary, lines, triples, solve_kw)
                _log_traced(vary, lines, critical, triples)
                target.finish(lambda: write_phase_lines(out, lines, parameters, parameter=vary, requested=values,
                                                        critical=critical, triples=triples,
                                                        configuration=configuration, architecture=arch.name))
        except KeyboardInterrupt as exc:
            if checkpoint.dirty:
                try:
                    checkpoint.write()
                except KeyboardInterrupt:  # a second signal during the write: the previous checkpoint stays
                    pass
            kept = f"{checkpoint.n_done} solves and {len(checkpoint.lines or [])} lines" if checkpoint.n_done else None
            exc.note = target.interrupted_note(kept)
            raise
        finally:
            if pbar is not None:
                pbar.close()
    print(out)
    return 0


def _log_traced(vary, lines, critical, triples):
    """Log the traced lines, the critical points and the triple points of ``replica-phase-diagram --trace``."""
    for line in lines:
        logger.info("%s line of %s: %d points from %s = %g to %g (%s)", line.kind, _line_label(line.kind, line.branches),
                    len(line.points), vary, line.points[0].parameter, line.points[-1].parameter, line.end)
    for c in critical:
        logger.info("critical point (cusp of two spinodals): %s = %.10g, alpha = %.10g", vary, c.parameter, c.alpha)
    for t in triples:
        logger.info("triple point (lines %s and %s meet): %s = %.10g, alpha = %.10g", " -> ".join(t.branches[0]),
                    " -> ".join(t.branches[1]), vary, t.parameter, t.alpha)


def _run_phase_diagram(args) -> int:
    from . import phase_diagram

    try:  # distributed sets its own logger levels on import: quiet them here, in the entry point
        import distributed  # noqa: F401
    except ImportError:  # pragma: no cover - reported by run_phase_diagram
        pass
    for name in ("distributed", "tornado", "bokeh"):
        logging.getLogger(name).setLevel(logging.DEBUG if args.verbose else logging.WARNING)

    if not 0.0 <= args.damping < 1.0:
        raise UsageError(f"--damping must be in [0, 1), got {args.damping}")
    if args.scheduler is not None and args.workers is not None:
        raise UsageError("--scheduler: give either --scheduler (existing cluster) or --workers (local cluster)")
    try:  # at once: connecting to an impossible address waits 20 s
        phase_diagram.check_scheduler(args.scheduler)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    vary, values, base, alphas = phase_diagram_options(args)
    if args.trace:
        return _run_traced(args, vary, values, base, alphas)
    phase_diagram.check_size(np.size(values), np.size(alphas),
                             option=f"--alpha/--{vary.replace('_', '-')}")  # before 10⁵ models are built
    out = Path(args.output)
    for v in values:  # validate every line here: workers never see bad input
        build_model(_line_options(base, vary, v))
    warn_readout_rescaling(args.readout)
    configuration = resolved_configuration(args)
    lines = [_line_options(base, vary, v) for v in values]
    try:
        phase_diagram.run_phase_diagram(
            out, vary, values, lines, base, alphas, configuration=configuration, workers=args.workers,
            scheduler=args.scheduler, resume=args.resume, overwrite=args.overwrite, progress=not args.quiet)
    except phase_diagram.ResumeMismatch as exc:
        raise UsageError(f"--resume: {exc}") from None
    except phase_diagram.ClusterError as exc:
        raise UsageError(str(exc)) from None
    print(out)
    return 0
