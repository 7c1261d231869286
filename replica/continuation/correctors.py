"""Newton-type correctors of the continuation: dense Newton with LU factors or MINPACK, matrix-free
Newton–Krylov, the chord corrector with Broyden updates, and the test of an accepted step."""

from __future__ import annotations

import math

import numpy as np

from ..engine import newton_lu, scaled_residual
from ..interface import hook
from .jacobians import jacobian
from .operators import difference_operator, gmres_solve, matrix_free
from .problem import Correction, converged_result, is_universal, overlaps_of, tolerances, unknowns
from .settings import active

__all__ = ["newton_krylov", "correct", "chord_correct", "check_step"]


def newton_krylov(model, alpha, x_pred, solve_kw, *, max_iter=None):
    """Matrix-free Newton corrector: ``F(x) = x`` from ``x_pred`` at ``alpha``, each Newton step solved by
    GMRES with Jacobian–vector products (:func:`difference_operator`; inexact Newton, relative
    residual ``krylov_rtol``). For models with many order parameters the cost is the number of
    Krylov vectors, about the number of eigenvalues of ``F_x`` away from 0, not the number of unknowns.
    Stops when the residual test of :func:`replica.engine.solve_fixed_point` passes (``atol``, ``rtol`` of
    ``solve_kw``). Returns a :class:`~replica.continuation.problem.Correction`: ``max_iter`` after
    ``max_iter`` iterations, ``not_finite`` when an iterate or the map is not finite, ``no_step`` when GMRES gives
    no finite step, ``error`` when the map raises. A model
    with the hook ``project`` (a bounded domain, e.g. the fronts of
    :class:`~replica.models.deep_fronts.DeepFrontModel`) has every iterate projected onto it."""
    if max_iter is None:
        max_iter = active().krylov_newton_iter
    atol, rtol = tolerances(solve_kw)
    y = np.array(x_pred, dtype=float)
    idx = unknowns(model, y)
    evaluations = 0
    project = hook(model, "project")
    with np.errstate(all="ignore"):
        for k in range(max_iter):
            try:
                fy = np.asarray(model.update(alpha, y), dtype=float)
                evaluations += 1
                if not (np.all(np.isfinite(fy)) and np.all(np.isfinite(y))):
                    return Correction("not_finite", evaluations=evaluations)
                g = fy - y
                residual = scaled_residual(g, y, atol, rtol)
                if residual <= 1.0:
                    return converged_result(model, alpha, y, k, residual, evaluations)
                op = difference_operator(model, alpha, y, g[idx], idx)
                dy = gmres_solve(op, -g[idx])
                evaluations += op.evaluations[0]
            except (ValueError, ZeroDivisionError, FloatingPointError, np.linalg.LinAlgError):
                return Correction("error", evaluations=evaluations)
            if dy is None:
                return Correction("no_step", evaluations=evaluations)
            y = y.copy()
            y[idx] += dy
            if project is not None:
                y = np.asarray(project(y), dtype=float)
    return Correction("max_iter", evaluations=evaluations)


def correct(model, alpha, x_pred, solve_kw, *, newton_if_small=False):
    """Newton corrector: ``F(x) = x`` from ``x_pred`` at ``alpha`` (where the model has ``update_many``, its
    Jacobians come from one vectorized call each and :func:`replica.engine.newton_lu` solves; else MINPACK
    ``hybr``, at most ``corrector_maxfev`` ``× (p + 1)`` evaluations; matrix-free models,
    :func:`matrix_free`, try :func:`newton_krylov` first, the dense solve where it fails);
    a :class:`~replica.continuation.problem.Correction`, ``converged`` when the point passes the residual test
    of :func:`replica.engine.solve_fixed_point` (``atol``, ``rtol`` of ``solve_kw``).

    ``newton_if_small``: at most ``newton_size`` moving unknowns, Newton on difference Jacobians instead of
    ``hybr`` too (no ``scipy.optimize``), for callers that polish a converged point and reject a result that
    wandered off (:func:`~replica.continuation.curves.trace_curve`). Not the default: from a predicted point
    near a cusp, Newton converges onto the other sheet where ``hybr`` fails (the ReLU fold lines of
    tests/test_phase_lines.py)."""
    atol, rtol = tolerances(solve_kw)
    x_pred = np.asarray(x_pred, dtype=float)
    idx = unknowns(model, x_pred)
    # the moving unknowns: a label may be NaN (the two-layer profile solver's error estimate where no rule in s is
    # refined, e.g. on ``layer_1``), and the map carries it unchanged
    if not np.all(np.isfinite(x_pred[idx])):
        return Correction("not_finite")
    if matrix_free(model, x_pred):
        krylov = newton_krylov(model, alpha, x_pred, solve_kw)
        if krylov.converged:
            return krylov
    jac = None
    if hook(model, "update_many") is not None or (newton_if_small and idx.size <= active().newton_size):
        # Jacobians at the cost of about one evaluation, or of a few: Newton (hybr would need none of its own)
        def jac(z):
            return jacobian(model, alpha, full(z), order=1, indices=idx) - np.eye(idx.size)

    def full(z):
        y = x_pred.copy()
        y[idx] = z
        return y

    def residual_map(z):
        return (np.asarray(model.update(alpha, full(z)), dtype=float) - full(z))[idx]

    with np.errstate(all="ignore"):
        try:
            if jac is not None:  # Newton with LU factors
                z, nfev, njev = newton_lu(residual_map, jac, x_pred[idx],
                                          lambda z, g: scaled_residual(g, z, atol, rtol) <= 1.0)
                if z is None:
                    return Correction("max_iter", evaluations=nfev + idx.size * njev)
            else:
                from scipy import optimize  # lazy: start-up (docs/architecture.md)
                sol = optimize.root(residual_map, x_pred[idx], method="hybr",
                                    options={"xtol": 1e-13, "maxfev": active().corrector_maxfev * (idx.size + 1)})
                z, nfev, njev = sol.x, int(sol.nfev), int(getattr(sol, "njev", 0) or 0)
            y = full(np.asarray(z, dtype=float))
            fy = np.asarray(model.update(alpha, y), dtype=float)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return Correction("error")
        evaluations = nfev + 1 + idx.size * njev  # a Jacobian: p rows
        if not (np.all(np.isfinite(y[idx])) and np.all(np.isfinite(fy[idx]))):
            return Correction("not_finite", evaluations=evaluations)
        residual = _label_safe_residual(fy, y, atol, rtol)[1]
        if not residual <= 1.0:  # NaN too: a label that became NaN or stopped being NaN
            return Correction("residual", evaluations=evaluations)
        return converged_result(model, alpha, y, 0, residual, evaluations)


