"""Front-aligned rules for L >= 2 hidden layers (replica/models/deep_fronts.py, docs/deep_linear.md §11).

Independent references: the two-layer profile solver (explicit per-neuron curves, its own
equal-potential front, replica/models/_two_layer_profile.py), the fixed-grid solver with its rule
refined, and identities (f stationary in the front; the envelope identity in α; Gauss rules exact on
polynomials).
"""

import math

import numpy as np
import pytest
from scipy import integrate

from replica.models.deep_fronts import FRONT_MAX, DeepFrontModel, folded_gauss_rule, front_rule
from replica.models.two_layer import TwoLayerModel

TANH = dict(activation="tanh2", delta=0.1)


@pytest.fixture(scope="module")
def two():
    return DeepFrontModel(gammas=(0.5, 0.5), panel_nodes=8, **TANH), TwoLayerModel("tanh2", (0.5, 0.5), 0.1)


@pytest.fixture(scope="module")
def three():
    return DeepFrontModel(gammas=(0.5, 0.5, 0.5), **TANH)


@pytest.fixture(scope="module")
def three_partial(three):
    r = three.solve_from(2.0, three.starts()["layers_1_to_2"][0])
    assert r.converged
    return r


def test_folded_gauss_rule_is_exact_on_polynomials():
    for a, b in ((0.0, 1.3), (1.3, math.inf), (0.2, 0.7)):
        s, w = folded_gauss_rule(a, b, 6)
        assert np.all((s > a) & (s < b)) and np.all(w > 0)
        for k in range(12):  # degree < 2n
            exact = integrate.quad(lambda x: x**k * 2 * math.exp(-x * x / 2) / math.sqrt(2 * math.pi), a, b,
                                   epsabs=1e-14, epsrel=1e-13)[0]
            assert w @ s**k == pytest.approx(exact, rel=1e-11, abs=1e-14), (a, b, k)
    nodes, weights, side = front_rule(1.1, 5)
    assert nodes.size == 12 and weights[:2].tolist() == [0.0, 0.0] and side[:2].tolist() == [0, 1]
    assert weights.sum() == pytest.approx(1.0, abs=1e-13)
    assert np.all(nodes[2:7] < 1.1) and np.all(nodes[7:] > 1.1)
    with pytest.raises(ValueError):
        folded_gauss_rule(1.0, 0.5, 4)


@pytest.mark.parametrize("alpha,start", [(1.0, "layer_1"), (1.5, "layer_1"), (3.0, "informed")])
def test_two_layers_equal_the_profile_solver(two, alpha, start):
    """L = 2: the probes' equal-potential front is the front of the explicit per-neuron curves."""
    fm, tl = two
    a = fm.solve_from(alpha, fm.starts()[start][0]).info["state"]
    b = tl.solve_from(alpha, tl.starts()[start][0]).info["state"]
    assert fm.phase(a) == tl.phase(b)
    assert a.mmse == pytest.approx(b.mmse, rel=2e-5)
    assert a.free_entropy == pytest.approx(b.free_entropy, rel=2e-6)
    if start == "layer_1":  # the front moves with α and lies above the spinodal of the curve
        assert 1.0 < a.fronts[0] < 2.0


def test_free_entropy_is_stationary_in_the_front(three, three_partial):
    """Equal potential ⇔ ∂f/∂front = 0: a front held away from it lowers f at second order."""
    class Frozen(DeepFrontModel):
        def _new_fronts(self, alpha, c):
            return np.array(self._fronts)

    frozen = Frozen(gammas=(0.5, 0.5, 0.5), **TANH)
    x = three_partial.x
    f0 = three_partial.info["state"].free_entropy
    for layer in (0, 1):
        drops = []
        for h in (0.02, 0.04):
            for sign in (1, -1):
                y = x.copy()
                y[layer] += sign * h
                r = frozen.solve_from(2.0, y)
                assert r.converged
                drops.append(f0 - r.info["state"].free_entropy)
        assert min(drops) > 0, drops                          # a maximum along the front
        ratio = (drops[2] + drops[3]) / (drops[0] + drops[1])
        assert 3.0 < ratio < 5.0, ratio                       # quadratic: doubling h quadruples the drop


