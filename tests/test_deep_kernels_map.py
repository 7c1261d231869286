"""The compiled map of L ≥ 2 hidden layers (:mod:`replica.models._deep_kernels`) against the NumPy map.

``DeepFrontModel.update_many`` evaluates the map with the compiled kernel by default (Gaussian labels);
with ``compiled_map = False`` it evaluates the NumPy code of ``DeepLinearModel.conjugates`` and
``DeepFrontModel._new_fronts``, an independent implementation of the same formulas. The two must agree
to 1e-12 on random points with fronts inside, at 0 and at ``FRONT_MAX``, with probes re-seeded, with
NaN rows, for two and three hidden layers (four, and unequal widths, in the slow run), different activations per layer, unequal widths, tabulated weight
priors (Rademacher, uniform), a readout law with several atoms and both tilt splits.

Where the activations' ``g`` is evaluated near ``q = 0`` the NumPy map carries the cancellation of
``κ(q) − Σ_{l≤2} μ_l² q^l/l!`` (absolute error ~1e-16, so a relative error ~1e-4 at ``q = 1e-4``), which
the compiled series avoids: the front step, a ratio of such differences, then differs in the NumPy
map's rounding. The random points below keep overlaps ≳ 1e-3 (``u³`` for ``u ~ U(0.1, 1)``).
"""

import numpy as np
import pytest

from replica import continuation as br
from replica.continuation.operators import difference_operator
from replica.continuation.problem import unknowns
from replica.continuation.seeds import escape_saddle
from replica.models.deep_fronts import FRONT_MAX, DeepFrontModel

#: overlaps (values in [0, 1]): sums of a few hundred terms rounded in another order, and ``g`` from the
#: compiled form (1e-13 from the Python method), times conjugates of order α/D ~ 10–30: 3e-12 (the erf and tanh
#: of the compiled kernels and of NumPy round differently on different CPUs: 2.01e-12 measured for
#: ``three-mixed`` on the 2-core development machine of 2026-12-05, below 2e-12 on the CI machine)
TOL = 3e-12
#: agreement of the two maps' probe potentials φ: ``G_ℓU_ℓ/(2D)`` carries the 1e-13 between the compiled and
#: the Python ``g``; the front's Newton step ``−Δφ/slope`` in f² divides it by the slope
PHI_ROUNDING = 1e-14

# widths 0.5 (and (0.7, 1.3) for two layers) use product-channel tables that are shipped or built by other
# tests; the models of SLOW_MODELS build their own (products of four factors, unequal widths: minutes)
MODELS = {
    "three": dict(gammas=(0.5, 0.5, 0.5), activation="tanh2", delta=0.1),
    "three-mixed": dict(gammas=(0.5, 0.5, 0.5), activation=["tanh2", "erf", "tanh"], delta=0.05,
                        weight_prior="rademacher", readout_law="4point"),
    "three-bottom": dict(gammas=(0.5, 0.5, 0.5), activation="tanh2", delta=0.1, tilt_split="bottom",
                         weight_prior="uniform"),
    "two": dict(gammas=(0.7, 1.3), activation="tanh2", delta=0.1),
    # Gaussian readouts: a front in |v| on the last layer as well
    "two-gauss": dict(gammas=(0.5, 0.5), activation="tanh2", delta=0.1, readout_law="gaussian"),
    "three-gauss": dict(gammas=(0.5, 0.5, 0.5), activation="tanh2", delta=0.1, readout_law="gaussian"),
    "two-uniform": dict(gammas=(0.5, 0.5), activation="tanh2", delta=0.1, readout_law="uniform"),
    "two-powerlaw": dict(gammas=(0.5, 0.5), activation="tanh2", delta=0.1, readout_law="powerlaw:beta=0.3"),
}
SLOW_MODELS = {
    "three-widths": dict(gammas=(0.7, 1.3, 0.9), activation=["tanh2", "erf", "tanh"], delta=0.05,
                         weight_prior="rademacher", readout_law="4point"),
    "three-bottom-widths": dict(gammas=(0.5, 0.7, 0.6), activation="tanh2", delta=0.1, tilt_split="bottom",
                                weight_prior="uniform"),
    "four": dict(gammas=(0.5, 0.5, 0.5, 0.5), activation="tanh2", delta=0.1, panel_nodes=3),
}
ALL_MODELS = {**MODELS, **SLOW_MODELS}


