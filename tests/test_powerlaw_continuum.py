"""The continuum limit ``powerlaw:beta=B`` of the K-atom power-law readout laws (issue 40, item 1).

``v = c u^−β`` with ``u`` uniform on (0, 1), ``c = √(1 − 2β)``: the law of the normalized amplitudes
``v_p ∝ p^−β`` of ``K`` atoms as ``K → ∞`` (``u = p/K``). The K-atom sums of the one-hidden-layer equations are
a rule for the integrals over ``u``, whose integrands ``∝ v² = c² u^−2β`` are singular at ``u = 0`` (the
strongest atoms): the error of such a sum falls like ``K^−(1−2β)`` (the Euler–Maclaurin remainder of an
integrable ``u^−2β`` singularity), which the sweeps below must show, and they must approach the continuum sweep."""

from __future__ import annotations

import numpy as np
import pytest

from priors import get_readout_law
from priors.continuous_laws import PowerLawDensity
from replica.activations import get_activation
from replica.continuation.sweep import sweep
from replica.models.shallow import ShallowModel
from replica.workflow.cli import sweep_main


@pytest.mark.parametrize("beta", [0.1, 0.3, 0.45])
def test_density_is_normalized_with_unit_second_moment_and_the_powerlaw_quantiles(beta):
    law = PowerLawDensity(beta)
    c = np.sqrt(1 - 2 * beta)
    v, w = law.panel_rule([1.3 * c, 4.0 * c], 16)
    assert abs(w.sum() - 1.0) < 1e-6 and abs(np.sum(w * v * v) - 1.0) < 1e-12
    # P(v > x) = (x/c)^{−1/β}, and the mass above a breakpoint on the rule equals it
    x = 4.0 * c
    assert abs(np.sum(w[v > x]) - (x / c) ** (-1 / beta)) < 1e-6
    u = np.linspace(0.01, 0.99, 7)
    np.testing.assert_allclose(law.cdf(law.ppf(u)), u, rtol=0, atol=1e-13)
    # the K-atom law's amplitudes approach the continuum quantiles, v_p → c (p/K)^−β: their ratio is
    # (K^{1−s}/((1−s) Σ_{p≤K} p^−s))^{1/2}, s = 2β, for every p, and by Euler–Maclaurin
    # Σ p^−s = K^{1−s}/(1−s) + ζ(s) + K^−s/2 + O(K^{−1−s}): the relative error falls like K^−(1−2β)
    from scipy.special import zeta

    s_ = 2 * beta
    for k in (1000, 100000):
        atoms = np.sort(get_readout_law(f"powerlaw:beta={beta},k={k}").values)[::-1]
        p = np.array([k // 100, k // 10, k // 2])
        ratio = atoms[p - 1] / (c * (p / k) ** (-beta))
        x = (1 - s_) * (zeta(s_) * k ** (s_ - 1) + 0.5 / k)
        np.testing.assert_allclose(ratio - 1, 1 / np.sqrt(1 + x) - 1, rtol=0.02)


def _equilibrium_mmse(law, alphas):
    model = ShallowModel(get_activation("tanh2", drop_hermite=(1,)), 0.5, 0.04, readout_law=law)
    return sweep(model, alphas, progress=False).equilibrium["mmse"]


@pytest.mark.parametrize("beta", [0.2, 0.3])
def test_atom_laws_converge_to_the_continuum_at_the_rate_k_to_the_minus_one_minus_two_beta(beta):
    """|mmse_K − mmse_∞| at K = 100 and 1000 (α = 0.5, 3): it falls by 10^{1−2β} per decade of K (±25 %), so the
    continuum sweep is the limit of the atom laws; the continuum itself is converged in its rule
    (``discretization_error`` below 1e-5)."""
    alphas = np.array([0.5, 3.0])
    limit = _equilibrium_mmse(f"powerlaw:beta={beta}", alphas)
    gaps = [np.abs(_equilibrium_mmse(f"powerlaw:beta={beta},k={k}", alphas) - limit) for k in (100, 1000)]
    ratio = gaps[0] / gaps[1]
    expected = 10 ** (1 - 2 * beta)
    assert np.all(ratio > 0.8 * expected) and np.all(ratio < 1.25 * expected), (ratio, expected)
    assert np.all(gaps[1] < 0.05 * limit)


def test_continuum_sweep_cli_and_its_learned_mass(tmp_path):
    """The CLI sweep of the continuum law writes a converged specialized branch whose learned mass grows with α
    (the front in v moves down) and stays in (0, 1]."""
    from replica.workflow.io import read_sweep

    out = tmp_path / "c.h5"
    assert sweep_main(["--activation", "tanh2", "--drop-hermite", "1", "--gamma", "0.5", "--delta", "0.04",
                       "--readout", "powerlaw:beta=0.3", "--alpha", "0.3:3:6", "--quiet", "-o", str(out)]) == 0
    d = read_sweep(out)
    eq = d["equilibrium"]
    mass = np.asarray(eq["learned_mass"])
    assert np.all((mass > 0) & (mass <= 1.0)) and np.all(np.diff(mass) >= -1e-12)
    assert "feature_transitions" not in d or not len(d["feature_transitions"].get("alpha", ()))
    err = np.nanmax(d["branches"][str(eq["branch"][-1])]["discretization_error"])
    assert err < 1e-4


@pytest.mark.parametrize("extra, message", [
    ([], "needs odd activations with a linear part and no --readout-grid"),
    (["--activation", "tanh2", "--unit-variance", "--readout-grid", "16"], "--readout-grid: applies only to")])
def test_continuum_law_beyond_one_hidden_layer_needs_the_front_rules(tmp_path, capsys, extra, message):
    # ReLU (not odd: the two-layer profile solver, no heavy tails), or a fixed grid: refused in one line
    out = tmp_path / "y.h5"
    assert sweep_main(["--layers", "2", "--gamma", "0.5,0.5", "--readout", "powerlaw:beta=0.3", "--alpha", "1",
                       "-o", str(out)] + extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not out.exists()


def test_continuum_law_with_two_hidden_layers_has_a_readout_front(tmp_path):
    from replica.workflow.io import read_root_attrs, read_sweep

    out = tmp_path / "two.h5"
    assert sweep_main(["--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2", "--unit-variance",
                       "--readout", "powerlaw:beta=0.3", "--alpha", "2", "--quiet", "-o", str(out)]) == 0
    assert "readout front" in read_root_attrs(out)["s_grid_rule"]
    d = read_sweep(out)
    name = str(d["equilibrium"]["branch"][0])
    assert name.startswith("layers_1_2")
    front = float(d["branches"][name]["front_layer_2"][0])
    assert 0.632 < front < 2.0  # inside the support [√(1 − 2β), ∞): the strongest readouts learned