def test_three_layers_partial_phase_converges_in_the_rule(three, three_partial):
    st = three_partial.info["state"]
    assert three.phase(st) == "layers_1_2"
    assert 1.2 < st.fronts[0] < st.fronts[1] < 1.7                # layer 2's front lies above layer 1's
    fine = DeepFrontModel(gammas=(0.5, 0.5, 0.5), panel_nodes=12, **TANH)
    b = fine.solve_from(2.0, three.interpolate_to(fine, three_partial.x)).info["state"]
    assert abs(st.mmse - b.mmse) / b.mmse < 1e-4
    assert np.allclose(st.fronts, b.fronts, atol=1e-4)
    err = three.discretization_error(2.0, three_partial.x)
    assert 0 < err < 1e-4


def test_envelope_identity_along_the_partial_sheet():
    """df/dα = −(f + ½ ln 2πe D)/α on the partial sheet: f is stationary in the fronts (equal potential)
    up to the rule's error, which falls from 4e-4 (6 nodes per side) to 2e-5 (12 nodes)."""
    gaps = []
    for n in (6, 12):
        model = DeepFrontModel(gammas=(0.5, 0.5, 0.5), panel_nodes=n, **TANH)
        r = model.solve_from(2.0, model.starts()["layers_1_to_2"][0], atol=1e-13, rtol=1e-12)
        h = 1e-3
        f = [model.solve_from(a, r.x, atol=1e-13, rtol=1e-12).info["state"].free_entropy for a in (2.0 - h, 2.0 + h)]
        st = r.info["state"]
        slope = (f[1] - f[0]) / (2 * h)
        expected = -(st.free_entropy + 0.5 * math.log(2 * math.pi * math.e * (0.1 + st.mmse))) / 2.0
        gaps.append(abs(slope / expected - 1.0))
    assert gaps[1] < 1e-4 and gaps[1] < gaps[0] / 5, gaps


def test_universal_point_is_exact(three):
    x = three.universal_point()
    assert np.allclose(three.update(2.0, x), x, atol=1e-10, rtol=0)   # tables of the product channels: m(0) ~ 1e-12
    st = three.state(2.0, x)
    assert st.mmse == pytest.approx(three.mmse_universal, rel=1e-12) and three.phase(st) == "universal"
    assert np.all(st.fronts == FRONT_MAX)


def test_stored_profiles_and_fronts(three, three_partial):
    rec = three_partial.info["state"].record()
    n_s = three.n_s
    assert rec["overlap_layer_1"].shape == (n_s,) and rec["overlap_layer_2"].shape == (n_s, n_s)
    assert rec["front_layer_1"] == pytest.approx(three_partial.x[0])
    # reported profiles jump at the front: 0 below, large above
    q1 = rec["overlap_layer_1"]
    s = three.s_values
    assert np.all(q1[s < rec["front_layer_1"]] < 1e-8) and np.all(q1[s > rec["front_layer_1"]] > 0.5)


def test_bad_options():
    with pytest.raises(ValueError, match="panel_nodes"):
        DeepFrontModel(gammas=(0.5, 0.5, 0.5), panel_nodes=1)
    with pytest.raises(ValueError, match="panel_nodes"):
        DeepFrontModel(gammas=(0.5, 0.5, 0.5), panel_nodes=2.5)
    with pytest.raises(ValueError, match="panel_nodes"):
        DeepFrontModel(gammas=(0.5, 0.5, 0.5), panel_nodes=41)


def _weight_derivative(model, alpha, c, ell, j, h=1e-6):
    """∂f/∂p(j) by second-order one-sided differences of the free entropy in the node's weight."""
    core = model.core
    w = core.label_weights[ell]  # the rule's weights are shared (memoized, read-only): perturbed copies
    vals = []
    for k in (0.0, 1.0, 2.0):
        core.label_weights[ell] = w.copy()
        core.label_weights[ell][j] += k * h
        vals.append(core.free_entropy(alpha, c["Q"], c["hat"]))
    core.label_weights[ell] = w
    return (4.0 * vals[1] - vals[2] - 3.0 * vals[0]) / (2.0 * h)


@pytest.mark.parametrize("alpha,start", [(2.0, "layers_1_to_2"), (4.0, "informed")])
def test_neuron_potential_is_the_weight_derivative_of_f(three, alpha, start):
    x = three.solve_from(alpha, three.starts()[start][0]).x
    fronts, q = three.split(x)
    three.rules(fronts)
    c = three.core.conjugates(alpha, q)
    for ell in (1, 2):
        nodes = [0, 1, 4, 2 * three.panel_nodes + 1]
        phi = three.neuron_potentials(alpha, c, ell, nodes)
        fd = [_weight_derivative(three, alpha, c, ell, j) for j in nodes]
        assert np.allclose(phi, fd, rtol=1e-6, atol=1e-8), (ell, phi, fd)


