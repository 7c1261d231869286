"""Folds (saddle-nodes): the parabola estimate from accepted points, the bordered system that follows the curve
through the fold in a coordinate along it, its refinement, and the singularity test of ``F_x − I``."""

from __future__ import annotations

import math

import numpy as np

from ..engine import STATUS_MESSAGES, FixedPointResult, scaled_residual
from .jacobians import jacobian, lu_factors, lu_solve_finite
from .operators import difference_operator, gmres_solve, leading_eigenvalue, matrix_free
from .problem import tolerances, unknowns
from .settings import active

__all__ = ["fold_estimate", "bordered_solve", "bordered_krylov", "refine_fold", "is_singular"]


def fold_estimate(points, direction):
    """α of the fold that the accepted points ``[(α, x)…]`` (the last three, in the order accepted)
    approach, or None.

    Near a saddle-node the curve is a parabola ``α = α_f − c ξ²`` in the coordinate ξ along its
    direction of motion: ξ is the projection of ``x`` on the unit vector of the last accepted step,
    the parabola through the three points gives ``α_f`` (its vertex). None unless the vertex lies
    ahead of the last point (in ``direction``) with the curvature of a fold there.
    """
    (a1, x1), (a2, x2), (a3, x3) = points[-3:]
    u = x3 - x2
    norm = float(np.linalg.norm(u))
    if not norm > 0.0:
        return None
    u = u / norm
    xi = np.array([float(u @ (x1 - x3)), float(u @ (x2 - x3)), 0.0])
    al = np.array([a1, a2, a3])
    if not (xi[0] < xi[1] < 0.0):
        return None
    try:
        c2, c1, c0 = np.polyfit(xi, al, 2)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not (np.isfinite(c2) and c2 * direction < 0.0):
        return None
    vertex = -c1 / (2.0 * c2)
    a_fold = c0 - c1 * c1 / (4.0 * c2)
    if not (vertex > 0.0 and np.isfinite(a_fold) and (a_fold - a3) * direction > 0.0):
        return None
    return float(a_fold)


def bordered_solve(model, alpha0, x0, u, x_ref, xi, solve_kw):
    """Point of the curve through ``x_ref`` with ``u·(x − x_ref) = ξ`` (moving entries): Newton on the
    bordered system ``F(x, α) − x = 0``, ``u·(x − x_ref) = ξ`` in ``(x, α)`` from ``(x0, alpha0)``, with
    forward-difference Jacobians (:func:`jacobian`, ``p + 1`` evaluations each, one vectorized call with
    ``update_many``, and one evaluation for the α column), each kept for the next iterates while their steps
    shrink by ``chord_contraction`` (a chord iteration: the same point, fewer Jacobians).
    Regular at a fold (where ``F_x − I`` alone is singular), so the curve is followed through it; for
    matrix-free models (:func:`matrix_free`) each Newton step is solved by GMRES with Jacobian–vector
    products (:func:`bordered_krylov`).
    Returns ``(α, result)`` or None."""
    atol, rtol = tolerances(solve_kw)
    x = np.array(x0, dtype=float)
    idx = unknowns(model, x)
    p = idx.size
    al = float(alpha0)
    factors, previous = None, math.inf  # the dense bordered Jacobian, kept while the steps contract
    with np.errstate(all="ignore"):
        try:
            g = np.asarray(model.update(al, x), dtype=float)[idx] - x[idx]
            for _ in range(active().fold_newton_iter):
                if not np.all(np.isfinite(g)):
                    return None
                c = float(u @ (x[idx] - x_ref)) - xi
                residual = scaled_residual(g, x[idx], atol, rtol)
                if residual <= 1.0 and scaled_residual(c, xi, atol, rtol) <= 1.0:
                    st = model.state(al, x)
                    res = FixedPointResult(x, True, "converged", STATUS_MESSAGES["converged"], 0,
                                           residual,
                                           0.0, "continuation", {"polished": True})
                    res.info["state"] = st
                    return al, res
                rhs = -np.concatenate([g, [c]])
                if matrix_free(model, x):
                    delta = bordered_krylov(model, al, x, g, idx, u, rhs)
                    if delta is None:
                        return None
                else:
                    delta = None if factors is None else lu_solve_finite(factors, rhs)
                    if delta is None or not float(np.max(np.abs(delta))) <= active().chord_contraction * previous:
                        # a fresh Jacobian where the chord step (the Jacobian of an earlier iterate) contracts
                        # too slowly: the point is fixed by the residuals alone, the Jacobian sets the speed
                        jac = np.zeros((p + 1, p + 1))
                        jac[:p, :p] = jacobian(model, al, x, order=1, indices=idx) - np.eye(p)
                        ha = active().fd_step * max(1.0, abs(al))
                        jac[:p, p] = (np.asarray(model.update(al + ha, x), dtype=float)[idx] - x[idx] - g) / ha
                        jac[p, :p] = u
                        factors = lu_factors(jac)
                        delta = None if factors is None else lu_solve_finite(factors, rhs)
                        if delta is None:
                            return None
                    previous = float(np.max(np.abs(delta)))
                if not np.all(np.isfinite(delta)):
                    return None
                x = x.copy()
                x[idx] += delta[:p]
                al += float(delta[p])
                if not al > 0.0:
                    return None
                g = np.asarray(model.update(al, x), dtype=float)[idx] - x[idx]
        except (np.linalg.LinAlgError, ValueError, ZeroDivisionError, FloatingPointError):
            return None
    return None


