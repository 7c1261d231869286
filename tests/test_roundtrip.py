"""Every stored number equals the in-memory number it came from, for every output kind.

For each kind of file (sweep of one hidden layer, deep sweep, two-layer sweep, phase diagram,
spectrum, experiment, SGD run) the result is computed in memory, written, read back, and
*every* dataset is compared with its source (same set of names, same values, NaN where NaN).
Files written by the commands are compared with the same computation done through the API.

The equilibrium group is checked against the named branch's own values at every α: its
``mmse`` and ``free_entropy`` are those of the branch ``branch`` names, which has the largest
free entropy among the branches that exist there; the grids are chosen so that the
equilibrium changes branch inside them (a check that only sees one branch cannot tell them
apart).
"""

import math

import numpy as np
import pytest

from replica.branches import sweep
from replica.models.deep import DeepModel
from replica.workflow.io import read_experiments, read_phase_diagram, read_sweep, write_phase_diagram, write_sweep
from replica.models.shallow import ShallowModel


# --------------------------------------------------------------------------- comparison helpers
def assert_same(got, expected, where):
    """Equal arrays (exactly; NaN equals NaN; strings compared as text)."""
    got, expected = np.asarray(got), np.asarray(expected)
    assert got.shape == expected.shape, (where, got.shape, expected.shape)
    if expected.dtype == object or expected.dtype.kind in "US" or got.dtype == object:
        assert [str(v) for v in got.ravel()] == [str(v) for v in expected.ravel()], where
    else:
        np.testing.assert_array_equal(got, expected, err_msg=where)


def assert_sweep_file_matches(data, result, *, grids=None):
    """A read sweep file against the :class:`SweepResult` it was written from."""
    assert set(data["branches"]) == set(result.branches)
    for name, b in result.branches.items():
        stored = data["branches"][name]
        expected = {**b.fields, "alpha": b.alpha, "readout_values": result.readout_values,
                    "readout_weights": result.readout_weights, **(grids or {})}
        assert set(stored) == set(expected), (name, set(stored) ^ set(expected))
        for key, val in expected.items():
            assert_same(stored[key], val, f"branches/{name}/{key}")
    assert set(data["equilibrium"]) == set(result.equilibrium)
    for key, val in result.equilibrium.items():
        assert_same(data["equilibrium"][key], val, f"equilibrium/{key}")
    transitions = dict(result.transitions)
    assert set(data["transitions"]) == set(transitions)
    for key, val in transitions.items():
        assert_same(data["transitions"][key], float(val), f"transitions/{key}")
    assert set(data["branch_transitions"]) == set(result.branch_transitions)
    for name, per in result.branch_transitions.items():
        assert set(data["branch_transitions"][name]) == set(per)
        for key, val in per.items():
            assert_same(data["branch_transitions"][name][key], float(val), f"transitions/{name}/{key}")
    # every change of the equilibrium, in α order, with the branches and errors on both sides
    changes = data["equilibrium_changes"]
    columns = {"alpha": "alpha", "from_branch": "from", "to_branch": "to", "mmse_before": "mmse_before",
               "mmse_after": "mmse_after", "kind": "kind"}
    assert set(changes) == set(columns)
    for name, key in columns.items():
        expected = [c.get(key, math.nan if name in ("alpha", "mmse_before", "mmse_after") else "")
                    for c in result.equilibrium_changes]
        if name in ("alpha", "mmse_before", "mmse_after"):
            expected = np.asarray(expected, dtype=float)
        assert_same(changes[name], expected, f"equilibrium_changes/{name}")
    # branch attributes (where each curve starts and ends, and how)
    for name, b in result.branches.items():
        for key, val in (b.attributes() if hasattr(b, "attributes") else {}).items():
            assert_same(data["branch_attributes"][name][key], val, f"branches/{name}.attrs[{key}]")


def assert_equilibrium_is_the_named_branch(data):
    """At every α the equilibrium values are those of the branch it names, the one of largest f."""
    eq, branches = data["equilibrium"], data["branches"]
    names = [str(s) for s in eq["branch"]]
    assert len(set(names)) >= 2, f"the grid must cross a change of equilibrium, got {set(names)}"
    for i, name in enumerate(names):
        b = branches[name]
        assert b["exists"][i] and b["converged"][i], (i, name)
        assert eq["mmse"][i] == b["mmse"][i], (i, name, eq["mmse"][i], b["mmse"][i])
        assert eq["free_entropy"][i] == b["free_entropy"][i], (i, name)
        assert eq["alpha"][i] == b["alpha"][i]
        for other, ob in branches.items():
            if ob["exists"][i] and ob["converged"][i]:
                assert ob["free_entropy"][i] <= eq["free_entropy"][i], (i, name, other)


