"""Tests of replica/activations.py (docs/theory.md §2 and §6.1)."""

import json
import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replica.activations import ACTIVATIONS, get_activation
from replica import activations as act_module

REFERENCE_FILE = (pathlib.Path(__file__).resolve().parents[1]
                  / "data" / "activation_reference.json")   # scripts/make_activation_reference.py
SMOOTH = ["elu", "tanh", "tanh2", "sigmoid", "softplus"]          # tabulated kernels
ALL = list(ACTIVATIONS) + ["hermite:2=1.4142,3=1"]


def series_g(act, q, lmax=60):
    """Truncated Hermite series sum_{3<=l<=lmax} mu_l^2 q^l / l! (fine for |q| <= 1/2)."""
    return sum(act.hermite(ell) ** 2 * q ** ell / math.factorial(ell)
               for ell in range(3, lmax + 1))


# --- ReLU closed forms (docs/theory.md §2) ----------------------------------------------------------
def test_relu_coefficients_and_g1():
    relu = get_activation("relu")
    assert abs(relu.mu0 - 1 / math.sqrt(2 * math.pi)) < 1e-13
    assert abs(relu.mu1 - 0.5) < 1e-13
    assert abs(relu.mu2 - 1 / math.sqrt(2 * math.pi)) < 1e-13
    assert abs(relu.hermite(3)) < 1e-13
    # mu_l = phi(0) He_{l-2}(0) for l >= 2: mu_4 = -phi(0), mu_6 = 3 phi(0)
    assert abs(relu.hermite(4) + 1 / math.sqrt(2 * math.pi)) < 1e-13
    assert abs(relu.hermite(6) - 3 / math.sqrt(2 * math.pi)) < 1e-12
    assert abs(relu.nu - 0.5) < 1e-13
    assert abs(relu.g1 - (1 - 3 / math.pi) / 4) < 1e-13
    assert abs(float(relu.g(1.0)) - (1 - 3 / math.pi) / 4) < 1e-14
    q = np.array([-1.0, -0.3, 0.0, 0.7, 1.0])
    expected = (-1 / (2 * math.pi) - q ** 2 / (4 * math.pi)
                + (np.sqrt(1 - q ** 2) + q * np.arcsin(q)) / (2 * math.pi))
    np.testing.assert_allclose(relu.g(q), expected, atol=1e-15)


# --- Hermite coefficients and kernels against mpmath references ---------------------------------
def _reference():
    return json.loads(REFERENCE_FILE.read_text())


@pytest.mark.parametrize("name", ["elu", "tanh", "tanh2", "erf", "sigmoid", "softplus"])
def test_hermite_coefficients_against_mpmath(name):
    REFERENCE = _reference()
    act = get_activation(name)
    ref = [float(v) for v in REFERENCE["hermite"][name]]
    got = [act.hermite(ell) for ell in range(len(ref))]
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-12)
    assert abs(act.nu - float(REFERENCE["nu"][name])) < 1e-12


@pytest.mark.parametrize("name", ["elu", "tanh2", "softplus"])
def test_dual_kernel_against_mpmath(name):
    REFERENCE = _reference()
    act = get_activation(name)
    for q, value in REFERENCE["dual_kernel"][name].items():
        assert abs(float(act.dual_kernel(float(q))) - float(value)) < 1e-11, q


# --- g: exact kernel minus three terms ----------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
def test_g_matches_hermite_series_for_small_q(name):
    act = get_activation(name)
    q = np.linspace(-0.5, 0.5, 21)
    np.testing.assert_allclose(act.g(q), series_g(act, q), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ALL)
def test_g_at_one_is_exact(name):
    act = get_activation(name)
    exact = act.nu - act.mu0 ** 2 - act.mu1 ** 2 - act.mu2 ** 2 / 2
    assert abs(act.g1 - exact) < 1e-15
    assert abs(float(act.g(1.0)) - exact) < 1e-12
    assert abs(float(act.dual_kernel(1.0)) - act.nu) < 1e-12


