"""Branch points located by root finding and branch switching (replica.continuation.branchpoints) on maps with
a known pitchfork and a known transcritical point."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from replica.continuation.branchpoints import branch_points, crossing_intervals, switch_branches
from replica.continuation.curves import trace_curve
from replica.engine import FixedPointResult

ALPHA_0 = 1.2345678901
ALPHAS = np.linspace(0.5, 2.0, 7)  # the branch point lies between two grid points (1.25 is not one)


class ToyMap:
    """F(q, p; α) = (q + t q − c(q), p/2 + 0.3) with t = tanh(α − α₀): fixed points q = 0 for every α (its
    eigenvalue of F_x, 1 + t, crosses 1 at α₀, nonlinearly in α) and, for c(q) = q³ (pitchfork), q = ±√t above
    α₀; for c(q) = q² (transcritical), q = t on both sides. p = 0.6 keeps the point away from the universal
    one."""

    def __init__(self, kind):
        self.kind = kind

    def update(self, alpha, x):
        q, p = np.asarray(x, dtype=float)
        c = q ** 3 if self.kind == "pitchfork" else q ** 2
        return np.array([q + np.tanh(alpha - ALPHA_0) * q - c, 0.5 * p + 0.3])

    def state(self, alpha, x):
        x = np.asarray(x, dtype=float)
        return SimpleNamespace(alpha=alpha, overlaps=x.copy(), mmse=1.0 - x[0], free_entropy=0.0)


def _trivial_curve(model):
    x = np.array([0.0, 0.6])
    seed = FixedPointResult(x, True, "converged", "", 0, 0.0, 0.0, "toy", {})
    seed.info["state"] = model.state(ALPHAS[0], x)
    curve = trace_curve(model, ALPHAS, float(ALPHAS[0]), seed, {})
    assert sorted(curve.results) == list(range(ALPHAS.size))  # followed through the branch point
    return curve


@pytest.mark.parametrize("kind", ["pitchfork", "transcritical"])
def test_branch_point_is_located_to_1e_9(kind):
    model = ToyMap(kind)
    curve = _trivial_curve(model)
    assert crossing_intervals(curve) == [(2, 3)]
    (bp,) = branch_points(model, ALPHAS, curve, {}, {})
    assert bp.kind == "branch_point"
    assert bp.alpha == pytest.approx(ALPHA_0, abs=1e-9)
    assert bp.eigenvalue.real == pytest.approx(1.0, abs=1e-8) and bp.eigenvalue.imag == 0.0
    # the null vector of F_x − I is the q direction
    np.testing.assert_allclose(np.abs(bp.direction), [1.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("kind, expected", [("pitchfork", lambda a: np.sqrt(np.tanh(a - ALPHA_0))),
                                            ("transcritical", lambda a: np.tanh(a - ALPHA_0))])
def test_switching_lands_on_the_crossing_curve(kind, expected):
    """The crossing curve at α* ± 1e-3 (non-negative overlaps only: q > 0, above α*)."""
    model = ToyMap(kind)
    curve = _trivial_curve(model)
    cache = {}
    (bp,) = branch_points(model, ALPHAS, curve, {}, cache)
    found = switch_branches(model, ALPHAS, curve, bp, {}, cache)
    assert len(found) == 1
    a, r = found[0]
    assert a > ALPHA_0
    assert r.x[0] == pytest.approx(expected(a), rel=1e-8) and r.x[1] == pytest.approx(0.6, abs=1e-12)


def test_no_branch_point_where_the_stability_stays_below_one():
    model = ToyMap("pitchfork")
    alphas = np.linspace(0.5, 1.2, 5)
    x = np.array([0.0, 0.6])
    seed = FixedPointResult(x, True, "converged", "", 0, 0.0, 0.0, "toy", {})
    seed.info["state"] = model.state(alphas[0], x)
    curve = trace_curve(model, alphas, float(alphas[0]), seed, {})
    assert branch_points(model, alphas, curve, {}, {}) == []


class TwinMap(ToyMap):
    """Two identical pitchfork coordinates q₁, q₂ (and p): the eigenvalue 1 + tanh(α − α₀) of F_x is double on
    q = 0, as where the nodes of a rule cross together; the null space is two-dimensional."""

    def update(self, alpha, x):
        q1, q2, p = np.asarray(x, dtype=float)
        t = np.tanh(alpha - ALPHA_0)
        return np.array([q1 + t * q1 - q1 ** 3, q2 + t * q2 - q2 ** 3, 0.5 * p + 0.3])


def test_a_degenerate_branch_point_is_located_and_not_switched():
    model = TwinMap("pitchfork")
    x = np.array([0.0, 0.0, 0.6])
    seed = FixedPointResult(x, True, "converged", "", 0, 0.0, 0.0, "toy", {})
    seed.info["state"] = model.state(ALPHAS[0], x)
    curve = trace_curve(model, ALPHAS, float(ALPHAS[0]), seed, {})
    cache = {}
    (bp,) = branch_points(model, ALPHAS, curve, {}, cache)
    assert bp.kind == "degenerate_branch_point" and bp.multiplicity == 2
    assert bp.alpha == pytest.approx(ALPHA_0, abs=1e-9)
    assert switch_branches(model, ALPHAS, curve, bp, {}, cache) == []


def test_a_complex_pair_crossing_is_a_stability_crossing():
    """F(q₁, q₂; α) = q + A q with A = tanh(α − α₀) I + ω J (J the rotation by π/2): the eigenvalues
    1 + tanh(α − α₀) ± iω of F_x cross Re λ = 1 at α₀, and no other curve of fixed points crosses q = 0
    there."""

    class Rotating(ToyMap):
        def update(self, alpha, x):
            q1, q2, p = np.asarray(x, dtype=float)
            a, w = np.tanh(alpha - ALPHA_0), 0.3
            return np.array([q1 + a * q1 - w * q2, q2 + w * q1 + a * q2, 0.5 * p + 0.3])

    model = Rotating("pitchfork")
    x = np.array([0.0, 0.0, 0.6])
    seed = FixedPointResult(x, True, "converged", "", 0, 0.0, 0.0, "toy", {})
    seed.info["state"] = model.state(ALPHAS[0], x)
    curve = trace_curve(model, ALPHAS, float(ALPHAS[0]), seed, {})
    (bp,) = branch_points(model, ALPHAS, curve, {}, {})
    assert bp.kind == "stability_crossing" and abs(bp.eigenvalue.imag) == pytest.approx(0.3, rel=1e-6)
    assert bp.alpha == pytest.approx(ALPHA_0, abs=1e-9)


def test_three_layers_branch_point_is_where_the_bifurcating_branch_starts():
    """Three hidden layers (γ = 0.5 each, tanh2, Δ = 0.1): ``layers_1_2`` loses its stability at a branch point
    where several eigenvalues of F_x (255 unknowns) cross 1 together, and ``layers_1_2-2`` starts there by
    support loss. The branch point is a root of the leading eigenvalue minus 1 (checked here on both sides of
    it, 1e-8 away) and the bifurcating branch's start is that root, whatever the step control reached."""
    from replica.continuation import sweep
    from replica.continuation.operators import stability
    from replica.continuation.stepper import advance
    from replica.models.deep_fronts import DeepFrontModel

    model = DeepFrontModel(gammas=(0.5, 0.5, 0.5), activation="tanh2", delta=0.1)
    alphas = np.linspace(0.5, 8.0, 16)
    res = sweep(model, alphas, progress=False)
    host, child = res.branches["layers_1_2"], res.branches["layers_1_2-2"]
    assert host.branch_point_kinds == ("degenerate_branch_point",)
    (a_bp,) = host.branch_points
    assert child.start_kind == "bifurcation" and child.alpha_start == a_bp
    assert 3.878 < a_bp < 3.8781
    i = int(np.searchsorted(alphas, a_bp)) - 1  # the host's grid point below the branch point
    assert host["exists"][i] and host["exists"][i + 1]
    r0 = model.solve_from(float(alphas[i]), None, host.points[i], method="newton")
    values = []
    for a in (a_bp - 1e-8, a_bp + 1e-8):
        r, _, failure = advance(model, float(alphas[i]), r0, a, None, {})
        assert failure is None
        values.append(stability(model, a, r.x, order=2))
    assert values[0] < 1.0 < values[1]


