"""``replica-phase-diagram``: α × Δ grid on a local dask cluster (loopback), transition lines,
xarray layout, resume, and option checks.

Uses the deep model of docs/theory.md §6.1 (no spectral tables): each line is a sweep of a few
seconds, and one local cluster of two worker processes is started for the module.
"""

import numpy as np
import pytest

pytest.importorskip("dask.distributed")

from replica.workflow.cli import phase_diagram_main  # noqa: E402
from replica.workflow.io import read_phase_diagram, write_phase_diagram  # noqa: E402

#: its module fixtures are computed once: one process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_phase_diagram")

DEEP = ["--layers", "2", "--gamma", "1,1", "--activation", "tanh2", "--drop-hermite", "0,1,2", "--unit-variance"]
GRID = ["--alpha", "2,3,4,5,6", "--delta", "0.05,0.3"]


@pytest.fixture(scope="module")
def diagram(tmp_path_factory):
    out = tmp_path_factory.mktemp("phase") / "ph.h5"
    rc = phase_diagram_main(DEEP + GRID + ["--workers", "2", "--quiet", "-o", str(out)])
    assert rc == 0
    return out


def test_local_cluster_phase_diagram(diagram):
    data = read_phase_diagram(diagram)
    assert data["parameter"] == "delta"
    np.testing.assert_allclose(data["delta"], [0.05, 0.3])
    np.testing.assert_allclose(data["alpha"], [2, 3, 4, 5, 6])
    assert data["done"].all()
    assert data["mmse"].shape == (2, 5) and data["branch"].shape == (2, 5)
    # Δ = 0.05: the specialized branch appears inside the grid and becomes the equilibrium
    assert 2.0 < data["alpha_sp"][0] < data["alpha_c"][0] < 6.0
    # more noise needs more data
    assert np.isnan(data["alpha_sp"][1]) or data["alpha_sp"][1] > data["alpha_sp"][0]
    # the equilibrium branch flips at α_c
    a = data["alpha"]
    assert all(b == ("specialized" if al > data["alpha_c"][0] else "universal")
               for al, b in zip(a, data["branch"][0]))
    assert data["configuration"]["workers"] == 2
    from replica.workflow.io import read_root_attrs

    assert read_root_attrs(diagram)["architecture"] == "deep"  # the registry's name of the lines' solver


def test_phase_diagram_opens_with_xarray(diagram):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    ds = xr.open_dataset(diagram, engine="h5netcdf")
    assert ds["mmse"].dims == ("delta", "alpha")
    assert ds["alpha_c"].dims == ("delta",)
    assert ds.attrs["parameter"] == "delta"
    assert float(ds["mmse"].sel(delta=0.05, alpha=6.0)) < 0.5


def test_resume_computes_only_missing_lines(diagram, tmp_path, capsys):
    data = read_phase_diagram(diagram)
    out = tmp_path / "partial.h5"
    partial = {k: v for k, v in data.items() if k not in ("parameter", "parameters", "configuration", "complete")}
    partial["done"] = np.array([True, False])
    partial["seconds"] = np.array([-1.0, np.nan])  # marker: a recomputed line gets a real time
    write_phase_diagram(out, partial, data["parameters"], parameter="delta", complete=False)
    rc = phase_diagram_main(DEEP + GRID + ["--workers", "1", "--quiet", "-o", str(out)])
    assert rc == 2 and "--resume" in capsys.readouterr().err
    rc = phase_diagram_main(DEEP + GRID + ["--workers", "1", "--quiet", "--resume", "-o", str(out)])
    assert rc == 0
    again = read_phase_diagram(out)
    assert again["complete"] and again["done"].all()
    assert again["seconds"][0] == -1.0 and again["seconds"][1] > 0
    np.testing.assert_allclose(again["mmse"], data["mmse"], rtol=1e-12)
    np.testing.assert_allclose(again["alpha_c"], data["alpha_c"], rtol=1e-9, equal_nan=True)