@pytest.fixture(scope="module", params=sorted(MODELS) + [pytest.param(name, marks=pytest.mark.slow)
                                                         for name in sorted(SLOW_MODELS)])
def model(request):
    return DeepFrontModel(**ALL_MODELS[request.param])


def _both(model, alpha, X):
    model.compiled_map = True
    try:
        compiled = model.update_many(alpha, X)
        model.compiled_map = False
        reference = model.update_many(alpha, X)
    finally:
        model.compiled_map = True
    return compiled, reference


def _step_tolerance(model, alpha, X):
    """Per row and front, the tolerance of the new front's square ``f² + step``: ``TOL + PHI_ROUNDING/|slope|``
    with the slope of the NumPy map (the step is ``−Δφ/slope``)."""
    fronts, q = model.split(X)
    model.rules(fronts[0])
    c = model.core.conjugates(alpha, q)
    slopes = np.stack([np.abs(p[1]) for p in model._probe_potentials(alpha, c)], axis=-1)
    return TOL + PHI_ROUNDING / np.maximum(slopes, 1e-300)


def _assert_close(model, alpha, X, compiled, reference):
    nf = model.n_fronts
    ok = np.isfinite(reference[:, 0])
    # conjugates grow like v² on a readout front's rule (the power law's nodes reach |v| ~ 1e5 at its largest front):
    # the rounding of the overlaps grows like |v| (measured: 3.3e-12, 6.6e-12, 2.1e-9 at largest |v| 8, 30, 8e4)
    model.rules(model.split(X)[0][0])
    scale = max(1.0, float(np.sqrt(np.max(model.core.label_squares[model.L]))))
    assert np.max(np.abs(compiled[ok, nf:] - reference[ok, nf:])) < TOL * scale
    tol = _step_tolerance(model, alpha, X[ok]) + 1e-14 * reference[ok, :nf] ** 2  # and the rounding of f² itself
    assert np.all(np.abs(compiled[ok, :nf] ** 2 - reference[ok, :nf] ** 2) <= tol)


def _random_points(model, rng, fronts, n=6):
    q = rng.uniform(0.1, 1.0, (n, model.core.size)) ** 3
    return np.concatenate([np.broadcast_to(np.asarray(fronts, float), (n, model.n_fronts)), q], axis=1)


@pytest.mark.parametrize("where", ["inside", "zero", "end", "mixed"])
def test_compiled_map_equals_the_numpy_map(model, where):
    rng = np.random.default_rng({"inside": 1, "zero": 2, "end": 3, "mixed": 4}[where])
    fronts = {"inside": rng.uniform(0.3, 2.5, model.n_fronts), "zero": np.zeros(model.n_fronts),
              "end": np.array(model.front_max),
              "mixed": np.where(np.arange(model.n_fronts) % 2 == 0, model.front_max, 0.0)}[where]
    X = _random_points(model, rng, fronts)
    compiled, reference = _both(model, 1.7, X)
    assert compiled.shape == X.shape
    assert np.all(np.isfinite(reference))
    _assert_close(model, 1.7, X, compiled, reference)
    # the map moved something: the comparison is not between two copies of the input
    assert np.max(np.abs(reference - X)) > 1e-3


def test_reseeding_and_nan_rows_agree(model):
    """Rows whose probes sit on one root (the map re-seeds them or moves the front) and a NaN row."""
    rng = np.random.default_rng(7)
    X = _random_points(model, rng, rng.uniform(0.3, 2.5, model.n_fronts), n=5)
    fronts, q = model.split(X)
    model.rules(fronts[0])
    for row, (probe, source) in ((0, (1, 0)), (1, (0, 1)), (2, (1, 0))):
        Q = model.core.unpack(q[row])
        for (ell, m), block in Q.items():
            if ell == 1:
                block[probe, :] = block[source, :]
            if m - 1 == 1:
                block[:, probe] = block[:, source]
        X[row, model.n_fronts:] = model.core.pack(Q)
    X[2, model.n_fronts:] *= 1e-3  # both probes near the small root: the front moves up
    X[3, model.n_fronts + 4] = np.nan
    compiled, reference = _both(model, 2.3, X)
    assert np.array_equal(np.isnan(compiled), np.isnan(reference))
    assert np.all(np.isnan(compiled[3]))
    _assert_close(model, 2.3, X, compiled, reference)


