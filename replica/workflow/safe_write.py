"""The write protocol of every command that writes results, and HDF5 open errors in one line.

Every command that writes a result file (``replica-sweep``, ``replica-phase-diagram``,
``replica-spectrum``, ``replica-experiment``, ``replica-sgd``) goes through
:class:`SafeOutput`:

1. **Lock.** An exclusive lock on the target ``X.h5`` (``fcntl.flock`` on the sibling file
   ``.X.h5.lock``, which records the holder's pid, host, start time and command). A second
   writer of the same target fails at once with a message naming the first. The kernel
   drops the lock when its holder dies, even by SIGKILL, so a lock file left by a killed
   process is stale and is simply taken over.
2. **Checkpoint.** Unfinished work goes to the sibling checkpoint ``X.checkpoint.h5``
   (:func:`checkpoint_path`), always written atomically (temporary file + rename), never to
   ``X.h5``.
3. **Commit.** The result is written to a temporary file and renamed onto ``X.h5`` only when
   the run has finished (:class:`replica.workflow.io.atomic_h5`); then the checkpoint is removed.
   ``--overwrite`` therefore keeps the previous ``X.h5`` intact until the new one is complete.
4. **Resume.** ``--resume`` continues from ``X.checkpoint.h5`` (or from an ``X.h5`` with
   ``complete = 0`` left by older versions); with a finished ``X.h5`` and no checkpoint it
   does nothing. ``--resume --overwrite`` resumes the checkpoint or, when there is none, starts
   a new run that replaces ``X.h5`` at the end: it never discards a checkpoint. Without
   ``--resume`` an existing checkpoint is refused, unless ``--overwrite`` (then discarded, with
   a warning).

Opening a file for reading goes through :func:`open_h5`, which turns HDF5's errors into one
line each (:class:`ResultFileError`): locked by another program, permission denied, not an
HDF5 file, truncated, written by another command, or missing what this version needs.

Example
-------
>>> with SafeOutput("relu.h5", overwrite=False, resume=True) as target:     # doctest: +SKIP
...     state = load(target.resume_from) if target.resume_from else None
...     compute(state, checkpoint_to=target.checkpoint)
...     target.finish(lambda: write_result(target.path))  # atomic replace, then the checkpoint is removed
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
from pathlib import Path

from .config import UsageError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: O_EXCL lock files with a liveness check
    fcntl = None

__all__ = [
    "SafeOutput",
    "OutputBusy",
    "ResultFileError",
    "checkpoint_path",
    "lock_path",
    "check_output_directory",
    "open_h5",
    "classify_open_error",
    "file_kind_of",
    "COMMANDS",
]

logger = logging.getLogger(__name__)

#: command that writes each file ``kind`` (root attribute ``kind``)
COMMANDS = {
    "sweep": "replica-sweep",
    "phase_diagram": "replica-phase-diagram",
    "phase_lines": "replica-phase-diagram --trace",
    "spectrum": "replica-spectrum",
    "experiment": "replica-experiment",
    "sgd": "replica-sgd",
}

_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


class ResultFileError(UsageError):
    """A file cannot be used; one-line message, exit status 2.

    Attributes
    ----------
    reason : str
        ``locked``, ``permission``, ``missing``, ``directory``, ``not_hdf5``, ``truncated``,
        ``damaged``, ``other_kind``, ``other_version`` or ``incomplete``.
    """

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


class OutputBusy(UsageError):
    """Another process is writing the same output (it holds the lock)."""


# --------------------------------------------------------------------------- names
def checkpoint_path(path) -> Path:
    """Sibling checkpoint of an output: ``X.h5`` → ``X.checkpoint.h5``."""
    path = Path(path)
    return path.with_name(f"{path.stem}.checkpoint{path.suffix}")


def lock_path(path) -> Path:
    """Sibling lock file of an output: ``X.h5`` → ``.X.h5.lock``."""
    path = Path(path)
    return path.with_name(f".{path.name}.lock")


def _command_line() -> str:
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    prog = f"python -m {argv0.parent.name}" if argv0.name == "__main__.py" else argv0.name
    text = " ".join([prog] + sys.argv[1:])
    return text if len(text) <= 300 else text[:297] + "..."


#: suffixes of the HDF5 files the commands write
H5_SUFFIXES = (".h5", ".hdf5")


def check_h5_suffix(path, *, option="--output") -> None:
    """Refuse an HDF5 output whose name does not end in ``.h5`` or ``.hdf5`` (``-o out.txt`` would
    otherwise write an HDF5 file under a misleading name). One line naming ``option``."""
    path = Path(path)
    if path.suffix.lower() not in H5_SUFFIXES:
        raise UsageError(f"{option}: {path} must end in .h5 or .hdf5 (the output is an HDF5 file)")


def check_output_directory(path, *, option="--output") -> None:
    """Refuse an empty name, a directory, a missing or unwritable directory (one line, ``option``).

    The directory is tried by creating and removing a probe file (``os.access`` says yes
    to root on read-only mounts).
    """
    path = Path(path)
    if str(path).strip() == "":
        raise UsageError(f"{option}: empty file name")
    if path.is_dir():
        raise UsageError(f"{option}: {path} is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        raise UsageError(f"{option}: directory {parent} does not exist")
    if not parent.is_dir():
        raise UsageError(f"{option}: {parent} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"{option}: cannot write in directory {parent} ({exc.strerror})") from None


# --------------------------------------------------------------------------- opening HDF5 files
def classify_open_error(path, exc, *, option="") -> ResultFileError:
    """One-line :class:`ResultFileError` for an exception raised by ``h5py.File(path)``.

    Parameters
    ----------
    path : str or Path
    exc : OSError
        What ``h5py.File`` raised.
    option : str, keyword-only
        Option naming the file in the message (``"--resume"``, ``"FILE.h5"``).

    Returns
    -------
    ResultFileError
        With ``reason`` ``locked`` (HDF5 file lock held by a program that has the file open
        for writing), ``permission``, ``missing``, ``directory``, ``not_hdf5`` (no HDF5
        signature), ``truncated`` (shorter than its superblock says) or ``damaged``.
    """
    path = Path(path)
    head = f"{option}: " if option else ""
    text = str(exc)
    errno_ = getattr(exc, "errno", None)
    if errno_ == 11 or "unable to lock file" in text:
        return ResultFileError(
            f"{head}{path} is locked: another program has it open for writing (HDF5 file lock, e.g. "
            "h5py.File(..., 'a') in a notebook); close it there and retry", "locked")
    if errno_ == 13 or isinstance(exc, PermissionError) or "Permission denied" in text:
        return ResultFileError(f"{head}cannot read {path}: permission denied", "permission")
    if errno_ == 2 or isinstance(exc, FileNotFoundError):
        return ResultFileError(f"{head}{path} does not exist", "missing")
    if errno_ == 21 or isinstance(exc, IsADirectoryError) or path.is_dir():
        return ResultFileError(f"{head}{path} is a directory", "directory")
    if "truncated file" in text:
        return ResultFileError(f"{head}{path} is truncated (an interrupted copy or write, or a full disk?): "
                               f"{_h5_detail(text)}", "truncated")
    if not _has_signature(path):
        return ResultFileError(f"{head}{path} is not an HDF5 file", "not_hdf5")
    return ResultFileError(f"{head}{path} is a damaged HDF5 file ({_h5_detail(text)})", "damaged")


def _h5_detail(text: str) -> str:
    inner = text[text.find("(") + 1:text.rfind(")")] if "(" in text else text
    return inner.splitlines()[0][:160]


def _has_signature(path) -> bool:
    """Whether an HDF5 superblock signature sits at offset 0, 512, 1024, 2048, … (HDF5 spec)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            offset = 0
            while offset + 8 <= size:
                fh.seek(offset)
                if fh.read(8) == _HDF5_SIGNATURE:
                    return True
                offset = 512 if offset == 0 else 2 * offset
    except OSError:
        return False
    return False


