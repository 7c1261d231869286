"""The continuation's problem: the unknowns of a model's packed point, its overlaps, the vectorized map and the
result record of a corrected point (the fixed-point residual ``F(x) − x`` of a model at α)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine import DEFAULT_ATOL, DEFAULT_RTOL, STATUS_MESSAGES, FixedPointResult
from ..interface import hook
from .settings import active

__all__ = ["unknowns", "is_labelled", "lower_bounds", "overlaps_of", "is_universal", "is_found", "evaluate_many",
           "near_evaluator", "CORRECTION_STATUSES", "Correction", "converged_result", "tolerances"]


def unknowns(model, x) -> np.ndarray:
    """Entries of the packed vector that the map moves (the continuation's unknowns)."""
    x = np.asarray(x)
    return np.asarray(hook(model, "moving_indices")(x), dtype=int)


def is_labelled(model, x) -> bool:
    """Whether the curve through ``x`` is followed as one with labels that may change along it
    (damped steps, :func:`trace_labelled`): the packed vector holds labels besides the unknowns
    and the model does not declare them constant along a curve (``model.fixed_labels``; two hidden
    layers with the profile solver, whose selection and rule level are fixed per curve, are
    continued by the Newton corrector on their global unknowns)."""
    return unknowns(model, x).size < np.size(x) and not hook(model, "fixed_labels")


def lower_bounds(model, x):
    """``(indices, lower)`` of the entries of the packed ``x`` bounded below by the model's domain (the model's hook
    ``lower_bounds``), or None for a model without such bounds."""
    bounds = hook(model, "lower_bounds")
    if bounds is None:
        return None
    idx, lower = bounds(np.asarray(x))
    return np.asarray(idx, dtype=int), np.asarray(lower, dtype=float)


def overlaps_of(result) -> np.ndarray:
    return np.asarray(result.info["state"].overlaps, dtype=float)


def is_universal(result) -> bool:
    return float(np.max(np.abs(overlaps_of(result)), initial=0.0)) < active().universal_tol


def is_found(result) -> bool:
    return "state" in result.info and result.converged and not is_universal(result)


def evaluate_many(model, alpha, points) -> np.ndarray:
    """The map at every row of ``points`` (shape (B, p)): one call of the model's ``update_many`` hook
    (a vectorized evaluation) or, without it, one :meth:`update` per row. Shape (B, p)."""
    many = hook(model, "update_many")
    if many is not None:
        return np.asarray(many(alpha, points), dtype=float)
    return np.array([np.asarray(model.update(alpha, y), dtype=float) for y in points])


def near_evaluator(model, alpha, x):
    """``f(alpha', z)``: the map at points next to ``(alpha, x)`` for Jacobian–vector products, from the model's
    ``near_map`` hook (an error of the order of the forward difference's own) or ``update``."""
    near = hook(model, "near_map")
    if near is not None:
        return near(alpha, np.asarray(x, dtype=float))
    return model.update


#: what the status of a :class:`Correction` says
CORRECTION_STATUSES = {
    "converged": "the residual test passed and the state was computed",
    "not_finite": "the prediction, an iterate, a step or the map's value is not finite",
    "error": "the map, its Jacobian or the linear solve raised (ValueError, ZeroDivisionError, LinAlgError …)",
    "no_step": "the linear solve gave no step (GMRES result not finite, a singular factorization)",
    "slow": "a chord step was not ``chord_contraction`` times shorter than the one before",
    "residual": "the final point fails the residual test",
    "max_iter": "no convergence within the iteration budget",
    "no_state": "the point converged but its state cannot be computed",
}


@dataclass(frozen=True)
class Correction:
    """Outcome of a corrector (:mod:`replica.continuation.correctors`): never None, always a status.

    Attributes
    ----------
    status : str
        A key of :data:`CORRECTION_STATUSES`.
    result : FixedPointResult or None
        The corrected point with its state in ``info["state"]`` when ``status == "converged"``, else None.
    evaluations : int
        Map evaluations the corrector made (where it counts them; 0 otherwise).
    """

    status: str
    result: FixedPointResult | None = None
    evaluations: int = 0

    def __post_init__(self):
        if self.status not in CORRECTION_STATUSES:
            raise ValueError(f"unknown corrector status {self.status!r}")
        if (self.result is not None) != (self.status == "converged"):
            raise ValueError("a Correction carries a result exactly when it converged")

    @property
    def converged(self) -> bool:
        """Whether the corrector converged (``result`` is then a point of the curve)."""
        return self.status == "converged"


def converged_result(model, alpha, y, iterations, residual, evaluations) -> Correction:
    """The :class:`Correction` of a point ``y`` that passed the residual test: ``converged`` with the result
    (its state attached), or ``no_state`` when the state cannot be computed."""
    try:
        st = model.state(alpha, y)
    except (ValueError, ZeroDivisionError, FloatingPointError):
        return Correction("no_state", evaluations=evaluations)
    res = FixedPointResult(y, True, "converged", STATUS_MESSAGES["converged"], iterations, residual, 0.0,
                           "continuation", {"evaluations": evaluations, "polished": True})
    res.info["state"] = st
    return Correction("converged", res, evaluations)


def tolerances(solve_kw) -> tuple:
    """``(atol, rtol)`` of the residual test (:func:`replica.engine.scaled_residual`) from the solver options
    ``solve_kw`` (defaults those of :func:`replica.engine.solve_fixed_point`)."""
    return float(solve_kw.get("atol", DEFAULT_ATOL)), float(solve_kw.get("rtol", DEFAULT_RTOL))