@pytest.mark.parametrize("extra,needle", [
    (["--alpha", "2,4"], "--delta/--gamma/--readout-grid"),                     # no second axis
    (["--alpha", "2,4", "--delta", "0.1,0.2", "--readout-grid", "2:8:3"], "--vary"),  # two grids
    (["--alpha", "2,4", "--delta", "-0.1,0.2"], "--delta"),
    (["--alpha", "-2:4:3", "--delta", "0.1,0.2"], "--alpha"),
    (["--alpha", "2,4", "--delta", "0.1,0.2", "--workers", "0"], "--workers"),
    (["--alpha", "2,4", "--delta", "0.1,0.2", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"],
     "--scheduler"),
    (["--alpha", "2,4", "--delta", "0.1,0.2", "--activation", "nope"], "--activation"),
    (["--alpha", "2,4", "--vary", "gamma", "--gamma", "0,1"], "--gamma"),
])
def test_bad_options(tmp_path, capsys, extra, needle):
    rc = phase_diagram_main(DEEP + extra + ["-o", str(tmp_path / "x.h5")])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.h5").exists()


def test_s_grid_with_one_hidden_layer_is_refused(tmp_path, capsys):
    # as replica-sweep does: one hidden layer has no s grid (was accepted and ignored)
    rc = phase_diagram_main(["--gamma", "0.5", "--alpha", "1,2", "--delta", "0.1,0.2", "--workers", "1",
                             "--s-grid", "5", "-o", str(tmp_path / "x.h5")])
    err = capsys.readouterr().err
    assert rc == 2 and "--s-grid: only used with --layers >= 2" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.h5").exists()


def test_deep_diagram_stores_the_transition_of_every_layer(diagram):
    # §6.1 (no linear part): both layers specialize together, at the main α_c; each line is the sweep's
    # own per-layer transitions (replica.branches.sweep on the same model, solved here without dask)
    from replica.branches import sweep
    from replica.models.deep import DeepModel

    data = read_phase_diagram(diagram)
    assert data["alpha_c_layer"].shape == (2, 2) and data["alpha_sp_layer"].shape == (2, 2)
    m = DeepModel("tanh2", [1.0, 1.0], 0.05, drop_hermite=(0, 1, 2), unit_variance=True)
    tr = sweep(m, data["alpha"], progress=False).transitions
    for ell in (1, 2):
        assert data["alpha_c_layer"][0, ell - 1] == pytest.approx(tr[f"alpha_c_layer_{ell}"], rel=1e-9)
        assert data["alpha_c_layer"][0, ell - 1] == pytest.approx(data["alpha_c"][0], rel=1e-9)


def _worker_environment(monkeypatch, names, config=None):
    """The values of the environment variables ``names`` in the one worker of a local cluster started by
    :func:`replica.workflow.phase_diagram._client` (with ``config`` in force, and no ``MALLOC_TRIM_THRESHOLD_`` in
    this process's environment)."""
    import os

    import dask

    from replica.workflow.phase_diagram import _client

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask.config.set(config or {}):
        client, cluster = _client(1, None)
    try:
        seen = client.run(lambda: tuple(os.environ.get(name) for name in names))
    finally:
        client.close()
        cluster.close()
    return list(seen.values())


def test_local_workers_keep_the_default_malloc_trim(monkeypatch):
    """dask's nanny sets ``MALLOC_TRIM_THRESHOLD_`` in its workers, which stops glibc from adapting its mmap
    threshold: every array above 128 KiB is mapped and unmapped again (a four-layer diagram spent a fifth of its
    CPU in page faults). The local cluster starts its workers without it (the user's own value is inherited)."""
    seen = _worker_environment(monkeypatch, ("MALLOC_TRIM_THRESHOLD_", "OPENBLAS_NUM_THREADS"))
    assert seen == [(None, "1")]  # the nanny's other settings (one BLAS thread) stay


def test_a_malloc_trim_set_in_the_dask_configuration_reaches_the_workers(monkeypatch):
    """A user's own ``MALLOC_TRIM_THRESHOLD_`` in the dask configuration (not dask's shipped 65536) is kept."""
    from replica.workflow.phase_diagram import _TRIM_KEY

    assert _worker_environment(monkeypatch, ("MALLOC_TRIM_THRESHOLD_",), {_TRIM_KEY: 131072}) == [("131072",)]
