"""The dense correctors' linear algebra: :func:`replica.engine.newton_lu` and the LU-held, Broyden-updated
inverse Jacobian of the chord corrector (:class:`replica.continuation.jacobians.InverseJacobian`)."""

from dataclasses import replace

import numpy as np
import pytest

from replica.continuation.jacobians import InverseJacobian
from replica.engine import newton_lu


def _system(n=12, seed=0):
    """``G(z) = A z + 0.1 z³ − b`` (elementwise cube) and its Jacobian, with a known root ``z*``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, n)) / np.sqrt(n) + 2.0 * np.eye(n)
    root = rng.normal(size=n)
    b = a @ root + 0.1 * root**3

    def fun(z):
        return a @ z + 0.1 * z**3 - b

    def jac(z):
        return a + np.diag(0.3 * z**2)

    return fun, jac, root


def test_newton_lu_converges_quadratically_to_the_root():
    fun, jac, root = _system()
    residuals = []

    def done(z, g):
        residuals.append(float(np.max(np.abs(g))))
        return residuals[-1] < 1e-13

    z, nfev, njev = newton_lu(fun, jac, root + 0.3, done)
    assert z is not None and np.max(np.abs(z - root)) < 1e-12
    assert njev == len(residuals) - 1 and nfev >= njev + 1
    # quadratic convergence: each residual at most a constant times the square of the previous one
    r = [x for x in residuals if x > 1e-14]
    assert all(r[k + 1] <= 10.0 * r[k] ** 2 + 1e-15 for k in range(1, len(r) - 1)), residuals


def test_newton_lu_gives_up_on_a_singular_jacobian_and_on_its_budget():
    fun, jac, root = _system()
    z, _, njev = newton_lu(fun, lambda z: np.zeros((z.size, z.size)), root + 0.3, lambda z, g: False)
    assert z is None and njev == 1
    z, _, njev = newton_lu(fun, jac, root + 0.3, lambda z, g: False, max_jacobians=3)
    assert z is None and njev == 3
    z, nfev, njev = newton_lu(fun, jac, root, lambda z, g: True)
    assert z is not None and njev == 0 and nfev == 1


def test_newton_lu_halves_a_step_that_does_not_reduce_the_residual():
    """``G(z) = arctan(z)``: the full Newton step from |z| = 2 overshoots (|G| grows); the halved step does not."""
    z, _, _ = newton_lu(np.arctan, lambda z: np.diag(1.0 / (1.0 + z**2)), np.array([2.0]),
                        lambda z, g: abs(float(g[0])) < 1e-14)
    assert z is not None and abs(float(z[0])) < 1e-13
    z, _, _ = newton_lu(np.arctan, lambda z: np.diag(1.0 / (1.0 + z**2)), np.array([2.0]),
                        lambda z, g: abs(float(g[0])) < 1e-14, backtracks=0)
    assert z is None


def test_inverse_jacobian_follows_good_broyden_updates():
    """After each update the inverse satisfies the secant condition ``H dg = dx`` and equals the explicit
    inverse updated densely by the same rule, ``H + (dx − H dg)(dxᵀH)/(dxᵀH dg)``; a copy's updates leave the
    original unchanged, ``adopt`` takes them."""
    rng = np.random.default_rng(1)
    n = 15
    a = rng.normal(size=(n, n)) + 4.0 * np.eye(n)
    inv = InverseJacobian(a)
    h = np.linalg.inv(a)
    trial = inv.copy()
    for _ in range(4):
        dx, dg = rng.normal(size=n), rng.normal(size=n)
        trial.update(dx, dg)
        hdg = h @ dg
        h = h + np.outer(dx - hdg, dx @ h) / float(dx @ hdg)
        assert np.max(np.abs(trial.solve(dg) - dx)) < 1e-10 * np.max(np.abs(dx))
    v = rng.normal(size=n)
    assert np.max(np.abs(trial.solve(v) - h @ v)) < 1e-10 * np.max(np.abs(h @ v))
    assert np.max(np.abs(inv.solve(v) - np.linalg.solve(a, v))) < 1e-12  # the original is untouched
    inv.adopt(trial)
    assert np.max(np.abs(inv.solve(v) - h @ v)) < 1e-10 * np.max(np.abs(h @ v))


@pytest.mark.parametrize("bad", ["singular", "nan"])
def test_inverse_jacobian_refuses_a_singular_or_non_finite_matrix(bad):
    a = np.zeros((3, 3)) if bad == "singular" else np.full((3, 3), np.nan)
    with pytest.raises(np.linalg.LinAlgError):
        InverseJacobian(a)


def _sweep_numbers(res):
    """Every stored number of a sweep: per branch its overlaps, mmse and stability; the transitions."""
    out = {k: float(v) for k, v in res.transitions.items()}
    for name, b in res.branches.items():
        for field in ("mmse", "stability"):
            out[f"{name}/{field}"] = np.asarray(b[field], dtype=float)
    return out


def _memo_models():
    from replica.models.deep_fronts import DeepFrontModel
    from replica.models.shallow import ShallowModel
    from replica.models.two_layer import TwoLayerModel

    yield "one-layer", lambda: ShallowModel("tanh2", 0.5, 0.1), np.linspace(0.3, 3.0, 12)
    yield "two-layer", lambda: TwoLayerModel("tanh2", (0.5, 0.5), 0.1), np.linspace(0.5, 4, 6)
    yield "three-layer", lambda: DeepFrontModel(gammas=(0.5, 0.5, 0.5), activation="tanh2", delta=0.1), np.array([2.0, 2.7, 3.2])


@pytest.mark.parametrize("name, make, alphas", [pytest.param(*m, id=m[0]) for m in _memo_models()])
def test_the_jacobian_memo_of_a_sweep_changes_no_number(monkeypatch, name, make, alphas):
    """The chord corrector's Jacobian at an accepted point is the stability's Jacobian there: a sweep remembers
    it (``jacobian_memo_bytes`` of :mod:`replica.continuation.settings`). Every stored number equals the sweep that recomputes every
    Jacobian, and the memo is hit."""
    import replica.continuation as br
    from replica.continuation import jacobians

    calls = {"computed": 0}
    original = jacobians.fd_jacobian

    def counted(*args):
        calls["computed"] += 1
        return original(*args)

    monkeypatch.setattr(jacobians, "fd_jacobian", counted)
    with_memo = br.sweep(make(), alphas, progress=False)
    computed = calls["computed"]
    calls["computed"] = 0
    with br.using(replace(br.active(), jacobian_memo_bytes=0)):
        without = br.sweep(make(), alphas, progress=False)
    assert calls["computed"] > computed                  # the memo saved some
    a, b = _sweep_numbers(with_memo), _sweep_numbers(without)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_the_memo_is_keyed_by_model_alpha_order_and_point(monkeypatch):
    """Inside :func:`replica.continuation.remembered_jacobians` a Jacobian is reused only for the same model object,
    α, order, indices and point; any other argument computes."""
    import replica.continuation as br
    from replica.continuation import jacobians
    from replica.models.shallow import ShallowModel

    model, other = ShallowModel("tanh2", 0.5, 0.1), ShallowModel("tanh2", 0.5, 0.1)
    x = model.solve_from(2.0, model.starts()["informed"][0], start="informed").x
    y = x * 0.9
    computed = []
    original = jacobians.fd_jacobian
    monkeypatch.setattr(jacobians, "fd_jacobian", lambda *a: computed.append(a[1:]) or original(*a))
    with br.remembered_jacobians():
        first = br.jacobian(model, 2.0, x, order=1)
        for args, kw in (((model, 2.0, y), {}), ((model, 2.1, x), {}), ((other, 2.0, x), {}),
                         ((model, 2.0, x), {"order": 2}), ((model, 2.0, x), {"indices": [0]})):
            n = len(computed)
            got = br.jacobian(*args, **{"order": 1, **kw})
            assert len(computed) == n + 1, (args[1:], kw)   # computed, not taken from the memo
            np.testing.assert_array_equal(got, original(args[0], args[1], np.asarray(args[2], float),
                                                        kw.get("order", 1), kw.get("indices")))
        n = len(computed)
        again = br.jacobian(model, 2.0, x.copy(), order=1)
        assert len(computed) == n                           # the same arguments: remembered
        np.testing.assert_array_equal(again, first)
        again[0, 0] += 1.0                                  # a copy: the caller may change it
        np.testing.assert_array_equal(br.jacobian(model, 2.0, x, order=1), first)


def test_jacobians_outside_a_sweep_are_not_remembered(monkeypatch):
    """Outside :func:`replica.continuation.sweep` every call computes (a model changed between two calls, as a test
    or a user may do, is seen)."""
    import replica.continuation as br
    from replica.continuation import jacobians
    from replica.models.shallow import ShallowModel

    model = ShallowModel("tanh2", 0.5, 0.1)
    x = model.solve_from(2.0, model.starts()["informed"][0], start="informed").x
    first = br.jacobian(model, 2.0, x, order=1)
    monkeypatch.setattr(jacobians, "fd_jacobian", lambda *a: np.zeros_like(first))
    assert np.all(br.jacobian(model, 2.0, x, order=1) == 0.0)


def test_the_memo_keeps_the_most_recent_jacobians_within_its_bytes(monkeypatch):
    """``jacobian_memo_bytes`` of :mod:`replica.continuation.settings` bounds the memo: room for one matrix keeps only the last."""
    import replica.continuation as br
    from replica.continuation import jacobians
    from replica.models.shallow import ShallowModel

    model = ShallowModel("tanh2", 0.5, 0.1)
    x = model.solve_from(2.0, model.starts()["informed"][0], start="informed").x
    computed = []
    original = jacobians.fd_jacobian
    monkeypatch.setattr(jacobians, "fd_jacobian", lambda *a: computed.append(a[1:]) or original(*a))
    with br.remembered_jacobians():
        one = br.jacobian(model, 2.0, x, order=1)
        with br.using(replace(br.active(), jacobian_memo_bytes=one.nbytes)):
            br.jacobian(model, 2.1, x, order=1)             # evicts the first
            br.jacobian(model, 2.1, x, order=1)             # remembered
            br.jacobian(model, 2.0, x, order=1)             # computed again
    assert [c[0] for c in computed] == [2.0, 2.1, 2.0]
