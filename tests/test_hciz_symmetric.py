"""Tests of the symmetric HCIZ channel (hciz.spectral, hciz.symmetric); docs/theory.md §4.1, §4.3."""
import logging
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hciz import (
    SymmetricChannel,
    density,
    generalized_wishart_inverse_stieltjes,
    stieltjes,
    support,
    symmetric_channel,
)

#: its channels are built once per process (hciz.symmetric_channel memoizes them; gauss about 8 s): one
#: process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_hciz_symmetric")


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    """Tables are built here, never read from a user's cache (cache tests set their own)."""
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", "off")


GAMMA = 0.5
ONES = (np.array([1.0]), np.array([1.0]))
RAD = (np.array([-1.0, 1.0]), np.array([0.5, 0.5]))
FOURPOINT = (np.array([-3.0, -1.0, 1.0, 3.0]) / np.sqrt(5.0), np.full(4, 0.25))


def unif_law(n):
    """Uniform on [-√3, √3] on n Gauss–Legendre nodes (E v² = 1 exactly)."""
    x, w = np.polynomial.legendre.leggauss(n)
    return np.sqrt(3.0) * x, w / 2.0


def gauss_law(n):
    """N(0, 1) on n Gauss–Hermite (probabilists') nodes (E v² = 1 exactly)."""
    x, w = np.polynomial.hermite_e.hermegauss(n)
    return x, w / w.sum()


LAWS = {"ones": ONES, "rad": RAD, "4point": FOURPOINT, "unif": unif_law(40),
        "gauss": gauss_law(60)}


def band_integral(f, bands, n=200):
    """∫ f over the union of bands with x = a + (b-a)(1-cos θ)/2, Gauss–Legendre in θ."""
    xg, wg = np.polynomial.legendre.leggauss(n)
    th = 0.5 * np.pi * (xg + 1)
    wt = 0.5 * np.pi * wg
    tot = 0.0
    for a, b in bands:
        x = a + 0.5 * (b - a) * (1 - np.cos(th))
        tot += np.sum(f(x) * 0.5 * (b - a) * np.sin(th) * wt)
    return tot


# ---------------------------------------------------------------- spectral law

@pytest.mark.parametrize("name,lam", [("ones", 2.0), ("rad", 3.0), ("4point", 1.0),
                                      ("gauss", 1.5)])
def test_density_mass_and_moments(name, lam):
    v, w = LAWS[name]
    kw = dict(lam=lam, gamma=GAMMA, values=v, weights=w)
    bands = support(**kw)
    rho = lambda x: density(x, **kw)
    mass = band_integral(rho, bands)
    mean = band_integral(lambda x: x * rho(x), bands)
    second = band_integral(lambda x: x * x * rho(x), bands)
    ev = float(np.dot(w, v))
    # free convolution: means add (√λ E S⁰ = √(γλ) E v), variances add (λ·1 + 1)
    # (test quadrature: 200 nodes per band; the Rademacher band has a dip at 0)
    assert abs(mass - 1) < 1e-7
    assert abs(mean - np.sqrt(GAMMA * lam) * ev) < 1e-7
    assert abs(second - mean ** 2 - (lam + 1.0)) < 1e-6


def test_semicircle_closed_form():
    """λ = 0: semicircle; z(m) = -1/m - m inverted in closed form."""
    v, w = ONES
    x = np.linspace(-1.99, 1.99, 41)
    rho = density(x, lam=0.0, gamma=GAMMA, values=v, weights=w)
    assert np.max(np.abs(rho - np.sqrt(4 - x ** 2) / (2 * np.pi))) < 1e-12
    z = np.array([0.3 + 0.5j, -2.5 + 0.01j, 4.0 + 2.0j])
    m = stieltjes(z, lam=0.0, gamma=GAMMA, values=v, weights=w)
    ref = (-z + np.sqrt(z - 2) * np.sqrt(z + 2)) / 2
    assert np.max(np.abs(m - ref)) < 1e-12


