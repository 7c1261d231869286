"""``replica-experiment --channel``: output channels in the finite-size experiments (needs the ``experiments`` extra).

Independent checks: the JAX log-likelihoods against the NumPy ones of :mod:`priors.output_channels`; the
centring constant μ₀ against closed forms; the labels against the probit law written here; the
classification measures against hand-made cases and the Gaussian-orthant law ``arccos(ρ)/π``; HMC with the
probit likelihood against the posterior of a two-weight network computed on a grid; the command line
(options, stored attributes, refusals). A ``slow`` test compares a bigger run with the replica theory.
"""

import json
import math

import numpy as np
import pytest

from optional import require  # noqa: E402

jax = require("jax", extra="experiments")
require("blackjax", extra="experiments")

from priors.output_channels import GaussianChannel, LogisticChannel, ProbitChannel, get_output_channel  # noqa: E402
from replica.workflow import experiment_cli as cli  # noqa: E402
from replica.simulations.channels import jax_log_likelihood, output_mean_coefficient  # noqa: E402
from replica.workflow.experiment_io import read_experiment  # noqa: E402
from replica.simulations.measurements import classification_measures  # noqa: E402

#: its module fixtures are computed once: one process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_channel_experiment")

MU0_RELU = 1.0 / math.sqrt(2.0 * math.pi)  # E max(z, 0), z ~ N(0, 1)

TINY = ["--activation", "relu", "--gamma", "0.5", "--readout", "ones", "--alpha", "1", "--dim", "8",
        "--teachers", "2", "--sampler", "hmc", "--init", "informed,uninformed", "--steps", "60", "--kept", "10",
        "--n-test", "2000", "--seed", "0", "--quiet"]


# --------------------------------------------------------------------------------------
# the likelihood in JAX and the centring
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("channel", [GaussianChannel(0.3), ProbitChannel(0.1), ProbitChannel(2.0, threshold=0.4),
                                     LogisticChannel(0.7), get_output_channel("logistic", temperature=3.0)],
                         ids=["gaussian", "probit", "probit-threshold", "logistic", "logistic-T3"])
def test_jax_log_likelihood_equals_the_numpy_one(channel):
    rng = np.random.default_rng(3)
    lam = np.concatenate([rng.normal(0.0, 2.0, 400), [-40.0, -8.0, 0.0, 8.0, 40.0]])
    y = rng.normal(0.0, 1.5, lam.size) if channel.name == "gaussian" else rng.choice([-1.0, 1.0], lam.size)
    expected = channel.log_likelihood(y, lam)
    with jax.enable_x64(True):
        got = np.asarray(jax.jit(jax_log_likelihood(channel))(jax.numpy.asarray(y), jax.numpy.asarray(lam)))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)


def test_jax_log_likelihood_refuses_the_sign_channel_and_numpy_only_channels():
    from priors.output_channels import BinaryChannel

    with pytest.raises(ValueError, match="step likelihood"):
        jax_log_likelihood(get_output_channel("sign"))
    with pytest.raises(ValueError, match="no JAX log-likelihood"):
        jax_log_likelihood(BinaryChannel(lambda lam: -np.logaddexp(0.0, -lam)))


@pytest.mark.parametrize("spec, kwargs, expected", [
    ("relu", {}, MU0_RELU),
    ("relu", {"unit_variance": True}, MU0_RELU / math.sqrt(0.5)),  # E relu(z)² = 1/2
    ("relu", {"drop_hermite": (0,)}, 0.0),
    ("tanh2", {}, 0.0),
    ("hermite:0=0.5,1=1", {}, 0.5),
])
def test_output_mean_coefficient_closed_forms(spec, kwargs, expected):
    assert output_mean_coefficient(spec, **kwargs) == pytest.approx(expected, abs=1e-9)


def test_output_mean_coefficient_refuses_deep_networks_with_a_mean():
    with pytest.raises(ValueError, match="mu0"):
        output_mean_coefficient("relu", layers=2)
    assert output_mean_coefficient("tanh2", layers=2, unit_variance=True) == 0.0


