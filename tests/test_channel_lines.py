"""Phase lines in the plane of α and a parameter of the output channel (the probit channel's threshold θ and its Δ,
the logistic channel's temperature T): the model copied at another value rebuilds its channel there
(``with_parameter``), the traced lines equal the α_sp and α_c of sweeps of models built directly with that channel
(1e-8), and with an odd activation they are even in θ (the teacher's output changes sign with its first-layer
weights, whose prior is symmetric, so θ and −θ give the same free entropy)."""
from __future__ import annotations

import numpy as np
import pytest

from priors.output_channels import BinaryChannel, LogisticChannel, ProbitChannel, sign_channel
from replica.continuation import sweep
from replica.continuation.codim2 import model_at
from replica.models.shallow import ShallowModel
from replica.workflow.safe_write import checkpoint_path


def _traced(tmp_path, *extra):
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_lines

    out = tmp_path / "lines.h5"
    assert phase_diagram_main(["--trace", "--activation", "tanh2", "--quiet", "-o", str(out), *extra]) == 0
    return read_phase_lines(out)


def _at(line, parameter, value):
    hit = np.flatnonzero(line[parameter] == value)
    assert hit.size == 1, (parameter, value, line[parameter])
    return float(line["alpha"][hit[0]])


@pytest.mark.parametrize("channel, name, value, built", [
    (ProbitChannel(0.1, 0.0), "threshold", 0.4, ProbitChannel(0.1, 0.4)),
    (ProbitChannel(0.1, 0.3), "channel_threshold", -0.2, ProbitChannel(0.1, -0.2)),
    (ProbitChannel(0.1, 0.3), "delta", 0.25, ProbitChannel(0.25, 0.3)),
    (sign_channel(0.0), "threshold", 0.5, sign_channel(0.5)),
    (LogisticChannel(1.0), "temperature", 0.3, LogisticChannel(0.3)),
])
def test_a_copy_at_another_channel_parameter_is_the_model_built_with_that_channel(channel, name, value, built):
    a = model_at(ShallowModel("tanh2", 0.5, channel.delta, output_channel=channel), name, value)
    b = ShallowModel("tanh2", 0.5, built.delta, output_channel=built)
    assert a.output_channel.parameters() == built.parameters()
    x = b.solve_from(3.0, b.starts()["informed"][0], start="informed").x
    np.testing.assert_array_equal(a.update(3.0, x), b.update(3.0, x))


def test_a_channel_parameter_the_channel_does_not_have_is_refused():
    with pytest.raises(ValueError, match="has no parameter 'threshold'"):
        model_at(ShallowModel("tanh2", 0.5, 0.1), "threshold", 0.2)  # Gaussian labels
    with pytest.raises(ValueError, match="its logistic channel: temperature"):
        model_at(ShallowModel("tanh2", 0.5, 0.0, output_channel=LogisticChannel(1.0)), "threshold", 0.2)
    custom = BinaryChannel(lambda lam: -np.logaddexp(0.0, -lam), 1.0, name="mine")
    with pytest.raises(ValueError, match="has no parameter 'temperature'"):
        model_at(ShallowModel("tanh2", 0.5, 0.0, output_channel=custom), "temperature", 0.5)
    # a channel given by its likelihood has no Δ: a copy at another Δ would be the same model (found by a reviewer)
    with pytest.raises(ValueError, match="mine channel .* no parameter 'delta'"):
        model_at(ShallowModel("tanh2", 0.5, 0.0, output_channel=custom), "delta", 0.5)
    # nor does one that carries a built-in's name (decided by the class, not the name: was a TypeError)
    for name, parameter in (("logistic", "temperature"), ("probit", "threshold"), ("sign", "threshold")):
        named = BinaryChannel(lambda lam: -np.logaddexp(0.0, -lam), 1.0, name=name)
        with pytest.raises(ValueError, match=f"has no parameter '{parameter}'"):
            model_at(ShallowModel("tanh2", 0.5, 0.0, output_channel=named), parameter, 0.5)
    with pytest.raises(ValueError, match="temperature"):
        model_at(ShallowModel("tanh2", 0.5, 0.0, output_channel=LogisticChannel(1.0)), "temperature", -1.0)
    for bad in ([0.2, 0.3], None):
        with pytest.raises(ValueError, match="temperature must be a number"):
            model_at(ShallowModel("tanh2", 0.5, 0.0, output_channel=LogisticChannel(1.0)), "temperature", bad)


