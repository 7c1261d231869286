"""Every stored number against an identity it must obey or an independent recomputation (issue 32, item 5).

The round-trip tests (tests/test_roundtrip.py) show that a file holds what the code computed; the tests
here show that what the code computed is right, from the file alone where possible:

* ``mutual_information`` of every architecture obeys the I-MMSE relation in α,
  ``dI/dα = ln(1 + mmse/Δ) / (2 n_w)`` with ``n_w = Σ_ℓ γ_ℓ γ_{ℓ−1}`` weights per d² (γ₀ = 1), at γ ≠ 1 so
  that a wrong normalisation cannot hide (I = (α/n_w)(−½ ln 2πeΔ − f) and d(αf)/dα = −½ ln 2πe(Δ + mmse));
* the equilibrium group is recomputed from the branch groups at every α, +∞ included (Δ = 0 and perfect
  recovery), with every equilibrium field (classification errors of ±1 channels too);
* each branch point (one hidden layer, deep, two hidden layers, L = 3) is a fixed point of the model's map, every
  stored field is the one of that point, and the stationarity conditions hold when written with the stored
  fields and the priors' and channels' own functions (Q = m_P(Q̂), m_S(τ) = E_v[v²Q²], …); ``converged`` is the
  residual test, ``exists`` is where the values are;
* the equilibrium changes: ``mmse_before``/``mmse_after`` are the errors of the two branches solved again at
  the stored α, and for a crossing their free entropies agree there;
* phase diagrams: the stored α_c of every line is the crossing of the universal and specialized free
  entropies of a model built at that line's parameter, α_instability the root of the linear criterion, and the
  equilibrium columns are the named branch's;
* SGD runs: α = n/d², t = n/(kd), every measurement recomputed from the student that was measured, the train
  error of a frozen student, the closure's noise = test error + Δ on the run's time grid, the reference levels
  solved again;
* experiments: every teacher average and standard error from the per-teacher values over the kept chains;
* every API entry point refuses what the command line refuses.

Where each dataset is checked: tests/README.md.
"""

from __future__ import annotations

import math

import h5py
import numpy as np
import pytest

from replica.branches import sweep
from replica.models.deep import DeepModel
from replica.models.deep_linear import DeepLinearModel
from replica.models.shallow import ShallowModel
from replica.models.two_layer import TwoLayerModel
from replica.workflow.io import read_sweep, write_sweep

#: its module fixtures are computed once: one process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_stored_datasets")


def _weights_per_d2(gammas):
    """``Σ_ℓ γ_ℓ γ_{ℓ−1}`` (γ₀ = 1): the weights W_ℓ ∈ R^{k_ℓ × k_{ℓ−1}} per d², computed here from the γ's."""
    widths = [1.0] + [float(g) for g in gammas]
    return sum(widths[i] * widths[i + 1] for i in range(len(gammas)))


def _triples(centres, h=1e-3):
    """α grid of the points ``a(1 − h), a, a(1 + h)`` around each centre (central differences)."""
    return np.sort(np.concatenate([[c * (1 - h), c, c * (1 + h)] for c in centres]))


def _file(tmp_path, result, name="s.h5"):
    """The sweep through the file: write it, read it back (the numbers checked are the stored ones)."""
    return read_sweep(write_sweep(tmp_path / name, result, {"test": True}))


# --------------------------------------------------------------------------- mutual information (I-MMSE)
I_MMSE_CASES = {
    # name: (model factory, γ's, centres of the α triples, branches)
    "one-layer-relu": (lambda: ShallowModel("relu", 0.5, 0.1), [0.5], [0.5, 2.0, 5.0], "all"),
    "one-layer-tanh2-4point": (lambda: ShallowModel("tanh2", 0.3, 0.2, readout_law="4point"), [0.3], [1.0, 4.0],
                               "all"),
    "deep-L2": (lambda: DeepModel("tanh2", [1.0, 0.5], 0.1, drop_hermite=(0, 1, 2), unit_variance=True),
                [1.0, 0.5], [1.0, 3.0], "all"),
    "two-layer": (lambda: TwoLayerModel("tanh2", (0.5, 0.5), 0.1), [0.5, 0.5], [0.7, 2.0], "universal"),
    "deep-linear-L3": (lambda: DeepLinearModel("tanh2", [0.5, 1.0, 0.5], 0.1, unit_variance=True, s_grid=3),
                       [0.5, 1.0, 0.5], [0.7, 2.0], "universal"),
}


@pytest.mark.parametrize("case", sorted(I_MMSE_CASES))
def test_mutual_information_obeys_the_i_mmse_relation_in_alpha(tmp_path, case):
    """``dI/dα = ln(1 + mmse/Δ)/(2 n_w)`` on every branch of the file, by central differences of the stored I.

    I per weight is ``(α/n_w)(−½ ln 2πeΔ − f)`` and the envelope identity gives ``d(αf)/dα = −½ ln 2πe(Δ + mmse)``
    at a stationary point, hence the relation; n_w is computed here from the γ's (≠ 1, so that I per weight,
    per d² or per first-layer weight differ by O(1) factors)."""
    make, gammas, centres, branches = I_MMSE_CASES[case]
    model = make()
    h = 1e-3
    data = _file(tmp_path, sweep(model, _triples(centres, h), progress=False, branches=branches))
    n_w, delta = _weights_per_d2(gammas), model.delta
    assert n_w != 1.0
    checked = 0
    for name, b in data["branches"].items():
        for j in range(len(centres)):
            lo, mid, hi = 3 * j, 3 * j + 1, 3 * j + 2
            if not (b["exists"][lo] and b["exists"][mid] and b["exists"][hi]):
                continue
            a = b["alpha"][mid]
            slope = (b["mutual_information"][hi] - b["mutual_information"][lo]) / (b["alpha"][hi] - b["alpha"][lo])
            expected = math.log1p(b["mmse"][mid] / delta) / (2.0 * n_w)
            assert slope == pytest.approx(expected, rel=2e-4), (name, a, slope, expected)
            # and I itself, from the stored f and the label entropy −½ ln 2πeΔ
            f = b["free_entropy"][mid]
            assert b["mutual_information"][mid] == pytest.approx(
                a / n_w * (-0.5 * math.log(2 * math.pi * math.e * delta) - f), rel=1e-12, abs=1e-14), (name, a)
            checked += 1
    assert checked >= len(centres)


