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
