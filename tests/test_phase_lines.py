"""Phase lines followed as curves in (α, Δ) (replica.continuation.codim2): equal, at the requested Δ, to the
α_sp and α_c that independent α sweeps at those Δ locate (to 1e-8); models that cannot be copied at another
parameter value, and parameters a model does not have, are refused in one line."""
from __future__ import annotations

import numpy as np
import pytest

from replica.continuation import sweep
from replica.continuation.codim2 import model_at, trace_crossing_line, trace_fold_line
from replica.models.shallow import ShallowModel
from replica.models.two_layer import TwoLayerModel
from replica.workflow.safe_write import checkpoint_path

ALPHAS = np.linspace(0.05, 8.0, 30)
DELTAS = np.array([0.1, 0.13, 0.2, 0.35])


def _start(model, alphas, name):
    """The sweep at the model's own Δ, the branch ``name``, and its point at its first grid α (Newton)."""
    res = sweep(model, alphas, progress=False)
    b = res.branches[name]
    i = int(np.flatnonzero(b["exists"])[0])
    return res, b, i, model.solve_from(float(alphas[i]), None, b.points[i], method="newton")


def test_traced_spinodal_and_transition_lines_equal_the_sweeps():
    model = ShallowModel("tanh2", 0.5, 0.1)
    res, b, _, point = _start(model, ALPHAS, "specialized")
    fold = trace_fold_line(model, "delta", DELTAS, b.alpha_start, point, +1)
    change = next(c for c in res.equilibrium_changes if c["kind"] == "crossing")
    j = int(np.searchsorted(ALPHAS, change["alpha"]))
    other = model.solve_from(float(ALPHAS[j]), None, b.points[j], method="newton")
    crossing = trace_crossing_line(model, "delta", DELTAS, change["alpha"], None, other)
    assert fold.end == crossing.end == "range"
    for d in DELTAS[1:]:
        ref = sweep(ShallowModel("tanh2", 0.5, float(d)), np.linspace(0.05, 12.0, 30), progress=False)
        assert fold.at(d) == pytest.approx(ref.transitions["alpha_sp"], abs=1e-8)
        assert crossing.at(d) == pytest.approx(ref.transitions["alpha_c"], abs=1e-8)
    # the lines are monotone here: first-order at every Δ traced (α_sp < α_c), both growing with Δ
    sp, c = np.array([fold.at(d) for d in DELTAS]), np.array([crossing.at(d) for d in DELTAS])
    assert np.all(np.diff(sp) > 0) and np.all(sp < c)


def test_two_layer_fold_line_equals_the_sweeps():
    model = TwoLayerModel("tanh2", (0.5, 0.5), 0.1)
    alphas = np.linspace(0.5, 8.0, 16)
    _, b, _, point = _start(model, alphas, "product")
    deltas = [0.1, 0.12]
    fold = trace_fold_line(model, "delta", deltas, b.alpha_start, point, +1)
    ref = sweep(TwoLayerModel("tanh2", (0.5, 0.5), 0.12), alphas, progress=False)
    assert fold.at(0.12) == pytest.approx(ref.branches["product"].alpha_start, abs=1e-8)


def test_a_model_without_the_hook_or_the_parameter_is_refused():
    class Bare:
        pass

    with pytest.raises(ValueError, match="no with_parameter hook"):
        model_at(Bare(), "delta", 0.2)
    with pytest.raises(ValueError, match="has no parameter 'temperature'.*delta"):
        model_at(ShallowModel("tanh2", 0.5, 0.1), "temperature", 0.2)
    with pytest.raises(ValueError, match="delta"):
        model_at(ShallowModel("tanh2", 0.5, 0.1), "delta", -1.0)


def test_a_copy_at_another_value_is_the_model_built_there():
    a = model_at(ShallowModel("tanh2", 0.5, 0.1, readout_law="4point"), "delta", 0.3)
    b = ShallowModel("tanh2", 0.5, 0.3, readout_law="4point")
    x = b.solve_from(2.0, b.starts()["informed"][0], start="informed").x
    np.testing.assert_array_equal(a.update(2.0, x), b.update(2.0, x))
    assert a.delta == 0.3 and a.readout_law == b.readout_law