def test_the_informed_start_leaves_the_saddle_of_its_empty_panel():
    """With every layer specialized and the fronts at 0, the zero-mass nodes of the empty small-root panel
    and the small-root probe start at Q = 0, an invariant set of the map (``g'(0) = 0`` exactly in the
    compiled kernel) that is unstable there. The damped iteration stays on it; the sweep leaves it along
    the unstable direction (``replica.continuation.seeds.escape_saddle``) and reaches the point the NumPy map reaches
    through its rounding at ``q = 0``: the same stable fixed point, the same error."""
    model = DeepFrontModel(**MODELS["three"])
    alpha = 8.0
    start = model.starts()["informed"][0]
    stuck = model.solve_from(alpha, start)
    assert stuck.converged and br.stability(model, alpha, stuck.x, order=1) > 1.0
    left = escape_saddle(model, alpha, stuck, "informed", {})
    assert left is not None and left.converged
    assert br.stability(model, alpha, left.x, order=1) < 1.0
    model.compiled_map = False
    try:
        numpy_point = model.solve_from(alpha, start)
    finally:
        model.compiled_map = True
    assert br.stability(model, alpha, numpy_point.x, order=1) < 1.0
    assert np.max(np.abs(left.x - numpy_point.x)) < 1e-7
    assert abs(left.info["state"].mmse - numpy_point.info["state"].mmse) < 1e-10


def test_no_escape_from_a_point_off_every_bound():
    """The escape is for a point held on an invariant set (moving entries at their bound 0): an unstable point
    with no such entry is left as it is (None), as before the escape existed."""
    model = DeepFrontModel(**MODELS["two"])
    x = model.solve_from(1.5, model.starts()["informed"][0])
    x.x = np.where(x.x == 0.0, 1e-3, x.x)
    assert escape_saddle(model, 1.5, x, "informed", {}) is None


def test_a_sweep_finds_the_branch_behind_the_saddle():
    """The sweep itself (not only :func:`_escape_saddle` called by hand): at α = 5 and 8 the informed start
    reaches every layer specialized, the error of the NumPy map's fixed point."""
    model = DeepFrontModel(**MODELS["three"])
    res = br.sweep(model, [5.0, 8.0], progress=False)
    name = model.specialized_branch
    assert name in res.branches, sorted(res.branches)
    assert list(res.equilibrium["branch"]) == [name, name]
    model.compiled_map = False
    try:
        reference = model.solve_from(5.0, model.starts()["informed"][0]).info["state"].mmse
    finally:
        model.compiled_map = True
    assert abs(res.equilibrium["mmse"][0] - reference) < 1e-9


@pytest.mark.parametrize("start, alpha", [("informed", 3.0), ("layers_1_to_2", 2.0)])
def test_near_rows_give_the_forward_difference_jacobian(start, alpha):
    """``update_near`` (channels to first order about the base point) gives the first-order Jacobian within
    the forward difference's own error: no further from the second-order Jacobian than the plain forward
    difference, and equal to it to O(h)."""
    model = DeepFrontModel(**MODELS["three"])
    x = model.solve_from(alpha, model.starts()[start][0]).x
    every = np.arange(model.size)
    near = br.jacobian(model, alpha, x, order=1, indices=every)
    model.update_near = None  # the hook's default: every row evaluated in full
    try:
        full = br.jacobian(model, alpha, x, order=1, indices=every)
        second = br.jacobian(model, alpha, x, order=2, indices=every)
    finally:
        del model.update_near
    scale = max(1.0, float(np.max(np.abs(full))))
    assert np.max(np.abs(near - full)) < 1e-4 * scale
    assert np.max(np.abs(near - second)) <= 1.5 * np.max(np.abs(full - second)) + 1e-6 * scale
    assert not np.array_equal(near, full)  # the hook was used


@pytest.mark.parametrize("name, start, alpha", [("three", "informed", 3.0), ("three", "layers_1_to_2", 2.0),
                                                ("three-mixed", "layers_1_to_2", 2.0), ("two-gauss", "informed", 2.0),
                                                ("two-powerlaw", "informed", 2.0)])
