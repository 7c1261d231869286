"""Phase structure (replica.branches): branches by continuation, equilibrium changes, stability,
and the ruling of docs/theory.md §5.4. Values are checked against identities and independent
computations (damped iteration from fresh starts, closed-form linear criteria, published
reference numbers), never against the sweep's own earlier output."""

import numpy as np
import pytest
from scipy.optimize import brentq

from replica.branches import stability, sweep
from replica.models.deep import DeepModel
from replica.interface import ReplicaModel
from replica.models.shallow import ShallowModel
from replica.models.two_layer import TwoLayerModel

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

# the input of issue 12: a weak and a strong stationary point that coexist
ISSUE_INPUT = dict(activation="quadratic", gamma=0.5, delta=1.25, weight_prior="rademacher")


def issue_model():
    return ShallowModel(ISSUE_INPUT["activation"], ISSUE_INPUT["gamma"], ISSUE_INPUT["delta"],
                        weight_prior=ISSUE_INPUT["weight_prior"])


@pytest.fixture(scope="module")
def issue_sweep():
    return sweep(issue_model(), np.linspace(0.1, 4, 40), progress=False)


def test_every_solver_implements_the_interface():
    for model in (ShallowModel("relu", 0.5, 0.1), DeepModel("tanh2", [1.0], 0.1, drop_hermite=(0, 1, 2)),
                  TwoLayerModel("tanh2", (1.0, 1.0), 0.1, s_grid=2)):
        assert isinstance(model, ReplicaModel)


def test_weak_and_strong_branches_are_never_spliced(issue_sweep):
    r = issue_sweep
    assert set(r.branches) == {"universal", "weak", "specialized"}
    weak, strong = r.branches["weak"], r.branches["specialized"]
    for b in (weak, strong):
        ok = np.flatnonzero(b["exists"])
        assert np.all(np.diff(ok) == 1)  # one connected interval on the grid
        q = b["overlap_W"][ok, 0]
        # continuity between neighbouring α (grid step 0.1): steps far below the 0.6 gap between
        # the two stationary points (the largest, 0.07, is next to the square-root onset)
        assert np.max(np.abs(np.diff(q))) < 0.1
    assert np.nanmax(weak["overlap_W"]) < 0.5 < 0.9 < np.nanmin(strong["overlap_W"])
    # the weak branch is born continuously at the instability of Q ≡ 0, the strong one at a fold
    assert weak.start_kind == "bifurcation" and strong.start_kind == "fold"
    assert weak.alpha_start == pytest.approx(r.branch_transitions["universal"]["alpha_instability"], rel=1e-9)
    assert 2.3 < strong.alpha_start < 2.4
    # two changes of the equilibrium: the continuous onset, then the first-order jump
    kinds = [(c["from"], c["to"], c["kind"]) for c in r.equilibrium_changes]
    assert kinds == [("universal", "weak", "branch_start"), ("weak", "specialized", "crossing")]
    jump = r.equilibrium_changes[1]
    assert jump["mmse_before"] > 10 * jump["mmse_after"]  # the error drops by more than an order of magnitude


def test_crossing_is_a_free_entropy_tie_of_independently_solved_points(issue_sweep):
    model = issue_model()
    a_c = issue_sweep.equilibrium_changes[1]["alpha"]

    def f(alpha, q0):  # damped iteration from a fresh start, not the continuation
        res = model.solve(alpha, q0, damping=0.5)
        assert res.converged
        return res.info["state"].free_entropy, res.info["state"].overlap_W[0]

    (f_weak, q_weak), (f_strong, q_strong) = f(a_c, 0.3), f(a_c, 0.99)
    assert q_weak < 0.5 < q_strong
    assert f_weak == pytest.approx(f_strong, abs=1e-10)
    for da, sign in ((-1e-3, -1), (1e-3, 1)):
        assert sign * (f(a_c + da, 0.99)[0] - f(a_c + da, 0.3)[0]) > 0


