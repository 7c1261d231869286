"""No idle HCIZ tables (issue 38, item 3): a one-hidden-layer sweep whose activation has no quadratic part
(μ₂ = 0) neither builds nor reads the table of the symmetric channel of ``S = Wᵀdiag(v)W/√(kd)``, nor
builds its spectral engine.

There ``R̂₂ = αμ₂²/D = 0``, so the tilt term of ``Q̂`` and ``ι(τ + R̂₂) − ι(τ)`` vanish and
``R₂ = m_S(τ) + R_d − 1 = E_v[v²Q²] + R_d − 1`` (docs/theory.md §5.2): the table (32 s of CPU for a
100-atom readout law) is never needed. The spies record every read of ``SymmetricChannel.table`` (so a
table built earlier in the process and kept by the channel cache is caught as well) and every build; a
sweep with μ₂ ≠ 0 on the same law shows that they see the table when it is used. γ = 0.4375 is used by
no other test, so that the channels of this module are new to the process.
"""

import numpy as np
import pytest

from hciz import symmetric
from replica.models.shallow import ShallowModel
from replica.workflow.cli import sweep_main
from replica.workflow.io import read_sweep

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

GAMMA = "0.4375"
FEW_ATOMS = "discrete:2=0.2,1=0.3,0.5=0.5"  # dense solver (at most 16 atoms)
MANY_ATOMS = "discrete:" + ",".join(f"{1.0 / p:.17g}=0.05" for p in range(1, 21))  # profile solver


class _Events(list):
    """Events of the spies, with the cache directory of the test."""

    cache = None


@pytest.fixture
def table_spy(monkeypatch, tmp_path):
    """Fresh table cache; the list of ``("read" | "build", γ, atoms)`` events of the symmetric channel."""
    cache = tmp_path / "hciz-cache"
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", str(cache))
    events = _Events()
    table, build = symmetric.SymmetricChannel.table, symmetric.SymmetricChannel._build

    def spied_table(self):
        events.append(("read", self.gamma, self.values.size))
        return table.fget(self)

    def spied_build(self):
        events.append(("build", self.gamma, self.values.size))
        return build(self)

    monkeypatch.setattr(symmetric.SymmetricChannel, "table", property(spied_table))
    monkeypatch.setattr(symmetric.SymmetricChannel, "_build", spied_build)
    # the spectral engine of S⁰ (its λ-independent sampling alone took 35 s of CPU for 1,000 atoms)
    for name in ("SpectralEngine", "ContinuousEngine"):
        engine = getattr(symmetric, name)

        def spied_engine(*args, _engine=engine, _name=name, **kwargs):
            events.append(("engine", _name))
            return _engine(*args, **kwargs)

        monkeypatch.setattr(symmetric, name, spied_engine)
    events.cache = cache
    return events


def _sweep(tmp_path, activation, readout, alpha, *extra):
    out = tmp_path / "s.h5"
    argv = ["--activation", activation, *extra, "--gamma", GAMMA, "--delta", "0.04", "--alpha", alpha,
            "--readout", readout, "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0
    return read_sweep(out)


@pytest.mark.parametrize("readout", [FEW_ATOMS, MANY_ATOMS, "gaussian"], ids=["dense", "profile", "continuous"])
def test_odd_activation_sweep_builds_no_hciz_table(tmp_path, table_spy, readout):
    data = _sweep(tmp_path, "tanh2", readout, "0.5:3:4", "--drop-hermite", "1")
    assert table_spy == []
    assert not table_spy.cache.exists() or not any(table_spy.cache.iterdir())
    # the sweep went through the specialization equations (Q ≢ 0), not only the universal branch
    learned = [b for name, b in data["branches"].items() if name != "universal"]
    assert learned and any(np.any(b["exists"]) for b in learned)
    model = ShallowModel("tanh2", float(GAMMA), 0.04, readout_law=readout)
    assert (model.profile_solver is None) == (readout == FEW_ATOMS)
    for b in learned:
        ok = b["exists"] & np.any(b["overlap_W"] > 0, axis=1)
        np.testing.assert_array_equal(b["R2_hat"][ok], 0.0)
        # R₂ = m_S(τ) + R_d − 1 = E_v[v² Q²] + R_d − 1 (on the reporting grid for the profile solver)
        if readout == FEW_ATOMS:
            q2 = (b["overlap_W"][ok] ** 2) @ (model.readout_weights * model.v2)
            np.testing.assert_allclose(b["R2"][ok], q2 + model.R_d - 1.0, rtol=1e-13)
        assert np.all(np.isnan(b["tau"][ok]))  # not computed: nothing depends on it


def test_quadratic_part_reads_and_builds_the_table(tmp_path, table_spy):
    """A sweep with μ₂ ≠ 0 (ReLU) needs the table: the spies are not blind (a law of its own, whose channel no
    other test of the process has built, whatever the order of the tests)."""
    _sweep(tmp_path, "relu", "discrete:1.5=0.25,0.5=0.75", "1.0")
    assert ("build", float(GAMMA), 2) in table_spy
    assert ("engine", "SpectralEngine") in table_spy
    assert any(e[0] == "read" for e in table_spy)
    assert any(table_spy.cache.iterdir())


def test_the_skipped_terms_are_the_table_terms_at_zero(table_spy):
    """At a solved μ₂ = 0 point the terms taken without the table equal those computed through it: the tilt gain
    and ``ι(τ + R̂₂) − ι(τ)`` at ``R̂₂ = 0`` are exactly 0 and ``m_S(τ)`` is ``E_v[v² Q²]`` (to the table's
    accuracy), so mmse and f are what the full formulas give."""
    model = ShallowModel("tanh2", float(GAMMA), 0.04, readout_law=FEW_ATOMS)
    res = model.solve(3.0, 0.99, start="informed")
    st = res.info["state"]
    assert res.converged and np.max(st.overlap_W) > 0.5 and st.R2_hat == 0.0
    assert table_spy == []
    ch = model.channel
    tau = model.tilt(st.overlap_W)  # through the table (read from here on)
    assert tau > 0.0 and table_spy
    assert float((ch.overlap(tau + 0.0) - ch.overlap(tau)) / ch.overlap_derivative(tau)) == 0.0
    assert float(ch.mutual_information(tau + 0.0) - ch.mutual_information(tau)) == 0.0
    assert st.R2 == pytest.approx(float(ch.overlap(tau)) + model.R_d - 1.0, rel=1e-12, abs=1e-13)
    # the map and the state with the full S-channel formulas (R̂₂ = 0)
    x = res.x
    Q = x[:-1]
    D = model.effective_variance(st.mmse)
    g_prime = model.activation.g_prime(Q)
    Qh = np.maximum((3.0 / model.gamma) * model.v2 * g_prime / D + 0.0 * model.v2 * Q, 0.0)
    np.testing.assert_array_equal(st.overlap_W_hat, Qh)
    f = model.free_entropy(3.0, float(ch.overlap(tau)) + model.R_d - 1.0, 0.0, Q, Qh)
    assert st.free_entropy == f