def test_probit_labels_are_balanced_and_follow_the_probit_law():
    """ReLU, d = 40, k = 20: the output's mean is μ₀√k ≈ 1.78, so labels of the uncentred output would be
    +1 for ~99%; centred, P(y = sign(λ_c)) is E Φ(|λ_c|/√Δ), computed here from the outputs."""
    from scipy.special import ndtr

    from replica.simulations.activations import get_jax_activation
    from replica.simulations.teacher_student import Architecture, make_dataset, sample_teacher

    arch = Architecture.from_ratios(40, (0.5,))
    teacher = sample_teacher(arch, prior="gaussian", readout="ones", rng=np.random.default_rng(0))
    act = get_jax_activation("relu")
    centre = MU0_RELU * teacher.readout.sum() / math.sqrt(teacher.readout.size)
    delta = 0.1
    clean = make_dataset(teacher, 40_000, delta=0.0, activation=act, rng=np.random.default_rng(1), noiseless=True)
    data = make_dataset(teacher, 40_000, delta=delta, activation=act, rng=np.random.default_rng(1),
                        channel=ProbitChannel(delta), centre=centre)
    np.testing.assert_array_equal(data.inputs, clean.inputs)
    assert set(np.unique(data.labels)) == {-1.0, 1.0}
    lam_c = clean.labels - centre
    assert abs(np.mean(lam_c)) < 0.1          # the constant removes the mean (finite-d offset O(1/√d))
    assert abs(np.mean(data.labels)) < 0.1
    agree = np.mean(data.labels == np.where(lam_c > 0, 1.0, -1.0))
    expected = np.mean(ndtr(np.abs(lam_c) / math.sqrt(delta)))
    assert agree == pytest.approx(expected, abs=4 * math.sqrt(expected * (1 - expected) / lam_c.size))


# --------------------------------------------------------------------------------------
# classification measures
# --------------------------------------------------------------------------------------

def test_classification_measures_on_a_hand_made_case():
    # centre 1, threshold 0: teacher centred (1, −1, 0.5, −2) → decisions (+, −, +, −); labels (+, +, +, −)
    teacher = np.array([2.0, 0.0, 1.5, -1.0])
    labels = np.array([1.0, 1.0, 1.0, -1.0])
    outputs = np.array([[2.0, 2.0, 0.0, 0.0],     # centred (1, 1, −1, −1) → (+, +, −, −)
                        [0.0, 0.5, 3.0, 0.0]])    # centred (−1, −0.5, 2, −1) → (−, −, +, −)
    # posterior mean centred (0, 0.25, 0.5, −1) → Bayes (+, +, +, −) (a tie at θ counts as +)
    m = classification_measures(outputs, teacher, labels, centre=1.0)
    assert m["classification_error"] == 0.0                        # Bayes = labels
    assert m["gibbs_classification_error"] == pytest.approx(3 / 8)  # sample 1: point 3; sample 2: points 1, 2
    assert m["sign_disagreement"] == pytest.approx(1 / 4)           # point 2: Bayes + vs teacher −
    assert m["teacher_disagreement"] == pytest.approx(3 / 8)        # sample 1: points 2, 3; sample 2: point 1
    assert m["replica_disagreement"] == pytest.approx(3 / 4)        # samples 1 and 2 differ on points 1, 2, 3
    m = classification_measures(outputs, teacher, labels, centre=1.0, threshold=0.75)
    assert m["classification_error"] == pytest.approx(3 / 4)        # Bayes (−, −, −, −) at θ = 0.75
    with pytest.raises(ValueError, match="-1, \\+1"):
        classification_measures(outputs, teacher, np.array([1.0, 0.0, 1.0, -1.0]))


def test_classification_measures_follow_the_gaussian_orthant_law():
    """Teacher and samples jointly Gaussian (λ^a = ω + √V z_a, λ⁰ = ω + √V z): disagreements are
    arccos(ρ)/π with ρ = K*/K_d (Sheppard), equal for teacher–sample and sample–sample pairs."""
    rng = np.random.default_rng(7)
    n, kept, k_star, v = 200_000, 4, 0.6, 0.4
    omega = math.sqrt(k_star) * rng.standard_normal(n)
    teacher = omega + math.sqrt(v) * rng.standard_normal(n)
    outputs = omega[None, :] + math.sqrt(v) * rng.standard_normal((kept, n))
    labels = np.where(teacher > 0, 1.0, -1.0)
    m = classification_measures(outputs + 0.3, teacher + 0.3, labels, centre=0.3)
    expected = math.acos(k_star / (k_star + v)) / math.pi
    tol = 4 * math.sqrt(expected / n)
    assert m["teacher_disagreement"] == pytest.approx(expected, abs=tol)
    assert m["replica_disagreement"] == pytest.approx(expected, abs=tol)
    assert m["gibbs_classification_error"] == pytest.approx(expected, abs=tol)  # noiseless labels


