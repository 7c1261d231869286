"""Published reference data shipped with the package (``data/reference/``).

Every file is a CSV table preceded by ``# key: value`` comment lines naming the paper, the
public repository and file it comes from, the normalization in this package's convention and
the stated accuracy (``data/reference/README.md`` is the index).  The files stay in
``data/reference/`` of the repository and are installed as package data
(``replica_hciz_data/reference``, read with :mod:`importlib.resources` through
:func:`hciz.package_data.data_dir`), so a clone, an editable install and a wheel find them;
set ``REPLICA_HCIZ_REFERENCE`` to use another directory.

Examples
--------
>>> from replica import reference
>>> table = reference.read("barbier2025_shallow/hmc_relu_delta0.1_gamma0.5_readout_ones_d150.csv")
>>> table.columns["alpha"][:3]
array([0.5, 1. , 1.5])
>>> table.meta["repository"]
'https://github.com/Minh-Toan/extensive-width-NN'
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hciz.package_data import data_dir

__all__ = ["Table", "reference_dir", "path", "read", "read_csv"]


@dataclass
class Table:
    """One reference table.

    Attributes
    ----------
    columns : dict of str to ndarray
        One float array of length n_rows per column, in file order.
    meta : dict of str to str
        The ``# key: value`` header lines (``paper``, ``repository``, ``file``, ``content``,
        ``columns``, ``normalization``, ``accuracy``, ``note``); continuation lines are joined.
    path : Path
        The file read.
    """

    columns: dict
    meta: dict = field(default_factory=dict)
    path: Path | None = None

    def __getitem__(self, name):
        return self.columns[name]


def reference_dir() -> Path:
    """Directory of the reference data: ``$REPLICA_HCIZ_REFERENCE``, else the installed package
    data (``data/reference/`` of the repository).

    Raises
    ------
    FileNotFoundError
        The directory does not exist (``REPLICA_HCIZ_REFERENCE`` set to a missing directory, or
        an install without its package data).
    """
    env = os.environ.get("REPLICA_HCIZ_REFERENCE")
    root = Path(env) if env else data_dir() / "reference"
    if not root.is_dir():
        source = "REPLICA_HCIZ_REFERENCE" if env else "the package data (reinstall replica-hciz)"
        raise FileNotFoundError(f"reference data directory {root} not found: check {source}")
    return root


def path(name: str) -> Path:
    """Full path of the reference file ``name`` (relative to :func:`reference_dir`).

    Raises
    ------
    FileNotFoundError
        No such file; the message lists the available ones.
    """
    root = reference_dir()
    p = root / name
    if not p.is_file():
        available = sorted(str(f.relative_to(root)) for f in root.rglob("*.csv"))
        raise FileNotFoundError(f"no reference file {name!r} in {root}; available: {', '.join(available)}")
    return p


def read_csv(file) -> Table:
    """Read a CSV table with optional leading ``#`` comment lines (``# key: value``).

    Parameters
    ----------
    file : str or Path
        Any CSV file whose first non-comment line is a header row; the other rows numeric.

    Returns
    -------
    Table

    Raises
    ------
    ValueError
        Unreadable or empty file, rows of the wrong length, or non-numeric entries.
    """
    file = Path(file)
    try:
        with open(file, newline="") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {file}: {exc}") from None
    meta, key, body = {}, None, []
    for line in lines:
        if line.startswith("#") and not body:
            text = line[1:].strip()
            head, sep, value = text.partition(":")
            if sep and head and " " not in head.strip() and not line.startswith("#  "):
                key = head.strip()
                meta[key] = value.strip()
            elif key is not None:
                meta[key] += " " + text
            continue
        if line.strip():
            body.append(line)
    if not body:
        raise ValueError(f"{file} has no header row")
    rows = list(csv.reader(body))
    header = [h.strip() for h in rows[0]]
    try:
        values = np.array([[float(x) for x in r] for r in rows[1:]], dtype=float)
    except ValueError:
        raise ValueError(f"{file}: non-numeric entries") from None
    if values.size and values.shape[1] != len(header):
        raise ValueError(f"{file}: rows have {values.shape[1]} fields, header has {len(header)}")
    values = values.reshape(-1, len(header))
    return Table({h: values[:, i] for i, h in enumerate(header)}, meta, file)


def read(name: str) -> Table:
    """Read the reference file ``name`` (e.g. ``"maillard2024_quadratic/line_no_noise_0.5.csv"``).

    Raises
    ------
    FileNotFoundError
        Missing data directory or file.
    ValueError
        Malformed file.
    """
    return read_csv(path(name))