@pytest.mark.parametrize("name", ALL)
def test_g_prime_matches_finite_differences(name):
    act = get_activation(name)
    q = np.linspace(-0.95, 0.95, 39)
    h = 1e-5
    fd = (act.g(q + h) - act.g(q - h)) / (2 * h)
    np.testing.assert_allclose(act.g_prime(q), fd, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", SMOOTH)
def test_tabulated_kernels_match_direct_quadrature(name):
    """The piecewise-Chebyshev tables reproduce the direct 2-D quadrature to 1e-12."""
    func, der, _, _, inner, dinner = act_module._BUILTINS[name]
    act = get_activation(name)
    rng = np.random.default_rng(3)
    q = np.concatenate([rng.uniform(-1, 1, 12), 1 - 10.0 ** rng.uniform(-12, -1, 4),
                        -1 + 10.0 ** rng.uniform(-12, -1, 4), [-1.0, 0.0, 1.0]])
    direct = act_module._direct_kernel(func, inner, q)
    np.testing.assert_allclose(act.dual_kernel(q), direct, rtol=0, atol=1e-12)
    direct_d = act_module._direct_kernel(der, dinner, q)
    np.testing.assert_allclose(act.g_prime(q) + act.mu1 ** 2 + act.mu2 ** 2 * q, direct_d,
                               rtol=0, atol=1e-12)


def test_erf_closed_form_against_quadrature():
    """erf uses the arcsine kernel; check it against the generic direct quadrature."""
    from scipy import special
    q = np.array([-0.9, -0.2, 0.4, 0.99])
    direct = act_module._direct_kernel(special.erf, None, q)
    np.testing.assert_allclose(get_activation("erf").dual_kernel(q), direct, atol=1e-12)


@pytest.mark.parametrize("name,q", [("tanh", 0.6), ("elu", -0.4), ("relu", 0.8),
                                    ("sigmoid", 0.3), ("softplus", -0.9), ("tanh2", 0.95)])
def test_dual_kernel_against_monte_carlo(name, q):
    act = get_activation(name)
    rng = np.random.default_rng(12345)
    n = 400_000
    u = rng.standard_normal(n)
    w = q * u + math.sqrt(1 - q * q) * rng.standard_normal(n)
    prod = act(u) * act(w)
    se = prod.std() / math.sqrt(n)
    assert abs(prod.mean() - float(act.dual_kernel(q))) < 5 * se


def test_call_is_consistent_with_hermite_coefficients():
    z, w = np.polynomial.hermite_e.hermegauss(150)
    w = w / math.sqrt(2 * math.pi)
    he = np.polynomial.hermite_e
    for name in ["tanh", "sigmoid", "hermite:2=1.4142,3=1", "quadratic"]:
        act = get_activation(name)
        for ell in range(5):
            coef = np.zeros(ell + 1)
            coef[ell] = 1
            assert abs(np.dot(w, act(z) * he.hermeval(z, coef)) - act.hermite(ell)) < 1e-10


# --- docs/theory.md §6.1 and modifiers ---------------------------------------------------------------
def test_tanh2_reference_values():
    t = get_activation("tanh2")
    assert abs(t.mu1 - 0.72947753) < 5e-9
    assert abs(math.sqrt(t.nu - t.mu1 ** 2) - 0.32112889) < 5e-9
    assert abs(t.mu0) < 1e-15 and abs(t.mu2) < 1e-14


def test_tanh2_normalised_for_deep_networks():
    t = get_activation("tanh2")
    n = get_activation("tanh2", drop_hermite=(0, 1, 2), unit_variance=True)
    assert n.mu0 == n.mu1 == n.mu2 == 0.0
    assert abs(n.nu - 1) < 1e-14
    assert abs(float(n.g(1.0)) - 1) < 1e-11
    assert abs(n.g1 - 1) < 1e-14
    x = np.linspace(-3, 3, 13)
    expected = (np.tanh(2 * x) - t.mu1 * x) / math.sqrt(t.nu - t.mu1 ** 2)
    np.testing.assert_allclose(n(x), expected, atol=1e-12)
    q = np.linspace(-1, 1, 9)
    np.testing.assert_allclose(n.g(q), t.g(q) / (t.nu - t.mu1 ** 2), atol=1e-12)
    np.testing.assert_allclose(n.dual_kernel(q), n.g(q), atol=1e-12)
    np.testing.assert_allclose(n.g_prime(q), t.g_prime(q) / (t.nu - t.mu1 ** 2), atol=1e-12)
    assert abs(n.hermite(3) - t.hermite(3) / math.sqrt(t.nu - t.mu1 ** 2)) < 1e-12


def test_drop_hermite_on_relu():
    relu = get_activation("relu")
    mod = get_activation("relu", drop_hermite=[1, 4])
    q = np.linspace(-1, 1, 11)
    c4 = relu.hermite(4) ** 2 / 24
    np.testing.assert_allclose(mod.dual_kernel(q), relu.dual_kernel(q) - q / 4 - c4 * q ** 4,
                               atol=1e-14)
    np.testing.assert_allclose(mod.g(q), relu.g(q) - c4 * q ** 4, atol=1e-14)
    np.testing.assert_allclose(mod.g_prime(q), relu.g_prime(q) - 4 * c4 * q ** 3, atol=1e-14)
    assert mod.mu1 == 0.0 and mod.hermite(4) == 0.0 and mod.mu0 == relu.mu0
    assert abs(mod.nu - (relu.nu - 0.25 - c4)) < 1e-14
    # sigma_mod = relu - mu1 He1 - mu4 He4/24 pointwise
    x = np.linspace(-2, 2, 9)
    np.testing.assert_allclose(mod(x), np.maximum(x, 0) - x / 2
                               - relu.hermite(4) * (x ** 4 - 6 * x ** 2 + 3) / 24, atol=1e-13)


def test_unit_variance_alone():
    s = get_activation("sigmoid", unit_variance=True)
    assert abs(s.nu - 1) < 1e-14
    base = get_activation("sigmoid")
    assert abs(float(s.g(0.7)) - float(base.g(0.7)) / base.nu) < 1e-14


# --- polynomial activations --------------------------------------------------------------------
def test_hermite_combination():
    act = get_activation("hermite:2=1.4142,3=1")
    assert act.mu2 == 1.4142 and act.hermite(3) == 1.0 and act.mu0 == 0.0 == act.mu1
    q = np.linspace(-1, 1, 7)
    np.testing.assert_allclose(act.g(q), q ** 3 / 6, atol=1e-16)
    np.testing.assert_allclose(act.g_prime(q), q ** 2 / 2, atol=1e-16)
    np.testing.assert_allclose(act.dual_kernel(q), 1.4142 ** 2 * q ** 2 / 2 + q ** 3 / 6,
                               atol=1e-15)
    x = np.linspace(-2, 2, 5)
    np.testing.assert_allclose(act(x), 1.4142 * (x ** 2 - 1) / 2 + (x ** 3 - 3 * x) / 6,
                               atol=1e-14)


def test_quadratic():
    act = get_activation("quadratic")
    assert abs(act.mu0 - 1 / math.sqrt(2)) < 1e-15 and abs(act.mu2 - math.sqrt(2)) < 1e-15
    assert abs(act.nu - 1.5) < 1e-15
    np.testing.assert_allclose(act.g(np.linspace(-1, 1, 5)), 0.0, atol=1e-15)
    np.testing.assert_allclose(act(np.array([2.0])), [4 / math.sqrt(2)])


# --- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, match", [
    ("swish", "valid: relu, elu"),
    ("hermite:", "no terms"),
    ("hermite:2", "DEGREE=COEFF"),
    ("hermite:a=1", "DEGREE=COEFF"),
    ("hermite:2=x", "malformed"),
    ("hermite:2=nan", "not finite"),
    ("hermite:2=inf", "not finite"),
    ("hermite:2=1,2=3", "twice"),
    ("hermite:3=1e200", "infinite variance"),
])
def test_bad_specs(spec, match):
    with pytest.raises(ValueError, match=match):
        get_activation(spec)