# --------------------------------------------------------------------------------------
# HMC with the probit likelihood against a grid posterior
# --------------------------------------------------------------------------------------

def test_hmc_with_probit_likelihood_matches_the_grid_posterior():
    """d = 2, one ReLU unit, v = 1, probit Δ = 0.25, 40 labels: the posterior of the two weights on a
    400 × 400 grid (NumPy log-likelihood of priors.output_channels, centring written here) against NUTS."""
    from replica.simulations.activations import get_jax_activation
    from replica.simulations.samplers import make_runner

    rng = np.random.default_rng(11)
    d, n, channel = 2, 40, ProbitChannel(0.25)
    w0 = rng.standard_normal((1, d))
    x = rng.standard_normal((n, d))
    lam_c = np.maximum(x @ w0[0] / math.sqrt(d), 0.0) - MU0_RELU
    y = channel.sample(lam_c, rng)

    grid = np.linspace(-5.0, 5.0, 400)
    w1, w2 = np.meshgrid(grid, grid, indexing="ij")
    pre = (w1[..., None] * x[:, 0] + w2[..., None] * x[:, 1]) / math.sqrt(d)
    log_post = -0.5 * (w1**2 + w2**2) + channel.log_likelihood(y, np.maximum(pre, 0.0) - MU0_RELU).sum(axis=-1)
    p = np.exp(log_post - log_post.max())
    p /= p.sum()
    mean = np.array([np.sum(p * w1), np.sum(p * w2)])
    std = np.sqrt(np.array([np.sum(p * w1**2), np.sum(p * w2**2)]) - mean**2)

    runner = make_runner("nuts", activation=get_jax_activation("relu"), delta=channel.delta, steps=3000,
                         warmup_fraction=0.2, num_kept=600, channel=channel, mean_coefficient=MU0_RELU)
    chain = runner(jax.random.key(0), (w0,), np.ones(1), x, y, x[:5], lam_c[:5])
    samples = chain.samples[0][:, 0, :]
    # ~600 draws with some autocorrelation: mean error ≲ std/10, std error ≲ 15 %
    assert np.all(np.abs(samples.mean(axis=0) - mean) < 0.2 * std)
    np.testing.assert_allclose(samples.std(axis=0), std, rtol=0.25)
    # the Gaussian likelihood (no channel) gives another posterior: the check can tell them apart
    assert np.max(np.abs(mean)) > 0.1


# --------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def probit_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("channel") / "probit.h5"
    assert cli.main(TINY + ["--channel", "probit", "--delta", "0.2", "--channel-threshold", "0.1",
                            "-o", str(path)]) == 0
    return path


def test_probit_run_stores_the_channel_and_the_classification_errors(probit_run):
    import h5py

    data = read_experiment(probit_run)
    params = data["parameters"]
    assert (params["channel"], params["delta"], params["channel_threshold"]) == ("probit", 0.2, 0.1)
    assert data["output_channel"] == {"name": "probit", "delta": 0.2, "threshold": 0.1}
    with h5py.File(probit_run) as f:
        assert f.attrs["output_channel"] == "probit"
        assert json.loads(f.attrs["output_channel_parameters"]) == {"name": "probit", "delta": 0.2, "threshold": 0.1}
        assert f.attrs["output_mean_coefficient"] == pytest.approx(MU0_RELU, abs=1e-9)
        assert json.loads(f.attrs["configuration"])["channel"] == "probit"
    for init in ("informed", "uninformed"):
        g = data["groups"][("hmc", init)]
        for name in ("classification_error", "gibbs_classification_error", "sign_disagreement",
                     "nishimori_teacher_disagreement", "nishimori_replica_disagreement"):
            assert g[name].shape == (1, 2) and g[f"{name}_mean"].shape == (1,)
            assert np.all((g[name] >= 0) & (g[name] <= 1))
            assert g[f"{name}_mean"][0] == pytest.approx(np.mean(g[name][0]))
            # standard error over the 2 teachers (both kept: finite mmse below), std(ddof=1)/√2 written out
            t = np.asarray(g[name][0], float)
            sem = np.sqrt(np.sum((t - t.mean()) ** 2) / (t.size - 1) / t.size)
            assert g[f"{name}_sem"][0] == pytest.approx(sem, rel=1e-12, abs=1e-15)
        # 2000 test labels: errors are multiples of 1/2000; a student never does better than chance
        # by an impossible margin: the Bayes error stays above the noise floor E Φ(−|λ_c − θ|/√Δ) > 0.05
        assert np.all(g["classification_error"] > 0.05) and np.all(g["classification_error"] < 0.5)
        assert np.all(np.isfinite(g["mmse"]))