@pytest.mark.parametrize("grid", [[2.0, 3.5], np.linspace(2.5, 3.5, 400)], ids=["two-points", "400-points"])
def test_crossing_and_fold_are_grid_independent(issue_sweep, grid):
    r = sweep(issue_model(), grid, progress=False)
    c_ref = [c for c in issue_sweep.equilibrium_changes if c["kind"] == "crossing"][0]
    c = [c for c in r.equilibrium_changes if c["kind"] == "crossing"]
    assert len(c) == 1 and (c[0]["from"], c[0]["to"]) == ("weak", "specialized")
    assert c[0]["alpha"] == pytest.approx(c_ref["alpha"], abs=1e-7)
    if r.alpha[0] < 2.3:  # the fold where the strong branch appears lies inside the grid
        assert r.branches["specialized"].alpha_start == pytest.approx(
            issue_sweep.branches["specialized"].alpha_start, abs=1e-7)


def test_a_located_fold_is_a_saddle_node_of_the_map(issue_sweep):
    # the end where the strong branch appears: F_x − I is singular there (one singular value far
    # below the others), and the curve turns back: Newton from the end point finds the branch just
    # inside the fold, and no fixed point next to it just outside (the bordered solve of
    # replica.continuation locates the vertex of α along the curve, not the last point a corrector reached)
    from replica.continuation.curves import trace_curve as _trace
    from replica.continuation.jacobians import jacobian

    model = issue_model()
    strong = issue_sweep.branches["specialized"]
    i0 = int(np.flatnonzero(strong["exists"])[0])
    seed = model.solve_from(float(issue_sweep.alpha[i0]), None, strong.points[i0], method="newton")
    end = _trace(model, issue_sweep.alpha, float(issue_sweep.alpha[i0]), seed, {}).ends[-1]
    assert end.kind == "fold" and end.alpha == pytest.approx(strong.alpha_start, rel=1e-9)
    a_f, x_f = end.alpha, end.result.x
    sv = np.linalg.svd(jacobian(model, a_f, x_f, order=2) - np.eye(x_f.size), compute_uv=False)
    assert sv[-1] < 1e-6 * sv[0]  # the last point a bisection of the step reaches: ~5e-6
    q_f = model.state(a_f, x_f).overlap_W[0]
    inside = model.solve_from(a_f * (1 + 1e-6), None, x_f, method="newton")
    assert inside.converged and abs(inside.info["state"].overlap_W[0] - q_f) < 0.05
    outside = model.solve_from(a_f * (1 - 1e-6), None, x_f, method="newton")
    assert not outside.converged or abs(outside.info["state"].overlap_W[0] - q_f) > 0.05


@pytest.mark.parametrize("readout", ["ones", "rademacher", "4point"])
def test_quadratic_activation_with_gaussian_weights_is_universal_only(readout):
    """docs/theory.md §5.4: g ≡ 0 and Gaussian W → the universal branch is Bayes-optimal."""
    model = ShallowModel("quadratic", 0.5, 0.1, readout_law=readout)
    r = sweep(model, [0.5, 2.0, 6.0], progress=False)
    assert set(r.branches) == {"universal"}
    assert "rotation invariant" in r.universal_only_reason
    assert list(r.equilibrium["branch"]) == ["universal"] * 3
    for i, a in enumerate(r.alpha):
        assert r.equilibrium["mmse"][i] == model.solve_universal(a).info["state"].mmse
    # the map restricted to Q ≡ 0 is stable (the full §5.2 map would not be, at γ = 0.5)
    assert np.all(r.branches["universal"]["stability"] < 1)
    assert np.isnan(r.branch_transitions["universal"]["alpha_instability"])


