"""Replica-symmetric free entropies, fixed points, branches, sweeps and I/O."""

__version__ = "0.1.0"
