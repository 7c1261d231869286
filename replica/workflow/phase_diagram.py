"""Phase diagrams: α sweeps over a grid of a second parameter, in parallel with dask.

A phase diagram is a family of α sweeps (:func:`replica.continuation.sweep`, every branch,
warm starts in both directions), one per value of a second numeric parameter — the noise
Δ, the width ratio γ, or the readout grid size. Each sweep is one task: continuation
along α needs the points in order, while the lines are independent, so the lines run in
parallel on a ``dask.distributed`` cluster (a local cluster of processes on loopback by
default, or an existing scheduler). The transition lines are the spinodal ``α_sp`` and
the thermodynamic transition ``α_c`` as functions of the second parameter; the grid of the
equilibrium mmse and branch is stored too (layout in :mod:`replica.workflow.io`).

Finished lines are written to the checkpoint ``<output stem>.checkpoint.h5`` as they arrive
(atomically), and the output file appears (or is replaced) only when every line is done, so
an interrupted run keeps its finished lines and ``resume=True`` computes only the missing
ones (:mod:`replica.workflow.safe_write`).

Example
-------
>>> from replica.workflow.phase_diagram import run_phase_diagram          # doctest: +SKIP
>>> base = dict(layers=1, gamma=[1.0], activation="tanh2", drop_hermite=[0, 1, 2],
...             unit_variance=True, prior="gaussian", readout="ones", readout_grid=None,
...             branches="all", damping=0.5)
>>> lines = [dict(base, delta=d) for d in (0.05, 0.1)]
>>> run_phase_diagram("ph.h5", "delta", [0.05, 0.1], lines, base, [1.0, 2.0, 3.0], workers=2)
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np

__all__ = ["solve_line", "run_phase_diagram", "assemble", "ResumeMismatch", "ClusterError", "max_workers",
           "check_size", "check_scheduler"]

logger = logging.getLogger(__name__)

BRANCH_NAMES = ("universal", "weak", "partial", "specialized")


class ResumeMismatch(ValueError):
    """The file to resume was computed with other options or grids."""


class ClusterError(RuntimeError):
    """The dask cluster could not be started or reached."""


def solve_line(options: dict, alphas) -> dict:
    """One line of the phase diagram: the α sweep of :func:`replica.workflow.run.run_sweep` (runs on a worker).

    A line is computed exactly as ``replica-sweep`` computes a sweep with the same options (preparation,
    continuation, error estimates), so that both give the same records.

    Parameters
    ----------
    options : dict
        Resolved model options (see :func:`replica.workflow.model_options.build_model`), plus ``branches`` and
        ``damping``.
    alphas : array_like, shape (n_alpha,)

    Returns
    -------
    dict
        ``mmse``, ``free_entropy``, ``branch`` (equilibrium, shape (n_alpha,)), ``alpha_sp``,
        ``alpha_c``, ``alpha_instability`` (floats; the transitions of :func:`replica.continuation.sweep`,
        located by the same root finding), for two or more hidden layers ``alpha_sp_layer``,
        ``alpha_c_layer`` (shape (L,): where layer ℓ is first learned at equilibrium and the spinodal
        of the branch it goes to), ``n_changes`` (number of equilibrium changes),
        ``branches`` {name: {``mmse``, ``free_entropy``, ``exists``, and ``discretization_error`` for models
        that estimate it}},
        ``seconds`` (wall time of the sweep).
    """
    from .run import run_sweep

    t0 = time.perf_counter()
    res = run_sweep(options, alphas, progress=False, features=False)  # the file stores no feature transitions
    eq = res.equilibrium
    out = {
        "mmse": np.asarray(eq["mmse"], dtype=float),
        "free_entropy": np.asarray(eq["free_entropy"], dtype=float),
        "branch": np.asarray([str(b) for b in eq["branch"]], dtype=object),
        "alpha_sp": float(res.transitions.get("alpha_sp", math.nan)),
        "alpha_c": float(res.transitions.get("alpha_c", math.nan)),
        "alpha_instability": float(res.branch_transitions.get("universal", {}).get("alpha_instability", math.nan)),
        "n_changes": len(res.equilibrium_changes),
        "branches": {},
    }
    if "classification_error" in eq:  # ±1 output channels
        out["classification_error"] = np.asarray(eq["classification_error"], dtype=float)
    n_layers = int(options.get("layers", 1))
    if n_layers >= 2:  # where each layer becomes learned at equilibrium, and its spinodal
        for key in ("alpha_sp", "alpha_c"):
            out[f"{key}_layer"] = np.array([float(res.transitions.get(f"{key}_layer_{ell}", math.nan))
                                            for ell in range(1, n_layers + 1)])
    for name, b in res.branches.items():
        if "mmse" not in b.fields:  # branch found nowhere on the grid
            continue
        ok = np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool)
        out["branches"][name] = {
            "mmse": np.where(ok, b["mmse"], np.nan),
            "free_entropy": np.where(ok, b["free_entropy"], np.nan),
            "exists": ok,
        }
        if "discretization_error" in b.fields:
            out["branches"][name]["discretization_error"] = np.where(ok, b["discretization_error"], np.nan)
    out["seconds"] = time.perf_counter() - t0
    return out


def assemble(parameter: str, values, alphas, lines: dict) -> dict:
    """Arrays of the phase-diagram file from finished lines.

    Parameters
    ----------
    parameter : str
    values : array_like, shape (n_param,)
    alphas : array_like, shape (n_alpha,)
    lines : dict[int, dict]
        Output of :func:`solve_line` per index of ``values`` (missing = not done).

    Returns
    -------
    dict
        ``alpha``, ``<parameter>``, ``done``, ``mmse``, ``free_entropy``, ``branch``,
        ``classification_error`` (±1 output channels),
        ``mmse_<b>``, ``exists_<b>``, ``alpha_sp``, ``alpha_c``, ``alpha_instability``, ``seconds``, and
        for two or more hidden layers ``layer`` (1 … L), ``alpha_sp_layer``, ``alpha_c_layer`` (n_param, L).
    """
    values = np.asarray(values)
    alphas = np.sort(np.asarray(alphas, dtype=float))
    n_par, n_alpha = values.size, alphas.size
    data = {
        "alpha": alphas, parameter: values, "done": np.zeros(n_par, bool),
        "mmse": np.full((n_par, n_alpha), np.nan), "free_entropy": np.full((n_par, n_alpha), np.nan),
        "branch": np.full((n_par, n_alpha), "", dtype=object),
        "alpha_sp": np.full(n_par, np.nan), "alpha_c": np.full(n_par, np.nan), "seconds": np.full(n_par, np.nan),
        "alpha_instability": np.full(n_par, np.nan),
    }
    n_layers = max((len(ln["alpha_c_layer"]) for ln in lines.values() if "alpha_c_layer" in ln), default=0)
    if n_layers:
        data["layer"] = np.arange(1, n_layers + 1)
        data["alpha_sp_layer"] = np.full((n_par, n_layers), np.nan)
        data["alpha_c_layer"] = np.full((n_par, n_layers), np.nan)
    names = [b for b in BRANCH_NAMES if any(b in ln["branches"] for ln in lines.values())]
    names += sorted({b for ln in lines.values() for b in ln["branches"]} - set(BRANCH_NAMES))
    names += sorted({b for ln in lines.values() for b in ln["branches"]} - set(names))
    if any("classification_error" in ln for ln in lines.values()):
        data["classification_error"] = np.full((n_par, n_alpha), np.nan)
    for b in names:
        data[f"mmse_{b}"] = np.full((n_par, n_alpha), np.nan)
        data[f"exists_{b}"] = np.zeros((n_par, n_alpha), bool)
    for j, ln in lines.items():
        data["done"][j] = True
        for key in ("mmse", "free_entropy", "branch", "classification_error"):
            if key in ln:
                data[key][j] = ln[key]
        for key in ("alpha_sp", "alpha_c", "alpha_instability", "seconds"):
            data[key][j] = ln.get(key, np.nan)
        for key in ("alpha_sp_layer", "alpha_c_layer"):
            if key in ln:
                data[key][j, :len(ln[key])] = ln[key]
        for b, rec in ln["branches"].items():
            data[f"mmse_{b}"][j] = rec["mmse"]
            data[f"exists_{b}"][j] = rec["exists"]
    return data


def _lines_from_file(data: dict, parameter: str, values, alphas) -> dict:
    """Finished lines stored in a (possibly incomplete) phase-diagram file."""
    lines = {}
    names = [k[len("mmse_"):] for k in data if k.startswith("mmse_")]
    for j in np.flatnonzero(np.asarray(data["done"], bool)):
        lines[int(j)] = {
            "mmse": data["mmse"][j], "free_entropy": data["free_entropy"][j],
            **({"classification_error": data["classification_error"][j]} if "classification_error" in data else {}),
            "branch": np.asarray(data["branch"][j], dtype=object),
            "alpha_sp": float(data["alpha_sp"][j]), "alpha_c": float(data["alpha_c"][j]),
            "alpha_instability": float(data["alpha_instability"][j]) if "alpha_instability" in data else math.nan,
            "seconds": float(data["seconds"][j]) if "seconds" in data else math.nan,
            **{key: np.asarray(data[key][j], dtype=float) for key in ("alpha_sp_layer", "alpha_c_layer")
               if key in data},
            "branches": {b: {"mmse": data[f"mmse_{b}"][j], "exists": data[f"exists_{b}"][j]}
                         for b in names if f"exists_{b}" in data and data[f"exists_{b}"][j].any()
                         or b == "universal"},
        }
    return lines


def _resume_key(data: dict, parameter: str) -> dict:
    """What a finished phase diagram must share with a run for ``--resume`` to keep it (JSON-comparable)."""
    return {"parameter": data["parameter"], "values": np.asarray(data[parameter]).tolist() if parameter in data else None,
            "alpha": np.asarray(data["alpha"], dtype=float).tolist(), "parameters": data["parameters"]}


#: bytes held per (line, α) cell of a phase diagram: the lines' results, the assembled arrays (mmse, free
#: entropy, branch, classification error, mmse and existence of up to four branches) and the in-memory image
#: of the file written atomically
BYTES_PER_CELL = 200.0


def check_size(n_lines: int, n_alpha: int, *, option="--alpha/--delta/--gamma/--readout-grid") -> None:
    """Refuse a phase diagram whose arrays would not fit in memory (the guard of the other commands,
    :func:`replica.workflow.config.check_memory`).

    Raises
    ------
    replica.workflow.config.UsageError
        ``n_lines × n_alpha`` cells need more than half of the machine's memory (one line naming ``option``).
    """
    from .config import check_memory

    check_memory(BYTES_PER_CELL * float(n_lines) * float(n_alpha), option,
                 f"{n_lines} lines × {n_alpha} values of α = {float(n_lines) * n_alpha:.3g} solves and their arrays")


#: local worker processes allowed per CPU core available to this process
WORKERS_PER_CORE = 4


def max_workers() -> int:
    """Largest ``--workers`` of a local cluster: :data:`WORKERS_PER_CORE` per CPU core available to this
    process (at least 4). Each worker is a Python process of a few hundred MB that solves one line at a time;
    more of them than cores only compete for the same cores (and 10⁵ of them exhaust the memory before the
    first line starts)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(4, WORKERS_PER_CORE * max(cores, 1))