def test_three_layer_sweep_defaults_to_front_rules(tmp_path):
    """replica-sweep --layers 3 without --s-grid: the front-aligned rules, fronts and error estimate stored."""
    from replica.workflow.cli import sweep_main
    from replica.workflow.io import read_root_attrs, read_sweep

    out = tmp_path / "three.h5"
    rc = sweep_main(["--layers", "3", "--gamma", "0.5", "--activation", "tanh2", "--unit-variance", "--delta", "0.1",
                     "--alpha", "2", "--quiet", "-o", str(out)])
    assert rc == 0
    assert read_root_attrs(out)["s_grid_rule"].startswith("fronts:6")
    data = read_sweep(out)
    part = data["branches"]["layers_1_2"]
    # the equal-potential fronts of the model solved directly (independent of the sweep machinery)
    model = DeepFrontModel(gammas=(0.5, 0.5, 0.5), **TANH)
    st = model.solve_from(2.0, model.starts()["layers_1_to_2"][0]).info["state"]
    assert float(part["front_layer_1"][0]) == pytest.approx(st.fronts[0], abs=1e-6)
    assert float(part["front_layer_2"][0]) == pytest.approx(st.fronts[1], abs=1e-6)
    assert 0 < float(part["discretization_error"][0]) < 1e-3
    assert str(data["equilibrium"]["branch"][0]) == "layers_1_2"


def test_neuron_maps_average_to_the_label_averages_and_jump_at_the_front(three, three_partial):
    """The per-neuron maps are the profiles at the neuron quantiles: their average over the quantiles
    is the label average E_s Q(s) of the state (to the midpoint rule's error, a jump inside one of 64
    bins), and the first layer's map jumps at the layer's front: above it every neuron is on the large root."""
    st = three_partial.info["state"]
    maps = st.neuron_maps
    u, s = three.neuron_u, three.neuron_s
    assert maps[1].shape == (u.size,) and maps[2].shape == (u.size, u.size) and maps[3].shape == (1, u.size)
    assert float(maps[1].mean()) == pytest.approx(st.mean_overlaps[(1, 1)], abs=1.5e-2)
    assert float(maps[2].mean()) == pytest.approx(st.mean_overlaps[(2, 2)], abs=1.5e-2)
    f1 = float(st.fronts[0])
    assert np.all(maps[1][s > f1] > 0.5) and np.all(maps[1][s < f1] < 1e-6)
    rec = st.record()
    assert rec["neuron_overlap_layer_2"].shape == (u.size, u.size)
    assert set(three.dataset_axes["neuron_overlap_layer_2"]) <= set(three.grids) | {"readout_values"}


def test_neurons_plot_of_three_layers_has_one_panel_per_layer(tmp_path):
    """``replica-sweep --layers 3`` stores the per-neuron maps and ``replica-plot --neurons`` draws one
    panel per layer."""
    from replica.workflow.cli import plot_main, sweep_main

    out = tmp_path / "l3.h5"

    assert sweep_main(["--layers", "3", "--gamma", "0.5,0.5,0.5", "--activation", "tanh2", "--unit-variance",
                       "--delta", "0.1", "--alpha", "2,3.5", "-o", str(out), "--quiet"]) == 0
    from replica.workflow.io import read_sweep
    from replica.workflow.plotting import plot_neuron_maps

    fig = plot_neuron_maps(read_sweep(out))
    titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
    assert len(titles) == 3 and titles[0].startswith("layer 1") and titles[2].startswith("layer 3")
    assert plot_main([str(out), "--neurons", "-o", str(tmp_path / "n.png")]) == 0
    assert (tmp_path / "n.png").stat().st_size > 0


def _informed(model, alpha):
    r = model.solve_from(alpha, model.starts()["informed"][0], start="informed")
    assert r.converged
    return r


