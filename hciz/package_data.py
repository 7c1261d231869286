"""Where the data files shipped with the package are: :func:`data_dir`.

The files live in ``data/`` of the repository and are installed as the package
``replica_hciz_data`` (``package-dir`` in ``pyproject.toml``): a wheel, a plain ``pip install .``
and an editable install all find them with :mod:`importlib.resources`. Running from a clone
without installing (``PYTHONPATH=.``) falls back to ``<repository>/data``.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

__all__ = ["DATA_PACKAGE", "data_dir"]

DATA_PACKAGE = "replica_hciz_data"


def data_dir() -> Path:
    """Directory of the shipped data (``reference/``, ``rectangular_table_*.npz``, ``*.json``).

    Returns
    -------
    Path
        ``importlib.resources.files("replica_hciz_data")`` when that package is installed (a
        directory on disk: the package is not zip-safe), else ``<repository>/data`` next to the
        source tree. The directory may be missing only in a partial copy of the packages.
    """
    try:
        root = importlib.resources.files(DATA_PACKAGE)
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[1] / "data"
    return Path(str(root))