def test_stored_branch_points_are_roots_of_the_leading_eigenvalue(tmp_path):
    """The file stores, per branch, the branch points and their kinds: read back from an L = 3 sweep file, the
    stored α of ``layers_1_2`` has the branch's leading eigenvalue below 1 just before it and above just after
    (recomputed here on the branch), and branches without a crossing store an empty list."""
    from replica.continuation import sweep
    from replica.continuation.operators import stability
    from replica.continuation.stepper import advance
    from replica.models.deep_fronts import DeepFrontModel
    from replica.workflow.io import read_sweep, write_sweep

    model = DeepFrontModel(gammas=(0.5, 0.5, 0.5), activation="tanh2", delta=0.1)
    alphas = np.linspace(3.5, 4.5, 3)
    res = sweep(model, alphas, progress=False)
    write_sweep(tmp_path / "s.h5", res, {"layers": 3})
    attrs = read_sweep(tmp_path / "s.h5")["branch_attributes"]
    (a_bp,) = attrs["layers_1_2"]["branch_points"]
    assert attrs["layers_1_2"]["branch_point_kinds"] == "degenerate_branch_point"
    assert all(np.size(a["branch_points"]) == 0 for n, a in attrs.items() if n != "layers_1_2")
    host = res.branches["layers_1_2"]
    r0 = model.solve_from(float(alphas[0]), None, host.points[0], method="newton")
    values = [stability(model, a, advance(model, float(alphas[0]), r0, a, None, {})[0].x, order=2)
              for a in (a_bp - 1e-8, a_bp + 1e-8)]
    assert values[0] < 1.0 < values[1]