def test_quadratic_universal_value_is_maillard():
    # docs/theory.md §8: x²/√2, γ = 0.5, Δ = 0, α = 0.2 → 0.39219602 (Maillard et al. solved to 1e-8)
    r = sweep(ShallowModel("quadratic", 0.5, 0.0), [0.2], progress=False)
    assert r.equilibrium["mmse"][0] == pytest.approx(0.39219602, abs=2e-8)
    # non-Gaussian weights are not covered by the argument and keep their Q > 0 branches
    assert ShallowModel("quadratic", 0.5, 0.1, weight_prior="rademacher").universal_only_reason() is None


def test_universal_stability_is_the_linearized_map():
    """At Q ≡ 0 the Jacobian is block diagonal: ∂Q(v)/∂Q(v) = v² m_P'(0) m_S(R̂₂)/(γ m_S'(0)) and
    ∂R̂₂'/∂R̂₂ = α μ₂⁴ m_S'(R̂₂)/(2 D²) (docs/theory.md §5.1, §5.4)."""
    model = ShallowModel("relu", 0.5, 0.1, readout_law="4point")
    alpha = 2.0
    x = model.solve_universal(alpha).x
    lam, ch = x[-1], model.channel
    D = model.delta + model.K_d - (model.mu1**2 + model.mu2**2 * (ch.overlap(lam) + model.R_d - 1) / 2)
    q_block = model.v2 * model.weight_prior.overlap_derivative(0.0) * ch.overlap(lam) / (
        model.gamma * ch.overlap_derivative(0.0))
    r_block = alpha * model.mu2**4 * ch.overlap_derivative(lam) / (2 * D**2)
    assert stability(model, alpha, x) == pytest.approx(max(q_block.max(), r_block), rel=1e-7)


def test_relu_universal_instability_matches_the_linear_criterion():
    """ReLU, γ = 0.5, Δ = 0.1, v ≡ 1: Q ≡ 0 loses stability where m_P'(0) m_S(R̂₂) = γ
    (α ≈ 0.632, docs/theory.md §5.4); there the specialized branch is born continuously and
    becomes the equilibrium, whatever the grid."""
    model = ShallowModel("relu", 0.5, 0.1)
    ch = model.channel
    predicted = brentq(lambda a: ch.overlap(model.solve_universal(a).x[-1]) / ch.overlap_derivative(0.0)
                       - model.gamma, 0.1, 3.0, xtol=1e-14)
    assert predicted == pytest.approx(0.632067, abs=1e-6)
    out = []
    for grid in (np.linspace(0.01, 8, 11), np.linspace(0.01, 8, 51)):
        r = sweep(model, grid, progress=False)
        assert r.branch_transitions["universal"]["alpha_instability"] == pytest.approx(predicted, rel=1e-8)
        assert r.transitions["alpha_sp"] == pytest.approx(predicted, rel=1e-8)
        assert r.transitions["alpha_c"] == r.transitions["alpha_sp"]
        u = r.branches["universal"]
        assert np.all((u["stability"] > 1) == (r.alpha > predicted))
        out.append((r.transitions["alpha_sp"], r.transitions["alpha_c"]))
    assert out[0] == pytest.approx(out[1], abs=1e-9)


