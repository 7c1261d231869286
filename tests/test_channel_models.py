"""Every architecture with a generic output channel (docs/theory.md §10; priors.output_channels).

The Gaussian channel has a fast path (closed forms with the arithmetic of the Gaussian-only solvers);
a subclass of it, or the same law given by its log-likelihood, goes through the generic code of every
solver: the universal branch's bracketing solve, the channel's ``effective_variance`` in every conjugate and
its ``energetic`` term in the free entropy. Both must reproduce the Gaussian results, transitions included.
The identities below (envelope in α and in Δ, small-signal limit) use the probit channel.
"""

import math

import numpy as np
import pytest

from priors.output_channels import GaussianChannel, ProbitChannel, RealChannel
from replica.branches import sweep
from replica.models.deep import DeepModel
from replica.models.deep_linear import DeepLinearModel
from replica.models.shallow import ShallowModel
from replica.models.two_layer import TwoLayerModel

DELTA = 0.1
DEEP = {"drop_hermite": (0, 1, 2), "unit_variance": True}

#: the compiled kernels of each model (two-layer: about 40 s of CPU in a fresh clone) are compiled once, by the
#: first of its tests: one process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_channel_models")


class GenericGaussian(GaussianChannel):
    """The Gaussian channel without the fast path (``type(channel) is not GaussianChannel``)."""

    name = "gaussian-generic"


def gaussian_by_likelihood(delta):
    return RealChannel(lambda y, lam: -0.5 * (y - lam) ** 2 / delta - 0.5 * math.log(2 * math.pi * delta),
                       scale=math.sqrt(delta), name="gaussian-likelihood")


MODELS = {
    "shallow-relu": (lambda ch: ShallowModel("relu", 0.5, DELTA, output_channel=ch), np.linspace(0.5, 4.0, 8)),
    "shallow-4point": (lambda ch: ShallowModel("tanh", 0.5, DELTA, readout_law="4point", output_channel=ch),
                       np.linspace(0.5, 6.0, 6)),
    "deep-L2": (lambda ch: DeepModel("tanh2", [1.0, 1.0], DELTA, output_channel=ch, **DEEP), np.linspace(2.0, 8.0, 13)),
    "two-layer": (lambda ch: TwoLayerModel("tanh2", (0.5, 0.5), DELTA, output_channel=ch), np.linspace(1.0, 3.0, 5)),
}


def _numeric_fields(branch):
    return {k: np.asarray(v, float) for k, v in branch.fields.items()
            if np.asarray(v).dtype.kind in "fb" and k not in ("stability",)}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_generic_channel_code_reproduces_the_gaussian_solvers(name):
    make, grid = MODELS[name]
    fast, generic = (sweep(make(ch), grid, progress=False) for ch in (None, GenericGaussian(DELTA)))
    assert sorted(fast.branches) == sorted(generic.branches)
    for key, value in fast.transitions.items():
        other = generic.transitions[key]
        assert (math.isnan(value) and math.isnan(other)) or other == pytest.approx(value, rel=1e-10, abs=1e-12), key
    for bname, branch in fast.branches.items():
        a, b = _numeric_fields(branch), _numeric_fields(generic.branches[bname])
        for key in a:
            finite = np.isfinite(a[key])
            assert np.array_equal(finite, np.isfinite(b[key])), (bname, key)
            np.testing.assert_allclose(b[key][finite], a[key][finite], rtol=1e-10, atol=1e-12, err_msg=f"{bname}.{key}")
    assert math.isnan(fast.transitions["alpha_c"]) or math.isfinite(generic.transitions["alpha_c"])


def test_deep_linear_solver_with_the_generic_channel():
    acts, gammas = ("tanh2", "tanh2", "tanh2"), (0.5, 0.5, 0.5)
    fast = DeepLinearModel(acts, gammas, DELTA, s_grid=3, unit_variance=True)
    generic = DeepLinearModel(acts, gammas, DELTA, s_grid=3, unit_variance=True, output_channel=GenericGaussian(DELTA))
    for alpha in (1.0, 4.0):
        for start, (x0, _) in fast.starts().items():
            a, b = fast.solve_from(alpha, x0, start=start), generic.solve_from(alpha, x0, start=start)
            assert a.converged and b.converged
            sa, sb = a.info["state"], b.info["state"]
            assert sb.mmse == pytest.approx(sa.mmse, rel=1e-10, abs=1e-13)
            assert sb.free_entropy == pytest.approx(sa.free_entropy, rel=1e-10)


@pytest.mark.parametrize("make", [
    lambda ch: ShallowModel("relu", 0.5, DELTA, output_channel=ch),
    lambda ch: TwoLayerModel("tanh2", (0.5, 0.5), DELTA, output_channel=ch),
], ids=["shallow", "two-layer"])
def test_gaussian_channel_given_by_its_log_likelihood(make):
    # the real-valued channel's Gauss–Hermite quadrature (accurate to ~1e-12 here) instead of closed forms
    fast, generic = make(None), make(gaussian_by_likelihood(DELTA))
    for alpha in (1.0, 3.0):
        pairs = [(fast.solve_universal(alpha), generic.solve_universal(alpha))]
        x0, _ = fast.starts()["informed"]
        pairs.append((fast.solve_from(alpha, x0, start="informed"), generic.solve_from(alpha, x0, start="informed")))
        for a, b in pairs:
            assert a.converged and b.converged
            assert b.info["state"].mmse == pytest.approx(a.info["state"].mmse, rel=1e-9, abs=1e-12)
            assert b.info["state"].free_entropy == pytest.approx(a.info["state"].free_entropy, rel=1e-9)
            assert b.info["state"].mutual_information == pytest.approx(a.info["state"].mutual_information, rel=1e-9)