def test_semicircle_plus_semicircle_large_gamma():
    """γ → ∞ with E v = 0: S⁰ → semicircle (free CLT), so √λS⁰ + Z is a semicircle of
    variance 1 + λ and mmse_S = 1/(1+λ).  Corrections are O(κ₄/γ) (κ₄ = E v⁴ − 2 for
    the free fourth cumulant scale), so tolerance 3/γ."""
    gamma = 1e3
    ch = SymmetricChannel(gamma, *RAD)
    lam = np.array([0.5, 2.0, 8.0])
    assert np.max(np.abs(ch.direct_mmse(lam) - 1 / (1 + lam))) < 3 / gamma
    # inverse Stieltjes machinery: z(m) of the semicircle of variance 1 + λ is -1/m - (1+λ) m
    m = np.array([0.2 + 0.3j, -0.1 + 0.05j])
    z = generalized_wishart_inverse_stieltjes(m, lam=2.0, gamma=gamma, values=RAD[0],
                                              weights=RAD[1])
    assert np.max(np.abs(z - (-1 / m - 3.0 * m))) < 3 / gamma


@pytest.mark.parametrize("lam", [0.7, 5.0, 80.0])
def test_cubic_ones(lam):
    """v ≡ 1: c G³ + (a + c x) G² + (a x − a c + c) G + a = 0 (docs/theory.md §4.1)."""
    a, c = GAMMA, np.sqrt(GAMMA * lam)
    bands = support(lam=lam, gamma=GAMMA, values=ONES[0], weights=ONES[1])
    lo, hi = bands[0][0], bands[-1][1]
    x = np.linspace(lo - 0.5, hi + 0.5, 61)
    m = stieltjes(x, lam=lam, gamma=GAMMA, values=ONES[0], weights=ONES[1])
    for xi, mi in zip(x, m):
        r = np.roots([c, a + c * xi, a * xi - a * c + c, a])
        ref = r[np.argmax(r.imag)]
        assert abs(max(ref.imag, 0) - mi.imag) < 1e-9
        if mi.imag > 1e-6:
            assert abs(ref - mi) < 1e-9


@pytest.mark.parametrize("lam", [0.7, 6.0])
def test_quartic_rademacher(lam):
    """Rademacher v: −c²G⁴ − c²xG³ + (a² + ac² − c²)G² + a²xG + a² = 0 (reference code)."""
    a, c = GAMMA, np.sqrt(GAMMA * lam)
    bands = support(lam=lam, gamma=GAMMA, values=RAD[0], weights=RAD[1])
    x = np.linspace(bands[0][0] + 1e-3, bands[-1][1] - 1e-3, 41)
    m = stieltjes(x, lam=lam, gamma=GAMMA, values=RAD[0], weights=RAD[1])
    for xi, mi in zip(x, m):
        r = np.roots([-c * c, -c * c * xi, a * a + a * c * c - c * c, a * a * xi, a * a])
        assert abs(max(r.imag.max(), 0) - mi.imag) < 1e-9


def test_rademacher_three_bands():
    """Large λ, γ < 1: atom of S⁰ at 0 (mass 1−γ) separates from ± bulks."""
    bands = support(lam=400.0, gamma=GAMMA, values=RAD[0], weights=RAD[1])
    assert len(bands) == 3
    d = lambda x: density(x, lam=400.0, gamma=GAMMA, values=RAD[0], weights=RAD[1])
    masses = [band_integral(d, [b]) for b in bands]
    assert abs(masses[1] - (1 - GAMMA)) < 1e-6 and abs(sum(masses) - 1) < 1e-9


# ---------------------------------------------------------------- finite-size simulations

def sample_S(d, gamma, law, rng):
    v, w = law
    k = int(round(gamma * d))
    W = rng.standard_normal((k, d))
    vv = rng.choice(v, size=k, p=w)
    return (W.T * vv) @ W / np.sqrt(k * d)


def goe(d, rng):
    A = rng.standard_normal((d, d))
    return (A + A.T) / np.sqrt(2 * d)


