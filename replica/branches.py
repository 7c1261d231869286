"""The continuation's public names under their former module (:mod:`replica.continuation` holds the code).

Kept for code written before the continuation became a package: ``from replica.branches import sweep``
works as before. New code imports from :mod:`replica.continuation`.
"""

from __future__ import annotations

from .continuation import (BranchData, ContinuationSettings, SweepResult, jacobian, learned_layers,
                           remembered_jacobians, stability, sweep)

__all__ = ["BranchData", "SweepResult", "sweep", "stability", "jacobian", "learned_layers", "remembered_jacobians",
           "ContinuationSettings"]