def check_workers(workers, *, option="--workers") -> None:
    """Refuse a number of local workers outside ``1 … max_workers()``.

    Raises
    ------
    ValueError
        ``workers`` is not an integer in that range (message names ``option``).
    """
    if workers is None:
        return
    if isinstance(workers, bool) or not float(workers).is_integer() or not 1 <= workers <= max_workers():
        raise ValueError(f"{option} must be an integer from 1 to {max_workers()} ({WORKERS_PER_CORE} per CPU core "
                         f"here), got {workers!r}")


def check_scheduler(address, *, option="--scheduler") -> None:
    """Refuse at once a scheduler address that no scheduler can have (connecting to it waits 20 s): empty,
    without a host or a port, or a port outside 1 … 65535. ``HOST:PORT`` means ``tcp://HOST:PORT``; addresses
    of the ``inproc`` transport are left to dask.

    Raises
    ------
    ValueError
        The address cannot be a scheduler's (message names ``option``).
    """
    if address is None:
        return
    text = str(address)
    expected = "give the address of a running dask scheduler, tcp://HOST:PORT"
    if not text.strip():
        raise ValueError(f"{option}: empty address; {expected}")
    if text.startswith("inproc://"):
        return
    try:
        parts = _scheduler_url(text)
        port = parts.port
    except ValueError:
        raise ValueError(f"{option}: {text!r} has an invalid port (ports are 1 to 65535); {expected}") from None
    if not parts.hostname:
        raise ValueError(f"{option}: {text!r} has no host; {expected}")
    if port is None or not 1 <= port <= 65535:
        raise ValueError(f"{option}: {text!r} has {'no port' if port is None else 'an invalid port'} "
                         f"(ports are 1 to 65535); {expected}")