def test_bad_modifiers_and_arguments():
    with pytest.raises(ValueError):
        get_activation("quadratic", drop_hermite=(0, 2), unit_variance=True)  # zero variance
    with pytest.raises(ValueError):
        get_activation("tanh", drop_hermite=("a",))
    with pytest.raises(ValueError):
        get_activation("tanh", drop_hermite=(-1,))
    with pytest.raises(ValueError):
        get_activation("relu").g(1.5)
    with pytest.raises(ValueError):
        get_activation("relu").g(np.nan)
    with pytest.raises(ValueError):
        get_activation("relu").hermite(-1)


def test_shapes():
    act = get_activation("tanh")
    q = np.full((2, 3), 0.25)
    for f in (act.g, act.g_prime, act.dual_kernel):
        assert f(q).shape == (2, 3) and f(q).dtype == np.float64
    assert np.shape(act.g(0.3)) == ()


# --- properties ---------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_property_g_nonnegative_increasing_on_unit_interval(name, a, b):
    act = get_activation(name)
    lo, hi = min(a, b), max(a, b)
    g_lo, g_hi = float(act.g(lo)), float(act.g(hi))
    assert g_lo >= -1e-14
    assert g_hi >= g_lo - 1e-13


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(ALL), st.floats(-1.0, 1.0))
def test_property_g_bounded_by_g1(name, q):
    act = get_activation(name)
    assert abs(float(act.g(q))) <= act.g1 + 1e-13
    assert abs(float(act.dual_kernel(q))) <= act.nu + 1e-13
