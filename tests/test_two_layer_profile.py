"""Two hidden layers, the default s rule: the profile solver of replica/models/_two_layer_profile.py.

Checks against what the solver does not compute itself: the fixed-rule solver of
:class:`TwoLayerModel` on a fine composite rule (an independent quadrature and iteration), the
conjugate equations written out per neuron, the envelope identity df/dα = −(f + ½ ln 2πeD)/α of a
stationary point, and the independence of the located transitions from the α grid.
"""

import math

import numpy as np
import pytest

from replica.activations import get_activation
from replica.continuation import sweep
from replica.continuation.events import envelope_slope as _envelope_slope
from replica.models.two_layer import TwoLayerModel, channel_tilt_gain
from replica.readout_grid import SELECT_LARGEST

GAMMAS = (0.5, 0.5)


@pytest.fixture(scope="module")
def model():
    return TwoLayerModel("tanh2", GAMMAS, 0.1)


def _solve(m, alpha, start):
    r = m.solve_from(alpha, m.starts()[start][0], start=start)
    assert r.converged
    return r


def test_default_is_the_profile_solver_and_its_rule_is_converged(model):
    assert model.profile_solver is not None and model.s_grid_rule.startswith("adaptive")
    assert model.size == 1 + 2 * model.n_readout + 3
    for alpha, start in ((1.5, "layer_1"), (3.0, "informed")):
        r = _solve(model, alpha, start)
        assert 0.0 <= r.x[-1] <= 1e-4  # its own estimate: two rule levels agree
        assert 0.0 <= model.discretization_error(alpha, r.x) <= 1e-4  # one more level from the point


@pytest.mark.parametrize("alpha,start,phase", [(1.5, "layer_1", "layer_1"), (3.0, "layer_1", "layer_1"),
                                               (3.0, "informed", "layers_1_2")])
def test_agrees_with_the_fixed_rule_solver_on_a_fine_panel_rule(model, alpha, start, phase):
    # the dense solver iterates on Q₁(s), Q₂(v, s) on 32 panels (140 nodes), every node that can
    # specialize on its largest root (the informed attractor, front at the spinodal min T): the profile
    # solver with that selection is the same stationary point; where Q₁ jumps (layer_1) the dense
    # error is about the weight of one node (docs/two_layer.md: 1e-4 to 5e-4 here), and the old
    # default of 12 Gauss–Hermite nodes is 0.5-1.7 % off. The default selection (front at the
    # equal-potential point) is another stationary point, of larger f.
    ps = model.profile_solver
    default = _solve(model, alpha, start)
    x0 = default.x[:ps.n_globals + 1].copy()
    x0[-1] = SELECT_LARGEST
    spinodal = ps.solve(alpha, x0)
    assert spinodal.converged
    prof = spinodal.info["state"]
    assert model.phase(prof) == phase == model.phase(default.info["state"])
    dense = TwoLayerModel("tanh2", GAMMAS, 0.1, s_grid=None, s_panels=32)
    st = _solve(dense, alpha, start).info["state"]
    assert dense.phase(st) == phase
    assert prof.mmse == pytest.approx(st.mmse, rel=1e-3)
    assert prof.free_entropy == pytest.approx(st.free_entropy, rel=1e-4)
    f_eq = default.info["state"].free_entropy
    if phase == "layers_1_2":  # smooth Q₁(s), no front: one stationary point, both rules converge fast
        assert prof.mmse == pytest.approx(st.mmse, rel=1e-6)
        assert f_eq == pytest.approx(prof.free_entropy, rel=1e-9)
    else:
        assert f_eq > prof.free_entropy + 1e-5 and f_eq > st.free_entropy + 1e-5
        gh = TwoLayerModel("tanh2", GAMMAS, 0.1, s_grid=12)
        st12 = _solve(gh, alpha, start).info["state"]
        assert abs(st12.mmse - prof.mmse) > 3 * abs(st.mmse - prof.mmse)


