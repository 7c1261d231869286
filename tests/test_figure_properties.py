"""Every figure kind has the package's figure properties, read from the matplotlib objects.

``replica-plot`` of every file kind and every ``--kind``, the SGD figures (:mod:`replica.workflow.sgd_plots`)
and the depth figure (scripts/experiments/depth_figure.py) are rendered from small sweeps and checked by
:func:`figure_checks.check_figure`: one style (the package style file), legends in words, integer ticks
on counting axes, nonnegative limits on α/Δ/γ/error axes, and an equilibrium curve without gaps over the
sweep's α range. ``replica-figures`` (every figure, ``--quick``) is checked the same way in
tests/test_figures.py; the full-grid figures in the ``slow`` variant below.
"""

import importlib.util
import json
import re
from pathlib import Path

import h5py
import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from figure_checks import check_figure, legend_texts, style_params  # noqa: E402
from replica.workflow import plotting  # noqa: E402
from replica.workflow.cli import plot_main, sweep_main  # noqa: E402
from replica.workflow.io import read_sweep, write_phase_diagram  # noqa: E402

#: its module fixtures are computed once: one process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_figure_properties")

ROOT = Path(__file__).resolve().parents[1]
HE2_HE3 = "hermite:2=1.4142135623730951,3=1"
#: small sweeps; each crosses a change of the equilibrium between two grid points (the gaps of the
#: learning curves were there): ReLU (universal -> specialized at 0.63, grid 0.2, 1.18), He2+He3 with
#: Rademacher weights (universal -> weak -> specialized), two hidden layers (layer_1 -> layers_1_2 ->
#: layers_1_2-2 at 2.10 and 2.15, the middle branch on no grid point), a deep network of §6.1, a probit channel
SWEEPS = {
    "relu": ["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--alpha", "0.2:8:9"],
    "weak": ["--activation", HE2_HE3, "--gamma", "0.5", "--delta", "1.25", "--prior", "rademacher", "--alpha",
             "0.1:4:9"],
    "two_layer": ["--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2", "--unit-variance", "--delta",
                  "0.1", "--alpha", "0.5:6:6"],
    "deep1": ["--layers", "1", "--gamma", "1", "--activation", "tanh2", "--drop-hermite", "0,1,2",
              "--unit-variance", "--delta", "0.1", "--alpha", "1:8:8"],
    "deep2": ["--layers", "2", "--gamma", "1", "--activation", "tanh2", "--drop-hermite", "0,1,2",
              "--unit-variance", "--delta", "0.1", "--alpha", "1:8:8"],
    "probit": ["--activation", "relu", "--gamma", "0.5", "--channel", "probit", "--alpha", "0.2:8:9"],
}
HMC = ROOT / "data/reference/barbier2025_shallow/hmc_relu_delta0.1_gamma0.5_readout_ones_d150.csv"
UNIVERSAL = ROOT / "data/reference/barbier2025_shallow/theory_relu_delta0.1_gamma0.5_readout_ones_universal.csv"
REFERENCES = [f"{UNIVERSAL}:mmse", f"{HMC}:info_mean:info_std", f"{HMC}:unfo_mean:unfo_std"]


def _phase_diagram(path, layers=False):
    # Δ = 0.05, 0.275, 0.5: cells of "nearest" shading ran to Δ = −0.06
    alpha = np.linspace(0.5, 4.0, 6)
    delta = np.array([0.05, 0.275, 0.5])
    mmse = 0.1 / (1 + alpha[None, :] / (1 + delta[:, None]))
    data = {"alpha": alpha, "delta": delta, "done": np.ones(3, bool), "mmse": mmse, "free_entropy": -mmse,
            "branch": np.full((3, 6), "layer_1" if layers else "universal", dtype=object),
            "alpha_sp": np.array([1.5, 2.0, 2.6]), "alpha_c": np.array([2.0, 2.7, 3.1 if layers else np.nan])}
    if layers:
        data["alpha_sp_layer"] = np.array([[np.nan, 1.5], [np.nan, 2.0], [np.nan, 2.6]])
        data["alpha_c_layer"] = np.array([[np.nan, 2.0], [np.nan, 2.7], [np.nan, 3.1]])
    return write_phase_diagram(path, data, {"activation": "tanh2", "gamma": [0.5, 0.5] if layers else [0.5]},
                               parameter="delta", complete=True)


