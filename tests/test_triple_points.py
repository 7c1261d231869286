"""Triple points where first-order lines meet (replica.continuation.triples), on the model where the package
found one: two hidden layers, tanh(2x) with unit variance, γ = (0.5, 0.5), v ≡ 1. Between Δ = 0.07 and 0.09 a
second, lower ``layers_1_2`` sheet takes over the equilibrium in a window of α: below the triple point the system
goes from ``layer_1`` to the upper sheet in one transition, above it through the lower sheet in two. The lines of
that sheet are traced back from the sweep at the last Δ (the sweep at the first Δ does not see it on its grid).

Checked independently of the locator: the three branch points there, re-solved by Newton, are distinct and have
equal free entropies; and sweeps just below and above the located Δ find one and two equilibrium transitions near
the located α."""
from __future__ import annotations

import numpy as np
import pytest

from replica.continuation import sweep
from replica.continuation.codim2 import model_at, trace_phase_lines
from replica.continuation.linepoints import grid_point
from replica.continuation.triples import distinct_lines, mark_metastable, same_line, third_lines, triple_points
from replica.models.two_layer import TwoLayerModel

ALPHAS = np.linspace(0.5, 8.0, 40)
DELTAS = np.linspace(0.07, 0.09, 5)


@pytest.fixture(scope="module")
def traced():
    model = TwoLayerModel("tanh2", (0.5, 0.5), float(DELTAS[0]))
    first = sweep(model, ALPHAS, progress=False)
    lines = trace_phase_lines(model, first, "delta", DELTAS)
    top = model_at(model, "delta", float(DELTAS[-1]))
    lines += trace_phase_lines(top, sweep(top, ALPHAS, progress=False), "delta", DELTAS[::-1])
    lines = distinct_lines(lines)
    return model, lines, triple_points(model, "delta", lines), first


def test_every_fold_of_the_first_sweep_has_a_start(traced):
    """The short lower sheet at Δ = 0.07 has one grid point, which the profile solver re-solves on a finer rule
    (its overlaps move by 2.5e-3 along the soft direction next to the folds, f by 7e-7): still the line's start."""
    model, _, _, first = traced
    for name, b in first.branches.items():
        for kind, a in ((b.start_kind, b.alpha_start), (b.end_kind, b.alpha_end)):
            if name != "universal" and kind == "fold":
                assert grid_point(model, ALPHAS, b, a) is not None, (name, a)


def test_lines_traced_from_both_ends_are_kept_once(traced):
    _, lines, _, _ = traced
    assert not any(same_line(a, b) for i, a in enumerate(lines) for b in lines[i + 1:])
    crossings = [line for line in lines if line.kind == "crossing"]
    assert len(crossings) == 3  # layer_1 -> upper (from the first Δ); layer_1 -> lower and lower -> upper
    # each over the whole range (the layer_1 point's NaN label, its error estimate, must not stop the corrector)
    assert all(line.end == "range" and len(line.points) >= DELTAS.size for line in crossings)
    # the spinodals of the upper sheet's start, the product's start and both ends of the short lower sheet
    # (α ∈ [1.79, 1.91] at Δ = 0.07: its grid point is refined by the solver, its first window must narrow)
    folds = [line for line in lines if line.kind == "fold"]
    assert len(folds) == 4 and all(line.end == "range" for line in folds), [(f.branches, f.end) for f in folds]


def test_one_triple_point_whose_three_branches_have_equal_free_entropy(traced):
    model, _, found, _ = traced
    assert len(found) == 1
    tp = found[0]
    assert DELTAS[0] < tp.parameter < DELTAS[-1]
    m = model_at(model, "delta", tp.parameter)
    points = []
    for r in tp.results:
        again = m.solve_from(tp.alpha, None, np.asarray(r.x, dtype=float), method="newton")
        assert again.converged
        st = again.info["state"]
        if not any(np.max(np.abs(np.asarray(st.overlaps) - np.asarray(q.overlaps))) < 1e-4 for q in points):
            points.append(st)
    assert len(points) == 3  # layer_1, the lower and the upper layers_1_2 sheets
    f = np.array([float(st.free_entropy) for st in points])
    assert np.ptp(f) < 1e-9
    assert np.ptp([float(st.mmse) for st in points]) > 1e-2  # three different phases, not one point thrice


@pytest.mark.parametrize("side, changes", [(-1, 1), (+1, 2)], ids=["below", "above"])
def test_sweeps_beside_the_triple_point_change_once_below_and_twice_above(traced, side, changes):
    model, _, (tp,), _ = traced
    # 5e-3 above, the lower sheet is the equilibrium on an α window of about 0.012 (the two lines' slopes differ by
    # 2.4): a grid of step 0.005 has points inside it
    grid = np.linspace(tp.alpha - 0.1, tp.alpha + 0.15, 51)
    res = sweep(model_at(model, "delta", tp.parameter + side * 5e-3), grid, progress=False)
    got = [c["alpha"] for c in res.equilibrium_changes if c["kind"] == "crossing"]
    assert len(got) == changes, res.equilibrium_changes
    assert max(abs(a - tp.alpha) for a in got) < 0.05