def test_metastable_branch_with_folds_on_both_ends():
    """He₂ + He₃ activation, Rademacher W, Δ = 0.5: a weak branch appears at a fold, is the
    equilibrium in the middle, and disappears at a fold (where the strong branch took over).
    Independent check: the damped iteration from the branch's own point just inside a fold
    stays on it, just outside it leaves it."""
    model = ShallowModel("hermite:2=0.7,3=1", 0.5, 0.5, weight_prior="rademacher")
    r1 = sweep(model, np.linspace(0.5, 2.0, 16), progress=False)
    weak = r1.branches["weak"]
    assert (weak.start_kind, weak.end_kind) == ("fold", "fold")
    lo, hi = weak.alpha_start, weak.alpha_end
    assert 1.0 < lo < 1.1 < 1.2 < hi < 1.3
    # metastable next to both folds, the equilibrium in between
    names = [(c["from"], c["to"]) for c in r1.equilibrium_changes]
    assert names == [("universal", "weak"), ("weak", "specialized")]
    assert lo < r1.equilibrium_changes[0]["alpha"] < r1.equilibrium_changes[1]["alpha"] < hi
    # the same folds on another grid
    r2 = sweep(model, np.linspace(0.9, 1.4, 7), progress=False)
    assert r2.branches["weak"].alpha_start == pytest.approx(lo, abs=1e-7)
    assert r2.branches["weak"].alpha_end == pytest.approx(hi, abs=1e-7)
    # the folds by the damped iteration (warm start on the branch, 1e-4 inside / outside)
    i_mid = np.flatnonzero(weak["exists"])[0]
    x_mid = weak.points[i_mid]
    for edge, inward in ((lo, +1), (hi, -1)):
        inside = model.solve_from(edge + inward * 1e-3, None, x_mid, damping=0.5)
        inside = model.solve_from(edge + inward * 1e-4, None, inside.x, damping=0.5, max_iter=200000)
        assert inside.converged and model.phase(inside.info["state"]) == "weak"
        outside = model.solve_from(edge - inward * 1e-4, None, inside.x, damping=0.5, max_iter=200000)
        assert model.phase(outside.info["state"]) != "weak"


def test_stability_below_one_on_every_seeded_point_and_stored_everywhere(issue_sweep):
    for b in issue_sweep.branches.values():
        ok = b["exists"]
        assert np.all(np.isfinite(b["stability"][ok])) and np.all(np.isnan(b["stability"][~ok]))
    # near its fold the strong branch's leading eigenvalue approaches 1 (saddle-node)
    strong = issue_sweep.branches["specialized"]
    first = np.flatnonzero(strong["exists"])[0]
    model = issue_model()
    a = strong.alpha_start + 1e-6
    x = model.solve_from(a, None, strong.points[first], method="newton").x
    assert stability(model, a, x) == pytest.approx(1.0, abs=2e-2)


def test_deep_branches_go_through_the_same_continuation():
    # docs/theory.md §8: deep §6.1, Δ = 0.1, L = 1: α_sp = 1.47344 (reference iterates a finite
    # number of steps: our saddle-node lies 5e-4 above), α_c = 1.60220
    model = DeepModel("tanh2", [1.0], 0.1, drop_hermite=(0, 1, 2), unit_variance=True)
    r = sweep(model, np.linspace(1.0, 2.0, 6), progress=False)
    spec = r.branches["specialized"]
    assert spec.start_kind == "fold"
    assert r.transitions["alpha_sp"] == pytest.approx(1.47344, abs=1e-3)
    assert r.transitions["alpha_c"] == pytest.approx(1.60220, abs=1e-5)
    assert [(c["from"], c["to"], c["kind"]) for c in r.equilibrium_changes] == [
        ("universal", "specialized", "crossing")]


