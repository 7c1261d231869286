"""On-disk cache of the tables of :class:`hciz.SymmetricChannel`.

A table depends only on ``(γ, readout law, resolution, exact law)`` and on the algorithm
that built it, so it is stored once per key as an ``.npz`` file and reused by later
processes.

Location
--------
``$REPLICA_HCIZ_CACHE`` if set (the value ``off`` — or ``0``, ``no``, ``false``,
``none`` — disables the cache), else ``$XDG_CACHE_HOME/replica-hciz``, else
``~/.cache/replica-hciz``.

Files are named by a SHA-256 digest of the key, which includes :data:`CACHE_VERSION`
(bumped whenever the table format or the algorithm behind it changes, so stale files are
never read); the key is also stored inside the file and checked on load.  Writes are
atomic (temporary file in the same directory, then :func:`os.replace`); an unreadable,
corrupted or mismatching file is ignored (and later overwritten by a rebuilt table), and
any I/O error only disables caching for that call.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["CACHE_VERSION", "ENV_VAR", "cache_dir", "table_key", "load_table", "save_table"]

logger = logging.getLogger(__name__)

CACHE_VERSION = 1
ENV_VAR = "REPLICA_HCIZ_CACHE"
_OFF = {"off", "0", "no", "false", "none"}
_UNWRITABLE = set()  # directories already reported as unwritable in this process


def cache_dir():
    """Directory of the table cache, or ``None`` when caching is disabled.

    Returns
    -------
    pathlib.Path or None
        ``$REPLICA_HCIZ_CACHE``, ``$XDG_CACHE_HOME/replica-hciz`` or
        ``~/.cache/replica-hciz`` (not created here); ``None`` if ``$REPLICA_HCIZ_CACHE``
        is one of ``off``, ``0``, ``no``, ``false``, ``none`` (any case).
    """
    value = os.environ.get(ENV_VAR)
    if value is not None and value.strip():
        if value.strip().lower() in _OFF:
            return None
        return Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "replica-hciz"


def table_key(gamma, values, weights, resolution, law):
    """Canonical text key of a symmetric-channel table.

    Parameters
    ----------
    gamma : float
        Width ratio ``γ > 0``.
    values, weights : ndarray, shape (K,)
        Readout law, already normalized by :func:`hciz.spectral.validate_readout_law`.
    resolution : int
        Chebyshev nodes per piece.
    law : str or None
        Exact continuous law (``"gaussian"``, ``"uniform"``) or ``None``.

    Returns
    -------
    str
        Exact (``float.hex``) representation of all inputs and :data:`CACHE_VERSION`.
    """
    v = ",".join(float(x).hex() for x in np.asarray(values, dtype=float))
    w = ",".join(float(x).hex() for x in np.asarray(weights, dtype=float))
    return (f"symmetric-v{CACHE_VERSION};gamma={float(gamma).hex()};values={v};"
            f"weights={w};resolution={int(resolution)};law={law}")


def _path(directory, key):
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    return directory / f"symmetric-{digest}.npz"


def load_table(key, names):
    """Arrays stored under ``key``, or ``None`` (disabled, missing, corrupted, stale).

    Parameters
    ----------
    key : str
        From :func:`table_key`.
    names : sequence of str
        Arrays that must be present.

    Returns
    -------
    dict[str, ndarray] or None
    """
    directory = cache_dir()
    if directory is None:
        return None
    path = _path(directory, key)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["key"]) != key:
                raise ValueError("key mismatch")
            out = {n: np.array(data[n], dtype=float, order="C") for n in names}
        if not all(np.all(np.isfinite(a)) for a in out.values()):
            raise ValueError("non-finite entries")
        return out
    except Exception as exc:  # noqa: BLE001 - any unreadable file is simply rebuilt
        logger.info("HCIZ table cache file %s is not a valid table (%s: %s); rebuilding it", path,
                    type(exc).__name__, str(exc).split(".")[0][:80])
        return None


def save_table(key, arrays):
    """Store ``arrays`` under ``key`` atomically; do nothing if caching is disabled.

    Parameters
    ----------
    key : str
        From :func:`table_key`.
    arrays : dict[str, array_like]

    Returns
    -------
    pathlib.Path or None
        The file written, or ``None`` (disabled or I/O error, logged at DEBUG).
    """
    directory = cache_dir()
    if directory is None:
        return None
    path = _path(directory, key)
    tmp = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=path.stem + ".", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, key=np.array(key), **arrays)
        os.replace(tmp, path)
        return path
    except OSError as exc:
        # once per directory: the run goes on, but every later run will rebuild the table
        if directory not in _UNWRITABLE:
            _UNWRITABLE.add(directory)
            logger.warning("HCIZ table cache not written to %s (%s); tables are rebuilt on every run "
                           "(set %s to a writable directory, or to 'off')", directory, exc, ENV_VAR)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        return None
