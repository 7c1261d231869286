"""Configuration files (``--config FILE.toml``) and one-line command-line errors.

Every command of the package accepts ``--config FILE.toml``. The file holds the same keys
as the command's long options (``delta = 0.1``, ``drop-hermite = "0,1,2"`` or
``drop_hermite = [0, 1, 2]``, ``unit-variance = true``); options given on the command line
override the file. Unknown keys, wrong types and unreadable files are errors that name the
key. A file may also group keys in a table named after the command (``[sweep]``,
``[plot]``, ``[phase-diagram]``): top-level keys are read first, then the command's table;
the other commands' tables are ignored, so one file can serve every command.

Example ``run.toml`` (``gamma`` as a list is one value per layer for ``replica-sweep``; the
single-γ commands ``replica-spectrum`` and ``replica-sgd`` would refuse it at the top level,
naming the key, so it sits in the ``[sweep]`` table)::

    activation = "tanh2"
    drop-hermite = [0, 1, 2]
    unit-variance = true
    delta = 0.1

    [sweep]
    layers = 2
    gamma = [1.0, 1.0]
    alpha = "1:8:15"
    output = "deep.h5"

The resolved configuration (every option after the file and the command line are merged)
is stored in every HDF5 file the commands write (root attribute ``configuration``, JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

__all__ = [
    "UsageError",
    "CommandParser",
    "number_type",
    "load_config",
    "apply_config",
    "parse_with_config",
    "name_config_key",
    "resolved_configuration",
    "COMMAND_TABLES",
    "LIMITS",
    "check_memory",
]

#: table names accepted in a configuration file, per program name
COMMAND_TABLES = {
    "replica-sweep": ("sweep",),
    "replica-plot": ("plot",),
    "replica-phase-diagram": ("phase-diagram", "phase_diagram"),
    "replica-spectrum": ("spectrum",),
    "replica-experiment": ("experiment",),
    "replica-sgd": ("sgd",),
    "replica-figures": ("figures",),
}

#: documented domains of the numeric options shared by several commands (docs/commands.md):
#: values outside are refused in one line naming the option, before anything is computed
LIMITS = {
    "alpha": (0.0, 1e8),          # sample ratio α = n/d² (exclusive lower bound)
    "gamma": (1e-4, 1e4),         # width ratio γ = k/d
    "delta": (0.0, 1e4),          # label-noise variance Δ
    "grid_points": 100_000,       # values of one grid ('start:stop:num' or 'a,b,c')
    "dpi": (10, 2400),            # figure resolution
    "resolution": (8, 1024),      # Chebyshev nodes per piece of an HCIZ table
    "density_grid": (2, 100_000), # density points per λ
}

#: fraction of the physical memory a run may plan to allocate (checked before allocating)
MEMORY_FRACTION = 0.5

#: options that never come from a configuration file
_NOT_CONFIGURABLE = {"help", "version", "config"}


# Option names (``dest``) of every command of the package: the keys a configuration file shared
# between commands may hold. Written out so that parsing one command line builds one parser and
# imports no other command (tests/test_architecture.py checks it against every parser).
SHARED_OPTION_KEYS = frozenset({
    "activation", "alpha", "architecture", "backend", "batch", "batch_fraction", "bins", "branches", "channel",
    "channel_threshold", "checkpoint_every", "closure", "config", "damping", "delta", "density_grid",
    "device", "dim", "dpi", "drop_hermite", "experiment", "figures", "file", "gamma", "help", "init",
    "init_scale", "initial_step_size", "kept", "kind", "lambda_grid", "layers", "leapfrog_steps",
    "learning_rate", "logy", "lr", "max_doublings", "n_test", "no_theory", "only", "output", "overwrite",
    "plot", "prior", "quick", "quiet", "readout", "readout_grid", "record_every", "reference", "resolution",
    "resume", "s_grid", "sampler", "scheduler", "seed", "steps", "target_acceptance", "teachers",
    "temperature", "theory_timeout", "threshold", "time", "title", "trace", "unit_variance", "vary", "verbose",
    "version", "warmup_fraction", "workers", "x64",
})


class UsageError(Exception):
    """Bad input: reported as one line on standard error, exit status 2."""


class CommandParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors are one line (``prog: error: …``), exit 2.

    The usage text is not repeated on errors; ``--help`` shows it.
    """

    def error(self, message):  # noqa: D102 - argparse API
        if message.startswith("argument "):
            message = message[len("argument "):]
        # "--delta: --delta must be …" → "--delta: must be …"
        head, sep, rest = message.partition(": ")
        if sep and rest.startswith(head.split("/")[-1] + " "):
            rest = rest[len(head.split("/")[-1]) + 1:]
        message = f"{head}{sep}{rest}"
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 - argparse API
        return super().parse_known_args(_join_negative_values(self, args), namespace)