def _histogram_check(d, lam, law, tol, seed, exact=None):
    """Kolmogorov distance between sampled eigenvalues and the limiting law.  With
    ``exact`` ("gaussian"/"uniform") the readouts are sampled from the continuous law and
    the density comes from the exact-law channel."""
    rng = np.random.default_rng(seed)
    if exact is None:
        S = sample_S(d, GAMMA, law, rng)
        bands = support(lam=lam, gamma=GAMMA, values=law[0], weights=law[1])
        dens = lambda x: density(x, lam=lam, gamma=GAMMA, values=law[0], weights=law[1])
    else:
        k = int(round(GAMMA * d))
        W = rng.standard_normal((k, d))
        # stratified readouts (quantiles, shuffled): removes the O(1/√k) fluctuation of the
        # empirical readout law, which at d = 1500 alone exceeds the KS tolerance
        from scipy.stats import norm
        q = (rng.permutation(k) + 0.5) / k
        vv = norm.ppf(q) if exact == "gaussian" else np.sqrt(3) * (2 * q - 1)
        S = (W.T * vv) @ W / np.sqrt(k * d)
        ch = symmetric_channel(GAMMA, *law, law=exact)
        bands = None
        dens = lambda x: ch.density(x, lam)
    Y = np.sqrt(lam) * S + goe(d, rng)
    ev = np.sort(np.linalg.eigvalsh(Y))
    if bands is None or not np.isfinite(bands[0][0]):
        bands = [(ev[0] - 1.0, ev[-1] + 1.0)]
    grid = np.linspace(bands[0][0] - 0.2, bands[-1][1] + 0.2, 4001)
    rho = dens(grid)
    cdf = np.concatenate([[0], np.cumsum(0.5 * (rho[1:] + rho[:-1]) * np.diff(grid))])
    emp = np.searchsorted(ev, grid, side="right") / d
    ks = np.max(np.abs(cdf - emp))
    assert ks < tol, ks


def test_histogram_small():
    _histogram_check(400, 4.0, RAD, 0.03, seed=1)


@pytest.mark.parametrize("exact", ["gaussian", "uniform"])
def test_histogram_small_continuous(exact):
    law = LAWS["gauss" if exact == "gaussian" else "unif"]
    _histogram_check(400, 3.0, law, 0.03, seed=5, exact=exact)


@pytest.mark.slow
@pytest.mark.parametrize("name,lam", [("ones", 3.0), ("rad", 50.0), ("gauss", 2.0),
                                      ("gauss-exact", 2.0), ("unif-exact", 20.0)])
def test_histogram_d1500(name, lam):
    # Kolmogorov distance at d = 1500: fluctuations O(log d / d) ≈ 5e-3
    if name.endswith("-exact"):
        base = name[:-6]
        _histogram_check(1500, lam, LAWS[base], 0.01, seed=2,
                         exact="gaussian" if base == "gauss" else "uniform")
    else:
        _histogram_check(1500, lam, LAWS[name], 0.01, seed=2)


def rie_mse(d, lam, law, seed):
    """Empirical MSE/λ of the optimal RIE ξ(y) = y + 2 Re m(y+i0) (Bun–Bouchaud–Potters with
    GOE noise of variance 1: ξ(y) = y − 2 p.v.∫ρ(x)/(y−x)dx) estimating √λ S⁰."""
    rng = np.random.default_rng(seed)
    S = sample_S(d, GAMMA, law, rng)
    Y = np.sqrt(lam) * S + goe(d, rng)
    y, U = np.linalg.eigh(Y)
    m = stieltjes(y, lam=lam, gamma=GAMMA, values=law[0], weights=law[1])
    xi = y + 2 * m.real
    est = (U * xi) @ U.T
    return np.sum((np.sqrt(lam) * S - est) ** 2) / d / lam


def test_rie_small():
    ch = symmetric_channel(GAMMA, *ONES)
    lam = 2.0
    mse = rie_mse(300, lam, ONES, seed=3)
    assert abs(mse - ch.mmse(lam)) < 0.03 * ch.mmse(lam) + 0.01


@pytest.mark.slow
@pytest.mark.parametrize("name,lam", [("ones", 2.0), ("rad", 10.0), ("4point", 1.0)])
def test_rie_d1000(name, lam):
    ch = symmetric_channel(GAMMA, *LAWS[name])
    mse = np.mean([rie_mse(1000, lam, LAWS[name], seed=s) for s in range(2)])
    # finite-d bias O(1/d) plus fluctuations O(1/d): 2 % relative
    assert abs(mse - ch.mmse(lam)) < 0.02 * ch.mmse(lam) + 2e-3


