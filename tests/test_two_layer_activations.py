"""Two hidden layers with a different activation in each layer (docs/theory.md §6.2).

With the same activation in both layers ``a = (μ₁⁽¹⁾)²`` and ``b = (μ₁⁽²⁾)²`` coincide, and so
do ``g₁`` and ``g₂``: a formula that uses one layer's coefficient where the other's belongs
passes every same-activation test. Here the layers differ (``tanh2`` then ``erf``: a = 0.838,
b = 0.914), and the checks are identities or independent reductions:

* stationarity of ``f`` in every order parameter (finite differences);
* the envelope theorem along a branch, ``df/dα = ∂f/∂α = −(f + ½ ln(2πeD))/α``;
* a linear second layer (``σ₂ = He₁``, b = 1, g₂ ≡ 0) reduces to one hidden layer whose
  readout is the effective readout ``s``: ``Q̂₁(s) = (α/γ₁) s² g₁'(Q₁(s))/D``;
* a linear first layer (``σ₁ = He₁``, a = 1, g₁ ≡ 0) reduces to one hidden layer on the
  product ``W₂W₁/√k₁`` seen through the rectangular channel:
  ``Q₂:₁ = m_rect((α/γ₂) a g₂'(a Q₂:₁)/D)``;
* the universal branch ``mmse = b g₁(1) + g₂(1)`` with Hermite coefficients computed here by
  Gauss–Hermite quadrature of the activation functions themselves;
* the command line accepts one activation per layer (``--activation tanh2,erf``).
"""

import math

import numpy as np
import pytest
from finite_differences import gradient

from replica.activations import get_activation
from replica.workflow.cli import build_model, split_activations, sweep_main
from replica.models.two_layer import TwoLayerModel, product_channel

GAMMAS = (0.7, 1.3)
PAIR = ("tanh2", "erf")


@pytest.fixture(scope="module")
def model():
    return TwoLayerModel(PAIR, GAMMAS, 0.1, s_grid=4)


def _solve(model, alpha, start):
    res = model.solve_from(alpha, model.starts()[start][0], start=start)
    assert res.converged, (alpha, start, res.status)
    return res


def _params(res):
    st = res.info["state"]
    return {"q1": st.overlap_layer_1, "q1_hat": st.overlap_hat_layer_1, "q2": st.overlap_layer_2,
            "q2_hat": st.overlap_hat_layer_2, "q21": st.overlap_product_2_1, "r21": st.overlap_hat_product_2_1}


def _hermite_coefficients(act):
    """(μ₁², E σ²) of an activation by adaptive quadrature of σ itself against N(0, 1)."""
    from scipy import integrate

    def gauss(fun):
        return integrate.quad(lambda z: fun(z) * math.exp(-z * z / 2) / math.sqrt(2 * math.pi), -12, 12,
                              epsabs=1e-14, epsrel=1e-13, limit=200)[0]

    def sig(z):
        return float(act(np.array([z]))[0])

    return gauss(lambda z: z * sig(z)) ** 2, gauss(lambda z: sig(z) ** 2)


def test_the_two_layers_really_differ(model):
    assert abs(model.a - model.b) > 0.05
    assert abs(model.g1_one - model.g2_one) > 0.05


@pytest.mark.parametrize("alpha, start", [(6.0, "informed"), (3.0, "layer_1")])
def test_free_entropy_is_stationary_in_every_order_parameter(model, alpha, start):
    res = _solve(model, alpha, start)
    params = _params(res)
    assert np.max(params["q1"]) > 0.1  # a non-trivial point (layer 1 specialized)
    for name, value in params.items():
        grad = gradient(lambda z, name=name: model.free_entropy(alpha, **{**params, name: z}), value)
        # finite-difference noise ≤ 1e-9 with h = 1e-6; a wrong coefficient gives ≥ 1e-2
        assert np.max(np.abs(grad)) < 1e-8, (name, grad)


@pytest.mark.parametrize("pair, start", [(PAIR, "informed"), (("erf", "tanh2"), "informed"),
                                         (PAIR, "layer_1")])