def number_type(name, *, minimum=None, strict=False, maximum=None, upper_strict=True, integer=False):
    """argparse ``type`` for one number with a range check; messages name the option.

    Parameters
    ----------
    name : str
        Option name used in the message (``"--delta"``).
    minimum, maximum : float, optional, keyword-only
        Bounds; ``strict`` (lower) and ``upper_strict`` (upper) make them exclusive.
    integer : bool, keyword-only
        Parse as ``int`` instead of ``float``.

    Returns
    -------
    callable
        ``str -> int | float``, raising ``argparse.ArgumentTypeError`` (which
        :class:`CommandParser` turns into a one-line error, exit 2) for non-numbers,
        non-finite values and values out of range.
    """

    def conv(s):
        try:
            x = int(s) if integer else float(s)
        except ValueError:
            kind = "an integer" if integer else "a number"
            raise argparse.ArgumentTypeError(f"{name} must be {kind}, got {s!r}") from None
        if not math.isfinite(x):
            raise argparse.ArgumentTypeError(f"{name} must be finite, got {s!r}")
        if minimum is not None and (x <= minimum if strict else x < minimum):
            raise argparse.ArgumentTypeError(f"{name} must be {'>' if strict else '>='} {minimum:g}, got {s!r}")
        if maximum is not None and (x >= maximum if upper_strict else x > maximum):
            raise argparse.ArgumentTypeError(f"{name} must be {'<' if upper_strict else '<='} {maximum:g}, got {s!r}")
        return x

    conv.__name__ = name  # argparse shows "invalid <name> value" if the message is lost
    return conv


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine (None when unknown)."""
    import os

    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return None


def check_memory(nbytes, option, what):
    """Refuse a run whose planned arrays need more than :data:`MEMORY_FRACTION` of the memory.

    Parameters
    ----------
    nbytes : float
        Planned allocation in bytes.
    option : str
        Option(s) to name in the message (``"--alpha/--dim"``).
    what : str
        What is allocated (``"n = α d² = 1e13 samples of d = 100 inputs"``).

    Raises
    ------
    UsageError
        ``nbytes`` above the limit (one line with the size and the limit).
    """
    total = physical_memory()
    if total is None or nbytes <= MEMORY_FRACTION * total:
        return
    raise UsageError(f"{option}: {what} need {_size(nbytes)}, more than half of this machine's memory "
                     f"({_size(total)}); use smaller values")


def _size(nbytes) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if nbytes < 1024 or unit == "PiB":
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} EiB"  # pragma: no cover


def _join_negative_values(parser, argv):
    """Rewrite ``--alpha -1:3:4`` as ``--alpha=-1:3:4`` so that values starting with ``-``
    followed by a digit (negative numbers and grids) reach the option's own check instead of
    being taken for an option."""
    import re

    if argv is None:
        argv = sys.argv[1:]
    argv = list(argv)
    takes_value = set()
    for action in parser._actions:
        if action.nargs is None and not isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                                                             argparse._VersionAction, argparse._HelpAction,
                                                             argparse._CountAction, argparse._StoreConstAction)):
            takes_value.update(action.option_strings)
    out = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in takes_value and i + 1 < len(argv) and re.match(r"^-[\d.]", str(argv[i + 1])):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
            continue
        out.append(tok)
        i += 1
    return out


def load_config(path) -> dict:
    """Read a TOML configuration file.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict
        The parsed document (tables as nested dicts).

    Raises
    ------
    UsageError
        Missing or unreadable file, or malformed TOML (the message names ``--config``).
    """
    try:
        import tomllib  # Python ≥ 3.11
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            raise UsageError("--config: reading TOML needs Python >= 3.11 or the 'tomli' package") from None
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise UsageError(f"--config: file {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise UsageError(f"--config: {str(path)!r} is a directory") from None
    except OSError as exc:
        raise UsageError(f"--config: cannot read {str(path)!r}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"--config: {str(path)!r} is not valid TOML: {str(exc).splitlines()[0]}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--config: {str(path)!r} is not a TOML text file (not UTF-8 text)") from None


def _option_table(parser) -> dict:
    """Map every accepted key spelling (``drop-hermite``, ``drop_hermite``) to its action."""
    table = {}
    for action in parser._actions:
        if action.dest in _NOT_CONFIGURABLE or action.dest == argparse.SUPPRESS:
            continue
        names = {action.dest, action.dest.replace("_", "-")}
        for opt in action.option_strings:
            if opt.startswith("--"):
                names.add(opt[2:])
                names.add(opt[2:].replace("-", "_"))
        for name in names:
            table[name] = action
    return table


def _to_text(key, value, action, source) -> object:
    """Convert a TOML value to what argparse would receive on the command line."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        if not isinstance(value, bool):
            raise UsageError(f"--config: key {key!r} in {source} must be true or false, got {value!r}")
        return value
    if isinstance(value, bool):
        raise UsageError(f"--config: key {key!r} in {source} takes a value, not {str(value).lower()}")
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in value):
        if action.nargs not in (None, "?"):
            return [str(v) for v in value]
        return ",".join(repr(v) if isinstance(v, float) else str(v) for v in value)
    raise UsageError(f"--config: key {key!r} in {source} has an unsupported value {value!r}")