# ---------------------------------------------------------------- reference tables
# (λ, m_S(λ)) copied from data/reference/barbier2025_shallow/hciz_m_table_gamma0.5_readout_<law>.csv
# (Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530 / 2505.24849, public code;
# scipy-quad tables with ~1e-6 error).
REF_TABLES = {
    "ones": [(0.05, 0.05205271), (0.15000000000000002, 0.15892478), (0.25, 0.25404227), (0.35000000000000003, 0.33259596), (0.45, 0.39673773), (0.55, 0.44955763), (0.6000000000000001, 0.47255478), (1.4000000000000001, 0.68005243), (2.2, 0.76758921), (3.0, 0.81649492), (3.8000000000000003, 0.84794480), (4.6000000000000005, 0.86996134), (5.4, 0.88627869), (6.2, 0.89887895), (7.0, 0.90891532), (7.800000000000001, 0.91710589), (8.6, 0.92392194), (9.4, 0.92968596), (12.4, 0.94517943), (22.0, 0.96774059), (31.599999999999998, 0.97712525), (46.4, 0.98421422), (97.6, 0.99239676), (148.8, 0.99499421), (200.0, 0.99626902)],
    "rad": [(0.05, 0.04800965), (0.15000000000000002, 0.13679593), (0.25, 0.21750628), (0.35000000000000003, 0.28838173), (0.45, 0.34927816), (0.55, 0.40133830), (0.6000000000000001, 0.42450513), (1.4000000000000001, 0.64476094), (2.2, 0.74214348), (3.0, 0.79720230), (3.8000000000000003, 0.83273303), (4.6000000000000005, 0.85761652), (5.4, 0.87604096), (6.2, 0.89024503), (7.0, 0.90153633), (7.800000000000001, 0.91073093), (8.6, 0.91836501), (9.4, 0.92480568), (12.4, 0.94202586), (22.0, 0.96666062), (31.599999999999998, 0.97662352), (46.4, 0.98400005), (97.6, 0.99235211), (148.8, 0.99497533), (200.0, 0.99625865)],
    "unif": [(0.05, 0.04890523), (0.15000000000000002, 0.15092103), (0.25, 0.25021201), (0.35000000000000003, 0.33422913), (0.45, 0.40266059), (0.55, 0.45850776), (0.6000000000000001, 0.48263915), (1.4000000000000001, 0.69446741), (2.2, 0.78051021), (3.0, 0.82772677), (3.8000000000000003, 0.85776905), (4.6000000000000005, 0.87865096), (5.4, 0.89404826), (6.2, 0.90589210), (7.0, 0.91529741), (7.800000000000001, 0.92295434), (8.6, 0.92931363), (9.4, 0.93468249), (12.4, 0.94907429), (22.0, 0.96993774), (31.599999999999998, 0.97859388), (46.4, 0.98513569), (97.6, 0.99273540), (148.8, 0.99518096), (200.0, 0.99639129)],
    "gauss": [(0.05, 0.05206229), (0.15000000000000002, 0.18826462), (0.25, 0.30537192), (0.35000000000000003, 0.39318808), (0.45, 0.46018205), (0.55, 0.51285050), (0.6000000000000001, 0.53518838), (1.4000000000000001, 0.72500747), (2.2, 0.80082848), (3.0, 0.84257607), (3.8000000000000003, 0.86928209), (4.6000000000000005, 0.88794286), (5.4, 0.90176816), (6.2, 0.91244818), (7.0, 0.92096160), (7.800000000000001, 0.92791614), (8.6, 0.93370988), (9.4, 0.93861498), (12.4, 0.95183365), (22.0, 0.97122330), (31.599999999999998, 0.97937323), (46.4, 0.98558825), (97.6, 0.99288905), (148.8, 0.99526327), (200.0, 0.99644426)],
    "4point": [(0.002, 0.00199609), (0.006, 0.00596647), (0.01, 0.00991123), (0.014, 0.01383427), (0.018000000000000002, 0.01773920), (0.022, 0.02162937), (0.024, 0.02356990), (0.082, 0.07977850), (0.184, 0.18075413), (0.308, 0.29222185), (0.548, 0.44861831), (0.8759999999999999, 0.57762342), (1.3559999999999999, 0.68376557), (2.13, 0.77251198), (3.06, 0.82795693), (4.859999999999999, 0.88124862), (7.2, 0.91431011), (10.8, 0.93949621), (17.2, 0.96001477), (25.0, 0.97165536), (40.0, 0.98184537), (60.0, 0.98775307), (90.0, 0.99177657), (140.0, 0.99468759), (200.0, 0.99627175)],
}