@pytest.mark.parametrize("law", ["gaussian", "uniform"])
def test_a_symmetric_readout_grid_is_folded_onto_abs_v_exactly(law):
    # the readout enters the equations only through v²: the grid folded onto |v| (half the unknowns of the
    # last layer's matrices) has the fixed point of the signed grid, given as a plain discrete law (not folded)
    from priors.readout_laws import discrete_readout_law, get_readout_law

    from replica.models.deep_fronts import folded_readout_law

    for n in (7, 8):  # an odd grid has a node at 0, kept with its own weight
        grid = get_readout_law(law, grid_size=n)
        fold = folded_readout_law(grid)
        assert np.all(fold.values >= 0) and fold.values.size == (n + 1) // 2 and fold.law is grid.law
        for v, w in zip(fold.values, fold.weights):  # each node carries the mass of ±v
            assert w == pytest.approx(grid.weights[np.isclose(np.abs(grid.values), v, rtol=0, atol=1e-12)].sum(),
                                      rel=1e-12)
            assert np.any(np.isclose(grid.values, v, rtol=1e-13, atol=1e-13))
    signed = get_readout_law(law, grid_size=8)
    folded = DeepFrontModel(gammas=(0.5, 0.5), readout_law=law, readout_grid=8, **TANH)
    plain = DeepFrontModel(gammas=(0.5, 0.5), readout_law=discrete_readout_law(signed.values, signed.weights,
                                                                                exact=False), **TANH)
    assert plain.size - folded.size == 4 * (14 + 1)  # four readout values fewer in Q_2(v, s) and Q_2:1(v)
    a, b = _informed(folded, 4.0).info["state"], _informed(plain, 4.0).info["state"]
    assert a.mmse == pytest.approx(b.mmse, rel=1e-11)
    assert a.free_entropy == pytest.approx(b.free_entropy, rel=1e-11)
    # a law without that symmetry is left as it is
    heavy = get_readout_law("powerlaw:beta=0.3", grid_size=8)
    assert folded_readout_law(heavy) is heavy
    # every quantile grid folds (their symmetry is exact only to ~1e-12 at a few hundred nodes)
    assert all(folded_readout_law(get_readout_law(law, grid_size=n)).values.size == (n + 1) // 2
               for n in range(100, 400))
    # a point carried onto a signed grid takes its value at |v| on both signs
    signed16 = get_readout_law(law, grid_size=16)
    fine = DeepFrontModel(gammas=(0.5, 0.5), readout_law=discrete_readout_law(signed16.values, signed16.weights,
                                                                               exact=False), **TANH)
    x = _informed(folded, 4.0).x
    carried = fine.core.unpack(fine.split(folded.interpolate_to(fine, x))[1])[(2, 1)].ravel()
    v = fine.readout_values
    order = np.argsort(v)
    np.testing.assert_array_equal(carried[order], carried[order][::-1])
    assert np.max(carried) > 0.5


def test_the_error_estimate_of_a_continuous_readout_law_doubles_its_grid():
    # uniform readouts on N quantile nodes: the estimate (twice the Gauss nodes on each side of the front and
    # twice the readout grid) against the actual error, measured against 64 nodes; before the readout grid was
    # doubled too, the estimate was that of the s rule alone (~1e-4, 100x too small at N = 8)
    alpha = 4.0
    ref = _informed(DeepFrontModel(gammas=(0.5, 0.5), readout_law="uniform", readout_grid=64, **TANH),
                    alpha).info["state"].mmse
    for n in (8, 16):
        model = DeepFrontModel(gammas=(0.5, 0.5), readout_law="uniform", readout_grid=n, **TANH)
        assert not model.readout_front
        assert model.refined().readout_grid_nodes == 2 * n
        r = _informed(model, alpha)
        actual = abs(r.info["state"].mmse - ref) / ref
        estimate = model.discretization_error(alpha, r.x)
        assert actual > 1e-3  # the readout grid's error, not the rule's
        assert actual / 3 < estimate < 3 * actual


@pytest.fixture(scope="module")
def gauss_two():
    model = DeepFrontModel(gammas=(0.5, 0.5), readout_law="gaussian", **TANH)
    return model, _informed(model, 4.0)


