"""Start-up and front costs (issues 38 and 40): the small-system Newton without MINPACK, the dense factors
without scipy.linalg, the exact slope of the equal-potential front, the compiled readout-profile curve and
the cached dual kernels of the built-in activations.

Every check compares with an independent computation: a closed-form Jacobian, numpy's solves, Brent's
method on the same function, a central difference of the potential, the NumPy curve of the profile, the
interpolant rebuilt from quadrature."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from priors import get_weight_prior
from replica.activations import get_activation
from replica.continuation.jacobians import DenseFactors
from replica.continuation.settings import active
from replica.engine import difference_jacobian, newton_lu, solve_fixed_point
from replica.readout_grid import SELECT_LARGEST, SELECT_LOW, OverlapProfile, equal_potential_threshold


def test_difference_jacobian_matches_the_closed_form():
    def f(z):
        return np.array([np.sin(z[0]) * z[1], z[0] ** 2 + np.exp(-z[1]), 0.3 * z[2] ** 3 + z[0]])

    z = np.array([0.3, 0.8, 0.2])  # the middle entry above 0.5: differenced downwards
    exact = np.array([[np.cos(z[0]) * z[1], np.sin(z[0]), 0.0],
                      [2.0 * z[0], -np.exp(-z[1]), 0.0],
                      [1.0, 0.0, 0.9 * z[2] ** 2]])
    assert np.max(np.abs(difference_jacobian(f, z, 1e-7) - exact)) < 1e-6


def test_small_polish_needs_no_scipy_optimize_and_reaches_the_fixed_point():
    """A 2-unknown map polished by Newton on difference Jacobians: the fixed point to the residual test, in a
    process that never imports scipy.optimize (its import is half the quick-start sweep's CPU time)."""
    code = (
        "import sys, json, numpy as np\n"
        "from replica.engine import solve_fixed_point\n"
        "F = lambda x: np.array([0.5 * np.cos(x[1]), 0.4 * np.sin(x[0]) + 0.1])\n"
        "r = solve_fixed_point(F, np.array([0.9, 0.9]), damping=0.5)\n"
        "print(json.dumps({'x': r.x.tolist(), 'converged': bool(r.converged), 'polished': bool(r.info.get('polished')),"
        " 'optimize': 'scipy.optimize' in sys.modules}))\n")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout.strip().splitlines()[-1])
    assert out["converged"] and out["polished"]
    assert not out["optimize"]
    x = np.array(out["x"])
    assert np.max(np.abs(np.array([0.5 * np.cos(x[1]), 0.4 * np.sin(x[0]) + 0.1]) - x)) < 1e-11


def test_newton_lu_reports_an_exactly_singular_jacobian():
    z, _, _ = newton_lu(lambda z: z - 1.0, lambda z: np.zeros((2, 2)), np.zeros(2), lambda z, g: False)
    assert z is None


def test_polish_at_most_newton_size_unknowns_and_hybr_above_agree():
    """The same map solved with the difference Newton (size ≤ newton_size) and with MINPACK (the size limit
    lowered to 0): the same fixed point."""
    from dataclasses import replace

    from replica.continuation.settings import using

    def F(x):
        return 0.3 * np.tanh(x[::-1] + 0.2) + 0.1 * x

    x0 = np.full(4, 0.7)
    a = solve_fixed_point(F, x0, damping=0.5, polish_below=1e8)
    with using(replace(active(), newton_size=0)):
        b = solve_fixed_point(F, x0, damping=0.5, polish_below=1e8)
    assert a.converged and b.converged
    assert np.max(np.abs(a.x - b.x)) < 1e-11


@pytest.mark.parametrize("n", [3, 30])  # the explicit inverse (≤ newton_size) and LAPACK's LU
def test_dense_factors_solve_and_transposed_solve(n):
    rng = np.random.default_rng(n)
    a = rng.normal(size=(n, n)) + 3.0 * np.eye(n)
    rhs = rng.normal(size=n)
    f = DenseFactors(a)
    assert (f.inverse is not None) == (n <= active().newton_size)
    assert np.max(np.abs(f.solve(rhs) - np.linalg.solve(a, rhs))) < 1e-12
    assert np.max(np.abs(f.solve(rhs, transposed=True) - np.linalg.solve(a.T, rhs))) < 1e-12
    assert f.finite()
    with pytest.raises(np.linalg.LinAlgError):
        DenseFactors(np.zeros((n, n)))


def _potential(act, D, alpha, gamma, gain):
    """The one-layer neuron potential of :meth:`ProfileSolver.neuron_potential`, written here again, and its
    partial derivative in s."""
    P = get_weight_prior("gaussian")

    def pot(s, snr):
        q = np.clip(P.overlap(snr), 0.0, 1.0)
        return s * act.g(q) / (2 * D) + gamma / alpha * (P.free_entropy(snr) - q * snr / 2) + gain * s * q * q / (4 * alpha)

    def slope(snr):
        q = np.clip(P.overlap(snr), 0.0, 1.0)
        return act.g(q) / (2 * D) + gain * q * q / (4 * alpha)

    return pot, slope


