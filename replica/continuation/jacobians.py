"""Finite-difference Jacobians of the undamped map, the sweep's Jacobian memo, and the factorized inverse of
``F_x − I`` with Broyden updates that the chord corrector carries."""

from __future__ import annotations

import contextlib
import contextvars
import warnings

import numpy as np

from ..interface import hook
from .problem import evaluate_many, unknowns
from .settings import active

__all__ = ["jacobian", "remembered_jacobians", "fd_jacobian", "DenseFactors", "InverseJacobian", "lu_factors", "lu_solve_finite",
           "factor_jacobian"]


def jacobian(model, alpha, x, *, order=2, indices=None) -> np.ndarray:
    """Finite-difference Jacobian of the undamped map ``model.update(alpha, ·)`` at ``x``.

    Parameters
    ----------
    model : ReplicaModel
    alpha : float
    x : ndarray, shape (p,)
        Packed point.
    order : {1, 2}, keyword-only
        One-sided differences of first order (step ``fd_step``, 1e-7) or second order (``fd_step_second``, 1e-5,
        ``(−3F(x) + 4F(x+h) − F(x+2h))/(2h)``). Components above 0.5 are differenced
        downwards, the others upwards, so that overlaps stay inside [0, 1]. The points come from the
        model's ``update_near`` hook where it has one: an error of the order of the forward difference's
        own, O(h), at first order; at second order the hook's error, quadratic in the distance from ``x``,
        cancels in the stencil like any quadratic term (the stencil is exact on quadratics).
    indices : array_like of int, optional, keyword-only
        Restrict to these components (rows and columns); default the entries the map moves
        (``model.moving_indices(x)`` when the model has it, else all).

    Returns
    -------
    ndarray, shape (m, m)
        ``m = len(indices)`` or ``p``; inside :func:`remembered_jacobians` (every :func:`sweep`) a copy of
        the one computed before at the same arguments, if any.
    """
    x = np.asarray(x, dtype=float)
    memo = _JACOBIANS.get()
    if memo is not None:
        key = (float(alpha), int(order), None if indices is None else np.asarray(indices, dtype=int).tobytes(),
               x.tobytes())
        for entry in memo:
            if entry[0] is model and entry[1] == key:
                return entry[2].copy()
        value = fd_jacobian(model, alpha, x, order, indices)
        memo.append((model, key, value.copy()))
        while memo and sum(entry[2].nbytes for entry in memo) > active().jacobian_memo_bytes:
            memo.pop(0)  # the oldest first
        return value
    return fd_jacobian(model, alpha, x, order, indices)


_JACOBIANS = contextvars.ContextVar("replica_jacobian_memo", default=None)


@contextlib.contextmanager
def remembered_jacobians():
    """Within this context :func:`jacobian` returns a copy of the matrix it computed before for the same
    model object, α, order, indices and point (bit for bit), among the last ``jacobian_memo_bytes``;
    :func:`sweep` runs in one. Outside, every call computes."""
    token = _JACOBIANS.set([])
    try:
        yield
    finally:
        _JACOBIANS.reset(token)


def fd_jacobian(model, alpha, x, order, indices) -> np.ndarray:
    idx = unknowns(model, x) if indices is None else np.asarray(indices, dtype=int)
    h = (active().fd_step if order == 1 else active().fd_step_second) * np.maximum(1.0, np.abs(x[idx]))
    h = np.where(x[idx] > 0.5, -h, h)
    m = idx.size
    steps = (1,) if order == 1 else (1, 2)
    points = np.repeat(x[None, :], 1 + m * len(steps), axis=0)
    for k, s in enumerate(steps):
        points[1 + k * m + np.arange(m), idx] += s * h
    near = hook(model, "update_near") if hook(model, "update_many") is not None else None
    values = (np.asarray(near(alpha, points), dtype=float) if near is not None
              else evaluate_many(model, alpha, points))[:, idx]
    f0, f1 = values[0], values[1:1 + m]
    if order == 1:
        d = (f1 - f0[None, :]) / h[:, None]
    else:
        f2 = values[1 + m:]
        d = (-3.0 * f0[None, :] + 4.0 * f1 - f2) / (2 * h[:, None])
    return np.ascontiguousarray(d.T)


