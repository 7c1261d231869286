"""The dense correctors' linear algebra: :func:`replica.engine.newton_lu` and the LU-held, Broyden-updated
inverse Jacobian of the chord corrector (:class:`replica.branches._InverseJacobian`)."""

import numpy as np
import pytest

from replica.branches import _InverseJacobian
from replica.engine import newton_lu


def _system(n=12, seed=0):
    """``G(z) = A z + 0.1 z³ − b`` (elementwise cube) and its Jacobian, with a known root ``z*``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n)) / np.sqrt(n) + 2.0 * np.eye(n)
    root = rng.normal(size=n)
    b = a @ root + 0.1 * root**3

    def fun(z):
        return a @ z + 0.1 * z**3 - b

    def jac(z):
        return a + np.diag(0.3 * z**2)

    return fun, jac, root


def test_newton_lu_converges_quadratically_to_the_root():
    fun, jac, root = _system()
    residuals = []

    def done(z, g):
        residuals.append(float(np.max(np.abs(g))))
        return residuals[-1] < 1e-13

    z, nfev, njev = newton_lu(fun, jac, root + 0.3, done)
    assert z is not None and np.max(np.abs(z - root)) < 1e-12
    assert njev == len(residuals) - 1 and nfev >= njev + 1
    # quadratic convergence: each residual at most a constant times the square of the previous one
    r = [x for x in residuals if x > 1e-14]
    assert all(r[k + 1] <= 10.0 * r[k] ** 2 + 1e-15 for k in range(1, len(r) - 1)), residuals


def test_newton_lu_gives_up_on_a_singular_jacobian_and_on_its_budget():
    fun, jac, root = _system()
    z, _, njev = newton_lu(fun, lambda z: np.zeros((z.size, z.size)), root + 0.3, lambda z, g: False)
    assert z is None and njev == 1
    z, _, njev = newton_lu(fun, jac, root + 0.3, lambda z, g: False, max_jacobians=3)
    assert z is None and njev == 3
    z, nfev, njev = newton_lu(fun, jac, root, lambda z, g: True)
    assert z is not None and njev == 0 and nfev == 1


def test_newton_lu_halves_a_step_that_does_not_reduce_the_residual():
    """``G(z) = arctan(z)``: the full Newton step from |z| = 2 overshoots (|G| grows); the halved step does not."""
    z, _, _ = newton_lu(np.arctan, lambda z: np.diag(1.0 / (1.0 + z**2)), np.array([2.0]),
                        lambda z, g: abs(float(g[0])) < 1e-14)
    assert z is not None and abs(float(z[0])) < 1e-13
    z, _, _ = newton_lu(np.arctan, lambda z: np.diag(1.0 / (1.0 + z**2)), np.array([2.0]),
                        lambda z, g: abs(float(g[0])) < 1e-14, backtracks=0)
    assert z is None


def test_inverse_jacobian_follows_good_broyden_updates():
    """After each update the inverse satisfies the secant condition ``H dg = dx`` and equals the explicit
    inverse updated densely by the same rule, ``H + (dx − H dg)(dxᵀH)/(dxᵀH dg)``; a copy's updates leave the
    original unchanged, ``adopt`` takes them."""
    rng = np.random.default_rng(1)
    n = 15
    a = rng.normal(size=(n, n)) + 4.0 * np.eye(n)
    inv = _InverseJacobian(a)
    h = np.linalg.inv(a)
    trial = inv.copy()
    for _ in range(4):
        dx, dg = rng.normal(size=n), rng.normal(size=n)
        trial.update(dx, dg)
        hdg = h @ dg
        h = h + np.outer(dx - hdg, dx @ h) / float(dx @ hdg)
        assert np.max(np.abs(trial.solve(dg) - dx)) < 1e-10 * np.max(np.abs(dx))
    v = rng.normal(size=n)
    assert np.max(np.abs(trial.solve(v) - h @ v)) < 1e-10 * np.max(np.abs(h @ v))
    assert np.max(np.abs(inv.solve(v) - np.linalg.solve(a, v))) < 1e-12  # the original is untouched
    inv.adopt(trial)
    assert np.max(np.abs(inv.solve(v) - h @ v)) < 1e-10 * np.max(np.abs(h @ v))


@pytest.mark.parametrize("bad", ["singular", "nan"])
def test_inverse_jacobian_refuses_a_singular_or_non_finite_matrix(bad):
    a = np.zeros((3, 3)) if bad == "singular" else np.full((3, 3), np.nan)
    with pytest.raises(np.linalg.LinAlgError):
        _InverseJacobian(a)