# --------------------------------------------------------------------------- equilibrium = largest f
def _assert_equilibrium_recomputed(data):
    """The equilibrium group recomputed from the branch groups at every α (largest f, +∞ included)."""
    eq, branches = data["equilibrium"], data["branches"]
    alpha = eq["alpha"]
    extra = [k for k in ("classification_error", "sign_disagreement") if k in eq]
    for i, a in enumerate(alpha):
        candidates = {}
        for name, b in branches.items():
            j = np.flatnonzero(b["alpha"] == a)
            assert j.size == 1, (name, a)
            j = int(j[0])
            f = b["free_entropy"][j]
            if b["exists"][j] and b["converged"][j] and not np.isnan(f) and f != -np.inf:
                candidates[name] = (f, j)
        assert candidates, a
        best = max(f for f, _ in candidates.values())
        winners = [n for n, (f, _) in candidates.items() if f == best]
        name = str(eq["branch"][i])
        assert name in winners, (a, name, winners, candidates)
        f_eq = eq["free_entropy"][i]
        assert f_eq == best or (np.isposinf(f_eq) and np.isposinf(best)), (a, f_eq, best)
        j = candidates[name][1]
        for key in ("mmse",) + tuple(extra):
            np.testing.assert_array_equal(eq[key][i], branches[name][key][j], err_msg=f"{key} at α = {a}")