PROBIT_MODELS = {
    "shallow": lambda delta: ShallowModel("relu", 0.5, delta, output_channel=ProbitChannel(delta)),
    "shallow-4point": lambda delta: ShallowModel("tanh", 0.5, delta, readout_law="4point",
                                                 output_channel=ProbitChannel(delta)),
    "deep": lambda delta: DeepModel("tanh2", [1.0], delta, output_channel=ProbitChannel(delta), **DEEP),
    "two-layer": lambda delta: TwoLayerModel("tanh2", (0.5, 0.5), delta, output_channel=ProbitChannel(delta)),
}


def _stationary(model, alpha, start):
    if start == "universal":
        r = model.solve_universal(alpha)
    else:
        x0, _ = model.starts()[start]
        r = model.solve_from(alpha, x0, start=start)
    assert r.converged
    return r.info["state"]


@pytest.mark.parametrize("name", sorted(PROBIT_MODELS))
@pytest.mark.parametrize("start", ["universal", "informed"])
def test_envelope_in_alpha_gives_the_energetic_term(name, start):
    # f = Ψ_out(mmse) + G/α with G independent of α at fixed order parameters: d(αf)/dα = Ψ_out(mmse)
    model, alpha, h = PROBIT_MODELS[name](0.2), 6.0, 1e-4
    fa = [(alpha + s * h) * _stationary(model, alpha + s * h, start).free_entropy for s in (-1, 1)]
    st = _stationary(model, alpha, start)
    assert (fa[1] - fa[0]) / (2 * h) == pytest.approx(model.energetic(st.mmse), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("name", sorted(PROBIT_MODELS))
def test_envelope_in_delta_is_the_channel_derivative(name):
    # I-MMSE-type relation of the probit channel: at a stationary point only the energetic term depends on
    # Δ explicitly, so df/dΔ = ∂Ψ_out(K_d, mmse; Δ)/∂Δ at the stationary mmse
    delta, alpha, h = 0.2, 6.0, 1e-5
    f = [_stationary(PROBIT_MODELS[name](delta + s * h), alpha, "informed").free_entropy for s in (-1, 1)]
    model = PROBIT_MODELS[name](delta)
    st = _stationary(model, alpha, "informed")
    K_d = model.output_variance
    assert st.mmse < 0.5 * K_d  # a branch that learned something (at mmse = K_d, Ψ = −ln 2 for every Δ)
    dpsi = (ProbitChannel(delta + h).energetic(K_d, st.mmse) - ProbitChannel(delta - h).energetic(K_d, st.mmse)) / (2 * h)
    assert (f[1] - f[0]) / (2 * h) == pytest.approx(dpsi, rel=1e-5)
    assert dpsi < 0  # more noise, less information


@pytest.mark.parametrize("name, start", [("shallow", "universal"), ("deep", "informed")])
def test_probit_with_large_noise_is_the_gaussian_channel_of_noise_pi_delta_over_2(name, start):
    # small-signal limit of the GLM literature: sign(λ + √Δ ξ) with Δ ≫ K_d carries the information of
    # λ + √(πΔ/2) ξ (Fisher information 2/(πΔ) at λ = 0); the relative difference is O(K_d/Δ)
    make_probit = PROBIT_MODELS[name]
    gaussian = {"shallow": lambda d: ShallowModel("relu", 0.5, d),
                "deep": lambda d: DeepModel("tanh2", [1.0], d, **DEEP)}[name]
    gaps = []
    for delta in (20.0, 40.0, 80.0):
        alpha = 5.0 * delta  # the data that the noise needs
        a = _stationary(make_probit(delta), alpha, start).mmse
        b = _stationary(gaussian(math.pi * delta / 2), alpha, start).mmse
        assert b < 0.5  # learned
        gaps.append(abs(a - b) / b)
    assert gaps[0] < 0.05
    assert 1.8 < gaps[0] / gaps[1] < 2.2 and 1.8 < gaps[1] / gaps[2] < 2.2  # first order in 1/Δ


def test_classification_fields_are_stored_per_branch():
    model = ShallowModel("relu", 0.5, 0.0, output_channel=ProbitChannel(0.0))
    result = sweep(model, np.array([0.5, 1.0, 2.0, 4.0]), progress=False)
    for branch in result.branches.values():
        err, dis, mmse = (np.asarray(branch.fields[k]) for k in ("classification_error", "sign_disagreement", "mmse"))
        ok = np.isfinite(mmse)
        # noiseless labels: the Bayes classifier's error against the labels is its disagreement with the teacher
        np.testing.assert_allclose(err[ok], dis[ok], rtol=1e-12)
        assert np.all((err[ok] > 0) & (err[ok] < 0.5))
    uni = np.asarray(result.branches["universal"].fields["classification_error"])
    assert np.all(np.diff(uni) < 0)  # more data, fewer errors
    assert "classification_error" not in sweep(ShallowModel("relu", 0.5, 0.1), np.array([1.0]),
                                               progress=False).branches["universal"].fields
