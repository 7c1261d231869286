"""``replica-plot`` draws the stored numbers: plotted values, not only labels and sizes.

The learning curve of a sweep file is read back from the figure: the solid (equilibrium)
curves must pass exactly through the file's ``/equilibrium`` points (plus the two points
interpolated at ``α_c``), and the dashed curves through every existing point of every branch.
"""

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from replica.workflow import plotting  # noqa: E402
from replica.branches import sweep  # noqa: E402
from replica.models.deep import DeepModel  # noqa: E402
from replica.workflow.io import read_sweep, write_sweep  # noqa: E402


@pytest.fixture(scope="module")
def deep_file(tmp_path_factory):
    model = DeepModel("tanh2", [1.0, 1.0], 0.1, drop_hermite=(0, 1, 2), unit_variance=True)
    res = sweep(model, np.linspace(1.0, 8.0, 8), progress=False)
    params = {"layers": 2, "gamma": [1.0, 1.0], "activation": "tanh2", "drop_hermite": [0, 1, 2],
              "unit_variance": True, "prior": "gaussian", "readout": "ones", "delta": 0.1}
    return write_sweep(tmp_path_factory.mktemp("plot") / "deep.h5", res, params)


def _points(lines):
    return {(float(x), float(y)) for line in lines for x, y in zip(line.get_xdata(), line.get_ydata())}


def test_learning_curve_draws_the_stored_equilibrium(deep_file):
    data = read_sweep(deep_file)
    fig = plotting.plot_file(deep_file, kind="curve")
    ax = fig.axes[0]
    drawn = [ln for ln in ax.get_lines() if len(ln.get_xdata())]
    solid = [ln for ln in drawn if ln.get_linewidth() >= 2.0 or ln.get_marker() == "o"]
    dashed = [ln for ln in drawn if ln.get_linewidth() == 1.0 and ln.get_linestyle() != "-"
              and ln.get_marker() in ("None", "", None, "D")]  # "D": a metastable branch met at one α
    eq = data["equilibrium"]
    assert len(set(eq["branch"])) == 2  # the grid crosses α_c
    expected = {(float(a), float(m)) for a, m in zip(eq["alpha"], eq["mmse"])}
    a_c = data["transitions"]["alpha_c"]
    got = {p for p in _points(solid) if p[0] != a_c}
    assert got == expected
    # every existing point of every branch is on a dashed curve
    for name, b in data["branches"].items():
        ok = b["exists"] & b["converged"]
        pts = {(float(a), float(m)) for a, m in zip(b["alpha"][ok], b["mmse"][ok])}
        assert pts <= _points(dashed), name
    matplotlib.pyplot.close(fig)


def test_a_branch_met_at_one_alpha_is_drawn(deep_file, tmp_path):
    # a metastable branch that exists at a single grid point was a one-point line (invisible)
    import shutil

    import h5py

    path = tmp_path / "one.h5"
    shutil.copy(deep_file, path)
    eq = read_sweep(path)["equilibrium"]
    with h5py.File(path, "r+") as h5:
        b = h5["branches"]["universal"]
        i = int(np.flatnonzero(np.asarray(eq["branch"]).astype(str) != "universal")[-1])
        keep = np.zeros(b["exists"].shape, bool)
        keep[i] = True  # the universal branch is metastable there; keep that point only
        b["exists"][...] = keep
    fig = plotting.plot_file(path, kind="curve")
    marked = [ln for ln in fig.axes[0].get_lines() if ln.get_marker() == "D"]
    assert len(marked) == 1 and len(marked[0].get_xdata()) == 1
    assert float(marked[0].get_xdata()[0]) == pytest.approx(float(eq["alpha"][i]))
    matplotlib.pyplot.close(fig)