# --------------------------------------------------------------------------- replica-phase-diagram --trace
def test_traced_phase_diagram_command_writes_and_draws_the_lines(tmp_path):
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_lines
    from replica.workflow.plotting import plot_file

    out = tmp_path / "lines.h5"
    rc = phase_diagram_main(["--trace", "--activation", "tanh2", "--delta", "0.1,0.15,0.2", "--alpha", "0.05:8:30",
                             "--quiet", "-o", str(out)])
    assert rc == 0
    data = read_phase_lines(out)
    assert data["parameter"] == "delta" and np.array_equal(data["requested"], [0.1, 0.15, 0.2])
    kinds = {line["kind"]: line for line in data["lines"]}
    assert set(kinds) == {"fold", "crossing"} and kinds["fold"]["branches"] == ("specialized", "start")
    ref = sweep(ShallowModel("tanh2", 0.5, 0.2), np.linspace(0.05, 8.0, 30), progress=False)
    for kind, value in (("fold", ref.transitions["alpha_sp"]), ("crossing", ref.transitions["alpha_c"])):
        line = kinds[kind]
        assert line["alpha"][np.flatnonzero(line["delta"] == 0.2)[0]] == pytest.approx(value, abs=1e-8)
    assert data["critical_points"]["alpha"].size == 0  # tanh2 is first-order on the whole range: no cusp
    fig = plot_file(out)
    assert len(fig.axes[0].get_lines()) >= 4
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("extra, message", [
    (["--readout", "gaussian", "--readout-grid", "8,16", "--delta", "0.1"], "traced in Δ (--delta), γ"),
    (["--delta", "0.1,0.2", "--workers", "2"], "runs in this process"),
    (["--delta", "0.2,0.1"], "increasing"),
    (["--delta", "0.1", "--gamma", "0.7,0.5"], "--gamma: give at least two increasing values"),
    (["--delta", "0.1,0.2", "--alpha", "0.05:0.3:5"], "no line passes there"),
])
def test_traced_phase_diagram_refuses_in_one_line(tmp_path, capsys, extra, message):
    from replica.workflow.cli import phase_diagram_main

    out = tmp_path / "lines.h5"
    argv = ["--trace", "--activation", "tanh2", "--quiet", "-o", str(out)] + extra
    if "--alpha" not in extra:
        argv += ["--alpha", "0.05:8:12"]
    assert phase_diagram_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not out.exists() and not checkpoint_path(out).exists()


TRACED = ["--trace", "--activation", "tanh2", "--delta", "0.1,0.15,0.2", "--alpha", "0.05:8:30", "--quiet"]


def _lines_file(path):
    from replica.workflow.io import read_phase_lines

    d = read_phase_lines(path)
    return d["parameters"], d["requested"], d["lines"], d["critical_points"]


def _interrupted(*args, **kwargs):
    raise KeyboardInterrupt


def _interrupted_at_the_crossing(out, monkeypatch, *extra):
    """The traced diagram of ``TRACED`` interrupted (Ctrl-C) when its crossing line starts: exit 130."""
    import replica.continuation.codim2 as codim2
    from replica.workflow.cli import phase_diagram_main

    with monkeypatch.context() as m:
        m.setattr(codim2, "trace_crossing_line", _interrupted)
        assert phase_diagram_main(TRACED + ["-o", str(out)] + list(extra)) == 130