def _scheduler_url(text):
    """The address as a URL (``HOST:PORT`` means ``tcp://HOST:PORT``), for :func:`check_scheduler` and the
    connection probe."""
    from urllib.parse import urlsplit

    return urlsplit(text if "://" in text else f"tcp://{text}")


def _refused_at_once(address) -> None:
    """A ``tcp://`` address where nothing listens (the connection is refused) fails at once instead of after
    dask's 20 s of retries; an unreachable host (no answer) is left to dask's timeout."""
    import socket

    text = str(address)
    if "://" in text and not text.startswith("tcp://"):
        return
    parts = _scheduler_url(text)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=2.0).close()
    except ConnectionRefusedError:
        raise ClusterError(f"--scheduler: cannot connect to {address} (connection refused: no dask scheduler "
                           f"listens there)") from None
    except (OSError, ValueError):
        return  # a timeout, an unknown host, …: dask's own connection attempt reports it


#: the setting of dask's nanny that the local workers go without (:func:`_client`)
_TRIM_KEY = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
#: its value in dask's own configuration
_DASK_TRIM = "65536"


def _client(workers, scheduler):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - dependency missing
        raise ClusterError(f"--workers: dask.distributed is not installed ({exc})") from None
    if scheduler is not None:
        _refused_at_once(scheduler)
        try:
            return Client(scheduler, timeout="20s"), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise ClusterError(f"--scheduler: cannot connect to {scheduler} ({str(exc).splitlines()[0]})") from None
    n = int(workers or os.cpu_count() or 1)
    try:
        check_workers(n)
    except ValueError as exc:
        raise ClusterError(str(exc)) from None
    import dask

    # dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers; glibc then stops adapting its mmap threshold,
    # so every array above 128 KiB (a Jacobian's batch of points) is mapped and unmapped again: at four hidden
    # layers 62 million page faults and 107 s of system time in a 474 s diagram. The workers keep glibc's defaults,
    # unless the user's environment or dask configuration sets another value.
    trim = dask.config.get(_TRIM_KEY, None)
    with _workers_ignore_interrupts(), dask.config.set({_TRIM_KEY: None if str(trim) == _DASK_TRIM else trim}):
        try:
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None, silence_logs=logging.ERROR)
        except Exception as exc:  # noqa: BLE001 - any start-up failure is reported in one line
            raise ClusterError(f"--workers: cannot start a local cluster of {n} workers "
                               f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    return Client(cluster), cluster


@contextlib.contextmanager
def _workers_ignore_interrupts():
    """Start worker processes with SIGINT ignored (inherited), so that Ctrl-C, which the terminal
    sends to the whole process group, reaches only the main process: it saves what is done and
    closes the cluster, without a traceback from every worker. The multiprocessing resource
    tracker started here is told not to warn about the semaphores of workers it cleans up."""
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
    quiet = "ignore::UserWarning:multiprocessing.resource_tracker"
    old_env = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = f"{old_env},{quiet}" if old_env else quiet
    try:
        yield
    finally:
        if old_env is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = old_env
        if main_thread:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def _no_signals():
    """Ignore SIGINT and SIGTERM (main thread) while an interrupted run saves and shuts down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_phase_diagram(path, parameter, values, lines_options, base, alphas, *, configuration=None, workers=None,
                      scheduler=None, resume=False, overwrite=False, progress=True) -> dict:
    """Compute a phase diagram on a dask cluster and write it to ``path``.

    Follows the write protocol of :mod:`replica.workflow.safe_write`: ``path`` is locked, finished
    lines go to the checkpoint ``<path stem>.checkpoint.h5`` as they arrive (rewritten
    atomically), and ``path`` is replaced only when every line is done.

    Parameters
    ----------
    path : str or Path
        Output HDF5 file.
    parameter : str
        Second axis: ``"delta"``, ``"gamma"`` or ``"readout_grid"``.
    values : array_like, shape (n_param,)
        Its grid.
    lines_options : list of dict, length n_param
        Resolved model options of each line (:func:`replica.workflow.model_options.build_model`).
    base : dict
        Options common to all lines (stored as the ``parameters`` attribute).
    alphas : array_like, shape (n_alpha,)
    configuration : dict, optional, keyword-only
        Full command-line configuration (stored as ``configuration``).
    workers : int, optional, keyword-only
        Processes of the local cluster, 1 to :func:`max_workers` (default: CPU count); ignored with
        ``scheduler``.
    scheduler : str, optional, keyword-only
        Address ``tcp://HOST:PORT`` of a running scheduler.
    resume : bool, keyword-only
        Reuse the finished lines of the checkpoint (or of an unfinished ``path``).
    overwrite : bool, keyword-only
        Replace an existing ``path`` (when the new diagram is complete).
    progress : bool, keyword-only
        tqdm progress bar over lines.

    Returns
    -------
    dict
        The stored arrays (:func:`assemble`).

    Raises
    ------
    ResumeMismatch
        ``resume`` with a file computed for other options or grids.
    ClusterError
        The cluster cannot be started or reached.
    ValueError
        ``workers`` outside 1 … :func:`max_workers`, or a ``scheduler`` address that no scheduler can have
        (:func:`check_scheduler`); checked before anything is started or written.
    replica.workflow.config.UsageError
        The grids need more than half of the memory (:func:`check_size`; checked first).
        The output is refused by the write protocol (exists, locked, …).
    KeyboardInterrupt
        Interrupted; the finished lines are in the checkpoint (attribute ``note`` says so).
    """
    from .io import read_phase_diagram, write_phase_diagram
    from .model_options import resolve_model
    from .safe_write import SafeOutput

    if scheduler is None:
        check_workers(workers, option="workers")
    check_scheduler(scheduler, option="scheduler")
    check_size(np.size(values), np.size(alphas), option="values/alphas")
    path = Path(path)
    values = np.asarray(values)
    alphas = np.sort(np.asarray(alphas, dtype=float))
    base = dict(base)
    architecture = resolve_model(lines_options[0], build_it=False)[1].name if len(lines_options) else ""
    with SafeOutput(path, overwrite=overwrite, resume=resume) as target:
        done = {}
        source = path if target.finished else target.resume_from
        old = None
        if target.finished:  # no checkpoint: with --overwrite, other options or an unusable file start anew
            def read_finished():
                nonlocal old
                old = read_phase_diagram(path, allow_incomplete=True, option="--resume")
                return _resume_key(old, parameter)

            from .config import UsageError
            from .safe_write import ResultFileError

            try:
                same = target.same_finished_run(read_finished, _resume_key(
                    {"parameter": parameter, parameter: values, "alpha": alphas, "parameters": base}, parameter))
            except ResultFileError:
                raise
            except UsageError:
                raise ResumeMismatch(f"{path} was computed with other options or grids; use the same options or "
                                     "another --output") from None
            if not same:
                source = old = None
        if source is not None:
            try:
                if old is None:
                    old = read_phase_diagram(source, allow_incomplete=True, option="--resume")
            except (OSError, KeyError) as exc:
                raise ResumeMismatch(f"cannot read {source} as a phase diagram ({exc})") from None
            import json

            same = (old["parameter"] == parameter and np.array_equal(old[parameter], values)
                    and np.array_equal(old["alpha"], alphas)
                    and json.loads(json.dumps(old["parameters"], sort_keys=True))
                    == json.loads(json.dumps(base, sort_keys=True)))
            if not same:
                raise ResumeMismatch(f"{source} was computed with other options or grids; use the same options or "
                                     "another --output")
            done = _lines_from_file(old, parameter, values, alphas)
            logger.info("resuming %s: %d of %d lines done", source, len(done), values.size)
            if target.finished:
                return assemble(parameter, values, alphas, done)

        def save(final=True):
            data = assemble(parameter, values, alphas, done)
            write_phase_diagram(target.checkpoint, data, base, parameter=parameter, complete=False,
                                configuration=configuration, architecture=architecture)
            if final and len(done) == values.size:  # the checkpoint holds every line until the result is in place
                target.finish(lambda: write_phase_diagram(path, data, base, parameter=parameter, complete=True,
                                                          configuration=configuration, architecture=architecture))
            return data

        if len(done) == values.size:
            return save()
        _compute_lines(done, parameter, values, lines_options, alphas, target, save, workers=workers,
                       scheduler=scheduler, progress=progress)
        return assemble(parameter, values, alphas, done)


def _compute_lines(done, parameter, values, lines_options, alphas, target, save, *, workers, scheduler, progress):
    """Solve the missing lines on the cluster, calling ``save()`` after each one."""
    from tqdm.auto import tqdm

    todo = [j for j in range(values.size) if j not in done]
    t0 = time.perf_counter()
    client, cluster = _client(workers, scheduler)
    pbar = tqdm(total=values.size, initial=len(done), disable=not progress, desc="phase diagram", unit="line",
                leave=False)
    futures = []
    interrupted = False
    try:
        from dask.distributed import as_completed

        logger.info("%d lines of %d α values on %s", len(todo), alphas.size, client.scheduler_info().get("address",
                                                                                                      scheduler))
        index = {}
        for j in todo:
            fut = client.submit(solve_line, lines_options[j], alphas, pure=False, key=f"line-{j}-{os.getpid()}-{t0}")
            index[fut.key] = j
            futures.append(fut)
        for fut in as_completed(futures):
            j = index[fut.key]
            done[j] = fut.result()
            pbar.update(1)
            logger.info("%s = %g: alpha_sp = %.6g, alpha_c = %.6g (%.1f s)", parameter, values[j],
                        done[j]["alpha_sp"], done[j]["alpha_c"], done[j]["seconds"])
            save()
        pbar.refresh()  # drawn at its total (the last update may fall within tqdm's refresh interval)
    except KeyboardInterrupt as exc:
        interrupted = True
        if done:
            # a line that arrived just before the interrupt (in ``done``, its save cut short) is saved too, so
            # that the checkpoint holds what the note says — the last line too: the target stays unchanged
            with _no_signals():
                save(final=False)
        exc.note = target.interrupted_note(f"{len(done)} of {values.size} lines" if done else None)
        raise
    finally:
        with _no_signals():
            pbar.close()
            if interrupted:  # workers still busy are killed: that is expected, not worth a warning
                for name in ("distributed", "tornado", "asyncio"):
                    logging.getLogger(name).setLevel(logging.CRITICAL)
            for fut in futures:
                fut.cancel()
            client.close()
            if cluster is not None:
                cluster.close()
    logger.info("phase diagram of %d × %d points in %.1f s", values.size, alphas.size, time.perf_counter() - t0)
