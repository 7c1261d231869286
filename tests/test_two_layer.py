"""Two hidden layers with linear parts (docs/theory.md §6.2; derivation in replica/models/two_layer.py)."""

import numpy as np
import pytest
from finite_differences import gradient
from optional import require

from replica.branches import sweep
from replica.models.deep import DeepModel
from replica.models.two_layer import TwoLayerModel, effective_readout_grid, product_channel

GAMMAS = (0.7, 1.3)


@pytest.fixture(scope="module")
def model():
    return TwoLayerModel("tanh2", GAMMAS, 0.1, s_grid=6)


def _solved(model, alpha, start):
    res = model.solve_from(alpha, model.starts()[start][0], start=start)
    assert res.converged
    return res


def _all_params(model, alpha, res):
    st = res.info["state"]
    return {"q1": st.overlap_layer_1, "q1_hat": st.overlap_hat_layer_1, "q2": st.overlap_layer_2,
            "q2_hat": st.overlap_hat_layer_2, "q21": st.overlap_product_2_1, "r21": st.overlap_hat_product_2_1}


@pytest.mark.parametrize("alpha, start", [(6.0, "informed"), (6.0, "partial_s_q50"), (3.0, "layer_1"),
                                          (12.0, "informed")])
def test_free_entropy_is_stationary_in_every_order_parameter(model, alpha, start):
    # γ₁ ≠ γ₂: the α/γ₁ vs α/γ₂ question of docs/theory.md §6.2 matters here
    res = _solved(model, alpha, start)
    params = _all_params(model, alpha, res)
    # (the value of f itself is checked by the envelope theorem and the reductions in
    # tests/test_two_layer_activations.py)
    for name, value in params.items():
        def f(z, name=name):
            return model.free_entropy(alpha, **{**params, name: z})
        grad = gradient(f, value)
        # measured ≤ 6e-10 (finite-difference noise with h = 1e-6)
        assert np.max(np.abs(grad)) < 1e-8, (name, grad)


def test_stationarity_selects_alpha_over_gamma1(model):
    # f is affine in Q̂₁(s) through −(γ₁/α) p(s) Q₁ Q̂₁/2, so the Q̂₁ at which ∂f/∂Q₁(s) = 0 is
    # (2α/γ₁) ∂f/∂Q₁(s)|_{Q̂₁=0} / p(s). It equals the α/γ₁ equation, not the α/γ₂ variant.
    alpha = 6.0
    res = _solved(model, alpha, "informed")
    params = _all_params(model, alpha, res)
    zero = {**params, "q1_hat": np.zeros_like(params["q1_hat"])}
    grad = gradient(lambda z: model.free_entropy(alpha, **{**zero, "q1": z}), params["q1"])
    q1_hat_f = 2 * alpha / model.gammas[0] * grad / model.s_weights
    c = model.conjugates(alpha, res.x)
    g1p = model.activations[0].g_prime(c["q1"])
    g2p = model.activations[1].g_prime(c["inner"])
    second = g1p * ((model.readout_weights * model.v2 * g2p) @ c["q2"]) / c["D"]
    assert np.max(np.abs(second)) > 1e-2
    # the finite differences measure p(s) Q̂₁(s) (roundoff ~1e-16/h in f): compare on that scale;
    # Q̂₁ itself at the largest |s| (weight ~1e-6) carries a relative error ~3e-6
    weighted = model.s_weights * c["q1_hat"]
    np.testing.assert_allclose(model.s_weights * q1_hat_f, weighted, rtol=1e-6, atol=1e-7 * np.max(weighted))
    variant = c["q1_hat"] + alpha * (1 / model.gammas[1] - 1 / model.gammas[0]) * second
    assert np.max(np.abs(q1_hat_f - variant)) > 0.1 * np.max(np.abs(alpha / model.gammas[0] * second))