def apply_config(parser, document: dict, *, source="the configuration file", shared_keys=(), keys=None) -> dict:
    """Set ``parser``'s defaults from a configuration document.

    Values are converted to the strings the command line would carry, so argparse applies
    the same ``type`` conversions and checks to them; options given on the command line
    override them.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    document : dict
        Parsed TOML (top-level keys, and optionally a table named after the command).
    source : str
        Name of the file, for messages.
    shared_keys : iterable of str
        Top-level keys that belong to other commands of the package: ignored here instead
        of being reported as unknown (keys in this command's table must be its own).
    keys : dict, optional, keyword-only
        Filled with ``{dest: key}``: the key of the file (as spelled there) of each default set.

    Returns
    -------
    dict
        The defaults that were set (dest → value).

    Raises
    ------
    UsageError
        Unknown key (the message lists close matches) or a value of the wrong kind.
    """
    table = _option_table(parser)
    tables = COMMAND_TABLES.get(parser.prog, ())
    flat = {}
    shared = {k for key in shared_keys for k in (key, key.replace("_", "-"), key.replace("-", "_"))}
    for key, value in document.items():
        if isinstance(value, dict):
            known = {t for ts in COMMAND_TABLES.values() for t in ts}
            if key in known:  # this command's table (read below) or another command's (ignored)
                continue
            raise UsageError(f"--config: unknown table [{key}] in {source} (tables: "
                             + ", ".join(f"[{ts[0]}]" for ts in COMMAND_TABLES.values()) + ")")
        if key in table or key not in shared:
            flat[key] = value
    for t in tables:
        if isinstance(document.get(t), dict):
            for key, value in document[t].items():
                flat[key] = value
    defaults = {}
    for key, value in flat.items():
        action = table.get(key)
        if action is None:
            import difflib

            close = difflib.get_close_matches(key, sorted({a.dest.replace("_", "-") for a in table.values()}), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise UsageError(f"--config: unknown key {key!r} in {source}{hint}")
        if isinstance(value, dict):
            raise UsageError(f"--config: key {key!r} in {source} cannot be a table")
        text = _to_text(key, value, action, source)
        if action.choices is not None:   # argparse checks choices on the command line only
            for item in (text if isinstance(text, list) else [text]):
                if item not in action.choices:
                    raise UsageError(f"--config: key {key!r} in {source}: invalid choice {item!r} (choose from "
                                     + ", ".join(map(str, action.choices)) + ")")
        if callable(action.type):  # check here, so that the message names the key in the file
            for item in (text if isinstance(text, list) else [text]):
                try:
                    action.type(item)
                except (argparse.ArgumentTypeError, ValueError, TypeError) as exc:
                    msg = str(exc)
                    for opt in action.option_strings:
                        if msg.startswith(opt + " "):
                            msg = msg[len(opt) + 1:]
                    hint = ""
                    if isinstance(value, list) and action.nargs in (None, "?"):
                        hint = (f"; {parser.prog} takes one value: put the list in the table of the command "
                                f"that takes it (e.g. [sweep]) and this command's value in [{tables[0]}]"
                                if tables else "")
                    opt = next((o for o in action.option_strings if o.startswith("--")), "")
                    raise UsageError(f"--config: key {key!r} in {source} ({opt}): {msg}{hint}") from None
        defaults[action.dest] = text
        if keys is not None:
            keys[action.dest] = key
    parser.set_defaults(**defaults)
    return defaults


def parse_with_config(parser, argv=None, *, shared_keys=()):
    """Parse ``argv`` with ``--config FILE.toml`` support.

    The configuration file is read first and sets defaults; the command line then
    overrides them. Type conversions and checks apply to values from both sources.
    Top-level keys listed in ``shared_keys`` (options of the package's other commands)
    are ignored when this command has no such option.

    Returns
    -------
    argparse.Namespace
        With ``config`` (the path or None), ``config_keys`` (the keys taken from the file) and
        ``config_origin`` (``{dest: (key, file, value)}`` of those keys, for :func:`name_config_key`).

    Raises
    ------
    UsageError
        Bad configuration file (see :func:`load_config`, :func:`apply_config`).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--config", default=None)
    known, _ = pre.parse_known_args(argv)
    from_file, keys = {}, {}
    if known.config is not None:
        from_file = apply_config(parser, load_config(known.config), source=repr(known.config),
                                 shared_keys=shared_keys, keys=keys)
    args = parser.parse_args(argv)
    args.config = known.config
    args.config_keys = sorted(from_file)
    actions = {a.dest: a for a in parser._actions}
    args.config_origin = {dest: (keys[dest], repr(known.config), _parsed(actions.get(dest), value))
                          for dest, value in from_file.items()}
    return args


def _parsed(action, text):
    """The value argparse makes of the default ``text`` (its ``type`` applies to string defaults)."""
    if action is not None and isinstance(text, str) and callable(action.type):
        try:
            return action.type(text)
        except Exception:  # noqa: BLE001 - checked already by apply_config
            return text
    return text


def name_config_key(args, message: str) -> str:
    """``message`` of a :class:`UsageError` raised after parsing (``--gamma: …``), rewritten as the errors of
    :func:`apply_config` (``--config: key 'gamma' in 'run.toml' (--gamma): …``) when the option's value is the
    one the configuration file gave (not replaced on the command line); otherwise unchanged."""
    origin = getattr(args, "config_origin", None) or {}
    option, sep, rest = message.partition(": ")
    if not sep or not re.fullmatch(r"--[a-z][a-z0-9-]*", option):
        return message
    dest = option[2:].replace("-", "_")
    if dest not in origin:
        return message
    key, source, value = origin[dest]
    if getattr(args, dest, None) != value:  # the command line gave another value
        return message
    return f"--config: key {key!r} in {source} ({option}): {rest}"


def _jsonable(value):
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def resolved_configuration(args, *, exclude=("config_keys", "config_origin")) -> dict:
    """Every option of a parsed command line (file and command line merged), JSON-ready."""
    out = {}
    for key, value in sorted(vars(args).items()):
        if key in exclude:
            continue
        out[key] = _jsonable(value)
    return out


def dumps(config: dict) -> str:
    """JSON text of a configuration (sorted keys)."""
    return json.dumps(_jsonable(config), sort_keys=True)
