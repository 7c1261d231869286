"""``--channel`` in replica-sweep, replica-phase-diagram, configuration files and replica-plot."""

import json

import h5py
import numpy as np
import pytest

from commands import one_line
from priors.output_channels import LogisticChannel, ProbitChannel
from replica.models.shallow import ShallowModel
from replica.workflow.cli import phase_diagram_main, plot_main, sweep_main

ALPHAS = "1,2"


def _sweep(tmp_path, *args, name="s.h5"):
    out = tmp_path / name
    assert sweep_main(["--alpha", ALPHAS, "--branches", "universal", "--quiet", "-o", str(out), *args]) == 0
    return out


@pytest.mark.parametrize("args, channel", [
    (["--channel", "probit", "--delta", "0.2", "--channel-threshold", "0.3"], ProbitChannel(0.2, 0.3)),
    (["--channel", "sign"], ProbitChannel(0.0)),
    (["--channel", "logistic", "--temperature", "0.5"], LogisticChannel(0.5)),
])
def test_sweep_solves_with_the_channel_and_records_it(tmp_path, args, channel):
    out = _sweep(tmp_path, *args)
    model = ShallowModel("relu", 0.5, channel.delta, output_channel=channel)
    with h5py.File(out) as h5:
        stored = json.loads(h5.attrs["output_channel_parameters"])
        assert h5.attrs["output_channel"] == stored.pop("name") == args[1]  # the name given (sign: a noiseless probit)
        assert stored == {k: v for k, v in channel.parameters().items() if k != "name"}
        err = h5["equilibrium/classification_error"][:]
        mmse = h5["equilibrium/mmse"][:]
    for i, alpha in enumerate((1.0, 2.0)):
        st = model.solve_universal(alpha).info["state"]
        assert mmse[i] == pytest.approx(st.mmse, rel=1e-12)
        assert err[i] == pytest.approx(channel.classification_error(model.output_variance, st.mmse), rel=1e-12)
    assert 0 < err[1] < err[0] < 0.5


def test_gaussian_files_keep_their_parameters_and_name_the_channel(tmp_path):
    out = _sweep(tmp_path)
    with h5py.File(out) as h5:
        params = json.loads(h5.attrs["parameters"])
        assert "channel" not in params and params["delta"] == 0.1  # files of earlier versions resume unchanged
        assert h5.attrs["output_channel"] == "gaussian"
        assert json.loads(h5.attrs["output_channel_parameters"]) == {"name": "gaussian", "delta": 0.1}
        assert "classification_error" not in h5["equilibrium"]


def test_channel_from_a_configuration_file(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('channel = "probit"\ndelta = 0.3\n')
    out = _sweep(tmp_path, "--config", str(cfg))
    with h5py.File(out) as h5:
        assert json.loads(h5.attrs["output_channel_parameters"]) == {"name": "probit", "delta": 0.3, "threshold": 0.0}


@pytest.mark.parametrize("args, message", [
    (["--channel", "poisson"], "--channel: unknown output channel"),
    (["--channel", "sign", "--delta", "0.1"], "--delta: --channel sign is noiseless"),
    (["--channel", "logistic", "--delta", "0.1"], "--delta: --channel logistic has no noise variance"),
    (["--temperature", "1"], "--temperature: only for --channel logistic"),
    (["--channel", "logistic", "--temperature", "0"], "--temperature"),
    (["--channel", "logistic", "--channel-threshold", "1"], "--channel-threshold: only for --channel probit or sign"),
])
def test_bad_channel_options_are_one_line_before_any_output(tmp_path, capsys, args, message):
    out = tmp_path / "s.h5"
    assert sweep_main(["--alpha", ALPHAS, "--quiet", "-o", str(out), *args]) == 2
    assert message in one_line(capsys.readouterr().err)
    assert not out.exists()


def test_phase_diagram_varies_the_probit_noise(tmp_path):
    out = tmp_path / "p.h5"
    assert phase_diagram_main(["--channel", "probit", "--vary", "delta", "--delta", "0.1,0.4", "--alpha", ALPHAS,
                               "--branches", "universal", "--workers", "1", "--quiet", "-o", str(out)]) == 0
    with h5py.File(out) as h5:
        err = h5["classification_error"][:]
        assert json.loads(h5.attrs["output_channel_parameters"])["name"] == "probit"
    for j, delta in enumerate((0.1, 0.4)):
        model = ShallowModel("relu", 0.5, delta, output_channel=ProbitChannel(delta))
        st = model.solve_universal(2.0).info["state"]
        assert err[j, 1] == pytest.approx(model.output_channel.classification_error(model.output_variance, st.mmse),
                                          rel=1e-12)
    assert np.all(err[1] > err[0])  # more noise before the sign, more errors


def test_phase_diagram_refuses_to_vary_a_noise_the_channel_lacks(tmp_path, capsys):
    assert phase_diagram_main(["--channel", "sign", "--vary", "delta", "--delta", "0.1,0.4", "--alpha", ALPHAS,
                               "--quiet", "-o", str(tmp_path / "p.h5")]) == 2
    assert "--vary delta: --channel sign has no noise variance" in one_line(capsys.readouterr().err)


def test_plot_draws_the_classification_error(tmp_path, capsys):
    probit = _sweep(tmp_path, "--channel", "probit", name="p.h5")
    assert plot_main([str(probit), "--kind", "classification", "-o", str(tmp_path / "c.png"), "--quiet"]) == 0
    assert (tmp_path / "c.png").stat().st_size > 0
    gaussian = _sweep(tmp_path, name="g.h5")
    assert plot_main([str(gaussian), "--kind", "classification", "-o", str(tmp_path / "g.png"), "--quiet"]) == 2
    assert "no classification_error" in one_line(capsys.readouterr().err)
