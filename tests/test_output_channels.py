"""Output channels (priors/output_channels.py): closed forms, the generic quadrature, identities,
Monte Carlo and the classical perceptron constants."""

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.special import log_ndtr

from priors.output_channels import (BinaryChannel, GaussianChannel, LogisticChannel, ProbitChannel, RealChannel,
                                    get_output_channel, glm_state_evolution, sign_channel)

K_D = 1.3
MMSES = (0.0, 0.02, 0.3, 1.0, K_D)


def test_gaussian_channel_through_the_generic_real_valued_quadrature():
    # the real-valued code path with a Gaussian likelihood reproduces the closed forms
    delta = 0.25
    closed = GaussianChannel(delta)
    generic = RealChannel(lambda y, lam: -0.5 * (y - lam) ** 2 / delta - 0.5 * math.log(2 * math.pi * delta),
                          scale=math.sqrt(delta))
    for m in MMSES:
        assert generic.energetic(K_D, m) == pytest.approx(closed.energetic(K_D, m), abs=1e-7)
        assert generic.effective_variance(K_D, m) == pytest.approx(closed.effective_variance(K_D, m), rel=1e-7)
    assert closed.effective_variance(K_D, 0.3) == delta + 0.3
    assert closed.energetic(K_D, 0.3) == -0.5 * math.log(2 * math.pi * math.e * (delta + 0.3))


@pytest.mark.parametrize("delta, threshold", [(0.1, 0.0), (0.5, 0.4)])
def test_probit_closed_form_equals_the_generic_binary_quadrature(delta, threshold):
    probit = ProbitChannel(delta, threshold)
    generic = BinaryChannel(lambda lam: log_ndtr((lam - threshold) / math.sqrt(delta)), width=math.sqrt(delta))
    generic.threshold = threshold
    for m in MMSES:
        assert generic.energetic(K_D, m) == pytest.approx(probit.energetic(K_D, m), abs=1e-9)
        assert generic.effective_variance(K_D, m) == pytest.approx(probit.effective_variance(K_D, m), rel=1e-8)
        assert generic.classification_error(K_D, m) == pytest.approx(probit.classification_error(K_D, m), abs=1e-8)


@pytest.mark.parametrize("channel", [ProbitChannel(0.1), ProbitChannel(0.3, 0.5), sign_channel(), LogisticChannel(0.4),
                                     GaussianChannel(0.2),
                                     RealChannel(lambda y, lam: -(y - lam) / 0.3 - 2 * np.logaddexp(0.0, -(y - lam) / 0.3)
                                                 - math.log(0.3), scale=0.3 * math.pi / math.sqrt(3))],
                         ids=["probit", "probit-threshold", "sign", "logistic", "gaussian", "logistic-noise"])
def test_derivative_of_the_energetic_term_gives_the_conjugate_scale(channel):
    # 2 ∂Ψ/∂K* = E[Z g²] = 1/D (the Nishimori identity of the channel), by central differences in K*
    h = 1e-5
    for m in (0.05, 0.4, 1.0):
        dpsi = (channel.energetic(K_D, m - h) - channel.energetic(K_D, m + h)) / (2 * h)  # ∂/∂K* = −∂/∂mmse
        assert 2 * dpsi * channel.effective_variance(K_D, m) == pytest.approx(1.0, abs=1e-6)


def test_classification_errors_have_their_closed_forms():
    # centred probit: P(sign ω ≠ y) = arccos(√(K*/(K_d + Δ)))/π and P(sign ω ≠ sign λ⁰) = arccos(√(K*/K_d))/π
    delta = 0.2
    ch = ProbitChannel(delta)
    for m in MMSES[1:-1]:
        ks = K_D - m
        assert ch.classification_error(K_D, m) == pytest.approx(math.acos(math.sqrt(ks / (K_D + delta))) / math.pi,
                                                                abs=1e-10)
        assert ch.sign_disagreement(K_D, m) == pytest.approx(math.acos(math.sqrt(ks / K_D)) / math.pi, abs=1e-10)
    assert sign_channel().classification_error(K_D, 0.0) == 0.0
    assert ch.classification_error(K_D, K_D) == pytest.approx(0.5, abs=1e-12)  # nothing learned: a coin


def test_classification_error_of_a_shifted_probit_by_monte_carlo():
    # (λ⁰, ω) jointly Gaussian (Var λ⁰ = K_d, Cov = Var ω = K*), labels from the channel, the Bayes decision
    # argmax_y Z(y; ω, V): the empirical error matches the quadrature within 4 standard errors
    ch = ProbitChannel(0.3, threshold=0.5)
    m = 0.4
    rng = np.random.default_rng(0)
    n = 400_000
    omega = math.sqrt(K_D - m) * rng.standard_normal(n)
    lam0 = omega + math.sqrt(m) * rng.standard_normal(n)
    y = ch.sample(lam0, rng)
    y_hat = np.where(ch._z_plus(omega, m) >= 0.5, 1.0, -1.0)
    wrong = np.mean(y_hat != y)
    assert wrong == pytest.approx(ch.classification_error(K_D, m), abs=4 * math.sqrt(wrong * (1 - wrong) / n))
    noiseless = np.mean(y_hat != np.where(lam0 > 0.5, 1.0, -1.0))
    assert noiseless == pytest.approx(ch.sign_disagreement(K_D, m), abs=4 * math.sqrt(noiseless / n))