EXACT = {"unif": "uniform", "gauss": "gaussian"}


def _ref_channel(name):
    return symmetric_channel(GAMMA, *LAWS[name], law=EXACT.get(name))


@pytest.mark.parametrize("name", ["ones", "rad", "4point", "unif", "gauss"])
def test_reference_tables_direct(name):
    """A few rows of each reference table by direct quadrature (no table build)."""
    ch = SymmetricChannel(GAMMA, *LAWS[name], law=EXACT.get(name))
    lam, m = np.array(REF_TABLES[name])[[3, 9, 18, 24]].T
    assert np.max(np.abs(1 - ch.direct_mmse(lam) - m)) < 1e-5


@pytest.mark.parametrize("name", ["ones", "rad", "gauss"])
def test_reference_tables(name):
    ch = _ref_channel(name)
    lam, m = np.array(REF_TABLES[name]).T
    assert np.max(np.abs(ch.overlap(lam) - m)) < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name", ["4point", "unif"])
def test_reference_tables_slow(name):
    ch = _ref_channel(name)
    lam, m = np.array(REF_TABLES[name]).T
    assert np.max(np.abs(ch.overlap(lam) - m)) < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name,n1,n2", [
    ("unif", 20, 40),
    pytest.param("gauss", 40, 60, marks=pytest.mark.xfail(
        reason="discretization, not quadrature: 40 vs 60 Gauss–Hermite atoms differ by 8e-5 "
               "at λ = 3 (outer atoms split off as separate bands; the mass is exact to "
               "1e-15); use law='gaussian'",
        strict=False)),
])
def test_grid_convergence(name, n1, n2):
    law = unif_law if name == "unif" else gauss_law
    lam = np.array([0.3, 3.0])
    a = SymmetricChannel(GAMMA, *law(n1)).direct_mmse(lam)
    b = SymmetricChannel(GAMMA, *law(n2)).direct_mmse(lam)
    assert np.max(np.abs(a - b)) < 1e-6


@pytest.mark.parametrize("name", ["unif", "gauss"])
def test_atoms_vs_exact_law(name):
    """Many-atom quadrature laws (η-continuation solver) approach the exact continuous law
    at moderate λ (60 Gauss–Hermite atoms: discretization error ≈ 4e-6 at λ = 2)."""
    lam = np.array([0.3, 2.0])
    a = SymmetricChannel(GAMMA, *LAWS[name]).direct_mmse(lam)
    b = SymmetricChannel(GAMMA, *LAWS[name], law=EXACT[name]).direct_mmse(lam)
    assert np.max(np.abs(a - b)) < (1e-6 if name == "unif" else 1e-5)


def test_continuous_law_functions():
    """Closed forms of the exact laws: series/closed-form switch at |ζ| = 10 is continuous,
    z(m(z)) = z, λ = 0 gives the semicircle, mass 1 and mean 0, variance 1 + λ."""
    from hciz._continuous import ContinuousEngine
    for law in ("gaussian", "uniform"):
        e = ContinuousEngine(GAMMA, law)
        z = np.array([10.0 + 1e-9 + 0.5j, 10.0 - 1e-9 + 0.5j, 0.3 + (10 + 1e-9) * 1j,
                      0.3 + (10 - 1e-9) * 1j])
        H, J = e._HJ(z)
        # |dH/dζ|, |dJ/dζ| ≈ 2e-3 here: the 2e-9 step moves them by ≈ 4e-12
        assert abs(H[0] - H[1]) < 2e-11 and abs(J[0] - J[1]) < 2e-11
        assert abs(H[2] - H[3]) < 2e-11 and abs(J[2] - J[3]) < 2e-11
        zz = np.array([0.3 + 0.2j, -4.0 + 1e-3j, 7.0 + 3.0j])
        m = e.solve(zz, 5.0)
        zb, _ = e._zzp(m, np.sqrt(5.0 / GAMMA))
        assert np.max(np.abs(zb - zz)) < 1e-12 and np.all(m.imag > 0)
        x = np.linspace(-1.9, 1.9, 7)
        assert np.max(np.abs(e.solve(x + 0j, 0.0).imag / np.pi
                             - np.sqrt(4 - x ** 2) / (2 * np.pi))) < 1e-12
        ch = SymmetricChannel(GAMMA, *LAWS["gauss" if law == "gaussian" else "unif"], law=law)
        lo, hi = ch.support(3.0)[0]
        if not np.isfinite(lo):
            lo, hi = -25.0, 25.0
        xg, wg = np.polynomial.legendre.leggauss(400)
        if law == "uniform":
            th = 0.5 * np.pi * (xg + 1)
            xs = lo + 0.5 * (hi - lo) * (1 - np.cos(th))
            ws = 0.25 * np.pi * (hi - lo) * np.sin(th) * wg
        else:
            xs, ws = 0.5 * (hi - lo) * xg + 0.5 * (hi + lo), 0.5 * (hi - lo) * wg
        rho = ch.density(xs, 3.0)
        assert abs(np.sum(rho * ws) - 1) < 1e-6
        assert abs(np.sum(xs * rho * ws)) < 1e-6
        assert abs(np.sum(xs ** 2 * rho * ws) - 4.0) < 1e-5


