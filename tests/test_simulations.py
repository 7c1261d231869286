"""Fast tests of the simulation package (needs the ``experiments`` extra: jax, blackjax, optax).

The samplers are checked on problems whose posterior is known exactly: a linear network
(Gaussian posterior in closed form) for HMC/NUTS and full enumeration of ±1 weights for
Metropolis.  A tiny seeded ``replica-experiment`` run checks the file layout, the
reproducibility and the command-line errors.
"""

import itertools
import json
import math

import numpy as np
import pytest

from optional import require  # noqa: E402

jax = require("jax", extra="experiments")
require("blackjax", extra="experiments")
require("optax", extra="experiments")

from replica.workflow import experiment_cli as cli  # noqa: E402
from replica.simulations.activations import ACTIVATION_NAMES, get_jax_activation  # noqa: E402
from replica.simulations.experiment import ExperimentConfig, run_experiment  # noqa: E402
from replica.workflow.experiment_io import read_experiment  # noqa: E402
from replica.simulations.samplers import make_runner  # noqa: E402
from replica.simulations.teacher_student import (Architecture, make_dataset, network_output,  # noqa: E402
                                         sample_teacher)

# --------------------------------------------------------------------------------------
# activations
# --------------------------------------------------------------------------------------

SPECS = list(ACTIVATION_NAMES) + ["hermite:2=1.4142,3=1", "hermite:0=0.5,1=1,4=0.3"]


