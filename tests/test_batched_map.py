"""The vectorized map (``update_many``) of the deep solvers and the dense Jacobians built from it.

``update_many(alpha, X)`` evaluates the map at every row of ``X`` in one call; finite-difference
Jacobians (:func:`replica.branches.jacobian`) take their columns from it. Each row must equal the map
at that row alone, whatever the other rows are (rows with other fronts, rows where the map is not
finite, rows whose probes are re-seeded), and the Jacobian must equal the one built column by column.
"""

import numpy as np
import pytest

from replica import continuation as br
from replica.continuation.operators import matrix_free
from replica.models.deep_fronts import FRONT_MAX, DeepFrontModel
from replica.models.deep_linear import DeepLinearModel

TANH = dict(activation="tanh2", delta=0.1)

#: its module fixtures (and the compiled map they build) are computed once: one process for the whole file
#: (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_batched_map")


@pytest.fixture(scope="module")
def three():
    return DeepFrontModel(gammas=(0.5, 0.5, 0.5), **TANH)


@pytest.fixture(scope="module")
def partial(three):
    r = three.solve_from(2.0, three.starts()["layers_1_to_2"][0])
    assert r.converged
    return r


def _rows(model, x, rng, n=12):
    """Points around ``x``: perturbed overlaps, some with other fronts (one at each end of its range)."""
    X = np.repeat(np.asarray(x, float)[None, :], n, axis=0)
    X[:, model.n_fronts:] = np.clip(X[:, model.n_fronts:] * (1.0 + 0.05 * rng.standard_normal((n, X.shape[1] - model.n_fronts))),
                                    0.0, 1.0)
    X[3, 0] += 0.3
    X[5, 1] = FRONT_MAX
    X[7, 0] = 0.0
    return X


def test_rows_equal_the_map_alone(three, partial):
    rng = np.random.default_rng(3)
    X = _rows(three, partial.x, rng)
    many = three.update_many(2.0, X)
    one = np.array([three.update(2.0, x) for x in X])
    assert many.shape == X.shape
    assert np.array_equal(np.isnan(many), np.isnan(one))
    assert np.nanmax(np.abs(many - one)) < 1e-12
    # the rows do not depend on their neighbours: reversed order, the same values
    back = three.update_many(2.0, X[::-1])[::-1]
    assert np.nanmax(np.abs(back - many)) < 1e-12


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "numpy"])
def test_probe_reseeding_is_per_row(three, partial, compiled, monkeypatch):
    """A row whose two probes of layer 1 sit on one root (the large-root probe copied from the small-root
    one: re-seeded by the map) between rows where they do not: only that row is re-seeded."""
    monkeypatch.setattr(three, "compiled_map", compiled)
    x = partial.x.copy()
    fronts, q = three.split(x)
    three.rules(fronts)
    Q = three.core.unpack(q.copy())
    for (a, m), mat in Q.items():
        if a == 1:
            mat[1, :] = mat[0, :]
        if m - 1 == 1:
            mat[:, 1] = mat[:, 0]
    y = np.concatenate([fronts, three.core.pack(Q)])
    X = np.stack([x, y, x])
    seen = []
    original = three._reseed
    three._reseed = lambda Qn, ell, probe, source, rows: seen.append(np.array(rows)) or original(Qn, ell, probe, source, rows)
    try:
        many = three.update_many(2.0, X)
    finally:
        del three._reseed
    if compiled:  # the kernel re-seeds inside: the large-root probe's rows are copies of the source node's
        source = 2 + three.panel_nodes
        new = [three.core.unpack(row[three.n_fronts:]) for row in many]
        copied = [np.array_equal(q[(1, 1)][1], q[(1, 1)][source]) and np.array_equal(q[(2, 2)][:, 1], q[(2, 2)][:, source])
                  for q in new]
        assert copied == [False, True, False], copied
    else:
        assert any(r.tolist() == [False, True, False] for r in seen), seen
    one = np.array([three.update(2.0, z) for z in X])
    assert np.max(np.abs(many - one)) < 1e-12
    assert np.max(np.abs(many[0] - many[2])) == 0.0


def test_non_finite_rows_stay_alone(three, partial):
    """A NaN in one row gives a NaN row, as the map at that row alone; the other rows are unchanged."""
    X = np.repeat(partial.x[None, :], 3, axis=0)
    X[1, 5] = np.nan
    many = three.update_many(2.0, X)
    assert np.all(np.isnan(many[1])) and np.all(np.isnan(three.update(2.0, X[1])))
    assert np.all(np.isfinite(many[[0, 2]]))
    assert np.max(np.abs(many[0] - three.update(2.0, partial.x))) < 1e-12


def test_fixed_grid_model_rows():
    model = DeepLinearModel(gammas=(0.5, 0.5, 0.5), s_grid=4, **TANH)
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (6, model.size))
    many = model.update_many(1.5, X)
    one = np.array([model.update(1.5, x) for x in X])
    assert np.max(np.abs(many - one)) < 1e-12


def _columns(model, alpha, x, order):
    """The finite-difference Jacobian of :func:`replica.branches.jacobian`'s documented rule (step 1e-7 or
    1e-5 times max(1, |x_j|), downwards above 0.5), one ``update`` per column: an independent construction."""
    f0 = model.update(alpha, x)
    out = np.empty((x.size, x.size))
    for j in range(x.size):
        h = (1e-7 if order == 1 else 1e-5) * max(1.0, abs(x[j]))
        h = -h if x[j] > 0.5 else h
        x1, x2 = x.copy(), x.copy()
        x1[j] += h
        x2[j] += 2 * h
        if order == 1:
            out[:, j] = (model.update(alpha, x1) - f0) / h
        else:
            out[:, j] = (-3.0 * f0 + 4.0 * model.update(alpha, x1) - model.update(alpha, x2)) / (2 * h)
    return out


@pytest.mark.parametrize("order", [1, 2])
def test_jacobian_from_one_call_equals_the_columns(three, partial, order):
    """:func:`replica.branches.jacobian` from one ``update_near`` call (the channels to first order about the
    point; at second order the stencil cancels the hook's quadratic error) against the same model differenced
    one column at a time with ``update``, here (``J[i, j] = ∂F_i/∂x_j``)."""
    class OneByOne(DeepFrontModel):
        update_many = None

    slow = OneByOne(gammas=(0.5, 0.5, 0.5), **TANH)
    calls = []
    hook = "update_near"                                  # both orders: the points of the stencil in one call
    original = getattr(three, hook)
    setattr(three, hook, lambda a, X: calls.append(len(X)) or original(a, X))
    try:
        fast = br.jacobian(three, 2.0, partial.x, order=order)
    finally:
        delattr(three, hook)
    reference = _columns(slow, 2.0, partial.x, order)
    assert calls == [1 + order * partial.x.size]          # one call, every column
    assert np.max(np.abs(fast - reference)) <= 1e-5 * max(1.0, np.max(np.abs(reference)))
    assert not matrix_free(three, partial.x) and matrix_free(slow, partial.x)