@pytest.mark.parametrize("alpha,start", [(1.5, "layer_1"), (3.0, "informed"), (5.0, "product")])
def test_every_neuron_solves_its_conjugate_equations(model, alpha, start):
    # the per-neuron equations of the two-layer module docstring, written out here, at the reported
    # effective readouts: Q̂₁(s) from b s² and the second layer, Q̂₂(v, s), Q = m_P(Q̂) (Gaussian prior:
    # m(r) = r/(1 + r))
    r = _solve(model, alpha, start)
    st = r.info["state"]
    g1, g2 = model.gammas
    act1, act2 = model.activations
    n_v = model.n_readout
    D, inner, t = r.x[0], r.x[1:1 + n_v], r.x[1 + n_v:1 + 2 * n_v]
    assert st.mmse + model.delta == pytest.approx(D, rel=1e-9)
    s2 = model.s_values**2
    q1, q2 = st.overlap_layer_1, st.overlap_layer_2
    p, v2 = model.readout_weights, model.v2
    g2p = act2.g_prime(inner)
    tau = model.tilt(t)
    r21 = alpha * model.a * v2 * g2p / (g2 * D)
    w = channel_tilt_gain(model.channel, tau, r21)
    q2_hat = alpha * np.outer(v2 * g2p, act1.g(q1)) / (g1 * g2 * D) + np.outer(w, q1) / g1
    q1_hat = alpha / g1 * act1.g_prime(q1) * (model.b * s2 + (p * v2 * g2p) @ q2) / D + g2 / g1 * ((p * w) @ q2)
    np.testing.assert_allclose(st.overlap_hat_layer_2, q2_hat, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(q2, q2_hat / (1.0 + q2_hat), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(st.overlap_hat_layer_1, q1_hat, rtol=1e-8, atol=1e-10)  # g₁'(0) ≈ 1e-16, not 0
    np.testing.assert_allclose(q1, q1_hat / (1.0 + q1_hat), rtol=1e-9, atol=1e-10)
    # atol: at Q₂:₁ = 0 the Python g₂'(0) is 1e-16 of rounding (kernel minus its polynomial), the
    # compiled series 0
    np.testing.assert_allclose(st.overlap_product_2_1, model.channel.overlap(tau + r21), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("alpha,start", [(1.5, "layer_1"), (2.5, "layer_1"), (3.0, "informed")])
def test_envelope_identity_in_alpha(model, alpha, start):
    # f = −½ ln(2πeD) + G/α with D and G functions of the order parameters only, so at a stationary
    # point df/dα = −G/α² = −(f + ½ ln 2πeD)/α. The layer-1 front moves with α: a quadrature that did
    # not follow it would break this at the order of one node's weight.
    r0 = _solve(model, alpha, start)
    h = 1e-4 * alpha
    f = {}
    for sgn in (-1, 1):
        rr = model.solve_from(alpha + sgn * h, None, r0.x, start=start)
        assert rr.converged
        f[sgn] = rr.info["state"].free_entropy
    st = r0.info["state"]
    D = st.mmse + model.delta
    derivative = (f[1] - f[-1]) / (2 * h)
    expected = -(st.free_entropy + 0.5 * math.log(2 * math.pi * math.e * D)) / alpha
    assert derivative == pytest.approx(expected, rel=1e-5)
    # the slope the equilibrium crossings are located with (replica.branches) is this identity
    assert model.envelope_identity and _envelope_slope(model, alpha, st) == pytest.approx(derivative, rel=1e-5)


def test_sweep_has_one_layer_1_branch_and_grid_independent_transitions():
    # no staircase (one branch per phase sheet, not one per node the front crosses), and every
    # change of the equilibrium located independently of the α grid
    m = TwoLayerModel("tanh2", GAMMAS, 0.1)
    results = [sweep(m, np.linspace(a0, a1, n), progress=False) for a0, a1, n in ((1.9, 2.3, 3), (1.95, 2.35, 4))]
    for res in results:
        names = set(res.branches)
        assert "layer_1" in names and not any(n.startswith("layer_1-") for n in names)
        assert res.branches["layer_1"]["exists"].all()
    changes = [[(c["from"].split("-")[0], c["to"].split("-")[0], c["alpha"]) for c in res.equilibrium_changes
                if c["located"]] for res in results]
    assert changes[0] and [c[:2] for c in changes[0]] == [c[:2] for c in changes[1]]
    assert changes[0][0][:2] == ("layer_1", "layers_1_2")
    for a, b in zip(changes[0], changes[1]):
        assert a[2] == pytest.approx(b[2], rel=1e-6)
    for key in ("alpha_sp", "alpha_c"):
        assert results[0].transitions[key] == pytest.approx(results[1].transitions[key], rel=1e-6)


def test_second_layer_without_linear_part_keeps_the_exact_fixed_rule():
    # b = 0: Q₁ cannot depend on s, every rule exact for E 1 and E s² is exact
    acts = (get_activation("tanh2", unit_variance=True), get_activation("tanh2", drop_hermite=(1,), unit_variance=True))
    m = TwoLayerModel(acts, GAMMAS, 0.1)
    assert m.b == pytest.approx(0.0, abs=1e-12) and m.profile_solver is None and m.s_grid == 12


def test_bad_s_grid_string():
    with pytest.raises(ValueError, match="s_grid"):
        TwoLayerModel("tanh2", GAMMAS, 0.1, s_grid="fine")


def test_one_sheet_solved_on_two_rule_levels_is_one_branch():
    # 4-point readouts: the partially specialized sheet is reached from seeds whose adaptive rules
    # stopped at different levels (their points differ by the discretization error, ~1e-5); compared
    # on one level they are one stationary point, so the sheet is one branch. Two distinct stable
    # curves cannot end at the same fold, so no two branches may share an end.
    m = TwoLayerModel("tanh2", GAMMAS, 0.1, readout_law="4point")
    res = sweep(m, np.linspace(0.5, 8, 6), progress=False)
    ends = [(name, a) for name, b in res.branches.items() if name != "universal"
            for a in (b.alpha_start, b.alpha_end) if np.isfinite(a)]
    for i, (n1, a1) in enumerate(ends):
        for n2, a2 in ends[i + 1:]:
            assert n1 == n2 or abs(a1 - a2) > 1e-6 * a1, (n1, n2, a1)
    first = res.equilibrium_changes[0]
    assert (first["from"], first["to"], first["kind"]) == ("layer_1", "layers_1_2", "crossing")
    assert 1.3 < res.branches["layers_1_2"].alpha_start < first["alpha"] < 1.5


def test_a_sheet_between_two_grid_points_still_sets_the_equilibrium():
    # the partially specialized layers_1_2 sheet lives on [1.9963, 2.1706] only: on a grid with no point
    # there it is reached by the jump from the fully specialized sheet's fold and kept (its continuation
    # steps as its points), so the located changes do not depend on the grid
    m = TwoLayerModel("tanh2", GAMMAS, 0.1)
    coarse = sweep(m, np.linspace(0.5, 6.0, 6), progress=False)
    fine = sweep(m, np.linspace(1.9, 2.3, 3), progress=False)
    sheet = coarse.branches["layers_1_2"]
    assert not sheet["exists"].any() and sheet.alpha_start == pytest.approx(1.99633578, rel=1e-8)
    for key in ("alpha_sp", "alpha_c"):
        assert coarse.transitions[key] == pytest.approx(fine.transitions[key], rel=1e-8)
    assert [(c["from"], c["to"]) for c in coarse.equilibrium_changes] == \
        [(c["from"], c["to"]) for c in fine.equilibrium_changes]


@pytest.mark.parametrize("alpha,start", [(1.5, "layer_1"), (3.0, "informed")])
def test_per_neuron_maps_are_each_neurons_own_fixed_point(model, alpha, start):
    # the neuron quantile u is the fraction of first-layer neurons with a stronger effective readout,
    # P(|s'| > |s|) = u; at each u the stored Q₁, Q₂ solve the per-neuron equations at that |s|
    from scipy.stats import norm

    st = _solve(model, alpha, start).info["state"]
    u, s = model.neuron_u, model.neuron_s
    np.testing.assert_allclose(2 * norm.sf(s), u, rtol=1e-12)
    r = _solve(model, alpha, start)
    g1, g2 = model.gammas
    act1, act2 = model.activations
    n_v = model.n_readout
    D, inner, t = r.x[0], r.x[1:1 + n_v], r.x[1 + n_v:1 + 2 * n_v]
    q1, q2 = st.neuron_overlap_layer_1, st.neuron_overlap_layer_2
    p, v2 = model.readout_weights, model.v2
    g2p = act2.g_prime(inner)
    w = channel_tilt_gain(model.channel, model.tilt(t), alpha * model.a * v2 * g2p / (g2 * D))
    q2_hat = alpha * np.outer(v2 * g2p, act1.g(q1)) / (g1 * g2 * D) + np.outer(w, q1) / g1
    q1_hat = alpha / g1 * act1.g_prime(q1) * (model.b * s**2 + (p * v2 * g2p) @ q2) / D + g2 / g1 * ((p * w) @ q2)
    np.testing.assert_allclose(q2, q2_hat / (1.0 + q2_hat), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(q1, q1_hat / (1.0 + q1_hat), rtol=1e-8, atol=1e-10)
    # the map averaged over neurons is E_s Q₁ (midpoint rule in u: one quantile's width at the front)
    assert np.mean(q1) == pytest.approx(st.collective[0], abs=1.5 / u.size)
    # the fixed rule reports the same maps by interpolation where Q₁(s) is smooth (no front)
    if start == "informed":
        dense = TwoLayerModel("tanh2", GAMMAS, 0.1, s_grid=None, s_panels=32)
        st_d = _solve(dense, alpha, start).info["state"]
        np.testing.assert_allclose(st_d.neuron_overlap_layer_1, q1, atol=1e-5)