@pytest.mark.parametrize("spec", SPECS)
def test_jax_activation_matches_numpy(spec):
    from replica import activations

    x = np.linspace(-4.0, 4.0, 101)
    reference = activations.get_activation(spec)(x)
    value = np.asarray(get_jax_activation(spec)(jax.numpy.asarray(x, jax.numpy.float32)))
    assert np.allclose(value, reference, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("spec, drop, unit", [("tanh2", (0, 1, 2), True), ("relu", (1,), False),
                                              ("relu", (0, 2), True), ("erf", (1,), True)])
def test_jax_activation_with_dropped_hermite_terms_matches_numpy(spec, drop, unit):
    from replica import activations

    x = np.linspace(-4.0, 4.0, 101)
    reference = activations.get_activation(spec, drop_hermite=drop, unit_variance=unit)(x)
    value = np.asarray(get_jax_activation(spec, drop_hermite=drop, unit_variance=unit)(
        jax.numpy.asarray(x, jax.numpy.float32)))
    assert np.allclose(value, reference, rtol=1e-4, atol=1e-4)


def test_unknown_activation_is_rejected():
    with pytest.raises(ValueError, match="unknown activation"):
        get_jax_activation("swish")


# --------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------

def test_labels_follow_the_teacher_with_noise_variance_delta():
    act = get_jax_activation("relu")
    arch = Architecture.from_ratios(20, (0.5,))
    teacher = sample_teacher(arch, prior="gaussian", readout="ones", rng=np.random.default_rng(0))
    noisy = make_dataset(teacher, 20_000, delta=0.1, activation=act, rng=np.random.default_rng(1))
    clean = make_dataset(teacher, 20_000, delta=0.1, activation=act, rng=np.random.default_rng(1),
                         noiseless=True)
    assert np.array_equal(noisy.inputs, clean.inputs)
    assert np.var(noisy.labels - clean.labels) == pytest.approx(0.1, rel=0.05)
    # λ = vᵀσ(Wx/√d)/√k: mean μ₀ Σv/√k = √k/√(2π) for ReLU and v ≡ 1
    assert np.mean(clean.labels) == pytest.approx(math.sqrt(10 / (2 * math.pi)), rel=0.05)


# --------------------------------------------------------------------------------------
# samplers against exact posteriors
# --------------------------------------------------------------------------------------

def _linear_problem(seed=0, d=3, n=12, delta=1.0):
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal((1, d))
    x = rng.standard_normal((n, d))
    y = x @ w0[0] / math.sqrt(d) + math.sqrt(delta) * rng.standard_normal(n)
    precision = np.eye(d) + x.T @ x / (d * delta)
    covariance = np.linalg.inv(precision)
    mean = covariance @ x.T @ y / (math.sqrt(d) * delta)
    return w0, x, y, mean, covariance


@pytest.mark.parametrize("kind", ["hmc", "nuts"])
def test_hmc_samples_the_exact_gaussian_posterior_of_a_linear_network(kind):
    """σ(x) = x, k = 1: the posterior is N(mean, covariance) in closed form."""
    w0, x, y, mean, covariance = _linear_problem()
    act = get_jax_activation("hermite:1=1")
    runner = make_runner(kind, activation=act, delta=1.0, steps=1600, warmup_fraction=0.25, num_kept=400)
    chain = runner(jax.random.key(0), (w0,), np.ones(1), x, y, x[:5], y[:5])
    samples = chain.samples[0][:, 0, :]
    std = np.sqrt(np.diag(covariance))
    # ~400 nearly independent draws: mean error ≈ std/20, variance error ≈ 7%
    assert np.all(np.abs(samples.mean(axis=0) - mean) < 0.25 * std)
    assert np.allclose(samples.std(axis=0), std, rtol=0.25)
    assert 0.5 < chain.acceptance_rate <= 1.0
    assert chain.divergences == 0


def _exact_rademacher_marginals(x, y, readout, shapes, activation, delta):
    """Posterior means of ±1 weights by enumerating all 2^P configurations."""
    sizes = [a * b for a, b in shapes]
    configurations = np.array(list(itertools.product([-1.0, 1.0], repeat=sum(sizes))))
    log_weights = []
    for flat in configurations:
        parts, start = [], 0
        for (a, b), size in zip(shapes, sizes):
            parts.append(flat[start:start + size].reshape(a, b))
            start += size
        residual = y - network_output(parts, readout, x, activation)
        log_weights.append(-np.sum(residual**2) / (2 * delta))
    log_weights = np.array(log_weights)
    weights = np.exp(log_weights - log_weights.max())
    weights /= weights.sum()
    return weights @ configurations


@pytest.mark.parametrize("widths", [(1,), (2, 2)], ids=["shallow-incremental", "deep-generic"])
def test_metropolis_matches_exact_enumeration(widths):
    rng = np.random.default_rng(1)
    d, n, delta = (6, 12, 0.5) if len(widths) == 1 else (2, 10, 0.5)
    arch = Architecture(dim=d, widths=widths)
    x = rng.standard_normal((n, d))
    teacher = [rng.choice([-1.0, 1.0], size=s) for s in arch.shapes]
    readout = np.ones(widths[-1])
    np_act = np.tanh
    y = network_output(teacher, readout, x, np_act) + math.sqrt(delta) * rng.standard_normal(n)
    exact = _exact_rademacher_marginals(x, y, readout, arch.shapes, np_act, delta)

    act = get_jax_activation("tanh")
    runner = make_runner("metropolis", activation=act, delta=delta, steps=4000, warmup_fraction=0.1,
                         num_kept=3600)
    chain = runner(jax.random.key(2), tuple(teacher), readout, x, y, x[:4], y[:4])
    sampled = np.concatenate([s.reshape(s.shape[0], -1) for s in chain.samples], axis=1).mean(axis=0)
    assert np.allclose(sampled, exact, atol=0.12)
    assert 0.0 < chain.acceptance_rate < 1.0


def test_sgd_takes_one_gradient_step_per_sample_in_order():
    # two hidden layers (d = 3, widths 2, 2), tanh, three samples, one pass: the result equals three
    # plain gradient steps W ← W − η ∇ ½(y − λ)² on the samples in their order, the gradient taken here
    # by central finite differences of the NumPy network; two passes see 2n samples
    import jax

    from replica.simulations.samplers import AdamSettings

    rng = np.random.default_rng(7)
    shapes = [(2, 3), (2, 2)]
    start = [rng.standard_normal(s) for s in shapes]
    v = np.array([1.0, -0.5])
    x, y = rng.standard_normal((3, 3)), rng.standard_normal(3)
    def output(ws, xx):
        h = xx
        for w in ws:
            h = np.tanh(h @ w.T / np.sqrt(w.shape[1]))
        return h @ v / np.sqrt(v.size)

    eta = 0.3
    ws = [w.copy() for w in start]
    for i in range(3):
        grads = []
        for layer, w in enumerate(ws):
            g = np.zeros_like(w)
            for idx in np.ndindex(w.shape):
                for sign in (1, -1):
                    shifted = [u.copy() for u in ws]
                    shifted[layer][idx] += sign * 1e-5
                    g[idx] += sign * 0.5 * (y[i] - output(shifted, x[i:i + 1])[0]) ** 2 / 2e-5
            grads.append(g)
        ws = [w - eta * g for w, g in zip(ws, grads)]
    runner = make_runner("sgd", activation=get_jax_activation("tanh"), delta=0.0, steps=1, num_kept=3,
                         adam=AdamSettings(eta))
    chain = runner(jax.random.key(0), tuple(start), v, x, y, x, output(start, x))
    for got, want, before in zip(chain.samples, ws, start):
        assert np.max(np.abs(want - before)) > 0.01  # the steps move the weights
        np.testing.assert_allclose(got[0], want, rtol=0, atol=1e-5)  # float32
    assert chain.trace_steps.tolist() == [1, 2, 3] and chain.steps == 3
    twice = make_runner("sgd", activation=get_jax_activation("tanh"), delta=0.0, steps=2, num_kept=2)
    assert twice(jax.random.key(0), tuple(start), v, x, y, x, y).trace_steps.tolist() == [3, 6]


def test_adam_lowers_the_test_error_from_a_random_start():
    config = ExperimentConfig(dim=12, alpha=(2.0,), teachers=1, sampler="adam", init=("uninformed",),
                              steps=300, num_kept=10, n_test=2000)
    result = run_experiment(config)["uninformed"]
    trace = result.datasets["trace_error"][0, 0]
    assert trace[-1] < 0.5 * trace[0]
    assert result.datasets["mmse_mean"][0] == pytest.approx(trace[-1])


# --------------------------------------------------------------------------------------
# command line: a tiny seeded run
# --------------------------------------------------------------------------------------

TINY = ["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--readout", "ones", "--prior",
        "gaussian", "--alpha", "1", "--dim", "8", "--teachers", "2", "--sampler", "hmc",
        "--init", "informed,uninformed", "--steps", "60", "--kept", "10", "--n-test", "2000",
        "--seed", "0", "--quiet"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("exp") / "exp.h5"
    assert cli.main(TINY + ["-o", str(path)]) == 0
    return path


def test_tiny_run_layout(tiny_run):
    data = read_experiment(tiny_run)
    params = data["parameters"]
    assert params["dim"] == 8 and params["sampler"] == "hmc" and params["alpha"] == [1.0]
    assert params["init"] == ["informed", "uninformed"] and params["seed"] == 0
    assert data["version"]
    for init in ("informed", "uninformed"):
        g = data["groups"][("hmc", init)]
        assert g["alpha"].tolist() == [1.0]
        assert g["num_samples"].tolist() == [64]
        assert g["mmse_mean"].shape == (1,) and g["mmse_sem"].shape == (1,)
        assert g["mmse"].shape == (1, 2)
        assert g["overlap_mean"].shape == (1, 1)
        bins = len(g["overlap_bin_edges"]) - 1
        assert g["overlap_histogram"].shape == (1, 1, bins)
        widths = np.diff(g["overlap_bin_edges"])
        assert np.sum(g["overlap_histogram"][0, 0] * widths) == pytest.approx(1.0)
        assert np.all(np.isfinite(g["mmse"])) and np.all(g["mmse"] > 0)
        assert np.all((g["acceptance_rate"] > 0) & (g["acceptance_rate"] <= 1))
        assert g["trace_error"].shape == (1, 2, len(g["trace_steps"]))
    # the tmp file of the atomic write is gone
    assert [p.name for p in tiny_run.parent.iterdir()] == ["exp.h5"]


def test_two_layer_run_writes_neuron_maps(tmp_path):
    # two hidden layers, 4point readout (two strengths |v|): the per-neuron maps have one row per strength
    # and one column per quantile bin (d = 16: k₁ = 8, one neuron per bin); the informed chain starts at
    # the teacher and stays near it at small noise, so its first-layer map is far above the uninformed
    # one (which starts unlearned)
    path = tmp_path / "two.h5"
    args = ["--layers", "2", "--gamma", "0.5", "--activation", "tanh2", "--readout", "4point", "--alpha", "2",
            "--dim", "16", "--teachers", "2", "--steps", "100", "--kept", "10", "--delta", "0.01",
            "--init", "informed,uninformed", "--seed", "1", "--quiet", "-o", str(path)]
    assert cli.main(args) == 0
    groups = read_experiment(path)["groups"]
    maps = {}
    for init in ("informed", "uninformed"):
        g = groups[("hmc", init)]
        bins = len(g["neuron_quantile_edges"]) - 1
        assert g["neuron_overlap_layer_1_mean"].shape == (1, bins)
        assert g["neuron_overlap_layer_2_mean"].shape == (1, 2, bins)
        assert np.all(np.isfinite(g["neuron_overlap_layer_1_mean"]))
        maps[init] = g["neuron_overlap_layer_1_mean"]
    assert np.mean(maps["informed"]) > 0.5
    assert np.mean(maps["informed"]) > np.mean(maps["uninformed"]) + 0.3


def test_tiny_run_is_reproducible(tiny_run, tmp_path):
    again = tmp_path / "again.h5"
    assert cli.main(TINY + ["-o", str(again)]) == 0
    a, b = read_experiment(tiny_run), read_experiment(again)
    for key in a["groups"]:
        assert np.array_equal(a["groups"][key]["mmse"], b["groups"][key]["mmse"])


def test_existing_output_is_not_overwritten(tiny_run, capsys):
    before = tiny_run.read_bytes()
    assert cli.main(TINY + ["-o", str(tiny_run)]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--overwrite" in err and "Traceback" not in err
    assert tiny_run.read_bytes() == before


@pytest.mark.parametrize("args, message", [
    (["--alpha", "1,x"], "--alpha"),
    (["--alpha", "0,1"], "--alpha"),
    (["--layers", "2", "--gamma", "0.5,0.5,0.5"], "--gamma"),
    (["--sampler", "metropolis"], "rademacher"),
    (["--prior", "rademacher", "--sampler", "hmc"], "Gaussian"),
    (["--delta", "0"], "delta"),
    (["--activation", "swish"], "--activation"),
    (["--readout", "nonsense"], "--readout"),
    (["--init", "informed,teacher"], "init"),
])
def test_bad_input_gives_one_line_and_nonzero_exit(args, message, tmp_path, capsys):
    status = cli.main(TINY + args + ["-o", str(tmp_path / "x.h5")])
    err = capsys.readouterr().err.strip()
    assert status != 0
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.h5").exists()


def test_argparse_errors_exit_nonzero(capsys):
    assert cli.main(["--sampler", "gibbs"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_config_file_sets_options_and_names_unknown_keys(tmp_path, capsys):
    good = tmp_path / "run.toml"
    good.write_text('gamma = 0.5\nlayers = 1\n[experiment]\nsampler = "gibbs"\n')
    assert cli.main(["--config", str(good), "-o", str(tmp_path / "x.h5")]) == 2   # the table's value is checked
    assert "gibbs" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("dimension = 40\n")
    assert cli.main(["--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown key 'dimension'" in err and len(err.splitlines()) == 1
    from replica.workflow.cli import parse_command_line

    good.write_text('gamma = 0.5\n[experiment]\nsampler = "metropolis"\ndim = 24\n')
    args, status = parse_command_line("replica-experiment", cli.build_parser(),
                                      ["--config", str(good), "--sampler", "hmc"])
    assert args.dim == 24
    assert status is None and args.sampler == "hmc" and args.gamma == "0.5"


def test_parameters_are_complete_json():
    config = ExperimentConfig()
    params = json.loads(config.to_json())
    for name in ("layers", "gamma", "activation", "prior", "readout", "delta", "alpha", "dim", "teachers",
                 "sampler", "init", "steps", "seed", "n_test"):
        assert name in params