def test_fixed_point_is_invariant_under_damping(model):
    x = [model.solve_from(6.0, model.starts()["informed"][0], damping=eta, polish_below=None).x
         for eta in (0.2, 0.5, 0.8)]
    assert np.max(np.abs(x[0] - x[1])) < 1e-8
    assert np.max(np.abs(x[0] - x[2])) < 1e-8


def test_one_more_iteration_changes_nothing(model):
    res = _solved(model, 6.0, "informed")
    assert np.max(np.abs(model.update(6.0, res.x) - res.x)) < 1e-9


@pytest.mark.parametrize("gammas", [(0.7, 1.3), (1.3, 0.7)])
def test_reduces_to_deep_model_without_linear_part(gammas):
    mod = {"drop_hermite": (0, 1, 2), "unit_variance": True}
    two = TwoLayerModel("tanh2", gammas, 0.1, s_grid=4, **mod)
    deep = DeepModel("tanh2", gammas, 0.1, **mod)
    assert two.a == pytest.approx(0.0, abs=1e-20) and two.b == pytest.approx(0.0, abs=1e-20)
    for alpha in (6.0, 10.0):
        rd = deep.solve_from(alpha, deep.starts()["informed"][0])
        rt = two.solve_from(alpha, two.starts()["informed"][0])
        sd, st = rd.info["state"], rt.info["state"]
        assert rd.converged and rt.converged
        assert st.mmse == pytest.approx(sd.mmse, rel=1e-9, abs=1e-12)
        assert st.free_entropy == pytest.approx(sd.free_entropy, rel=1e-9)
        np.testing.assert_allclose(st.overlap_layer_1, sd.overlap_layers[0], rtol=1e-8)
        np.testing.assert_allclose(st.overlap_layer_2[0], sd.overlap_layers[1][0], rtol=1e-8)
        np.testing.assert_allclose(st.overlap_hat_product_2_1, 0.0, atol=0)


def test_universal_branch_learns_only_the_linear_part(model):
    st = model.solve_universal(2.0).info["state"]
    assert st.mmse == pytest.approx(model.b * model.g1_one + model.g2_one, rel=1e-12)
    assert np.max(np.abs(model.update(2.0, np.zeros(model.size)))) < 1e-11  # g(0), g'(0) to rounding
    assert model.phase(st) == "universal"


@pytest.mark.parametrize("panels", [1, 4])
def test_universal_branch_is_the_same_on_every_s_rule(model, panels):
    # at Q ≡ 0 the equations see the s rule only through E 1 and E s² (both 1): the universal point
    # on a coarse panel rule equals the one on the Gauss–Hermite grid, which is why its
    # discretization_error is 0 (a panel rule without its moment matching was off by 5e-3 at P = 1)
    coarse = model.with_s_grid(s_grid=None, s_panels=panels)
    a = model.solve_universal(2.0).info["state"]
    b = coarse.solve_universal(2.0).info["state"]
    assert b.mmse == pytest.approx(a.mmse, rel=1e-12)
    assert b.free_entropy == pytest.approx(a.free_entropy, rel=1e-12)
    assert coarse.discretization_error(2.0, coarse.solve_universal(2.0).x) == 0.0


def test_errors_decrease_along_the_informed_branch(model):
    mm = [_solved(model, a, "informed").info["state"].mmse for a in (4.0, 6.0, 9.0, 12.0)]
    assert np.all(np.diff(mm) < 0)
    assert mm[0] < model.mmse_universal


def test_effective_readout_grid_moments():
    s, p = effective_readout_grid(5)
    assert p.sum() == pytest.approx(1.0, abs=1e-14)
    for j, mom in ((1, 1.0), (2, 3.0), (3, 15.0)):
        assert p @ s ** (2 * j) == pytest.approx(mom, rel=1e-12)
    with pytest.raises(ValueError):
        effective_readout_grid(0)


