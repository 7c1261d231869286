"""Tests of the scalar channels (priors/weight_priors.py) and readout laws (docs/theory.md §3)."""

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import special
from hypothesis import given, settings
from hypothesis import strategies as st

from priors import (
    READOUT_LAWS,
    WEIGHT_PRIORS,
    GaussianPrior,
    ReadoutLaw,
    UniformPrior,
    discrete_readout_law,
    get_readout_law,
    get_weight_prior,
)

PRIOR_NAMES = sorted(WEIGHT_PRIORS)
R_GRID = np.array([0.0, 1e-4, 0.05, 0.3, 0.9, 1.0, 1.1, 2.0, 2.9, 3.1, 5.0, 8.9, 9.0, 9.1,
                   15.0, 26.0, 30.0, 60.0, 80.0, 85.0, 200.0])


@pytest.fixture(params=PRIOR_NAMES)
def prior(request):
    return get_weight_prior(request.param)


# --- identities ------------------------------------------------------------------------------
def test_i_mmse_free_entropy_derivative_is_half_overlap(prior):
    """psi'(r) = m(r)/2 by central finite differences (I-MMSE), across all table panels."""
    r = R_GRID[R_GRID > 1e-3]
    h = 1e-4 * np.maximum(r, 1.0)
    fd = (prior.free_entropy(r + h) - prior.free_entropy(r - h)) / (2 * h)
    np.testing.assert_allclose(fd, prior.overlap(r) / 2, rtol=0, atol=2e-8)


def test_free_entropy_and_overlap_vanish_at_zero(prior):
    assert abs(float(prior.free_entropy(0.0))) < 1e-13
    assert abs(float(prior.overlap(0.0))) < 1e-13
    # small r: m(r) = r - O(r^2) for unit-variance priors
    assert abs(float(prior.overlap(1e-6)) - 1e-6) < 1e-11


def test_overlap_derivative_matches_finite_differences(prior):
    r = R_GRID[R_GRID > 1e-3]
    h = 1e-4 * np.maximum(r, 1.0)
    fd = (prior.overlap(r + h) - prior.overlap(r - h)) / (2 * h)
    np.testing.assert_allclose(prior.overlap_derivative(r), fd, rtol=1e-6, atol=1e-10)


def test_overlap_is_increasing_and_mmse_consistent(prior):
    r = np.linspace(0, 100, 2001)
    m = prior.overlap(r)
    assert np.all(np.diff(prior.mmse(r)) < 0)          # strictly, with relative accuracy
    assert np.all(np.diff(m) >= 0)
    np.testing.assert_allclose(prior.mmse(r), 1 - m, atol=1e-15)
    assert np.all(prior.overlap_derivative(r) >= 0)


def test_inverse_roundtrip_up_to_one_minus_1e9(prior):
    m = np.array([0.0, 1e-8, 1e-3, 0.2, 0.5, 0.8, 0.99, 1 - 1e-6, 1 - 1e-8, 1 - 1e-9])
    r = prior.overlap_inverse(m)
    assert r.shape == m.shape and r[0] == 0.0
    np.testing.assert_allclose(prior.overlap(r), m, rtol=0, atol=2e-13)
    # relative accuracy in 1 - m (what matters near m = 1)
    np.testing.assert_allclose(prior.mmse(r), 1 - m, rtol=1e-10)
    r_back = prior.overlap_inverse(prior.overlap(np.array([0.5, 3.0, 20.0])))
    np.testing.assert_allclose(r_back, [0.5, 3.0, 20.0], rtol=1e-9)


def test_inverse_rejects_out_of_domain(prior):
    for bad in (-0.1, 1.0, 1.5, np.nan):
        with pytest.raises(ValueError):
            prior.overlap_inverse(bad)
    with pytest.raises(ValueError):
        prior.overlap(-1.0)


def test_shapes_and_dtype(prior):
    assert np.shape(prior.overlap(1.0)) == ()
    x = np.ones((2, 3), dtype=np.float32)
    for f in (prior.overlap, prior.free_entropy, prior.overlap_derivative, prior.mmse):
        out = f(x)
        assert out.shape == (2, 3) and out.dtype == np.float64
    assert prior.overlap_inverse(np.full((2, 2), 0.5)).shape == (2, 2)