def test_envelope_theorem_along_a_branch(pair, start):
    # f = −½ ln(2πeD) + E/α with E independent of α at fixed order parameters, so at a
    # stationary point df/dα = −E/α² = −(f + ½ ln(2πeD))/α; the total derivative is taken
    # by solving at α ± h (warm start). It fails unless the point is stationary in *every*
    # order parameter.
    m = TwoLayerModel(pair, GAMMAS, 0.1, s_grid=4)
    alpha, h = 6.0 if start == "informed" else 3.0, 1e-4
    res = _solve(m, alpha, start)
    st = res.info["state"]
    f = [m.solve_from(alpha + s * h, None, res.x, start=start).info["state"].free_entropy for s in (-1, 1)]
    total = (f[1] - f[0]) / (2 * h)
    explicit = -(st.free_entropy + 0.5 * math.log(2 * math.pi * math.e * (m.delta + st.mmse))) / alpha
    assert abs(explicit) > 1e-3
    assert total == pytest.approx(explicit, rel=1e-5, abs=1e-8)


def test_linear_second_layer_reduces_to_one_hidden_layer_on_s():
    # σ₂ = He₁ (b = 1, g₂ ≡ 0): λ = vᵀW₂σ₁(W₁x)/√(k₁k₂) is a one-hidden-layer network whose
    # readout is the effective readout s; W₂ and the product learn nothing beyond it
    m = TwoLayerModel(("tanh2", "hermite:1=1"), GAMMAS, 0.1, s_grid=4)
    act1 = get_activation("tanh2", unit_variance=True)
    assert m.b == pytest.approx(1.0, rel=1e-12) and m.a < 0.9
    alpha, g1 = 2.0, GAMMAS[0]
    res = _solve(m, alpha, "layer_1")
    st = res.info["state"]
    np.testing.assert_allclose(st.overlap_layer_2, 0.0, atol=1e-12)
    np.testing.assert_allclose(st.overlap_product_2_1, 0.0, atol=1e-12)
    # the reduced equations, iterated here: Q(s) = m_P(Q̂), m_P(x) = x/(1 + x) (Gaussian prior)
    s2, p = m.s_values**2, m.s_weights
    q = np.full_like(s2, 0.99)
    for _ in range(5000):
        D = m.delta + p @ (s2 * (act1.g(1.0) - act1.g(q)))
        q_hat = alpha / g1 * s2 * act1.g_prime(q) / D
        q_new = q_hat / (1 + q_hat)
        if np.max(np.abs(q_new - q)) < 1e-14:
            break
        q = 0.5 * q + 0.5 * q_new
    assert np.max(q) > 0.5
    np.testing.assert_allclose(st.overlap_layer_1, q, rtol=1e-8, atol=1e-10)
    assert st.mmse == pytest.approx(p @ (s2 * (act1.g(1.0) - act1.g(q))), rel=1e-8)


def test_linear_first_layer_reduces_to_the_product_channel():
    # σ₁ = He₁ (a = 1, g₁ ≡ 0): λ = vᵀσ₂(W₂W₁x/√k₁)/√k₂ only sees the product W₂:₁, learned
    # through the rectangular channel at SNR r₂:₁ = (α/γ₂) a v² g₂'(a Q₂:₁)/D (v ≡ 1)
    m = TwoLayerModel(("hermite:1=1", "tanh2"), GAMMAS, 0.1, s_grid=4)
    act2 = get_activation("tanh2", unit_variance=True)
    a, b = m.a, m.b
    assert a == pytest.approx(1.0, rel=1e-12) and b < 0.9
    alpha, g2 = 3.0, GAMMAS[1]
    res = _solve(m, alpha, "product")
    st = res.info["state"]
    np.testing.assert_allclose(st.overlap_layer_1, 0.0, atol=1e-12)
    np.testing.assert_allclose(st.overlap_layer_2, 0.0, atol=1e-12)
    channel = product_channel(GAMMAS)
    q = 0.99
    for _ in range(5000):
        D = m.delta + act2.g(1.0) - act2.g(a * q)
        r = alpha / g2 * a * act2.g_prime(a * q) / D
        q_new = float(channel.overlap(r))
        if abs(q_new - q) < 1e-14:
            break
        q = 0.5 * q + 0.5 * q_new
    assert q > 0.3
    assert st.overlap_product_2_1[0] == pytest.approx(q, rel=1e-8)
    assert st.overlap_hat_product_2_1[0] == pytest.approx(r, rel=1e-7)
    assert st.mmse == pytest.approx(act2.g(1.0) - act2.g(a * q), rel=1e-8)
    # f = −½ ln(2πeD) + (γ₂/α)[r(1 − Q)/2 − ι(r)] on this reduction (τ = 0)
    f = -0.5 * math.log(2 * math.pi * math.e * D) + g2 / alpha * (r * (1 - q) / 2
                                                                   - float(channel.mutual_information(r)))
    assert st.free_entropy == pytest.approx(f, rel=1e-8)


