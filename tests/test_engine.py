"""The fixed-point engine: damping convention, guarded Newton, failure statuses."""
import numpy as np
import pytest

from replica.engine import solve_fixed_point


def cubic_map(k=2.0):
    """F(x) = x − k x (x − ½)(x − 1): fixed points 0 and 1 stable, ½ unstable (F'(½) = 1 + k/4)."""
    return lambda x: x - k * x * (x - 0.5) * (x - 1.0)


@pytest.mark.parametrize("x0", [0.05, 0.3, 0.45, 0.55, 0.62, 0.8, 0.97])
def test_guarded_newton_lands_where_the_damped_iteration_does(x0):
    # plain Newton on x − F(x) from next to ½ converges to the unstable point ½; the guarded
    # step must not: the damped iteration decides which fixed point a start reaches
    F = cubic_map()
    plain = solve_fixed_point(F, [x0], damping=0.5)
    guarded = solve_fixed_point(F, [x0], damping=0.5, guarded_newton=True)
    newton = solve_fixed_point(F, [x0], method="newton")
    assert plain.converged and guarded.converged
    expected = 0.0 if x0 < 0.5 else 1.0
    assert plain.x[0] == pytest.approx(expected, abs=1e-9)
    assert guarded.x[0] == pytest.approx(expected, abs=1e-9)
    if abs(x0 - 0.5) < 0.1:
        assert newton.x[0] == pytest.approx(0.5, abs=1e-9)  # the trap the guard avoids


def test_guarded_newton_on_a_coupled_map_needs_fewer_evaluations():
    # two coupled slow contractions x ← A x + b with spectral radius 0.995: the damped
    # iteration needs thousands of steps, Newton one; both give the exact solution
    A = np.array([[0.99, 0.004], [0.004, 0.99]])
    b = np.array([0.01, -0.02])
    exact = np.linalg.solve(np.eye(2) - A, b)
    calls = {"damped": 0, "guarded": 0}

    def counted(name):
        def F(x):
            calls[name] += 1
            return A @ x + b
        return F

    plain = solve_fixed_point(counted("damped"), [0.0, 0.0], damping=0.5, polish_below=None)
    guarded = solve_fixed_point(counted("guarded"), [0.0, 0.0], damping=0.5, guarded_newton=True,
                                polish_below=None)
    np.testing.assert_allclose(plain.x, exact, rtol=1e-6)  # residual test: error ≈ residual/(1 − 0.994)
    np.testing.assert_allclose(guarded.x, exact, rtol=1e-6)
    assert calls["guarded"] < calls["damped"] / 10


def test_nan_map_is_a_failure_not_a_number():
    res = solve_fixed_point(lambda x: x * np.nan, [0.3])
    assert not res.converged
    assert res.status == "nan"


def test_bad_damping_is_rejected():
    with pytest.raises(ValueError, match="damping"):
        solve_fixed_point(cubic_map(), [0.3], damping=1.0)


def test_polish_with_a_given_jacobian():
    """The Newton polish takes ``J`` from ``jacobian`` (no column-by-column differences of its own) and reaches
    the fixed point the damped iteration converges to."""
    rng = np.random.default_rng(1)
    A = 0.9 * rng.standard_normal((30, 30)) / np.sqrt(30)
    b = rng.uniform(-1, 1, 30)

    def F(x):
        return np.tanh(A @ x + b)

    def J(x):
        return (1.0 - np.tanh(A @ x + b) ** 2)[:, None] * A

    calls = []
    damped = solve_fixed_point(F, np.zeros(30), polish_below=None, atol=1e-13, rtol=1e-12)
    polished = solve_fixed_point(F, np.zeros(30), polish_below=1e4, atol=1e-13, rtol=1e-12,
                                 jacobian=lambda x: calls.append(1) or J(x))
    assert damped.converged and polished.converged and polished.info["polished"]
    assert calls
    assert np.max(np.abs(polished.x - damped.x)) < 1e-11
    assert polished.iterations < damped.iterations
