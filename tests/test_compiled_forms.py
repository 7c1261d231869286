"""The compiled forms of priors, activations and the product channel agree with their Python methods.

The profile solvers evaluate the scalar channels inside numba kernels through compact forms
(``priors.compiled``, ``replica.activations.compiled_activation``, ``hciz.compiled``); these tests
compare every kernel with the methods it stands for, over the whole domain the solvers use.
"""

import numpy as np
import pytest

from hciz.compiled import compiled_rectangular, rect_gain, rect_inverse, rect_iota, rect_values
from priors import get_weight_prior
from priors.compiled import compiled_prior, spec_free_entropy, spec_overlap
from replica.activations import compiled_activation, get_activation, spec_g, spec_g_both, spec_g_prime
from replica.models.two_layer import channel_tilt_gain, product_channel


@pytest.mark.parametrize("name", ["gaussian", "rademacher", "uniform"])
def test_compiled_prior_matches_the_prior(name):
    prior = get_weight_prior(name)
    spec = compiled_prior(prior)
    r = np.concatenate([[0.0], np.geomspace(1e-9, 6e7, 2500), np.random.default_rng(0).uniform(0, 20, 300)])
    m = np.array([spec_overlap(spec, x) for x in r])
    psi = np.array([spec_free_entropy(spec, x) for x in r])
    np.testing.assert_allclose(m, prior.overlap(r), rtol=0, atol=1e-13)
    ref = prior.free_entropy(r)
    # ψ ≈ r/2 at large r: relative 1e-14 there, absolute 1e-13 where ψ is O(1)
    np.testing.assert_allclose(psi, ref, rtol=1e-14, atol=1e-13)


@pytest.mark.parametrize("spec,kw", [("tanh2", {"unit_variance": True}), ("relu", {}), ("erf", {}), ("elu", {}),
                                     ("tanh2", {"drop_hermite": (0, 1, 2), "unit_variance": True}),
                                     ("hermite:1=0.5,3=0.7", {}), ("quadratic", {})])
def test_compiled_activation_matches_g_and_its_derivative(spec, kw):
    act = get_activation(spec, **kw)
    c = compiled_activation(act)
    q = np.concatenate([np.linspace(-1.0, 1.0, 2001), [1e-6, -1e-6, 0.3, 0.3000001]])
    g = np.array([spec_g(c, x) for x in q])
    gp = np.array([spec_g_prime(c, x) for x in q])
    both = np.array([spec_g_both(c, x) for x in q])
    np.testing.assert_allclose(g, act.g(q), rtol=0, atol=5e-14)
    np.testing.assert_allclose(gp, act.g_prime(q), rtol=0, atol=1e-13)
    np.testing.assert_array_equal(both[:, 0], g)
    np.testing.assert_array_equal(both[:, 1], gp)


def test_compiled_activation_keeps_relative_accuracy_near_zero():
    # g(q) = Σ_{ℓ≥3} μ_ℓ² q^ℓ/ℓ!: at small q the series is exact, the leading term μ₃² q³/6
    act = get_activation("hermite:1=0.5,3=0.7,5=0.2")
    c = compiled_activation(act)
    for q in (1e-4, 1e-3, 1e-2):
        exact = 0.7**2 * q**3 / 6 + 0.2**2 * q**5 / 120
        assert spec_g(c, q) == pytest.approx(exact, rel=1e-14)
        assert spec_g_prime(c, q) == pytest.approx(0.7**2 * q**2 / 2 + 0.2**2 * q**4 / 24, rel=1e-14)


@pytest.mark.parametrize("gammas", [(0.5, 0.5), (0.7, 1.3)])
def test_compiled_rectangular_channel_matches_its_tables(gammas):
    ch = product_channel(gammas)
    spec = compiled_rectangular(ch)
    lam = np.concatenate([[0.0, 1e-9, 5e-7, 1e-6, 1.0], np.geomspace(1e-7, 1e10, 1500)])
    vals = np.array([rect_values(spec, x) for x in lam])
    np.testing.assert_allclose(vals[:, 0], ch.overlap(lam), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(vals[:, 1], ch.mmse(lam), rtol=1e-13)
    np.testing.assert_allclose(vals[:, 2], ch.overlap_derivative(lam), rtol=1e-13)
    np.testing.assert_allclose([rect_iota(spec, x) for x in lam], ch.mutual_information(lam), rtol=1e-14)
    m = np.concatenate([[0.0, 1e-9], np.linspace(1e-6, 1 - 1e-12, 1500)])
    inv = np.array([rect_inverse(spec, x) for x in m])
    np.testing.assert_allclose(inv, ch.overlap_inverse(m), rtol=1e-13)
    tau, r = np.geomspace(1e-4, 1e4, 200), np.geomspace(1e-3, 1e3, 200)
    x16, w16 = np.polynomial.legendre.leggauss(16)
    gain = np.array([rect_gain(spec, a, b, x16, w16) for a, b in zip(tau, r)])
    np.testing.assert_allclose(gain, channel_tilt_gain(ch, tau, r), rtol=1e-12)
    assert rect_gain(spec, 3.0, 0.0, x16, w16) == 0.0