@contextlib.contextmanager
def open_h5(path, mode="r", *, option="", kinds=None):
    """Open an HDF5 file, turning every failure into a one-line :class:`ResultFileError`.

    Parameters
    ----------
    path : str or Path
    mode : str
        ``h5py.File`` mode (``"r"`` by default).
    option : str, keyword-only
        Option named in messages.
    kinds : iterable of str, optional, keyword-only
        Accepted file kinds (:func:`file_kind_of`, keys of :data:`COMMANDS`); another kind is
        reported as written by another command.

    Yields
    ------
    h5py.File

    Raises
    ------
    ResultFileError
        See :func:`classify_open_error`; ``other_kind`` for a file of another command;
        ``other_version`` when a dataset or attribute this version needs is missing
        (``KeyError`` inside the block); ``damaged`` when HDF5 fails to read the file's
        contents in mode ``"r"`` (an ``OSError``, ``RuntimeError`` or ``KeyError`` raised by
        h5py inside the block or while checking ``kinds``: a file whose header opens but whose
        data are overwritten).
    """
    import h5py

    try:
        h5 = h5py.File(path, mode)
    except OSError as exc:
        raise classify_open_error(path, exc, option=option) from None
    head = f"{option}: " if option else ""
    try:
        try:
            if kinds is not None:
                kind = file_kind_of(h5)
                kinds = tuple(kinds)
                if kind not in kinds:
                    wanted = " or ".join(COMMANDS.get(k, k) for k in kinds)
                    if kind == "unknown":
                        raise ResultFileError(f"{head}{path} was not written by {wanted} (no 'kind' attribute)",
                                              "other_kind")
                    raise ResultFileError(f"{head}{path} was written by {COMMANDS.get(kind, kind)}, not by "
                                          f"{wanted}", "other_kind")
            yield h5
        except KeyError as exc:
            if mode == "r" and not _is_missing_name(exc):
                raise _damaged(path, head, str(exc).strip("'\"")) from None
            version = h5.attrs.get("version", "unknown")
            if isinstance(version, bytes):
                version = version.decode()
            from .. import __version__

            import re

            names = re.findall(r"'([\w./-]+)'", str(exc))  # a name, not the text between the quotes of "can't … 'x'"
            what = f"'{names[-1]}'" if names else str(exc)
            raise ResultFileError(f"{head}{path} lacks {what} (written by version {version}; this is version "
                                  f"{__version__})", "other_version") from None
        except (OSError, RuntimeError) as exc:
            if mode != "r" or not _raised_by_h5py(exc):  # a write error is not the input's fault
                raise
            raise _damaged(path, head, str(exc)) from None
    except (OSError, RuntimeError) as exc:  # reading the version attribute of a damaged file above
        if mode != "r" or not _raised_by_h5py(exc):
            raise
        raise _damaged(path, head, str(exc)) from None
    finally:
        h5.close()