@pytest.mark.parametrize("pair", [PAIR, ("erf", "tanh2"), ("tanh2", "hermite:1=1,3=0.5")])
def test_universal_branch_learns_only_the_linear_parts(pair):
    m = TwoLayerModel(pair, GAMMAS, 0.1, s_grid=4)
    (a, nu1), (b, nu2) = (_hermite_coefficients(get_activation(name, unit_variance=True)) for name in pair)
    assert nu1 == pytest.approx(1.0, rel=1e-10)
    st = m.solve_universal(2.0).info["state"]
    assert st.mmse == pytest.approx(b * (nu1 - a) + (nu2 - b), rel=1e-9)
    # Q ≡ 0: every entropic and rectangular term vanishes
    assert st.free_entropy == pytest.approx(-0.5 * math.log(2 * math.pi * math.e * (0.1 + st.mmse)), rel=1e-12)


# --------------------------------------------------------------------------- command line
def test_split_activations():
    assert split_activations("tanh2,erf") == ["tanh2", "erf"]
    assert split_activations("tanh2") == ["tanh2"]
    assert split_activations("hermite:2=1.4142,3=1") == ["hermite:2=1.4142,3=1"]
    assert split_activations("hermite:1=1,3=0.5,erf") == ["hermite:1=1,3=0.5", "erf"]


def _options(**kw):
    base = dict(layers=2, gamma=list(GAMMAS), activation="tanh2,erf", drop_hermite=[], unit_variance=True,
                prior="gaussian", readout="ones", readout_grid=None, delta=0.1, s_grid=4)
    return {**base, **kw}


def test_build_model_takes_one_activation_per_layer(model):
    built = build_model(_options())
    assert isinstance(built, TwoLayerModel)
    assert (built.a, built.b, built.g1_one, built.g2_one) == pytest.approx(
        (model.a, model.b, model.g1_one, model.g2_one), rel=1e-14)
    same = build_model(_options(activation="tanh2"))
    assert same.a == pytest.approx(same.b, rel=1e-14)


@pytest.mark.parametrize("kw, message", [
    (dict(activation="tanh2,erf,tanh"), "one per layer"),
    (dict(layers=1, gamma=[0.5]), "one per layer"),
    (dict(activation="tanh2,erf", drop_hermite=[0, 1, 2]), "linear part"),
    (dict(activation="tanh2,relu"), "odd"),
    (dict(activation="tanh2,"), "empty"),
])
def test_build_model_rejects_bad_activation_lists(kw, message):
    from replica.workflow.cli import UsageError

    with pytest.raises(UsageError, match=message) as info:
        build_model(_options(**kw))
    assert str(info.value).startswith("--activation")


def test_command_line_and_config_file(tmp_path, capsys):
    from replica.workflow.io import read_sweep

    args = ["--layers", "2", "--gamma", "0.7,1.3", "--unit-variance", "--s-grid", "3", "--alpha", "2",
            "--branches", "universal", "--quiet"]
    out = tmp_path / "cli.h5"
    assert sweep_main(args + ["--activation", "tanh2,erf", "-o", str(out)]) == 0
    cfg = tmp_path / "run.toml"
    cfg.write_text('activation = ["tanh2", "erf"]\n')
    out_cfg = tmp_path / "cfg.h5"
    assert sweep_main(args + ["--config", str(cfg), "-o", str(out_cfg)]) == 0
    m = TwoLayerModel(PAIR, GAMMAS, 0.1, s_grid=3)
    for path in (out, out_cfg):
        data = read_sweep(path)
        assert data["parameters"]["activation"] == "tanh2,erf"
        assert data["branches"]["universal"]["mmse"][0] == pytest.approx(m.mmse_universal, rel=1e-12)
    capsys.readouterr()
    assert sweep_main(args + ["--activation", "tanh2,erf,erf", "-o", str(tmp_path / "bad.h5")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--activation" in err
    assert not (tmp_path / "bad.h5").exists()