def test_interrupted_traced_diagram_resumes_to_the_same_file(tmp_path, capsys, monkeypatch):
    """Ctrl-C while the second line (the crossing from the first Δ) is traced: exit 130, the sweeps' solves and the
    finished fold line in the checkpoint, no output; ``--resume`` replays the sweeps, keeps the fold line (not
    traced again) and writes exactly the file of an uninterrupted run; a second ``--resume`` leaves it alone;
    other options are refused."""
    import replica.continuation.codim2 as codim2
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_checkpoint_lines

    ref = tmp_path / "ref.h5"
    assert phase_diagram_main(TRACED + ["-o", str(ref)]) == 0
    out = tmp_path / "lines.h5"
    _interrupted_at_the_crossing(out, monkeypatch)
    err = capsys.readouterr().err
    assert "1 lines kept in" in err and "--resume" in err, err
    assert not out.exists()
    kept = read_checkpoint_lines(checkpoint_path(out))
    assert [(line.kind, line.branches) for line in kept] == [("fold", ("specialized", "start"))]
    _interrupted_at_the_crossing(out, monkeypatch, "--resume")  # again: the kept line stays in every rewrite
    assert "1 lines kept in" in capsys.readouterr().err
    assert len(read_checkpoint_lines(checkpoint_path(out))) == 1

    calls = []
    real_fold = codim2.trace_fold_line
    with monkeypatch.context() as m:
        m.setattr(codim2, "trace_fold_line", lambda *a, **k: calls.append(float(a[2][0])) or real_fold(*a, **k))
        assert phase_diagram_main(TRACED + ["-o", str(out), "--resume"]) == 0
    assert calls == [] and not checkpoint_path(out).exists()  # the fold from the last Δ: the kept line reaches it
    (pa, ra, la, ca), (pb, rb, lb, cb) = _lines_file(ref), _lines_file(out)
    assert pa == pb and np.array_equal(ra, rb) and len(la) == len(lb) == 2
    for a, b in zip(la, lb):
        assert (a["kind"], a["branches"], a["end"]) == (b["kind"], b["branches"], b["end"])
        for key in ("delta", "alpha"):
            np.testing.assert_array_equal(a[key], b[key])  # bit-exact
    for key in ca:
        np.testing.assert_array_equal(ca[key], cb[key])
    before = out.read_bytes()
    assert phase_diagram_main(TRACED + ["-o", str(out), "--resume"]) == 0  # finished: nothing to do
    assert out.read_bytes() == before
    capsys.readouterr()
    other = [a if a != "0.1,0.15,0.2" else "0.1,0.2" for a in TRACED]
    assert phase_diagram_main(other + ["-o", str(out), "--resume"]) == 2
    assert "different options" in capsys.readouterr().err and out.read_bytes() == before


def test_traced_lines_in_gamma_are_alpha_over_gamma_lines_and_equal_the_sweeps(tmp_path):
    """One hidden layer with an odd activation (μ₂ = 0): the equations depend on α and γ only through α/γ
    (Q̂ = α v² g'(Q)/(γD), f ∝ (γ/α)·…), so every phase line in (α, γ) is α = c γ; and at the requested γ the traced
    lines equal the α_sp and α_c of independent sweeps (1e-8). Also the fold line starts from a grid point 1 %
    above the fold at γ = 0.3 (Newton from the stored point fails there; the model's own solver does not)."""
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_lines

    out = tmp_path / "gamma_lines.h5"
    gammas = [0.3, 0.4, 0.7]
    assert phase_diagram_main(["--trace", "--activation", "tanh2", "--delta", "0.1", "--gamma", ",".join(map(str, gammas)),
                               "--alpha", "0.5:4:30", "--quiet", "-o", str(out)]) == 0
    data = read_phase_lines(out)
    assert data["parameter"] == "gamma"
    kinds = {line["kind"]: line for line in data["lines"]}
    assert set(kinds) == {"fold", "crossing"} and len(data["lines"]) == 2
    assert kinds["fold"]["gamma"][0] == 0.3  # traced from the first γ (not only back from the last)
    for line in kinds.values():
        ratio = line["alpha"] / line["gamma"]
        assert np.ptp(ratio) < 1e-8 * ratio[0], line["kind"]
    for g in gammas[1:]:
        ref = sweep(ShallowModel("tanh2", g, 0.1), np.linspace(0.5, 8.0, 30), progress=False)
        for kind, value in (("fold", ref.transitions["alpha_sp"]), ("crossing", ref.transitions["alpha_c"])):
            line = kinds[kind]
            assert line["alpha"][np.flatnonzero(line["gamma"] == g)[0]] == pytest.approx(value, abs=1e-8)


