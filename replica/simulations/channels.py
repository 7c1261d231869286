"""Output channels in the finite-size experiments: the JAX log-likelihood and the centring of the output.

The channels themselves (names, parameters, label samplers, NumPy log-likelihoods) are those of
:mod:`priors.output_channels` (one registry, :func:`priors.output_channels.get_output_channel`); this
module only writes their log-likelihood in JAX for HMC/NUTS and gives the constant that the theory
removes from the network output before the channel reads it (docs/theory.md §10):

    λ_c(x; W) = λ(x; W) − μ₀ Σ_i v_i/√k_L,        y ~ P_out(· | λ_c(x; W⁰))

with ``μ₀ = E σ(z)`` (``z ~ N(0, 1)``) of the activation as the network uses it (after
``--drop-hermite`` and ``--unit-variance``). For one hidden layer this is the known mean of the theory's
``K_d``; with two or more hidden layers the output has a teacher-dependent mean unless ``μ₀ = 0`` (every
deep solver of the package requires ``μ₀ = 0``), so :func:`output_mean_coefficient` refuses that case.

JAX log-likelihoods ``ln P_out(y | λ_c)`` (elementwise):

* ``gaussian``  ``−(y − λ_c)²/(2Δ) − ½ ln 2πΔ``
* ``probit``    ``ln Φ(y (λ_c − θ)/√Δ)`` (``jax.scipy.special.log_ndtr``), Δ > 0
* ``logistic``  ``−ln(1 + e^{−y λ_c/T})`` (``jnp.logaddexp``)

The noiseless ``sign`` channel (probit with Δ = 0) has the step likelihood ``ln 1[y (λ_c − θ) > 0]``:
its gradient vanishes wherever it is finite, so HMC/NUTS cannot sample it and
:func:`jax_log_likelihood` refuses it (``replica-experiment`` exits with status 2; a probit channel with
a small Δ is the documented substitute).
"""

from __future__ import annotations

import math

__all__ = ["jax_log_likelihood", "output_mean_coefficient", "SIGN_REFUSAL"]

#: the one-line reason why the noiseless sign channel cannot be sampled by HMC/NUTS
SIGN_REFUSAL = ("the noiseless sign channel has a step likelihood (zero gradient wherever it is finite), which "
                "HMC/NUTS cannot sample; use --channel probit with a small --delta (e.g. 0.001) instead")


def jax_log_likelihood(channel):
    """The channel's log-likelihood as a JAX function.

    Parameters
    ----------
    channel : priors.output_channels.OutputChannel
        A :class:`~priors.output_channels.GaussianChannel` (Δ > 0),
        :class:`~priors.output_channels.ProbitChannel` (Δ > 0) or
        :class:`~priors.output_channels.LogisticChannel`.

    Returns
    -------
    callable
        ``(y, lam) ↦ ln P_out(y | lam)``, elementwise with broadcasting, jit- and grad-compatible;
        ``lam`` is the *centred* output ``λ_c`` (module docstring), ``y`` in {−1, +1} for the binary
        channels and real for the Gaussian one. Equal to ``channel.log_likelihood`` (NumPy) up to
        rounding (tests/test_channel_experiment.py compares them to 1e-10 in double precision).

    Raises
    ------
    ValueError
        The noiseless sign channel (:data:`SIGN_REFUSAL`), a Gaussian channel with Δ = 0, or a channel
        given only by a NumPy log-likelihood (:class:`~priors.output_channels.BinaryChannel`,
        :class:`~priors.output_channels.RealChannel`), which has no JAX form.
    """
    import jax.numpy as jnp
    from jax.scipy.special import log_ndtr

    from priors.output_channels import GaussianChannel, LogisticChannel, ProbitChannel

    if type(channel) is GaussianChannel:
        delta = float(channel.delta)
        if not delta > 0:
            raise ValueError("posterior sampling with the gaussian channel needs delta > 0 "
                             "(the noiseless posterior is singular)")
        const = 0.5 * math.log(2.0 * math.pi * delta)

        def gaussian(y, lam):
            return -((y - lam) ** 2) / (2.0 * delta) - const

        return gaussian
    if isinstance(channel, ProbitChannel):
        if not channel.delta > 0:
            raise ValueError(SIGN_REFUSAL)
        scale, theta = 1.0 / math.sqrt(float(channel.delta)), float(channel.threshold)

        def probit(y, lam):
            return log_ndtr(y * (lam - theta) * scale)

        return probit
    if isinstance(channel, LogisticChannel):
        inv_t = 1.0 / float(channel.temperature)

        def logistic(y, lam):
            return -jnp.logaddexp(0.0, -y * lam * inv_t)

        return logistic
    raise ValueError(f"the {channel.name} channel has no JAX log-likelihood (only gaussian, probit with "
                     "delta > 0 and logistic can be sampled with HMC/NUTS)")


def output_mean_coefficient(activation: str, *, drop_hermite=(), unit_variance: bool = False,
                            layers: int = 1) -> float:
    """``μ₀ = E σ̃(z)`` of the activation as the network uses it (module docstring).

    ``σ̃ = c (σ − Σ_{ℓ∈drop} μ_ℓ He_ℓ/ℓ!)`` (:func:`replica.simulations.activations.get_jax_activation`), so
    ``μ₀(σ̃) = c μ₀(σ)`` unless 0 is dropped; ``μ₀(σ)`` from :mod:`replica.activations`.

    Parameters
    ----------
    activation : str
        Activation specification (``--activation``).
    drop_hermite : iterable of int, keyword-only
    unit_variance : bool, keyword-only
    layers : int, keyword-only
        Number of hidden layers L ≥ 1.

    Returns
    -------
    float
        ``μ₀``; the centring constant of a network with readout ``v`` is ``μ₀ Σ_i v_i/√k_L``.

    Raises
    ------
    ValueError
        ``layers ≥ 2`` and ``|μ₀| > 1e-12`` (the output's mean then depends on the teacher's weights, so
        no known constant centres it); unknown activation.
    """
    from replica.activations import get_activation

    from .activations import get_jax_activation

    jax_act = get_jax_activation(activation, drop_hermite=drop_hermite, unit_variance=unit_variance)
    mu0 = 0.0 if 0 in jax_act.drop_hermite else float(get_activation(activation).hermite(0)) * jax_act.scale
    if abs(mu0) <= 1e-12:
        return 0.0
    if int(layers) >= 2:
        raise ValueError(f"a non-Gaussian output channel with {int(layers)} hidden layers needs an activation with "
                         f"mu0 = E sigma(z) = 0 (got {mu0:.4g}): the output's mean then depends on the teacher; "
                         "use an odd activation or --drop-hermite 0")
    return mu0
