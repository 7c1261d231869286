"""replica.continuation.folds.refine_fold on a map with a known saddle-node: the fold is located where it is,
and a vertex of the parabola fit is reported as a fold only where F_x − I is singular there."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from replica.continuation import folds

ALPHA_FOLD = 1.0


class ToyFold:
    """Fixed points of F(x, α) = (x₀ + α_f − α − x₀², x₁/2): the curve α = α_f − x₀², x₁ = 0, whose fold
    (vertex in α, F_x − I = diag(−2x₀, −1/2) singular) is at x₀ = 0, α = α_f."""

    def update(self, alpha, x):
        x = np.asarray(x, dtype=float)
        return np.array([x[0] + ALPHA_FOLD - alpha - x[0] ** 2, 0.5 * x[1]])

    def state(self, alpha, x):
        return SimpleNamespace(alpha=alpha, x=np.asarray(x, dtype=float))


def _accepted():
    # three accepted points on the curve, α increasing towards the fold
    return [(ALPHA_FOLD - x0 ** 2, SimpleNamespace(x=np.array([x0, 0.0]))) for x0 in (0.3, 0.2, 0.1)]


def test_fold_of_a_known_saddle_node_is_located():
    model = ToyFold()
    got = folds.refine_fold(model, _accepted(), 1.0, {})
    assert got is not None
    alpha, res = got
    assert alpha == pytest.approx(ALPHA_FOLD, abs=1e-9)
    assert abs(res.x[0]) < 1e-4 and abs(res.x[1]) < 1e-12
    assert folds.is_singular(model, alpha, res.x)
    assert not folds.is_singular(model, ALPHA_FOLD - 0.04, np.array([0.2, 0.0]))  # a regular point


def test_vertex_where_the_jacobian_is_regular_is_not_a_fold(monkeypatch):
    # the parabola fit finds the same vertex; if F_x − I were regular there it would be a turn of the
    # fit, not a fold: no fold is reported (the caller goes on halving its step)
    monkeypatch.setattr(folds, "is_singular", lambda model, alpha, x: False)
    assert folds.refine_fold(ToyFold(), _accepted(), 1.0, {}) is None