# --------------------------------------------------------------------------- critical points (cusps)
DELTA_0, ALPHA_0 = 0.3, 1.7


class CuspToy:
    """Fixed points of F(q) = q − (y³ − μ y − λ)/2, y = q − 1/2, μ = Δ₀ − Δ, λ = α − α₀: the normal form
    of a cusp. For Δ < Δ₀ the curve y(α) is S-shaped with folds at y = ±√(μ/3); they merge at (Δ₀, α₀)."""

    def __init__(self, delta=0.25):
        self.delta = float(delta)

    def with_parameter(self, name, value):
        assert name == "delta"
        return CuspToy(value)

    def update(self, alpha, x):
        y = float(np.asarray(x, dtype=float)[0]) - 0.5
        mu, lam = DELTA_0 - self.delta, alpha - ALPHA_0
        return np.array([0.5 + y - 0.5 * (y ** 3 - mu * y - lam)])

    def state(self, alpha, x):
        from types import SimpleNamespace

        x = np.asarray(x, dtype=float)
        return SimpleNamespace(alpha=alpha, overlaps=x.copy(), mmse=1.0 - x[0], free_entropy=0.0)


def test_a_cusp_known_in_closed_form_is_located_to_1e_6():
    from replica.continuation.codim2 import locate_cusp
    from replica.continuation.linepoints import cusp_discriminant

    model = CuspToy()
    d, coef = cusp_discriminant(model, ALPHA_0, np.array([0.5]), np.array([1.0]), 0.005, {})
    assert d == pytest.approx(3 * (DELTA_0 - model.delta), rel=1e-6)  # the normal form's 3μ
    got = locate_cusp(model, "delta", 0.25, 0.35, ALPHA_0 + 0.01, np.array([0.55]), np.array([1.0]))
    assert got is not None
    assert got[0] == pytest.approx(DELTA_0, abs=1e-6) and got[1] == pytest.approx(ALPHA_0, abs=1e-6)
    assert locate_cusp(model, "delta", 0.25, 0.28, ALPHA_0, np.array([0.5]), np.array([1.0])) is None  # no cusp


@pytest.fixture(scope="module")
def relu_lines():
    """ReLU, γ = 0.5: the sweep at Δ = 0.02 (two specialized branches, a first-order transition between them)
    and its lines traced through Δ = 0.02 … 0.03 (spacing 5e-4)."""
    from replica.continuation.codim2 import trace_phase_lines

    model = ShallowModel("relu", 0.5, 0.02)
    res = sweep(model, np.linspace(0.05, 8.0, 40), progress=False)
    values = np.linspace(0.02, 0.03, 21)
    return model, values, trace_phase_lines(model, res, "delta", values)


def test_crossing_line_ends_where_the_two_branches_merge(relu_lines):
    """The first-order transition between the two specialized branches of small Δ ends where they merge (the
    sweep at Δ = 0.026 finds one specialized branch): the traced line is lost before that Δ, instead of going
    on along one point that both continuations reach (f_b − f_a ≡ 0 there)."""
    _, _, lines = relu_lines
    (crossing,) = [line for line in lines if line.kind == "crossing"]
    assert crossing.branches == ("specialized", "specialized-2") and crossing.end == "lost"
    assert 0.024 < crossing.points[-1].parameter < 0.026
    later = sweep(ShallowModel("relu", 0.5, 0.026), np.linspace(0.05, 8.0, 40), progress=False)
    assert [n for n in later.branches if n != "universal"] == ["specialized"]


def test_relu_first_order_line_ends_at_the_cusp_of_its_spinodals(relu_lines):
    """The spinodals of the two branches, traced in Δ, are lost together; the cusp between them is where the
    first-order line between the branches is lost too."""
    from replica.continuation.codim2 import critical_points

    model, values, lines = relu_lines
    (cp,) = critical_points(model, "delta", lines, values)
    folds = [lines[k] for k in cp.lines]
    assert {line.branches for line in folds} == {("specialized", "end"), ("specialized-2", "start")}
    (crossing,) = [line for line in lines if line.kind == "crossing"]
    assert abs(cp.parameter - crossing.points[-1].parameter) < 1e-5
    assert abs(cp.alpha - crossing.points[-1].alpha) < 1e-4
    assert 0.0245 < cp.parameter < 0.0250 and 1.58 < cp.alpha < 1.59


