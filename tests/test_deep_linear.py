"""Deep networks with linear parts, any depth (replica/models/deep_linear.py, docs/deep_linear.md)."""

import numpy as np
import pytest

from replica.branches import sweep
from replica.models.deep import DeepModel
from replica.models.deep_linear import DeepLinearModel, matrix_keys, phase_label, product_channel_shape
from replica.models.two_layer import TwoLayerModel, product_channel
from finite_differences import gradient as _fd_gradient
from test_two_layer import _validation_module  # shared helper

ACTS3 = ("tanh2", "erf", "tanh")  # different activations per layer (all odd, with a linear part)
GAMMAS3 = (0.7, 1.3, 0.9)

#: its tests share the product-channel tables of GAMMAS3 (the three-factor W₃:₁ about 40 s of CPU), of (0.5,)*3
#: and of (0.5,)*4 (about 40 s), and a module fixture: one process for the whole file (--dist loadgroup),
#: which builds each table once
pytestmark = pytest.mark.xdist_group("test_deep_linear")


@pytest.fixture(scope="module")
def model3():
    return DeepLinearModel(ACTS3, GAMMAS3, 0.1, s_grid=4)


def test_matrix_keys_and_channel_shapes():
    assert matrix_keys(2) == [(1, 1), (2, 2), (2, 1)]
    assert matrix_keys(3) == [(1, 1), (2, 2), (3, 3), (2, 1), (3, 2), (3, 1)]
    # two factors: the channel of the two-layer solver (both orientations of W₂:₁)
    for gam in [(0.7, 1.3), (1.3, 0.7), (0.5, 0.5)]:
        ch = product_channel(gam)
        assert product_channel_shape(gam, 2, 1) == pytest.approx((ch.aspect_ratio_p, ch.aspect_ratio_n))
    # W₃:₂ is k₃ × k₁ with inner k₂; W₃:₁ (k₃ × d) is the exact three-factor channel with
    # inner widths k₁, k₂ (sorted ratios to the small side k₃)
    assert product_channel_shape((0.7, 1.3, 0.9), 3, 2) == pytest.approx((0.9 / 0.7, 1.3 / 0.7))
    r1, inner = product_channel_shape((0.7, 1.3, 0.9), 3, 1)
    assert r1 == pytest.approx(1 / 0.9) and inner == pytest.approx((0.7 / 0.9, 1.3 / 0.9))
    r1, inner = product_channel_shape((0.5,) * 4, 4, 1)
    assert r1 == 2.0 and inner == (1.0, 1.0, 1.0)
    assert phase_label([1, 2], False) == "layers_1_2" and phase_label([1], True) == "layer_1+product"
    assert phase_label([], False) == "universal" and phase_label([], True) == "product"


@pytest.mark.parametrize("gammas", [(0.7, 1.3), (1.3, 0.7)])
def test_two_layers_reduce_to_the_two_layer_solver(gammas):
    # L = 2: the same packing, map, free entropy and starts as replica.models.two_layer (to 1e-8)
    acts = ("tanh2", "erf")
    two = TwoLayerModel(acts, gammas, 0.1, s_grid=5)
    deep = DeepLinearModel(acts, gammas, 0.1, s_grid=5)
    assert two.size == deep.size
    x = np.random.default_rng(1).uniform(0.05, 0.95, two.size)
    assert np.max(np.abs(two.update(4.0, x) - deep.update(4.0, x))) < 1e-12
    assert deep.mmse_universal == pytest.approx(two.mmse_universal, rel=1e-14)
    for alpha, start in [(6.0, "informed"), (3.0, "layer_1"), (6.0, "partial_s_q50")]:
        r2 = two.solve_from(alpha, two.starts()[start][0], start=start)
        # the same solver options as TwoLayerModel (Newton polish on: it selects among the
        # nearby s-staircase points, docs/deep_linear.md §6)
        rd = deep.solve_from(alpha, deep.starts()[start][0], start=start, polish_below=1e4)
        assert r2.converged and rd.converged
        s2, sd = r2.info["state"], rd.info["state"]
        assert np.max(np.abs(r2.x - rd.x)) < 1e-8
        assert sd.mmse == pytest.approx(s2.mmse, abs=1e-8)
        assert sd.free_entropy == pytest.approx(s2.free_entropy, abs=1e-8)
        assert deep.phase(sd) == two.phase(s2)


