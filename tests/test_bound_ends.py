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
   of the sheet's stability eigenvalue minus 1 (:func:`replica.continuation.branchpoints.end_intervals`); the root
   of the overlaps themselves (2.0274458262) is checked before the sweep snaps the end onto it.
3. Entries that approach their bound exponentially, or turn before it, are no end: the curve is followed as without
   the bound, at a bounded extra cost.
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


@pytest.fixture
def roots(monkeypatch):
    """The roots returned by :func:`~replica.continuation.stepper.bound_end` (before any refinement or snapping of
    the end to a located branch point)."""
    from replica.continuation import stepper

    found = []
    locate = stepper.bound_end

    def spy(*args, **kwargs):
        got = locate(*args, **kwargs)
        if got is not None:
            found.append(float(got[0]))
        return got

    monkeypatch.setattr(stepper, "bound_end", spy)
    return found


def test_a_curve_ends_where_its_entry_reaches_the_bound(roots):
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
    # the root of the entry itself, before the end is refined on the host (models up to arnoldi_size unknowns)
    assert len(roots) == 1 and roots[0] == pytest.approx(ALPHA_0, abs=1e-9)


def test_the_curve_leaving_a_degenerate_branch_point_starts_there_with_projected_iterates(monkeypatch, roots):
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
    # the root of the opening overlaps, before the end is snapped to the branch point (ends within 1e-6 are)
    near = [a for a in roots if abs(a - bp) < 1e-3]
    assert near and all(abs(a - bp) < 5e-9 for a in near), (near, bp)


class ExponentialApproach(ToyMap):
    """``q = 1e-3 e^{3(α − α₀)}`` (the fixed point of ``q ↦ q + (q* − q)/2``), ``p = 0.6``, on ``q ≥ 0``: the
    entry falls towards its bound, never onto it."""

    def __init__(self, bounds=True):
        super().__init__("none")
        self.calls = 0
        if bounds:
            self.lower_bounds = lambda x: (np.array([0]), np.array([0.0]))

    def target(self, alpha):
        return 1e-3 * np.exp(3.0 * (alpha - ALPHA_0))

    def update(self, alpha, x):
        self.calls += 1
        q, p = np.asarray(x, dtype=float)
        q = max(q, 0.0)
        return np.array([q + 0.5 * (self.target(alpha) - q), 0.5 * p + 0.3])


def test_an_exponential_approach_to_the_bound_is_no_end(roots):
    counts = []
    for bounds in (True, False):
        model = ExponentialApproach(bounds)
        a0 = float(ALPHAS[-1])
        x = np.array([model.target(a0), 0.6])
        seed = FixedPointResult(x, True, "converged", "", 0, 0.0, 0.0, "toy", {})
        seed.info["state"] = model.state(a0, x)
        curve = trace_curve(model, ALPHAS, a0, seed, {})
        assert sorted(curve.results) == list(range(ALPHAS.size))  # followed down to the grid's end
        for j, r in curve.results.items():
            assert r.x[0] == pytest.approx(model.target(ALPHAS[j]), rel=1e-8)
        counts.append(model.calls)
    assert roots == []
    assert counts[0] <= 2 * counts[1], counts  # the bound's trials cost at most as much as the curve itself