# --------------------------------------------------------------------------- sweeps
SHALLOW_ALPHAS = np.array([1.0, 1.7, 3.5, 8.0])  # tanh2, γ = 0.5, Δ = 0.1: α_sp = 1.62, α_c = 1.76


@pytest.fixture(scope="module")
def shallow_result():
    return sweep(ShallowModel("tanh2", 0.5, 0.1), SHALLOW_ALPHAS, progress=False)


def test_shallow_sweep_roundtrip(tmp_path, shallow_result):
    path = write_sweep(tmp_path / "s.h5", shallow_result, {"delta": 0.1})
    data = read_sweep(path)
    assert_sweep_file_matches(data, shallow_result)
    assert_equilibrium_is_the_named_branch(data)
    assert data["parameters"] == {"delta": 0.1}


def test_replica_sweep_writes_what_the_solver_computes(tmp_path, shallow_result):
    from replica.workflow.cli import sweep_main

    out = tmp_path / "cli.h5"
    argv = ["--activation", "tanh2", "--gamma", "0.5", "--delta", "0.1",
            "--alpha", ",".join(str(float(a)) for a in SHALLOW_ALPHAS), "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0
    data = read_sweep(out)
    assert_sweep_file_matches(data, shallow_result)
    assert_equilibrium_is_the_named_branch(data)


DEEP_ALPHAS = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])


def test_deep_sweep_roundtrip(tmp_path):
    # four readout values (distinct values and weights, overlaps per readout value)
    model = DeepModel("tanh2", [1.0, 1.0], 0.1, drop_hermite=(0, 1, 2), unit_variance=True, readout_law="4point")
    result = sweep(model, DEEP_ALPHAS, progress=False)
    assert result.readout_values.size == 4
    data = read_sweep(write_sweep(tmp_path / "d.h5", result, {"layers": 2}))
    assert_sweep_file_matches(data, result)
    assert_equilibrium_is_the_named_branch(data)
    assert "overlap_layer_2" in data["branches"]["specialized"]


def test_two_layer_sweep_roundtrip_through_the_command_line(tmp_path):
    from replica.workflow.cli import sweep_main
    from replica.models.two_layer import TwoLayerModel

    alphas = np.array([3.0, 7.0])  # equilibrium layer_1 at α = 3, layers_1_2 at α = 7
    out = tmp_path / "two.h5"
    argv = ["--layers", "2", "--gamma", "0.7,1.3", "--activation", "tanh2,erf", "--unit-variance",
            "--s-grid", "3", "--delta", "0.1", "--alpha", "3,7", "--quiet", "-o", str(out)]
    assert sweep_main(argv) == 0
    model = TwoLayerModel(("tanh2", "erf"), (0.7, 1.3), 0.1, s_grid=3)
    result = sweep(model, alphas, progress=False, solve_kw={"damping": 0.5})
    # ... and the per-point discretization error of the s grid (dataset discretization_error)
    from replica.workflow.run import discretization_errors

    result.branches = discretization_errors(model, result, {"damping": 0.5})
    assert "discretization_error" in result.branches["layers_1_2"].fields
    data = read_sweep(out)
    assert_sweep_file_matches(data, result, grids=model.grids)
    assert_equilibrium_is_the_named_branch(data)


