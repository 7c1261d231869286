"""replica-figures: the comparison figures with the published data (data/reference/)."""

import csv
import json

import numpy as np
import pytest

from replica.workflow import figures


def test_quick_figures_run_and_agree_with_the_published_numbers(tmp_path, capsys, monkeypatch):
    from figure_checks import checked_figures

    out = tmp_path / "figs"
    checked = checked_figures(monkeypatch)  # every figure: one style, legends in words, ticks, limits, no gaps
    assert figures.main(["--quick", "-o", str(out), "--quiet"]) == 0
    for name in ("quadratic", "relu", "rademacher_readout_rademacher", "rademacher_readout_ones", "deep",
                 "two_layer", "two_layer_phase", "depth", "neurons", "trapped"):
        assert (out / f"{name}.png").stat().st_size > 10_000, name
        assert checked.get(name) == "", checked.get(name, f"{name}: not drawn through save_figure")
    rows = list(csv.DictReader(open(out / "deviations.csv")))
    dev = {(r["figure"], r["comparison"]): float(r["max_deviation"]) for r in rows}
    measure = {(r["figure"], r["comparison"]): r["measure"] for r in rows}
    printed = capsys.readouterr().out
    assert "max dev" in printed and "deviations.csv" in printed
    # each row says what its number measures (the first one is absolute, not relative)
    assert measure[("quadratic", "universal mmse vs published curves, all rows")] == "absolute"
    assert measure[("relu", "universal mmse vs published curve")] == "relative"
    assert {m for k, m in measure.items() if "GAMP-RIE" in k[1]} == {"std"}
    # independent published numbers (data/reference/): the agreements the theory must keep
    assert dev[("quadratic", "same, rows with published error >= 0.05")] < 3e-3
    assert dev[("relu", "universal mmse vs published curve")] < 1e-5
    assert dev[("rademacher", "universal mmse vs published curve, readout rademacher")] < 1e-6
    assert dev[("deep", "alpha_c(L) vs published, L = 1..3")] < 1e-5
    assert dev[("deep", "alpha_sp(L) vs published, L = 1..3")] < 1e-3
    _check_neuron_maps(out)
    _check_training(out)
    # the deep thresholds computed here are stored too
    table = np.genfromtxt(out / "deep_thresholds.csv", delimiter=",", names=True)
    assert list(table["L"]) == [1, 2, 3] and np.all(np.diff(table["alpha_c"]) > 0)
    # per-layer thresholds against depth (quick: L = 1 … 4): a spinodal before each first-order transition;
    # with two layers the inner layer is learned first (its branch is born at alpha ~ 0.12), the last one later
    depth = np.genfromtxt(out / "depth_thresholds.csv", delimiter=",", names=True)
    one = depth[depth["L"] == 1]
    assert 0.5 < one["alpha_sp"][0] < one["alpha_c"][0] < 3.0
    two = depth[depth["L"] == 2]
    assert two["alpha_c"][0] < two["alpha_sp"][1] < two["alpha_c"][1]
    assert two["alpha_c"][1] > one["alpha_c"][0]  # a deeper network needs more data for its last layer
    _check_depth(out)


