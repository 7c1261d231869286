"""Damped fixed-point iteration shared by every architecture.

The damping convention is defined here, once: with damping ``η ∈ [0, 1)`` the
iterate is

    x_{t+1} = η · x_t + (1 − η) · F(x_t),

so ``η = 0`` is the plain iteration and the new iterate ``F(x_t)`` carries weight
``1 − η``.  Damping never moves a fixed point (``x = F(x)`` is invariant), it only
changes which fixed points are reached and how fast.

To reach tight tolerances quickly, the iteration may hand over to a Newton-type
solve (MINPACK ``hybr`` on ``F(x) − x``) once the damped iterate is inside the basin
(scaled residual below ``polish_below``); the Newton point is accepted only if it passes
the same residual test and lies close to the damped iterate, otherwise the damped
iteration simply continues. Polishing therefore never changes which fixed point is
reached, only how fast.

With ``guarded_newton=True`` a Newton solve is also tried from the initial point, and
again from the damped iterate each time its residual has dropped 100-fold
(:func:`_guarded_newton`, finite-difference Jacobians). Its point ``y`` is accepted only
if it passes the residual test, attracts the damped iteration (spectral radius of
``η I + (1 − η) J(y)`` below 1) and the damped iteration's direction of motion
``F(z) − z`` points towards ``y`` all along the segment from the iterate to ``y``
(sampled at three points), so that no other fixed point separates them; otherwise the
damped iteration runs as usual. The damped iteration remains the definition of which
fixed point a start leads to; the Newton solve only gets there faster.

Convergence is declared on the residual of the full map, element-wise,

    |F(x) − x| ≤ atol + rtol · |x|      for every component,

and the returned point is the one whose residual was tested (``x``, not ``F(x)``).
A non-finite iterate ends the iteration with status ``"nan"``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["FixedPointResult", "solve_fixed_point", "STATUS_MESSAGES", "scaled_residual", "DEFAULT_ATOL",
           "DEFAULT_RTOL"]

logger = logging.getLogger(__name__)

STATUS_MESSAGES = {
    "converged": "residual below atol + rtol·|x| for every order parameter",
    "max_iter": "maximum number of iterations reached before the residual test passed",
    "nan": "the fixed-point map returned a non-finite value (NaN or divergence)",
    "exact": "solved by one-dimensional root finding (no iteration needed)",
    "absent": "no stationary point of this kind at this α",
}


@dataclass
class FixedPointResult:
    """Outcome of a fixed-point solve.

    Attributes
    ----------
    x : ndarray, shape (p,)
        The point whose residual was tested (order parameters, packed).
    converged : bool
        Whether the residual test passed.
    status : str
        One of ``STATUS_MESSAGES``'s keys.
    message : str
        Human-readable explanation of ``status``.
    iterations : int
        Number of damped iterations (``info["evaluations"]`` counts every evaluation of
        the map, Newton polishing included).
    residual : float
        Largest scaled residual ``max |F(x) − x| / (atol + rtol |x|)`` at ``x``
        (≤ 1 when converged).
    damping : float
        Damping ``η`` used (see module docstring).
    start : str
        Name of the start the iteration came from.
    info : dict
        Architecture-specific extras (the unpacked order parameters, derived
        quantities, …).
    """

    x: np.ndarray
    converged: bool
    status: str
    message: str
    iterations: int
    residual: float
    damping: float
    start: str = ""
    info: dict = field(default_factory=dict)


#: default tolerances of the residual test ``|F(x) − x| ≤ atol + rtol |x|`` (:func:`solve_fixed_point`)
DEFAULT_ATOL = 1e-12
DEFAULT_RTOL = 1e-10
#: weight of the old iterate in the damped iteration ``x ← η x + (1 − η) F(x)`` when none is given
DEFAULT_DAMPING = 0.5


def scaled_residual(g, x, atol=DEFAULT_ATOL, rtol=DEFAULT_RTOL) -> float:
    """The residual test of every solver of the package: ``max_i |g_i| / (atol + rtol |x_i|)`` (0 for empty
    arrays), where ``g = F(x) − x``; a point passes when it is ≤ 1.

    Parameters
    ----------
    g, x : array_like, same shape
    atol, rtol : float

    Returns
    -------
    float
        NaN where ``g`` holds a NaN.
    """
    return float(np.max(np.abs(g) / (atol + rtol * np.abs(x)), initial=0.0))


def solve_fixed_point(
    update: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    *,
    damping: float = DEFAULT_DAMPING,
    atol: float = DEFAULT_ATOL,
    rtol: float = DEFAULT_RTOL,
    max_iter: int = 20000,
    start: str = "",
    polish_below: float | None = 1e4,
    method: str = "damped",
    guarded_newton: bool = False,
    project: Callable[[np.ndarray], np.ndarray] | None = None,
    jacobian: Callable[[np.ndarray], np.ndarray] | None = None,
) -> FixedPointResult:
    """Solve ``x = F(x)`` by damped iteration.

    Parameters
    ----------
    update : callable
        The map ``F``: ndarray of shape (p,) → ndarray of shape (p,).
    x0 : array_like, shape (p,)
        Initial point.
    damping : float, keyword-only
        Weight ``η`` of the old iterate, ``0 ≤ η < 1`` (module docstring).
    atol, rtol : float, keyword-only
        Absolute and relative tolerances of the residual test.
    max_iter : int, keyword-only
        Maximum number of evaluations of ``F``.
    start : str, keyword-only
        Label of the start, copied into the result.
    polish_below : float or None, keyword-only
        Scaled residual below which a Newton polish is attempted (None: never).
    method : {"damped", "newton"}, keyword-only
        ``"newton"`` skips the damped iteration and runs the Newton-type solve from
        ``x0`` directly (used to test the *existence* of a fixed point near ``x0``,
        e.g. close to a spinodal where damped iteration slows down critically; it may
        converge to an unstable fixed point).
    guarded_newton : bool, keyword-only
        Try a guarded Newton solve from ``x0`` and whenever the residual has dropped
        100-fold, accepted only where the damped iteration would reach the same fixed
        point (module docstring); default False.
    project : callable or None, keyword-only
        Map of a point onto the domain of ``F`` (e.g. clipping overlaps to [0, 1]), applied
        to the Newton iterates of ``guarded_newton``; it must leave fixed points unchanged.
    jacobian : callable or None, keyword-only
        ``J(x)``: the Jacobian of ``F`` at ``x``, shape (p, p), for the Newton polish (default None: MINPACK
        differences it column by column, p evaluations of ``F``). Models with a vectorized map pass one
        difference Jacobian from a single call, so that the polish is worth running with many unknowns.

    Returns
    -------
    FixedPointResult

    Raises
    ------
    ValueError
        If ``damping`` is outside ``[0, 1)`` or ``x0`` is not finite.
    """
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    x = np.array(x0, dtype=float, copy=True)
    if not np.all(np.isfinite(x)):
        raise ValueError("initial point of the fixed-point iteration is not finite")
    if method not in ("damped", "newton"):
        raise ValueError(f"method must be 'damped' or 'newton', got {method!r}")
    if method == "newton":
        y, nfev = _newton_polish(update, x, jacobian)
        if y is None:
            return FixedPointResult(x, False, "max_iter", "Newton solve did not converge", 0, np.inf, damping, start,
                                    {"evaluations": nfev, "polished": True})
        fy = np.asarray(update(y), dtype=float)
        ok = bool(np.all(np.isfinite(fy)))
        res = scaled_residual(fy - y, y, atol, rtol) if ok else np.inf
        status = "converged" if res <= 1.0 else "max_iter"
        return FixedPointResult(y, status == "converged", status, STATUS_MESSAGES[status], 0, res, damping, start,
                                {"evaluations": nfev + 1, "polished": True})
    scaled = np.inf
    evaluations = 0
    polished = False
    next_polish = polish_below if polish_below is not None else -1.0
    next_newton = np.inf

    def residual(y, fy):
        return scaled_residual(fy - y, y, atol, rtol)

    for it in range(1, max_iter + 1):
        fx = np.asarray(update(x), dtype=float)
        evaluations += 1
        if not np.all(np.isfinite(fx)):
            return FixedPointResult(x, False, "nan", STATUS_MESSAGES["nan"], it, np.inf, damping, start)
        scaled = residual(x, fx)
        if scaled <= 1.0:
            return FixedPointResult(
                x, True, "converged", STATUS_MESSAGES["converged"], it, scaled, damping, start,
                {"evaluations": evaluations, "polished": polished},
            )
        if guarded_newton and scaled < next_newton:
            next_newton = scaled / 100.0
            y, fy, nfev = _guarded_newton(update, x, fx, damping, residual, project=project)
            evaluations += nfev
            if y is not None:
                return FixedPointResult(
                    y, True, "converged", STATUS_MESSAGES["converged"], it, residual(y, fy), damping, start,
                    {"evaluations": evaluations, "polished": True},
                )
        if scaled < next_polish:
            polished = True
            next_polish = scaled / 100.0  # retry only after the residual dropped 100-fold
            y, nfev = _newton_polish(update, x, jacobian, lambda z, g: residual(z, z + g) <= 1.0)
            evaluations += nfev
            if y is not None:
                fy = np.asarray(update(y), dtype=float)
                evaluations += 1
                step = np.max(np.abs(y - x) / (atol + rtol * np.abs(x) + np.abs(fx - x) * 100.0))
                if np.all(np.isfinite(fy)) and residual(y, fy) <= 1.0 and step <= 1.0:
                    return FixedPointResult(
                        y, True, "converged", STATUS_MESSAGES["converged"], it, residual(y, fy), damping,
                        start, {"evaluations": evaluations, "polished": True},
                    )
        x_tested = x
        x = damping * x + (1.0 - damping) * fx
    x = x_tested
    logger.debug("fixed point from start %r not converged after %d iterations", start, max_iter)
    # the returned point is the one whose residual was tested last
    return FixedPointResult(x, False, "max_iter", STATUS_MESSAGES["max_iter"], max_iter, scaled, damping, start,
                            {"evaluations": evaluations, "polished": polished})


#: Jacobians :func:`newton_lu` factors at most before it gives up
NEWTON_LU_JACOBIANS = 8
#: halvings of a Newton step of :func:`newton_lu` that does not reduce the residual, before it gives up
NEWTON_LU_BACKTRACKS = 4


def newton_lu(fun, jac, z0, done, *, max_jacobians=NEWTON_LU_JACOBIANS, backtracks=NEWTON_LU_BACKTRACKS):
    """Newton's method for ``G(z) = 0`` with a Jacobian at every iterate, factored by LAPACK.

    For maps whose Jacobian costs about one evaluation (a vectorized difference Jacobian), and for
    small systems (:func:`difference_jacobian`): each step solves ``G'(z) dz = −G(z)`` by LU (LAPACK
    ``gesv`` through :func:`numpy.linalg.solve`, so that no solve here needs ``scipy.linalg``), and is
    halved while it does not reduce ``‖G‖₂`` (at most ``backtracks`` times). MINPACK's ``hybr`` does
    the same work with an unblocked QR factorization and a trust region: about 20 ms per Jacobian of
    255 unknowns and 0.3 s of 676, against 1 ms and 10 ms here.

    Parameters
    ----------
    fun : callable
        ``G``: ndarray (p,) → ndarray (p,).
    jac : callable
        ``G'(z)``, shape (p, p).
    z0 : ndarray, shape (p,)
        Start.
    done : callable
        ``done(z, G(z)) -> bool``: the convergence test (the caller's residual test).
    max_jacobians, backtracks : int, keyword-only
        Budgets (:data:`NEWTON_LU_JACOBIANS`, :data:`NEWTON_LU_BACKTRACKS`).

    Returns
    -------
    (z or None, evaluations of G, Jacobians)
        ``z`` passes ``done``; None when the budget is spent, a value is not finite, the Jacobian is
        exactly singular or no halved step reduces the residual.
    """
    z = np.array(z0, dtype=float)
    nfev = njev = 0
    with np.errstate(all="ignore"):
        try:
            g = np.asarray(fun(z), dtype=float)
            nfev += 1
            for _ in range(max_jacobians):
                if not np.all(np.isfinite(g)):
                    return None, nfev, njev
                if done(z, g):
                    return z, nfev, njev
                a = np.asarray(jac(z), dtype=float)
                njev += 1
                if not np.all(np.isfinite(a)):
                    return None, nfev, njev
                dz = np.linalg.solve(a, -g)  # LinAlgError on an exactly singular factor
                if not np.all(np.isfinite(dz)):
                    return None, nfev, njev
                norm, t = float(np.linalg.norm(g)), 1.0
                for _ in range(backtracks + 1):
                    zt = z + t * dz
                    gt = np.asarray(fun(zt), dtype=float)
                    nfev += 1
                    if np.all(np.isfinite(gt)) and float(np.linalg.norm(gt)) < norm:
                        break
                    t *= 0.5
                else:
                    return None, nfev, njev
                z, g = zt, gt
            if np.all(np.isfinite(g)) and done(z, g):
                return z, nfev, njev
        except (np.linalg.LinAlgError, ValueError, FloatingPointError, ZeroDivisionError):
            pass
    return None, nfev, njev


def difference_jacobian(update, z, step) -> np.ndarray:
    """Forward-difference Jacobian of ``update`` at ``z``, one column per unknown (``p`` evaluations).

    Parameters
    ----------
    update : callable
        ndarray (p,) → ndarray (p,).
    z : ndarray, shape (p,)
    step : float
        Relative step: ``h_j = step · max(1, |z_j|)``, downwards where ``z_j > 0.5`` (overlaps stay in
        [0, 1]), as :func:`replica.continuation.jacobians.jacobian` of order 1.

    Returns
    -------
    ndarray, shape (p, p)
    """
    z = np.asarray(z, dtype=float)
    f0 = np.asarray(update(z), dtype=float)
    h = step * np.maximum(1.0, np.abs(z))
    h = np.where(z > 0.5, -h, h)
    out = np.empty((f0.size, z.size))
    for j in range(z.size):
        zj = z.copy()
        zj[j] += h[j]
        out[:, j] = (np.asarray(update(zj), dtype=float) - f0) / h[j]
    return out


def _newton_polish(update, x, jacobian=None, done=None):
    """Solve ``F(y) − y = 0`` from ``x``: with the residual test ``done(y, F(y) − y)`` and ``jacobian`` (a
    vectorized one, about one evaluation) or at most ``newton_size`` unknowns (of
    :class:`replica.continuation.settings.ContinuationSettings`: a :func:`difference_jacobian` per
    iterate), :func:`newton_lu`; else MINPACK hybr (differences column by column, then Broyden updates);
    ``(y or None, evaluations)`` (a Jacobian counted as p evaluations)."""
    if jacobian is None and done is not None:
        from .continuation.settings import active  # lazy: the continuation imports this module

        settings = active()
        if x.size <= settings.newton_size:
            def jacobian(z):
                return difference_jacobian(update, z, settings.fd_step)
    if jacobian is not None and done is not None:
        y, nfev, njev = newton_lu(lambda z: np.asarray(update(z), dtype=float) - z,
                                  lambda z: np.asarray(jacobian(z), dtype=float) - np.eye(z.size), x, done)
        return y, nfev + x.size * njev
    from scipy import optimize

    jac = None if jacobian is None else (lambda y: np.asarray(jacobian(y), dtype=float) - np.eye(y.size))
    with np.errstate(all="ignore"):
        try:
            sol = optimize.root(lambda y: np.asarray(update(y), dtype=float) - y, x, method="hybr", jac=jac,
                                options={"xtol": 1e-13})
        except (ValueError, FloatingPointError, ZeroDivisionError):
            return None, 0
    if not sol.success or not np.all(np.isfinite(sol.x)):
        return None, int(getattr(sol, "nfev", 0))
    return sol.x, int(sol.nfev) + x.size * int(getattr(sol, "njev", 0) or 0)


def _jacobian(update, z, fz):
    """Forward-difference Jacobian of ``F`` at ``z`` (``fz = F(z)``), shape (p, p)."""
    jac = np.empty((z.size, z.size))
    for j in range(z.size):
        h = 1e-7 * max(1.0, abs(z[j]))
        zh = z.copy()
        zh[j] += h
        jac[:, j] = (np.asarray(update(zh), dtype=float) - fz) / h
    return jac


def _guarded_newton(update, x, fx, damping, residual, *, project=None, max_steps=30):
    """Newton solve of ``F(y) = y`` from ``x`` (``fx = F(x)``), accepted only where the damped
    iteration from ``x`` converges to the same point.

    The Jacobian is refreshed only when a step fails to halve the previous one; the solve
    fails on divergence or after ``max_steps`` steps; ``project`` (optional) maps every
    iterate into the domain of ``F``. The point ``y`` is rejected unless it passes the
    residual test, is stable for the damped map (spectral radius of
    ``η I + (1 − η) J(y)`` below 1) and the flow ``F(z) − z`` of the damped iteration
    points towards ``y`` at ``z = x + t(y − x)``, ``t = 0, ⅓, ⅔`` (no other fixed point
    on the way).

    Returns
    -------
    (y, F(y), evaluations), with ``y = None`` when the solve fails or a guard rejects it.
    """
    p = x.size
    if p == 0:
        return None, None, 0
    eye = np.eye(p)
    evaluations = 0
    with np.errstate(all="ignore"):
        try:
            inverse = np.linalg.inv(eye - _jacobian(update, x, fx))
            evaluations += p
            y, fy = x, fx
            previous = np.inf
            for _ in range(max_steps):
                step = inverse @ (fy - y)
                if float(np.max(np.abs(step))) > 0.5 * previous:  # slow: Jacobian at the current point
                    inverse = np.linalg.inv(eye - _jacobian(update, y, fy))
                    evaluations += p
                    step = inverse @ (fy - y)
                size = float(np.max(np.abs(step)))
                if not (np.isfinite(size) and size < 4.0 * previous):  # diverging
                    return None, None, evaluations
                previous = size
                y = y + step if project is None else project(y + step)
                fy = np.asarray(update(y), dtype=float)
                evaluations += 1
                if not np.all(np.isfinite(fy)):
                    return None, None, evaluations
                if residual(y, fy) <= 1.0:
                    break
            else:
                return None, None, evaluations
            jac = _jacobian(update, y, fy)
            evaluations += p
        except (np.linalg.LinAlgError, ValueError):
            # singular Jacobian, or a Newton/difference point outside the map's domain (the
            # models raise ValueError there, e.g. a correlation |q| > 1): no Newton step
            return None, None, evaluations
        if not (np.all(np.isfinite(jac))
                and np.max(np.abs(np.linalg.eigvals(damping * eye + (1.0 - damping) * jac))) < 1.0):
            return None, None, evaluations
        direction = y - x
        for t in (0.0, 1.0 / 3.0, 2.0 / 3.0):
            z = x + t * direction
            fz = fx if t == 0.0 else np.asarray(update(z), dtype=float)
            evaluations += t > 0.0
            if not float(np.dot(fz - z, direction)) > 0.0:
                return None, None, evaluations
    return y, fy, evaluations
