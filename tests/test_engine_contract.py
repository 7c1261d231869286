"""The contract of :func:`replica.engine.solve_fixed_point`, tested directly.

* convergence means *every* component passes ``|F(x) − x| ≤ atol + rtol |x|``, checked here
  on maps whose components converge at very different rates, in either order;
* the returned point is the one whose residual was tested, and ``residual`` is that residual;
* the damping convention ``x ← η x + (1 − η) F(x)`` (exact iteration counts on a constant map);
* non-finite values and divergence end with status ``"nan"``, a budget overrun with
  ``"max_iter"``, never with a number presented as converged.
"""

import math

import numpy as np
import pytest

from replica.engine import STATUS_MESSAGES, solve_fixed_point

ATOL, RTOL = 1e-12, 1e-10


def scaled_residual(update, x):
    fx = np.asarray(update(x), dtype=float)
    return np.abs(fx - x) / (ATOL + RTOL * np.abs(x))


def two_rates(slow_first):
    """x_fast ← 0.1 x_fast + 0.9, x_slow ← 0.999 x_slow + 0.002: fixed point (1, 2)."""
    def F(x):
        x = np.asarray(x, dtype=float)
        fast, slow = (x[1], x[0]) if slow_first else (x[0], x[1])
        new = (0.1 * fast + 0.9, 0.999 * slow + 0.002)
        return np.array([new[1], new[0]] if slow_first else list(new))
    fixed = np.array([2.0, 1.0] if slow_first else [1.0, 2.0])
    return F, fixed


@pytest.mark.parametrize("slow_first", [False, True])
@pytest.mark.parametrize("damping", [0.0, 0.5])
def test_every_component_must_pass_the_residual_test(slow_first, damping):
    F, fixed = two_rates(slow_first)
    res = solve_fixed_point(F, np.zeros(2), damping=damping, atol=ATOL, rtol=RTOL, polish_below=None,
                            max_iter=200000)
    assert res.converged and res.status == "converged"
    r = scaled_residual(F, res.x)
    assert np.all(r <= 1.0), r  # every component, not only the first or the last
    assert res.residual == pytest.approx(float(np.max(r)), rel=1e-6)
    # the slow component (contraction 0.999) is then within residual/(1 − 0.999) of its fixed point
    np.testing.assert_allclose(res.x, fixed, rtol=0, atol=1e3 * (ATOL + RTOL * 2.0) * 1.01)
    # the slow component needs thousands of iterations; the fast one alone would need ~15
    assert res.iterations > 1000


@pytest.mark.parametrize("damping", [0.0, 0.3, 0.8])
def test_damping_convention_exact_iteration_count(damping):
    # F ≡ c: x_t = c + η^t (x₀ − c), so the residual test first passes at the smallest t with
    # η^t |x₀ − c| ≤ atol + rtol |x_t|; iterations counts evaluations, t + 1
    c, x0 = 1.0, 0.0
    res = solve_fixed_point(lambda x: np.full_like(x, c), [x0], damping=damping, atol=1e-6, rtol=0.0,
                            polish_below=None)
    t = 1 if damping == 0.0 else math.ceil(math.log(1e-6 / abs(x0 - c)) / math.log(damping))
    assert res.converged
    assert res.iterations == t + 1
    assert res.x[0] == pytest.approx(c + damping**t * (x0 - c), abs=1e-15)
    assert res.damping == damping


def test_returned_point_is_the_tested_one_when_not_converged():
    F, _ = two_rates(False)
    res = solve_fixed_point(F, np.zeros(2), damping=0.5, polish_below=None, max_iter=50, atol=ATOL, rtol=RTOL)
    assert not res.converged and res.status == "max_iter"
    assert res.message == STATUS_MESSAGES["max_iter"]
    assert res.iterations == 50
    # the residual reported is the residual at the returned point
    assert res.residual == pytest.approx(float(np.max(scaled_residual(F, res.x))), rel=1e-9)
    assert res.residual > 1.0


@pytest.mark.parametrize("component", [0, 1])
def test_nan_in_any_component_is_a_failure(component):
    calls = {"n": 0}

    def F(x):
        calls["n"] += 1
        out = 0.5 * np.asarray(x, dtype=float) + 0.1
        if calls["n"] >= 3:
            out[component] = np.nan
        return out

    res = solve_fixed_point(F, [0.0, 0.0], polish_below=None)
    assert not res.converged and res.status == "nan"
    assert res.message == STATUS_MESSAGES["nan"]
    assert np.all(np.isfinite(res.x))  # the last finite iterate, flagged as a failure
    assert res.iterations == 3


def test_divergence_is_a_failure():
    with np.errstate(over="ignore", invalid="ignore"):
        res = solve_fixed_point(lambda x: 10.0 * x**2 + 1.0, [1.0], damping=0.0, polish_below=None,
                                max_iter=1000)
    assert not res.converged and res.status == "nan"
    assert res.iterations < 1000


def test_newton_method_reports_its_own_residual():
    F, fixed = two_rates(True)
    res = solve_fixed_point(F, [1.5, 0.5], method="newton", atol=ATOL, rtol=RTOL)
    assert res.converged
    np.testing.assert_allclose(res.x, fixed, rtol=1e-10)
    assert np.all(scaled_residual(F, res.x) <= 1.0)
