"""Ends of curves traced by the damped iteration (solvers with labels, :func:`replica.continuation.curves.trace_labelled`).

A 30-atom law of nearly equal strengths (``powerlaw:beta=0.001,k=30``: ``v²`` in [0.9982, 1.0050]), ``tanh(2x)``
without its linear part, γ = 0.5, Δ = 0.04, one hidden layer: the specialized curve ends at a fold, below which the
damped iteration from the curve's last point crawls through the fold's ghost for ∝ 1/√(α_sp − α) iterations before
it falls to the universal point (13,460 iterations at 7e-8 below the fold). The bisection of the end limits each of
its steps to ``labelled_end_budget`` iterations; the fold it locates is checked against the one-hidden-layer equations
reduced by hand for μ₂ = 0 and Gaussian weights, with every group learned (written below with scipy and the
activation's exact ``g'``): ``Q_p`` the largest root of ``Q = c_p g'(Q)/(1 + c_p g'(Q))``, ``c_p = α v_p²/(γD)``, and
``D`` a root of ``φ(D) = D − Δ − Σ_p w_p v_p² (g(1) − g(Q_p))``; the fold is the α where the largest value of ``φ``
over the specialized roots is 0 (its two roots in D merge).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from priors import get_readout_law
from replica.activations import get_activation

GAMMA, DELTA, LAW = 0.5, 0.04, "powerlaw:beta=0.001,k=30"
ACT = get_activation("tanh2", drop_hermite=(1,))
_Q = np.linspace(1e-4, 1.0, 4001)
_GP = ACT.g_prime(_Q)


def _largest_root(c):
    h = _Q - c * _GP / (1.0 + c * _GP)
    idx = np.flatnonzero((h[:-1] < 0.0) & (h[1:] >= 0.0))
    if idx.size == 0:
        return 0.0
    j = int(idx[-1])
    return optimize.brentq(lambda q: q - c * ACT.g_prime(q) / (1.0 + c * ACT.g_prime(q)), _Q[j], _Q[j + 1],
                           xtol=1e-15, rtol=1e-15)


def _hand_fold():
    law = get_readout_law(LAW)
    s, w = np.asarray(law.values, float) ** 2, np.asarray(law.weights, float)
    g1 = float(ACT.g(np.array(1.0)))

    def phi(alpha, D):
        Q = np.array([_largest_root(alpha * sp / (GAMMA * D)) for sp in s])
        assert np.all(Q > 0.0)  # every group on its specialized root in the bracket below
        return D - DELTA - float(np.sum(w * s * (g1 - ACT.g(Q))))

    def top(alpha):  # the largest φ over D ∈ [0.1, 0.116] (its maximum lies at D ≈ 0.108 near the fold)
        r = optimize.minimize_scalar(lambda D: -phi(alpha, D), bounds=(0.1, 0.116), method="bounded",
                                     options={"xatol": 1e-12})
        return -r.fun

    return optimize.brentq(top, 1.055, 1.065, xtol=1e-13, rtol=1e-13)


def _one_layer(law):
    """The one-hidden-layer model of this file (``tanh2`` without its linear part, γ, Δ) with the readout ``law``."""
    from replica.workflow.model_options import build_model

    return build_model({"layers": 1, "gamma": [GAMMA], "activation": "tanh2", "drop_hermite": [1],
                        "unit_variance": False, "prior": "gaussian", "readout": law, "readout_grid": None,
                        "delta": DELTA})


@pytest.fixture(scope="module")
def model():
    return _one_layer(LAW)


def test_fold_end_is_located_without_crawling_through_its_ghost(model, monkeypatch):
    """α_sp equals the hand-reduced fold to 1e-7 relative (``labelled_end_rtol``), and the sweep evaluates the map
    fewer than 8,000 times (measured 2,300–2,700 on four grids; about 40,000 when every bisection step ran to convergence)."""
    from replica.continuation import sweep
    from replica.readout_grid import ProfileSolver

    calls = [0]
    evaluate = ProfileSolver.evaluate

    def counted(self, *args, **kwargs):
        calls[0] += 1
        return evaluate(self, *args, **kwargs)

    monkeypatch.setattr(ProfileSolver, "evaluate", counted)
    res = sweep(model, np.linspace(0.9, 1.5, 3), progress=False)
    spec = [b for name, b in res.branches.items() if name != "universal"]
    assert len(spec) == 1
    assert spec[0].alpha_start == pytest.approx(_hand_fold(), rel=1e-7, abs=0.0)
    assert calls[0] < 8000, calls[0]


def test_fold_end_does_not_depend_on_the_damping():
    """Damping invariance: the damping η changes the path of the iteration, not its fixed points, so the fold located
    at η = 0.97 equals the one at η = 0.5 to ``labelled_end_rtol`` (1e-7 relative). A bisection step needs about
    ``0.5/(1 − η)`` times the iterations of η = 0.5 (at η = 0.97 steps inside the curve need 301 of them), so a
    budget that does not scale with η counts such steps as outside: on this law (``powerlaw:beta=0.05,k=40``, whose
    fold lies at α ≈ 1.0429) it moved the fold by about 7e-7."""
    from replica.continuation import sweep

    model = _one_layer("powerlaw:beta=0.05,k=40")
    starts = []
    for eta in (0.5, 0.97):
        res = sweep(model, np.linspace(0.9, 1.5, 3), progress=False, solve_kw={"damping": eta})
        spec = [b for name, b in res.branches.items() if name != "universal"]
        assert len(spec) == 1
        starts.append(spec[0].alpha_start)
    assert 1.0 < starts[0] < 1.1
    assert starts[1] == pytest.approx(starts[0], rel=1e-7, abs=0.0)