@pytest.mark.parametrize("gammas, ratios", [((0.5, 0.5), (2.0, 1.0)), ((0.7, 1.3), (1.3, 0.7)),
                                            ((2.0, 0.25), (4.0, 8.0))])
def test_product_channel_map(gammas, ratios):
    ch = product_channel(gammas)
    assert (ch.aspect_ratio_p, ch.aspect_ratio_n) == pytest.approx(ratios)


def test_product_channel_matches_sampled_product_rie():
    # the map of the normalization: W₂:₁ = W₂W₁/√k₁ (unit-variance entries) observed as
    # Y = √λ W₂:₁ + Z; the optimal RIE error per entry matches the channel's mmse(λ)
    rng = np.random.default_rng(0)
    d, g1, g2, lam = 400, 0.5, 0.5, 2.0
    k1, k2 = int(g1 * d), int(g2 * d)
    ch = product_channel((g1, g2))
    errs = []
    for _ in range(2):
        w21 = rng.standard_normal((k2, k1)) @ rng.standard_normal((k1, d)) / np.sqrt(k1)
        y = np.sqrt(lam) * w21 + rng.standard_normal((k2, d))
        # the channel's own normalization: S = S̃/(MP)^{1/4}, noise variance Δ = 1/λ per 1/√(MP)
        scale = (k2 * d) ** 0.25
        s_hat = ch.denoise(y / np.sqrt(lam) / scale, 1.0 / lam) * scale
        errs.append(np.mean((s_hat - w21) ** 2))
    assert np.mean(errs) == pytest.approx(ch.mmse(lam), rel=0.03)


def test_bad_input():
    with pytest.raises(ValueError, match="gammas"):
        TwoLayerModel("tanh2", (1.0,), 0.1)
    with pytest.raises(ValueError, match="E σ"):
        TwoLayerModel("tanh2", (1.0, 1.0), 0.1, unit_variance=False)
    with pytest.raises(ValueError, match="odd"):
        TwoLayerModel("relu", (1.0, 1.0), 0.1)
    with pytest.raises(ValueError, match="delta"):
        TwoLayerModel("tanh2", (1.0, 1.0), -1.0)


def test_sweep_layer_1_specializes_first_then_layer_2(model):
    # docs/theory.md §6.2 "specialization starts in layer 1 and propagates outward"
    res = sweep(model, np.array([0.1, 3.0, 4.0, 5.0, 9.0]), progress=False)
    # the onset of layer 1 is progressive in s (groups with large |s| first, each at its own
    # fold: the branches layer_1, layer_1-2, … of the staircase), so only its bracket is
    # asserted; layers 2 and the product then specialize by a first-order crossing
    phases = ["universal"] + [c["to"].split("-")[0] for c in res.equilibrium_changes]
    assert [p for k, p in enumerate(phases) if k == 0 or p != phases[k - 1]] == ["universal", "layer_1", "layers_1_2"]
    changes = [res.equilibrium_changes[0], [c for c in res.equilibrium_changes if c["to"] == "layers_1_2"][0]]
    assert 0.1 < changes[0]["alpha"] < 3.0 and changes[0]["to"] == "layer_1"
    assert changes[1]["kind"] == "crossing"
    assert 4.0 < changes[1]["alpha"] < 5.0
    # at the crossing both phases have the same free entropy
    for c in changes[1:]:
        fs = []
        for name in (c["from"], c["to"]):  # Newton from each branch's stored point nearest to α_c
            b = res.branches[name]
            i = min(b.points, key=lambda k: abs(res.alpha[k] - c["alpha"]))
            r = model.solve_from(c["alpha"], None, b.points[i], method="newton")
            assert r.converged and model.phase(r.info["state"]) == name.split("-")[0]
            fs.append(r.info["state"].free_entropy)
        assert fs[0] == pytest.approx(fs[1], abs=1e-8)