# --------------------------------------------------------------------------- phase diagram
def test_phase_diagram_roundtrip(tmp_path):
    from replica.workflow.phase_diagram import assemble, solve_line

    alphas = [2.0, 3.0, 4.0, 5.0, 6.0]
    base = dict(layers=2, gamma=[1.0, 1.0], activation="tanh2", drop_hermite=[0, 1, 2], unit_variance=True,
                prior="gaussian", readout="ones", readout_grid=None, branches="all", damping=0.5)
    deltas = np.array([0.05, 0.3])
    lines = {j: solve_line(dict(base, delta=float(d)), alphas) for j, d in enumerate(deltas)}
    data = assemble("delta", deltas, alphas, lines)
    # the assembled grid holds each line's own numbers
    for j, ln in lines.items():
        for key in ("mmse", "free_entropy", "branch"):
            assert_same(data[key][j], ln[key], f"{key}[{j}]")
        for key in ("alpha_sp", "alpha_c"):
            assert_same(data[key][j], ln[key], f"{key}[{j}]")
        for b, rec in ln["branches"].items():
            assert_same(data[f"mmse_{b}"][j], rec["mmse"], f"mmse_{b}[{j}]")
            assert_same(data[f"exists_{b}"][j], rec["exists"], f"exists_{b}[{j}]")
    # ... and its equilibrium is the named branch's value
    names = {str(b) for b in data["branch"].ravel()}
    assert len(names) >= 2
    for (j, i), name in np.ndenumerate(data["branch"]):
        assert data["mmse"][j, i] == data[f"mmse_{name}"][j, i], (j, i, name)
    path = write_phase_diagram(tmp_path / "ph.h5", data, base, parameter="delta", complete=True)
    back = read_phase_diagram(path)
    assert set(back) - {"parameter", "parameters", "configuration", "complete"} == set(data)
    for key, val in data.items():
        assert_same(back[key], val, key)
    assert back["parameter"] == "delta" and back["complete"] is True


# --------------------------------------------------------------------------- spectrum
def test_spectrum_roundtrip_and_command_line(tmp_path):
    from replica.workflow.spectrum import main, read_spectrum, spectrum, write_spectrum

    lambdas = np.array([0.0, 0.5, 2.0, 9.0])
    res = spectrum(0.5, "4point", lambdas, density_grid=40)
    back = read_spectrum(write_spectrum(tmp_path / "s.h5", res, {"gamma": 0.5}))
    expected = {"lambda": res.lambdas, "m": res.overlap, "mmse": res.mmse, "iota": res.mutual_information,
                "x": res.x, "density": res.density,
                "node": 0.5 * (1 - np.cos(np.pi * np.arange(40) / 39))}   # scale of the density columns
    assert set(back) - {"attrs"} == set(expected)
    for key, val in expected.items():
        assert_same(back[key], val, key)
    out = tmp_path / "cli.h5"
    assert main(["--gamma", "0.5", "--readout", "4point", "--lambda", "0,0.5,2,9", "--density-grid", "40",
                 "--quiet", "-o", str(out)]) == 0
    cli = read_spectrum(out)
    for key, val in expected.items():
        assert_same(cli[key], val, f"replica-spectrum {key}")


# --------------------------------------------------------------------------- experiments
def test_experiment_roundtrip(tmp_path):
    from optional import require

    require("jax", extra="experiments")
    require("blackjax", extra="experiments")
    from replica.simulations.experiment import ExperimentConfig, run_experiment
    from replica.workflow.experiment_io import read_experiment, write_experiment

    config = ExperimentConfig(activation="relu", gamma=(0.5,), delta=0.1, alpha=(1.0, 2.0), dim=8, teachers=2,
                              sampler="hmc", init=("informed", "uninformed"), steps=40, num_kept=5, n_test=500,
                              seed=0)
    results = run_experiment(config)
    path = write_experiment(tmp_path / "e.h5", config, results)
    back = read_experiment(path)
    plotted = read_experiments(path)  # the reader replica-plot uses
    assert set(back["groups"]) == {("hmc", init) for init in results}
    for init, res in results.items():
        expected = {**res.datasets, "alpha": res.alpha, "num_samples": res.num_samples}
        for stored in (back["groups"][("hmc", init)], plotted[("hmc", init)]):
            assert set(stored) == set(expected)
            for key, val in expected.items():
                assert_same(stored[key], val, f"{init}/{key}")
    assert back["parameters"]["alpha"] == [1.0, 2.0] and back["parameters"]["dim"] == 8


# --------------------------------------------------------------------------- SGD
def test_sgd_roundtrip(tmp_path):
    from replica.simulations import sgd
    from replica.workflow import sgd_results

    result = sgd.run_sgd(sgd.SGDConfig(activation="elu", dim=16, lr=0.3, batch=2, time=1.0, record="log:3",
                                       seed=3, n_test=300))
    sgd_results.write_sgd(result, tmp_path / "r.h5")
    back = sgd_results.read_sgd(tmp_path / "r.h5")
    for name in sgd_results._DATASETS:
        assert_same(back[name], getattr(result, name), name)
    assert back["parameters"] == result.config.to_dict()
    assert back["wall_time"] == result.wall_time and bool(back["completed"]) == bool(result.completed)
    assert np.any(np.diff(result.test_error) != 0)  # a run that moved, not constant arrays
    assert math.isclose(back["alpha"][-1], back["time"][-1] * result.config.width / result.config.dim)
