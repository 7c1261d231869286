"""Brent's method of :mod:`replica.roots` against ``scipy.optimize.brentq`` (the reference it transcribes)."""

import math

import numpy as np
import pytest
from scipy import optimize

from replica.roots import brentq

FUNCTIONS = [
    (lambda x: x ** 3 - 2 * x - 5, 2.0, 3.0),
    (lambda x: math.cos(x) - x, 0.0, 1.0),
    (lambda x: math.exp(x) - 1e-8, -30.0, 5.0),
    (lambda x: math.tanh(50 * (x - 0.3)), -1.0, 2.0),
    (lambda x: x * (0.7 + 1 / (1 + x)) - 2.0, 0.0, 10.0),  # the shape of the universal-branch equation
    (lambda x: (x - 1e-3) ** 5, 0.0, 1.0),  # flat root
    (lambda x: math.atan(x - 1e6) , 0.0, 2e6),
]


@pytest.mark.parametrize("f,a,b", FUNCTIONS)
@pytest.mark.parametrize("xtol,rtol", [(2e-12, 8.9e-16), (1e-15, 4 * np.finfo(float).eps), (1e-3, 1e-6)])
def test_same_root_and_evaluations_as_scipy(f, a, b, xtol, rtol):
    calls_ours, calls_scipy = [], []
    ours = brentq(lambda x: calls_ours.append(x) or f(x), a, b, xtol=xtol, rtol=rtol, maxiter=500)
    ref = optimize.brentq(lambda x: calls_scipy.append(x) or f(x), a, b, xtol=xtol, rtol=rtol, maxiter=500)
    assert ours == ref
    assert calls_ours == calls_scipy  # the same iterates, not only the same end point


def test_errors():
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1, -1.0, 1.0)
    with pytest.raises(RuntimeError, match="not converged"):
        brentq(lambda x: x ** 3 - 2 * x - 5, 2.0, 3.0, xtol=1e-300, maxiter=3)
    with pytest.raises(ValueError, match="rtol"):
        brentq(lambda x: x, -1.0, 1.0, rtol=1e-20)
    assert brentq(lambda x: x, 0.0, 1.0) == 0.0
