"""Inputs a new user tries, and what they must give: one clear line, the right file names and
permissions, no silent changes (issue 14, list 8)."""

import math
import os

import numpy as np
import pytest

from replica.workflow.cli import sweep_main
from commands import one_line

DEEP = ["--layers", "2", "--gamma", "1,1", "--activation", "tanh2", "--drop-hermite", "0,1,2", "--unit-variance",
        "--quiet"]
SGD_SMALL = ["--dim", "16", "--time", "2", "--record-every", "log:3", "--n-test", "300", "--quiet"]


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "relu.h5"
    assert sweep_main(DEEP + ["--alpha", "2,4", "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def sgd_file(tmp_path_factory):
    from replica.workflow import sgd_cli

    out = tmp_path_factory.mktemp("sgd") / "sgd.h5"
    old = os.umask(0o022)
    try:
        assert sgd_cli.main(["--activation", "relu", "-o", str(out)] + SGD_SMALL) == 0
    finally:
        os.umask(old)
    return out


# ----------------------------------------------------------------------------- replica-sgd
def test_sgd_plot_of_a_sweep_file_is_one_line(capsys, sweep_file):
    from replica.workflow import sgd_cli

    assert sgd_cli.main(["--plot", str(sweep_file), "--no-theory", "--quiet"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "written by replica-sweep, not by replica-sgd" in line


def test_sgd_plot_output_with_a_figure_suffix(tmp_path, sgd_file):
    pytest.importorskip("matplotlib")
    from replica.workflow import sgd_cli

    prefix = tmp_path / "fig.pdf"
    assert sgd_cli.main(["--plot", str(sgd_file), "-o", str(prefix), "--no-theory", "--quiet", "--dpi", "30"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig_error.pdf", "fig_histograms.pdf"]
    assert (tmp_path / "fig_error.pdf").read_bytes().startswith(b"%PDF")


def test_sgd_file_has_the_permissions_of_every_output(sgd_file):
    assert sgd_file.stat().st_mode & 0o777 == 0o644  # umask 022, as h5py.File would create it


@pytest.mark.parametrize("command", ["sweep", "sgd", "experiment", "spectrum"])
def test_option_errors_come_before_the_existing_output(tmp_path, capsys, command):
    """An existing output must not hide a bad option (the user would fix one, then meet the other)."""
    out = tmp_path / "old.h5"
    out.write_bytes(b"x")
    if command == "sweep":
        rc, option = sweep_main(DEEP + ["--alpha", "2,4", "--activation", "relux", "-o", str(out)]), "--activation"
    elif command == "sgd":
        from replica.workflow import sgd_cli

        rc, option = sgd_cli.main(["--activation", "nope", "-o", str(out)] + SGD_SMALL), "--activation"
    elif command == "experiment":
        from replica.workflow import experiment_cli as cli

        rc, option = cli.main(["--init", "foo", "-o", str(out)]), "--init"
    else:
        from replica.workflow.spectrum import main

        rc, option = main(["--lambda", "-1", "-o", str(out), "--quiet"]), "--lambda"
    assert rc == 2
    line = one_line(capsys.readouterr().err)
    assert option in line and "exists" not in line, line


# ----------------------------------------------------------------------------- messages
def test_experiment_init_error_names_the_option(tmp_path, capsys):
    from replica.workflow import experiment_cli as cli

    assert cli.main(["--init", "foo", "-o", str(tmp_path / "e.h5")]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("replica-experiment: error: --init:") and "'foo'" in line and "informed" in line


@pytest.mark.parametrize("command", ["sweep", "experiment"])
def test_gamma_count_message_for_one_layer(tmp_path, capsys, command):
    if command == "sweep":
        rc = sweep_main(["--gamma", "1,2", "--alpha", "1", "--quiet", "-o", str(tmp_path / "g.h5")])
    else:
        from replica.workflow import experiment_cli as cli

        rc = cli.main(["--gamma", "1,2", "-o", str(tmp_path / "g.h5")])
    assert rc == 2
    line = one_line(capsys.readouterr().err)
    assert "--gamma: expected 1 value for --layers 1, got 2" in line and "1 or 1" not in line


def test_rescaled_discrete_readout_is_announced(tmp_path, capsys):
    from priors import readout_rescaling

    argv = ["--alpha", "2,4", "--readout", "discrete:2=1", "-o", str(tmp_path / "d.h5")]
    assert sweep_main([a for a in DEEP if a != "--quiet"] + argv) == 0
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if ln.startswith("WARNING") and "discrete:2=1" in ln]
    assert len(warnings) == 1 and "rescaled by 1/2" in warnings[0] and "v = 1 " in warnings[0]
    assert readout_rescaling("discrete:1=0.5,-1=0.5") is None  # already E v² = 1: nothing to say
    assert "weights divided by their sum 2" in readout_rescaling("discrete:1=1,-1=1")


def test_spectrum_huge_lambda_is_one_line(tmp_path, capsys):
    from replica.workflow.spectrum import MAX_LAMBDA, main

    assert main(["--gamma", "1", "--readout", "ones", "--lambda", "1e60", "--density-grid", "5", "--quiet",
                 "-o", str(tmp_path / "s.h5")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "--lambda" in line and "1e+30" in line
    assert not (tmp_path / "s.h5").exists()
    assert MAX_LAMBDA == 1e30


def test_one_teacher_reports_no_error_bar(tmp_path, capsys):
    pytest.importorskip("jax")
    pytest.importorskip("blackjax")
    from replica.workflow import experiment_cli as cli

    argv = ["--dim", "6", "--alpha", "0.5", "--teachers", "1", "--steps", "16", "--kept", "4", "--n-test", "64",
            "--sampler", "hmc", "--seed", "3", "--device", "cpu", "-o", str(tmp_path / "e.h5")]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "one teacher: no error bar" in err and "nan" not in err


# ----------------------------------------------------------------------------- quadratic activation
def test_quadratic_activation_has_exactly_zero_g():
    """σ = x²/√2 has no Hermite component above degree two: g ≡ 0, g(1) = 0 exactly (not −2.2e-16)."""
    from replica.activations import get_activation

    act = get_activation("quadratic")
    assert act.g1 == 0.0
    np.testing.assert_array_equal(act.g(np.linspace(-1, 1, 11)), 0.0)
    assert get_activation("hermite:2=1.4142").g1 == 0.0
    relu = get_activation("relu")  # and a real g(1) is untouched: ν − μ₀² − μ₁² − μ₂²/2 for ReLU
    nu, mu0, mu1, mu2 = 0.5, 1 / math.sqrt(2 * math.pi), 0.5, 1 / math.sqrt(2 * math.pi)
    assert relu.g1 == pytest.approx(nu - mu0**2 - mu1**2 - mu2**2 / 2, rel=1e-12)


def test_quadratic_noiseless_mmse_is_zero_past_perfect_recovery():
    """Δ = 0, universal branch: past perfect recovery mmse = g(1) = 0, never negative."""
    from replica.models.shallow import ShallowModel

    model = ShallowModel("quadratic", 0.5, 0.0)
    below, above = (model.solve_universal(a).info["state"] for a in (0.1, 1.0))
    assert below.mmse > 0
    assert above.mmse == 0.0 and math.isinf(above.R2_hat)


def test_s_grid_with_one_hidden_layer_is_refused_by_the_sweep(tmp_path, capsys):
    out = tmp_path / "x.h5"
    rc = sweep_main(["--s-grid", "5", "--alpha", "1,2", "--quiet", "-o", str(out)])
    assert rc == 2 and "--s-grid: only used with --layers >= 2" in one_line(capsys.readouterr().err)
    assert not out.exists()
