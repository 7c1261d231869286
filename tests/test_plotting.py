"""``replica-plot``: figures of sweeps (shallow and deep), experiments and phase diagrams."""

import json

import h5py
import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from replica.workflow import plotting  # noqa: E402
from replica.branches import sweep  # noqa: E402
from replica.workflow.cli import plot_main  # noqa: E402
from replica.models.deep import DeepModel  # noqa: E402
from replica.models.shallow import ShallowModel  # noqa: E402
from replica.workflow.io import write_phase_diagram, write_sweep  # noqa: E402

ALPHAS = np.linspace(1.0, 8.0, 8)


@pytest.fixture(scope="module")
def deep_file(tmp_path_factory):
    model = DeepModel("tanh2", [1.0, 1.0], 0.1, drop_hermite=(0, 1, 2), unit_variance=True)
    res = sweep(model, ALPHAS, progress=False)
    params = {"layers": 2, "gamma": [1.0, 1.0], "activation": "tanh2", "drop_hermite": [0, 1, 2],
              "unit_variance": True, "prior": "gaussian", "readout": "ones", "delta": 0.1}
    return write_sweep(tmp_path_factory.mktemp("deep") / "deep.h5", res, params)


def _fake_shallow(path, n_readout=4, experiments=True):
    """A one-hidden-layer sweep file written by hand (layout of replica.workflow.io), with a
    specialized branch that appears at α = 3 and wins at α = 4, and a readout law with
    several atoms (Q(v) profiles)."""
    alpha = np.linspace(0.5, 6.0, 12)
    v = np.array([-3, -1, 1, 3]) / np.sqrt(5.0) if n_readout == 4 else np.ones(1)
    w = np.full(v.size, 1.0 / v.size)
    uni_mmse = 0.09 / (1 + 0.3 * alpha)
    spec_exists = alpha >= 3.0
    spec_mmse = np.where(spec_exists, 0.04 * np.exp(-(alpha - 3.0) / 2), np.nan)
    f_u = -alpha
    f_s = np.where(spec_exists, -alpha + (alpha - 4.0) * 0.1, np.nan)
    q = np.where(spec_exists[:, None], np.clip(0.5 + 0.1 * (alpha[:, None] - 3) * np.abs(v)[None, :], 0, 1), np.nan)

    class B:
        def __init__(self, name, fields):
            self.name, self.alpha, self.fields = name, alpha, fields

    n = alpha.size
    common = lambda ex: {"converged": ex.copy(), "exists": ex.copy(), "iterations": np.ones(n, int),  # noqa: E731
                         "residual": np.zeros(n), "start": np.array(["x"] * n, dtype=object)}
    branches = {
        "universal": B("universal", {**common(np.ones(n, bool)), "mmse": uni_mmse, "free_entropy": f_u,
                                     "R2": 0.5 + 0.04 * alpha, "overlap_W": np.zeros((n, v.size))}),
        "specialized": B("specialized", {**common(spec_exists), "mmse": spec_mmse, "free_entropy": f_s,
                                         "R2": np.where(spec_exists, 0.9, np.nan), "overlap_W": q}),
    }
    eq_branch = np.where(spec_exists & (alpha > 4.0), "specialized", "universal").astype(object)
    eq = {"alpha": alpha, "mmse": np.where(eq_branch == "specialized", spec_mmse, uni_mmse),
          "free_entropy": np.where(eq_branch == "specialized", f_s, f_u), "branch": eq_branch}

    class R:
        pass

    r = R()
    r.branches, r.equilibrium = branches, eq
    r.transitions = {"alpha_sp": 2.8, "alpha_c": 4.2}
    r.readout_values, r.readout_weights = v, w
    params = {"layers": 1, "gamma": [0.5], "activation": "relu", "prior": "gaussian", "readout": "4point",
              "delta": 0.1}
    write_sweep(path, r, params)
    if experiments:
        _add_experiment(path)
    return path


def _add_experiment(path, mode="a"):
    with h5py.File(path, mode) as h5:
        if mode == "w":
            h5.attrs["parameters"] = json.dumps({"activation": "relu", "gamma": 0.5, "delta": 0.1, "dim": 40})
        for init, shift in (("informed", 0.0), ("uninformed", 0.01)):
            g = h5.require_group(f"experiments/hmc/{init}")
            a = np.array([1.0, 3.0, 5.0])
            g["alpha"] = a
            g["mmse_mean"] = 0.06 / (1 + 0.3 * a) + shift
            g["mmse_sem"] = np.full(3, 0.004)
            g["overlap_mean"] = np.array([[0.1], [0.5], [0.9]]) - shift
            g["overlap_sem"] = np.full((3, 1), 0.02)


