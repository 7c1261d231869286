"""The continuation package (``replica.continuation``): one settings object in force for a sweep, correctors that
always return a status, the universal branch as a curve object, and the layout rules (modules of at most 400
lines, no tuning constant outside the settings)."""

import ast
import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

import replica.branches as compat
import replica.continuation as rc
from replica.continuation import correctors, curves, settings
from replica.continuation.problem import CORRECTION_STATUSES, Correction
from replica.models.shallow import ShallowModel

PACKAGE = Path(rc.__file__).parent
ALPHAS = np.linspace(0.5, 3.0, 6)


def _tanh2():
    return ShallowModel("tanh2", 0.5, 0.1)


# --------------------------------------------------------------------------- settings
def test_settings_are_frozen_and_checked():
    with pytest.raises(dataclasses.FrozenInstanceError):
        rc.DEFAULT.max_move = 0.1
    for bad in (-1e-3, float("nan"), "0.05", True):
        with pytest.raises(ValueError, match="max_move"):
            rc.ContinuationSettings(max_move=bad)
    with pytest.raises(TypeError, match="ContinuationSettings"):
        with rc.using({"max_move": 0.1}):
            pass


def test_using_is_scoped_and_restored_after_an_error():
    other = dataclasses.replace(rc.DEFAULT, min_step=1e-6)
    assert rc.active() is rc.DEFAULT
    with pytest.raises(RuntimeError):
        with rc.using(other):
            assert rc.active().min_step == 1e-6
            raise RuntimeError
    assert rc.active() is rc.DEFAULT


def test_a_sweep_reads_its_settings():
    """The defaults given explicitly reproduce the default sweep bit for bit; a coarser end bisection
    (``min_step`` 1e-3 instead of 1e-9) moves the located fold of tanh2, where the specialized branch
    appears (α_sp ≈ 1.62), by more than the default precision and less than the coarse step."""
    default = rc.sweep(_tanh2(), ALPHAS, progress=False)
    explicit = rc.sweep(_tanh2(), ALPHAS, progress=False, settings=rc.DEFAULT)
    coarse = rc.sweep(_tanh2(), ALPHAS, progress=False,
                      settings=dataclasses.replace(rc.DEFAULT, min_step=1e-3))
    a, b, c = (r.transitions["alpha_sp"] for r in (default, explicit, coarse))
    assert a == b and 1.5 < a < 1.7
    assert 1e-8 < abs(c - a) < 5e-3
    np.testing.assert_array_equal(default.equilibrium["mmse"], explicit.equilibrium["mmse"])
    assert rc.active() is rc.DEFAULT


# --------------------------------------------------------------------------- correctors
def test_correctors_never_return_none():
    model = _tanh2()
    x = model.solve_from(2.0, model.starts()["informed"][0], start="informed").x
    good = correctors.correct(model, 2.0, x * (1 + 1e-4), {})
    assert isinstance(good, Correction) and good.converged and good.status == "converged"
    assert "state" in good.result.info and np.allclose(good.result.x, x, atol=1e-8)
    bad = correctors.correct(model, 2.0, np.full_like(x, np.nan), {})
    assert bad.status == "not_finite" and bad.result is None and not bad.converged
    krylov = correctors.newton_krylov(model, 2.0, x * (1 + 1e-4), {}, max_iter=1)
    assert isinstance(krylov, Correction) and krylov.status in CORRECTION_STATUSES
    far = correctors.newton_krylov(model, 2.0, x + 0.3, {}, max_iter=1)
    assert far.status == "max_iter" and far.result is None


def test_a_correction_carries_a_result_exactly_when_converged():
    with pytest.raises(ValueError, match="status"):
        Correction("failed")
    with pytest.raises(ValueError, match="exactly"):
        Correction("converged")


# --------------------------------------------------------------------------- the universal curve
def test_the_universal_branch_is_a_curve_object():
    u = curves.UNIVERSAL
    assert u.is_universal and not curves.Curve("informed").is_universal
    assert (u.lo(ALPHAS), u.hi(ALPHAS)) == (ALPHAS[0], ALPHAS[-1]) and u.ends == {} and u.results == {}


# --------------------------------------------------------------------------- layout
def _modules():
    return sorted(PACKAGE.glob("*.py"))


def test_modules_are_at_most_400_lines():
    long = {p.name: n for p in _modules() if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


def _numeric(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool) \
        or isinstance(node, (ast.BinOp, ast.UnaryOp)) and all(_numeric(c) for c in ast.iter_child_nodes(node)
                                                              if not isinstance(c, (ast.operator, ast.unaryop)))


def test_no_tuning_constant_outside_the_settings():
    """Every number the algorithms read is a field of ContinuationSettings: no module-level numeric constant and
    no numeric default argument in the package's other modules."""
    found = []
    for p in _modules():
        if p.name == "settings.py":
            continue
        tree = ast.parse(p.read_text())
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and _numeric(node.value):
                found.append(f"{p.name}:{node.lineno}")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                a = node.args
                positional = (a.posonlyargs + a.args)[len(a.posonlyargs + a.args) - len(a.defaults):]
                pairs = list(zip(positional, a.defaults)) + [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults)
                                                             if d is not None]
                # the difference stencil's order and a progress bar's increment are choices, not tolerances
                found += [f"{p.name}:{node.name}({arg.arg})" for arg, d in pairs
                          if _numeric(d) and arg.arg not in ("order", "n")]
    assert not found, found
    numbers = [f.name for f in dataclasses.fields(rc.ContinuationSettings)]
    assert len(numbers) >= 38 and "dense_size" in numbers and "fd_step" in numbers


def test_the_former_module_reexports_the_same_objects():
    for name in compat.__all__:
        assert getattr(compat, name) is getattr(rc, name), name


def test_the_size_policy_is_one_function():
    """Dense Jacobians up to ``arnoldi_size`` unknowns, up to ``dense_size`` with a vectorized map."""
    from replica.continuation.operators import dense_jacobians

    s = rc.DEFAULT
    assert dense_jacobians(s.arnoldi_size, False) and not dense_jacobians(s.arnoldi_size + 1, False)
    assert dense_jacobians(s.dense_size, True) and not dense_jacobians(s.dense_size + 1, True)
    with rc.using(dataclasses.replace(s, dense_size=10, arnoldi_size=5)):
        assert not dense_jacobians(11, True) and dense_jacobians(5, False) and not dense_jacobians(6, False)
    assert math.isfinite(s.arnoldi_size)