class DenseFactors:
    """A factorization of a square matrix ``a`` for repeated solves with ``a`` or ``aᵀ``: LAPACK's LU
    (``scipy.linalg.lu_factor``) above ``newton_size`` rows (:mod:`replica.continuation.settings`), and the
    explicit inverse (:func:`numpy.linalg.inv`) up to it, so that the continuation of a small model needs no
    ``scipy.linalg`` (its import is 0.14 s of start-up).

    Raises
    ------
    numpy.linalg.LinAlgError
        ``a`` is exactly singular or not finite.
    """

    def __init__(self, a):
        a = np.asarray(a, dtype=float)
        if not np.all(np.isfinite(a)):
            raise np.linalg.LinAlgError("Jacobian not finite")
        self.inverse = self.lu = None
        if a.shape[0] <= active().newton_size:
            self.inverse = np.linalg.inv(a)  # LinAlgError on an exactly singular matrix
            return
        from scipy.linalg import LinAlgWarning, lu_factor  # lazy: start-up (docs/architecture.md)

        with warnings.catch_warnings():
            warnings.simplefilter("error", LinAlgWarning)
            try:
                self.lu = lu_factor(a, check_finite=False)
            except LinAlgWarning as exc:  # an exactly zero pivot
                raise np.linalg.LinAlgError(str(exc)) from None

    def solve(self, rhs, transposed=False) -> np.ndarray:
        """``a⁻¹ rhs``, or ``a⁻ᵀ rhs`` when ``transposed``."""
        if self.inverse is not None:
            return (self.inverse.T if transposed else self.inverse) @ rhs
        from scipy.linalg import lu_solve  # lazy: start-up (docs/architecture.md)

        return lu_solve(self.lu, rhs, trans=int(bool(transposed)), check_finite=False)

    def finite(self) -> bool:
        """Whether every number of the factorization is finite."""
        parts = (self.inverse,) if self.inverse is not None else self.lu
        return all(np.all(np.isfinite(part)) for part in parts)


class InverseJacobian:
    """Approximate ``(F_x − I)⁻¹`` on the moving entries: the inverse of a finite-difference Jacobian,
    improved along the corrector's iterates by good-Broyden rank-one updates (so that a factorization
    serves several continuation steps, and models with many order parameters need few Jacobians).

    Held as the LU factors of the Jacobian and the list of its rank-one updates,
    ``H = (J − I)⁻¹ + Σ_k u_k v_kᵀ``: a solve is two triangular solves and one dot product per update,
    as cheap as a product with the explicit inverse, and the factorization costs a third of an inversion
    (676 unknowns: 10 against 30 ms; 2,500 at L = 6: 0.5 against 1.4 s).

    Raises
    ------
    numpy.linalg.LinAlgError
        ``a`` is exactly singular or not finite.
    """

    def __init__(self, a):
        self.lu = DenseFactors(a)
        self.us, self.vs = [], []

    def _apply(self, rhs, trans):
        z = self.lu.solve(rhs, transposed=trans == 1)
        left, right = (self.us, self.vs) if trans == 0 else (self.vs, self.us)
        for u, v in zip(left, right):
            z = z + u * float(v @ rhs)
        return z

    def solve(self, rhs):
        """``H rhs``."""
        return self._apply(np.asarray(rhs, dtype=float), 0)

    def copy(self) -> "InverseJacobian":
        """A copy whose Broyden updates leave this one unchanged (a trial corrector's, :func:`advance`)."""
        out = object.__new__(InverseJacobian)
        out.lu, out.us, out.vs = self.lu, list(self.us), list(self.vs)
        return out

    def adopt(self, other: "InverseJacobian"):
        """Take the updates of ``other`` (a copy of this one that a trial corrector improved)."""
        self.lu, self.us, self.vs = other.lu, list(other.us), list(other.vs)

    def update(self, dx, dg):
        """Broyden's update from a step ``dx`` and the change ``dg`` of ``F(x) − x`` it caused."""
        hdg = self.solve(dg)
        den = float(dx @ hdg)
        if abs(den) > 1e-300 and np.isfinite(den):
            self.us.append((dx - hdg) / den)
            self.vs.append(self._apply(np.asarray(dx, dtype=float), 1))


def lu_factors(a):
    """:class:`DenseFactors` of ``a``, or None when ``a`` is singular or not finite."""
    try:
        return DenseFactors(a)
    except np.linalg.LinAlgError:
        return None


def lu_solve_finite(factors, rhs):
    """``a⁻¹ rhs`` from :func:`lu_factors`; None when not finite."""
    z = factors.solve(rhs)
    return z if np.all(np.isfinite(z)) else None


def factor_jacobian(model, alpha, x):
    """:class:`InverseJacobian` of ``J − I`` at a packed point (first-order differences), or None if
    singular."""
    with np.errstate(all="ignore"):
        try:
            a = jacobian(model, alpha, x, order=1)
            a = a - np.eye(a.shape[0])
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return None
        if not np.all(np.isfinite(a)):
            return None
        try:
            inv = InverseJacobian(a)
        except np.linalg.LinAlgError:
            return None
    if not inv.lu.finite():
        return None
    return inv