def test_no_linear_part_reduces_to_the_deep_solver():
    gammas = GAMMAS3
    # μ₁ = 0: products decouple (r = 0), overlaps do not depend on s; DeepModel's equations
    kw = dict(drop_hermite=(0, 1, 2), unit_variance=True)
    deep = DeepModel("tanh2", gammas, 0.1, **kw)
    lin = DeepLinearModel("tanh2", gammas, 0.1, s_grid=3, **kw)
    for alpha in (12.0, 25.0):
        rd = deep.solve_from(alpha, deep.starts()["informed"][0], start="informed")
        sd = rd.info["state"]
        q = sd.overlap_layers
        x = lin.pack({(1, 1): q[0], (2, 2): q[1], (3, 3): q[2]})
        # the products sit at their tilts: L − 1 applications of the map put them there
        for _ in range(lin.L - 1):
            x = lin.update(alpha, x)
        assert np.max(np.abs(lin.update(alpha, x) - x)) < 1e-9
        st = lin.state(alpha, x)
        assert st.mmse == pytest.approx(sd.mmse, abs=1e-9)
        assert st.free_entropy == pytest.approx(sd.free_entropy, abs=1e-9)
        for ell in (1, 2, 3):
            assert np.allclose(st.overlaps_by_matrix[(ell, ell)], q[ell - 1], atol=1e-9)
        for P in lin.products:
            assert np.all(st.overlap_hats[P] == 0.0)
    # q = 0 at small α in both
    assert lin.solve_universal(1.0).info["state"].mmse == pytest.approx(
        deep.solve_universal(1.0).info["state"].mmse, abs=1e-12)


@pytest.mark.parametrize("tilt_split, alpha, start", [("top", 6.0, "informed"), ("top", 4.0, "layers_1_to_2"),
                                                       ("top", 2.0, "layer_1"), ("bottom", 6.0, "informed"),
                                                       ("bottom", 4.0, "layers_1_to_2")])
def test_free_entropy_is_stationary_in_every_order_parameter(tilt_split, alpha, start):
    # L = 3, different activation per layer, γ₁ ≠ γ₂ ≠ γ₃: ∂f = 0 in every entry of every
    # overlap and conjugate (layers, products W₂:₁, W₃:₂, W₃:₁)
    model = DeepLinearModel(ACTS3, GAMMAS3, 0.1, s_grid=3, tilt_split=tilt_split)
    res = model.solve_from(alpha, model.starts()[start][0], start=start, rtol=1e-13, atol=1e-14, polish_below=1e4)
    assert res.converged
    st = res.info["state"]
    Q, H = st.overlaps_by_matrix, st.overlap_hats
    assert st.free_entropy == pytest.approx(model.free_entropy(alpha, Q, H), abs=0)
    assert max(float(np.max(q)) for q in Q.values()) > 0.3  # a non-trivial point
    worst = 0.0
    for which, params in (("Q", Q), ("hat", H)):
        for key, value in params.items():
            def f(z, key=key, which=which):
                q2 = {**Q, key: z} if which == "Q" else Q
                h2 = {**H, key: z} if which == "hat" else H
                return model.free_entropy(alpha, q2, h2)
            grad = _fd_gradient(f, value)
            worst = max(worst, float(np.max(np.abs(grad))))
            assert np.max(np.abs(grad)) < 1e-7, (which, key, grad)
    assert worst >= 0.0


def test_universal_point_and_informed_branch(model3):
    # Q ≡ 0 is exact and learns only the linear paths: mmse = Σ_m A_{L+1,m+1} E ρ² g_m(1)
    u = model3.solve_universal(2.0).info["state"]
    a = model3.a
    expected = a[1] * a[2] * model3.g_one[0] * float(model3.s_weights @ model3.s_values**2) \
        + a[2] * model3.g_one[1] * float(model3.s_weights @ model3.s_values**2) + model3.g_one[2]
    assert u.mmse == pytest.approx(expected, rel=1e-13)
    # g_ℓ'(0) = 0 (tabulated kernels: to 1e-12)
    assert np.max(model3.update(2.0, np.zeros(model3.size))) < 1e-12
    r = model3.solve_from(12.0, model3.starts()["informed"][0], start="informed")
    st = r.info["state"]
    assert r.converged and model3.phase(st) == "layers_1_2_3" and st.mmse < 0.2 * u.mmse