def _curve_ending_past_the_branch_point(model, kind):
    """The trivial curve of ``model`` on ALPHAS cut after its grid point 1.0, with an end of ``kind`` at 1.24: past
    the branch point α₀ = 1.2346, before the next grid point 1.25 (as a curve that passes a branch point and
    ends by support loss on a coarse grid)."""
    from replica.continuation.records import End
    from replica.continuation.stepper import advance

    curve = _trivial_curve(model)
    keep = [i for i in curve.results if ALPHAS[i] <= 1.0]
    curve.results = {i: curve.results[i] for i in keep}
    curve.stability = {i: curve.stability[i] for i in keep}
    curve.trail = [(a, r) for a, r in curve.trail if a <= 1.0]
    last, _, failure = advance(model, 1.0, curve.results[max(keep)], 1.24, None, {}, trail=curve.trail)
    assert failure is None
    curve.ends[+1] = End(1.24, kind, last, 1.24)
    return curve


@pytest.mark.parametrize("kind", ["pitchfork", "transcritical"])
def test_a_branch_point_between_the_last_grid_point_and_the_end_is_located(kind):
    """No two grid points of the curve lie on either side of 1, but its last point before a bifurcation end does:
    the crossing is located there, to 1e-9, on every grid."""
    from replica.continuation.branchpoints import end_intervals

    model = ToyMap(kind)
    curve = _curve_ending_past_the_branch_point(model, "bifurcation")
    assert crossing_intervals(curve) == []
    assert end_intervals(model, ALPHAS, curve) == [(1.0, 1.24)]
    (bp,) = branch_points(model, ALPHAS, curve, {}, {})
    assert bp.kind == "branch_point" and bp.alpha == pytest.approx(ALPHA_0, abs=1e-9)


def test_a_fold_end_gives_no_end_interval():
    """At a fold the eigenvalue tends to 1 at the end itself: that is the fold, not a branch point."""
    from replica.continuation.branchpoints import end_intervals

    model = ToyMap("pitchfork")
    curve = _curve_ending_past_the_branch_point(model, "fold")
    assert end_intervals(model, ALPHAS, curve) == []
    assert branch_points(model, ALPHAS, curve, {}, {}) == []