def _label_safe_residual(fy, y, atol, rtol):
    """``(F(y) − y, its scaled residual)`` over every entry, a label that is NaN in both (no value, carried
    unchanged by the map) counting as unchanged: a label the map changes still fails the test."""
    both = np.isnan(fy) & np.isnan(y)
    g = np.where(both, 0.0, fy - y)
    return g, scaled_residual(g, np.where(both, 0.0, y), atol, rtol)


def chord_correct(model, alpha, x_pred, lu, solve_kw):
    """Chord-Newton corrector with an approximate inverse of ``J − I`` (:class:`InverseJacobian`,
    updated by Broyden's rule at every iterate): a :class:`~replica.continuation.problem.Correction`.

    Iterates ``y ← y − (J − I)⁻¹ (F(y) − y)`` until the residual test of
    :func:`replica.engine.solve_fixed_point` passes (``atol``, ``rtol`` of ``solve_kw``);
    gives up after ``chord_max_iter`` iterations or when a step is not at least
    ``chord_contraction`` times shorter than the previous one. A model with the hook ``project`` has the
    predictor and every iterate projected onto its domain (as :func:`newton_krylov`).
    """
    atol, rtol = tolerances(solve_kw)
    project = hook(model, "project")
    y = np.array(x_pred if project is None else project(x_pred), dtype=float)
    idx = unknowns(model, y)
    previous = math.inf
    g_prev = dy = None
    with np.errstate(all="ignore"):
        for k in range(active().chord_max_iter):
            try:
                fy = np.asarray(model.update(alpha, y), dtype=float)
            except (ValueError, ZeroDivisionError, FloatingPointError):
                return Correction("error", evaluations=k)
            if not (np.all(np.isfinite(fy[idx])) and np.all(np.isfinite(y[idx]))):  # labels may be NaN
                return Correction("not_finite", evaluations=k + 1)
            g, residual = _label_safe_residual(fy, y, atol, rtol)
            if residual <= 1.0:
                return converged_result(model, alpha, y, k, residual, k + 1)
            if g_prev is not None:
                lu.update(dy, g[idx] - g_prev)
            dy = lu.solve(-g[idx])
            size = float(np.max(np.abs(dy)))
            if not np.isfinite(size):
                return Correction("not_finite", evaluations=k + 1)
            if size > active().chord_contraction * previous:
                return Correction("slow", evaluations=k + 1)
            previous, g_prev = size, g[idx]
            y_new = y.copy()
            y_new[idx] += dy
            if project is not None:
                y_new = np.asarray(project(y_new), dtype=float)
                dy = y_new[idx] - y[idx]  # the step taken, for Broyden's update
            y = y_new
    return Correction("max_iter", evaluations=active().chord_max_iter)


def check_step(r, ov_prev, support_prev):
    """Why a corrected point is not the continuation of the previous one (None: it is)."""
    if r is None:
        return "newton"
    ov = overlaps_of(r)
    if np.any(support_prev & (np.abs(ov) <= active().zero_overlap)) or is_universal(r) and np.any(support_prev):
        return "support"
    if float(np.max(np.abs(ov - ov_prev), initial=0.0)) > active().max_move:
        return "move"
    return None
