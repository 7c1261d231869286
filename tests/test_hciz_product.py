"""Products of p ≥ 3 Gaussian factors in hciz.rectangular (docs/deep_linear.md §5).

The law of ``S Sᵀ`` is the free multiplicative convolution of the factors' Marchenko–Pastur
laws (S-transform ``Π_i 1/(1 + ψ M/N_i)``); the observation is its rectangular free
convolution with the noise. Checks: exact moments (independent of the curve), the limit of
an infinite inner dimension (→ the two-factor channel), the equivalent MMSE forms, the
small- and large-SNR coefficients, and sampled matrices.
"""

import math

import numpy as np
import pytest
from scipy import integrate

from hciz import rectangular as rect
from hciz.rectangular import RectangularChannel, rectangular_channel

# (R1 = P/M, inner ratios N_i/M): repeated ratios (W₃:₁ at γ = 0.5), distinct ones
# (W₃:₁ at γ = (0.7, 1.3, 0.9)), a rank-deficient four-factor product
PRODUCT_CASES = [(2.0, (1.0, 1.0)), (1 / 0.9, (0.7 / 0.9, 1.3 / 0.9)), (3.0, (0.3, 0.8, 2.0))]
DELTAS = [1e-5, 0.05, 0.3, 3.0, 100.0]


def kw(case):
    return dict(aspect_ratio_p=case[0], aspect_ratio_n=case[1])


def sample(m, r1, inner, delta, rng):
    """(S, Y) for S = U_1 ⋯ U_p/√(N_1⋯N_{p−1} √(MP)), Y = S + √Δ Z/(MP)^¼."""
    dims = [m] + [int(round(n * m)) for n in inner] + [int(round(r1 * m))]
    s = rng.standard_normal((dims[0], dims[1]))
    for k in range(1, len(dims) - 1):
        s = s @ rng.standard_normal((dims[k], dims[k + 1])) / math.sqrt(dims[k])
    s /= (dims[0] * dims[-1]) ** 0.25
    return s, s + math.sqrt(delta) * rng.standard_normal(s.shape) / (dims[0] * dims[-1]) ** 0.25


@pytest.mark.parametrize("case", PRODUCT_CASES)
@pytest.mark.parametrize("delta", DELTAS)
def test_moments_of_the_observation(case, delta):
    """∫ρ = 1, ∫x² = √R1 (1 + Δ) and, by Wick's theorem on Y = S + noise with
    ∫t² dX = 1 + 1/R1 + Σ_i M/N_i for the normalized Gram X of the product (free
    multiplicative convolution of Marchenko–Pastur laws),
    ∫x⁴ dμ_Y = (R1 + 1)(1 + Δ)² + R1 Σ_i M/N_i."""
    r1, inner = case
    curve = rect._Curve(r1, inner, delta)
    x, w, rho = curve.quadrature()[:3]
    fourth = (r1 + 1) * (1 + delta) ** 2 + r1 * sum(1 / n for n in inner)
    assert 2 * np.sum(w * rho) == pytest.approx(1.0, abs=1e-10)
    assert 2 * np.sum(w * rho * x**2) == pytest.approx(math.sqrt(r1) * (1 + delta), rel=1e-10)
    assert 2 * np.sum(w * rho * x**4) == pytest.approx(fourth, rel=1e-10)


@pytest.mark.parametrize("case", PRODUCT_CASES[:2])
def test_density_by_independent_quadrature(case):
    """scipy quad of the public density on the public support: mass 1, fourth moment."""
    r1, inner = case
    delta = 0.3
    mass = fourth = 0.0
    for lo, hi in rect.support(delta, **kw(case)):
        mass += 2 * integrate.quad(lambda t: rect.density(t, delta, **kw(case)), lo, hi, limit=200)[0]
        fourth += 2 * integrate.quad(lambda t: t**4 * rect.density(t, delta, **kw(case)), lo, hi,
                                     limit=200)[0]
    assert mass == pytest.approx(1.0, abs=1e-8)
    assert fourth == pytest.approx((r1 + 1) * (1 + delta) ** 2 + r1 * sum(1 / n for n in inner), rel=1e-8)


# the equivalent forms of the MMSE (Tweedie, orthogonality, closed form, E_ν[1/t]) are tested
# for these products in tests/test_hciz_rectangular.py::test_mmse_equivalent_forms


@pytest.mark.parametrize("delta", [0.01, 0.3, 3.0])
def test_infinite_inner_dimension_gives_two_factors(delta):
    """A factor with N ≫ M is an isometry (U Uᵀ/N → I): the three-factor channel tends to
    the two-factor one, with a gap O(M/N)."""
    for r1, r2 in [(2.0, 0.2), (5.0, 2.0), (2.0, 1.0)]:
        two = rect.mmse_noise(delta, aspect_ratio_p=r1, aspect_ratio_n=r2)
        gaps = [abs(rect.mmse_noise(delta, aspect_ratio_p=r1, aspect_ratio_n=(r2, big)) - two)
                for big in (1e3, 1e5)]
        assert gaps[1] < 2e-5 * two and gaps[1] < gaps[0] / 30


def test_order_of_the_factors_is_irrelevant():
    a = rect.mmse_noise(0.2, aspect_ratio_p=3.0, aspect_ratio_n=(2.0, 0.3, 0.8))
    assert a == rect.mmse_noise(0.2, aspect_ratio_p=3.0, aspect_ratio_n=[0.8, 2.0, 0.3])
    assert rectangular_channel(2.0, [1.0, 1.0]) is rectangular_channel(2.0, (1.0, 1.0))


