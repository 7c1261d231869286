"""numba kernels that cost nothing until they are used: :func:`kernel` (a lazy ``numba.njit``).

Importing numba takes about half a second and loading one cached kernel a few
milliseconds, which dominated the start-up of every command (docs/architecture.md,
"Start-up"). A function decorated with :func:`kernel` is a :class:`LazyKernel`: numba is
imported, the on-disk cache fallback of :mod:`priors._numba_cache` installed, and the kernel
compiled — or, usually, loaded from numba's cache (``cache=True``) — at its first call. Kernels
called by a kernel are compiled first and replace their lazy wrappers in the module's
namespace, so that numba types them as ordinary jitted functions.

``warmup=True`` (small scalar kernels only) runs the plain Python function while a budget of
Python-mode work shared by the process lasts (4000 units: one unit per call from Python, or
the length of the argument ``loop_arg`` for loops over an array; calls between kernels are
part of their caller's unit), unless numba is already imported. A short run — a 50-point
universal sweep evaluates the channel table about 1,400 times — then never pays for numba,
and a long one switches to the compiled kernel after a bounded cost (about 0.1 s). The
Python function is the kernel's own source, so both paths compute the same operations in
the same order.
"""

from __future__ import annotations

import functools
import sys
import threading

__all__ = ["kernel", "LazyKernel", "compile_all"]

#: Python-mode work left for warm-up kernels in this process (shared: numba's import is paid once)
_BUDGET = {"left": 4000}
_PYTHON_MODE = threading.local()  # depth of kernels running as Python in this thread
_LOCK = threading.Lock()
_ALL: list = []


class LazyKernel:
    """A ``numba.njit`` function compiled (or loaded from numba's cache) at its first call.

    Attributes
    ----------
    py_func : callable
        The plain Python function.
    options : dict
        Options of ``numba.njit`` (``cache=True``, ``error_model``, …).
    """

    def __init__(self, func, options, warmup=False, loop_arg=None):
        functools.update_wrapper(self, func)
        self.py_func = func
        self.options = dict(options)
        self._warmup = bool(warmup)
        self._loop_arg = loop_arg
        self._dispatcher = None
        _ALL.append(self)

    @property
    def compiled(self) -> bool:
        """Whether the numba dispatcher exists (numba imported, kernel wrapped)."""
        return self._dispatcher is not None

    def compile(self):
        """The numba dispatcher (imports numba and wraps the kernel on first use)."""
        with _LOCK:  # one dispatcher per kernel, also with threads
            if self._dispatcher is None:
                self._wrap()
        return self._dispatcher

    def _wrap(self):
        if self._dispatcher is None:
            import numba

            from . import _numba_cache  # noqa: F401 - fallback cache locators, before the first kernel

            namespace = self.py_func.__globals__
            for name in self.py_func.__code__.co_names:  # callees first: numba must see dispatchers
                callee = namespace.get(name)
                if isinstance(callee, LazyKernel) and callee is not self:
                    callee._wrap()  # the lock is held
                    namespace[name] = callee._dispatcher
            self._dispatcher = numba.njit(**self.options)(self.py_func)
            if namespace.get(self.__name__) is self:
                namespace[self.__name__] = self._dispatcher

    def __call__(self, *args):
        if self._dispatcher is not None:
            return self._dispatcher(*args)
        depth = getattr(_PYTHON_MODE, "depth", 0)
        if depth:  # called by a kernel running as Python: its cost is counted there
            return self.py_func(*args)
        if self._warmup and "numba" not in sys.modules:
            cost = 1 if self._loop_arg is None else len(args[self._loop_arg])
            if cost <= _BUDGET["left"]:
                _BUDGET["left"] -= cost
                _PYTHON_MODE.depth = 1
                try:
                    return self.py_func(*args)
                finally:
                    _PYTHON_MODE.depth = 0
        return self.compile()(*args)

    def __repr__(self):
        return f"<LazyKernel {self.__module__}.{self.__qualname__} compiled={self.compiled}>"


def kernel(func=None, *, warmup=False, loop_arg=None, **options):
    """Decorator: a lazy ``numba.njit(**options)`` (module docstring).

    Parameters
    ----------
    warmup : bool, keyword-only
        Run as Python while the process's warm-up budget lasts (False: compile at the first call).
    loop_arg : int, optional, keyword-only
        Index of the array argument whose length is the work of one call (warm-up accounting).
    **options
        Passed to ``numba.njit`` (e.g. ``cache=True``, ``error_model="numpy"``).
    """
    if func is None:
        return lambda f: LazyKernel(f, options, warmup, loop_arg)
    return LazyKernel(func, options, warmup, loop_arg)


def compile_all() -> int:
    """Compile (or load from cache) every kernel defined so far; returns how many."""
    for k in list(_ALL):
        k.compile()
    return len(_ALL)
