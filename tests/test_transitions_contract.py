"""Transitions are what their definitions say, checked by solving at the reported α.

For first-order transitions (γ = 0.5, Δ = 0.1; docs/theory.md §5.2) of an odd activation (tanh2:
flat universal branch, measured α_sp = 1.620, α_c = 1.758) and of an activation with a
quadratic part (``hermite:2=0.4,3=1``: the universal branch learns, so its free entropy
changes with α; measured α_sp = 0.7993, α_c = 0.8144):

* ``alpha_sp`` (spinodal): the specialized branch exists just above it and not just below;
* ``alpha_c`` (thermodynamic transition): the specialized and universal free entropies are
  equal there, the universal one larger just below and the specialized one just above.

Independent of how :mod:`replica.branches` brackets and refines them.
"""

import numpy as np
import pytest

from replica.branches import sweep
from replica.models.shallow import ShallowModel


CASES = {"tanh2": np.array([1.0, 1.7, 3.5]), "hermite:2=0.4,3=1": np.array([0.5, 0.81, 2.0])}


@pytest.fixture(scope="module", params=sorted(CASES))
def solved(request):
    model = ShallowModel(request.param, 0.5, 0.1)
    result = sweep(model, CASES[request.param], progress=False)
    return model, result


def _first_specialized_point(result):
    """Packed point of the specialized branch at the smallest α where it exists."""
    spec = result.branches["specialized"]
    return spec.points[int(np.flatnonzero(spec["exists"])[0])]


def _specialized(model, alpha, warm, *, overlaps=None, **kw):
    res = model.solve_from(alpha, overlaps, warm, start="informed", **kw)
    ok = res.converged and "state" in res.info and np.max(res.info["state"].overlaps) > 1e-3
    return ok, res


def test_spinodal_is_where_the_branch_appears(solved):
    model, result = solved
    a_sp = result.transitions["alpha_sp"]
    assert result.alpha[0] < a_sp < result.alpha[1]
    ok_above, above = _specialized(model, a_sp * (1 + 1e-5), _first_specialized_point(result), method="newton")
    assert ok_above
    ok_below, _ = _specialized(model, a_sp * (1 - 1e-5), above.x, method="newton")
    assert not ok_below
    # the damped iteration from the informed start agrees: no specialized point below
    ok_damped, _ = _specialized(model, a_sp * (1 - 1e-3), None, overlaps=model.starts()["informed"][0],
                                max_iter=3000)
    assert not ok_damped


def test_thermodynamic_transition_is_the_free_entropy_crossing(solved):
    model, result = solved
    a_c = result.transitions["alpha_c"]
    assert result.alpha[1] < a_c < result.alpha[2]
    warm = _first_specialized_point(result)
    diffs = []
    for factor in (1 - 1e-3, 1.0, 1 + 1e-3):
        ok, res = _specialized(model, a_c * factor, warm)
        assert ok
        warm = res.x
        diffs.append(res.info["state"].free_entropy - model.solve_universal(a_c * factor).info["state"].free_entropy)
    assert diffs[0] < 0 < diffs[2]
    assert abs(diffs[1]) < 1e-9
    # the equilibrium on the grid follows: universal below α_c, specialized above
    assert list(result.equilibrium["branch"]) == ["universal", "universal", "specialized"]


def test_no_spinodal_reported_when_the_grid_starts_past_the_transition():
    # tanh(2x), 4point readouts: universal → partial (born at a fold, then a free-entropy crossing),
    # and later a specialized branch born at its own fold. On a grid that starts past the onset the
    # equilibrium is already non-universal: alpha_sp and alpha_c lie below the grid (NaN), not the
    # birth of the later branch (which stays in the per-branch transitions, the same on another grid);
    # on grids through the onset both are located, independently of the grid.
    model = ShallowModel("tanh2", 0.5, 0.1, readout_law="4point")
    late = sweep(model, np.linspace(2.0, 6.0, 9), progress=False)
    assert late.equilibrium["branch"][0] == "partial"
    assert np.isnan(late.transitions["alpha_sp"]) and np.isnan(late.transitions["alpha_c"])
    born = late.branch_transitions["specialized"]["alpha_sp"]
    assert 2.0 < born < 6.0
    other = sweep(model, np.linspace(4.5, 6.5, 5), progress=False)
    assert other.branch_transitions["specialized"]["alpha_sp"] == pytest.approx(born, rel=1e-7)
    early = [sweep(model, grid, progress=False).transitions
             for grid in (np.linspace(0.5, 2.0, 7), np.linspace(0.8, 1.3, 4))]
    assert 0.8 < early[0]["alpha_sp"] < early[0]["alpha_c"] < 1.3
    for key in ("alpha_sp", "alpha_c"):
        assert early[1][key] == pytest.approx(early[0][key], rel=1e-7)


def test_learned_layers_of_phase_names():
    from replica.branches import learned_layers

    assert learned_layers("layer_1", 2) == {1}
    assert learned_layers("layers_1_2-3", 2) == {1, 2}
    assert learned_layers("layer_1+product", 3) == {1}
    assert learned_layers("specialized", 3) == {1, 2, 3}
    for name in ("universal", "weak", "product", "partial-2"):
        assert learned_layers(name, 2) == frozenset()


def test_two_layer_sweep_locates_where_each_layer_is_learned():
    # tanh(2x) with its linear part, γ = (0.5, 0.5), Δ = 0.1: layer 1 is learned from the first α (a
    # vanishing fraction of large-|s| neurons, docs/two_layer.md), layer 2 at the jump into layers_1_2:
    # its transition is the main α_c and the first change into a branch with layer 2, located
    from replica.models.two_layer import TwoLayerModel

    res = sweep(TwoLayerModel("tanh2", (0.5, 0.5), 0.1), np.linspace(1.5, 2.5, 3), progress=False)
    tr = res.transitions
    assert np.isnan(tr["alpha_c_layer_1"]) and np.isnan(tr["alpha_sp_layer_1"])
    assert tr["alpha_c_layer_2"] == tr["alpha_c"] and tr["alpha_sp_layer_2"] == tr["alpha_sp"]
    change = next(c for c in res.equilibrium_changes if c["to"].startswith("layers_1_2"))
    assert change["alpha"] == tr["alpha_c_layer_2"] and 2.0 < change["alpha"] < 2.2
