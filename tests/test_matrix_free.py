"""Matrix-free pieces of the continuation for models with many order parameters (replica/continuation/).

Above ``arnoldi_size`` (:mod:`replica.continuation.settings`) moving unknowns (three hidden layers on front-aligned rules: 255) the
seed/host corrector, the bordered system at folds, the fold test and the eigenvalue that follows a
bifurcation use Jacobian–vector products instead of dense finite-difference Jacobians. Each is
compared here with its dense counterpart built from :func:`replica.branches.jacobian` (an
independent construction: one column per unknown), or with the damped fixed-point iteration.
"""

import numpy as np
import pytest

from replica import continuation as br
from replica.continuation.correctors import correct
from replica.continuation.folds import bordered_krylov
from replica.continuation.operators import matrix_free
from replica.continuation.problem import unknowns
from replica.models.deep_fronts import FRONT_MAX, DeepFrontModel

KW = dict(atol=1e-12, rtol=1e-10)


@pytest.fixture(scope="module")
def three():
    class WithoutBatch(DeepFrontModel):
        """Three layers without the vectorized map: the continuation's matrix-free path."""
        update_many = None

    return WithoutBatch(activation="tanh2", gammas=(0.5, 0.5, 0.5), delta=0.1)


@pytest.fixture(scope="module")
def partial(three):
    r = three.solve_from(2.0, three.starts()["layers_1_to_2"][0])
    assert r.converged and matrix_free(three, r.x)
    return r


def test_newton_krylov_reaches_the_damped_fixed_point(three, partial):
    """From the α = 2 point, the corrector at α = 2.2 lands where the damped iteration does, in far
    fewer evaluations than one dense Jacobian (255)."""
    r = correct(three, 2.2, partial.x, KW).result
    damped = three.solve_from(2.2, partial.x)
    assert r is not None and damped.converged
    assert np.max(np.abs(r.x - damped.x)) < 1e-8
    assert r.info["evaluations"] < three.size


def test_bordered_krylov_step_equals_the_dense_bordered_step(three, partial):
    """The GMRES step of the bordered system ``[[F_x − I, F_α], [uᵀ, 0]]`` solves the dense system
    (built column by column) to the inner tolerance, and is the dense solution within its conditioning."""
    alpha = 2.0
    x = partial.x.copy()
    x[2:] *= 1.0 + 1e-4 * np.sin(np.arange(x.size - 2))  # off the curve (a residual), overlaps kept ≥ 0
    idx = unknowns(three, x)
    g = three.update(alpha, x)[idx] - x[idx]
    u = np.cos(np.arange(idx.size))
    u /= np.linalg.norm(u)
    rhs = -np.concatenate([g, [1e-4]])
    dense = np.zeros((idx.size + 1, idx.size + 1))
    dense[:-1, :-1] = br.jacobian(three, alpha, x, order=1) - np.eye(idx.size)
    h = 1e-7 * alpha
    dense[:-1, -1] = (three.update(alpha + h, x)[idx] - x[idx] - g) / h
    dense[-1, :-1] = u
    expected = np.linalg.solve(dense, rhs)
    got = bordered_krylov(three, alpha, x, g, idx, u, rhs)
    assert got is not None
    assert np.linalg.norm(dense @ got - rhs) <= 5 * br.active().krylov_rtol * np.linalg.norm(rhs)
    assert np.linalg.norm(got - expected) <= 5e-2 * np.linalg.norm(expected)


def test_eigenvalue_near_one_equals_the_dense_spectrum(three, partial):
    """``stability(..., near=1)`` from Arnoldi equals the dense eigenvalue nearest 1."""
    alpha = 2.0
    ev = np.linalg.eigvals(br.jacobian(three, alpha, partial.x, order=1))
    dense = float(ev[np.argmin(np.abs(ev - 1.0))].real)
    assert br.stability(three, alpha, partial.x, near=1.0) == pytest.approx(dense, abs=1e-5)
    assert br.stability(three, alpha, partial.x) == pytest.approx(float(np.max(ev.real)), abs=1e-5)


def test_host_of_a_partial_point_is_the_point_with_those_layers_unlearned(three, partial):
    """``without_overlaps``: the layer-2 overlaps of the α = 2 ``layers_1_2`` point set to 0 (and its
    front moved to FRONT_MAX) lead the corrector to the ``layer_1`` branch solved from its own start."""
    st = partial.info["state"]
    q = three.core.unpack(three.split(partial.x)[1])
    mask = three.core.pack({k: np.ones_like(v) for k, v in q.items() if 2 in range(k[1], k[0] + 1)}) > 0
    start = three.without_overlaps(partial.x, mask)
    assert start[1] == FRONT_MAX and start[0] == partial.x[0]
    host = correct(three, 2.0, start, KW).result
    ref = three.solve_from(2.0, three.starts()["layer_1"][0])
    assert host is not None and three.phase(host.info["state"]) == three.phase(ref.info["state"]) == "layer_1"
    assert st.mmse < host.info["state"].mmse
    assert host.info["state"].mmse == pytest.approx(ref.info["state"].mmse, abs=1e-9)


def test_fronts_are_projected_into_their_domain(three, partial):
    x = partial.x.copy()
    x[:2] = (-1.0, 20.0)
    y = three.project(x)
    assert y[:2].tolist() == [0.0, FRONT_MAX] and np.array_equal(y[2:], x[2:])