def _damaged(path, head, text) -> ResultFileError:
    return ResultFileError(f"{head}{path} is a damaged HDF5 file ({_h5_detail(text)})", "damaged")


def _raised_by_h5py(exc) -> bool:
    """Whether ``exc`` was raised inside h5py (the innermost frame of its traceback is h5py's): a read
    error of HDF5, not an error of the code reading the file."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    name = tb.tb_frame.f_code.co_filename.replace("\\", "/")
    return "h5py/" in name or name.startswith("h5py")


def _is_missing_name(exc: KeyError) -> bool:
    """A ``KeyError`` that says a name is absent (another version's file), not that it cannot be read."""
    text = str(exc)
    return (not _raised_by_h5py(exc) or "doesn't exist" in text or "can't locate" in text
            or "not found" in text or "does not exist" in text)


def file_kind_of(h5) -> str:
    """Kind of an open file: its ``kind`` attribute, or a guess for files written before it existed.

    Returns
    -------
    str
        ``sweep``, ``phase_diagram``, ``phase_lines``, ``spectrum``, ``experiment``, ``sgd`` or ``unknown``.
    """
    kind = h5.attrs.get("kind")
    if isinstance(kind, bytes):
        kind = kind.decode()
    if kind:
        return str(kind)
    if "branches" in h5 or "checkpoint" in h5:
        return "sweep"
    if "experiments" in h5 or "chains" in h5:
        return "experiment"
    if "time_convention" in h5.attrs:
        return "sgd"
    return "unknown"


def _is_unfinished(path, option="--output") -> bool:
    """Whether ``path`` is an HDF5 file with ``complete = 0``; lock errors are raised (naming ``option``)."""
    import h5py

    try:
        with h5py.File(path, "r") as h5:
            return int(h5.attrs.get("complete", 1)) == 0
    except OSError as exc:
        err = classify_open_error(path, exc, option=option)
        if err.reason == "locked":
            raise err from None
        return False


# --------------------------------------------------------------------------- lock
class _Lock:
    """Exclusive lock on an output: ``flock`` on its sibling lock file (records the holder)."""

    def __init__(self, target, *, option="--output"):
        self.target = Path(target)
        self.path = lock_path(target)
        self.option = option
        self.fd = None
        self.stale = None

    def _describe(self, info: dict) -> str:
        if not info:
            return "another process"
        when = f", since {info['started']}" if info.get("started") else ""
        return f"pid {info.get('pid')} on {info.get('host')}{when}: {info.get('command', '?')}"

    def _busy(self, info):
        return OutputBusy(f"{self.option}: {self.target} is being written by another process "
                          f"({self._describe(info)}); wait for it to finish, or choose another {self.option}")

    @staticmethod
    def _read(fd) -> dict:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            text = os.read(fd, 4096).decode(errors="replace")
            return json.loads(text) if text.strip() else {}
        except (OSError, ValueError):
            return {}

    def acquire(self):
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": _command_line(),
                "started": _dt.datetime.now().isoformat(timespec="seconds")}
        if fcntl is None:  # pragma: no cover - Windows
            return self._acquire_exclusive_create(info)
        for _ in range(100):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = self._read(fd)
                os.close(fd)
                raise self._busy(holder) from None
            try:  # the holder we waited on may have removed the file: lock the file that is there
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            old = self._read(fd)
            if old:
                self.stale = old
                logger.info("%s: taking over the lock left by %s, which is no longer running", self.target,
                            self._describe(old))
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, json.dumps(info).encode())
            self.fd = fd
            return self
        raise self._busy({})  # pragma: no cover - the lock file kept changing

    def _acquire_exclusive_create(self, info):  # pragma: no cover - Windows
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                try:
                    with open(self.path) as fh:
                        holder = json.loads(fh.read() or "{}")
                except (OSError, ValueError):
                    holder = {}
                if holder.get("host") == socket.gethostname() and not _alive(holder.get("pid")):
                    self.stale = holder
                    os.unlink(self.path)
                    continue
                raise self._busy(holder) from None
            os.write(fd, json.dumps(info).encode())
            self.fd = fd
            return self
        raise self._busy({})

    def release(self):
        if self.fd is None:
            return
        try:
            os.unlink(self.path)  # while still holding it: a waiting process re-checks the inode
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