def test_damping_does_not_move_the_fixed_point(model3):
    pts = []
    for damping in (0.2, 0.6):
        r = model3.solve_from(10.0, model3.starts()["informed"][0], damping=damping)
        assert r.converged
        pts.append(r.x)
    assert np.max(np.abs(pts[0] - pts[1])) < 1e-8


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="activation"):
        DeepLinearModel(("tanh2", "relu", "tanh"), (1, 1, 1))
    with pytest.raises(ValueError, match="activation"):
        DeepLinearModel(("tanh2", "erf"), (1, 1, 1))
    with pytest.raises(ValueError, match="inner layers"):
        DeepLinearModel("tanh2", (1, 1, 1), unit_variance=False)
    with pytest.raises(ValueError, match="gammas"):
        DeepLinearModel("tanh2", (1, -1, 1))
    with pytest.raises(ValueError, match="tilt_split"):
        DeepLinearModel("tanh2", (1, 1, 1), tilt_split="middle")


def test_sweep_names_branches_by_phase_and_stores_every_layer():
    model = DeepLinearModel("tanh2", (0.5, 0.5, 0.5), 0.1, s_grid=3)
    res = sweep(model, [4.0, 8.0], progress=False, locate=False)
    assert "layers_1_2_3" in res.branches
    b = res.branches["layers_1_2_3"]
    assert b["overlap_layer_1"].shape == (2, 3) and b["overlap_layer_2"].shape == (2, 3, 3)
    assert b["overlap_layer_3"].shape == (2, 1, 3) and b["overlap_product_3_1"].shape == (2, 1)
    assert b["overlap_product_3_2"].shape == (2, 1, 3) and b["overlap_product_2_1"].shape == (2, 3)
    assert res.equilibrium["branch"][-1] == "layers_1_2_3"


def test_every_branch_group_opens_with_xarray(tmp_path):
    # every axis of every matrix is a dimension (rows: layer ℓ's labels, columns: layer m − 1's);
    # before, overlap_layer_2 mixed labelled and unlabelled axes and xarray refused the group
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    from replica.workflow.io import write_sweep

    model = DeepLinearModel("tanh2", (0.5, 0.5, 0.5), 0.1, s_grid=3)
    res = sweep(model, [4.0, 8.0], progress=False, locate=False)
    path = write_sweep(tmp_path / "l3.h5", res, {"layers": 3}, grids=model.grids, axes=model.dataset_axes)
    for name in res.branches:
        ds = xr.open_dataset(path, engine="h5netcdf", group=f"branches/{name}")
        assert ds["overlap_layer_2"].dims == ("alpha", "s_values_2", "s_values")
        assert ds["overlap_layer_3"].dims == ("alpha", "readout_values", "s_values_2")
        assert ds["overlap_product_3_2"].dims == ("alpha", "readout_values", "s_values")
        assert ds["tau_product_2_1"].dims == ("alpha", "s_values_2")
        np.testing.assert_array_equal(ds["overlap_layer_2"].values, res.branches[name]["overlap_layer_2"])


def test_quick_seeded_validation_informed_chain_three_layers():
    # tiny seeded HMC run (L = 3, d = 12, one teacher, 200 steps, α = 5): the informed chain stays
    # on the all-layer branch; at this size only the order of magnitude is meaningful
    pytest.importorskip("jax")
    pytest.importorskip("blackjax")
    val = _validation_module("deep_linear_validation")
    theory = val.theory_table([5.0], (0.5, 0.5, 0.5), 0.1, s_grid=4)
    samp = val.sampling_table([5.0], (0.5, 0.5, 0.5), 0.1, dim=12, teachers=1, steps=200, seed=0, n_test=2000)
    eq = theory["branches"][theory["equilibrium"][0]][0]
    assert eq["phase"] == "layers_1_2_3"
    assert samp["informed"]["error_mean"][0] == pytest.approx(eq["mmse"], rel=0.5)
    assert samp["informed"]["error_mean"][0] < 0.25 * theory["mmse_universal"]


