"""Modules imported at their first use (start-up, docs/architecture.md).

:func:`lazy_import` returns the module object at once and runs it at the first attribute
access, with the standard library's :class:`importlib.util.LazyLoader`. Used for
``scipy.special`` (about 0.1–0.3 s to import, needed only by some priors, activations and
readout laws) and ``h5py`` (:mod:`replica.workflow.io`: not needed by ``--help`` or a
rejected option).
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["lazy_import"]


def lazy_import(name: str):
    """The module ``name``, executed at its first attribute access (already imported: itself).

    Raises
    ------
    ModuleNotFoundError
        No such module.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
