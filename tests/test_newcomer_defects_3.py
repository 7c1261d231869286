"""Defects a newcomer ran into (issue 41, the findings N8, N10, N11, N13, N14): each test failed before its fix.

N13 (branch names that depend on where the grid cuts a curve) is fixed in replica/continuation/naming.py
(``name_curves``: a curve below the phase threshold that the grid cuts is continued past the grid before it
is named, ``states_past_the_grid``). Two tests are guards of a fix, not defects (they passed before): the
universal-only layout of N10 and the CI command of item 4."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from figure_checks import (check_figure, dash_class, legends_over_curves, lines_outside_axes,  # noqa: E402
                           look_alike_entries, undrawn_legend_entries)
from replica.workflow import plotting  # noqa: E402
from replica.workflow.cli import sweep_main  # noqa: E402
from replica.workflow.io import read_sweep, write_phase_diagram  # noqa: E402

#: its module fixtures are computed once: one process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_newcomer_defects_3")

ROOT = Path(__file__).resolve().parent.parent
HE2_HE3 = "hermite:2=1.4142135623730951,3=1"
#: small sweeps (seconds each): a probit channel (its branch is `specialized`: its Q passes 0.5 near α = 12,
#: past the grid, N13), a sign channel (two specialized sheets, the equilibrium changes between them), ReLU (an
#: unstable universal branch), He2+He3 with Rademacher weights (metastable branches)
SWEEPS = {
    "probit": ["--activation", "relu", "--gamma", "0.5", "--channel", "probit", "--delta", "0.1", "--alpha",
               "0.2:8:9"],
    "sign": ["--activation", "relu", "--gamma", "0.5", "--channel", "sign", "--alpha", "0.05:8:30"],
    "relu": ["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--alpha", "0.2:8:9"],
    "weak": ["--activation", HE2_HE3, "--gamma", "0.5", "--delta", "1.25", "--prior", "rademacher", "--alpha",
             "0.1:4:41"],  # grid points where the two specialized sheets coexist (1.567 … 1.679): metastable
}


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    d = tmp_path_factory.mktemp("newcomer-3")
    out = {}
    for name, args in SWEEPS.items():
        out[name] = d / f"{name}.h5"
        assert sweep_main([*args, "-o", str(out[name]), "--quiet"]) == 0, name
    return out


def _close(fig):
    matplotlib.pyplot.close(fig)


def _panel(fig, title):
    return next((ax for ax in fig.axes if ax.get_title(loc="left").startswith(title) and ax.axison), None)


# =========================================================================== N8: timings say where and at what load
def _sentences(text):
    return re.split(r"(?<=[.;])\s+(?=[A-Z(`])", " ".join(text.split()))


TIMING = re.compile(r"\b\d+(\.\d+)?\s*(min|s|CPU-s|CPU-min)\b(?! of HMC)")


@pytest.mark.parametrize("page, anchor", [("README.md", "the default test run"),
                                          ("docs/physics.md", "replica-sweep --layers 3 --gamma 0.5,0.5,0.5")])
def test_timings_say_the_machine_and_load(page, anchor):
    """N8: the README said "the default test run 7 min plus 2–3 min" (1296 tests took 11 min idle, 33 min at load
    3–4) and docs/physics.md "about 15 CPU-s" for an L = 3 sweep that takes 97 s of CPU; the timings quoted
    with them now say the machine and its load."""
    text = (ROOT / page).read_text()
    if page == "README.md":
        sentence = next(s for s in _sentences(text) if anchor in s)
        assert "7 min plus" not in sentence and TIMING.search(sentence), sentence
        assert "load" in sentence and "2-core" in sentence, sentence
        assert "-n " in sentence or "parallel" in sentence or "processes" in sentence, sentence
    else:
        block = text.split(anchor, 1)[1].split("```", 1)[0]
        comment = block.split("#", 1)[1].splitlines()[0]
        assert "15 CPU-s" not in comment, comment
        assert "load" in comment and "2-core" in comment, comment
        cpu = float(re.search(r"(\d+(?:\.\d+)?) s of CPU", comment).group(1))
        assert 40 <= cpu <= 400, comment  # 97 s measured (issue 41)


def test_ci_runs_exactly_the_readme_test_command():
    """A guard of item 4 (the test command changed): ``.ci/run`` runs the README's test command, word for word."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("Run the tests", 1)[1].split("```bash", 1)[1].split("```", 1)[0].strip()
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.strip() and not ln.startswith(("#", "set ",
                                                                                                         "cd "))]
    assert ci == [block]
    assert " -n " in block and "--dist loadgroup" in block