@pytest.mark.parametrize("keep", [0, 1])
def test_a_cusp_is_located_from_one_of_its_two_spinodals(relu_lines, keep):
    """Where only one spinodal of the S was traced (the other branch seen by no sweep), its lost end still gives
    the cusp: the same point as from both (to 1e-6 in Δ), with −1 for the missing line."""
    from replica.continuation.codim2 import critical_points

    model, values, lines = relu_lines
    (both,) = critical_points(model, "delta", lines, values)
    folds = [k for k, line in enumerate(lines) if line.kind == "fold" and line.end == "lost"]
    one = [line for k, line in enumerate(lines) if k != folds[1 - keep]]
    (got,) = critical_points(model, "delta", one, values)
    assert got.lines[1] == -1 and one[got.lines[0]] is lines[folds[keep]]
    # the cubic fit about another point of the curve: its own error (docs/physics.md: about 1e-7 in Δ, 3e-6 in α)
    assert got.parameter == pytest.approx(both.parameter, abs=1e-6) and got.alpha == pytest.approx(both.alpha, abs=3e-5)


def test_a_cusp_behind_the_last_point_of_a_lone_spinodal_is_located(relu_lines):
    """A lone spinodal whose last point lies already beyond the cusp (the local cubic there has no S; two hidden
    layers, Δ ≈ 0.163): the cusp is bracketed by the line's last two points instead."""
    import dataclasses

    from replica.continuation.codim2 import LinePoint, critical_points

    model, values, lines = relu_lines
    (both,) = critical_points(model, "delta", lines, values)
    folds = [k for k, line in enumerate(lines) if line.kind == "fold" and line.end == "lost"]
    line = lines[folds[0]]
    end = line.points[-1]
    moved = dataclasses.replace(line, points=line.points[:-1] + [LinePoint(both.parameter + 2e-4, end.alpha,
                                                                           end.results)])
    (got,) = critical_points(model, "delta", [moved], values)
    assert got.lines == (0, -1) and got.parameter == pytest.approx(both.parameter, abs=1e-6)


def test_one_cusp_from_two_spinodals_lost_at_different_values_is_one_critical_point(relu_lines):
    """The two spinodals of one S, lost at different values of Δ (one followed a little past the cusp: ReLU with
    probit labels, Δ ≈ 0.0037), are not a pair; the cusp located from each alone is then one critical point, with
    both lines, not two a cubic fit's error apart."""
    import dataclasses

    from replica.continuation.codim2 import critical_points

    model, values, lines = relu_lines
    (both,) = critical_points(model, "delta", lines, values)
    folds = [k for k, line in enumerate(lines) if line.kind == "fold" and line.end == "lost"]
    shorter = dataclasses.replace(lines[folds[0]], points=lines[folds[0]].points[:-1])
    changed = [shorter if k == folds[0] else line for k, line in enumerate(lines)]
    (got,) = critical_points(model, "delta", changed, values)
    assert sorted(got.lines) == sorted(folds)
    assert got.parameter == pytest.approx(both.parameter, abs=1e-6) and got.alpha == pytest.approx(both.alpha, abs=3e-5)


