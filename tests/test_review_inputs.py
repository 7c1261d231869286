"""Inputs a reviewer tried from the README on a clean clone (after issues 14 and 15): accepted-and-ignored
options are refused, messages name the option, interrupts say what happened, existing results are not
changed without --overwrite."""

import json

import h5py
import numpy as np
import pytest

from replica.workflow.cli import plot_main, sweep_main
from commands import (experiment_main as _experiment, figures_main as _figures,
                      one_line, sgd_main as _sgd, spectrum_main as _spectrum)

SGD_SMALL = ["--dim", "12", "--time", "3", "--record-every", "log:3", "--n-test", "200", "--quiet"]
DEEP = ["--layers", "2", "--gamma", "1,1", "--activation", "tanh2", "--drop-hermite", "0,1,2", "--unit-variance",
        "--quiet"]


@pytest.fixture(scope="module")
def sgd_file(tmp_path_factory):
    from replica.workflow import sgd_cli

    out = tmp_path_factory.mktemp("sgd") / "sgd.h5"
    assert sgd_cli.main(["--activation", "relu", "-o", str(out)] + SGD_SMALL) == 0
    return out


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "deep.h5"
    assert sweep_main(DEEP + ["--alpha", "2,4", "-o", str(out)]) == 0
    return out


# ----------------------------------------------------------------------------- accepted and ignored
@pytest.mark.parametrize("run, argv, needle", [
    (sweep_main, ["--readout-grid", "10", "--readout", "ones", "--alpha", "1"], "--readout-grid"),
    (_spectrum, ["--readout-grid", "10", "--readout", "4point"], "--readout-grid"),
    (sweep_main, ["--quiet", "--verbose"], "--verbose"),
    (_sgd, ["--quiet", "--verbose"], "--verbose"),
    (_experiment, ["--quiet", "--verbose"], "--verbose"),
    (_figures, ["--quiet", "--verbose", "-o", "x"], "--verbose"),
    (sweep_main, ["--alpha", "1", "-o", "OUT/out.txt"], "--output"),
    (_spectrum, ["--lambda", "1", "-o", "OUT/out"], "--output"),
    (_sgd, ["--dim", "8", "-o", "OUT/x.txt"], "--output"),
])
def test_ignored_or_conflicting_options_are_refused(tmp_path, capsys, run, argv, needle):
    argv = [a.replace("OUT", str(tmp_path)) for a in argv]
    assert run(argv) == 2
    assert f"error: {needle}" in one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_readout_grid_still_applies_to_continuous_laws(tmp_path, capsys):
    from replica.workflow.cli import build_model

    model = build_model({"layers": 1, "gamma": [0.5], "activation": "relu", "readout": "gaussian",
                         "readout_grid": 10, "delta": 0.1, "prior": "gaussian"})
    assert model is not None


def test_experiment_has_verbose(capsys):
    from replica.workflow.experiment_cli import build_parser

    assert build_parser().parse_args(["--verbose"]).verbose is True


def test_sgd_plot_refuses_unknown_figure_suffix(tmp_path, capsys, sgd_file):
    assert _sgd(["--plot", str(sgd_file), "-o", str(tmp_path / "x.txt"), "--no-theory", "--quiet"]) == 2
    assert "-o/--output" in one_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


