"""HDF5 storage: atomic writes, labelled arrays with xarray, checkpoints that resume exactly."""

import h5py
import numpy as np
import pytest

from replica.branches import sweep
from replica.models.deep import DeepModel
from replica.workflow.io import (
    IncompleteFileError,
    atomic_h5,
    file_kind,
    read_root_attrs,
    read_sweep,
    write_sweep,
)
from replica.workflow.run import SweepCheckpoint

ALPHAS = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])


@pytest.fixture(scope="module")
def model():
    # docs/theory.md §6.1, two hidden layers, Δ = 0.1 (no spectral tables needed)
    return DeepModel("tanh2", [1.0, 1.0], 0.1, drop_hermite=(0, 1, 2), unit_variance=True)


@pytest.fixture(scope="module")
def result(model):
    return sweep(model, ALPHAS, progress=False)


def test_atomic_write_keeps_previous_file_on_error(tmp_path):
    path = tmp_path / "a.h5"
    with atomic_h5(path) as h5:
        h5["x"] = 1
    with pytest.raises(RuntimeError):
        with atomic_h5(path) as h5:
            h5["x"] = 2
            raise RuntimeError("boom")
    with h5py.File(path) as h5:
        assert h5["x"][()] == 1
    with pytest.raises(KeyboardInterrupt):
        with atomic_h5(tmp_path / "b.h5") as h5:
            raise KeyboardInterrupt
    assert not (tmp_path / "b.h5").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"]  # no temporary files left


def test_written_file_is_readable_by_others(tmp_path, result):
    path = write_sweep(tmp_path / "s.h5", result, {"delta": 0.1})
    assert path.stat().st_mode & 0o044  # not the 0600 of a bare temporary file


def test_roundtrip_and_xarray(tmp_path, result):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    path = write_sweep(tmp_path / "s.h5", result, {"delta": 0.1}, configuration={"delta": 0.1, "output": "s.h5"})
    data = read_sweep(path)
    assert file_kind(path) == "sweep"
    assert data["configuration"]["output"] == "s.h5"
    np.testing.assert_array_equal(data["branches"]["universal"]["alpha"], ALPHAS)
    spec = xr.open_dataset(path, engine="h5netcdf", group="branches/specialized")
    assert spec["mmse"].dims == ("alpha",)
    assert spec["overlap_layer_2"].dims == ("alpha", "readout_values")
    np.testing.assert_array_equal(spec["alpha"].values, ALPHAS)
    np.testing.assert_array_equal(spec["mmse"].values, result.branches["specialized"]["mmse"])
    assert "α" in spec["alpha"].attrs["long_name"]
    eq = xr.open_dataset(path, engine="h5netcdf", group="equilibrium")
    assert list(eq["branch"].values) == list(result.equilibrium["branch"])
    root = xr.open_dataset(path, engine="h5netcdf")
    assert "parameters" in root.attrs
    tr = xr.open_dataset(path, engine="h5netcdf", group="transitions")
    assert tr.attrs["alpha_c"] == pytest.approx(result.transitions["alpha_c"])


def test_checkpoint_resume_reproduces_sweep(tmp_path, model, result):
    path = tmp_path / "cp.h5"
    cp = SweepCheckpoint(path, model, ALPHAS, {"delta": 0.1}, every=0.0)
    first = sweep(model, ALPHAS, progress=False, cache=cp)
    assert cp.computed > 0 and path.exists()
    attrs = read_root_attrs(path)
    assert attrs["complete"] is False and attrs["kind"] == "sweep"
    with pytest.raises(IncompleteFileError):
        read_sweep(path)
    loaded = SweepCheckpoint.load(path, model, ALPHAS, {"delta": 0.1}, every=1e9)
    assert loaded.n_done == cp.n_done
    second = sweep(model, ALPHAS, progress=False, cache=loaded)
    # every continuation solve came from the checkpoint (the universal branch is re-solved)
    assert loaded.reused == cp.computed - ALPHAS.size
    assert loaded.computed == ALPHAS.size
    for run in (first, second):
        for name, b in result.branches.items():
            for key, val in b.fields.items():
                got = run.branches[name][key]
                if val.dtype == object:
                    assert list(got) == list(val)
                else:
                    np.testing.assert_array_equal(got, val, err_msg=f"{name}/{key}")
        assert run.transitions == pytest.approx(result.transitions, rel=1e-9)


