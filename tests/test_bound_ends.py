"""Ends of curves along which an entry of the packed point falls to its lower bound
(:func:`replica.continuation.stepper.bound_end`): located at the entry's root, not where a corrector whose iterates
are projected onto the domain stops.

1. A map with a known transcritical point, bounded below: ``q ≥ 0``, read clipped by the map. Its curve
   ``q = tanh(α − α₀)`` reaches the bound at α₀, followed backwards from the top of the grid.
2. Two hidden layers, Gaussian readouts, Δ = 0.1 (front-aligned rules): the curve that leaves the partially
   specialized sheet at its degenerate branch point opens the sheet's zero small-root overlaps linearly in α. With
   the overlaps of the corrector's iterates projected onto ``[0, 1]`` (the map reads them clipped there), the curve
   followed backwards crept on along the sheet, those overlaps at 2e-9–4e-9 within the residual test, and its start
   was reported at 2.0273775, 7e-5 below the branch point. The branch point is located independently, as the root
   of the sheet's stability eigenvalue minus 1 (:func:`replica.continuation.branchpoints.end_intervals`).
"""

from __future__ import annotations

import numpy as np
import pytest

from replica.continuation.curves import trace_curve
from replica.engine import FixedPointResult

from test_branch_points import ALPHA_0, ALPHAS, ToyMap


class BoundedTranscritical(ToyMap):
    """:class:`ToyMap` ``("transcritical")`` on the domain ``q ≥ 0`` (the map reads ``max(q, 0)``; iterates are
    projected onto it), with the bound declared (``lower_bounds``)."""

    def __init__(self):
        super().__init__("transcritical")

    def update(self, alpha, x):
        return super().update(alpha, self.project(x))

    def project(self, x):
        y = np.array(x, dtype=float)
        y[0] = max(y[0], 0.0)
        return y

    def lower_bounds(self, x):
        return np.array([0]), np.array([0.0])


def test_a_curve_ends_where_its_entry_reaches_the_bound():
    model = BoundedTranscritical()
    a0 = float(ALPHAS[-1])
    x = np.array([np.tanh(a0 - ALPHA_0), 0.6])
    seed = FixedPointResult(x, True, "converged", "", 0, 0.0, 0.0, "toy", {})
    seed.info["state"] = model.state(a0, x)
    curve = trace_curve(model, ALPHAS, a0, seed, {})
    end = curve.ends[-1]
    assert end.kind == "bifurcation"
    assert end.alpha == pytest.approx(ALPHA_0, abs=1e-9)
    assert sorted(curve.results) == [j for j in range(ALPHAS.size) if ALPHAS[j] > ALPHA_0]
    for j, r in curve.results.items():
        assert r.x[0] == pytest.approx(np.tanh(ALPHAS[j] - ALPHA_0), rel=1e-9)


def test_the_curve_leaving_a_degenerate_branch_point_starts_there_with_projected_iterates(monkeypatch):
    from replica.continuation import sweep
    from replica.models.deep_fronts import DeepFrontModel
    from replica.workflow.model_options import build_model

    project = DeepFrontModel.project

    def projected(self, x):
        y = project(self, x)
        y[self.n_fronts:] = np.clip(y[self.n_fronts:], 0.0, 1.0)
        return y

    monkeypatch.setattr(DeepFrontModel, "project", projected)
    model = build_model({"layers": 2, "gamma": [0.5, 0.5], "activation": "tanh2", "drop_hermite": [],
                         "unit_variance": True, "prior": "gaussian", "readout": "gaussian", "readout_grid": None,
                         "delta": 0.1})
    res = sweep(model, np.linspace(0.5, 4.0, 8), progress=False)
    host = res.branches["layers_1_2"]
    (bp,) = [a for a in host.branch_points if 2.0 < a < 2.05]  # the root of the sheet's eigenvalue − 1
    assert bp == pytest.approx(2.0274458243, abs=1e-8)  # the same on the fine grid 1.98:2.06:9
    # the curve leaving it (another one, layers_1_2-2, leaves the sheet's layer-1 panel at 2.0177)
    (leaving,) = [b for b in res.branches.values() if b.start_kind == "bifurcation" and abs(b.alpha_start - bp) < 1e-3]
    assert leaving.alpha_start == pytest.approx(bp, abs=2e-9)
