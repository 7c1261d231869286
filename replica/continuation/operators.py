"""Linear algebra on ``F_x``: the size policy (dense Jacobians or Jacobian–vector products), the leading
eigenvalue (stability), the unstable direction, and the matrix-free operator of ``F_x − I`` with its GMRES solve."""

from __future__ import annotations

import math

import numpy as np

from ..interface import hook
from .jacobians import jacobian
from .problem import near_evaluator, unknowns
from .settings import active

__all__ = ["dense_jacobians", "matrix_free", "roots_on_host", "stability", "leading_eigenvalue", "nearest_eigenpair",
           "unstable_direction", "difference_operator", "gmres_solve"]


def dense_jacobians(size, vectorized) -> bool:
    """The size policy of the continuation, the one place it is decided: whether a problem of ``size``
    moving unknowns uses dense finite-difference Jacobians (True) or Jacobian–vector products (False).
    Dense up to ``arnoldi_size`` unknowns, and up to ``dense_size`` where the map is vectorized
    (``vectorized``: the model's ``update_many`` hook evaluates every column of a Jacobian in one call)."""
    s = active()
    return size <= s.arnoldi_size or (bool(vectorized) and size <= s.dense_size)


def matrix_free(model, x) -> bool:
    """Whether the continuation of ``x`` uses Jacobian–vector products instead of dense finite-difference
    Jacobians (:func:`dense_jacobians` for the moving unknowns of ``x`` and the model's ``update_many``)."""
    return not dense_jacobians(unknowns(model, x).size, hook(model, "update_many") is not None)


def roots_on_host(model, x) -> bool:
    """Whether a bifurcation end at ``x`` is refined by the root of its host branch's eigenvalue nearest 1
    (at most ``arnoldi_size`` moving unknowns; above, the end is the one found by halving the step:
    the root adds digits below that at ~10⁴ evaluations per end)."""
    return unknowns(model, x).size <= active().arnoldi_size


def stability(model, alpha, x, *, order=2, indices=None, near=None) -> float:
    """Leading eigenvalue of the Jacobian of the undamped map at a packed point.

    Parameters
    ----------
    model, alpha, x, order, indices
        As in :func:`jacobian`.
    near : float, optional, keyword-only
        Return the real part of the eigenvalue closest to ``near`` instead of the largest
        real part (used to follow the eigenvalue that crosses 1 at a bifurcation).

    Returns
    -------
    float
        ``max Re λ_i(J)`` (``< 1``: linearly stable); NaN where ``x`` is not finite (e.g.
        ``R̂₂ = ∞`` at perfect recovery) or the map cannot be differentiated there.
    """
    x = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(x)):
        return math.nan
    if indices is None and matrix_free(model, x):
        value = leading_eigenvalue(model, alpha, x, near=near)
        if np.isfinite(value):
            return value
    with np.errstate(all="ignore"):
        try:
            jac = jacobian(model, alpha, x, order=order, indices=indices)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan
        if jac.size == 0:
            return 0.0
        if not np.all(np.isfinite(jac)):
            return math.nan
        ev = np.linalg.eigvals(jac)
    if near is not None:
        return float(ev[np.argmin(np.abs(ev - near))].real)
    return float(np.max(ev.real))


def _one_sided_operator(model, alpha, x, idx):
    """``F_x`` on the moving entries ``idx`` as a LinearOperator of forward differences along the positive and
    negative parts of the vector (two evaluations each, upward steps only, as the dense Jacobian takes them at
    overlaps ≤ 0.5: an overlap at 0 is clipped from below by the map), by the model's ``near_map`` where it
    has one."""
    from scipy.sparse.linalg import LinearOperator

    f0 = np.asarray(model.update(alpha, x), dtype=float)[idx]
    scale = active().fd_step * max(1.0, float(np.max(np.abs(x[idx]))))
    evaluate = near_evaluator(model, alpha, x)

    def one_sided(v):
        """(F(x + h v) − F(x))/h for v ≥ 0."""
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            return np.zeros_like(v)
        h = scale / norm
        y = x.copy()
        y[idx] += h * v
        return (np.asarray(evaluate(alpha, y), dtype=float)[idx] - f0) / h

    def matvec(v):
        v = np.asarray(v, dtype=float).ravel()
        return one_sided(np.maximum(v, 0.0)) - one_sided(np.maximum(-v, 0.0))

    return LinearOperator((idx.size, idx.size), matvec=matvec, dtype=float)