# ---------------------------------------------------------------- identities of the table

@pytest.fixture(scope="module", params=["ones", "rad", "gauss"])
def channel(request):
    return _ref_channel(request.param)


def test_interpolated_vs_direct(channel):
    rng = np.random.default_rng(4)
    lam = np.concatenate([10 ** rng.uniform(-4, 4, 10), rng.uniform(0, 3, 5)])
    assert np.max(np.abs(channel.mmse(lam) - channel.direct_mmse(lam))) < 1e-10


def test_immse_and_derivative(channel):
    lam = np.array([0.01, 0.3, 2.0, 15.0, 70.0, 300.0, 1e4])
    h = 1e-4 * (1 + lam)
    fd = (channel.mutual_information(lam + h) - channel.mutual_information(lam - h)) / (2 * h)
    assert np.max(np.abs(4 * fd - channel.mmse(lam)) / channel.mmse(lam)) < 1e-6
    fd2 = (channel.overlap(lam + h) - channel.overlap(lam - h)) / (2 * h)
    d = channel.overlap_derivative(lam)
    assert np.max(np.abs(fd2 - d) / d) < 1e-5
    assert channel.mutual_information(0.0) == 0.0


def test_inverse_roundtrip(channel):
    lam = np.concatenate([[0.0], np.logspace(-6, 9, 40)])
    back = channel.overlap_inverse(channel.overlap(lam))
    assert np.all(np.abs(back - lam) <= 1e-7 * lam + 1e-9)
    lam_hi = channel.overlap_inverse(1 - 1e-9)
    assert abs(channel.overlap(lam_hi) - (1 - 1e-9)) < 3e-16
    assert lam_hi > 1e8
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError):
            channel.overlap_inverse(bad)
    assert isinstance(channel.overlap_inverse(0.5), float)


def test_large_lambda_limit_and_information(channel):
    A = channel.mmse_lambda_limit
    lam = np.array([1e6, 1e8])
    assert np.max(np.abs(lam * channel.mmse(lam) - A)) < 1e-2 * np.sqrt(1e6 / lam).max()
    # ι = (A/4) ln λ + const + o(1)
    i1, i2 = channel.mutual_information(1e8), channel.mutual_information(1e9)
    assert abs((i2 - i1) - A / 4 * np.log(10)) < 1e-3


@pytest.mark.parametrize("gamma", [0.3, 0.5, 0.8, 1.5])
def test_noiseless_limit_ones(gamma):
    """v ≡ 1: λ mmse_S → 2γ − γ² (γ < 1; perfect recovery α = γ − γ²/2), → 1 (γ ≥ 1)."""
    ch = SymmetricChannel(gamma, *ONES)
    A = 2 * gamma - gamma ** 2 if gamma < 1 else 1.0
    assert ch.mmse_lambda_limit == pytest.approx(A, abs=1e-15)
    lam = np.array([1e4, 1e6])
    val = lam * ch.direct_mmse(lam)
    assert abs(val[1] - A) < 1e-3 and abs(val[1] - A) < abs(val[0] - A) + 1e-12


