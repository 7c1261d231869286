"""The package's matplotlib style: one style file for every figure (``replica/workflow/replica.mplstyle``).

Kept apart from :mod:`replica.workflow.plotting` so that every figure module (the sweep plots, the
SGD plots of :mod:`replica.workflow.sgd_plots`, the scripts) reads it without importing the plotting of
the other layer.
"""

from __future__ import annotations

import contextlib

__all__ = ["STYLE_FILE", "figure_style", "style_path"]

#: the package style file (package data of :mod:`replica.workflow`, read with importlib.resources):
#: every figure of the package is drawn and saved inside :func:`figure_style`
STYLE_FILE = "replica.mplstyle"


def _mpl():
    """``(matplotlib, matplotlib.pyplot)`` with a non-interactive backend unless one is already running."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps", "cairo", "module://matplotlib_inline"):
        try:
            matplotlib.use("Agg", force=False)
        except Exception:  # pragma: no cover - interactive backend already running
            pass
    import matplotlib.pyplot as plt

    return matplotlib, plt


def style_path():
    """The package matplotlib style file (``replica/workflow/replica.mplstyle``) as a
    :mod:`importlib.resources` traversable."""
    from importlib.resources import files

    return files(__package__) / STYLE_FILE


@contextlib.contextmanager
def figure_style():
    """Context in which every figure of the package is created, drawn and saved: the package style
    (:func:`style_path`) on top of the current rc parameters."""
    from importlib.resources import as_file

    matplotlib, _ = _mpl()
    with as_file(style_path()) as path, matplotlib.style.context(str(path)):
        yield
