"""replica-figures: the comparison figures with the published data (data/reference/)."""

import csv

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
    # per-layer thresholds against depth (quick: L = 1, 2): a spinodal before each first-order transition;
    # with two layers the inner layer is learned first (at every alpha of the grid: NaN), the last one later
    depth = np.genfromtxt(out / "depth_thresholds.csv", delimiter=",", names=True)
    one = depth[depth["L"] == 1]
    assert 0.5 < one["alpha_sp"][0] < one["alpha_c"][0] < 3.0
    two = depth[depth["L"] == 2]
    assert np.isnan(two["alpha_c"][0]) and two["alpha_sp"][1] < two["alpha_c"][1]
    assert two["alpha_c"][1] > one["alpha_c"][0]  # a deeper network needs more data for its last layer


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
    # (the quick run's L = 2, layer 1); the quick figure did not say its grids were coarse
    from replica.workflow import figures, plotting

    rows = {1: {1: (1.28, 1.39)}, 2: {1: (float("nan"), float("nan")), 2: (2.0, 2.1)}}
    monkeypatch.setattr(figures, "depth_thresholds", lambda L, outdir, grid: rows[L])
    saved = {}
    monkeypatch.setattr(plotting, "save_figure", lambda fig, path, **kw: saved.update(fig=fig))
    figures.figure_depth(tmp_path, True, figures._Report())
    ax = saved["fig"].axes[0]
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "L = 2, layer 1" in texts and "not drawn" in texts
    assert "--quick" in ax.get_title()
    assert ax.get_xlim()[1] > 2 + 0.06  # the shifted layer-2 marker lies inside the axes
