"""Command line: bad input is one line + exit 2, outputs are never overwritten silently,
``--config`` files, and interrupted sweeps resume to the same result.

The runs use the deep model of docs/theory.md §6.1 (``--layers 2``, ``tanh(2x)`` minus its
Hermite components of degree ≤ 2): it needs no spectral tables, so a sweep takes seconds.
"""

import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from replica.workflow.cli import parse_alpha_grid, parse_number_grid, sweep_main
from replica.workflow.config import UsageError
from replica.workflow.io import read_root_attrs, read_sweep
from replica.workflow.safe_write import checkpoint_path

DEEP = ["--layers", "2", "--gamma", "1,1", "--activation", "tanh2", "--drop-hermite", "0,1,2", "--unit-variance",
        "--quiet"]


def run_cli(capsys, argv):
    """Run ``replica-sweep`` in-process; return (exit status, stdout, stderr)."""
    rc = sweep_main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, err, option):
    assert rc == 2
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("replica-sweep: error:"), err
    assert option in lines[0], err


# ----------------------------------------------------------------------------- bad input
BAD_INPUTS = [
    # (extra arguments, option named in the message)
    (["--alpha", "-1:3:4"], "--alpha"),             # negative α grid (looks like an option)
    (["--alpha", "-0.5,1"], "--alpha"),
    (["--alpha", "0,1,2"], "--alpha"),
    (["--alpha", "1:x:3"], "--alpha"),               # malformed
    (["--alpha", "1,,2"], "--alpha"),
    (["--alpha", "3:1:4"], "--alpha"),
    (["--alpha", "1,1"], "--alpha"),
    (["--alpha", "nan"], "--alpha"),
    (["--gamma", "0"], "--gamma"),                   # γ ≤ 0
    (["--gamma", "-1,1"], "--gamma"),
    (["--gamma", "1,1,1"], "--gamma"),
    (["--delta", "-0.1"], "--delta"),                # Δ < 0
    (["--delta", "abc"], "--delta"),
    (["--delta", "inf"], "--delta"),
    (["--activation", "relux"], "--activation"),     # unknown names
    (["--prior", "cauchy"], "--prior"),
    (["--readout", "bimodal"], "--readout"),
    (["--readout", "discrete:1=x"], "--readout"),
    (["--activation", "hermite:3=nan"], "--activation"),   # NaN Hermite coefficient
    (["--activation", "hermite:3=1e300"], "--activation"),  # infinite variance
    (["--activation", "hermite:3=inf"], "--activation"),
    (["--drop-hermite", "a,b"], "--drop-hermite"),
    (["--damping", "1.5"], "--damping"),
    (["--layers", "0"], "--layers"),
    (["--readout-grid", "1"], "--readout-grid"),
    (["--branches", "some"], "--branches"),
]


@pytest.mark.parametrize("extra,option", BAD_INPUTS, ids=[" ".join(e) for e, _ in BAD_INPUTS])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, extra, option):
    rc, out, err = run_cli(capsys, DEEP + ["--alpha", "2,4", "-o", str(tmp_path / "x.h5")] + extra)
    assert_one_line_error(rc, err, option)
    assert not (tmp_path / "x.h5").exists()


def test_unwritable_outputs(capsys, tmp_path):
    blocker = tmp_path / "plain_file"
    blocker.write_text("x")
    for target in (tmp_path / "missing_dir" / "x.h5", blocker / "x.h5", tmp_path):
        rc, _, err = run_cli(capsys, DEEP + ["--alpha", "2,4", "-o", str(target)])
        assert_one_line_error(rc, err, "--output")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write in read-only directories")
def test_read_only_directory(capsys, tmp_path):  # pragma: no cover - CI runs as root
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    rc, _, err = run_cli(capsys, DEEP + ["--alpha", "2,4", "-o", str(ro / "x.h5")])
    assert_one_line_error(rc, err, "--output")


def test_parse_grids():
    np.testing.assert_allclose(parse_alpha_grid("1:3:3"), [1, 2, 3])
    np.testing.assert_allclose(parse_alpha_grid("0.5, 2"), [0.5, 2])
    np.testing.assert_array_equal(parse_number_grid("2,4", "--readout-grid", minimum=2, integer=True), [2, 4])
    with pytest.raises(UsageError, match="--readout-grid"):
        parse_number_grid("2.5", "--readout-grid", minimum=2, integer=True)
    with pytest.raises(UsageError, match="--delta"):
        parse_number_grid("-1,0", "--delta", minimum=0.0)