def _is_png(path):
    return path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_deep_sweep_figure(deep_file, tmp_path):
    fig = plotting.plot_file(deep_file)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert "learning curve" in titles
    assert any("per-layer overlap" in t for t in titles)
    curve = fig.axes[titles.index("learning curve")]
    labels = curve.get_legend_handles_labels()[1]
    assert any("metastable" in lab for lab in labels)
    assert any("alpha_c" in lab or r"\alpha_c" in lab for lab in labels)
    assert curve.get_xlabel() == plotting.ALPHA_LABEL
    out = plotting.save_figure(fig, tmp_path / "deep.png", dpi=80)
    assert _is_png(out)


def test_shallow_sweep_with_experiments_and_profiles(tmp_path):
    path = _fake_shallow(tmp_path / "s.h5")
    fig = plotting.plot_file(path)
    curve, overlaps = fig.axes[0], fig.axes[1]
    labels = curve.get_legend_handles_labels()[1]
    assert any("HMC" in lab and "informed" in lab for lab in labels)
    assert "$Q(v)$" in overlaps.get_ylabel() or "Q(v)" in overlaps.get_ylabel()
    assert len(overlaps.get_lines()) >= 2  # one profile per selected α
    assert _is_png(plotting.save_figure(fig, tmp_path / "s.png", dpi=80))


def test_single_readout_overlaps_against_alpha(tmp_path):
    path = _fake_shallow(tmp_path / "s1.h5", n_readout=1, experiments=False)
    fig = plotting.plot_file(path)
    assert fig.axes[1].get_xlabel() == plotting.ALPHA_LABEL
    plotting.save_figure(fig, tmp_path / "s1.pdf")
    assert (tmp_path / "s1.pdf").read_bytes()[:4] == b"%PDF"


def test_experiment_file_alone_and_overlaid(deep_file, tmp_path, capsys):
    exp = tmp_path / "exp.h5"
    _add_experiment(exp, mode="w")
    out = tmp_path / "exp.png"
    assert plot_main([str(exp), "-o", str(out), "--quiet"]) == 0
    assert _is_png(out)
    out2 = tmp_path / "deep_exp.png"
    assert plot_main([str(deep_file), "--experiment", str(exp), "-o", str(out2), "--quiet"]) == 0
    assert _is_png(out2)


def test_phase_diagram_figure(tmp_path):
    alpha = np.linspace(0.5, 4.0, 6)
    delta = np.array([0.05, 0.275, 0.5])
    mmse = 0.1 / (1 + alpha[None, :] / (1 + delta[:, None]))
    data = {"alpha": alpha, "delta": delta, "done": np.ones(3, bool), "mmse": mmse, "free_entropy": -mmse,
            "branch": np.full((3, 6), "universal", dtype=object), "alpha_sp": np.array([1.5, 2.0, 2.6]),
            "alpha_c": np.array([2.0, 2.7, np.nan])}
    path = write_phase_diagram(tmp_path / "ph.h5", data, {"activation": "relu", "gamma": [0.5]}, parameter="delta",
                               complete=True)
    fig = plotting.plot_file(path)
    ax = fig.axes[0]
    assert ax.get_ylabel() == plotting.PARAMETER_LABELS["delta"]
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1]
    assert len(lines) == 2  # α_sp(Δ) and α_c(Δ)
    assert _is_png(plotting.save_figure(fig, tmp_path / "ph.png", dpi=80))


def test_reference_csv(tmp_path, deep_file):
    csv = tmp_path / "ref.csv"
    csv.write_text("alpha,mmse,err\n2,0.9,0.01\n6,0.1,0.01\n")
    ref = plotting.read_reference(f"{csv}:mmse:err")
    np.testing.assert_array_equal(ref["alpha"], [2, 6])
    with pytest.raises(ValueError, match="no column"):
        plotting.read_reference(f"{csv}:gen")
    out = tmp_path / "r.png"
    assert plot_main([str(deep_file), "--reference", str(csv), "-o", str(out), "--quiet"]) == 0


