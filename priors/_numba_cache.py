"""numba's on-disk cache of compiled kernels (``cache=True``) for read-only installs.

numba keeps compiled kernels next to the source (``__pycache__``) or in the user's cache
directory (``~/.cache/numba``). When neither is writable — a package installed read-only on a
shared cluster or in a container, with an unwritable ``HOME`` — numba refuses to decorate a
``cache=True`` function (``RuntimeError: cannot cache function …: no locator available``) and
the import fails. :func:`install` adds a last locator to numba's list, tried only after numba's
own ones failed, for the kernels of this project only: a per-user directory in the system's
temporary directory, or, when even that is not writable, no cache at all (kernels are compiled
on every run). Either fallback is announced by one INFO line. ``NUMBA_CACHE_DIR`` still takes
precedence, as always in numba.

The lazy kernels of :mod:`priors._kernels` import this module before wrapping their first
kernel; code that uses numba directly (``replica/simulations/sgd.py``) imports it first.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from numba.core import caching

__all__ = ["install", "fallback_directory"]

logger = logging.getLogger(__name__)

#: source directories whose kernels the fallback serves (the project's packages)
_PROJECT_ROOT = Path(__file__).resolve().parent.parent
_PACKAGES = ("priors", "hciz", "replica")


def fallback_directory() -> Path:
    """Per-user cache directory in ``$TMPDIR`` (if set) or the system's temporary directory."""
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    base = os.environ.get("TMPDIR")
    if not base:
        try:
            base = tempfile.gettempdir()
        except OSError:  # no writable temporary directory at all
            base = os.curdir
    return Path(base) / f"replica-hciz-numba-cache-{uid}"


def _ours(py_file) -> bool:
    try:
        rel = Path(py_file).resolve().relative_to(_PROJECT_ROOT)
    except (ValueError, OSError):
        return False
    return rel.parts[:1] in tuple((p,) for p in _PACKAGES)


_BASE = getattr(caching, "UserProvidedCacheLocator", None) or caching._UserProvidedCacheLocator


class _TemporaryCacheLocator(_BASE):
    """Cache in :func:`fallback_directory` (tried after numba's own locators)."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = str(fallback_directory() / self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _ours(py_file) or not os.path.exists(py_file):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        _announce(f"numba kernels cached in {fallback_directory()} (the install directory and the user "
                  "cache are read-only; set NUMBA_CACHE_DIR to choose)")
        return self


class _NoCacheLocator(_TemporaryCacheLocator):
    """Last resort: nothing is writable; kernels are compiled on every run (saves are skipped)."""

    null = True

    def ensure_cache_path(self):
        pass

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _ours(py_file) or not os.path.exists(py_file):
            return None
        _announce("numba kernels are compiled on every run: no writable cache directory (install directory, "
                  f"user cache and {fallback_directory()} are read-only; set NUMBA_CACHE_DIR to choose one)")
        return cls(py_func, py_file)


_ANNOUNCED = set()


def _announce(message: str) -> None:
    if message not in _ANNOUNCED:
        _ANNOUNCED.add(message)
        logger.info(message)


def _save_unless_null(save):
    def save_overload(self, sig, data):
        if getattr(self._impl.locator, "null", False):
            return None
        return save(self, sig, data)

    save_overload.__wrapped__ = save
    return save_overload


def install() -> None:
    """Append the fallback locators to numba's list (idempotent)."""
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # renamed in numba 0.62
    classes = impl._locator_classes
    for cls in (_TemporaryCacheLocator, _NoCacheLocator):
        if cls not in classes:
            classes.append(cls)
    if not hasattr(caching.Cache.save_overload, "__wrapped__"):
        caching.Cache.save_overload = _save_unless_null(caching.Cache.save_overload)


install()