@settings(max_examples=50, deadline=None)
@given(st.floats(min_value=0.0, max_value=1 - 1e-9), st.sampled_from(PRIOR_NAMES))
def test_property_inverse(m, name):
    prior = get_weight_prior(name)
    r = prior.overlap_inverse(m)
    assert r >= 0
    assert abs(float(prior.mmse(r)) - (1 - m)) <= 1e-10 * (1 - m) + 1e-15


# --- closed forms and high-precision references -------------------------------------------------
def test_gaussian_closed_forms():
    p = GaussianPrior()
    r = np.array([0.0, 0.5, 2.0, 1e6])
    np.testing.assert_allclose(p.overlap(r), r / (1 + r), rtol=1e-15)
    np.testing.assert_allclose(p.free_entropy(r), r / 2 - np.log1p(r) / 2, rtol=1e-15)
    np.testing.assert_allclose(p.overlap_derivative(r), 1 / (1 + r) ** 2, rtol=1e-15)
    np.testing.assert_allclose(p.overlap_inverse(r / (1 + r)), r, rtol=1e-9)


def _rademacher_reference(r):
    r = mp.mpf(r)
    s = mp.sqrt(r)
    pts = [-mp.inf, -s - 5, -s, -s + 5, mp.inf]
    mmse = mp.quad(lambda z: mp.sech(r + s * z) ** 2 * mp.npdf(z), pts)
    psi = mp.quad(lambda z: mp.log(mp.cosh(r + s * z)) * mp.npdf(z), pts) - r / 2
    return mmse, psi


def _uniform_reference(r):
    """mmse = E_Y Var(W|Y): the posterior is a truncated Gaussian (closed-form moments)."""
    r = mp.mpf(r)
    a = mp.sqrt(3)
    sr = mp.sqrt(r)

    def integrand(y):
        lo, hi = -a * sr - y, a * sr - y
        z = mp.ncdf(hi) - mp.ncdf(lo)
        dphi = mp.npdf(lo) - mp.npdf(hi)
        var = (1 + (lo * mp.npdf(lo) - hi * mp.npdf(hi)) / z - (dphi / z) ** 2) / r
        return z / (2 * a * sr) * var

    top = a * sr
    return 2 * mp.quad(integrand, [0, max(top - 3, 0), top, top + 3, top + 15])


@pytest.mark.parametrize("r", [0.3, 3.0, 40.0])
def test_rademacher_against_mpmath(r):
    mp.mp.dps = 20
    mmse, psi = _rademacher_reference(r)
    p = get_weight_prior("rademacher")
    assert abs(float(p.mmse(r)) - float(mmse)) < 1e-12
    assert abs(float(p.mmse(r)) / float(mmse) - 1) < 1e-10      # relative, for m near 1
    assert abs(float(p.free_entropy(r)) - float(psi)) < 1e-12
    assert abs(float(p.overlap(r)) - float(1 - mmse)) < 1e-12


@pytest.mark.parametrize("r", [0.3, 4.0, 20.0])
def test_uniform_against_mpmath(r):
    mp.mp.dps = 20
    mmse = _uniform_reference(r)
    p = get_weight_prior("uniform")
    assert abs(float(p.mmse(r)) / float(mmse) - 1) < 1e-10


def test_uniform_edge_constant():
    """The large-r constant C of UniformPrior equals its defining integral (mpmath)."""
    mp.mp.dps = 20

    def f(b):
        return (mp.ncdf(b) - b * mp.npdf(b) - mp.npdf(b) ** 2 / mp.ncdf(b)
                - (1 if b > 0 else 0))

    c = mp.quad(f, [-mp.inf, -10, -3, 0, 3, 10, mp.inf])
    assert abs(float(c) - UniformPrior.EDGE_CONSTANT) < 1e-14


def test_uniform_free_entropy_against_direct_formula():
    """psi = (r+1)/2 - ln(2 a sqrt(r)/sqrt(2 pi)) + E ln[Phi(a sqrt r - Y) - Phi(-a sqrt r - Y)]."""
    p = get_weight_prior("uniform")
    a = math.sqrt(3)
    z, wz = np.polynomial.hermite_e.hermegauss(120)
    wz = wz / math.sqrt(2 * math.pi)
    w, ww = np.polynomial.legendre.leggauss(200)
    w, ww = a * w, ww / 2
    from scipy.special import log_ndtr
    for r in (0.5, 4.0, 20.0):
        sr = math.sqrt(r)
        y = np.abs(sr * w[:, None] + z[None, :])     # the Phi difference is even in y
        hi, lo = a * sr - y, -a * sr - y
        log_diff = log_ndtr(hi) + np.log1p(-np.exp(log_ndtr(lo) - log_ndtr(hi)))
        e = ww @ log_diff @ wz
        psi = (r + 1) / 2 - math.log(2 * a * sr / math.sqrt(2 * math.pi)) + e
        assert abs(float(p.free_entropy(r)) - psi) < 1e-10