@pytest.mark.parametrize("case", PRODUCT_CASES)
def test_small_snr_cubic_coefficient(case):
    """overlap = λ − λ² + (1 + R1 (Σ_i M/N_i)²) λ³ + O(λ⁴) (squared fourth cumulants of the
    entries); Richardson extrapolation of the direct overlap at λ = 2e-4, 4e-4."""
    ch = RectangularChannel(*case, use_disk_cache=False)
    c3 = [(ch.direct_overlap(x) - x + x * x) / x**3 for x in (2e-4, 4e-4)]
    assert 2 * c3[0] - c3[1] == pytest.approx(rect.low_snr_cubic(*case), rel=2e-3)
    assert ch.low_snr_cubic == rect.low_snr_cubic(*case)


@pytest.mark.parametrize("case", PRODUCT_CASES[1:])
def test_large_snr_rank_coefficient(case):
    """mmse/Δ → c₁ = r(1 + R1 − r)/R1, r = min(1, min N_i/M) (rank of the product); with
    distinct ratios the correction is analytic (O(Δ)). Repeated square factors (case 0)
    converge like Δ^{1/3} (the prior density diverges at 0), see docs/deep_linear.md §5."""
    c1 = rect.high_snr_coefficient(*case)
    assert rect.mmse_noise(1e-7, **kw(case)) / 1e-7 == pytest.approx(c1, rel=2e-6)


@pytest.mark.parametrize("case", PRODUCT_CASES[:2])
def test_denoiser_on_sampled_products(case):
    """Empirical MSE of the optimal RIE (public ``denoise``) on sampled products, M = 300,
    2 samples: within 1.5e-2 of the channel's MMSE (finite-size error ~3e-3 at M = 400
    from scripts/experiments/product_channel_check.py); the two-factor channel with the
    smallest inner width (the former stand-in) is off by > 4%."""
    r1, inner = case
    delta = 0.5
    rng = np.random.default_rng(11)
    errors = []
    for _ in range(2):
        s, y = sample(300, r1, inner, delta, rng)
        est = rect.denoise(y, delta, aspect_ratio_n=inner)
        errors.append(np.sum((s - est) ** 2) / math.sqrt(s.size))
    theory = rect.mmse_noise(delta, **kw(case))
    stand_in = rect.mmse_noise(delta, aspect_ratio_p=r1, aspect_ratio_n=min(inner))
    assert np.mean(errors) == pytest.approx(theory, rel=1.5e-2)
    assert abs(stand_in / theory - 1) > 0.04


def test_table_of_the_three_factor_channel():
    """Tables (shipped for W₃:₁ at γ = 0.5) vs direct evaluation; I-MMSE 2ι' = mmse."""
    ch = rectangular_channel(2.0, (1.0, 1.0))
    lam = np.array([3e-6, 0.01, 0.4, 1.0, 2.5, 40.0, 3e4])
    for x, ov, mm in zip(lam, ch.overlap(lam), ch.mmse(lam)):
        if x <= 1:
            assert ov == pytest.approx(ch.direct_overlap(x), abs=1e-12 + 1e-9 * ov)
        else:
            assert mm == pytest.approx(ch.direct_mmse_noise(1 / x), rel=1e-9)
    h = 1e-4 * lam
    d_iota = (ch.mutual_information(lam + h) - ch.mutual_information(lam - h)) / (2 * h)
    np.testing.assert_allclose(2 * d_iota, ch.mmse(lam), rtol=1e-6)
    for m in (0.1, 0.5, 0.9):
        assert ch.overlap(ch.overlap_inverse(m)) == pytest.approx(m, rel=1e-12)


def test_bad_inner_ratios():
    with pytest.raises(ValueError, match="aspect_ratio_n"):
        rect.mmse_noise(0.1, aspect_ratio_p=2.0, aspect_ratio_n=(1.0, -1.0))
    with pytest.raises(ValueError, match="aspect_ratio_n"):
        RectangularChannel(2.0, ())
    with pytest.raises(ValueError, match="aspect_ratio_n"):
        RectangularChannel(2.0, (1.0, float("nan")))


@pytest.mark.slow
@pytest.mark.parametrize("case", [(2.0, 0.2), (5.0, 2.0)])
def test_two_factor_tables_rebuilt_by_the_general_curve(case):
    """p = 2 through the general p-factor curve reproduces the shipped tables (built by the
    former two-factor quartic code): 1e-13 absolute on the overlap, 1e-9 relative on the
    MMSE (measured: ≤ 4e-10, at λ ≥ 1e7 where mmse ~ 1e-8, i.e. 2e-17 absolute; the direct
    evaluations of the two codes differ by ≤ 5e-11 relative)."""
    fresh = RectangularChannel(*case, use_disk_cache=False)
    stored = RectangularChannel(*case)
    assert stored._load() is not None  # the shipped file
    lam = np.geomspace(1e-7, 1e9, 200)
    np.testing.assert_allclose(fresh.overlap(lam), stored.overlap(lam), rtol=0, atol=1e-13)
    np.testing.assert_allclose(fresh.mmse(lam), stored.mmse(lam), rtol=1e-9)