def test_mean_shift_and_errors():
    ch = symmetric_channel(GAMMA, *ONES)
    assert ch.mean_shift == pytest.approx(GAMMA)
    assert symmetric_channel(GAMMA, *ONES) is ch
    with pytest.raises(ValueError):
        SymmetricChannel(0.0, *ONES)
    with pytest.raises(ValueError):
        SymmetricChannel(0.5, [1.0, 2.0], [0.5, 0.6])
    with pytest.raises(ValueError):
        ch.mmse(-1.0)
    with pytest.raises(ValueError):
        density(0.0, lam=-1.0, gamma=0.5, values=[1.0], weights=[1.0])
    assert ch.mmse(0.0) == pytest.approx(1.0, abs=1e-10)
    assert np.asarray(ch.overlap(np.ones((2, 3)))).shape == (2, 3)


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 1e7), st.floats(1e-6, 1e3))
def test_overlap_monotone_and_bounded(lam, dl):
    ch = symmetric_channel(GAMMA, *RAD)
    a, b = ch.overlap(lam), ch.overlap(lam + dl * (1 + lam))
    assert 0 <= a < 1 and a <= b and ch.overlap_derivative(lam) > 0


# ---------------------------------------------------------------- high-precision references

def mp_overlap(lam, gamma, values, weights, dps=20):
    """``m_S(λ)`` and ``∫ρ_λ`` in mpmath, independently of ``hciz`` (test helper).

    Same approach as ``scripts/make_quadratic_reference.py``, for any discrete law: clearing
    denominators, ``z(m) = x`` is the polynomial ``A(m) − x m Π_j(1 + t_j m) = 0`` of degree
    ``K + 2`` (the cubic of docs/theory.md §4.1 for ``v ≡ 1``, a quartic for Rademacher, degree 6
    for 4point), ``ρ(x) = max Im m / π`` (numpy roots polished by Newton at ``dps``
    digits).  Band edges and necks are the values ``z(m_c)`` at the roots of the numerator
    of ``z'(m)`` (mpmath polyroots); ``∫ρ³`` is tanh–sinh quadrature between them.
    """
    import mpmath as mp

    with mp.workdps(dps):
        lam, gamma = mp.mpf(lam), mp.mpf(gamma)
        c = mp.sqrt(lam / gamma)
        t = [c * mp.mpf(float(v)) for v in values if v != 0]
        w = [mp.mpf(float(p)) for v, p in zip(values, weights) if v != 0]

        def pmul(a, b):  # coefficient lists, highest degree first
            out = [mp.mpf(0)] * (len(a) + len(b) - 1)
            for i, ai in enumerate(a):
                for j, bj in enumerate(b):
                    out[i + j] += ai * bj
            return out

        def padd(a, b):
            n = max(len(a), len(b))
            a = [mp.mpf(0)] * (n - len(a)) + list(a)
            b = [mp.mpf(0)] * (n - len(b)) + list(b)
            return [x + y for x, y in zip(a, b)]

        def prod(skip=None, power=1):
            out = [mp.mpf(1)]
            for i, ti in enumerate(t):
                if i != skip:
                    for _ in range(power):
                        out = pmul(out, [ti, mp.mpf(1)])
            return out

        def z(m):
            return -1 / m - m + gamma * sum(wj * tj / (1 + tj * m) for wj, tj in zip(w, t))

        Pi = prod()
        A = pmul([-1, 0, -1], Pi)
        for j in range(len(t)):
            A = padd(A, pmul([gamma * w[j] * t[j], 0], prod(skip=j)))
        B = pmul([1, 0], Pi)

        def rho(x):
            coeffs = padd(A, [-x * b for b in B])
            start = np.roots([complex(ci) for ci in coeffs])
            r = mp.mpc(start[np.argmax(start.imag)])
            if mp.im(r) <= 0:
                return mp.mpf(0)
            for _ in range(8):  # Newton (Horner with derivative)
                p, dp = mp.mpc(0), mp.mpc(0)
                for ci in coeffs:
                    p, dp = p * r + ci, dp * r + p
                r -= p / dp
            return max(mp.im(r), 0) / mp.pi

        # numerator of z'(m) = 1/m² − 1 − γ Σ w t²/(1 + t m)²
        Pi2 = prod(power=2)
        C = padd(Pi2, [-ci for ci in pmul([1, 0, 0], Pi2)])
        for j in range(len(t)):
            C = padd(C, [-gamma * w[j] * t[j] ** 2 * ci
                         for ci in pmul([1, 0, 0], prod(skip=j, power=2))])
        pts = set()
        with warnings.catch_warnings():  # coefficient-order deprecation of mpmath ≥ 1.4
            warnings.simplefilter("ignore", DeprecationWarning)
            crit = mp.polyroots(C, maxsteps=400, extraprec=4 * dps)
        for mc in crit:
            zc = z(mc)
            if abs(mp.im(mc)) < mp.mpf(10) ** (-dps // 2) or abs(mp.im(zc)) < 1:
                pts.add(mp.re(zc))  # edges, and necks (branch points near the axis)
        pts = sorted(pts)
        i3 = mp.quad(lambda x: rho(x) ** 3, pts)
        i1 = mp.quad(rho, pts)
        return float(1 - (1 - 4 * mp.pi ** 2 / 3 * i3) / lam), float(i1)


def _check_mpmath(name, lam):
    ref, mass = mp_overlap(lam, GAMMA, *LAWS[name])
    assert abs(mass - 1) < 1e-14  # the reference itself resolves every band
    ch = symmetric_channel(GAMMA, *LAWS[name])
    assert abs(1 - ch.direct_mmse(lam) - ref) < 1e-11
    assert abs(ch.overlap(lam) - ref) < 1e-11


@pytest.mark.parametrize("name,lam", [("ones", 57.0), ("rad", 50.0), ("4point", 10.0)])
def test_overlap_vs_mpmath(name, lam):
    """m_S to 1e-11 against 20-digit mpmath; for v ≡ 1, γ = 0.5 a band separates at
    λ ≈ 25–58 (the former band quadrature was off by 3.6e-8 at λ = 57)."""
    _check_mpmath(name, lam)


@pytest.mark.slow
@pytest.mark.parametrize("name,lam", [("ones", 1.0), ("ones", 30.0), ("ones", 52.0),
                                      ("ones", 55.0), ("ones", 100.0), ("rad", 2.0),
                                      ("rad", 400.0), ("4point", 1.0), ("4point", 60.0)])
def test_overlap_vs_mpmath_slow(name, lam):
    _check_mpmath(name, lam)


def test_band_split_no_warning(caplog, monkeypatch):
    """Building the v ≡ 1, γ = 0.5 table (band split at λ ≈ 25–58) logs no warning."""
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", "off")
    with caplog.at_level(logging.DEBUG, logger="hciz"):
        ch = SymmetricChannel(GAMMA, *ONES)
        ch.table
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    i3, i1, _ = ch._engine.band_moments(np.linspace(20.0, 60.0, 41))
    assert np.max(np.abs(i1 - 1)) < 1e-13


# ---------------------------------------------------------------- on-disk table cache

def _cache_files(path):
    return sorted(p for p in path.iterdir() if p.suffix == ".npz")


def test_cache_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", str(tmp_path))
    a = SymmetricChannel(0.7, *RAD)
    a.table
    files = _cache_files(tmp_path)
    assert len(files) == 1 and a.build_seconds is not None
    b = SymmetricChannel(0.7, *RAD)
    tb = b.table
    assert b.build_seconds is None  # read, not rebuilt
    for x, y in zip(a.table, tb):
        assert np.array_equal(x, y)
    lam = np.array([0.0, 0.3, 30.0, 1e5])
    assert np.array_equal(a.overlap(lam), b.overlap(lam))
    # a different key (resolution) is a different file
    SymmetricChannel(0.7, *RAD, resolution=20).table
    assert len(_cache_files(tmp_path)) == 2


@pytest.mark.parametrize("damage", [b"not an npz file", b""])
def test_cache_corrupted_file_rebuilt(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", str(tmp_path))
    a = SymmetricChannel(0.7, *ONES)
    a.table
    (path,) = _cache_files(tmp_path)
    path.write_bytes(damage)
    b = SymmetricChannel(0.7, *ONES)
    b.table
    assert b.build_seconds is not None  # rebuilt
    assert np.array_equal(a.table[1], b.table[1])
    c = SymmetricChannel(0.7, *ONES)  # the rebuilt table was written back
    c.table
    assert c.build_seconds is None


def test_cache_disabled_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", "off")
    SymmetricChannel(0.7, *ONES).table
    assert not any(tmp_path.rglob("*"))
    monkeypatch.delenv("REPLICA_HCIZ_CACHE")
    SymmetricChannel(0.7, *ONES).table
    assert len(_cache_files(tmp_path / "replica-hciz")) == 1