def test_threshold_lines_equal_the_sweeps_and_are_even_in_theta(tmp_path):
    thetas = [-0.5, -0.25, 0.0, 0.25, 0.5]
    data = _traced(tmp_path, "--channel", "probit", "--delta", "0.1", "--channel-threshold",
                   ",".join(map(str, thetas)), "--alpha", "0.5:10:20")
    assert data["parameter"] == "channel_threshold" and np.array_equal(data["requested"], thetas)
    kinds = {line["kind"]: line for line in data["lines"]}
    assert set(kinds) == {"fold", "crossing"}
    for theta in (0.25, 0.5):
        model = ShallowModel("tanh2", 0.5, 0.1, output_channel=ProbitChannel(0.1, theta))
        ref = sweep(model, np.linspace(0.5, 10.0, 20), progress=False)
        for kind, value in (("fold", ref.transitions["alpha_sp"]), ("crossing", ref.transitions["alpha_c"])):
            assert _at(kinds[kind], "channel_threshold", theta) == pytest.approx(value, abs=1e-8), (kind, theta)
            assert _at(kinds[kind], "channel_threshold", -theta) == pytest.approx(value, abs=1e-8), (kind, -theta)
    # a larger threshold (rarer positive labels, less information per label) needs more samples
    sp = [_at(kinds["fold"], "channel_threshold", t) for t in (0.0, 0.25, 0.5)]
    assert sp[0] < sp[1] < sp[2]


def _equal_to_a_sweep(data, parameter, value, model, alphas):
    """The traced file's spinodal and first-order line at ``parameter = value`` equal the α_sp and α_c of a sweep of
    ``model`` (built directly with that channel) to 1e-8."""
    assert data["parameter"] == parameter
    kinds = {line["kind"]: line for line in data["lines"]}
    ref = sweep(model, alphas, progress=False)
    assert _at(kinds["fold"], parameter, value) == pytest.approx(ref.transitions["alpha_sp"], abs=1e-8)
    assert _at(kinds["crossing"], parameter, value) == pytest.approx(ref.transitions["alpha_c"], abs=1e-8)


def test_probit_delta_lines_equal_the_sweeps(tmp_path):
    data = _traced(tmp_path, "--channel", "probit", "--delta", "0.05,0.1,0.2", "--alpha", "0.5:10:20")
    _equal_to_a_sweep(data, "delta", 0.2, ShallowModel("tanh2", 0.5, 0.2, output_channel=ProbitChannel(0.2)),
                      np.linspace(0.5, 10.0, 20))


def test_temperature_lines_equal_the_sweeps_and_are_drawn(tmp_path):
    from replica.workflow.plotting import plot_file

    data = _traced(tmp_path, "--channel", "logistic", "--temperature", "0.2,0.3", "--alpha", "1:10:10")
    _equal_to_a_sweep(data, "temperature", 0.3, ShallowModel("tanh2", 0.5, 0.0, output_channel=LogisticChannel(0.3)),
                      np.linspace(1.0, 10.0, 10))
    fig = plot_file(tmp_path / "lines.h5")
    assert "temperature" in fig.axes[0].get_ylabel()
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("extra, message", [
    (["--channel-threshold", "0,1"], "--channel-threshold: only for --channel probit or sign"),
    (["--channel", "logistic", "--temperature", "0:1:3"], "--temperature: values must be > 0"),
    (["--channel", "probit", "--temperature", "0.1,0.2"], "--temperature: only for --channel logistic"),
    (["--channel", "probit", "--channel-threshold", "0,1e5"], "--channel-threshold: values must be <= 10000"),
    (["--channel", "probit", "--channel-threshold", "0,1", "--delta", "0.1,0.2"], "only one of"),
    (["--channel", "probit", "--channel-threshold", "1,0"], "--channel-threshold: give at least two increasing"),
])
def test_bad_channel_grids_are_refused_in_one_line(tmp_path, capsys, extra, message):
    from replica.workflow.cli import phase_diagram_main

    out = tmp_path / "lines.h5"
    assert phase_diagram_main(["--trace", "--activation", "tanh2", "--alpha", "0.5:8:10", "--quiet", "-o", str(out),
                               *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists() and not checkpoint_path(out).exists()


def test_a_grid_diagram_over_the_threshold_equals_the_traced_lines(tmp_path):
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_diagram

    out = tmp_path / "grid.h5"
    assert phase_diagram_main(["--activation", "tanh2", "--channel", "probit", "--delta", "0.1", "--channel-threshold",
                               "0,0.5", "--alpha", "0.5:10:20", "--workers", "1", "--quiet", "-o", str(out)]) == 0
    grid = read_phase_diagram(out)
    lines = {line["kind"]: line for line in _traced(tmp_path, "--channel", "probit", "--delta", "0.1",
                                                    "--channel-threshold", "0,0.5", "--alpha", "0.5:10:20")["lines"]}
    assert grid["parameter"] == "channel_threshold"
    # the axis is not a common parameter of the lines (the title would show θ = 0 for the whole diagram)
    assert "channel_threshold" not in grid["parameters"] and grid["parameters"]["channel"] == "probit"
    np.testing.assert_allclose(grid["alpha_sp"], [_at(lines["fold"], "channel_threshold", t) for t in (0.0, 0.5)],
                               atol=1e-8)
    np.testing.assert_allclose(grid["alpha_c"], [_at(lines["crossing"], "channel_threshold", t) for t in (0.0, 0.5)],
                               atol=1e-8)