def test_the_stored_critical_point_is_where_the_sweeps_lose_the_second_branch(tmp_path):
    """``replica-phase-diagram --trace`` (ReLU, γ = 0.5) stores the cusp with the indices of the two spinodals
    that meet there; independent sweeps find both specialized branches 2e-4 below its Δ, and the stored
    transition line ends within 1e-5 of it."""
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_lines

    out = tmp_path / "relu.h5"
    assert phase_diagram_main(["--trace", "--delta", "0.02:0.03:21", "--alpha", "0.05:8:40", "--quiet",
                               "-o", str(out)]) == 0
    data = read_phase_lines(out)
    cp = data["critical_points"]
    assert cp["delta"].size == 1 and cp["lines"].shape == (1, 2)
    d_star, a_star = float(cp["delta"][0]), float(cp["alpha"][0])
    assert {data["lines"][k]["kind"] for k in cp["lines"][0]} == {"fold"}
    (crossing,) = [line for line in data["lines"] if line["kind"] == "crossing"]
    assert abs(crossing["delta"][-1] - d_star) < 1e-5 and abs(crossing["alpha"][-1] - a_star) < 1e-4
    below = sweep(ShallowModel("relu", 0.5, d_star - 2e-4), np.linspace(0.05, 8.0, 40), progress=False)
    folds = sorted(b.alpha_end if b.end_kind == "fold" else b.alpha_start for n, b in below.branches.items()
                   if "fold" in (b.start_kind, b.end_kind))
    assert len(folds) == 2 and abs(0.5 * sum(folds) - a_star) < 1e-2