def _alive(pid) -> bool:  # pragma: no cover - used without fcntl only
    try:
        os.kill(int(pid), 0)
    except (OSError, TypeError, ValueError):
        return False
    return True


# --------------------------------------------------------------------------- the protocol
def _hold_signals(held, previous):
    """Replace the handlers of SIGINT and SIGTERM (main thread) by one that appends ``(signum, frame)`` to
    ``held``; each previous handler goes into the dict ``previous`` before it is replaced, so that a signal between
    the two leaves nothing to restore unrecorded (:func:`_restore_signals`)."""
    def hold(signum, frame):  # pragma: no cover - exercised by the fault tests
        held.append((signum, frame))

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.getsignal(sig)
        signal.signal(sig, hold)


def _restore_signals(previous):
    """Put back the handlers that :func:`_hold_signals` recorded (None: installed outside Python, then SIG_DFL)."""
    for sig, handler in previous.items():
        signal.signal(sig, signal.SIG_DFL if handler is None else handler)


@contextlib.contextmanager
def signals_deferred():
    """SIGINT and SIGTERM that arrive in the block are delivered when it ends, to the handlers in place before it
    (main thread; elsewhere the block runs as it is): the block — a write and the record that it was made — is
    not cut in two. A previous handler that is Python's (the commands' own, ``default_int_handler``) is called;
    ``SIG_DFL`` re-sends the signal; ``SIG_IGN`` drops it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held, previous = [], {}
    try:
        _hold_signals(held, previous)
        yield
    finally:
        _restore_signals(previous)
    if held:
        signum, frame = held[0]
        handler = previous.get(signum)
        if callable(handler):
            handler(signum, frame)
        elif handler in (None, signal.SIG_DFL):
            os.kill(os.getpid(), signum)


class SafeOutput:
    """Context manager implementing the write protocol for one output file.

    Parameters
    ----------
    path : str or Path
        Target file ``X.h5``.
    overwrite : bool, keyword-only
        Replace an existing ``X.h5`` (at the end of the run, atomically).
    resume : bool, keyword-only
        Continue from the checkpoint ``X.checkpoint.h5`` (or an unfinished ``X.h5``).
    checkpoints : bool, keyword-only
        Whether the command writes checkpoints (``False``: lock and final replace only).
    option : str, keyword-only
        Option naming the output in messages (``--output``).

    Attributes
    ----------
    path : Path
        The target.
    checkpoint : Path
        Where the command writes its checkpoints (:func:`checkpoint_path`).
    resume_from : Path or None
        File holding the checkpoint to continue (``--resume``), or None.
    finished : bool
        ``--resume`` found a finished target and no checkpoint: the command checks its options
        (:meth:`same_finished_run`) and has nothing to do when they are the same; with
        ``--overwrite`` and other options (or a target it cannot use), it starts anew
        (``finished`` becomes False).

    Raises
    ------
    UsageError
        On entry: unwritable location; existing target without ``--overwrite``/``--resume``;
        a checkpoint without ``--resume``/``--overwrite``; ``--resume`` of a checkpoint whose
        run would replace an existing target, without ``--overwrite``.
    OutputBusy
        Another process holds the lock.
    ResultFileError
        The target is locked by another program (HDF5 file lock).
    """

    def __init__(self, path, *, overwrite=False, resume=False, checkpoints=True, option="--output"):
        self.path = Path(path)
        self.overwrite = bool(overwrite)
        self.resume = bool(resume)
        self.checkpoints = bool(checkpoints)
        self.option = option
        self.checkpoint = checkpoint_path(self.path)
        self.resume_from = None
        self.finished = False
        self.committed = False
        self._lock = _Lock(self.path, option=option)
        self._held = []  # (signum, frame) of the signals that arrived while the result was written (see finish)
        self._previous_handlers = None

    # -- entry: validate, lock, decide
    def __enter__(self) -> "SafeOutput":
        check_h5_suffix(self.path, option=self.option)
        check_output_directory(self.path, option=self.option)
        self._lock.acquire()
        try:
            self._remove_stale_temporaries()
            self._decide()
        except BaseException:
            self._lock.release()
            raise
        return self

    def _decide(self):
        opt, path, ck = self.option, self.path, self.checkpoint
        has_ck = self.checkpoints and ck.exists()
        exists = path.exists()
        legacy = exists and self.checkpoints and path.suffix.lower() in (".h5", ".hdf5") and _is_unfinished(path, opt)
        if exists and not legacy and path.suffix.lower() in (".h5", ".hdf5"):
            _is_unfinished(path, opt)  # a target held open for writing by another program is refused
        if self.resume:
            if has_ck:
                if exists and not legacy and not self.overwrite:
                    raise UsageError(f"{opt}: {path} exists and the interrupted run in {ck} replaces it when it "
                                     "finishes; add --overwrite to continue it (keep --resume)")
                self.resume_from = ck
            elif legacy:
                self.resume_from = path
            elif exists:
                self.finished = True
            else:
                logger.info("%s: no checkpoint %s of an interrupted run; starting a new run", opt, ck)
            return
        if has_ck or legacy:
            where = ck if has_ck else path
            if not self.overwrite:
                raise UsageError(f"{opt}: {where} holds an interrupted run; pass --resume to continue it or "
                                 "--overwrite to start again")
            if has_ck:
                logger.warning("%s: discarding the checkpoint %s of an interrupted run (--overwrite)", opt, ck)
                ck.unlink()
            return
        if exists and not self.overwrite:
            raise UsageError(f"{opt}: {path} exists; pass --overwrite to replace it")

    def _remove_stale_temporaries(self):
        """Temporary files of the target or its checkpoint left by a killed writer (we hold the lock)."""
        parent = self.path.parent if str(self.path.parent) else Path(".")
        stale = [p for name in (self.path.name, self.checkpoint.name) for p in parent.glob(f".{name}.*.tmp")]
        for p in stale:
            p.unlink(missing_ok=True)
        if stale:
            logger.info("%s: removed %d temporary file(s) left by an interrupted write", self.option, len(stale))

    #: reasons of a ResultFileError of the finished target that --resume --overwrite does not start anew over
    _KEEP_REASONS = ("locked", "permission", "directory", "missing")

    def same_finished_run(self, read_stored, wanted: dict) -> bool:
        """``--resume`` found a finished target and no checkpoint: whether it holds this run.

        Parameters
        ----------
        read_stored : callable
            Returns the options stored in the target (called once; may raise
            :class:`ResultFileError`).
        wanted : dict
            The options of this run.

        Returns
        -------
        bool
            True when the stored options equal ``wanted`` (nothing to do: the target is left as it
            is). False with ``--overwrite`` when they differ or the target cannot be used (another
            command's, another version's, damaged): there is no checkpoint of these options, so the
            run starts anew (``finished`` is set to False) and replaces the target atomically when it
            finishes, as ``--overwrite`` alone does.

        Raises
        ------
        UsageError
            Other options, without ``--overwrite`` (the keys that differ are named).
        ResultFileError
            The target cannot be read, without ``--overwrite`` (or it is locked, unreadable for
            permissions, or a directory).
        """
        try:
            stored = read_stored()
        except ResultFileError as exc:
            if not self.overwrite or exc.reason in self._KEEP_REASONS:
                raise
            logger.warning("%s: %s; no checkpoint of an interrupted run: starting a new run (--overwrite replaces "
                           "%s when it finishes)", self.option, exc, self.path)
            self.finished = False
            return False
        try:
            self.refuse_other_options(stored, wanted, source=self.path)
        except UsageError:
            if not self.overwrite:
                raise
            logger.info("%s: %s was computed with other options and there is no checkpoint of this run: starting "
                        "a new run (--overwrite replaces it when it finishes)", self.option, self.path)
            self.finished = False
            return False
        return True

    def refuse_other_options(self, stored: dict, wanted: dict, *, source=None) -> None:
        """Raise :class:`UsageError` (``--resume``) if ``stored`` and ``wanted`` options differ.

        Values are compared as JSON; the message lists the keys that differ."""
        a = json.loads(json.dumps(stored, sort_keys=True, default=str))
        b = json.loads(json.dumps(wanted, sort_keys=True, default=str))
        diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        if diff:
            raise UsageError(f"--resume: {source or self.resume_from or self.path} was computed with different "
                             f"options ({', '.join(diff)}); use the same options or another {self.option}")

    # -- end
    def commit(self) -> None:
        """The target holds the finished result: remove the checkpoint."""
        self.committed = True
        if self.checkpoints and self.checkpoint.exists():
            self.checkpoint.unlink()

    def finish(self, write) -> None:
        """Write the finished result with ``write()`` (an atomic replace of :attr:`path`) and :meth:`commit`, as
        one step for signals: from the call until the ``with`` block ends, SIGINT and SIGTERM are held (main
        thread). A signal that arrives then is dropped, with a log line, once the result is committed — the run
        is complete, and the command ends normally; were it raised, an interrupt between the replace and the
        commit, or after them, would report an unchanged target and keep a checkpoint of a finished run.
        Exceptions of ``write`` (a full disk) propagate, the checkpoint kept (a held signal is then dropped: the
        error is what the command reports). A command with work of its own after the write (``replica-sgd``
        adds reference levels) uses :func:`signals_deferred` around the write instead."""
        if self._previous_handlers is None and threading.current_thread() is threading.main_thread():
            self._previous_handlers = {}
            _hold_signals(self._held, self._previous_handlers)
        write()
        self.commit()

    def interrupted_note(self, kept: str | None) -> str:
        """Message for an interrupted run: what was kept where, and what to run next.

        Parameters
        ----------
        kept : str or None
            What the checkpoint holds (``"12 solves"``), or None if nothing was saved.
        """
        target = (f"{self.path} unchanged" if self.path.exists() else f"{self.path} not written")
        if kept and self.checkpoint.exists():
            return f"{kept} kept in {self.checkpoint}; {target}; continue with the same command and --resume"
        if self.resume_from is not None and self.resume_from.exists():
            return f"{self.resume_from} kept as it was; {target}; continue with the same command and --resume"
        return f"nothing saved; {target}"

    def __exit__(self, exc_type, exc, tb):
        try:
            self._lock.release()
        finally:  # the held signals are let through only once the lock is released (the command has finished)
            if self._previous_handlers is not None:
                if self._held and self.committed:
                    logger.info("%s: %s arrived after %s was written; the result is complete", self.option,
                                signal.Signals(self._held[0][0]).name, self.path)
                _restore_signals(self._previous_handlers)
                self._previous_handlers = None
        return False