def test_gaussian_readouts_have_a_front(gauss_two):
    # |v| is a folded standard Gaussian like s: the last layer's readout groups get a front too, at equal potential
    model, r = gauss_two
    assert model.readout_front and model.front_layers == (1, 2) and model.n_fronts == 2
    st = r.info["state"]
    assert model.phase(st) == "layers_1_2"
    f_s, f_v = st.fronts
    assert f_s == 0.0 and 0.1 < f_v < 1.0  # every layer-1 neuron learned; the weakest readouts are not
    rec = st.record()
    assert rec["front_layer_2"] == pytest.approx(f_v)
    q2 = rec["overlap_layer_2"]  # (readout value, s) on the reporting grids, jumping at the front
    assert q2.shape == (model.readout_values.size, model.n_s)
    v = model.readout_values
    assert np.all(q2[v < f_v] < 1e-8) and np.all(q2[v > f_v].mean(axis=1) > 0.5)


def test_free_entropy_is_stationary_in_the_readout_front(gauss_two):
    """Equal potential of the readout probes ⇔ ∂f/∂(readout front) = 0, as for the fronts in s."""
    model, r = gauss_two

    class Frozen(DeepFrontModel):
        def _new_fronts(self, alpha, c):
            return np.array(self._fronts)

    frozen = Frozen(gammas=(0.5, 0.5), readout_law="gaussian", **TANH)
    f0 = r.info["state"].free_entropy
    drops = []
    for h in (0.02, 0.04):
        for sign in (1, -1):
            y = r.x.copy()
            y[1] += sign * h
            got = frozen.solve_from(4.0, y)
            assert got.converged
            drops.append(f0 - got.info["state"].free_entropy)
    assert min(drops) > 0, drops
    ratio = (drops[2] + drops[3]) / (drops[0] + drops[1])
    assert 3.0 < ratio < 5.0, ratio


def test_readout_potential_is_the_weight_derivative_of_f(gauss_two):
    model, r = gauss_two
    fronts, q = model.split(r.x)
    model.rules(fronts)
    c = model.core.conjugates(4.0, q)
    nodes = [0, 1, 4, 2 * model.panel_nodes + 1]
    phi = model.neuron_potentials(4.0, c, 2, nodes)
    fd = [_weight_derivative(model, 4.0, c, 2, j) for j in nodes]
    assert np.allclose(phi, fd, rtol=1e-6, atol=1e-8), (phi, fd)


def test_readout_front_is_the_limit_of_readout_grids(gauss_two):
    # the fixed quantile grids in v (uniform readouts' path, forced here with a plain discrete law) put the front on
    # their nodes, a staircase whose error falls like one node's mass; they approach the front's value, which
    # converges in the Gauss nodes as its estimate says
    from priors.readout_laws import discrete_readout_law, get_readout_law

    model, r = gauss_two
    mmse = r.info["state"].mmse
    gaps = []
    for n in (16, 64):
        law = get_readout_law("gaussian", grid_size=n)
        grid = DeepFrontModel(gammas=(0.5, 0.5), readout_law=discrete_readout_law(law.values, law.weights,
                                                                                  exact=False), **TANH)
        assert not grid.readout_front and model.readout_front
        gaps.append(abs(_informed(grid, 4.0).info["state"].mmse - mmse) / mmse)
    assert gaps[1] < gaps[0] / 3 and gaps[1] < 5e-3, gaps
    fine = DeepFrontModel(gammas=(0.5, 0.5), readout_law="gaussian", panel_nodes=12, **TANH)
    b = fine.solve_from(4.0, model.interpolate_to(fine, r.x)).info["state"]
    err = model.discretization_error(4.0, r.x)
    assert 0 < err < 1e-3
    assert abs(b.mmse - mmse) / mmse < 3 * err


def test_two_layer_sweep_with_gaussian_readouts_follows_the_readout_front(tmp_path):
    """replica-sweep --layers 2 --readout gaussian: the front-aligned rules (no grid in v), the readout front
    stored; with --readout-grid the profile solver on that grid, as before."""
    from replica.workflow.cli import sweep_main
    from replica.workflow.io import read_root_attrs, read_sweep

    argv = ["--layers", "2", "--gamma", "0.5", "--activation", "tanh2", "--unit-variance", "--delta", "0.1",
            "--readout", "gaussian", "--alpha", "4", "--quiet"]
    out = tmp_path / "front.h5"
    assert sweep_main(argv + ["-o", str(out)]) == 0
    assert "readout front" in read_root_attrs(out)["s_grid_rule"]
    data = read_sweep(out)
    name = str(data["equilibrium"]["branch"][0])
    model = DeepFrontModel(gammas=(0.5, 0.5), readout_law="gaussian", **TANH)
    st = _informed(model, 4.0).info["state"]  # solved directly, independent of the sweep machinery
    assert name == "layers_1_2"
    assert float(data["branches"][name]["front_layer_2"][0]) == pytest.approx(st.fronts[1], abs=1e-6)
    assert float(data["equilibrium"]["mmse"][0]) == pytest.approx(st.mmse, rel=1e-6)
    grid = tmp_path / "grid.h5"
    assert sweep_main(argv + ["--readout-grid", "8", "-o", str(grid)]) == 0
    assert not read_root_attrs(grid)["s_grid_rule"].startswith("fronts")