# ----------------------------------------------------------------------------- files and figures
def test_sweep_files_hold_stability_changes_and_every_dataset(tmp_path, capsys):
    import h5py

    from replica.workflow.cli import plot_main, sweep_main
    from replica.workflow.io import read_sweep

    out = tmp_path / "q.h5"
    argv = ["--activation", "quadratic", "--gamma", "0.5", "--delta", "1.25", "--prior", "rademacher",
            "--alpha", "0.1:4:40", "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0
    data = read_sweep(out)
    changes = data["equilibrium_changes"]
    assert list(changes["from_branch"]) == ["universal", "weak"]
    assert list(changes["to_branch"]) == ["weak", "specialized"]
    assert changes["mmse_before"][1] > 10 * changes["mmse_after"][1]
    with h5py.File(out) as h5:
        names = [set(g) for g in h5["branches"].values()]
        assert all(n == names[0] for n in names) and "stability" in names[0]
        assert h5["transitions/universal"].attrs["alpha_instability"] == pytest.approx(0.58270974, abs=1e-7)
        assert h5["branches/specialized"].attrs["start_kind"] == "fold"
    # the unstable part of the universal branch (above α ≈ 0.583) is drawn dotted
    png = tmp_path / "q.png"
    assert plot_main([str(out), "-o", str(png), "--quiet"]) == 0
    from replica.workflow import plotting

    fig = plotting.plot_file(out, kind="curve")
    dotted = [ln for ln in fig.axes[0].get_lines() if ln.get_gid() == "unstable:universal"]
    assert dotted and min(np.min(ln.get_xdata()) for ln in dotted) < 0.6 < 1.0 < max(
        np.max(ln.get_xdata()) for ln in dotted)
    capsys.readouterr()


def test_free_entropy_at_perfect_recovery_is_infinite_not_an_error():
    # Δ = 0 and K* = K_d (R₂ = R_d, g ≡ 0): ln(Δ + K_d − K*) = ln 0 used to raise ValueError
    model = ShallowModel("quadratic", 0.5, 0.0, weight_prior="rademacher")
    assert model.free_entropy(0.3, model.R_d, 10.0, np.array([1.0]), np.array([50.0])) == np.inf
    assert model.mutual_information(0.3, np.inf) == np.inf


@pytest.mark.parametrize("prior", ["gaussian", pytest.param("rademacher", marks=pytest.mark.slow)])
def test_perfect_recovery_at_zero_noise_writes_a_file(tmp_path, capsys, prior):
    # issue 12 item 4: ln(Δ + error) at Δ = 0 once the error reaches 0 stopped the sweep
    from replica.workflow.cli import sweep_main
    from replica.workflow.io import read_sweep

    out = tmp_path / "d0.h5"
    argv = ["--activation", "quadratic", "--gamma", "0.5", "--delta", "0", "--prior", prior,
            "--alpha", "0.3,0.38", "--branches", "all", "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0, capsys.readouterr().err
    data = read_sweep(out)
    uni = data["branches"]["universal"]
    # Maillard et al.: noiseless perfect recovery of S at α = γ − γ²/2 = 0.375
    assert uni["mmse"][0] > 0.0 and uni["mmse"][1] == 0.0
    for b in data["branches"].values():
        assert np.all(b["mmse"][b["exists"]] >= 0.0)
    if prior == "gaussian":
        assert set(data["branches"]) == {"universal"} and data["universal_only_reason"]


# ReLU, v ≡ 1, γ = 0.5 with the noiseless sign channel (docs/theory.md §10.2): the specialized sheet
# bends back at a fold at α = 4.27678 while a second sheet (specialized-2) starts at a fold at 4.26108;
# the two overlap, and the equilibrium goes from one to the other at a free-entropy crossing (4.2675)
SIGN_FOLD = 4.2767849557


def sign_model():
    from priors.output_channels import get_output_channel

    return ShallowModel("relu", 0.5, 0.0, output_channel=get_output_channel("sign"))


def test_a_failed_corrector_trial_does_not_end_the_curve_before_its_fold():
    # the continuation from α = 4.25 towards 4.5 on the specialized branch: the first trial steps
    # (past the fold) fail, and their Broyden updates used to be kept in the inverse Jacobian
    # (changes of 1e6), so that every shorter step failed too, down to MIN_STEP: the curve ended at
    # 4.25 (or 4.2568 in a sweep on α = 0.25:8:32), a false fold 0.02 before the real one
    from replica.continuation.correctors import correct as _correct
    from replica.continuation.folds import is_singular as _singular
    from replica.continuation.stepper import advance as _advance

    model = sign_model()
    seed = model.solve_from(4.0, model.starts()["informed"][0], start="informed")
    r0 = _correct(model, 4.0, seed.x, {}).result
    r1, _, failure = _advance(model, 4.0, r0, 4.25, None, {})
    assert failure is None and model.state(4.25, r1.x).overlap_W[0] == pytest.approx(0.526, abs=1e-3)
    r2, _, failure = _advance(model, 4.25, r1, 4.5, None, {})
    assert r2 is None  # the curve ends at the fold ...
    a_end, r_end, why, _ = failure
    assert a_end == pytest.approx(SIGN_FOLD, rel=1e-8)  # ... the real one
    assert _singular(model, a_end, r_end.x) and stability(model, a_end, r_end.x, order=1) > 1 - 1e-4


def test_sign_channel_equilibrium_never_falls_back_on_the_unstable_universal_branch():
    # on the grid of the closing table (α = 0.25:8:32) and a finer one, the specialized branch ends at
    # the same fold and the equilibrium goes from it to specialized-2 at a crossing; it was reported as the
    # linearly unstable universal branch on 4.2568 < α < 4.2611 of the coarser grid
    ends, crossings = [], []
    for grid in (np.linspace(0.25, 8, 32), np.linspace(0.05, 8, 60)):
        r = sweep(sign_model(), grid, progress=False)
        sp, sp2 = r.branches["specialized"], r.branches["specialized-2"]
        assert sp.end_kind == "fold" and sp2.start_kind == "fold" and sp2.alpha_start < sp.alpha_end
        ends.append(sp.alpha_end)
        kinds = [(c["from"], c["to"], c["kind"]) for c in r.equilibrium_changes]
        assert kinds == [("universal", "specialized", "branch_start"), ("specialized", "specialized-2", "crossing")]
        crossings.append(r.equilibrium_changes[1]["alpha"])
        # the equilibrium is never a branch with stability ≥ 1 where a stable branch exists
        eq = np.asarray(r.equilibrium["branch"]).astype(str)
        for i, name in enumerate(eq):
            stab = {n: b["stability"][i] for n, b in r.branches.items() if b["exists"][i]}
            if any(s < 1 for s in stab.values()):
                assert stab[name] < 1, (r.alpha[i], name, stab)
    assert ends == pytest.approx([SIGN_FOLD, SIGN_FOLD], rel=1e-8)
    assert crossings[0] == pytest.approx(crossings[1], rel=1e-8) and 4.2611 < crossings[0] < SIGN_FOLD


# ELU, Rademacher weights, γ = 0.5, Δ = 0.1 (issue 30): a sheet born continuously at α ≈ 1.188 ends at a
# fold at α ≈ 4.1117 where its Q(v) is just above 0.5, while a strongly specialized sheet exists from a fold
# at α ≈ 3.4566; the first was called `specialized` or `weak` (and the second `specialized-2` or
# `specialized`) depending on whether a grid point fell where its Q exceeds 0.5
ELU_FOLD = 4.1117


def _names_by_curve(r):
    """{which curve: its name}: the sheet ending at the fold near ELU_FOLD and the most specialized one."""
    others = {n: b for n, b in r.branches.items() if n != "universal"}
    ending = [n for n, b in others.items() if b.end_kind == "fold" and abs(b.alpha_end - ELU_FOLD) < 1e-3]
    strong = max(others, key=lambda n: np.nanmax(np.where(others[n]["exists"], others[n]["overlap_W"][:, 0], -1)))
    assert len(ending) == 1 and ending[0] != strong and len(others) == 2
    return {"ends at the fold": ending[0], "strong": strong}


def test_branch_names_do_not_depend_on_the_alpha_grid():
    model = ShallowModel("elu", 0.5, 0.1, weight_prior="rademacher")
    fine = sweep(model, np.linspace(1.0, 4.5, 36), progress=False)  # a grid point where Q > 0.5 on the sheet
    coarse = sweep(model, np.linspace(3.85, 4.5, 8), progress=False)  # none there
    assert np.nanmax(coarse.branches[_names_by_curve(coarse)["ends at the fold"]]["overlap_W"]) < 0.5
    assert np.nanmax(fine.branches[_names_by_curve(fine)["ends at the fold"]]["overlap_W"]) > 0.5
    assert _names_by_curve(fine) == _names_by_curve(coarse)