@pytest.mark.slow
def test_validation_against_hmc_d30_three_layers():
    # scripts/experiments/deep_linear_validation.py at d = 30, γ = 0.5 per layer, Δ = 0.1, 2 teachers
    # (≈ 5 CPU-min). Measured (seed 0, 1500 steps): informed HMC 0.0303 ± 0.0008 vs theory 0.0277
    # at α = 5; uninformed chains stay at 0.281 ± 0.010, between the layer_1 (0.329) and layers_1_2
    # (0.223) branches: the deepest layer is not learned from random starts at this budget.
    pytest.importorskip("jax")
    pytest.importorskip("blackjax")
    val = _validation_module("deep_linear_validation")
    theory = val.theory_table([5.0], (0.5, 0.5, 0.5), 0.1, s_grid=8)
    samp = val.sampling_table([5.0], (0.5, 0.5, 0.5), 0.1, dim=30, teachers=2, steps=1500, seed=0, n_test=10_000)
    eq = theory["branches"][theory["equilibrium"][0]][0]
    err, sem = samp["informed"]["error_mean"][0], samp["informed"]["error_sem"][0]
    # finite-size tolerance: 15% of the theory value or 3 s.e.m., whichever is larger
    assert abs(err - eq["mmse"]) < max(0.15 * eq["mmse"], 3 * sem)
    assert samp["uninformed"]["error_mean"][0] > 3 * err


def test_four_layers_specialize_with_every_product():
    # general L: ten matrices (four layers, six products, three of them with ≥ 3 factors)
    model = DeepLinearModel("tanh2", (0.5,) * 4, 0.1, s_grid=2)
    assert len(model.keys) == 10 and len(model.products) == 6
    r = model.solve_from(8.0, model.starts()["informed"][0], start="informed")
    st = r.info["state"]
    assert r.converged and model.phase(st) == "layers_1_2_3_4"
    assert min(st.mean_overlaps.values()) > 0.9 and st.mmse < 0.1 * model.mmse_universal
    assert model.solve_universal(8.0).info["state"].mmse == pytest.approx(model.mmse_universal, rel=1e-14)


def test_discretization_error_is_the_change_under_a_doubled_grid():
    # L = 3: the estimate at a point of the n_s = 3 model equals the relative change of mmse and
    # free entropy against the n_s = 6 model solved independently from the informed start
    # (same branch: the fully specialized fixed point is unique there); 0 on Q ≡ 0
    coarse = DeepLinearModel("tanh2", (0.5, 0.5, 0.5), 0.1, s_grid=3)
    fine = DeepLinearModel("tanh2", (0.5, 0.5, 0.5), 0.1, s_grid=6)
    alpha = 4.0
    a = coarse.solve_from(alpha, coarse.starts()["informed"][0])
    b = fine.solve_from(alpha, fine.starts()["informed"][0])
    sa, sb = a.info["state"], b.info["state"]
    assert coarse.phase(sa) == fine.phase(sb) == "layers_1_2_3"
    expected = max(abs(sa.mmse - sb.mmse) / sb.mmse, abs(sa.free_entropy - sb.free_entropy) / abs(sb.free_entropy))
    assert coarse.discretization_error(alpha, a.x) == pytest.approx(expected, rel=1e-5)
    assert 1e-7 < expected < 1e-2
    assert coarse.refined().n_s == 6 and coarse.refined() is coarse.refined()
    assert coarse.discretization_error(alpha, np.zeros(coarse.size)) == 0.0


def test_command_line_takes_one_activation_per_layer_and_bounds_the_s_grid():
    # --activation tanh2,erf,tanh reaches the L = 3 model layer by layer (it was refused as "needs the
    # two-layer solver"); --s-grid above 75 is refused because its error estimate doubles the grid
    from replica.workflow.config import UsageError
    from replica.workflow.model_options import build_model

    base = {"layers": 3, "gamma": [0.5] * 3, "activation": "tanh2,erf,tanh", "unit_variance": True,
            "prior": "gaussian", "readout": "ones", "readout_grid": None, "delta": 0.1, "s_grid": 3}
    model = build_model(base)
    assert isinstance(model, DeepLinearModel)
    direct = DeepLinearModel(["tanh2", "erf", "tanh"], (0.5, 0.5, 0.5), 0.1, s_grid=3)
    assert [a.mu1 for a in model.activations] == pytest.approx([a.mu1 for a in direct.activations], rel=1e-14)
    assert len({round(a.mu1, 12) for a in model.activations}) == 3
    with pytest.raises(UsageError, match="--s-grid: at most 75"):
        build_model({**base, "s_grid": 76})