@pytest.mark.parametrize("alpha,D,gain", [(1.2, 0.5, 0.2), (0.6, 0.1, 0.0), (2.0, 0.3, 0.05)])
def test_equal_potential_front_by_newton_equals_brent(alpha, D, gain):
    """The front refined by Newton with the exact slope equals Brent's refinement of the same sign change, and
    the slope is the derivative of the potential difference along the roots (central differences): the roots
    are stationary in Q̂ (envelope theorem), so ∂/∂s at fixed root is the total derivative."""
    gamma = 0.5
    act = get_activation("tanh2", drop_hermite=(1,))
    pot, slope = _potential(act, D, alpha, gamma, gain)
    # the profile of the same globals, as ProfileSolver builds it: A = α/(γD), B = gain/γ
    profile = OverlapProfile(get_weight_prior("gaussian"), act, alpha / (gamma * D), gain / gamma)
    brent = equal_potential_threshold(profile, pot)
    newton = equal_potential_threshold(profile, pot, slope)
    assert brent not in (SELECT_LARGEST, SELECT_LOW)  # an interior front: the case refined
    assert abs(newton - brent) <= 1e-11 * brent

    def phi(s):
        z = np.array([s])
        return float((pot(z, profile.snr(z, SELECT_LARGEST)) - pot(z, profile.snr(z, SELECT_LOW)))[0])

    s0, h = 1.02 * brent, 1e-6 * brent
    z = np.array([s0])
    exact = float((slope(profile.snr(z, SELECT_LARGEST)) - slope(profile.snr(z, SELECT_LOW)))[0])
    numeric = (phi(s0 + h) - phi(s0 - h)) / (2 * h)
    assert abs(exact - numeric) <= 1e-5 * abs(exact)


@pytest.mark.parametrize("prior", ["gaussian", "rademacher"])
def test_compiled_profile_curve_equals_the_numpy_curve(prior):
    """``T`` and the selected roots of the compiled profile against the NumPy methods of the same profile
    (forced with ``_specs = None``): the denominator ``k = r/T`` within the compiled activation's own 1e-13
    (``T`` itself near ``r = 0``, where ``A g'(q) = O(q²)`` is below the NumPy form's cancellation, is more
    accurate compiled), the roots to 1e-12, the extrema of ``T`` equal."""
    act = get_activation("tanh2", drop_hermite=(1,))
    P = get_weight_prior(prior)
    for A, B in [(2.0, 0.1), (7.0, 0.6), (15.0, 0.0)]:
        fast = OverlapProfile(P, act, A, B)
        assert fast._specs is not None
        slow = OverlapProfile.__new__(OverlapProfile)
        slow.prior, slow.activation, slow.A, slow.B, slow._specs = P, act, fast.A, fast.B, None
        slow._tabulate(fast.onset)
        r = np.geomspace(1e-6, 1e6, 301)
        assert np.max(np.abs(r / fast.T(r) - r / slow.T(r))) <= 1e-12 * (A + B)
        assert np.allclose(fast.minima, slow.minima, rtol=1e-12, atol=0.0) and fast.minima.size == 1
        s = np.geomspace(1e-3, 70.0, 157)
        for sel in (SELECT_LARGEST, SELECT_LOW, 0.7):
            a, b = fast.snr(s, sel), slow.snr(s, sel)
            assert np.max(np.abs(a - b) / (1.0 + np.abs(b))) <= 1e-12, (A, B, sel)
        hi, lo = fast.both_roots(s)
        assert np.array_equal(hi, fast.snr(s, SELECT_LARGEST)) and np.array_equal(lo, fast.snr(s, SELECT_LOW))


def test_builtin_dual_kernels_are_read_back_from_the_table_cache(tmp_path):
    """A fresh process with an empty cache builds the interpolants of tanh's dual kernels and stores them; a
    second process reads them back, and they equal the ones rebuilt from quadrature here (no cache)."""
    code = ("import json, numpy as np\n"
            "from replica.activations import get_activation\n"
            "a = get_activation('tanh')\n"
            "q = np.linspace(-1, 1, 41)\n"
            "print(json.dumps({'k': a._kernel.coef.tolist(), 'd': a._derivative_kernel.coef.tolist()}))\n")
    env = {**__import__("os").environ, "REPLICA_HCIZ_CACHE": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                      check=True).stdout.strip().splitlines()[-1]) for _ in range(2)]
    assert len(list(tmp_path.glob("*.npz"))) == 2
    from replica.activations import _ThetaInterpolant  # noqa: PLC0415 - the private builder, for the reference

    act = get_activation("tanh")
    rebuilt = _ThetaInterpolant(act._kernel._func)._build()
    assert np.array_equal(np.array(runs[0]["k"]), np.array(runs[1]["k"]))
    assert np.max(np.abs(np.array(runs[1]["k"]) - rebuilt)) < 1e-15


def test_profile_solver_slope_is_the_derivative_of_its_potential_along_the_roots():
    """:meth:`ProfileSolver.neuron_potential_slope` (what the sweep's front uses) against a central difference
    of :meth:`ProfileSolver.neuron_potential` with both roots re-solved at ``s ± h``: the total derivative."""
    from replica.activations import get_activation as act_of
    from replica.models.shallow import ShallowModel

    model = ShallowModel(act_of("tanh2", drop_hermite=(1,)), 0.5, 0.04, readout_law="powerlaw:beta=0.3,k=40")
    solver = model.profile_solver
    assert solver is not None
    alpha, D, gain = 0.3, 0.08, 0.15
    profile = OverlapProfile(model.weight_prior, model.activation, alpha / (model.gamma * D), gain / model.gamma)
    # the largest root inside the bistable window (the low one is 0 there), the low root above the onset
    for s0, sel in ((1.5 * float(profile.minima.min()), SELECT_LARGEST), (1.3 * profile.onset, SELECT_LOW)):
        h = 1e-6 * s0
        assert float(profile.snr(np.array([s0]), sel)[0]) > 0.1

        def phi(s, sel=sel):
            z = np.array([s])
            return float(solver.neuron_potential(alpha, D, gain, z, profile.snr(z, sel))[0])

        z = np.array([s0])
        exact = float(solver.neuron_potential_slope(alpha, D, gain, profile.snr(z, sel))[0])
        numeric = (phi(s0 + h) - phi(s0 - h)) / (2 * h)
        assert abs(exact - numeric) <= 1e-6 * max(abs(exact), 1e-3), sel