def test_near_map_differs_from_the_map_by_the_square_of_the_distance(name, start, alpha):
    """``near_map`` (every product channel — tilt inverse, gain, next overlap, ι of the potentials — to first
    order about the base point) differs from :meth:`update` by O(δ²) along random directions that move the
    fronts, the overlaps and α together: the gap falls ~100× per decade of δ, and is nonzero (the
    linearization is used). A first-order term of the wrong size would leave an O(δ) gap. Where the fronts sit
    at 0 (every neuron on the large root, both probes there) the front step is a ratio of two O(δ) numbers
    (the probes' potential gap and its slope): only the overlaps are compared there."""
    model = DeepFrontModel(**MODELS[name])
    x = model.solve_from(alpha, model.starts()[start][0]).x
    f = model.near_map(alpha, x)
    rng = np.random.default_rng(7)
    inside = (x[:model.n_fronts] > 0.01) & (x[:model.n_fronts] < model.front_max - 0.01)
    for _ in range(3):
        v = rng.normal(size=x.size)
        v[:model.n_fronts] *= inside  # a front at an end of its range is clipped there
        v /= np.linalg.norm(v)
        gaps = []
        for delta in (1e-3, 1e-4):
            z = np.clip(x + delta * v, 0.0, None)
            a = alpha * (1.0 + delta)
            gap = np.abs(f(a, z) - model.update(a, z))
            gaps.append(float(np.max(gap if np.all(inside) else gap[model.n_fronts:])))
        assert gaps[0] > 0.0
        assert gaps[1] < 0.03 * gaps[0], gaps
        batch = f(alpha, np.stack([x, np.clip(x + 1e-4 * v, 0.0, None)]))
        assert np.max(np.abs(batch[0] - model.update(alpha, x))) < 1e-13


def test_matrix_free_jacobian_vector_products_use_the_near_map():
    """The difference operator of the matrix-free correctors goes through ``near_map`` and agrees with the
    forward difference of the full map along the same vector within the difference's own error."""
    model = DeepFrontModel(**MODELS["three"])
    alpha = 2.0
    x = model.solve_from(alpha, model.starts()["layers_1_to_2"][0]).x
    idx = unknowns(model, x)
    g = (model.update(alpha, x) - x)[idx]
    calls = []
    original = model.near_map

    def counting(a, y):
        calls.append(a)
        return original(a, y)

    model.near_map = counting
    try:
        op = difference_operator(model, alpha, x, g, idx)
    finally:
        del model.near_map
    assert calls == [alpha]
    v = np.random.default_rng(3).normal(size=idx.size)
    h = 1e-7 * max(1.0, float(np.linalg.norm(x[idx]))) / float(np.linalg.norm(v))
    z = x.copy()
    z[idx] += h * v
    ref = (model.update(alpha, z)[idx] - z[idx] - g) / h
    got = op.matvec(v)
    assert np.max(np.abs(got - ref)) < 1e-5 * max(1.0, float(np.max(np.abs(ref))))
    assert not np.array_equal(got, ref)  # the near map was used


@pytest.mark.parametrize("name", sorted(MODELS))
def test_compiled_state_equals_the_numpy_state(name):
    """``DeepFrontModel.state`` takes mmse, free entropy, conjugates and tilt inverses from the compiled
    ``state_row``; with ``compiled_map = False`` they come from ``DeepLinearModel.conjugates`` and
    ``free_entropy``: equal at a converged point and at a random one (away from saturated tilts, where the
    two clip τ differently). The conjugates of unlearned groups carry the NumPy ``g'``'s cancellation near
    ``q = 0`` (module docstring) times conjugates of order α/D: compared to 1e-11 of their scale."""
    model = DeepFrontModel(**MODELS[name])
    rng = np.random.default_rng(11)
    x = model.solve_from(2.0, model.starts()["layer_1"][0]).x
    random = np.concatenate([x[:model.n_fronts], rng.uniform(0.1, 1.0, x.size - model.n_fronts) ** 3])
    for point in (x, random):
        compiled = model.state(2.0, point)
        model.compiled_map = False
        try:
            reference = model.state(2.0, point)
        finally:
            model.compiled_map = True
        assert abs(compiled.mmse - reference.mmse) < 1e-13
        assert abs(compiled.free_entropy - reference.free_entropy) < 1e-13
        scale = max(1.0, max(float(np.max(np.abs(reference.overlap_hats[k]))) for k in model.keys))
        for key in model.keys:
            assert np.allclose(compiled.overlap_hats[key], reference.overlap_hats[key], rtol=1e-11,
                               atol=1e-11 * scale)
        for key in model.products:
            assert np.allclose(compiled.tilts[key], reference.tilts[key], rtol=1e-11, atol=TOL)