@pytest.mark.parametrize("channel", [ProbitChannel(0.2, 0.3), LogisticChannel(0.5)], ids=["probit", "logistic"])
def test_sampled_labels_follow_the_likelihood(channel):
    rng = np.random.default_rng(1)
    lam = np.full(200_000, 0.4)
    y = channel.sample(lam, rng)
    p = math.exp(float(channel.log_likelihood(1.0, 0.4)))
    assert np.mean(y == 1.0) == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / lam.size))
    assert set(np.unique(y)) == {-1.0, 1.0}


def test_probit_with_large_noise_is_a_gaussian_channel_of_noise_pi_delta_over_2():
    # small-signal limit: Φ(u) ≈ ½ + φ(0)u, so E[Z g²] → 2/(π(Δ + V)): D → (π/2)(Δ + mmse), corrections
    # of relative order K*/(Δ + V)
    for delta in (10.0, 100.0, 1000.0):
        ch = ProbitChannel(delta)
        for m in (0.1, 1.0):
            ratio = ch.effective_variance(K_D, m) / (0.5 * math.pi * (delta + m))
            assert abs(ratio - 1.0) < 2.0 * (K_D - m) / (delta + m)


def test_glm_state_evolution_gives_the_classical_perceptron_constants():
    # noiseless sign perceptron, Gaussian prior: Bayes error ~ 0.442/α, Gibbs error ~ 0.625/α, ratio → √2
    # (data/reference/classic_perceptron: Opper & Haussler 1991; Engel & Van den Broeck 2001)
    from replica.workflow.reference import read_csv

    ref = read_csv(Path(__file__).resolve().parents[1] / "data" / "reference" / "classic_perceptron" /
                   "sign_perceptron_asymptotics.csv").columns
    alpha = 2000.0
    q = glm_state_evolution(sign_channel(), alpha)
    bayes, gibbs = math.acos(math.sqrt(q)) / math.pi, math.acos(q) / math.pi
    assert alpha * bayes == pytest.approx(float(ref["bayes"][0]), rel=2e-3)
    assert alpha * gibbs == pytest.approx(float(ref["gibbs"][0]), rel=2e-3)
    assert gibbs / bayes == pytest.approx(float(ref["ratio"][0]), rel=1e-3)
    # more noise, less learned
    assert glm_state_evolution(ProbitChannel(0.5), 5.0) < glm_state_evolution(ProbitChannel(0.1), 5.0)


def test_channel_registry_and_bad_input():
    assert get_output_channel("probit", delta=0.3) == ProbitChannel(0.3)
    assert get_output_channel("sign").delta == 0.0 and get_output_channel("sign").name == "sign"
    assert get_output_channel("logistic", temperature=2.0).parameters() == {"name": "logistic", "temperature": 2.0}
    with pytest.raises(ValueError, match="unknown output channel"):
        get_output_channel("poisson")
    with pytest.raises(ValueError, match="delta"):
        ProbitChannel(-1.0)
    with pytest.raises(ValueError, match="temperature"):
        LogisticChannel(0.0)
    with pytest.raises(ValueError, match="mmse"):
        ProbitChannel(0.1).energetic(1.0, 1.5)
    with pytest.raises(ValueError, match="labels"):
        GaussianChannel(0.1).classification_error(1.0, 0.5)


def test_channel_options_table_is_what_the_api_accepts():
    """CHANNEL_OPTIONS (used by the command lines, the files and the experiments) against get_output_channel itself:
    a keyword is listed for a channel exactly when the channel accepts a non-default value of it."""
    from priors.output_channels import CHANNEL_OPTIONS, OUTPUT_CHANNELS, channel_keywords, get_output_channel

    values = {"delta": 0.2, "temperature": 0.5, "threshold": 0.3}
    for name in OUTPUT_CHANNELS:
        for key, value in values.items():
            try:
                get_output_channel(name, **{key: value})
                accepted = True
            except ValueError:
                accepted = False
            assert accepted == (key in CHANNEL_OPTIONS[name]), (name, key)
        kept = channel_keywords(name, **values)
        assert set(kept) == set(CHANNEL_OPTIONS[name])
        get_output_channel(name, **kept)          # what is kept is accepted
    with pytest.raises(ValueError):
        channel_keywords("cauchy")