@pytest.mark.parametrize("law", ["gaussian", "uniform", "powerlaw:beta=0.3"])
def test_readout_front_rules_integrate_the_law(law):
    from priors import get_readout_law

    from replica.models.deep_fronts import readout_front_max, readout_front_rule

    density = get_readout_law(law).law
    top = readout_front_max(density)
    for f in (0.0, 0.4, 0.9, 2.0, top):
        nodes, weights, side = readout_front_rule(density, f, 6)
        assert nodes[0] == nodes[1] == min(f, top) and weights[0] == weights[1] == 0.0
        assert np.all(np.diff(nodes[2:8]) >= 0) and np.all(np.diff(nodes[8:]) >= 0)  # ascending on each side
        if weights[2:8].sum() > 0:  # (a front below the power law's support [c, ∞) leaves its low side empty)
            assert np.all(nodes[2:8] <= nodes[0] + 1e-12)
        assert np.all(nodes[8:] >= nodes[0] - 1e-12)
        assert float(weights @ nodes**2) == pytest.approx(1.0, abs=1e-12)  # E v² = 1
        # the mass (the power law's is integrated in t, where v² du is bounded: its mass has a t^1.5 end)
        assert float(weights.sum()) == pytest.approx(1.0, abs=1e-12 if law != "powerlaw:beta=0.3" else 3e-5)
    # nothing learned at the largest front: the mass above it is below the learned-mass floor
    assert float(readout_front_rule(density, top, 6)[1][8:].sum()) < 1e-15


def test_the_continuum_power_law_is_the_limit_of_its_atom_laws():
    # two layers at alpha = 2 (partially specialized, the readout front at |v| = 0.96 inside the support [0.63, ∞)):
    # the laws of K atoms v_p ∝ p^-0.3 approach the continuum law's front solution like K^-(1-2β) = K^-0.4
    model = DeepFrontModel(gammas=(0.5, 0.5), readout_law="powerlaw:beta=0.3", **TANH)
    st = _informed(model, 2.0).info["state"]
    assert model.readout_front and 0.7 < st.fronts[1] < 1.2 and model.phase(st) == "layers_1_2"
    gaps = []
    for k in (16, 64, 256):
        atoms = DeepFrontModel(gammas=(0.5, 0.5), readout_law=f"powerlaw:beta=0.3,k={k}", **TANH)
        gaps.append(abs(_informed(atoms, 2.0).info["state"].mmse - st.mmse) / st.mmse)
    assert gaps[0] > gaps[1] > gaps[2]
    for a, b in zip(gaps, gaps[1:]):
        assert 1.4 < a / b < 2.6, gaps  # 4^0.4 = 1.74


def test_a_branch_of_products_only_keeps_its_readout_front():
    # the host point of a bifurcation (without_overlaps): the readout front orders the rows of the last layer's
    # products too, so a point that has learned W_2:1 but not W_2 keeps it (it went to the end, and the ghost rule
    # then zeroed the products: the host of a product branch was the universal point)
    model = DeepFrontModel(gammas=(0.5, 0.5), readout_law="gaussian", **TANH)
    fronts = np.array([FRONT_MAX, 1.2])
    model.rules(fronts)
    q = {k: np.zeros(shape) for k, shape in model.core.shapes.items()}
    q[(2, 1)] = np.where(model._rules[1][2] == 1, 0.9, 0.0)[:, None]
    x = np.concatenate([fronts, model.core.pack(q)])
    host = model.without_overlaps(x, np.zeros(model.core.size, bool))
    np.testing.assert_array_equal(host, x)
    assert np.any(model.update(2.0, host)[model.n_fronts:] > 0.1)  # the products stay learned one step later
    unlearned = model.without_overlaps(x, np.ones(model.core.size, bool))
    assert unlearned[1] == model.front_max[1]