def test_registry():
    assert set(WEIGHT_PRIORS) == {"gaussian", "rademacher", "uniform"}
    assert get_weight_prior("Gaussian") is get_weight_prior("gaussian")
    with pytest.raises(ValueError, match="gaussian, rademacher, uniform"):
        get_weight_prior("laplace")


# --- readout laws ----------------------------------------------------------------------------
@pytest.mark.parametrize("spec", READOUT_LAWS)
def test_readout_laws_normalised(spec):
    law = get_readout_law(spec)
    assert isinstance(law, ReadoutLaw)
    assert abs(law.weights.sum() - 1) < 1e-14
    assert abs(np.dot(law.weights, law.values ** 2) - 1) < 1e-13
    assert np.all(law.weights > 0)
    assert law.values.ndim == law.weights.ndim == 1


def test_readout_law_atoms():
    np.testing.assert_array_equal(get_readout_law("ones").values, [1.0])
    assert get_readout_law("ones").exact
    r = get_readout_law("rademacher")
    np.testing.assert_allclose(sorted(r.values), [-1, 1])
    np.testing.assert_allclose(r.weights, [0.5, 0.5])
    f = get_readout_law("4point")
    np.testing.assert_allclose(sorted(f.values), np.array([-3, -1, 1, 3]) / math.sqrt(5),
                               rtol=1e-15)
    np.testing.assert_allclose(f.weights, 0.25)


def test_continuous_readout_laws():
    u = get_readout_law("uniform")
    assert not u.exact and u.values.size == 64 and not u.fixed_grid
    assert np.all(np.abs(u.values) <= math.sqrt(3))
    assert abs(np.dot(u.weights, u.values ** 4) - 9 / 5) < 1e-12       # E v^4 uniform (Gauss–Legendre)
    g = get_readout_law("gaussian", grid_size=20)
    assert not g.exact and g.values.size == 20 and g.fixed_grid
    # nodes are the Gaussian quantiles of the Gauss–Legendre nodes on (0, 1) (before E v² = 1)
    x, w = np.polynomial.legendre.leggauss(20)
    scale = math.sqrt(np.dot(w / 2, special.ndtri((x + 1) / 2) ** 2))
    np.testing.assert_allclose(g.values, special.ndtri((x + 1) / 2) / scale, rtol=1e-12)
    np.testing.assert_allclose(g.weights, w / 2, rtol=1e-12)


@pytest.mark.parametrize("n", [386, 1000, 5000])
def test_large_gaussian_grids_have_no_underflow(n):
    """Gauss–Hermite weights underflow beyond ~380 nodes; the quantile rule never does, and its
    outermost node stays where the law has mass (|v| = 14.9 carried weight 3e-49 at 64 nodes)."""
    g = get_readout_law("gaussian", grid_size=n)
    assert g.values.size == n and np.all(g.weights > 0.5 / n**2)
    assert np.max(np.abs(g.values)) < math.sqrt(2 * math.log(n * n)) + 0.5
    assert abs(np.dot(g.weights, g.values ** 4) - 3) < 10.0 / n     # converges to E v^4 = 3


def test_panel_rule_converges_with_breakpoints():
    """Composite rule with graded panels: exponential convergence for smooth integrands and
    for a square-root singularity placed at a breakpoint (independent value by scipy.quad)."""
    from scipy import integrate

    from priors import GaussianLaw, UniformLaw

    law = GaussianLaw()
    x, w = law.panel_rule([0.3, -0.3, 1.234], 16)
    assert abs(w.sum() - 1) < 1e-13 and abs(w @ x**2 - 1) < 1e-12 and abs(w @ x**4 - 3) < 1e-11

    def f(v):
        return np.sqrt(np.maximum(np.abs(v) - 1.234, 0.0)) * np.exp(-v * v / 2) / math.sqrt(2 * math.pi)

    exact = 2 * integrate.quad(f, 1.234, 12, epsabs=1e-15, epsrel=1e-13)[0]
    x, w = law.panel_rule([-1.234, 1.234], 16)
    assert abs(w @ (f(x) / law.pdf(x)) - exact) < 1e-12
    x, w = law.panel_rule([], 16)  # without the breakpoint: only algebraic accuracy
    assert abs(w @ (f(x) / law.pdf(x)) - exact) > 1e-9
    x, w = UniformLaw().panel_rule([0.5], 8)
    assert abs(w.sum() - 1) < 1e-14 and abs(w @ x**2 - 1) < 1e-14