def test_sgd_plot_existing_figure_names_the_options(tmp_path, capsys, sgd_file):
    prefix = tmp_path / "f"
    (tmp_path / "f_histograms.png").write_bytes(b"keep")
    assert _sgd(["--plot", str(sgd_file), "-o", str(prefix), "--no-theory", "--quiet", "--dpi", "20"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "-o/--output" in line and "--overwrite" in line
    assert (tmp_path / "f_histograms.png").read_bytes() == b"keep"


@pytest.mark.parametrize("kind", ["curve", "layers", "overlaps"])
def test_plot_kind_not_available_for_the_file_is_refused(tmp_path, capsys, sgd_file, kind):
    png = tmp_path / "k.png"
    assert plot_main([str(sgd_file), "--kind", kind, "-o", str(png)]) == 2
    assert f"--kind {kind}" in one_line(capsys.readouterr().err)
    assert not png.exists()


def test_plot_kind_not_available_for_a_spectrum(tmp_path, capsys):
    spec = tmp_path / "s.h5"
    assert _spectrum(["--lambda", "1,2", "-o", str(spec), "--quiet"]) == 0
    assert plot_main([str(spec), "--kind", "curve", "-o", str(tmp_path / "k.png")]) == 2
    assert "--kind curve" in one_line(capsys.readouterr().err)


def test_reference_with_only_a_header_is_one_line(tmp_path, capsys, sweep_file):
    csv = tmp_path / "empty.csv"
    csv.write_text("alpha,mmse\n")
    assert plot_main([str(sweep_file), "--reference", str(csv), "-o", str(tmp_path / "r.png")]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("replica-plot: error: --reference:") and "no data rows" in line


# ----------------------------------------------------------------------------- messages
def test_closure_on_a_locked_file_names_the_file_argument(tmp_path, capsys, sgd_file):
    import shutil
    import subprocess
    import sys

    copy = tmp_path / "held.h5"
    shutil.copy(sgd_file, copy)
    holder = subprocess.Popen([sys.executable, "-c", f"import h5py, time; f = h5py.File({str(copy)!r}, 'a'); "
                               "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert _sgd(["--closure", str(copy), "--quiet"]) == 2
        line = one_line(capsys.readouterr().err)
        assert "--closure:" in line and "locked" in line and "--output" not in line
    finally:
        holder.kill()
        holder.wait()


def test_figures_output_from_the_config_table(tmp_path, capsys, monkeypatch):
    """`output` in [figures] satisfies -o (it used to say '-o/--output required')."""
    from replica.workflow import figures

    seen = {}
    monkeypatch.setattr(figures, "_BUILDERS", {**figures._BUILDERS, "deep": lambda out, quick, report: seen.setdefault("out", out)})
    cfg = tmp_path / "f.toml"
    cfg.write_text(f'[figures]\noutput = "{tmp_path / "figs"}"\nonly = "deep"\nquick = true\n')
    assert figures.main(["--config", str(cfg), "--quiet"]) == 0
    assert seen["out"] == tmp_path / "figs" and (tmp_path / "figs" / "deviations.csv").exists()


def test_figures_unwritable_output_is_a_usage_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert _figures(["--quick", "--only", "deep", "-o", str(blocker / "sub")]) == 2
    assert "--output" in one_line(capsys.readouterr().err)


def test_figures_version(capsys):
    from replica import __version__

    assert _figures(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"replica-figures {__version__}"


# ----------------------------------------------------------------------------- interrupts
@pytest.mark.parametrize("where", ["start-up", "run"])
def test_sgd_interrupt_prints_one_line(tmp_path, capsys, monkeypatch, where):
    """`timeout -s INT 4 replica-sgd …` exited 130 without a word."""
    import replica.workflow.cli
    import replica.simulations.sgd as sgd

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(replica.workflow.cli, "_all_option_keys", interrupt) if where == "start-up" else \
        monkeypatch.setattr(sgd, "run_sgd", interrupt)
    out = tmp_path / "si.h5"
    assert _sgd(SGD_SMALL + ["-o", str(out)]) == 130
    line = one_line(capsys.readouterr().err)
    assert line.startswith("replica-sgd: interrupted;") and "nothing" in line
    assert not out.exists()


# ----------------------------------------------------------------------------- --closure on an existing file
def test_closure_adds_a_group_once_and_replaces_it_only_with_overwrite(tmp_path, capsys, sgd_file):
    import shutil

    path = tmp_path / "run.h5"
    shutil.copy(sgd_file, path)
    before = {name for name in h5py.File(path, "r")}
    assert _sgd(["--closure", str(path), "--quiet"]) == 0             # adding to a finished file: allowed
    with h5py.File(path, "r") as h5:
        assert {name for name in h5} == before | {"closure"}
        h5_closure = h5["closure/test_error"][()]
    # mark the stored group, then try to replace it without --overwrite: refused, file unchanged
    with h5py.File(path, "a") as h5:
        h5["closure"].attrs["marker"] = "old"
    raw = path.read_bytes()
    assert _sgd(["--closure", str(path), "--quiet"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "closure/" in line and "--overwrite" in line
    assert path.read_bytes() == raw
    assert _sgd(["--closure", str(path), "--overwrite", "--quiet"]) == 0
    with h5py.File(path, "r") as h5:
        assert "marker" not in h5["closure"].attrs
        np.testing.assert_array_equal(h5["closure/test_error"][()], h5_closure)


# ----------------------------------------------------------------------------- SGD figures
def test_sgd_error_axis_ignores_non_positive_train_excess(sgd_file):
    """One running train error below Δ put 1e-314 on the log axis (axis 1e-314 … 1e14)."""
    from replica.workflow.sgd_results import read_sgd
    from replica.workflow.sgd_plots import plot_test_error

    data = read_sgd(sgd_file)
    train = np.array(data["train_error"], dtype=float)
    train[1:] = data["parameters"]["delta"] - 2e-4                      # all below Δ
    data["train_error"] = train
    fig = plot_test_error(data, theory=False)
    lo, hi = fig.axes[0].get_ylim()
    test = np.asarray(data["test_error"], float)
    assert lo >= hi * 1e-8 and lo <= test.min() and hi >= test.max() and hi <= 10 * test.max()


def test_sgd_histogram_titles_do_not_overlap(sgd_file):
    from replica.workflow.sgd_plots import plot_overlap_histograms

    fig = plot_overlap_histograms(sgd_file)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [ax.title.get_window_extent(renderer) for ax in fig.axes]
    boxes += [ax.xaxis.label.get_window_extent(renderer) for ax in fig.axes]
    sup = fig._suptitle.get_window_extent(renderer)
    for box in boxes:
        assert not box.overlaps(sup)
    titles = boxes[:len(fig.axes)]
    for i in range(len(titles)):
        for j in range(i + 1, len(titles)):
            assert not titles[i].overlaps(titles[j])


# ----------------------------------------------------------------------------- configuration attribute
def test_sgd_file_has_configuration(sgd_file):
    with h5py.File(sgd_file, "r") as h5:
        configuration = json.loads(h5.attrs["configuration"])
    assert configuration["dim"] == 12 and configuration["record_every"] == "log:3"


def test_interrupt_inside_a_gc_callback_is_delivered_again(monkeypatch):
    """JAX registers a gc callback; a KeyboardInterrupt raised there is swallowed ("Exception ignored"),
    which lost Ctrl-C during start-up (the run went on, or ended without the one-line note)."""
    import gc
    import signal
    import sys

    import replica.workflow.cli as cli

    sent = []
    monkeypatch.setattr(cli, "_resend_later", sent.append)

    def callback(phase, info):
        cli._raise_interrupted(signal.SIGINT, sys._getframe())

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert sent and set(sent) == {signal.SIGINT}
    with pytest.raises(KeyboardInterrupt):           # anywhere else: at once, as Python's own handler
        cli._raise_interrupted(signal.SIGINT, sys._getframe())


@pytest.mark.parametrize("argv", [
    ["--layers", "1", "--architecture", "two_layer"],
    ["--layers", "3", "--gamma", "0.5,0.5,0.5", "--architecture", "shallow"],
    ["--layers", "3", "--gamma", "0.5,0.5,0.5", "--drop-hermite", "0,1,2", "--architecture", "deep_linear"],
])
def test_an_architecture_that_does_not_solve_the_request_is_refused(tmp_path, capsys, argv):
    # --architecture shallow with --layers 3 ran a one-hidden-layer model and wrote a file labelled L = 3;
    # --layers 1 with two_layer failed inside the builder with a message about --gamma
    assert sweep_main([*argv, "--activation", "tanh2", "--alpha", "1", "-o", str(tmp_path / "x.h5"), "--quiet"]) == 2
    err = one_line(capsys.readouterr().err)
    assert f"error: --architecture: {argv[argv.index('--architecture') + 1]} does not solve --layers {argv[1]}" in err
    assert list(tmp_path.iterdir()) == []


def test_plot_help_says_neurons_draws_deep_sweeps_too(capsys):
    # replica-plot --kind neurons draws L >= 3 sweeps (one map per layer); the help said "of two hidden layers"
    assert plot_main(["--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "per-neuron overlap maps of two hidden layers" not in text
    assert "L >= 3, one map per layer" in text


@pytest.mark.parametrize("only", ["", ",", " , "])
def test_figures_empty_only_names_the_problem(tmp_path, capsys, only):
    # --only '' said "unknown figure(s) (none)"
    assert _figures(["--quick", "--only", only, "-o", str(tmp_path / "f")]) == 2
    err = one_line(capsys.readouterr().err)
    assert "--only: no figure named" in err and "unknown" not in err
    assert not (tmp_path / "f").exists()