def test_gaussian_runs_keep_their_parameters(tmp_path):
    path = tmp_path / "g.h5"
    assert cli.main(TINY + ["--teachers", "1", "--init", "informed", "-o", str(path)]) == 0
    data = read_experiment(path)
    assert "channel" not in data["parameters"] and data["parameters"]["delta"] == 0.1
    assert data["output_channel"] == {"name": "gaussian", "delta": 0.1}
    assert "classification_error" not in data["groups"][("hmc", "informed")]


@pytest.mark.parametrize("args, message", [
    (["--channel", "sign"], "step likelihood"),
    (["--channel", "sign", "--sampler", "nuts"], "step likelihood"),
    (["--channel", "probit", "--delta", "0"], "delta > 0"),
    (["--channel", "probit", "--sampler", "adam"], "hmc or nuts"),
    (["--channel", "logistic", "--delta", "0.1"], "--delta"),
    (["--channel", "probit", "--temperature", "2"], "--temperature"),
    (["--channel", "logistic", "--channel-threshold", "1"], "--channel-threshold"),
    (["--channel", "logistic", "--temperature", "-1"], "--temperature"),
    (["--channel", "softmax"], "unknown output channel"),
    (["--channel", "probit", "--layers", "2", "--gamma", "0.5"], "mu0"),
])
def test_channel_refusals_give_one_line_and_exit_2(args, message, tmp_path, capsys):
    status = cli.main(TINY + args + ["-o", str(tmp_path / "x.h5")])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x.h5").exists()


def test_help_names_the_channel_options_and_the_sign_refusal(capsys):
    assert cli.main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for text in ("--channel", "--temperature", "--channel-threshold", "sign is refused"):
        assert text in out


# --------------------------------------------------------------------------------------
# against the theory (slow)
# --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_probit_hmc_agrees_with_the_theory_in_the_universal_phase(tmp_path):
    """ReLU γ = 0.5, probit Δ = 0.1, α = 1 (universal phase, α_sp ≈ 1.62): d = 24, 3 teachers, informed and
    uninformed: the Bayes and Gibbs classification errors within 0.02 of the theory (Gibbs:
    arccos(K*/√(K_d(K_d + Δ)))/π, docs/theory.md §10.1), the Nishimori disagreements within 0.02 of each
    other and of arccos(K*/K_d)/π (measured at seed 2: differences ≤ 0.004; ~15 CPU-seconds)."""
    from replica.branches import sweep
    from replica.models.shallow import ShallowModel

    path = tmp_path / "probit.h5"
    args = ["--activation", "relu", "--gamma", "0.5", "--channel", "probit", "--delta", "0.1", "--alpha", "1",
            "--dim", "24", "--teachers", "3", "--steps", "1500", "--kept", "50", "--n-test", "10000", "--seed", "2",
            "--quiet", "-o", str(path)]
    assert cli.main(args) == 0
    model = ShallowModel("relu", 0.5, output_channel=ProbitChannel(0.1))
    theory = sweep(model, np.array([1.0]), progress=False).equilibrium
    expected = float(theory["classification_error"][0])
    k_d, k_star = model.K_d, model.K_d - float(theory["mmse"][0])
    gibbs = math.acos(k_star / math.sqrt(k_d * (k_d + 0.1))) / math.pi
    disagreement = math.acos(k_star / k_d) / math.pi
    for init in ("informed", "uninformed"):
        g = read_experiment(path)["groups"][("hmc", init)]
        assert g["classification_error_mean"][0] == pytest.approx(expected, abs=0.02)
        assert g["gibbs_classification_error_mean"][0] == pytest.approx(gibbs, abs=0.02)
        assert g["nishimori_teacher_disagreement_mean"][0] == pytest.approx(disagreement, abs=0.02)
        assert g["nishimori_teacher_disagreement_mean"][0] == pytest.approx(
            g["nishimori_replica_disagreement_mean"][0], abs=0.02)
