"""The sweep service (:func:`replica.workflow.run.run_sweep`): one way to compute a sweep.

``replica-sweep`` and a line of ``replica-phase-diagram`` with the same options must give the same
records (before the service, a phase-diagram line skipped the model's preparation and the per-point
error estimates); the service returns new data instead of changing a sweep's branches in place, and
the file it leads to needs no model to be written.
"""

import math

import numpy as np
import pytest

from replica.workflow.cli import sweep_main
from replica.workflow.io import read_root_attrs, read_sweep, write_sweep
from replica.workflow.phase_diagram import solve_line
from replica.workflow.run import discretization_errors, run_sweep

# two hidden layers with a fixed s grid: the model estimates the error of its grid at every point
TWO = {"layers": 2, "gamma": [0.7, 1.3], "activation": "tanh2,erf", "drop_hermite": [], "unit_variance": True,
       "prior": "gaussian", "readout": "ones", "readout_grid": None, "delta": 0.1, "s_grid": 3,
       "branches": "all", "damping": 0.5}
TWO_ARGV = ["--layers", "2", "--gamma", "0.7,1.3", "--activation", "tanh2,erf", "--unit-variance", "--s-grid", "3",
            "--delta", "0.1"]
ALPHAS = [3.0, 7.0]


def _same(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, what
    if a.dtype == object or b.dtype == object:
        assert [str(x) for x in a.ravel()] == [str(x) for x in b.ravel()], what
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "two.h5"
    assert sweep_main(TWO_ARGV + ["--alpha", ",".join(map(str, ALPHAS)), "--quiet", "-o", str(out)]) == 0
    return out


def test_a_sweep_and_a_phase_diagram_line_give_the_same_records(swept):
    data = read_sweep(swept)
    line = solve_line(dict(TWO), ALPHAS)
    assert set(line["branches"]) == set(data["branches"])
    for name, rec in line["branches"].items():
        b = data["branches"][name]
        ok = np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool)
        _same(rec["exists"], ok, f"{name}/exists")
        for key in ("mmse", "free_entropy", "discretization_error"):
            assert key in rec, f"{name}: the line has no {key}"
            _same(rec[key], np.where(ok, b[key], np.nan), f"{name}/{key}")
    for key in ("mmse", "free_entropy", "branch"):
        _same(line[key], data["equilibrium"][key], f"equilibrium/{key}")
    for key in ("alpha_sp", "alpha_c"):
        a, b = line[key], data["transitions"][key]
        assert (math.isnan(a) and math.isnan(b)) or a == b, key
    assert line["n_changes"] == len(data["equilibrium_changes"]["alpha"])


def test_the_file_names_its_architecture_and_rule_without_a_model(swept, tmp_path):
    attrs = read_root_attrs(swept)
    assert attrs["architecture"] == "two_layer"
    assert attrs["s_grid_rule"].startswith("gauss-hermite")
    # the service's result carries what the writer needs: no model handed to write_sweep
    res = run_sweep(dict(TWO), ALPHAS, progress=False)
    again = read_sweep(write_sweep(tmp_path / "again.h5", res, {}))
    for name, b in read_sweep(swept)["branches"].items():
        for key in ("mmse", "s_values", "s_weights", "discretization_error"):
            _same(again["branches"][name][key], b[key], f"{name}/{key}")
    assert read_root_attrs(tmp_path / "again.h5")["architecture"] == "two_layer"


def test_error_estimates_are_new_data(swept):
    from replica.branches import sweep
    from replica.workflow.model_options import build_model

    model = build_model(dict(TWO))
    res = sweep(model, ALPHAS, progress=False, solve_kw={"damping": 0.5})
    branches = discretization_errors(model, res, {"damping": 0.5})
    assert all("discretization_error" not in b.fields for b in res.branches.values())
    assert all("discretization_error" in b.fields for b in branches.values())
    stored = read_sweep(swept)["branches"]
    for name, b in branches.items():
        _same(b["discretization_error"], stored[name]["discretization_error"], name)