# =========================================================================== N10: classification keeps the overlaps
#: a probit channel whose only branch besides the universal one is `weak`: noisy labels (Δ = 1), onset at
#: α = 7.67, Q = 0.14 at the last α and still below 0.5 at 4 × 12 = 48, where the naming stops following it (N13)
WEAK_PROBIT = ["--activation", "relu", "--gamma", "0.5", "--channel", "probit", "--delta", "1.0", "--alpha", "6:12:7"]


def test_probit_plot_keeps_the_overlaps_panel(tmp_path):
    """N10: tutorial §7 says replica-plot adds a classification panel; for probit (branch `weak`, no
    `specialized`) the automatic layout dropped the overlaps panel instead, so Q of that branch was not shown.
    (Since N13 the tutorial's probit branch is `specialized`; the sweep here is one whose branch is `weak`.)"""
    path = tmp_path / "weak_probit.h5"
    assert sweep_main([*WEAK_PROBIT, "-o", str(path), "--quiet"]) == 0
    data = read_sweep(path)
    assert set(data["branches"]) == {"universal", "weak"}, sorted(data["branches"])
    fig = plotting.plot_file(path)
    try:
        titles = [ax.get_title(loc="left") for ax in fig.axes if ax.axison]
        assert "learning curve" in titles and "classification error" in titles, titles
        ax = _panel(fig, "overlaps")
        assert ax is not None, titles
        weak = plotting.BRANCH_STYLE["weak"][0]
        q = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1
             and matplotlib.colors.same_color(ln.get_color(), weak)]
        assert q, "the weak branch's overlaps are not drawn"
        check_figure(fig, "probit --kind auto")
    finally:
        _close(fig)


def test_universal_only_sweep_has_no_empty_overlaps_panel(tmp_path):
    """The other side of N10: a sweep with the universal branch only still gets no overlaps panel."""
    out = tmp_path / "u.h5"
    assert sweep_main(["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--alpha", "0.2:1:3",
                       "--branches", "universal", "-o", str(out), "--quiet"]) == 0
    fig = plotting.plot_file(out)
    try:
        assert [ax.get_title(loc="left") for ax in fig.axes if ax.axison] == ["learning curve"]
    finally:
        _close(fig)