def bordered_krylov(model, alpha, x, g, idx, u, rhs):
    """Newton step of the bordered system of :func:`bordered_solve` by GMRES: the operator
    ``(v, s) ↦ ((F_x − I) v + F_α s, u·v)`` from Jacobian–vector products (one evaluation each)."""
    from scipy.sparse.linalg import LinearOperator

    top = difference_operator(model, alpha, x, g, idx, alpha_column=True)
    op = LinearOperator((idx.size + 1, idx.size + 1), dtype=float,
                        matvec=lambda w: np.concatenate([top.matvec(w), [float(u @ np.ravel(w)[:idx.size])]]))
    return gmres_solve(op, rhs)


def refine_fold(model, accepted, direction, solve_kw):
    """The fold that the last three accepted points ``[(α, result)…]`` of a continuation approach.

    The curve is parametrized by ``ξ``, the coordinate along the last accepted step; near a
    saddle-node ``α(ξ)`` is a parabola whose vertex is the fold. Each iteration fits the parabola
    through the three points nearest the vertex, solves the bordered system (:func:`bordered_solve`)
    at its vertex and stops when the fold's α moves by less than a tenth of ``min_step``
    (relative). Returns ``(α_fold, result)`` (a point of the curve at the fold) or None when the
    points do not behave as a fold (then the caller goes on halving its step).
    """
    (a1, r1), (a2, r2), (a3, r3) = accepted[-3:]
    x3 = np.asarray(r3.x, dtype=float)
    idx = unknowns(model, x3)
    ref = x3[idx]
    u = ref - np.asarray(r2.x, dtype=float)[idx]
    norm = float(np.linalg.norm(u))
    if not norm > 0.0:
        return None
    u = u / norm
    pts = [(float(u @ (np.asarray(r.x, dtype=float)[idx] - ref)), float(a), r)
           for a, r in ((a1, r1), (a2, r2), (a3, r3))]
    best = None
    for _ in range(active().fold_max_solves):
        pts.sort(key=lambda t: t[0])
        xi = np.array([t[0] for t in pts[-3:]])
        al = np.array([t[1] for t in pts[-3:]])
        try:
            c2, c1, c0 = np.polyfit(xi - xi[-1], al, 2)
        except (np.linalg.LinAlgError, ValueError):
            break
        if not (np.isfinite(c2) and c2 * direction < 0.0):
            break
        vertex = xi[-1] - c1 / (2.0 * c2)
        a_pred = c0 - c1 * c1 / (4.0 * c2)
        # predictor: the quadratic through the points in ξ, for every moving entry
        xs = np.array([np.asarray(t[2].x, dtype=float) for t in pts[-3:]])
        coef = np.polyfit(xi - xi[-1], xs[:, idx], 2)
        x0 = xs[-1].copy()
        x0[idx] = coef[0] * (vertex - xi[-1]) ** 2 + coef[1] * (vertex - xi[-1]) + coef[2]
        got = bordered_solve(model, a_pred, x0, u, ref, vertex, solve_kw)
        if got is None:
            break
        a_new, r_new = got
        # the geometry of the fold, for the jump beyond it (:func:`jump_seeds`): α ≈ α_f − c ξ² along u
        r_new.info["fold"] = {"direction": u, "curvature": abs(float(c2))}
        done = best is not None and abs(a_new - best[0]) <= 0.1 * active().min_step * max(1.0, abs(a_new))
        if best is None or (a_new - best[0]) * direction > 0.0:
            best = (a_new, r_new)
        if done:
            break
        pts.append((vertex, a_new, r_new))
        # keep the three points closest to the vertex
        pts.sort(key=lambda t: abs(t[0] - vertex))
        pts = pts[:3]
    return best if best is not None and is_singular(model, best[0], best[1].x) else None


def is_singular(model, alpha, x) -> bool:
    """Whether ``F_x − I`` is singular at ``x`` (a saddle-node): its smallest singular value below
    ``fold_singular`` times its largest (matrix-free models, :func:`matrix_free`: the eigenvalue
    of ``F_x`` nearest 1 within ``fold_singular`` of it, from Jacobian–vector products). A vertex of
    α along the curve where it is not is a turn of the parabola fit, not a fold."""
    if matrix_free(model, x):
        value = leading_eigenvalue(model, alpha, x, near=1.0)
        if np.isfinite(value):
            return abs(value - 1.0) <= active().fold_singular
    with np.errstate(all="ignore"):
        try:
            a = jacobian(model, alpha, x, order=1)
            sv = np.linalg.svd(a - np.eye(a.shape[0]), compute_uv=False)
        except (ValueError, ZeroDivisionError, FloatingPointError, np.linalg.LinAlgError):
            return False
    return bool(sv.size and np.all(np.isfinite(sv)) and sv[-1] <= active().fold_singular * sv[0])