def test_plot_cli_errors(deep_file, tmp_path, capsys):
    out = tmp_path / "x.png"
    out.write_bytes(b"keep")
    assert plot_main([str(deep_file), "-o", str(out), "--quiet"]) == 2
    assert "--overwrite" in capsys.readouterr().err and out.read_bytes() == b"keep"
    assert plot_main([str(tmp_path / "none.h5"), "-o", str(tmp_path / "y.png")]) == 2
    assert plot_main([str(deep_file), "-o", str(tmp_path / "y.txt")]) == 2
    notes = tmp_path / "notes.h5"
    notes.write_text("not hdf5")
    assert plot_main([str(notes), "-o", str(tmp_path / "y.png")]) == 2
    assert plot_main([str(deep_file), "--kind", "phase", "-o", str(tmp_path / "y.png")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert all(line.startswith("replica-plot: error:") for line in err.strip().splitlines())


def test_plot_spectrum_file(tmp_path):
    from replica.workflow.spectrum import main as spectrum_main

    spec = tmp_path / "spec.h5"
    assert spectrum_main(["--gamma", "0.5", "--readout", "rademacher", "--lambda", "0.1:10:6",
                          "--density-grid", "40", "-o", str(spec), "--quiet"]) == 0
    out = tmp_path / "spec.png"
    assert plot_main([str(spec), "-o", str(out), "--quiet"]) == 0
    assert out.stat().st_size > 10_000


def test_plot_sgd_file(tmp_path):
    from replica.workflow.sgd_cli import main as sgd_main

    run = tmp_path / "sgd.h5"
    assert sgd_main(["--activation", "elu", "--dim", "10", "--steps", "60", "--seed", "1", "-o", str(run),
                     "--quiet"]) == 0
    out = tmp_path / "sgd.png"
    assert plot_main([str(run), "-o", str(out), "--quiet"]) == 0
    assert out.stat().st_size > 10_000


@pytest.mark.parametrize("n_extra", [3, 16, 21])
def test_every_branch_gets_its_own_colour(n_extra):
    # a long staircase of the s grid gives > 16 branches (22 for L = 3 on 16 α): no two may share
    # a colour (layer_1 and the equilibrium layers_1_2_3 did), and the styled names keep theirs
    from matplotlib.colors import to_hex

    from replica.workflow.plotting import BRANCH_STYLE, _branch_color, _ordered_branches

    branches = {name: {} for name in ["universal", "specialized"] + [f"layers_1_2-{k}" for k in range(n_extra)]}
    order = _ordered_branches(branches)
    colours = [to_hex(_branch_color(name, order)[0]) for name in order]
    assert len(set(colours)) == len(order)
    assert _branch_color("universal", order) == BRANCH_STYLE["universal"]


def test_deep_phase_diagram_figure_draws_every_layer(tmp_path):
    # per-layer lines (alpha_c_layer, alpha_sp_layer: n_param × L): one coloured α_c and spinodal line
    # per layer whose transition lies inside the grid, a legend entry for a layer learned below it
    alpha = np.linspace(0.5, 4.0, 6)
    delta = np.array([0.05, 0.275, 0.5])
    mmse = 0.1 / (1 + alpha[None, :] / (1 + delta[:, None]))
    data = {"alpha": alpha, "delta": delta, "done": np.ones(3, bool), "mmse": mmse, "free_entropy": -mmse,
            "branch": np.full((3, 6), "layer_1", dtype=object), "alpha_sp": np.array([1.5, 2.0, 2.6]),
            "alpha_c": np.array([2.0, 2.7, 3.1]),
            "alpha_sp_layer": np.array([[np.nan, 1.5], [np.nan, 2.0], [np.nan, 2.6]]),
            "alpha_c_layer": np.array([[np.nan, 2.0], [np.nan, 2.7], [np.nan, 3.1]])}
    path = write_phase_diagram(tmp_path / "ph.h5", data, {"activation": "tanh2", "gamma": [0.5, 0.5]},
                               parameter="delta", complete=True)
    fig = plotting.plot_file(path)
    ax = fig.axes[0]
    lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1 and ln.get_linestyle() != "None"]
    assert len(lines) == 2  # layer 2: α_c and α_sp; layer 1 has no line (its markers at the left edge: no line)
    np.testing.assert_allclose(sorted(lines[0].get_xdata()), [2.0, 2.7, 3.1])
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "layer 1 learned below the grid" in labels
    assert any(lbl.startswith("layer 2 learned") for lbl in labels)


def test_neuron_maps_figure(tmp_path):
    # replica-plot --neurons on a two-layer sweep: the Q₁ map over (α, neuron quantile) and the Q₂ map;
    # on a file without per-neuron maps a one-line error
    from replica.branches import sweep
    from replica.models.two_layer import TwoLayerModel

    m = TwoLayerModel("tanh2", (0.5, 0.5), 0.1)
    res = sweep(m, np.array([1.0, 3.0]), progress=False)
    path = write_sweep(tmp_path / "two.h5", res, {"layers": 2}, grids=m.grids, axes=m.dataset_axes)
    fig = plotting.plot_file(path, kind="neurons")
    meshes = [c for ax in fig.axes[:2] for c in ax.collections]  # the two map panels (then the colour bar)
    assert len(meshes) == 2
    q1 = meshes[0].get_array().reshape(64, 2)  # (neuron quantile, α)
    eq = res.equilibrium["branch"]
    np.testing.assert_allclose(q1[:, 1], res.branches[eq[1]]["neuron_overlap_layer_1"][1])
    assert fig.axes[0].yaxis_inverted()  # strongest neurons at the top
    out = tmp_path / "n.png"
    assert plot_main([str(path), "--neurons", "-o", str(out), "--quiet"]) == 0 and _is_png(out)
    bad = write_sweep(tmp_path / "one.h5", sweep(ShallowModel("relu", 0.5, 0.1), [1.0, 2.0], progress=False),
                      {"layers": 1})
    with pytest.raises(plotting.PlotError, match="no per-neuron maps"):
        plotting.plot_file(bad, kind="neurons")


@pytest.mark.parametrize("which", ["equilibrium", "all"])
def test_neurons_of_a_damaged_three_layer_file_is_one_line(tmp_path, capsys, which):
    # an L = 3 sweep whose per-neuron map of layer 3 was deleted (from the equilibrium branch or from every
    # branch): replica-plot --kind neurons refuses it in one line with status 2 (was a reshape traceback)
    from replica.workflow.cli import sweep_main

    path = tmp_path / "l3.h5"
    assert sweep_main(["--layers", "3", "--gamma", "0.5,0.5,0.5", "--activation", "tanh2", "--unit-variance",
                       "--delta", "0.1", "--alpha", "3", "-o", str(path), "--quiet"]) == 0
    with h5py.File(path, "a") as h5:
        eq = h5["equilibrium/branch"][0]
        eq = eq.decode() if isinstance(eq, bytes) else str(eq)
        for name in (list(h5["branches"]) if which == "all" else [eq]):
            if "neuron_overlap_layer_3" in h5["branches"][name]:
                del h5["branches"][name]["neuron_overlap_layer_3"]
    capsys.readouterr()
    out = tmp_path / "n.png"
    assert plot_main([str(path), "--kind", "neurons", "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "neuron_overlap_layer_3" in err and "Traceback" not in err
    assert not out.exists()


def test_neurons_refuses_options_it_would_ignore(tmp_path, capsys):
    # --kind neurons with --logy or --experiment drew the maps and silently dropped the option
    from replica.models.two_layer import TwoLayerModel

    m = TwoLayerModel("tanh2", (0.5, 0.5), 0.1)
    path = write_sweep(tmp_path / "two.h5", sweep(m, np.array([1.0]), progress=False), {"layers": 2},
                       grids=m.grids, axes=m.dataset_axes)
    exp = tmp_path / "exp.h5"
    _add_experiment(exp, mode="w")
    with h5py.File(exp, "a") as h5:
        h5.attrs["kind"] = "experiment"
    assert plot_main([str(path), "--experiment", str(exp), "-o", str(tmp_path / "c.png"), "--quiet"]) == 0
    for extra, needle in ((["--logy"], "--logy"), (["--experiment", str(exp)], "--experiment")):
        out = tmp_path / "n.png"
        capsys.readouterr()
        assert plot_main([str(path), "--neurons", "-o", str(out), "--quiet"] + extra) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and needle in err and not out.exists()