# =========================================================================== N11: cosmetic
def test_tutorial_section_5_comment_is_what_the_line_prints(tmp_path):
    """N11: tutorial §5's comment showed a two-key dict where six keys print, as ``np.float64(…)``."""
    text = (ROOT / "docs" / "tutorial.md").read_text()
    block = text.split("## 5.", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    lines = re.sub(r"\\\n\s*", " ", block).splitlines()
    sweep = next(ln for ln in lines if ln.startswith("replica-sweep"))
    i = next(k for k, ln in enumerate(lines) if ln.startswith("python -c"))
    printer, comment = lines[i], lines[i + 1]
    assert comment.startswith("# "), comment
    import shlex

    argv = shlex.split(sweep)[1:]
    assert sweep_main([*argv[:argv.index("-o")], "-o", str(tmp_path / "deep.h5"), "--quiet"]) == 0
    proc = subprocess.run([sys.executable, "-c", shlex.split(printer)[2]], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == comment[2:].strip()


def test_replica_figures_prints_no_file_name_inside_its_table(tmp_path, capsys, monkeypatch):
    """N11: ``replica-figures`` printed ``figsq/two_layer_phase.h5`` (the phase-diagram command's output line)
    inside its table of deviations."""
    from replica.workflow import cli, figures

    def fake_phase_diagram(argv):  # writes what the command writes, prints its file name as it does
        out = Path(argv[argv.index("-o") + 1])
        alpha, delta = np.linspace(1.0, 5.0, 5), np.array([0.05, 0.35])
        mmse = 0.1 / (1 + alpha[None, :] / (1 + delta[:, None]))
        write_phase_diagram(out, {"alpha": alpha, "delta": delta, "done": np.ones(2, bool), "mmse": mmse,
                                  "free_entropy": -mmse, "branch": np.full((2, 5), "layer_1", dtype=object),
                                  "alpha_sp": np.array([2.0, 2.5]), "alpha_c": np.array([2.5, 3.0]),
                                  "alpha_sp_layer": np.array([[np.nan, 2.0], [np.nan, 2.5]]),
                                  "alpha_c_layer": np.array([[np.nan, 2.5], [np.nan, 3.0]])},
                            {"activation": "tanh2", "gamma": [0.5, 0.5]}, parameter="delta", complete=True)
        print(out)
        return 0

    monkeypatch.setattr(cli, "phase_diagram_main", fake_phase_diagram)
    assert figures.main(["--quick", "--only", "two_layer_phase", "-o", str(tmp_path / "figsq"), "--quiet"]) == 0
    stdout = capsys.readouterr().out
    assert not [ln for ln in stdout.splitlines() if ln.strip().endswith(".h5")], stdout
    assert "two_layer_phase" in stdout


def test_log_lines_start_on_their_own_line_after_the_progress_bar(tmp_path, capsys):
    """N11: ``replica-sweep … 2>log`` glued the INFO lines onto the last drawing of the tqdm bar
    (``α sweep: 100%|…|  <spaces>INFO replica.workflow.cli: branch …``)."""
    assert sweep_main(["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--alpha", "0.2:2:4",
                       "-o", str(tmp_path / "r.h5")]) == 0
    err = capsys.readouterr().err
    assert "α sweep" in err  # the bar is drawn
    glued = [ln for ln in err.split("\n") if "INFO " in ln and not ln.startswith("INFO ")]
    assert not glued, glued
    assert [ln for ln in err.split("\n") if ln.startswith("INFO replica.workflow.cli: branch ")]


def test_progress_bar_names_its_passes_over_the_grid(tmp_path, capsys):
    """A 3-point sweep showed ``α sweep: 0/12 [… point/s]`` (one step per grid point of every pass: the universal
    branch, then each start): the bar names the grid size and the number of passes."""
    assert sweep_main(["--alpha", "1:2:3", "-o", str(tmp_path / "r.h5")]) == 0
    err = capsys.readouterr().err
    drawn = [ln for ln in err.replace("\r", "\n").split("\n") if ln.startswith("α sweep")]
    assert drawn and all(ln.startswith("α sweep (3 α × ") for ln in drawn), drawn
    passes = int(drawn[-1].split("× ")[1].split(" passes")[0])
    assert f"/{3 * passes} [" in drawn[-1], drawn[-1]


def test_log_lines_of_the_console_script_start_their_own_line(tmp_path):
    """The same as a user sees it in a log file: the console script with stderr redirected."""
    exe = Path(sys.executable).parent / "replica-sweep"
    with open(tmp_path / "log", "w") as log:
        proc = subprocess.run([str(exe), "--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--alpha",
                               "0.2:2:4", "-o", "r.h5"], cwd=tmp_path, stderr=log, stdout=subprocess.DEVNULL,
                              timeout=300)
    assert proc.returncode == 0
    with open(tmp_path / "log", newline="") as fh:  # keep the bar's carriage returns
        err = fh.read()
    glued = [ln for ln in err.split("\n") if "INFO " in ln and not ln.startswith("INFO ")]
    assert not glued, glued


# =========================================================================== N13: names and the grid
def _name_of_the_curve_through(path, alpha):
    data = read_sweep(path)
    names = [n for n, b in data["branches"].items() if n != "universal"
             and np.any(np.asarray(b["exists"], bool) & np.isclose(np.asarray(b["alpha"], float), alpha))]
    assert len(names) == 1, names
    return names[0]


def test_branch_name_does_not_depend_on_where_the_grid_cuts_the_curve(sweeps, tmp_path):
    """N13: the same sign-channel sweep named the branch through α = 1 … 2 `specialized` on
    ``--alpha 0.05:8:30`` (its fold at 4.28 lies on the grid) and `weak` on ``--alpha 1:2:3`` (the grid cuts the
    curve before its overlaps pass 0.5)."""
    short = tmp_path / "short.h5"
    assert sweep_main([*SWEEPS["sign"][:-1], "1:2:3", "-o", str(short), "--quiet"]) == 0
    full = read_sweep(sweeps["sign"])
    alpha = float(np.asarray(full["branches"]["universal"]["alpha"])[
        np.argmin(np.abs(np.asarray(full["branches"]["universal"]["alpha"], float) - 2.0))])
    assert _name_of_the_curve_through(short, 2.0) == _name_of_the_curve_through(sweeps["sign"], alpha)


# =========================================================================== N14: figures
def _phase(path, *, layers=False, same_layers=False, metastable=True):
    alpha = np.linspace(0.5, 4.0, 6)
    delta = np.array([0.05, 0.275, 0.5])
    mmse = 0.1 / (1 + alpha[None, :] / (1 + delta[:, None]))
    branch = np.full((3, 6), "universal", dtype=object)
    ac = np.array([2.0, 2.7, np.nan])  # the last row: α_c above the grid (universal at every α), α_sp = 2.6
    sp = np.array([1.5, 2.0, 2.6]) if metastable else np.full(3, np.nan)
    if not metastable:
        ac = np.full(3, np.nan)
    data = {"alpha": alpha, "delta": delta, "done": np.ones(3, bool), "mmse": mmse, "free_entropy": -mmse,
            "branch": branch, "alpha_sp": sp, "alpha_c": ac}
    if layers:
        data["branch"] = np.full((3, 6), "layer_1", dtype=object)
        data["alpha_c"] = np.array([2.0, 2.7, 3.1])
        if same_layers:  # both layers learned at once: the two α_c lines coincide
            data["alpha_sp_layer"] = np.array([[1.5, 1.5], [2.0, 2.0], [2.6, 2.6]])
            data["alpha_c_layer"] = np.array([[2.0, 2.0], [2.7, 2.7], [3.1, 3.1]])
            data["branch"] = np.full((3, 6), "universal", dtype=object)
        else:  # layer 1 learned at every α of the grid
            data["alpha_sp_layer"] = np.array([[np.nan, 1.5], [np.nan, 2.0], [np.nan, 2.6]])
            data["alpha_c_layer"] = np.array([[np.nan, 2.0], [np.nan, 2.7], [np.nan, 3.1]])
    return write_phase_diagram(path, data, {"activation": "tanh2", "gamma": [0.5, 0.5] if layers else [0.5]},
                               parameter="delta", complete=True)


@pytest.mark.parametrize("case", ["plain", "nothing_metastable", "layer_1_below_the_grid", "layers_together"])
def test_phase_diagram_legends_list_only_what_is_drawn(tmp_path, case):
    """N14: the legend listed a "learned below the grid" marker that was never drawn, the hatching of the
    metastable region and both transition lines where none is drawn, and a layer-1 α_c hidden under the
    identical layer-2 line."""
    path = _phase(tmp_path / "p.h5", layers=case.startswith("layer"), same_layers=case == "layers_together",
                  metastable=case != "nothing_metastable")
    fig = plotting.plot_file(path)
    try:
        assert undrawn_legend_entries(fig) == []
        labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        if case == "layers_together":
            assert not any(lab.startswith("layer 1 learned") for lab in labels), labels
            assert any(lab.startswith("layers 1 and 2 learned") for lab in labels), labels
        if case == "nothing_metastable":
            assert not any("metastable" in lab for lab in labels), labels
        check_figure(fig, case)
    finally:
        _close(fig)


def test_phase_diagram_hatches_a_row_whose_transition_is_above_the_grid(tmp_path):
    """N14: no hatching for a Δ row whose α_c lies above the grid: the specialized branch is metastable there
    from α_sp (2.6) to the end of the grid."""
    fig = plotting.plot_file(_phase(tmp_path / "p.h5"))
    try:
        ax = fig.axes[0]
        hatched = [c for c in ax.collections if c.get_hatch()]
        assert hatched
        inside = [any(p.contains_point((3.5, 0.45)) for p in c.get_paths()) for c in hatched]
        below_sp = [any(p.contains_point((2.3, 0.45)) for p in c.get_paths()) for c in hatched]
        assert any(inside) and not any(below_sp)
    finally:
        _close(fig)


def test_learning_curve_styles_are_told_apart(sweeps):
    """N14: "linearly unstable" and "spinodal α_sp" were look-alike dotted grey lines."""
    for name in ("relu", "sign", "weak", "probit"):
        fig = plotting.plot_file(sweeps[name])
        try:
            assert look_alike_entries(fig) == [], name
        finally:
            _close(fig)


def test_spinodal_and_unstable_lines_differ():
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots()
    try:
        plotting._draw_transition_lines(ax, {"alpha_sp": 1.0, "alpha_c": 2.0})
        spinodal = next(ln for ln in ax.get_lines() if ln.get_label().startswith("spinodal"))
        unstable = Line2D([], [], ls=(0, (1, 1.5)))
        assert dash_class(spinodal) != dash_class(unstable) == "."
    finally:
        _close(fig)


def test_layer_styles_of_the_overlaps_panel_differ():
    """N14: the L = 3 overlaps panel drew `q_3` and `q_{3:1}` in two dotted styles (":" and (0, (1, 3)))."""
    from matplotlib.lines import Line2D

    classes = [dash_class(Line2D([], [], ls=ls, lw=1.4)) for ls in plotting._LAYER_STYLES]
    assert len(set(classes)) == len(classes), list(zip(plotting._LAYER_STYLES, classes))


def test_trapped_training_figure(sweeps):
    """N14: in the trapped-training figure the legend's equilibrium line (grey, solid) looked like an SGD line
    (grey, solid), and the SGD curves left the axes (the random start's error is above twice the universal
    branch's)."""
    theory = read_sweep(sweeps["weak"])
    a = np.linspace(0.0, 4.0, 41)
    top = float(np.nanmax(np.asarray(theory["branches"]["universal"]["mmse"], float)))
    online = {f"online SGD, d = {d}, η = 0.2": (a, top * (0.2 + 2.8 * np.exp(-a)), np.full(a.size, 0.02 * top))
              for d in (12, 16)}
    adam = {"Adam, random start, d = 16": {"alpha": np.array([1.0, 3.0]), "mmse_mean": np.array([0.3, 0.2]),
                                           "mmse_sem": np.array([0.01, 0.01])}}
    fig = plotting.plot_training(theory, adam=adam, online=online, title="t")
    try:
        ax = fig.axes[0]
        assert not [lab for lab in lines_outside_axes(ax) if lab.startswith("online SGD")]
        labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        assert "equilibrium (largest $f$)" in labels, labels
        assert look_alike_entries(fig) == []
        check_figure(fig, "trapped")
    finally:
        _close(fig)


def test_sign_channel_overlaps_legend_is_off_the_curves(sweeps):
    """N14: the overlaps legend of the sign-channel plot sat on the curves."""
    fig = plotting.plot_file(sweeps["sign"])
    try:
        assert _panel(fig, "overlaps") is not None
        assert legends_over_curves(fig) == []
    finally:
        _close(fig)