def _experiment(path):
    with h5py.File(path, "w") as h5:
        h5.attrs["parameters"] = json.dumps({"activation": "relu", "gamma": 0.5, "delta": 0.1, "dim": 40})
        for sampler, init, shift in (("hmc", "informed", 0.0), ("hmc", "uninformed", 0.01), ("adam", "uninformed", 0.02)):
            g = h5.require_group(f"experiments/{sampler}/{init}")
            a = np.array([1.0, 3.0, 5.0])
            g["alpha"] = a
            g["mmse_mean"] = 0.06 / (1 + 0.3 * a) + shift
            g["mmse_sem"] = np.full(3, 0.004)
            g["overlap_mean"] = np.array([[0.1], [0.5], [0.9]]) - shift
            g["overlap_sem"] = np.full((3, 1), 0.02)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    from replica.workflow.spectrum import main as spectrum_main
    from replica.workflow.sgd_cli import main as sgd_main

    d = tmp_path_factory.mktemp("figure-properties")
    out = {}
    for name, args in SWEEPS.items():
        out[name] = d / f"{name}.h5"
        assert sweep_main([*args, "-o", str(out[name]), "--quiet"]) == 0, name
    out["phase"] = _phase_diagram(d / "phase.h5")
    out["phase_layers"] = _phase_diagram(d / "phase_layers.h5", layers=True)
    out["experiment"] = _experiment(d / "experiment.h5")
    out["spectrum"] = d / "spectrum.h5"
    assert spectrum_main(["--gamma", "0.5", "--readout", "rademacher", "--lambda", "0.1:10:6", "--density-grid", "40",
                          "-o", str(out["spectrum"]), "--quiet"]) == 0
    out["sgd"] = d / "sgd.h5"
    assert sgd_main(["--activation", "elu", "--dim", "10", "--steps", "60", "--seed", "1", "-o", str(out["sgd"]),
                     "--quiet"]) == 0
    return out


#: (file, --kind) rendered by replica-plot: every kind, every kind of file
CASES = [("relu", "auto"), ("relu", "curve"), ("relu", "overlaps"), ("weak", "auto"), ("two_layer", "auto"),
         ("two_layer", "layers"), ("two_layer", "neurons"), ("deep2", "auto"), ("deep2", "layers"),
         ("probit", "auto"), ("probit", "classification"), ("phase", "phase"), ("phase_layers", "auto"),
         ("experiment", "auto"), ("spectrum", "auto"), ("sgd", "auto")]


def test_the_cases_cover_every_kind_of_replica_plot():
    from replica.workflow.cli import build_plot_parser

    kinds = next(a.choices for a in build_plot_parser()._actions if a.dest == "kind")
    assert {k for _, k in CASES} == set(kinds)


def _alpha_range(path):
    with h5py.File(path, "r") as h5:
        if "equilibrium" not in h5:
            return None
    a = np.asarray(read_sweep(path)["equilibrium"]["alpha"], float)
    return float(a.min()), float(a.max())