def test_the_lines_that_are_phase_boundaries_equal_the_sweeps(traced):
    """Beyond the triple point each of the three crossing lines either stays a phase boundary or becomes a
    crossing of metastable branches (``mark_metastable``): below it only the direct transition is one, above it
    only the two through the lower sheet. Where a line is not metastable it equals, at Δ = 0.07 and 0.09, the
    equilibrium transitions that sweeps there locate (on α grids of step 0.005, fine enough for the lower sheet's
    window of 0.02), to 1e-8."""
    model, lines, found, _ = traced
    mark_metastable(model, "delta", lines, found)
    (tp,) = found
    for line in lines:
        for pt, meta in zip(line.points, line.metastable):
            if line.kind != "crossing":
                assert not meta
            elif abs(pt.parameter - tp.parameter) > 1e-9:
                from_first = line.points[0].parameter == DELTAS[0]  # the direct transition, traced from Δ = 0.07
                assert meta == ((pt.parameter > tp.parameter) == from_first), (line.branches, pt.parameter)
    for delta, grid in ((0.07, np.linspace(1.7, 2.0, 61)), (0.09, np.linspace(1.9, 2.2, 61))):
        res = sweep(model_at(model, "delta", delta), grid, progress=False)
        want = sorted(c["alpha"] for c in res.equilibrium_changes if c["kind"] == "crossing")
        got = sorted(pt.alpha for line in lines if line.kind == "crossing"
                     for pt, meta in zip(line.points, line.metastable) if pt.parameter == delta and not meta)
        assert len(got) == len(want) == (1 if delta < tp.parameter else 2)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)


@pytest.mark.parametrize("deltas", ["0.07,0.08,0.09", "0.05,0.1", "0.05:0.1:4"])
def test_the_command_writes_and_draws_the_triple_point(traced, tmp_path, deltas):
    """``replica-phase-diagram --trace`` (sweeps at both ends, lines from both, each once): the same triple point
    in the file (to 1e-8: the locator's tolerance, the lines being traced through other values), the metastable
    pieces flagged, and ``replica-plot`` draws it. Also from only the two ends 0.05 and 0.1: no requested value
    between, the lines traced from the two ends share no parameter value inside the bracket, and the lines from
    the last value are lost before the first (found by a fresh reviewer: no triple point, a line traced twice);
    and on 0.05:0.1:4, where a crossing line from the last value fell onto the neighbouring sheet's crossing at
    Δ = 0.0833 and followed it (its stable piece then flagged metastable)."""
    import matplotlib.pyplot as plt

    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_lines
    from replica.workflow.plotting import plot_file

    _, _, (tp,), _ = traced
    out = tmp_path / "two.h5"
    assert phase_diagram_main(["--trace", "--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2",
                               "--unit-variance", "--delta", deltas, "--alpha", "0.5:8:40", "--quiet",
                               "-o", str(out)]) == 0
    data = read_phase_lines(out)
    got = data["triple_points"]
    assert got["delta"].size == 1
    assert got["delta"][0] == pytest.approx(tp.parameter, abs=1e-8) and got["alpha"][0] == pytest.approx(tp.alpha, abs=1e-8)
    crossings = [line for line in data["lines"] if line["kind"] == "crossing"]
    assert len(crossings) == 3 and all(line["metastable"].any() and not line["metastable"].all() for line in crossings)
    for line in crossings:  # metastable exactly on one side of the triple point
        side = line["delta"] > got["delta"][0]
        meta = line["metastable"][line["delta"] != got["delta"][0]]
        assert np.all(meta == side[line["delta"] != got["delta"][0]]) or np.all(meta == ~side[line["delta"] != got["delta"][0]])
    fig = plot_file(out)
    assert any(line.get_marker() == "D" for line in fig.axes[0].get_lines())
    plt.close(fig)


def test_the_third_line_starts_at_the_triple_point(traced):
    """``third_lines``: with the lower -> upper line removed (a sheet that neither end's sweep sees, as on
    Δ ∈ [0.05, 0.2]), the line is traced from the triple point, on its stable side only (Δ > Δ_t), and equals the
    removed one there to 1e-8; with every line present, nothing is added."""
    model, lines, found, _ = traced
    (tp,) = found
    assert third_lines(model, "delta", lines, found, DELTAS) == []
    through = [line for line in lines if line.kind == "crossing" and line.points[0].parameter == DELTAS[-1]]
    removed = max(through, key=lambda line: line.at(DELTAS[-1]))  # lower -> upper: the larger α above Δ_t
    kept = [line for line in lines if line is not removed]
    (new,) = third_lines(model, "delta", kept, found, DELTAS)
    assert new.points[0].parameter == tp.parameter and all(pt.parameter >= tp.parameter for pt in new.points)
    shared = [d for d in DELTAS if d > tp.parameter]
    assert shared and all(abs(new.at(d) - removed.at(d)) < 1e-8 for d in shared)


def test_a_line_lost_at_a_junction_does_not_hide_its_copy_traced_through_it():
    """Two crossing lines that agree where both are traced are one line; the copy kept is the one covering the
    longer range, wherever it comes in the list (a line from the first value lost after two points, and the line
    traced back from the last value through the whole range, as for two hidden layers with Gaussian readouts)."""
    from replica.continuation.linepoints import LinePoint, PhaseLine

    short = PhaseLine("crossing", "delta", [LinePoint(0.08, 1.853, ()), LinePoint(0.084, 1.8935, ())], "lost")
    long = PhaseLine("crossing", "delta", [LinePoint(p, 1.853 + 9.9 * (p - 0.08), ()) for p in (0.12, 0.1, 0.08)])
    long.points[-1] = LinePoint(0.08, 1.853, ())
    other = PhaseLine("fold", "delta", [LinePoint(0.08, 1.853, ())])
    assert distinct_lines([short, other, long]) == [long, other]
    assert distinct_lines([long, short]) == [long]