def test_existing_outputs_are_not_replaced(tmp_path, capsys):
    out = tmp_path / "figs"
    out.mkdir()
    (out / "deep.png").write_bytes(b"keep")
    assert figures.main(["--quick", "--only", "deep", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--overwrite" in err and len(err.splitlines()) == 1
    assert (out / "deep.png").read_bytes() == b"keep"


@pytest.mark.parametrize("argv, message", [(["--only", "nope", "-o", "x"], "unknown figure"), ([], "required")])
def test_bad_input_is_one_line(tmp_path, capsys, argv, message):
    assert figures.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def _check_neuron_maps(out):
    # the per-neuron figure's data (quick: α = 1, 4; d = 16). Theory: at α = 1 only the strongest
    # effective readouts of layer 1 are learned (first quantile bin), layer 2 not at all; at α = 4 every
    # weight is learned. Measured: the informed chain (started at the teacher) keeps the teacher's
    # features at α = 4; the uninformed one and Adam from a random start do not reach them (the
    # specialized phase is entered through a first-order transition)
    from replica.workflow.io import read_sweep
    from replica.workflow.plotting import binned_neuron_maps
    from replica.workflow.experiment_io import read_experiment

    groups = read_experiment(out / "neurons_hmc.h5")["groups"] | read_experiment(out / "neurons_adam.h5")["groups"]
    informed = groups[("hmc", "informed")]
    edges = informed["neuron_quantile_edges"]
    q1, q2, strengths = binned_neuron_maps(read_sweep(out / "neurons.h5"), [1.0, 4.0], edges)
    assert strengths == pytest.approx([3 / np.sqrt(5), 1 / np.sqrt(5)])
    assert q1[0, 0] > 0.5 and np.all(q1[0, 1:] < 1e-6) and np.all(q2[0] < 1e-6)
    assert np.all(q1[1] > 0.9) and np.all(q2[1] > 0.5)
    layer_1 = {key: np.mean(g["neuron_overlap_layer_1_mean"][1]) for key, g in groups.items()}
    assert layer_1[("hmc", "informed")] > 0.5
    assert layer_1[("hmc", "informed")] > layer_1[("hmc", "uninformed")] + 0.2
    assert layer_1[("hmc", "informed")] > layer_1[("adam", "uninformed")] + 0.2


def _check_training(out):
    # no estimator beats the Bayes-optimal error: Adam from a random start (every α of the quick run)
    # is above the theory's equilibrium mmse; online SGD's trace is recorded against the samples seen
    from replica.workflow.io import read_sweep
    from replica.workflow.experiment_io import read_experiment

    theory = read_sweep(out / "trapped.h5")["equilibrium"]
    adam = read_experiment(out / "trapped_adam.h5")["groups"][("adam", "uninformed")]
    bayes = np.interp(adam["alpha"], theory["alpha"], theory["mmse"])
    assert np.all(adam["mmse_mean"] - 2 * adam["mmse_sem"] > bayes)
    sgd = read_experiment(out / "trapped_sgd_d16.h5")["groups"][("sgd", "uninformed")]
    assert sgd["trace_samples"][0, -1] == sgd["num_samples"][0]  # one pass: every sample seen once
    assert np.all(np.diff(sgd["trace_samples"][0]) > 0)


def _learned(phase, L):
    # the layers a phase name says are learned, parsed here (not with replica.branches.learned_layers):
    # "specialized" (one hidden layer) all, "layer_2" {2}, "layers_1_2_3-2" {1, 2, 3}, "universal" none
    import re

    base = str(phase).split("-")[0].split("+")[0]
    if base == "specialized":
        return set(range(1, L + 1))
    m = re.fullmatch(r"layers?((?:_\d+)+)", base)
    return {int(x) for x in m.group(1).split("_")[1:]} if m else set()


def _check_depth(out):
    # the depth figure's data (quick: L = 1 … 4). The thresholds of depth_thresholds.csv are the located
    # transitions of the sweep files beside it (read here with h5py); each agrees with the equilibrium on the
    # grid (free entropies compared at the grid points, not the root finding that located it): layer l is
    # learned at a grid point exactly when the point lies above its alpha_c; depth_phases.csv runs over the
    # grid in contiguous pieces, each grid point in the piece of its equilibrium phase. Physics: the inner
    # layers are learned first (alpha_c increasing in l), the spinodal comes before alpha_c, and the last
    # layer needs more data the deeper the network (alpha_c increasing in L)
    import h5py

    table = np.genfromtxt(out / "depth_thresholds.csv", delimiter=",", names=True)
    phases = list(csv.DictReader(open(out / "depth_phases.csv")))
    sweeps = np.genfromtxt(out / "depth_sweeps.csv", delimiter=",", names=True)
    depths = sorted({int(L) for L in table["L"]})
    assert depths == [1, 2, 3, 4] and list(sweeps["L"]) == depths
    last = []
    for L in depths:
        with h5py.File(out / f"depth_L{L}.h5", "r") as h5:
            tr = dict(h5["transitions"].attrs)
            alpha = h5["equilibrium/alpha"][()]
            branch = [b.decode() if isinstance(b, bytes) else str(b) for b in h5["equilibrium/branch"][()]]
            assert json.loads(h5.attrs["parameters"])["layers"] == L
        rows = table[table["L"] == L]
        assert list(rows["layer"]) == list(range(1, L + 1))
        keys = [("alpha_sp", "alpha_c")] if L == 1 else [(f"alpha_sp_layer_{ell}", f"alpha_c_layer_{ell}")
                                                         for ell in range(1, L + 1)]
        for row, (sp, c) in zip(rows, keys):
            assert row["alpha_sp"] == tr[sp] and row["alpha_c"] == tr[c]
        assert np.all(np.isfinite(rows["alpha_c"])), (L, rows)  # every layer's change lies inside the quick grid
        assert np.all(np.diff(rows["alpha_c"]) > 0) and np.all(rows["alpha_sp"] <= rows["alpha_c"])
        for ell, a_c in zip(rows["layer"], rows["alpha_c"]):
            assert [ell in _learned(b, L) for b in branch] == list(alpha > a_c), (L, ell, a_c, branch)
        pieces = [p for p in phases if int(p["L"]) == L]
        lo, hi = np.array([[float(p["alpha_from"]), float(p["alpha_to"])] for p in pieces]).T
        assert lo[0] == alpha[0] and hi[-1] == alpha[-1] and np.all(lo[1:] == hi[:-1]) and np.all(hi > lo)
        for a, b in zip(alpha, branch):
            inside = [p["phase"] for p, x, y in zip(pieces, lo, hi) if x <= a <= y]
            assert b in inside, (L, a, b, inside)
        last.append(rows["alpha_c"][-1])
    assert np.all(np.diff(last) > 0), last
    assert np.all(np.diff(sweeps["unknowns"]) > 0) and np.all(sweeps["cpu_seconds"] > 0)


def test_figures_that_need_jax_are_skipped_without_it(tmp_path, monkeypatch, capsys):
    # without the experiments extra, the default run draws every other figure and says what it skipped;
    # asking only for such figures by name exits 2 naming the extra
    called = []
    builders = {name: (lambda outdir, quick, report, name=name: called.append(name)) for name in figures.FIGURES}

    def needs_jax(outdir, quick, report):
        raise ImportError("No module named 'jax'", name="jax")

    builders.update({name: needs_jax for name in figures.EXPERIMENT_FIGURES})
    monkeypatch.setattr(figures, "_BUILDERS", builders)
    monkeypatch.setattr(figures, "_missing_experiment_modules", lambda: ["jax"])
    assert figures.main(["--quick", "-o", str(tmp_path / "a")]) == 0
    assert called == [n for n in figures.FIGURES if n not in figures.EXPERIMENT_FIGURES]
    assert "skipping neurons, trapped" in capsys.readouterr().err
    assert figures.main(["--quick", "--only", "neurons", "-o", str(tmp_path / "b")]) == 2
    assert "experiments" in capsys.readouterr().err


def test_depth_figure_says_which_points_are_missing(tmp_path, monkeypatch):
    # a layer learned at every α of the grid has NaN thresholds and was silently absent from depth.png
    # (the quick run's L = 2, layer 1, on a grid from 0.5); the quick figure did not say its grids were coarse
    from replica.workflow import figures, plotting

    nan = float("nan")
    transitions = {1: {"alpha_sp": 1.28, "alpha_c": 1.39},
                   2: {"alpha_sp_layer_1": nan, "alpha_c_layer_1": nan, "alpha_sp_layer_2": 2.0, "alpha_c_layer_2": 2.1}}
    phases = {1: ["universal", "specialized"], 2: ["layer_1", "layers_1_2"]}

    def sweep(L, outdir, alphas):  # a stand-in for the sweep file: a change of phase at the last layer's alpha_c
        a_c = transitions[L]["alpha_c" if L == 1 else "alpha_c_layer_2"]
        return {"parameters": {"layers": L}, "transitions": transitions[L], "unknowns": 1, "cpu_seconds": 0.0,
                "wall_seconds": 0.0, "equilibrium": {"alpha": np.array([0.5, 3.0]), "branch": np.array(phases[L])},
                "equilibrium_changes": {"alpha": np.array([a_c]), "from_branch": np.array(phases[L][:1]),
                                        "to_branch": np.array(phases[L][1:])}}

    monkeypatch.setattr(figures, "depth_sweep", sweep)
    monkeypatch.setattr(figures, "DEPTH_GRIDS", {True: {1: (0.5, 3.0), 2: (0.5, 3.0)}})
    saved = {}
    monkeypatch.setattr(plotting, "save_figure", lambda fig, path, **kw: saved.update(fig=fig))
    figures.figure_depth(tmp_path, True, figures._Report())
    ax = saved["fig"].axes[0]
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "L = 2, layer 1" in texts and "not drawn" in texts
    assert "--quick" in ax.get_title()
    assert ax.get_xlim()[1] > 2 + 0.06  # the shifted layer-2 marker lies inside the axes