def test_a_damaged_traced_checkpoint_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    """A checkpoint whose kept line lost its branch points or its points: ``--resume`` refuses it in one line
    (exit 2) instead of failing later with a traceback."""
    import h5py

    from replica.workflow.cli import phase_diagram_main

    out = tmp_path / "lines.h5"
    _interrupted_at_the_crossing(out, monkeypatch)
    for damage in ("points", "alpha"):
        with h5py.File(checkpoint_path(out), "a") as h5:
            g = h5["traced_lines/0"]
            if damage == "points":
                g.move("points_x_0", "kept_aside")
            else:
                g.move("kept_aside", "points_x_0")
                del g["alpha"]
                g["alpha"] = np.zeros(0)
        capsys.readouterr()
        assert phase_diagram_main(TRACED + ["-o", str(out), "--resume"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cannot read the checkpoint" in err[0], err


# --------------------------------------------------------------------------- branch-point lines (continuous transitions)
class PitchforkToy:
    """Fixed points of F(x₁, x₂) = (x₁ − (x₁ − ½)/2, q + (α − α₀(Δ) − q²) q/2) with q = max(x₂, 0), α₀ = 1 + Δ²: the
    host curve x₂ = 0 and the curve x₂² = α − α₀ that branches off it at α₀ (half a pitchfork), where the host's
    leading eigenvalue 1 + (α − α₀)/2 crosses 1. As an overlap's map, it is not differentiable at x₂ = 0 from below."""

    def __init__(self, delta=0.1):
        self.delta = float(delta)

    def with_parameter(self, name, value):
        assert name == "delta"
        return PitchforkToy(value)

    def update(self, alpha, x):
        x1, x2 = np.asarray(x, dtype=float)
        q = max(x2, 0.0)
        return np.array([x1 - 0.5 * (x1 - 0.5), q + 0.5 * (alpha - 1.0 - self.delta ** 2 - q ** 2) * q])

    def state(self, alpha, x):
        from types import SimpleNamespace

        x = np.asarray(x, dtype=float)
        return SimpleNamespace(alpha=alpha, overlaps=x.copy(), mmse=1.0 - x[0], free_entropy=0.0)


def test_a_branch_point_line_known_in_closed_form_is_followed_to_1e_9():
    from replica.continuation.codim2 import trace_branch_point_line
    from replica.continuation.correctors import correct

    model = PitchforkToy(0.1)
    # the host point with a rounding residue on its vanishing overlap, as the solvers leave it on a real branch
    host = correct(model, 1.2, np.array([0.5, -1e-20]), {}).result
    deltas = [0.1, 0.3, 0.6, 1.0]
    line = trace_branch_point_line(model, "delta", deltas, 1.0 + 0.1 ** 2, host)
    assert line.kind == "branch_point" and line.end == "range"
    for d in deltas:
        assert line.at(d) == pytest.approx(1.0 + d ** 2, abs=1e-9)
        assert abs(line.points[[p.parameter for p in line.points].index(d)].results[0].x[1]) < 1e-12  # the host


def test_relu_4point_branch_point_line_is_where_the_weak_readouts_specialize(tmp_path):
    """ReLU, v ∈ {±1, ±3}/√5: the strong readouts specialize continuously at the universal branch's instability,
    the weak ones continuously later, where a branch bifurcates off ``partial``. The traced line equals the start of
    that branch in sweeps at the sampled Δ (1e-8)."""
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_lines

    out = tmp_path / "relu_lines.h5"
    assert phase_diagram_main(["--trace", "--activation", "relu", "--readout", "4point", "--delta", "0.02,0.05,0.1",
                               "--alpha", "0.05:8:30", "--quiet", "-o", str(out)]) == 0
    kinds = {line["kind"]: line for line in read_phase_lines(out)["lines"]}
    assert set(kinds) == {"instability", "branch_point"} and kinds["branch_point"]["branches"] == ("partial",)
    line = kinds["branch_point"]
    for d in (0.05, 0.1):
        a = float(line["alpha"][np.flatnonzero(line["delta"] == d)[0]])
        res = sweep(ShallowModel("relu", 0.5, d, readout_law="4point"), np.linspace(0.05, 10.0, 30), progress=False)
        starts = [b.alpha_start for n, b in res.branches.items()
                  if n != "partial" and b.start_kind == "bifurcation" and b.alpha_start > 0.5]
        assert len(starts) == 1 and a == pytest.approx(starts[0], abs=1e-8)


def test_two_layer_onset_of_layer_1_is_traced_and_equals_the_sweeps():
    """Two hidden layers, tanh(2x): the first layer's neurons specialize continuously (``layer_1`` starts where its
    learned overlaps vanish, a bifurcation off the universal branch, whose eigenvalue the profile solver does not
    follow). Its onset line equals the start of ``layer_1`` in a sweep at the next Δ (1e-8), and is in the lines of a
    sweep."""
    from replica.continuation.codim2 import phase_line_tasks, trace_bifurcation_line
    from replica.continuation.linepoints import grid_point

    model = TwoLayerModel("tanh2", (0.5, 0.5), 0.1)
    alphas = np.linspace(0.05, 8.0, 30)
    res = sweep(model, alphas, progress=False)
    b = res.branches["layer_1"]
    assert b.start_kind == "bifurcation"
    assert ("bifurcation", ("layer_1", "start")) in [label for label, _, _ in phase_line_tasks(model, res, "delta",
                                                                                                [0.1, 0.12])]
    line = trace_bifurcation_line(model, "delta", [0.1, 0.12], b.alpha_start, grid_point(model, alphas, b, b.alpha_start),
                                  +1)
    assert line.kind == "bifurcation" and line.end == "range"
    ref = sweep(TwoLayerModel("tanh2", (0.5, 0.5), 0.12), alphas, progress=False).branches["layer_1"]
    assert ref.start_kind == "bifurcation" and line.at(0.12) == pytest.approx(ref.alpha_start, abs=1e-8)
    assert line.at(0.12) > line.at(0.1)  # more label noise: later onset


@pytest.mark.parametrize("values", [[0.1, 0.1 + 1e-16], [0.1, 0.1, 0.3], [0.3, 0.3 - 5e-17, 0.1]])
def test_a_line_through_values_closer_than_their_rounding_is_traced(values):
    """Values a few roundings apart (the triple-point search continues a line from its nearest point to a trial value
    of Brent's method, next to the bracket's end: two hidden layers, --alpha 0.05:8:20) or repeated: the step is then
    the target itself, and no secant is taken through two points at one value (was a ZeroDivisionError)."""
    from replica.continuation.codim2 import trace_branch_point_line
    from replica.continuation.correctors import correct

    start = values[0]
    model = PitchforkToy(start)
    host = correct(model, 1.0 + start ** 2 + 0.1, np.array([0.5, 0.0]), {}).result
    line = trace_branch_point_line(model, "delta", values, 1.0 + start ** 2, host)
    assert line.end == "range"
    for d in values:
        assert line.at(d) == pytest.approx(1.0 + d ** 2, abs=1e-9)


def test_a_line_one_end_cannot_start_is_traced_from_the_other_without_a_warning(tmp_path, caplog):
    """Two hidden layers, 30 α from 0.05: at Δ = 0.1 the short lower ``layers_1_2`` sheet lies between two grid points,
    so its spinodals cannot be started there; the sweep at Δ = 0.15 starts them and traces them back. The diagram is
    complete, and nothing is reported missing (a fresh reviewer saw four warnings that the lines were not traced);
    a line that neither end can start is (:func:`replica.continuation.triples.untraced`)."""
    import logging

    from replica.continuation.triples import untraced
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.io import read_phase_lines

    out = tmp_path / "lines.h5"
    with caplog.at_level(logging.WARNING):
        assert phase_diagram_main(["--trace", "--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2",
                                   "--unit-variance", "--delta", "0.1,0.12,0.15", "--alpha", "0.05:8:30", "--quiet",
                                   "-o", str(out)]) == 0
    assert not [r for r in caplog.records if "is not traced" in r.getMessage()]
    labels = {(line["kind"], line["branches"]) for line in read_phase_lines(out)["lines"]}
    assert {("fold", ("layers_1_2", "start")), ("fold", ("layers_1_2", "end"))} <= labels
    # a task that gave no line and that no line reaches is reported, one that a line reaches is not
    from replica.continuation.codim2 import LinePoint, PhaseLine

    tasks = [(("fold", ("a", "start")), 1.0, None), (("fold", ("b", "start")), 2.0, None)]
    other = PhaseLine("fold", "delta", [LinePoint(0.2, 2.0, ()), LinePoint(0.1, 2.0, ())])
    assert untraced(tasks, [None, None, other], 2, 0.1, 0.2) == [(("fold", ("a", "start")), 1.0, 0.1)]


def test_a_line_goes_on_past_a_failure_of_a_far_prediction():
    """A locator that fails once at a value the line passes (a far prediction, not an end): the step is halved and
    the line goes on to the last requested value with every requested value on it."""
    from replica.continuation.linepoints import LinePoint, _trace

    values = np.linspace(0.05, 0.5, 20)
    failed = []

    def locate(p, alpha, xs, move):
        if not failed and p > 0.2:
            failed.append(p)
            return None
        return 2.0 * p + 1.0, (None,)

    line = _trace("crossing", "delta", values, LinePoint(0.05, 1.1, (None,)), locate)
    assert failed and line.end == "range"
    assert all(line.at(v) == 2.0 * v + 1.0 for v in values[1:])


def test_an_onset_line_does_not_jump_onto_another_onset_after_a_short_step(monkeypatch):
    """:func:`replica.continuation.codim2.trace_bifurcation_line` with a stubbed locator: the onset moves as α = 3 + 10Δ
    up to Δ = 0.07, beyond which the locator finds another curve's onset 0.03 lower (three hidden layers: the onsets
    of ``layers_1_2-2`` and ``-3``, 0.037 apart at Δ ≈ 0.0708). After a short step such a point is farther from the secant's
    prediction than half the predicted move and than jump_offset·α, so the line is lost at 0.07 instead of going on
    along the other curve (the floor was ten times wider and let this jump through)."""
    from types import SimpleNamespace

    import replica.continuation.codim2 as codim2

    def onset(model, alpha, x, side, inside, solve_kw):
        p = model
        a = 3.0 + 10.0 * p if p <= 0.07 else 3.0 + 10.0 * p - 0.03
        return a, None, SimpleNamespace(x=np.zeros(1))

    monkeypatch.setattr(codim2, "bifurcation_at", onset)
    monkeypatch.setattr(codim2, "model_at", lambda model, name, p: p)
    start = SimpleNamespace(x=np.zeros(1), info={})
    line = codim2.trace_bifurcation_line(0.05, "delta", [0.05, 0.06, 0.065, 0.068, 0.069, 0.0695, 0.0705, 0.08], 3.5,
                                         start, +1)
    assert line.end == "lost"
    assert 0.07 - 1e-6 < line.points[-1].parameter <= 0.07
    assert all(abs(pt.alpha - (3.0 + 10.0 * pt.parameter)) < 1e-12 for pt in line.points[1:])