# ----------------------------------------------------------------------------- outputs
def test_existing_output_is_refused_without_overwrite(capsys, tmp_path):
    out = tmp_path / "run.h5"
    argv = DEEP + ["--alpha", "2,4", "-o", str(out)]
    rc, stdout, _ = run_cli(capsys, argv)
    assert rc == 0 and stdout.strip() == str(out)
    before = out.read_bytes()
    rc, _, err = run_cli(capsys, argv)
    assert_one_line_error(rc, err, "--overwrite")
    assert out.read_bytes() == before
    rc, _, _ = run_cli(capsys, argv + ["--delta", "0.2", "--overwrite"])
    assert rc == 0
    assert read_sweep(out)["parameters"]["delta"] == 0.2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_config_file_and_command_line_override(capsys, tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text(
        'layers = 2\ngamma = [1.0, 1.0]\nactivation = "tanh2"\ndrop-hermite = [0, 1, 2]\n'
        'unit_variance = true\ndelta = 0.1\nalpha = "2:6:3"\nquiet = true\n'
        '[sweep]\noutput = "%s"\n[plot]\nlogy = true\n' % (tmp_path / "cfg.h5")
    )
    rc, _, err = run_cli(capsys, ["--config", str(cfg)])
    assert rc == 0, err
    data = read_sweep(tmp_path / "cfg.h5")
    assert data["parameters"]["delta"] == 0.1
    assert data["parameters"]["alpha"] == [2.0, 4.0, 6.0]
    conf = data["configuration"]
    assert conf["config"] == str(cfg) and conf["unit_variance"] is True and conf["layers"] == 2
    # the command line overrides the file
    rc, _, err = run_cli(capsys, ["--config", str(cfg), "--delta", "0.3", "-o", str(tmp_path / "b.h5")])
    assert rc == 0, err
    assert read_sweep(tmp_path / "b.h5")["parameters"]["delta"] == 0.3


@pytest.mark.parametrize("text,needle", [
    ("deltaa = 0.1\n", "unknown key 'deltaa'"),
    ('delta = "x"\n', "--delta"),
    ("delta = -1.0\n", "--delta"),
    ("unit-variance = 1\n", "unit-variance"),
    ("delta = \n", "not valid TOML"),
    ("[swep]\ndelta = 0.1\n", "unknown table"),
    ('alpha = "-1:2:3"\n', "--alpha"),
])
def test_bad_config_files(capsys, tmp_path, text, needle):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    grid = [] if text.startswith("alpha") else ["--alpha", "2,4"]
    rc, _, err = run_cli(capsys, DEEP + grid + ["--config", str(cfg), "-o", str(tmp_path / "x.h5")])
    assert rc == 2 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_missing_config_file(capsys, tmp_path):
    rc, _, err = run_cli(capsys, ["--config", str(tmp_path / "none.toml")])
    assert rc == 2 and "--config" in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- interruption
def _wait_for(path, timeout=120.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if path.exists():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupted_sweep_leaves_valid_file_and_resumes(capsys, tmp_path, sig):
    out = tmp_path / "run.h5"
    ckpt = checkpoint_path(out)
    argv = DEEP + ["--alpha", "1:8:200", "--delta", "0.1", "-o", str(out)]  # long enough to be interrupted
    # the child restores Python's handling of the signals before it runs `python -m replica`: a test run
    # started in the background of a non-interactive shell (nohup, `cmd &`) inherits SIGINT ignored, and the
    # sweep then ran to its end (no preexec_fn: forking a process that runs JAX's threads may deadlock)
    child = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "signal.signal(signal.SIGTERM, signal.SIG_DFL); runpy.run_module('replica', run_name='__main__', alter_sys=True)")
    proc = subprocess.Popen([sys.executable, "-c", child] + argv + ["--checkpoint-every", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(ckpt), "no checkpoint appeared"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the signal arrived")
    assert proc.returncode in (130, 143), err
    assert "Traceback" not in err and "--resume" in err and str(ckpt) in err
    assert not out.exists()  # the target appears only when the run has finished
    attrs = read_root_attrs(ckpt)  # a valid HDF5 file …
    assert attrs["complete"] is False  # … holding a checkpoint
    with h5py.File(ckpt) as h5:
        done = sum(int(g["done"][()].sum()) for g in h5["checkpoint"].values() if isinstance(g, h5py.Group))
    assert done > 0
    # a plain rerun refuses to touch it
    rc, _, err = run_cli(capsys, argv)
    assert_one_line_error(rc, err, "--resume")
    # resume, then compare with an uninterrupted run
    rc, _, err = run_cli(capsys, argv + ["--resume"])
    assert rc == 0, err
    assert not ckpt.exists()  # removed once the result is in place
    rc, _, err = run_cli(capsys, argv[:-1] + [str(tmp_path / "full.h5")])
    assert rc == 0, err
    resumed, full = read_sweep(out), read_sweep(tmp_path / "full.h5")
    assert set(resumed["branches"]) == set(full["branches"])
    for name, branch in full["branches"].items():
        for key, value in branch.items():
            got = resumed["branches"][name][key]
            if value.dtype == object:
                assert list(got) == list(value), (name, key)
            else:
                np.testing.assert_array_equal(got, value, err_msg=f"{name}/{key}")
    assert resumed["transitions"] == pytest.approx(full["transitions"], rel=1e-9)
    # resuming a finished file does nothing
    before = out.read_bytes()
    rc, _, _ = run_cli(capsys, argv + ["--resume"])
    assert rc == 0 and out.read_bytes() == before


def test_resume_with_other_options_is_refused(capsys, tmp_path):
    out = tmp_path / "run.h5"
    rc, _, _ = run_cli(capsys, DEEP + ["--alpha", "2,4", "-o", str(out)])
    assert rc == 0
    rc, _, err = run_cli(capsys, DEEP + ["--alpha", "2,4", "--delta", "0.3", "-o", str(out), "--resume"])
    assert_one_line_error(rc, err, "--resume")
    assert "delta" in err


def test_console_entry_point_subprocess(tmp_path):
    """The installed command: one line on stderr, exit 2, no traceback."""
    res = subprocess.run([sys.executable, "-m", "replica", "--alpha", "-1:2:3", "-o", str(tmp_path / "x.h5")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "--alpha" in res.stderr and "Traceback" not in res.stderr


def test_configuration_is_json(capsys, tmp_path):
    out = tmp_path / "run.h5"
    rc, _, _ = run_cli(capsys, DEEP + ["--alpha", "2,4", "-o", str(out)])
    assert rc == 0
    with h5py.File(out) as h5:
        conf = json.loads(h5.attrs["configuration"])
        assert h5.attrs["kind"] == "sweep" and int(h5.attrs["complete"]) == 1
    assert conf["alpha"] == "2,4" and conf["output"] == str(out)


# ----------------------------------------------------------------------------- two hidden layers, linear part kept
TWO_LAYER = ["--layers", "2", "--gamma", "0.7,1.3", "--activation", "tanh2", "--unit-variance", "--s-grid", "3",
             "--delta", "0.1", "--quiet"]


def test_two_layer_sweep_writes_per_layer_datasets(capsys, tmp_path):
    from replica.workflow.cli import build_model, plot_main
    from replica.models.deep import DeepModel
    from replica.models.two_layer import TwoLayerModel

    out = tmp_path / "two.h5"
    rc, _, err = run_cli(capsys, TWO_LAYER + ["--alpha", "4,5.5", "-o", str(out)])
    assert rc == 0, err
    data = read_sweep(out)
    assert data["parameters"]["s_grid"] == 3
    with h5py.File(out) as h5:
        assert h5.attrs["s_grid_rule"] == "gauss-hermite:3"
    # branches are named by phase; every stored field has the per-layer shapes
    layer_1, both = data["branches"]["layer_1"], data["branches"]["layers_1_2"]
    for spec in (layer_1, both):
        assert spec["overlap_layer_1"].shape == (2, 3)
        assert spec["overlap_layer_2"].shape == (2, 1, 3)
        assert spec["overlap_product_2_1"].shape == (2, 1)
        assert spec["s_values"].shape == (3,) and spec["s_weights"].sum() == pytest.approx(1.0)
    # layer 1 specializes first (α = 4), then layer 2 and the product (α = 5.5)
    eq = [str(b) for b in data["equilibrium"]["branch"]]
    assert eq == ["layer_1", "layers_1_2"]
    assert layer_1["overlap_layer_1"][0].max() > 0.5 and layer_1["overlap_layer_2"][0].max() < 0.1
    assert both["overlap_layer_2"][1].min() > 0.5 and both["overlap_product_2_1"][1, 0] > 0.5
    changes = data["equilibrium_changes"]
    assert list(changes["to_branch"]) == ["layers_1_2"] and list(changes["kind"]) == ["crossing"]
    assert 4.0 < changes["alpha"][0] < 5.5
    assert data["branch_transitions"]["layers_1_2"]["alpha_c"] == changes["alpha"][0] == data["transitions"]["alpha_c"]
    with h5py.File(out) as h5:
        dims = h5["branches/layers_1_2/overlap_layer_2"].dims
        assert [d[0].name.rsplit("/", 1)[-1] for d in dims] == ["alpha", "readout_values", "s_values"]
    # the model choice: linear part kept → two-layer solver; degrees ≤ 2 dropped → deep solver
    base = {"layers": 2, "gamma": [0.7, 1.3], "activation": "tanh2", "unit_variance": True, "prior": "gaussian",
            "readout": "ones", "readout_grid": None, "delta": 0.1}
    assert isinstance(build_model(base), TwoLayerModel)
    assert isinstance(build_model({**base, "drop_hermite": [0, 1, 2]}), DeepModel)
    png = tmp_path / "two.png"
    assert plot_main([str(out), "-o", str(png), "--kind", "layers", "--quiet"]) == 0
    assert png.stat().st_size > 0


def test_three_layer_sweep_writes_every_layer_and_product(capsys, tmp_path):
    from replica.workflow.cli import build_model, plot_main
    from replica.models.deep import DeepModel
    from replica.models.deep_linear import DeepLinearModel

    out = tmp_path / "three.h5"
    rc, _, err = run_cli(capsys, ["--layers", "3", "--gamma", "0.5", "--activation", "tanh2", "--unit-variance",
                                  "--s-grid", "2", "--delta", "0.1", "--alpha", "3,6", "--quiet", "-o", str(out)])
    assert rc == 0, err
    data = read_sweep(out)
    spec = data["branches"]["layers_1_2_3"]
    shapes = {"overlap_layer_1": (2, 2), "overlap_layer_2": (2, 2, 2), "overlap_layer_3": (2, 1, 2),
              "overlap_product_2_1": (2, 2), "overlap_product_3_2": (2, 1, 2), "overlap_product_3_1": (2, 1),
              "tau_product_3_1": (2, 1), "overlap_mean_layer_3": (2,)}
    for key, shape in shapes.items():
        assert spec[key].shape == shape, key
    assert str(data["equilibrium"]["branch"][-1]) == "layers_1_2_3" and spec["overlap_mean_layer_3"][-1] > 0.9
    assert spec["s_values"].shape == (2,) and read_root_attrs(out)["s_grid_rule"] == "gauss-hermite:2"
    base = {"layers": 3, "gamma": [0.5] * 3, "activation": "tanh2", "unit_variance": True, "prior": "gaussian",
            "readout": "ones", "readout_grid": None, "delta": 0.1}
    assert isinstance(build_model(base), DeepLinearModel)
    assert isinstance(build_model({**base, "drop_hermite": [0, 1, 2]}), DeepModel)
    png = tmp_path / "three.png"
    assert plot_main([str(out), "-o", str(png), "--quiet"]) == 0
    assert png.stat().st_size > 0


@pytest.mark.parametrize("extra,option", [
    (["--s-grid", "0"], "--s-grid"),
    (["--s-grid", "151"], "--s-grid"),                  # Gauss–Hermite weights underflow beyond 150
    (["--s-grid", "panels:0"], "--s-grid"),
    (["--s-grid", "panels:x"], "--s-grid"),
    (["--s-grid", "fine"], "--s-grid"),
    (["--layers", "3", "--gamma", "0.5", "--s-grid", "panels:2"], "--s-grid"),
    (["--layers", "1", "--gamma", "0.5"], "--s-grid"),
    (["--drop-hermite", "0,1,2"], "--s-grid"),
    (["--activation", "relu"], "--activation"),           # not odd
])
def test_two_layer_bad_input(capsys, tmp_path, extra, option):
    rc, _, err = run_cli(capsys, TWO_LAYER + ["--alpha", "4", "-o", str(tmp_path / "x.h5")] + extra)
    assert_one_line_error(rc, err, option)


def test_two_layer_needs_unit_variance(capsys, tmp_path):
    argv = [a for a in TWO_LAYER if a != "--unit-variance"] + ["--alpha", "4", "-o", str(tmp_path / "x.h5")]
    rc, _, err = run_cli(capsys, argv)
    assert_one_line_error(rc, err, "--activation")
    assert "--unit-variance" in err


def test_two_layer_panel_rule_is_stored(capsys, tmp_path):
    # --s-grid panels:P: the composite rule of replica.models.two_layer.effective_readout_panels, named in
    # the root attribute s_grid_rule, with its nodes in every branch group
    from replica.models.two_layer import effective_readout_panels

    out = tmp_path / "panels.h5"
    argv = [a if a != "3" else "panels:1" for a in TWO_LAYER] + ["--alpha", "5.5", "-o", str(out)]
    rc, _, err = run_cli(capsys, argv)
    assert rc == 0, err
    s, _ = effective_readout_panels(1)
    with h5py.File(out) as h5:
        assert h5.attrs["s_grid_rule"] == f"panels:1x4 ({s.size} nodes)"
        assert json.loads(h5.attrs["parameters"])["s_grid"] == "panels:1"
        np.testing.assert_array_equal(h5["branches/layers_1_2/s_values"][:], s)
        assert np.all(np.isfinite(h5["branches/layers_1_2/discretization_error"][:]))