def test_bad_options_are_one_line_usage_errors():
    from replica.workflow.config import UsageError

    with pytest.raises(UsageError, match=r"^--s-grid: only used with --layers >= 2"):
        run_sweep({**TWO, "layers": 1, "gamma": [0.5], "activation": "relu"}, ALPHAS, progress=False)


def test_architecture_option(tmp_path, capsys):
    """``--architecture NAME`` picks the registry's solver (and the file names it); a wrong name is one line, exit 2,
    and writes nothing."""
    deep = ["--layers", "1", "--activation", "tanh2", "--drop-hermite", "0,1,2", "--unit-variance", "--gamma", "1",
            "--alpha", "1,2", "--quiet"]
    outs = {}
    for name in ("auto", "deep"):
        outs[name] = tmp_path / f"{name}.h5"
        assert sweep_main(deep + ["--architecture", name, "-o", str(outs[name])]) == 0
    assert read_root_attrs(outs["auto"])["architecture"] == "shallow"
    assert read_root_attrs(outs["deep"])["architecture"] == "deep"
    assert "architecture" not in read_root_attrs(outs["auto"])["parameters"]
    assert read_root_attrs(outs["deep"])["parameters"]["architecture"] == "deep"
    capsys.readouterr()
    bad = tmp_path / "bad.h5"
    assert sweep_main(deep + ["--architecture", "nope", "-o", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--architecture" in err and not bad.exists()


def test_version_and_revision_are_written_in_one_place():
    import re
    from importlib.metadata import version

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    from pathlib import Path

    import replica
    from replica.workflow import io

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "replica.__version__"}
    assert version("replica-hciz") == replica.__version__
    assert io.git_revision is replica.git_revision
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", replica.git_revision())


@pytest.mark.parametrize("options", [
    TWO,
    {"layers": 2, "gamma": [1.0, 1.0], "activation": "tanh2", "drop_hermite": [0, 1, 2], "unit_variance": True,
     "prior": "gaussian", "readout": "4point", "readout_grid": None, "delta": 0.1},
    {"layers": 3, "gamma": [0.5, 0.5, 0.5], "activation": "tanh2", "drop_hermite": [], "unit_variance": True,
     "prior": "gaussian", "readout": "ones", "readout_grid": None, "delta": 0.1, "s_grid": 2},
], ids=["two_layer", "deep", "deep_linear"])
def test_per_layer_rows_from_the_schema_match_the_built_in_names(options):
    """The per-layer maps read the fields a model's state schema declares (role ``layer``); for the built-in
    models they are the rows that files without a schema give by field name."""
    from replica.workflow.io import sweep_data
    from replica.workflow.plotting import _equilibrium_layers, _is_deep, _layer_fields, _layer_labels

    data = sweep_data(run_sweep(dict(options), [2.0, 6.0], progress=False))
    legacy = {**data, "state_schema": None}
    assert _layer_fields(data) and _is_deep(data) and _is_deep(legacy)
    np.testing.assert_allclose(_equilibrium_layers(data), _equilibrium_layers(legacy), rtol=1e-12, atol=1e-15)
    b = next(iter(data["branches"].values()))
    n = _equilibrium_layers(data).shape[0]
    assert _layer_labels(b, n, _layer_fields(data)) == _layer_labels(b, n)


def test_a_sweep_runs_with_one_blas_thread(monkeypatch):
    """run_sweep limits BLAS to SWEEP_BLAS_THREADS (= 1) while the solver runs, and ``blas_threads=None``
    leaves the library's setting."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import replica.continuation as branches
    from replica.workflow import run

    seen = []
    original = branches.sweep

    def spy(*args, **kwargs):
        seen.append(blas_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(branches, "sweep", spy)
    request = {**TWO, "layers": 1, "gamma": [0.5], "activation": "tanh2", "s_grid": None}
    def blas_threads():
        return max((i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"), default=None)

    if blas_threads() is None:
        pytest.skip("no BLAS library loaded")
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        around = blas_threads()
        run_sweep(request, [1.0, 2.0], progress=False)
        run_sweep(request, [1.0, 2.0], progress=False, blas_threads=None)
        assert blas_threads() == around  # restored after the sweep
    assert run.SWEEP_BLAS_THREADS == 1
    assert around == 2 and seen == [1, 2]