def test_checkpoint_of_partial_pass(tmp_path, model, result):
    """A checkpoint holding only some solves completes to the same sweep."""
    path = tmp_path / "cp.h5"
    cp = SweepCheckpoint(path, model, ALPHAS, {}, every=1e9)
    sweep(model, ALPHAS, progress=False, cache=cp)
    for key, rec in cp.records.items():  # forget the second half of every pass
        rec["done"][ALPHAS.size // 2:] = False
    cp.write()
    loaded = SweepCheckpoint.load(path, model, ALPHAS, {}, every=1e9)
    again = sweep(model, ALPHAS, progress=False, cache=loaded)
    assert loaded.reused > 0
    np.testing.assert_array_equal(again.equilibrium["mmse"], result.equilibrium["mmse"])
    np.testing.assert_array_equal(again.branches["specialized"]["mmse"], result.branches["specialized"]["mmse"])


@pytest.mark.parametrize("which", ["shallow", "fronts"])
def test_a_checkpoint_of_another_packing_is_solved_again(tmp_path, model, result, caplog, which):
    """Solves stored with another packed size (a file of an older version, whose model packed its point
    differently) are not read as points of this model: they are solved again, with a warning, and the sweep is
    the same as an uninterrupted one (also for the front-aligned rules, whose states would otherwise read the
    first values of a longer point)."""
    if which == "fronts":
        from replica.models.deep_fronts import DeepFrontModel

        model = DeepFrontModel(gammas=(0.5, 0.5), activation="tanh2", delta=0.1)
        result = sweep(model, ALPHAS, progress=False)
    path = tmp_path / "cp.h5"
    cp = SweepCheckpoint(path, model, ALPHAS, {}, every=1e9)
    sweep(model, ALPHAS, progress=False, cache=cp)
    for rec in cp.records.values():  # one more packed value per stored point
        if rec["x"] is not None:
            rec["x"] = np.concatenate([rec["x"], np.full((rec["x"].shape[0], 1), 0.5)], axis=1)
    cp.write()
    loaded = SweepCheckpoint.load(path, model, ALPHAS, {}, every=1e9)
    with caplog.at_level("WARNING", logger="replica.workflow.run"):
        again = sweep(model, ALPHAS, progress=False, cache=loaded)
    assert loaded.reused == 0 and "do not fit this model" in caplog.text
    np.testing.assert_array_equal(again.equilibrium["mmse"], result.equilibrium["mmse"])


def test_checkpoint_grid_mismatch(tmp_path, model):
    path = tmp_path / "cp.h5"
    cp = SweepCheckpoint(path, model, ALPHAS, {}, every=0.0)
    cp("universal", 0, ALPHAS[0], lambda: model.solve_universal(ALPHAS[0]))
    with pytest.raises(ValueError, match="α grid"):
        SweepCheckpoint.load(path, model, ALPHAS[:-1], {})


def test_a_traced_line_counts_as_kept_only_once_it_is_written(tmp_path, monkeypatch):
    """``SweepCheckpoint.add_line``: a write interrupted by a signal leaves the previous checkpoint on disk, and the
    lines held (what the interrupt note counts) are those."""
    import replica.workflow.io as io_module
    from replica.workflow.run import SweepCheckpoint

    ck = SweepCheckpoint(tmp_path / "x.checkpoint.h5", None, [1.0, 2.0], {"a": 1})
    ck.add_line(None)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(io_module, "write_checkpoint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ck.add_line(None)
    assert ck.lines == [None]
