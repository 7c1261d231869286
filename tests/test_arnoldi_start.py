"""ARPACK's stabilities are reproducible: every call starts from the same vector
(:func:`replica.continuation.operators.arnoldi_start`). Without it scipy draws a random start per call, and a sweep of
four hidden layers (676 unknowns, stabilities from ARPACK) found a different set of branches from run to run."""

from __future__ import annotations

import numpy as np

from replica.continuation.operators import leading_eigenvalue, matrix_free, stability


class LinearMap:
    """``F(x) = A x + b`` on 120 unknowns, A a fixed non-symmetric matrix: its stability is ``max Re λ(A)``."""

    def __init__(self):
        rng = np.random.default_rng(7)
        self.A = rng.standard_normal((120, 120)) / np.sqrt(120.0)
        self.b = rng.standard_normal(120)

    def update(self, alpha, x):
        return self.A @ np.asarray(x, dtype=float) + self.b


def test_matrix_free_stability_is_the_same_in_every_call_and_equals_the_dense_one():
    model = LinearMap()
    x = np.linspace(0.2, 0.8, 120)
    assert matrix_free(model, x)  # more than arnoldi_size unknowns, no vectorized map: ARPACK
    values = [leading_eigenvalue(model, 1.0, x) for _ in range(4)]
    assert len(set(values)) == 1, values
    assert stability(model, 1.0, x) == values[0]
    exact = float(np.max(np.linalg.eigvals(model.A).real))
    assert abs(values[0] - exact) < 1e-6 * max(1.0, abs(exact))
