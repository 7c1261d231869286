"""The sequence of feature-learning transitions of a many-feature target (issue 40, item 2).

A 20-atom power-law readout law (``v_p ∝ p^−0.3``), ``tanh(2x)`` without its linear part (no degree-2 part:
``R̂₂ = 0``), γ = 0.5, Δ = 0.04: each group of equal ``|v|`` is learned through its own first-order transition.
The sweep's located transitions (``/feature_transitions``) are checked against the one-hidden-layer equations
reduced by hand for μ₂ = 0 and Gaussian weights (written below with scipy and the activation's exact ``g``,
``g'``): with the ``k`` strongest groups learned, ``Q_p`` is the largest root of
``Q = c_p g'(Q)/(1 + c_p g'(Q))``, ``c_p = α v_p²/(γD)``, the others ``Q_p = 0``, and
``D = Δ + Σ_p w_p v_p² (g(1) − g(Q_p))``; ``f = −½ ln(2πeD) + (γ/α) Σ_p w_p [Q̂_p/2 − ½ ln(1 + Q̂_p) − Q_p Q̂_p/2]``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from priors import get_readout_law
from replica.activations import get_activation
from replica.workflow.cli import sweep_main
from replica.workflow.io import read_sweep

GAMMA, DELTA, LAW = 0.5, 0.04, "powerlaw:beta=0.3,k=20"
ACT = get_activation("tanh2", drop_hermite=(1,))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("features") / "features.h5"
    assert sweep_main(["--activation", "tanh2", "--drop-hermite", "1", "--gamma", str(GAMMA), "--delta", str(DELTA),
                       "--readout", LAW, "--alpha", "0.15:2.5:12", "--quiet", "-o", str(out)]) == 0
    return read_sweep(out)


def _groups():
    law = get_readout_law(LAW)
    s = np.round(np.asarray(law.values, float) ** 2, 12)
    groups = np.unique(s)[::-1]
    w = np.array([np.sum(np.asarray(law.weights)[s == g]) for g in groups])
    return groups, w


_Q = np.linspace(1e-4, 1.0, 2001)
_GP = ACT.g_prime(_Q)


def _largest_root(c):
    """Largest root in (0, 1) of Q = c g'(Q)/(1 + c g'(Q)), or 0 (only Q = 0)."""
    q, gp = _Q, _GP
    h = q - c * gp / (1.0 + c * gp)
    idx = np.flatnonzero((h[:-1] < 0.0) & (h[1:] >= 0.0))
    if idx.size == 0:
        return 0.0
    j = int(idx[-1])
    return optimize.brentq(lambda x: x - c * ACT.g_prime(x) / (1.0 + c * ACT.g_prime(x)), q[j], q[j + 1],
                           xtol=1e-15, rtol=1e-15)


def _family(alpha, k):
    """The stationary point with the k strongest groups learned: (f, mmse, Q per group) of largest f, or None."""
    s, w = _groups()
    g1 = float(ACT.g(np.array(1.0)))

    def profile(D):
        Q = np.array([_largest_root(alpha * s[p] / (GAMMA * D)) if p < k else 0.0 for p in range(s.size)])
        return Q

    def phi(D):
        Q = profile(D)
        return D - DELTA - float(np.sum(w * s * (g1 - ACT.g(Q))))

    grid = np.linspace(DELTA * (1 + 1e-9), DELTA + float(np.sum(w * s)) * g1 * (1 + 1e-9), 60)
    values = np.array([phi(D) for D in grid])
    best = None
    for j in np.flatnonzero(np.sign(values[:-1]) != np.sign(values[1:])):
        D = optimize.brentq(phi, grid[j], grid[j + 1], xtol=1e-16, rtol=1e-15)
        Q = profile(D)
        if k and np.any(Q[:k] == 0.0):
            continue  # a learned group without a specialized root: not this family
        qhat = Q / (1.0 - Q)
        f = -0.5 * math.log(2 * math.pi * math.e * D) + GAMMA / alpha * float(
            np.sum(w * (qhat / 2 - 0.5 * np.log1p(qhat) - Q * qhat / 2)))
        if best is None or f > best[0]:
            best = (f, D - DELTA, Q)
    return best


def test_every_group_is_learned_once_strongest_first(sweep):
    ft = sweep["feature_transitions"]
    on = np.asarray(ft["equilibrium"], bool)
    groups, alpha = np.asarray(ft["group"])[on], np.asarray(ft["alpha"])[on]
    assert sorted(groups.tolist()) == list(range(20))
    order = np.argsort(groups)
    assert np.all(np.diff(alpha[order]) >= 0.0)  # strongest first (β > 0)
    s, w = _groups()  # each entry names its group's v² and readout mass (the law's own)
    np.testing.assert_allclose(np.asarray(ft["s"])[on], s[groups], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(ft["mass"])[on], w[groups], rtol=1e-12)
    kinds = np.asarray(ft["kind"])[on][order]
    first = sweep["transitions"]["alpha_c"]
    assert kinds[0] == "equilibrium_change" and abs(alpha[order][0] - first) < 1e-12
    assert set(kinds[1:]) <= {"feature", "equilibrium_change"} and "feature" in set(kinds)


def test_located_transitions_are_free_entropy_crossings_of_the_reduced_equations(sweep):
    """At every located α_p the hand-reduced stationary points with p and p + 1 groups learned have equal free
    entropy (their difference changes sign across α_p ± 1e-6), and the stored mmse and overlap of the group on
    both sides are theirs (1e-8)."""
    ft = sweep["feature_transitions"]
    feature = np.flatnonzero(np.asarray(ft["kind"]) == "feature")
    assert feature.size >= 10
    for i in feature[:: max(1, feature.size // 6)]:
        a, p = float(ft["alpha"][i]), int(ft["group"][i])
        lo, hi = _family(a, p), _family(a, p + 1)
        assert abs(hi[0] - lo[0]) < 1e-11, (a, p)
        eps = 1e-6 * a
        assert _family(a - eps, p + 1)[0] < _family(a - eps, p)[0]
        assert _family(a + eps, p + 1)[0] > _family(a + eps, p)[0]
        assert abs(ft["mmse_before"][i] - lo[1]) < 1e-8 and abs(ft["mmse_after"][i] - hi[1]) < 1e-8
        assert abs(ft["overlap_after"][i] - hi[2][p]) < 1e-8 and ft["overlap_before"][i] == 0.0


def test_located_counts_are_the_reduced_family_of_largest_free_entropy(sweep):
    """At every grid α the number of groups learned by the located transitions is that of the hand-reduced
    stationary point of largest free entropy (among k − 2 … k + 2 learned groups), and the sweep's equilibrium
    equals that point (mmse 1e-8, count, learned mass) at every grid α, also just below a group's α_p, where the
    solver's equal-potential selection (first order in a group's mass of 1/20) learns the group early and the
    stored point is put back in the family the located transitions count."""
    eq = sweep["equilibrium"]
    ft = sweep["feature_transitions"]
    located = np.asarray(ft["alpha"])[np.asarray(ft["equilibrium"], bool)]
    _, w = _groups()
    exact = 0
    for a, mmse, k, mass in zip(eq["alpha"], eq["mmse"], eq["learned_features"], eq["learned_mass"]):
        fams = [(k_, _family(a, k_)) for k_ in range(max(0, int(k) - 2), min(20, int(k) + 2) + 1)]
        k_best, best = max(((k_, fam) for k_, fam in fams if fam is not None), key=lambda t: t[1][0])
        assert int(np.sum(located <= a)) == k_best, a
        assert int(k) == k_best, a
        assert abs(mmse - best[1]) < 1e-8, a
        assert abs(mass - float(np.sum(w[:k_best]))) < 1e-12
        exact += 1
    assert exact == eq["alpha"].size