@pytest.mark.parametrize("delta, fine, coarse", [
    (0.1, (1.98, 2.06, 9), [(0.5, 4.0, 8), (1.025, 3.025, 5)]),
    (0.12, (2.2, 2.3, 6), [(0.5, 4.0, 8)]),
])
def test_two_layers_gaussian_readouts_first_order_crossing_on_coarse_grids(delta, fine, coarse):
    """Two hidden layers with Gaussian readouts (γ = 0.5 each, tanh2): the partially specialized sheet passes a
    degenerate branch point (Δ = 0.1: α ≈ 2.0274; the readout-side front leaves 0), and the curve that leaves it
    becomes the equilibrium until the first-order crossing onto the sheet with every layer-1 neuron learned. On
    coarse grids no grid point lies on that curve: it is found from the branch point
    (:func:`replica.continuation.seeds.degenerate_switches`), and the crossing is located in an interval of nodes
    that holds two changes of the equilibrium, or that starts or ends at a bifurcation
    (:func:`replica.continuation.equilibrium.equilibrium_changes`). The crossing equals the fine grid's to 1e-8.
    Before, the coarse sweeps jumped at the partial sheet's end (Δ = 0.1: 2.0313 on 0.5:4:8, 2.0274 on
    1.025:3.025:5; Δ = 0.12: 2.2502)."""
    from replica.continuation import sweep
    from replica.workflow.model_options import build_model

    options = {"layers": 2, "gamma": [0.5, 0.5], "activation": "tanh2", "drop_hermite": [], "unit_variance": True,
               "prior": "gaussian", "readout": "gaussian", "readout_grid": None, "delta": delta}

    def first_order(grid):
        res = sweep(build_model(options), np.linspace(*grid), progress=False)
        jumps = [c for c in res.equilibrium_changes
                 if c["kind"] == "crossing" and abs(c["mmse_after"] - c["mmse_before"]) > 1e-2]
        assert len(jumps) == 1, res.equilibrium_changes
        return jumps[0]

    reference = first_order(fine)
    assert fine[0] < reference["alpha"] < fine[1]
    for grid in coarse:
        got = first_order(grid)
        assert got["alpha"] == pytest.approx(reference["alpha"], abs=1e-8), grid
        assert got["mmse_after"] == pytest.approx(reference["mmse_after"], abs=1e-8), grid


def test_a_crossing_with_an_unsolved_end_is_bisected_not_lost():
    """``locate_crossing`` where one end's difference is ±inf (a branch not solved there): regula falsi would give
    NaN (and the curve would then be continued to α = NaN, which never ends); the first step bisects instead."""
    import math

    from replica.continuation.events import locate_crossing

    root = locate_crossing(lambda a: (-math.inf, None) if a == 0.0 else (a - 0.3, 1.0), 0.0, 1.0)
    assert root == pytest.approx(0.3, abs=1e-12)
    root = locate_crossing(lambda a: (math.inf, None) if a == 1.0 else (a - 0.7, 1.0), 0.0, 1.0)
    assert root == pytest.approx(0.7, abs=1e-12)


def test_an_excursion_resting_on_an_unsolved_branch_is_dropped():
    """B → A with A not solved there (mmse NaN), then A → B: the pair is dropped; a first-order change with an
    unsolved side that is not undone is kept, and so is a solved zigzag."""
    import math

    from replica.continuation.equilibrium import without_unsolved_zigzags

    def ch(a, frm, to, before, after):
        return {"alpha": a, "from": frm, "to": to, "mmse_before": before, "mmse_after": after}

    first, last = ch(2.0274, "A", "B", 0.1335, 0.1335), ch(2.0513, "B", "C", 0.1313, 0.0879)
    zig = [first, ch(2.0284, "B", "A", 0.1335, math.nan), ch(2.0313, "A", "B", 0.1332, 0.1332), last]
    assert without_unsolved_zigzags(zig) == [first, last]
    kept = [first, ch(2.0513, "B", "C", math.nan, 0.0879)]
    assert without_unsolved_zigzags(kept) == kept
    solved = [first, ch(2.0284, "B", "A", 0.1335, 0.1335), ch(2.0313, "A", "B", 0.1332, 0.1332)]
    assert without_unsolved_zigzags(solved) == solved