def test_equilibrium_takes_an_infinite_free_entropy(tmp_path, capsys):
    """Δ = 0, quadratic activation: the universal branch recovers S exactly at α = γ − γ²/2 = 0.375 and its f is
    +∞ beyond; the equilibrium is that branch there, with f = +∞ and mmse = 0 (not dropped as non-finite)."""
    from replica.workflow.cli import sweep_main

    out = tmp_path / "d0.h5"
    argv = ["--activation", "quadratic", "--gamma", "0.5", "--delta", "0", "--alpha", "0.3,0.38,0.5",
            "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0, capsys.readouterr().err
    data = read_sweep(out)
    uni = data["branches"]["universal"]
    assert np.isfinite(uni["free_entropy"][0]) and np.all(np.isposinf(uni["free_entropy"][1:]))
    assert np.all(np.isposinf(data["equilibrium"]["free_entropy"][1:]))
    np.testing.assert_array_equal(data["equilibrium"]["mmse"][1:], 0.0)
    _assert_equilibrium_recomputed(data)


def test_equilibrium_of_a_sign_channel_is_recomputed_from_its_branches(tmp_path, capsys):
    """Noiseless ±1 labels: the equilibrium changes branch inside the grid and carries the branch's
    classification error and disagreement at every α."""
    from replica.workflow.cli import sweep_main

    out = tmp_path / "sign.h5"
    argv = ["--activation", "tanh2", "--gamma", "0.5", "--channel", "sign", "--alpha", "1,2,3,5,8",
            "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0, capsys.readouterr().err
    data = read_sweep(out)
    assert len(set(str(b) for b in data["equilibrium"]["branch"])) >= 2
    _assert_equilibrium_recomputed(data)


# --------------------------------------------------------------------------- branch points are fixed points
def _assert_branch_points_are_fixed_points(model, data, pack, identities):
    """Every stored point of every branch: F(x) = x to the residual test, each stored field is the field of that
    point (recomputed by ``model.state``), ``converged`` is the residual test, ``exists`` marks the values and a
    start label (``universal`` on the universal branch); ``identities(b, i, α)`` gives the stationarity conditions
    (label, stored, recomputed) written with the stored fields: overlaps = the prior's m(conjugate), tilts, …"""
    checked = 0
    for name, b in data["branches"].items():
        finite = np.isfinite(b["mmse"]) & np.isfinite(b["free_entropy"]) | np.isposinf(b["free_entropy"])
        np.testing.assert_array_equal(b["exists"], finite, err_msg=f"{name}: exists")
        starts = [str(x) for x in b["start"]]
        assert all((s != "") == bool(e) for s, e in zip(starts, b["exists"])), (name, starts)  # "" where absent
        assert name != "universal" or all(s == "universal" for s in starts), starts
        for i, a in enumerate(b["alpha"]):
            if not b["exists"][i]:
                continue
            x = pack(b, i)
            fx = np.asarray(model.update(a, x), dtype=float)
            residual = float(np.max(np.abs(fx - x) / (1e-12 + 1e-10 * np.abs(x))))
            if name != "universal":
                assert b["converged"][i] and residual <= 1.0, (name, a, residual)
                assert b["residual"][i] == pytest.approx(residual, rel=1e-9, abs=1e-12), (name, a)
            else:  # solved by its own closed form / root finding, residual stored as 0: F(x) = x to 1e-7 relative
                assert b["converged"][i] and b["residual"][i] == 0.0 and residual <= 1e3, (name, a, residual)
            for key, val in model.state(a, x).record().items():
                np.testing.assert_allclose(b[key][i], val, rtol=1e-12, atol=1e-15, err_msg=f"{name}/{key} at α = {a}")
            # the stationarity conditions written with the stored numbers and the priors' and channels' own
            # functions (not the code path that produced the record)
            for label, got, expected in identities(b, i, a):
                np.testing.assert_allclose(got, expected, rtol=1e-8, atol=1e-10, err_msg=f"{name}: {label} at α = {a}")
            checked += 1
    assert checked


def test_one_hidden_layer_branch_points_are_fixed_points_with_their_stored_fields(tmp_path, capsys):
    """ReLU with the 4-point readout law (v² ≠ 1, so that a field missing its v² factor shows)."""
    from replica.workflow.cli import sweep_main

    out = tmp_path / "relu4.h5"
    argv = ["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--readout", "4point",
            "--alpha", "1,2,4,8", "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0, capsys.readouterr().err
    data = read_sweep(out)
    assert len(data["branches"]) >= 2
    model = ShallowModel("relu", 0.5, 0.1, readout_law="4point")
    np.testing.assert_array_equal(data["branches"]["universal"]["readout_values"], model.readout_values)
    np.testing.assert_array_equal(data["branches"]["universal"]["readout_weights"], model.readout_weights)
    v, p = model.readout_values, model.readout_weights

    def identities(b, i, a):
        Q, tau, R2_hat = b["overlap_W"][i], b["tau"][i], b["R2_hat"][i]
        return [("Q(v) = m_P(Q̂(v))", Q, model.weight_prior.overlap(b["overlap_W_hat"][i])),
                ("m_S(τ) = E_v[v² Q(v)²]", model.channel.overlap(tau), np.dot(p, v**2 * Q**2)),
                ("R₂ = m_S(τ + R̂₂) + R_d − 1", b["R2"][i], model.channel.overlap(tau + R2_hat) + model.R_d - 1.0),
                ("R̂₂ = α μ₂²/(Δ + mmse)", R2_hat, a * model.mu2**2 / (0.1 + b["mmse"][i]))]

    _assert_branch_points_are_fixed_points(
        model, data, lambda b, i: np.concatenate([b["overlap_W"][i], [b["R2_hat"][i]]]), identities)


def test_deep_branch_points_are_fixed_points_with_their_stored_fields(tmp_path):
    model = DeepModel("tanh2", [1.0, 0.5], 0.1, drop_hermite=(0, 1, 2), unit_variance=True)
    data = _file(tmp_path, sweep(model, [1.0, 2.0, 4.0], progress=False))
    assert len(data["branches"]) >= 2
    def identities(b, i, a):
        return [(f"Q_{ell} = m_P(Q̂_{ell})", b[f"overlap_layer_{ell}"][i],
                 model.weight_priors[ell - 1].overlap(b[f"overlap_hat_layer_{ell}"][i])) for ell in (1, 2)]

    _assert_branch_points_are_fixed_points(
        model, data, lambda b, i: model.pack([b["overlap_layer_1"][i]], b["overlap_layer_2"][i]), identities)


def _deep_linear_pack(model):
    def pack(b, i):
        overlaps = {}
        for ell, m in model.keys:
            tag = f"layer_{ell}" if ell == m else f"product_{ell}_{m}"
            overlaps[(ell, m)] = np.asarray(b[f"overlap_{tag}"][i]).reshape(model.shapes[(ell, m)])
        return model.pack(overlaps)
    return pack


def _points_of_every_start(model, alpha):
    """The point each of the model's starts converges to at ``alpha``, laid out as one-α branch groups of a file
    (the fields of ``state.record()``, which the sweep stores: tests/test_roundtrip.py)."""
    branches = {}
    for name, (overlaps, _) in model.starts().items():
        res = model.solve_from(alpha, overlaps, start=name)
        assert res.converged, name
        rec = res.info["state"].record()
        branches[name] = {**{k: np.asarray([v]) for k, v in rec.items()}, "alpha": np.array([alpha]),
                          "exists": np.array([True]), "converged": np.array([True]),
                          "residual": np.array([res.residual]), "start": np.array([name], dtype=object)}
    return {"branches": branches}


@pytest.mark.parametrize("branches", ["starts", pytest.param("all", marks=pytest.mark.slow)])
def test_deep_linear_branch_points_are_fixed_points_with_their_stored_fields(tmp_path, branches):
    """L = 3 with linear parts: layer and product overlaps, their conjugates, tilts and label averages (the default
    run checks the point of every start at α = 3, where layers and products are learned; ``slow``: every branch of
    a stored sweep, 30 s)."""
    model = DeepLinearModel("tanh2", [0.5, 1.0, 0.5], 0.1, unit_variance=True, s_grid=3)
    if branches == "all":
        data = _file(tmp_path, sweep(model, [1.0, 3.0], progress=False))
        assert len(data["branches"]) >= 3
    else:
        data = _points_of_every_start(model, 3.0)
        assert max(np.max(b["overlap_product_2_1"]) for b in data["branches"].values()) > 0.5
    from hciz.compiled import overlap_of

    def identities(b, i, a):
        out = []
        for ell, m in model.keys:
            if ell == m:
                out.append((f"Q_{ell} = m_P(Q̂_{ell})", b[f"overlap_layer_{ell}"][i],
                            model.weight_priors[ell - 1].overlap(b[f"overlap_hat_layer_{ell}"][i])))
            else:
                tag = f"product_{ell}_{m}"
                got = np.asarray(b[f"overlap_{tag}"][i]).ravel()
                expected = overlap_of(model.channels[(ell, m)],
                                      np.asarray(b[f"tau_{tag}"][i]) + np.asarray(b[f"overlap_hat_{tag}"][i])).ravel()
                out.append((f"Q_{ell}:{m} = m_rect(τ + r)", got, expected))
        return out

    _assert_branch_points_are_fixed_points(model, data, _deep_linear_pack(model), identities)


@pytest.mark.parametrize("branches", ["starts", pytest.param("all", marks=pytest.mark.slow)])
def test_two_layer_branch_points_are_fixed_points_with_their_stored_fields(tmp_path, branches):
    """Two hidden layers with linear parts on a fixed rule in s (8 Gauss–Hermite nodes): Q₁(s), Q₂(v, s), Q₂:₁(v),
    their conjugates, the tilt and the per-neuron maps (the default run checks the point of every start at α = 3;
    ``slow``: every branch of a stored sweep, 20 s)."""
    model = TwoLayerModel("tanh2", (0.5, 0.5), 0.1, s_grid=8)
    if branches == "all":
        data = _file(tmp_path, sweep(model, [1.0, 3.0], progress=False))
        assert len(data["branches"]) >= 3
    else:
        data = _points_of_every_start(model, 3.0)
        assert max(np.max(b["overlap_layer_1"]) for b in data["branches"].values()) > 0.5

    def identities(b, i, a):
        p1, p2 = model.weight_priors
        return [("Q₁(s) = m_P(Q̂₁(s))", b["overlap_layer_1"][i], p1.overlap(b["overlap_hat_layer_1"][i])),
                ("Q₂(v, s) = m_P(Q̂₂(v, s))", b["overlap_layer_2"][i], p2.overlap(b["overlap_hat_layer_2"][i]))]

    _assert_branch_points_are_fixed_points(
        model, data, lambda b, i: model.pack(b["overlap_layer_1"][i], b["overlap_layer_2"][i],
                                             b["overlap_product_2_1"][i]), identities)


# --------------------------------------------------------------------------- equilibrium changes
def test_equilibrium_change_errors_are_the_branches_solved_again_at_the_change(tmp_path):
    """tanh2, γ = 0.5, Δ = 0.1: one crossing universal → specialized. At the stored α of the change the universal
    branch (closed form) and the specialized one (solved again from the nearest stored point after the change)
    have the stored ``mmse_before``/``mmse_after`` and equal free entropies."""
    model = ShallowModel("tanh2", 0.5, 0.1)
    data = _file(tmp_path, sweep(model, [1.0, 1.5, 2.5, 4.0], progress=False))
    ch = data["equilibrium_changes"]
    assert [str(s) for s in ch["kind"]] == ["crossing"]
    assert (str(ch["from_branch"][0]), str(ch["to_branch"][0])) == ("universal", "specialized")
    a_c = float(ch["alpha"][0])
    assert a_c == data["transitions"]["alpha_c"]
    before = model.solve_universal(a_c).info["state"]
    spec = data["branches"]["specialized"]
    j = int(np.flatnonzero(spec["exists"] & (spec["alpha"] > a_c))[0])
    res = model.solve(a_c, spec["overlap_W"][j], spec["R2_hat"][j])
    assert res.converged
    after = res.info["state"]
    assert after.overlap_W.min() > 0.5  # the specialized branch, not the universal one
    assert ch["mmse_before"][0] == pytest.approx(before.mmse, rel=1e-10)
    assert ch["mmse_after"][0] == pytest.approx(after.mmse, rel=1e-6)
    assert after.free_entropy == pytest.approx(before.free_entropy, abs=1e-9)


# --------------------------------------------------------------------------- phase diagrams
def test_phase_diagram_transition_lines_and_columns_are_recomputed(tmp_path):
    """One hidden layer, α × Δ: each stored α_c is the crossing of the universal and specialized free entropies of
    a model built at that line's Δ; α_sp < α_c; the universal column is the closed-form universal solve; the
    equilibrium columns are those of the named branch, which exists there."""
    from replica.workflow.io import read_phase_diagram, write_phase_diagram
    from replica.workflow.phase_diagram import assemble, solve_line

    alphas = [1.0, 2.0, 3.0, 5.0]
    base = dict(layers=1, gamma=[0.5], activation="tanh2", drop_hermite=[], unit_variance=False, prior="gaussian",
                readout="ones", readout_grid=None, branches="all", damping=0.5)
    deltas = np.array([0.05, 0.2])
    lines = {j: solve_line(dict(base, delta=float(d)), alphas) for j, d in enumerate(deltas)}
    data = read_phase_diagram(write_phase_diagram(tmp_path / "ph.h5", assemble("delta", deltas, alphas, lines),
                                                  base, parameter="delta", complete=True))
    assert data["done"].all()
    for j, delta in enumerate(data["delta"]):
        model = ShallowModel("tanh2", 0.5, float(delta))
        a_c, a_sp = float(data["alpha_c"][j]), float(data["alpha_sp"][j])
        assert alphas[0] < a_sp < a_c < alphas[-1], (delta, a_sp, a_c)
        uni = model.solve_universal(a_c).info["state"]
        res = model.solve(a_c, np.full(model.n_readout, 0.99))
        assert res.converged and res.info["state"].overlap_W.min() > 0.5
        assert res.info["state"].free_entropy == pytest.approx(uni.free_entropy, abs=1e-9), delta
        for i, a in enumerate(data["alpha"]):
            assert data["mmse_universal"][j, i] == pytest.approx(model.solve_universal(a).info["state"].mmse,
                                                                 rel=1e-12)
            name = str(data["branch"][j, i])
            assert data[f"exists_{name}"][j, i]
            assert data["mmse"][j, i] == data[f"mmse_{name}"][j, i]
            assert name == ("specialized" if a > a_c else "universal"), (delta, a, name)


# --------------------------------------------------------------------------- the API refuses what the command line refuses
def _sweep_cli(argv):
    from replica.workflow.cli import sweep_main

    return sweep_main(argv)


def _channel(name, **kw):
    from priors.output_channels import get_output_channel

    return get_output_channel(name, **kw)


def _sign():
    from priors.output_channels import sign_channel

    return sign_channel()


def _logistic():
    from priors.output_channels import LogisticChannel

    return LogisticChannel(1.0)


def _sgd_config(**kw):
    from replica.simulations.sgd import SGDConfig

    return SGDConfig(activation="elu", **kw)


def _experiment_config(**kw):
    from replica.simulations.experiment import ExperimentConfig

    return ExperimentConfig(**{"activation": "relu", "gamma": (0.5,), "alpha": (1.0,), **kw})


def _spectrum(*args, **kw):
    from replica.workflow.spectrum import spectrum

    return spectrum(*args, **kw)


def _line(**kw):
    from replica.workflow.phase_diagram import solve_line

    base = dict(layers=1, gamma=[0.5], activation="relu", drop_hermite=[], unit_variance=False, prior="gaussian",
                readout="ones", readout_grid=None, delta=0.1, branches="universal", damping=0.5)
    return solve_line({**base, **kw}, [1.0])


def _cli(command):
    from commands import experiment_main, sgd_main, spectrum_main

    return {"sweep": _sweep_cli, "sgd": sgd_main, "experiment": experiment_main, "spectrum": spectrum_main}[command]


# (command, arguments it refuses, the same input through the Python API)
REFUSED = {
    "sweep-negative-delta": ("sweep", ["--delta", "-0.1"], lambda: ShallowModel("relu", 0.5, -0.1)),
    "sweep-zero-gamma": ("sweep", ["--gamma", "0"], lambda: ShallowModel("relu", 0.0, 0.1)),
    "sweep-zero-alpha": ("sweep", ["--alpha", "0,1"], lambda: sweep(ShallowModel("relu", 0.5, 0.1), [0.0, 1.0],
                                                                     progress=False)),
    "sweep-repeated-alpha": ("sweep", ["--alpha", "1,1"], lambda: sweep(ShallowModel("relu", 0.5, 0.1), [1.0, 1.0],
                                                                         progress=False)),
    "sweep-deep-zero-gamma": ("sweep", ["--layers", "2", "--gamma", "1,0", "--activation", "tanh2", "--drop-hermite",
                                        "0,1,2", "--unit-variance"],
                              lambda: DeepModel("tanh2", [1.0, 0.0], 0.1, drop_hermite=(0, 1, 2), unit_variance=True)),
    "sweep-unknown-prior": ("sweep", ["--prior", "laplace"], lambda: ShallowModel("relu", 0.5, 0.1,
                                                                                   weight_prior="laplace")),
    "sweep-unknown-readout": ("sweep", ["--readout", "bogus"], lambda: ShallowModel("relu", 0.5, 0.1,
                                                                                     readout_law="bogus")),
    "phase-diagram-negative-delta": ("sweep", ["--delta", "-1"], lambda: _line(delta=-1.0)),
    # output channels: a noiseless sign with label noise, a logistic with a noise variance, options of other channels
    "sign-with-delta-model": ("sweep", ["--channel", "sign", "--delta", "0.1"],
                              lambda: ShallowModel("tanh2", 0.5, 0.1, output_channel=_sign())),
    "sign-with-delta-channel": ("sweep", ["--channel", "sign", "--delta", "0.1"], lambda: _channel("sign", delta=0.1)),
    "logistic-with-delta-model": ("sweep", ["--channel", "logistic", "--delta", "0.1"],
                                  lambda: ShallowModel("tanh2", 0.5, 0.1, output_channel=_logistic())),
    "logistic-with-delta-channel": ("sweep", ["--channel", "logistic", "--delta", "0.1"],
                                    lambda: _channel("logistic", delta=0.1)),
    "temperature-without-logistic": ("sweep", ["--channel", "probit", "--temperature", "2"],
                                     lambda: _channel("probit", delta=0.1, temperature=2.0)),
    "threshold-with-gaussian": ("sweep", ["--channel-threshold", "0.5"], lambda: _channel("gaussian", threshold=0.5)),
    "threshold-with-logistic": ("sweep", ["--channel", "logistic", "--channel-threshold", "0.5"],
                                lambda: _channel("logistic", threshold=0.5)),
    # SGD (learning rate 0 is the API's documented control run, tests/test_sgd.py)
    "sgd-zero-dim": ("sgd", ["--dim", "0"], lambda: _sgd_config(dim=0)),
    "sgd-negative-delta": ("sgd", ["--delta", "-1"], lambda: _sgd_config(delta=-1.0)),
    "sgd-threshold-one": ("sgd", ["--threshold", "1"], lambda: _sgd_config(threshold=1.0)),
    "sgd-one-bin": ("sgd", ["--bins", "1"], lambda: _sgd_config(bins=1)),
    "sgd-zero-time": ("sgd", ["--time", "0"], lambda: _sgd_config(time=0.0)),
    "sgd-zero-batch": ("sgd", ["--batch", "0"], lambda: _sgd_config(batch=0)),
    "sgd-zero-init-scale": ("sgd", ["--init-scale", "0"], lambda: _sgd_config(init_scale=0.0)),
    "sgd-record-log0": ("sgd", ["--record-every", "log:0"], lambda: _sgd_config(record="log:0")),
    "sgd-infinite-lr": ("sgd", ["--lr", "inf"], lambda: _sgd_config(lr=math.inf)),
    # experiments
    "experiment-noiseless-posterior": ("experiment", ["--delta", "0"], lambda: _experiment_config(delta=0.0)),
    "experiment-dim-1": ("experiment", ["--dim", "1"], lambda: _experiment_config(dim=1)),
    "experiment-zero-alpha": ("experiment", ["--alpha", "0"], lambda: _experiment_config(alpha=(0.0,))),
    "experiment-zero-teachers": ("experiment", ["--teachers", "0"], lambda: _experiment_config(teachers=0)),
    "experiment-metropolis-gaussian": ("experiment", ["--sampler", "metropolis", "--prior", "gaussian"],
                                       lambda: _experiment_config(sampler="metropolis", prior="gaussian")),
    "experiment-hmc-rademacher": ("experiment", ["--sampler", "hmc", "--prior", "rademacher"],
                                  lambda: _experiment_config(sampler="hmc", prior="rademacher")),
    "experiment-gamp-two-layers": ("experiment", ["--sampler", "gamp-rie", "--layers", "2", "--gamma", "0.5,0.5"],
                                   lambda: _experiment_config(sampler="gamp-rie", layers=2, gamma=(0.5, 0.5),
                                                              init=("uninformed",))),
    # spectra
    "spectrum-zero-gamma": ("spectrum", ["--gamma", "0"], lambda: _spectrum(0.0, "ones", [1.0])),
    "spectrum-negative-lambda": ("spectrum", ["--lambda", "-1,1"], lambda: _spectrum(0.5, "ones", [-1.0, 1.0])),
    "spectrum-density-grid-1": ("spectrum", ["--density-grid", "1"], lambda: _spectrum(0.5, "ones", [1.0],
                                                                                        density_grid=1)),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_api_refuses_what_the_command_line_refuses(tmp_path, capsys, case):
    """The command refuses the input with exit status 2 and one line; the API raises ValueError (UsageError from the
    option layer of phase-diagram lines) instead of computing something."""
    from commands import one_line

    from replica.workflow.config import UsageError

    command, argv, api = REFUSED[case]
    out = tmp_path / "never.h5"
    assert _cli(command)(argv + ["--quiet", "-o", str(out)]) == 2, case
    one_line(capsys.readouterr().err)
    assert not out.exists()
    with pytest.raises((ValueError, UsageError)):
        api()


# --------------------------------------------------------------------------- SGD runs, closure, reference levels
def _elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


@pytest.fixture(scope="module")
def sgd_run(tmp_path_factory):
    """``replica-sgd`` (ELU, d = 16, k = 8) with a spy on the measurement that keeps every student W it measured,
    then ``--closure`` on the file and the replica reference levels (API, in-process)."""
    from replica.simulations import sgd
    from replica.workflow import sgd_cli
    from replica.workflow.sgd_results import read_sgd, store_reference_levels

    seen = []
    original = sgd.overlap_statistics

    def spy(weights, teacher_weights, readout, **kw):
        seen.append((weights.copy(), teacher_weights.copy(), readout.copy(), kw))
        return original(weights, teacher_weights, readout, **kw)

    out = tmp_path_factory.mktemp("sgd") / "sgd.h5"
    mp = pytest.MonkeyPatch()
    mp.setattr(sgd, "overlap_statistics", spy)
    try:
        argv = ["--activation", "elu", "--dim", "16", "--gamma", "0.5", "--delta", "0.2", "--time", "4", "--lr", "0.5",
                "--record-every", "log:3", "--n-test", "20000", "--bins", "40", "--threshold", "0.6", "--seed", "5",
                "--quiet", "-o", str(out)]
        assert sgd_cli.main(argv) == 0
    finally:
        mp.undo()
    assert sgd_cli.main(["--closure", str(out), "--quiet"]) == 0
    store_reference_levels(out, num=4, timeout=None, bayes=True)
    with h5py.File(out) as h5:
        stored = {name: h5[name][()] for name in h5 if isinstance(h5[name], h5py.Dataset)}
        closure = {name: h5["closure"][name][()] for name in h5["closure"]}
    return {"data": stored, "closure": closure, "seen": seen, "parameters": read_sgd(out)["parameters"]}


def test_sgd_time_axes_obey_their_definitions(sgd_run):
    """n is a whole number of batches, t = n/(kd), α = n/d² = (k/d) t; histograms are taken at the record times."""
    data, p = sgd_run["data"], sgd_run["parameters"]
    d, k, batch = p["dim"], p["width"], p["batch"]
    assert (d, k) == (16, 8)
    n = data["samples"]
    assert n[0] == 0 and np.all(np.diff(n) > 0) and np.all(n % batch == 0)
    np.testing.assert_allclose(data["time"], n / (k * d), rtol=1e-15)
    np.testing.assert_allclose(data["alpha"], n / d**2, rtol=1e-15)
    np.testing.assert_array_equal(data["histogram_times"], data["time"])
    np.testing.assert_allclose(data["overlap_bin_edges"], np.linspace(-1, 1, 41), rtol=0, atol=1e-15)
    assert len(sgd_run["seen"]) == n.size


def test_sgd_measurements_are_recomputed_from_the_measured_students(sgd_run):
    """Every per-record measurement recomputed from the student W that was measured (captured), with independent
    formulas: cosines and their matching, histograms, specialized and positive fractions, |w|²/d, the cosine of
    Wᵀv and of the traceless S = Wᵀdiag(v)W (explicit d × d matrices, not the Gram-matrix shortcut), and the
    test error on fresh inputs (20 000 points, 6 % relative: the stored one uses its own 20 000)."""
    data, seen, p = sgd_run["data"], sgd_run["seen"], sgd_run["parameters"]
    d, k, thr = p["dim"], p["width"], p["threshold"]
    rng = np.random.default_rng(2024)
    x = rng.standard_normal((20000, d))
    np.testing.assert_array_equal(data["readout"], seen[0][2])
    assert np.all(data["readout"] == 1.0)  # --readout ones
    for r, (w, w0, v, _) in enumerate(seen):
        cos = (w @ w0.T) / np.outer(np.linalg.norm(w, axis=1), np.linalg.norm(w0, axis=1))
        best = np.argmax(np.abs(cos), axis=1)
        matched = cos[np.arange(k), best]
        np.testing.assert_array_equal(data["matched_teacher"][r], best)
        np.testing.assert_allclose(data["matched_overlap"][r], matched, rtol=1e-12, atol=1e-14)
        spec = np.abs(matched) > thr
        assert data["specialized_fraction"][r] == np.mean(spec)
        if spec.any():
            assert data["match_sign_positive_fraction"][r] == np.mean(matched[spec] > 0)
        else:
            assert np.isnan(data["match_sign_positive_fraction"][r])
        hist, _ = np.histogram(cos.ravel(), bins=np.linspace(-1, 1, 41))
        np.testing.assert_array_equal(data["overlap_histograms"][r], hist)
        assert data["student_norm"][r] == pytest.approx(np.mean(np.sum(w**2, axis=1)) / d, rel=1e-12)
        b, b0 = w.T @ v, w0.T @ v
        assert data["linear_overlap"][r] == pytest.approx(b @ b0 / (np.linalg.norm(b) * np.linalg.norm(b0)), rel=1e-10)
        s, s0 = w.T @ np.diag(v) @ w, w0.T @ np.diag(v) @ w0
        s, s0 = s - np.trace(s) / d * np.eye(d), s0 - np.trace(s0) / d * np.eye(d)
        assert data["quadratic_overlap"][r] == pytest.approx(np.sum(s * s0) / (np.linalg.norm(s) * np.linalg.norm(s0)),
                                                             rel=1e-9, abs=1e-12)
        lam = _elu(x @ w.T / math.sqrt(d)) @ v / math.sqrt(k)
        lam0 = _elu(x @ w0.T / math.sqrt(d)) @ v / math.sqrt(k)
        assert data["test_error"][r] == pytest.approx(np.mean((lam - lam0) ** 2), rel=0.06), r
    np.testing.assert_allclose(data["final_overlap_matrix"], cos, rtol=1e-12, atol=1e-14)
    assert np.isnan(data["train_error"][0]) and np.all(np.isfinite(data["train_error"][1:]))


def test_train_error_of_a_frozen_student_is_its_test_error_plus_delta():
    """With η = 0 (the API's control run) the student is fixed, so the train error of a record, the mean e² over the
    fresh noisy samples since the previous one, estimates E_x(λ − λ⁰)² + Δ: the test error plus the label noise
    (last window: 5 120 samples, 12 % relative)."""
    from replica.simulations.sgd import SGDConfig, run_sgd

    res = run_sgd(SGDConfig(activation="elu", dim=16, gamma=0.5, delta=0.3, lr=0.0, batch=8, time=80.0, record="40",
                            n_test=20000, seed=3))
    window = np.diff(res.samples)[-1]
    assert window >= 4000
    np.testing.assert_array_equal(res.test_error, res.test_error[0])  # the student did not move
    assert res.train_error[-1] == pytest.approx(res.test_error[-1] + 0.3, rel=0.12)


def test_closure_group_is_on_the_run_grid_and_its_noise_is_error_plus_delta(sgd_run):
    """closure/time is the run's time axis; closure/noise = ε + Δ (the SGD noise); the errors are non-negative
    parts (linear, quadratic, constant mode) that add up to no more than the test error plus a Gaussian bulk."""
    data, c, p = sgd_run["data"], sgd_run["closure"], sgd_run["parameters"]
    np.testing.assert_array_equal(c["time"], data["time"][: c["time"].size])
    assert c["time"].size == data["time"].size
    np.testing.assert_allclose(c["noise"], c["test_error"] + p["delta"], rtol=1e-14)
    for key in ("linear_error", "quadratic_error", "constant_error", "bulk_width", "student_norm"):
        assert np.all(c[key] >= 0.0), key
    assert np.all(c["linear_error"] + c["quadratic_error"] + c["constant_error"] <= c["test_error"] * (1 + 1e-12))
    assert np.all(np.abs(c["linear_overlap"]) <= 1.0) and np.all(np.abs(c["quadratic_overlap"]) <= 1.0 + 1e-12)


def test_reference_levels_are_the_replica_solutions_at_their_alpha(sgd_run):
    """reference_alpha: log-spaced from max((k/d) t₁, 0.01) to (k/d) t_max; reference_universal_mmse: the universal
    branch of the run's model solved again; reference_bayes_mmse: the equilibrium of a sweep on that grid."""
    data, p = sgd_run["data"], sgd_run["parameters"]
    ratio = p["width"] / p["dim"]
    t = data["time"][data["time"] > 0]
    lo, hi = max(t[0] * ratio, 1e-2), t[-1] * ratio
    np.testing.assert_allclose(data["reference_alpha"], np.geomspace(lo, hi, 4), rtol=1e-12)
    model = ShallowModel("elu", p["gamma"], p["delta"])
    for a, m in zip(data["reference_alpha"], data["reference_universal_mmse"]):
        assert m == pytest.approx(model.solve_universal(a).info["state"].mmse, rel=1e-10), a
    eq = sweep(model, data["reference_alpha"], progress=False).equilibrium["mmse"]
    np.testing.assert_allclose(data["reference_bayes_mmse"], eq, rtol=1e-8)


# --------------------------------------------------------------------------- experiments
def _mean_sem(values, keep):
    """Mean and standard error over the kept teachers (axis 1), written out here: ``std(ddof=1)/√n``."""
    n_alpha = values.shape[0]
    mean = np.full((n_alpha,) + values.shape[2:], np.nan)
    sem = np.full_like(mean, np.nan)
    for a in range(n_alpha):
        kept = values[a][keep[a]]
        if kept.shape[0]:
            mean[a] = kept.mean(axis=0)
        if kept.shape[0] >= 2:
            sem[a] = kept.std(axis=0, ddof=1) / math.sqrt(kept.shape[0])
    return mean, sem


@pytest.fixture(scope="module")
def experiment_file(tmp_path_factory):
    from optional import require

    require("jax", extra="experiments")
    require("blackjax", extra="experiments")
    from commands import experiment_main

    out = tmp_path_factory.mktemp("exp") / "e.h5"
    argv = ["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--alpha", "0.5,1.5", "--dim", "8",
            "--teachers", "3", "--sampler", "hmc", "--steps", "30", "--kept", "5", "--n-test", "400", "--seed", "1",
            "--quiet", "-o", str(out)]
    assert experiment_main(argv) == 0
    with h5py.File(out) as h5:
        return {init: {k: g[k][()] for k in g} for init, g in h5["experiments/hmc"].items()}


def test_experiment_averages_and_axes_are_recomputed_from_the_per_teacher_values(experiment_file):
    """Every ``*_mean``/``*_sem`` from its per-teacher dataset over the chains kept (``excluded`` = error not finite,
    ``chains_used`` their number); the Nishimori teacher side is the teacher average itself; n = round(α d²),
    k = round(γ d); histograms are densities on their edges; the posterior-mean error is at most the Gibbs error
    2·mmse (Jensen, chain by chain)."""
    assert set(experiment_file) == {"informed", "uninformed"}
    per_teacher = {"mmse": "mmse", "overlap": "overlap", "r2": "r2", "unbiased_overlap": "unbiased_overlap",
                   "nishimori_replica_error": "nishimori_replica_error",
                   "nishimori_replica_overlap": "nishimori_replica_overlap",
                   "nishimori_replica_r2": "nishimori_replica_r2"}
    for init, g in experiment_file.items():
        np.testing.assert_array_equal(g["alpha"], [0.5, 1.5])
        np.testing.assert_array_equal(g["num_samples"], [32, 96])
        np.testing.assert_array_equal(g["widths"], [4])
        excluded = ~np.isfinite(g["mmse"])
        np.testing.assert_array_equal(g["excluded"], excluded.astype(np.int8))
        keep = ~excluded
        np.testing.assert_array_equal(g["chains_used"], keep.sum(axis=1))
        assert g["mmse"].shape == (2, 3)
        for base, name in per_teacher.items():
            mean, sem = _mean_sem(np.asarray(g[name], float), keep)
            np.testing.assert_allclose(g[f"{base}_mean"], mean, rtol=1e-12, equal_nan=True, err_msg=f"{init} {base}")
            np.testing.assert_allclose(g[f"{base}_sem"], sem, rtol=1e-10, equal_nan=True, err_msg=f"{init} {base}")
        for side, base in (("error", "mmse"), ("overlap", "overlap"), ("r2", "r2")):
            np.testing.assert_array_equal(g[f"nishimori_teacher_{side}_mean"], g[f"{base}_mean"])
        np.testing.assert_array_equal(g["nishimori_teacher_error_sem"], g["mmse_sem"])
        assert np.all(g["posterior_mean_error_mean"] <= 2.0 * g["mmse_mean"] * (1 + 1e-12))
        edges = g["overlap_bin_edges"]
        assert edges[0] == -edges[-1] and np.all(np.diff(edges) > 0)
        for hist in ("overlap_histogram", "overlap_matrix_histogram"):
            np.testing.assert_allclose(np.sum(g[hist] * np.diff(edges), axis=-1), 1.0, rtol=1e-12)
        np.testing.assert_allclose(g["neuron_quantile_edges"], np.linspace(0, 1, g["neuron_quantile_edges"].size))
        assert g["trace_error"].shape == (2, 3, g["trace_steps"].size)
        assert np.all(np.diff(g["trace_steps"]) > 0)
        assert np.all((g["acceptance_rate"] >= 0) & (g["acceptance_rate"] <= 1))


def test_phase_diagram_instability_line_is_the_linear_criterion(tmp_path):
    """ReLU, γ = 0.5 (v ≡ 1): the universal branch Q ≡ 0 loses stability where m_P'(0) m_S(R̂₂(α)) = γ (docs/theory.md
    §5.4, m_P'(0) = 1 for Gaussian weights); the stored α_instability of every Δ line is that root, found here with
    the closed-form universal R̂₂ and the spectral channel's m_S."""
    from scipy.optimize import brentq

    from replica.workflow.io import read_phase_diagram, write_phase_diagram
    from replica.workflow.phase_diagram import assemble, solve_line

    alphas = [0.3, 1.0, 2.0]
    base = dict(layers=1, gamma=[0.5], activation="relu", drop_hermite=[], unit_variance=False, prior="gaussian",
                readout="ones", readout_grid=None, branches="all", damping=0.5)
    deltas = np.array([0.1, 0.4])
    lines = {j: solve_line(dict(base, delta=float(d)), alphas) for j, d in enumerate(deltas)}
    data = read_phase_diagram(write_phase_diagram(tmp_path / "ph.h5", assemble("delta", deltas, alphas, lines),
                                                  base, parameter="delta", complete=True))
    for j, delta in enumerate(data["delta"]):
        model = ShallowModel("relu", 0.5, float(delta))
        ch = model.channel
        root = brentq(lambda a: ch.overlap(model.solve_universal(a).x[-1]) / ch.overlap_derivative(0.0) - 0.5,
                      0.05, 2.0, xtol=1e-14)
        assert data["alpha_instability"][j] == pytest.approx(root, rel=1e-8), delta
    assert data["alpha_instability"][1] > data["alpha_instability"][0]  # more noise, more data
