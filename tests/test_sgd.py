"""Tests of the online-SGD module (``replica.simulations.sgd``), its CLI and its figures.

Fast (seeded, small d); the scaling check of the specialization time is marked slow.
"""

import json
import math

import numpy as np
import pytest

from replica.simulations import sgd
from replica.workflow import sgd_results
from replica.simulations.sgd import SGDConfig, activation_functions, loss_and_gradient, run_sgd
from replica.workflow.sgd_results import fit_power_law, predicted_exponent, specialization_time

ACTIVATIONS = ["relu", "elu", "tanh", "tanh2", "erf", "sigmoid", "softplus", "quadratic",
               "hermite:1=0.5,2=1.4142,3=1", "hermite:0=0.5,4=0.3"]


# --------------------------------------------------------------------------------------
# σ' and the gradient
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ACTIVATIONS)
def test_activation_derivative_matches_finite_differences(spec):
    act, der = activation_functions(spec)
    x = np.linspace(-3.1, 3.3, 57)           # avoids x = 0 (ReLU/ELU kink)
    h = 1e-6
    fd = (act(x + h) - act(x - h)) / (2 * h)
    np.testing.assert_allclose(der(x), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("spec,modifiers", [("tanh2", {"drop_hermite": (0, 1, 2), "unit_variance": True}),
                                            ("elu", {"drop_hermite": (1,)}),
                                            ("relu", {"drop_hermite": (0, 2), "unit_variance": True})])
def test_modified_activation_derivative(spec, modifiers):
    act, der = activation_functions(spec, **modifiers)
    x = np.linspace(-2.9, 3.1, 41)
    h = 1e-6
    np.testing.assert_allclose(der(x), (act(x + h) - act(x - h)) / (2 * h), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("spec", ["elu", "tanh", "quadratic", "relu", "hermite:1=0.5,2=1.4142,3=1"])
def test_gradient_matches_finite_differences_of_the_loss(spec):
    rng = np.random.default_rng(1)
    k, d, batch = 5, 7, 3
    act, der = activation_functions(spec)
    weights = rng.standard_normal((k, d))
    readout = rng.choice([-1.0, 1.0], size=k)
    inputs = rng.standard_normal((batch, d))
    labels = rng.standard_normal(batch)
    loss, grad = loss_and_gradient(weights, readout, inputs, labels, act, der)
    h = 1e-6
    fd = np.zeros_like(weights)
    for i in range(k):
        for j in range(d):
            plus, minus = weights.copy(), weights.copy()
            plus[i, j] += h
            minus[i, j] -= h
            fd[i, j] = (loss_and_gradient(plus, readout, inputs, labels, act, der)[0]
                        - loss_and_gradient(minus, readout, inputs, labels, act, der)[0]) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("spec,modifiers", [("elu", {}), ("relu", {}), ("softplus", {}),
                                            ("hermite:2=1.4142,3=1", {}),
                                            ("tanh2", {"drop_hermite": (1,), "unit_variance": True})])
def test_compiled_steps_equal_numpy_reference(spec, modifiers):
    pytest.importorskip("numba")
    rng = np.random.default_rng(2)
    k, d, m, batch = 6, 9, 5, 3
    w0 = rng.standard_normal((k, d))
    readout = rng.standard_normal(k)
    inputs = rng.standard_normal((m, batch, d))
    labels = rng.standard_normal((m, batch))
    a, b = w0.copy(), w0.copy()
    sa = sgd.sgd_steps(a, readout, inputs, labels, 0.3, spec, backend="numba", **modifiers)
    sb = sgd.sgd_steps(b, readout, inputs, labels, 0.3, spec, backend="numpy", **modifiers)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert sa == pytest.approx(sb, rel=1e-10)


def test_one_step_is_minus_lr_times_gradient():
    rng = np.random.default_rng(3)
    act, der = activation_functions("elu")
    w = rng.standard_normal((4, 8))
    v = np.ones(4)
    x = rng.standard_normal((1, 2, 8))
    y = rng.standard_normal((1, 2))
    _, grad = loss_and_gradient(w, v, x[0], y[0], act, der)
    w1 = w.copy()
    sgd.sgd_steps(w1, v, x, y, 0.7, "elu")
    np.testing.assert_allclose(w1, w - 0.7 * grad, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------------------
# dynamics
# --------------------------------------------------------------------------------------
def test_quadratic_activation_learns_the_quadratic_part():
    cfg = SGDConfig(activation="quadratic", dim=32, gamma=0.5, delta=0.0, lr=0.2, batch=2,
                    time=8.0, record="log:4", seed=0, n_test=1000)
    result = run_sgd(cfg)
    assert abs(result.quadratic_overlap[0]) < 0.15
    assert result.quadratic_overlap[-1] > 0.6
    assert result.test_error[-1] < 0.5 * result.test_error[0]


def test_zero_learning_rate_moves_nothing():
    cfg = SGDConfig(activation="elu", dim=24, lr=0.0, batch=3, time=1.0, record="log:3", seed=4,
                    n_test=500)
    result = run_sgd(cfg)
    for name in ("test_error", "linear_overlap", "quadratic_overlap", "student_norm",
                 "specialized_fraction"):
        values = getattr(result, name)
        np.testing.assert_array_equal(values, values[0], err_msg=name)
    assert np.all(result.overlap_histograms == result.overlap_histograms[0])


def test_run_is_reproducible_and_batch_independent_in_t():
    base = dict(activation="tanh", dim=32, lr=0.3, time=2.0, record="log:2", n_test=2000, seed=5)
    a = run_sgd(SGDConfig(batch=1, **base))
    b = run_sgd(SGDConfig(batch=1, **base))
    np.testing.assert_array_equal(a.test_error, b.test_error)
    c = run_sgd(SGDConfig(batch=4, **base))
    # different data stream, same deterministic limit in t: errors agree loosely at the end
    assert c.test_error[-1] == pytest.approx(a.test_error[-1], rel=0.35)
    assert a.time[-1] == pytest.approx(2.0, rel=1e-3)


def test_overlap_statistics_on_planted_student():
    rng = np.random.default_rng(6)
    k, d = 10, 400
    teacher = rng.standard_normal((k, d))
    student = rng.standard_normal((k, d))
    signs = np.array([1, -1, 1, 1, -1, 1, 1, 1, 1, 1.0])
    student[:4] = signs[:4, None] * teacher[[2, 0, 1, 3]] + 0.1 * rng.standard_normal((4, d))
    stats = sgd.overlap_statistics(student, teacher, np.ones(k), threshold=0.5)
    assert stats["specialized_fraction"] == pytest.approx(0.4)
    assert stats["match_sign_positive_fraction"] == pytest.approx(0.75)
    np.testing.assert_array_equal(stats["matched_teacher"][:4], [2, 0, 1, 3])
    assert stats["histogram"].sum() == k * k
    self_stats = sgd.overlap_statistics(teacher, teacher, np.ones(k))
    assert self_stats["linear_overlap"] == pytest.approx(1.0)
    assert self_stats["quadratic_overlap"] == pytest.approx(1.0)


# --------------------------------------------------------------------------------------
# time-scale estimation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("t_planted,plateau", [(37.0, 1.0), (410.0, 0.8), (3.0, 0.6)])
def test_specialization_time_recovers_planted_time(t_planted, plateau):
    rng = np.random.default_rng(7)
    t = np.concatenate([[0.0], np.logspace(-2, 4, 121)])
    curve = np.zeros_like(t)
    curve[1:] = plateau / (1.0 + (t_planted / t[1:]) ** 4)
    noisy = np.clip(curve + 0.03 * rng.standard_normal(t.size), 0, 1)
    noisy[20] = 0.9                                         # an isolated spike before the rise
    estimate = specialization_time(t, noisy, level=0.5, relative=True)
    assert estimate == pytest.approx(t_planted, rel=0.1)
    absolute = specialization_time(t, curve, level=0.5 * plateau)
    assert absolute == pytest.approx(t_planted, rel=0.02)


def test_specialization_time_nan_without_specialization():
    t = np.logspace(-1, 2, 30)
    assert math.isnan(specialization_time(t, np.zeros_like(t)))
    assert math.isnan(specialization_time(t, np.linspace(0, 0.3, 30), level=0.5))


def test_run_to_specialization_stops_after_the_plateau():
    # tanh, k = 8: specializes at t ≈ 60–75; the run stops 3 records after the fraction has
    # reached 0.75, long before its final time, and t_spec lies before the stop
    from replica.simulations.sgd import SGDConfig
    from replica.workflow.sgd_results import run_to_specialization

    cfg = SGDConfig(activation="tanh", dim=16, gamma=0.5, lr=0.5, batch=2, time=5000.0, seed=0,
                    n_test=200, threshold=0.8)
    result, t_spec = run_to_specialization(cfg, level=0.5)
    assert not result.completed and result.time[-1] < 1000
    assert np.all(result.specialized_fraction[-3:] >= 0.75)
    assert 0 < t_spec < result.time[-1]
    assert t_spec == specialization_time(result.time, result.specialized_fraction, level=0.5)
    with pytest.raises(ValueError, match="level"):
        run_to_specialization(cfg, level=1.0)


def test_power_law_fit_recovers_exponent():
    rng = np.random.default_rng(8)
    k = np.repeat([8, 12, 16, 24, 32, 48], 3)
    t = 0.2 * k ** 3.0 / np.log(k) * np.exp(0.05 * rng.standard_normal(k.size))
    fit = fit_power_law(k, t, log_power=1.0)
    assert fit["exponent"] == pytest.approx(3.0, abs=3 * fit["stderr"] + 0.05)
    assert 0 < fit["stderr"] < 0.2
    with pytest.raises(ValueError):
        fit_power_law([8, 8], [1.0, 2.0])


@pytest.mark.parametrize("spec,r", [("relu", 4), ("elu", 3), ("tanh", 3), ("quadratic", None),
                                    ("hermite:2=1,5=1", 5)])
def test_predicted_exponent(spec, r):
    assert predicted_exponent(spec) == r


# --------------------------------------------------------------------------------------
# files, CLI, figures
# --------------------------------------------------------------------------------------
REQUIRED = ("time", "test_error", "linear_overlap", "quadratic_overlap", "overlap_histograms",
            "overlap_bin_edges", "histogram_times", "specialized_fraction",
            "match_sign_positive_fraction")

SMALL = ["--dim", "16", "--time", "2", "--record-every", "log:3", "--n-test", "300", "--quiet"]


def test_cli_writes_file_and_refuses_to_overwrite(tmp_path, capsys):
    from replica.workflow import sgd_cli

    out = tmp_path / "run.h5"
    assert sgd_cli.main(["--activation", "elu", "--seed", "1", "-o", str(out)] + SMALL) == 0
    data = sgd_results.read_sgd(out)
    for name in REQUIRED:
        assert name in data, name
    assert data["overlap_histograms"].shape == (data["histogram_times"].size, data["overlap_bin_edges"].size - 1)
    assert data["parameters"]["activation"] == "elu"
    assert data["parameters"]["width"] == 8
    assert json.loads(json.dumps(data["parameters"]))
    assert data["version"]
    assert list(tmp_path.iterdir()) == [out]                  # no temporary file left
    mtime = out.stat().st_mtime_ns
    capsys.readouterr()
    assert sgd_cli.main(["-o", str(out)] + SMALL) == 2
    err = capsys.readouterr().err.strip()
    assert "exists" in err and len(err.splitlines()) == 1
    assert out.stat().st_mtime_ns == mtime
    assert sgd_cli.main(["-o", str(out), "--overwrite"] + SMALL) == 0


@pytest.mark.parametrize("bad", [["--dim", "0"], ["--dim", "x"], ["--activation", "nope"],
                                 ["--readout", "bogus"], ["--lr", "-1"], ["--delta", "nan"],
                                 ["--record-every", "log:x"], ["--record-every", "-3"],
                                 ["--prior", "laplace"], ["--threshold", "1.5"],
                                 ["--drop-hermite", "a"], ["--gamma", "0"],
                                 ["--lr", "1e6"]])                           # diverges
def test_cli_rejects_bad_input(tmp_path, capsys, bad):
    from replica.workflow import sgd_cli

    out = tmp_path / "bad.h5"
    try:
        # --quiet: a slow diverging run would otherwise draw progress-bar updates on stderr
        status = sgd_cli.main(["-o", str(out), "--quiet"] + SMALL + bad)
    except SystemExit as exc:                                  # argparse-level errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "error" in err
    assert not out.exists()


def test_cli_reads_a_config_file(tmp_path, capsys):
    from replica.workflow import sgd_cli

    cfg = tmp_path / "sgd.toml"
    out = tmp_path / "cfg.h5"
    cfg.write_text(f'activation = "elu"\ndim = 12\n[sgd]\noutput = "{out}"\nseed = 3\n')
    assert sgd_cli.main(["--config", str(cfg), "--time", "1", "--n-test", "200", "--quiet"]) == 0
    params = sgd_results.read_sgd(out)["parameters"]
    assert params["activation"] == "elu" and params["dim"] == 12 and params["seed"] == 3
    cfg.write_text("step_size = 0.1\n")
    assert sgd_cli.main(["--config", str(cfg), "-o", str(tmp_path / "never.h5")]) == 2
    assert "unknown key 'step_size'" in capsys.readouterr().err
    assert not (tmp_path / "never.h5").exists()


def test_figures_render(tmp_path):
    pytest.importorskip("matplotlib")
    from replica.workflow import sgd_cli

    out = tmp_path / "fig.h5"
    assert sgd_cli.main(["--activation", "relu", "-o", str(out)] + SMALL) == 0
    assert sgd_cli.main(["--plot", str(out), "--no-theory", "--quiet", "--dpi", "40"]) == 0
    for suffix in ("_histograms.png", "_error.png"):
        png = tmp_path / f"fig{suffix}"
        assert png.stat().st_size > 1000


@pytest.mark.slow
def test_elu_specializes_at_d64():
    """The acceptance run (about a minute): ELU, d = 64, γ = 0.5 specializes by t = 1000."""
    result = run_sgd(SGDConfig(activation="elu", dim=64, gamma=0.5, seed=0, time=1000.0,
                               threshold=0.7, record="log:10"))
    assert result.specialized_fraction[-1] > 0.8
    assert result.test_error[-1] < 0.1 * result.test_error[0]
    assert math.isfinite(specialization_time(result.time, result.specialized_fraction))


def test_reference_levels_are_stored_and_plotted(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from replica.workflow import sgd_cli, sgd_plots

    out = tmp_path / "ref.h5"
    assert sgd_cli.main(["--activation", "elu", "-o", str(out)] + SMALL) == 0

    def fake_levels(params, alphas, *, bayes=True):
        return {"alpha": alphas, "universal": 0.05 + 0 * alphas, "bayes": 0.01 / (1 + alphas),
                "bayes_alpha": alphas, "errors": []}

    monkeypatch.setattr(sgd_results, "reference_levels", fake_levels)
    sgd_results.store_reference_levels(out, num=5)
    data = sgd_results.read_sgd(out)
    np.testing.assert_allclose(data["reference_universal_mmse"], 0.05)
    assert data["reference_alpha"].shape == (5,)
    assert data["test_error"].shape == data["time"].shape          # the run is untouched
    assert list(tmp_path.iterdir()) == [out]
    fig = sgd_plots.plot_test_error(data, theory=True)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any("universal" in label for label in labels) and any("Bayes" in label for label in labels)


def test_missing_solver_does_not_break_reference_levels(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fail(name, globals=None, locals=None, fromlist=(), level=0):
        # the registry imports its module relatively (``from .shallow import …``)
        if name.startswith("replica.models.shallow") or (level and name == "shallow"):
            raise ImportError("solver not installed")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", fail)
    levels = sgd_results.reference_levels({"activation": "elu", "gamma": 0.5, "dim": 10, "delta": 0.1,
                                   "prior": "gaussian", "readout": "ones"}, [0.1, 1.0])
    assert "universal" not in levels and levels["errors"]