def arnoldi_start(n: int) -> np.ndarray:
    """The start vector of every ARPACK call (shape (n,)): a fixed pseudo-random vector (seed ``arnoldi_seed``).
    Without one, scipy's ARPACK draws a new random start in every process (scipy 1.17: the leading eigenvalue of
    one 300 × 300 matrix differed by 1e-9 between runs), so a sweep of four hidden layers, whose stabilities come
    from ARPACK, moved its branch ends near a degenerate branch point by up to 2e-7 and found a short sheet
    (``layers_1_2_3-3``) in some runs only."""
    return np.random.default_rng(active().arnoldi_seed).standard_normal(int(n))


def leading_eigenvalue(model, alpha, x, near=None) -> float:
    """Largest real part of the eigenvalues of ``F_x`` at ``x`` (or, with ``near``, the real part of
    the eigenvalue closest to ``near`` among the ``arnoldi_near`` of largest modulus) from
    Jacobian–vector products (:func:`_one_sided_operator`) by ARPACK's implicitly restarted Arnoldi
    method: for models with many order parameters, instead of a dense Jacobian (as many evaluations as
    unknowns). NaN when ARPACK does not converge (the caller then builds the dense Jacobian)."""
    from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, eigs

    idx = unknowns(model, x)
    s = active()
    with np.errstate(all="ignore"):
        try:
            op = _one_sided_operator(model, alpha, x, idx)
            if near is None:
                ev = eigs(op, k=1, which="LR", tol=1e-8, maxiter=s.arnoldi_maxiter, return_eigenvectors=False,
                          v0=arnoldi_start(idx.size))
            else:
                ev = eigs(op, k=min(s.arnoldi_near, idx.size - 2), which="LM", tol=1e-8, maxiter=s.arnoldi_maxiter,
                          return_eigenvectors=False, v0=arnoldi_start(idx.size))
                ev = ev[np.argmin(np.abs(ev - near))]
        except (ArpackNoConvergence, ArpackError, ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan
    value = float(np.max(np.real(ev)))
    return value if np.isfinite(value) else math.nan


def nearest_eigenpair(model, alpha, x, target):
    """The eigenvalue of ``F_x`` nearest ``target`` and its eigenvector (real part, max-norm 1, on the moving
    entries): from the dense second-order Jacobian (:func:`~replica.continuation.jacobians.jacobian`) where
    :func:`dense_jacobians` says so, else from ARPACK on Jacobian–vector products (the ``arnoldi_near``
    eigenvalues of largest modulus). Returns ``(complex eigenvalue, ndarray shape (m,), multiplicity)`` — the
    multiplicity counts the eigenvalues within 1e-6 (relative) of it, among those computed — or None where the
    map cannot be differentiated there or ARPACK fails."""
    idx = unknowns(model, x)
    if idx.size == 0 or not np.all(np.isfinite(x)):
        return None
    with np.errstate(all="ignore"):
        try:
            if matrix_free(model, x):
                from scipy.sparse.linalg import eigs

                s = active()
                values, vectors = eigs(_one_sided_operator(model, alpha, x, idx), k=min(s.arnoldi_near, idx.size - 2),
                                       which="LM", tol=1e-10, maxiter=s.arnoldi_maxiter, v0=arnoldi_start(idx.size))
            else:
                jac = jacobian(model, alpha, x, order=2, indices=idx)
                if not np.all(np.isfinite(jac)):
                    return None
                values, vectors = np.linalg.eig(jac)
        except Exception:  # noqa: BLE001 - ARPACK or LAPACK failures: no eigenpair
            return None
    k = int(np.argmin(np.abs(values - target)))
    vec = np.real(vectors[:, k])
    top = float(np.max(np.abs(vec)))
    if not (np.isfinite(top) and top > 0.0):
        return None
    multiplicity = int(np.count_nonzero(np.abs(values - values[k]) <= 1e-6 * max(1.0, abs(values[k]))))
    return complex(values[k]), vec / top, multiplicity


def unstable_direction(model, alpha, x):
    """``(moving indices, real part of the eigenvector of the leading eigenvalue)`` of the Jacobian of the
    map at ``x``, scaled to max-norm 1: ARPACK on one-sided forward differences where :func:`matrix_free`
    says so (as :func:`leading_eigenvalue`), else the dense first-order Jacobian; None where that fails."""
    idx = unknowns(model, x)
    if idx.size == 0:
        return None
    with np.errstate(all="ignore"):
        try:
            if matrix_free(model, x):
                from scipy.sparse.linalg import LinearOperator, eigs

                f0 = np.asarray(model.update(alpha, x), dtype=float)[idx]
                scale = active().fd_step * max(1.0, float(np.max(np.abs(x[idx]))))

                def one_sided(v):  # upward steps only, as leading_eigenvalue (the map clips at 0)
                    norm = float(np.linalg.norm(v))
                    if norm == 0.0:
                        return np.zeros_like(v)
                    y = np.array(x, dtype=float)
                    y[idx] += scale / norm * v
                    return (np.asarray(model.update(alpha, y), dtype=float)[idx] - f0) * (norm / scale)

                def matvec(v):
                    v = np.asarray(v, dtype=float).ravel()
                    return one_sided(np.maximum(v, 0.0)) - one_sided(np.maximum(-v, 0.0))

                op = LinearOperator((idx.size, idx.size), matvec=matvec, dtype=float)
                _, vec = eigs(op, k=1, which="LR", tol=1e-6, maxiter=active().arnoldi_maxiter,
                              v0=arnoldi_start(idx.size))
                vec = vec[:, 0]
            else:
                jac = jacobian(model, alpha, x, order=1, indices=idx)
                values, vectors = np.linalg.eig(jac)
                vec = vectors[:, int(np.argmax(values.real))]
        except Exception:  # noqa: BLE001 - ARPACK or LAPACK failures: no direction, the point is no seed
            return None
    vec = np.real(vec)
    top = float(np.max(np.abs(vec)))
    if not (np.isfinite(top) and top > 0.0):
        return None
    return idx, vec / top


def difference_operator(model, alpha, y, g, idx, *, alpha_column=False):
    """``(J − I)`` at ``y`` on the moving entries ``idx`` as a :class:`scipy.sparse.linalg.LinearOperator`:
    forward differences of ``F(y) − y`` (``g`` on ``idx``) along the vector, one evaluation per
    product, step ``fd_step max(1, |y|)/|v|``, by the model's ``near_map`` where it has one
    (:func:`near_evaluator`). With ``alpha_column`` the vector has one more entry, a
    step in α (the operator of the bordered system without its last row)."""
    from scipy.sparse.linalg import LinearOperator

    evaluate = near_evaluator(model, alpha, y)
    p = idx.size
    base = active().fd_step * max(1.0, float(np.linalg.norm(y[idx])), abs(alpha) if alpha_column else 0.0)
    count = [0]

    def matvec(v):
        v = np.asarray(v, dtype=float).ravel()
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            return np.zeros(p)
        h = base / norm
        z = y.copy()
        z[idx] += h * v[:p]
        al = alpha + h * v[p] if alpha_column else alpha
        count[0] += 1
        return (np.asarray(evaluate(al, z), dtype=float)[idx] - z[idx] - g) / h

    op = LinearOperator((p, p + 1 if alpha_column else p), matvec=matvec, dtype=float)
    op.evaluations = count  # map evaluations made through the operator (a one-element list)
    return op


def gmres_solve(op, rhs, restart=None):
    """GMRES solve of ``op z = rhs`` to the relative residual ``krylov_rtol`` (two restarts at most);
    None when the result is not finite."""
    if restart is None:
        restart = active().krylov_restart
    from scipy.sparse.linalg import gmres

    z, _ = gmres(op, rhs, rtol=active().krylov_rtol, atol=0.0, restart=min(restart, rhs.size), maxiter=2)
    return z if np.all(np.isfinite(z)) else None