@pytest.mark.parametrize("name, kind", CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_replica_plot_figures_have_the_figure_properties(files, name, kind):
    refs = [plotting.read_reference(r) for r in REFERENCES] if name == "relu" else ()
    fig = plotting.plot_file(files[name], kind=kind, references=refs)
    try:
        check_figure(fig, f"{name} --kind {kind}", alpha_range=_alpha_range(files[name]))
    finally:
        matplotlib.pyplot.close(fig)


def test_published_curves_are_named_in_words(files, tmp_path):
    fig = plotting.plot_file(files["relu"], kind="curve", references=[plotting.read_reference(r) for r in REFERENCES])
    labels = legend_texts(fig)
    matplotlib.pyplot.close(fig)
    assert "universal branch (Barbier et al. 2025)" in labels
    assert "HMC, informed (Barbier et al. 2025, d = 150)" in labels
    assert "HMC, uninformed (Barbier et al. 2025, d = 150)" in labels
    # the command line draws the same
    assert plot_main([str(files["relu"]), "--reference", REFERENCES[1], "-o", str(tmp_path / "r.png"), "--quiet"]) == 0


def test_branch_names_in_words():
    words = {name: plotting.branch_label(name) for name in
             ("layer_1", "layers_1_2", "layers_1_2-2", "layers_1_to_3", "layer_1+product", "product", "specialized-2")}
    assert words == {"layer_1": "layer 1 learned", "layers_1_2": "layers 1 and 2 learned",
                     "layers_1_2-2": "layers 1 and 2 learned, sheet 2", "layers_1_to_3": "layers 1 to 3 learned",
                     "layer_1+product": "layer 1 and a product learned", "product": "a product of layers learned",
                     "specialized-2": "specialized, sheet 2"}


def test_equilibrium_curve_runs_through_the_located_changes(files):
    # two hidden layers: layer_1 -> layers_1_2 at 2.102, layers_1_2 -> layers_1_2-2 at 2.146, no grid point
    # between 1.6 and 2.7: the curve is drawn through both changes with the stored values on each side
    data = read_sweep(files["two_layer"])
    ch = data["equilibrium_changes"]
    assert len(ch["alpha"]) == 2
    pieces = plotting.equilibrium_curve(data)
    ends = {(float(x[0]), float(y[0])) for _, x, y in pieces} | {(float(x[-1]), float(y[-1])) for _, x, y in pieces}
    for a, before, after in zip(ch["alpha"], ch["mmse_before"], ch["mmse_after"]):
        assert (a, before) in ends and (a, after) in ends
    middle = [p for p in pieces if p[0] == str(ch["to_branch"][0])]
    assert len(middle) == 1 and list(middle[0][1]) == list(ch["alpha"])


def test_sgd_figures_have_the_figure_properties(files):
    from replica.workflow.sgd_plots import plot_overlap_histograms, plot_test_error

    for fig in (plot_overlap_histograms(files["sgd"]), plot_test_error(files["sgd"], theory=False)):
        try:
            check_figure(fig, "sgd_plots")
        finally:
            matplotlib.pyplot.close(fig)


def test_depth_figure_has_the_figure_properties(files):
    spec = importlib.util.spec_from_file_location("depth_figure", ROOT / "scripts/experiments/depth_figure.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fig, table = module.figure([read_sweep(files["deep1"]), read_sweep(files["deep2"])])
    try:
        check_figure(fig, "depth_figure", alpha_range=(1.0, 8.0))
        assert [row[0] for row in table] == [1, 2]
    finally:
        matplotlib.pyplot.close(fig)


def test_one_style_file_for_every_figure():
    # the style is a file of the package (package data, read with importlib.resources) ...
    path = plotting.style_path()
    assert path.name == "replica.mplstyle" and path.is_file()
    assert Path(str(path)).resolve().parent == (ROOT / "replica/workflow").resolve()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'"replica\.workflow" = \[[^\]]*"\*\.mplstyle"', pyproject)
    assert style_params()["font.family"] == ["serif"]
    # ... and no figure code sets rc parameters of its own
    sources = [*ROOT.glob("replica/**/*.py"), *ROOT.glob("scripts/**/*.py")]
    own = [str(p.relative_to(ROOT)) for p in sources
           if re.search(r"rc_context\(|rcParams\[|style\.use\(|matplotlib\.rc\(", p.read_text())]
    assert own == []


@pytest.mark.slow
def test_full_replica_figures_have_the_figure_properties(tmp_path, monkeypatch):
    # the full grids of replica-figures (minutes): the same checks as the --quick run of tests/test_figures.py
    from figure_checks import checked_figures
    from replica.workflow import figures

    checked = checked_figures(monkeypatch)
    assert figures.main(["--only", "quadratic,relu,rademacher,deep,two_layer,two_layer_phase", "-o",
                         str(tmp_path), "--quiet"]) == 0
    assert set(checked) == {"quadratic", "relu", "rademacher_readout_rademacher", "rademacher_readout_ones", "deep",
                            "two_layer", "two_layer_phase"}
    assert not any(checked.values()), [v for v in checked.values() if v]