def test_effective_readout_grid_convergence_on_the_specialized_phase():
    # docs/two_layer.md: with both layers specialized Q₁(s) is smooth in s and the folded
    # Gauss–Hermite rule converges fast (measured at γ = (0.5, 0.5), α = 2.5: 0.0571117 (8),
    # 0.0571345 (16), 0.0571331 (32), 0.0571330 (64)); on the layer-1-only phase Q₁(s) has a
    # step at the spinodal |s| and the convergence is only ~1% (see the docs)
    mm = []
    for n_s in (16, 32):
        m = TwoLayerModel("tanh2", (0.5, 0.5), 0.1, s_grid=n_s)
        mm.append(m.solve_from(2.5, m.starts()["informed"][0]).info["state"].mmse)
    assert mm[0] == pytest.approx(mm[1], abs=1e-5)


def _validation_module(name="two_layer_validation"):
    """Load ``scripts/experiments/<name>.py`` as a module."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "experiments" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_quick_seeded_validation_informed_chain():
    # tiny seeded HMC run (d = 12, one teacher, 200 steps): the informed chain stays on the
    # specialized branch; at this size only the order of magnitude is meaningful
    require("jax", extra="experiments")
    require("blackjax", extra="experiments")
    val = _validation_module()
    theory = val.theory_table([5.0], (0.5, 0.5), 0.1, s_grid=8, transitions=False)
    samp = val.sampling_table([5.0], (0.5, 0.5), 0.1, dim=12, teachers=1, steps=200, seed=0, n_test=2000)
    eq = theory["branches"][theory["equilibrium"][0]][0]
    assert eq["phase"] == "layers_1_2"
    assert samp["informed"]["error_mean"][0] == pytest.approx(eq["mmse"], rel=0.5)
    assert samp["informed"]["error_mean"][0] < 0.5 * theory["mmse_universal"]


def test_finite_size_extrapolation_recovers_the_large_d_limit():
    # y(d) = y_inf + b/d exactly: the weighted fit recovers y_inf and b whatever the weights; with
    # Gaussian noise of known standard error, the reported standard error of y_inf is the spread of the
    # estimates over repetitions (within 15%), and non-finite points are left out
    study = _validation_module("finite_size_study")
    dims = np.array([40.0, 60.0, 80.0, 120.0])
    exact = study.extrapolate(dims, 0.2 + 3.0 / dims, [0.01, 0.02, 0.01, 0.05])
    assert exact["infinity"] == pytest.approx(0.2, abs=1e-12) and exact["slope"] == pytest.approx(3.0, rel=1e-10)
    rng = np.random.default_rng(0)
    sems = np.array([0.004, 0.006, 0.008, 0.01])
    fits = [study.extrapolate(dims, 0.2 + 3.0 / dims + sems * rng.standard_normal(4), sems) for _ in range(2000)]
    estimates = np.array([f["infinity"] for f in fits])
    reported = np.median([f["infinity_sem"] for f in fits])
    assert abs(estimates.mean() - 0.2) < 4 * estimates.std() / np.sqrt(estimates.size)
    assert reported == pytest.approx(estimates.std(), rel=0.15)
    left = study.extrapolate([40, 60, 80], [0.3, np.nan, 0.25], [0.01, 0.01, 0.01])
    assert left["infinity"] == pytest.approx(0.3 - (0.3 - 0.25) / (1 / 40 - 1 / 80) / 40, rel=1e-10)
    assert np.isnan(study.extrapolate([40, 60], [0.3, np.nan], [0.01, 0.01])["infinity"])


@pytest.mark.slow
def test_quick_finite_size_study_runs_and_resumes(tmp_path):
    # the seeded smoke test of scripts/experiments/finite_size_study.py (≈ 1 min): every file written,
    # the report has both protocols; a second call reuses the finished runs (no new sampling)
    require("jax", extra="experiments")
    study = _validation_module("finite_size_study")
    assert study.main(["--quick", "-o", str(tmp_path)]) == 0
    report = __import__("json").loads((tmp_path / "finite_size_study.json").read_text())
    assert set(report) == {"two_layer", "rademacher"}
    assert (tmp_path / "two_layer_d16.h5").exists() and (tmp_path / "rademacher_d12.h5").exists()
    before = (tmp_path / "two_layer_d16.h5").stat().st_mtime_ns
    assert study.main(["--quick", "--only", "two_layer", "-o", str(tmp_path)]) == 0
    assert (tmp_path / "two_layer_d16.h5").stat().st_mtime_ns == before


@pytest.mark.slow
def test_validation_against_hmc_d30():
    # scripts/experiments/two_layer_validation.py at d = 30, γ = (0.5, 0.5), Δ = 0.1, 3 teachers
    # (≈ 4 min on 2 cores). Measured (seed 0, 1500 steps): informed HMC 0.0629 ± 0.0033 vs theory
    # 0.0571 at α = 2.5, 0.0192 ± 0.0001 vs 0.0190 at α = 5; uninformed chains stay far above
    # (0.175, 0.109): the specialized phase is not reached from random starts at this budget.
    require("jax", extra="experiments")
    require("blackjax", extra="experiments")
    val = _validation_module()
    alphas = [2.5, 5.0]
    theory = val.theory_table(alphas, (0.5, 0.5), 0.1, transitions=False)
    samp = val.sampling_table(alphas, (0.5, 0.5), 0.1, dim=30, teachers=3, steps=1500, seed=0, n_test=10_000)
    for i in range(len(alphas)):
        eq = theory["branches"][theory["equilibrium"][i]][i]
        err, sem = samp["informed"]["error_mean"][i], samp["informed"]["error_sem"][i]
        # finite-size tolerance: 15% of the theory value or 3 s.e.m., whichever is larger
        assert abs(err - eq["mmse"]) < max(0.15 * eq["mmse"], 3 * sem)
        assert samp["uninformed"]["error_mean"][i] > err


def test_branches_are_named_by_phase_with_transitions_per_branch(model, tmp_path):
    from replica.workflow.io import read_sweep, write_sweep

    res = sweep(model, np.array([3.0, 4.0, 5.0, 9.0]), progress=False)
    assert set(res.branches) == {"universal", "layer_1", "layers_1_2"}
    for name in ("layer_1", "layers_1_2"):
        b = res.branches[name]
        ok = b["exists"] & b["converged"]
        for i in np.flatnonzero(ok):  # every stored point belongs to the phase it is filed under
            assert model.phase(model.state(res.alpha[i], b.points[i])) == name
    per = res.branch_transitions["layers_1_2"]
    change = [c for c in res.equilibrium_changes if c["to"] == "layers_1_2"][0]
    assert change["kind"] == "crossing" and change["mmse_after"] < change["mmse_before"]
    # the branch becomes the equilibrium at its crossing with layer_1, after it appears
    assert per["alpha_c"] == change["alpha"] == res.transitions["alpha_c"]
    assert 3.0 < per["alpha_sp"] <= per["alpha_c"] < 5.0
    path = write_sweep(tmp_path / "two.h5", res, {"layers": 2})
    data = read_sweep(path)
    back = data["branch_transitions"]
    assert back["layers_1_2"] == pytest.approx(per, nan_ok=True)
    assert set(back) == {"universal", "layer_1", "layers_1_2"}
    assert list(data["equilibrium_changes"]["to_branch"]) == [c["to"] for c in res.equilibrium_changes]
    assert data["branch_attributes"]["layers_1_2"]["start_kind"] == "fold"


# ------------------------------------------------------------------ the rule in s (issue 13, item 4)
def test_panel_rule_moments_and_node_weights():
    # E s^{2j} = (2j − 1)!! (independent closed form); every node carries a weight and an
    # s²-weight of order 1/panels at most (equal panels in the measure φ(s)(1 + s²) ds)
    from math import prod

    from replica.models.two_layer import effective_readout_panels

    for panels, tol in ((4, 2e-3), (16, 5e-4), (64, 3e-4)):
        s, p = effective_readout_panels(panels)
        assert np.all(np.diff(s) > 0) and np.all(p > 0) and p.sum() == pytest.approx(1.0, abs=1e-14)
        for j in (1, 2, 3):
            assert p @ s ** (2 * j) == pytest.approx(prod(range(1, 2 * j, 2)), rel=tol)
        assert np.max(p * (1 + s * s)) < 1.5 / panels


def test_panel_rule_integrates_a_front_to_the_panel_mass():
    # a jump of Q₁(s) at s = c: E[s² 1{s > c}] = 2(c φ(c) + 1 − Φ(c)) (closed form); the error of
    # the rule is bounded by the s²-weight of one node (≲ 1/panels), unlike Gauss–Hermite
    from scipy import stats

    from replica.models.two_layer import effective_readout_panels

    cs = np.linspace(1.0, 3.5, 26)
    exact = 2 * (cs * stats.norm.pdf(cs) + stats.norm.sf(cs))
    worst = {}
    for panels in (8, 32):
        s, p = effective_readout_panels(panels)
        got = np.array([p @ (s * s * (s > c)) for c in cs])
        worst[panels] = np.max(np.abs(got - exact))
        assert worst[panels] < 1.0 / panels
    s, p = effective_readout_grid(48)  # same number of nodes as 8 panels
    gh = np.max(np.abs(np.array([p @ (s * s * (s > c)) for c in cs]) - exact))
    assert worst[8] < gh


def test_s_grid_bad_sizes():
    from replica.models.two_layer import effective_readout_panels

    for bad in (0, 151, 2.5):
        with pytest.raises(ValueError, match="s_grid must be an integer in"):
            effective_readout_grid(bad)
    for bad in (0, 1.5, 200_000):
        with pytest.raises(ValueError, match="panels must be an integer"):
            effective_readout_panels(bad)
    with pytest.raises(ValueError, match="panels"):
        TwoLayerModel("tanh2", (0.5, 0.5), 0.1, s_grid=None, s_panels=0)


def test_converged_s_grid_agrees_with_a_4x_finer_grid():
    # issue 13: the refined default rule and a grid with 4× the panels agree to 1e-3 in mmse and
    # free entropy on both non-universal phases: layer_1 (Q₁(s) jumps at the front) at α = 1.5
    # and 3, layers_1_2 at α = 3 (γ = (0.5, 0.5), tanh(2x) with unit variance, Δ = 0.1). With the
    # 12-node Gauss–Hermite grid the layer_1 mmse is off by 0.5% (α = 1.5) and 1.7% (α = 3).
    from replica.models.two_layer import converge_s_grid

    base = TwoLayerModel("tanh2", (0.5, 0.5), 0.1, s_grid=None)
    model, info = converge_s_grid(base, [1.5, 3.0])
    assert info["error"] <= 1e-3 and model.s_panels == info["panels"] >= base.s_panels
    fine = model.with_s_grid(s_grid=None, s_panels=4 * model.s_panels)
    gh12 = TwoLayerModel("tanh2", (0.5, 0.5), 0.1, s_grid=12)
    for alpha, start, phase in ((1.5, "layer_1", "layer_1"), (3.0, "layer_1", "layer_1"),
                                (3.0, "informed", "layers_1_2")):
        st = []
        for m in (model, fine, gh12):
            r = m.solve_from(alpha, m.starts()[start][0], start=start)
            assert r.converged and m.phase(r.info["state"]) == phase
            st.append(r.info["state"])
        assert st[0].mmse == pytest.approx(st[1].mmse, rel=1e-3)
        assert st[0].free_entropy == pytest.approx(st[1].free_entropy, rel=1e-3)
        if phase == "layer_1":  # the old default is not converged there
            assert abs(st[2].mmse - st[1].mmse) > 3e-3 * st[1].mmse