def test_density_readout_law():
    """A triangular density on [0, 2] (not symmetric), rescaled to E v² = 1."""
    from priors import density_readout_law

    law = density_readout_law(lambda x: 2.0 - x, (0.0, 2.0), name="triangle", grid_size=400)
    # E x = 2/3, E x² = 2/3 for the density (2 − x)/2 on [0, 2]
    c = math.sqrt(2 / 3)
    assert abs(law.weights @ law.values**2 - 1) < 1e-14
    assert abs(law.weights @ law.values - (2 / 3) / c) < 1e-5
    x, w = law.law.panel_rule([], 16)
    assert abs(w @ x - (2 / 3) / c) < 1e-12 and abs(w @ x**2 - 1) < 1e-12
    assert abs(law.law.cdf(1.0 / c) - 0.75) < 1e-12
    with pytest.raises(ValueError, match="support"):
        density_readout_law(lambda x: 1.0 + 0 * x, (0.0, math.inf))
    with pytest.raises(ValueError, match=">= 0"):
        density_readout_law(lambda x: x - 1.0, (0.0, 2.0))


@pytest.mark.parametrize("size", [0, -3, 2.5, 10**7])
def test_bad_grid_sizes(size):
    with pytest.raises(ValueError, match="^grid_size"):
        get_readout_law("gaussian", grid_size=size)


def test_discrete_spec_parsing():
    law = get_readout_law("discrete:1=0.5,-2=0.5")
    np.testing.assert_allclose(law.values, np.array([1, -2]) / math.sqrt(2.5), rtol=1e-15)
    np.testing.assert_allclose(law.weights, [0.5, 0.5])
    law = get_readout_law("discrete: 3 = 2, -3 = 2, 1=4")        # unnormalised weights
    np.testing.assert_allclose(law.weights, [0.25, 0.25, 0.5])
    assert abs(np.dot(law.weights, law.values ** 2) - 1) < 1e-15
    law = get_readout_law("discrete:1=0.5,1=0.5")                 # atoms kept, not merged
    assert law.values.size == 2
    law = discrete_readout_law([2.0, 0.0], [1.0, 3.0], name="mine")
    assert law.name == "mine" and abs(law.values[0] - 2.0) < 1e-15


@pytest.mark.parametrize("spec, match", [
    ("triangle", "valid"),
    ("discrete:", "no atoms"),
    ("discrete:1=0.5,-1", "VALUE=WEIGHT"),
    ("discrete:1=abc", "malformed"),
    ("discrete:x=1", "malformed"),
    ("discrete:1=-0.5,2=1.5", "positive"),
    ("discrete:1=0,2=1", "positive"),
    ("discrete:0=1,0=2", "all zero"),
    ("discrete:1=nan", "finite"),
])
def test_bad_readout_specs(spec, match):
    with pytest.raises(ValueError, match=match):
        get_readout_law(spec)


def test_bad_readout_misc():
    with pytest.raises(ValueError):
        get_readout_law("uniform", grid_size=0)
    with pytest.raises(ValueError):
        get_readout_law(3)
    with pytest.raises(ValueError):
        ReadoutLaw("x", np.array([2.0]), np.array([1.0]), True)     # E v^2 != 1
    law = get_readout_law("rademacher")
    with pytest.raises(ValueError):
        law.values[0] = 3.0                                         # read-only


def test_readout_law_hashable_and_comparable():
    a, b = get_readout_law("4point"), get_readout_law("4point")
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != get_readout_law("rademacher")
    assert get_readout_law("gaussian", grid_size=10) != get_readout_law("gaussian")
    assert abs(a.expect(lambda v: v ** 2) - 1) < 1e-15
