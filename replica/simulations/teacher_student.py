"""Teacher–student data for one or several hidden layers (docs/theory.md §1).

Conventions
-----------
* Input ``x ~ N(0, I_d)``; hidden widths ``k_ℓ = round(γ_ℓ d)``; ``n = round(α d²)``.
* ``h⁰ = x``, ``h^ℓ = σ(W_ℓ h^{ℓ−1} / √k_{ℓ−1})`` with ``k_0 = d``; output
  ``λ(x; W) = vᵀ h^L / √k_L``.
* Weights iid from the prior (unit variance); the readout ``v`` (``E v² = 1``) is known to
  the student.
* Labels ``y = λ(x; W⁰) + √Δ z``, or with an output channel ``y ~ P_out(· | λ(x; W⁰) − μ₀ Σv/√k_L)``
  (:mod:`replica.simulations.channels`).

Weights are a tuple ``(W_1, …, W_L)`` with ``W_ℓ`` of shape ``(k_ℓ, k_{ℓ−1})``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Architecture",
    "Teacher",
    "Dataset",
    "weight_prior",
    "sample_weights",
    "sample_readout",
    "sample_teacher",
    "network_output",
    "make_dataset",
]

@dataclass(frozen=True)
class Architecture:
    """Sizes of a teacher–student problem.

    Attributes
    ----------
    dim : int
        Input dimension ``d``.
    widths : tuple of int
        Hidden widths ``(k_1, …, k_L)``.
    """

    dim: int
    widths: tuple

    @classmethod
    def from_ratios(cls, dim: int, gamma) -> "Architecture":
        """Widths ``k_ℓ = round(γ_ℓ d)`` (at least 1).

        Parameters
        ----------
        dim : int
            ``d ≥ 1``.
        gamma : sequence of float
            Width ratios ``γ_ℓ > 0``, one per hidden layer.
        """
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim}")
        gamma = tuple(float(g) for g in gamma)
        if not gamma or any(not g > 0 for g in gamma):
            raise ValueError(f"gamma must be positive, got {gamma}")
        return cls(dim=int(dim), widths=tuple(max(1, int(round(g * dim))) for g in gamma))

    @property
    def layers(self) -> int:
        """Number of hidden layers ``L``."""
        return len(self.widths)

    @property
    def fan_in(self) -> tuple:
        """``(k_0, …, k_{L−1})`` with ``k_0 = d``."""
        return (self.dim,) + tuple(self.widths[:-1])

    @property
    def shapes(self) -> tuple:
        """Weight shapes ``((k_1, d), (k_2, k_1), …)``."""
        return tuple(zip(self.widths, self.fan_in))

    def num_samples(self, alpha: float) -> int:
        """``n = round(α d²)`` (at least 1)."""
        return max(1, int(round(alpha * self.dim**2)))


@dataclass
class Teacher:
    """Teacher network.

    Attributes
    ----------
    weights : tuple of ndarray
        ``W⁰_ℓ`` of shapes ``Architecture.shapes``.
    readout : ndarray, shape (k_L,)
        Readout ``v`` (shared with the student).
    """

    weights: tuple
    readout: np.ndarray


@dataclass
class Dataset:
    """Training or test data.

    Attributes
    ----------
    inputs : ndarray, shape (n, d)
    labels : ndarray, shape (n,)
        Noisy labels ``y`` (training) or noiseless outputs ``λ(x; W⁰)`` (test).
    """

    inputs: np.ndarray
    labels: np.ndarray


def weight_prior(name: str):
    """The registered weight prior ``name``, checked to draw samples (:meth:`priors.WeightPrior.sample`).

    Parameters
    ----------
    name : str
        A name of the registry :data:`priors.WEIGHT_PRIORS` (case-insensitive).

    Returns
    -------
    priors.WeightPrior

    Raises
    ------
    ValueError
        Unknown name (the message lists the registered ones), or a prior without a sampler (it
        works in the solver but not in a finite-size simulation).
    """
    from priors import WeightPrior, get_weight_prior

    prior = get_weight_prior(name)
    if type(prior).sample is WeightPrior.sample:
        raise ValueError(f"weight prior {name!r} cannot draw samples: {type(prior).__name__} defines no "
                         "sample(rng, shape), which the finite-size simulations need")
    return prior


def sample_weights(prior: str, shape, rng: np.random.Generator) -> np.ndarray:
    """Draw iid weights of unit variance from a registered prior (:meth:`priors.WeightPrior.sample`).

    Parameters
    ----------
    prior : str
        A registered name (built in: ``gaussian`` ``N(0, 1)``, ``rademacher`` ``±1``, ``uniform`` on
        ``[−√3, √3]``).
    shape : int or tuple of int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of float64, shape ``shape``

    Raises
    ------
    ValueError
        Unknown prior, or a prior without a sampler (:func:`weight_prior`).
    """
    return weight_prior(prior).sample(rng, shape)


def sample_readout(spec: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """Draw the readout ``v`` iid from a readout law (:meth:`priors.ReadoutLaw.sample`).

    Parameters
    ----------
    spec : str
        A registered name of :data:`priors.READOUT_LAWS` (``ones``, ``rademacher``, ``4point``,
        ``uniform``, ``gaussian``, …) or ``'discrete:v=w,...'``, as in :func:`priors.get_readout_law`.
    size : int
        ``k_L``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (size,), ``E v² = 1``

    Raises
    ------
    ValueError
        Unknown or malformed law (message of :func:`priors.get_readout_law`).

    Notes
    -----
    Continuous laws are sampled exactly (the theory puts them on a grid); discrete laws use
    their atoms and weights.
    """
    from priors import get_readout_law

    return get_readout_law(spec).sample(rng, size)


def sample_teacher(architecture: Architecture, *, prior: str, readout: str,
                   rng: np.random.Generator) -> Teacher:
    """Draw a teacher network (weights from the prior, readout from its law)."""
    weights = tuple(sample_weights(prior, shape, rng) for shape in architecture.shapes)
    return Teacher(weights=weights, readout=sample_readout(readout, architecture.widths[-1], rng))


def network_output(weights, readout, inputs, activation):
    """Output ``λ(x; W)`` of the network for a batch of inputs (JAX or NumPy arrays).

    Parameters
    ----------
    weights : sequence of arrays
        ``W_ℓ`` of shapes ``(k_ℓ, k_{ℓ−1})``.
    readout : array, shape (k_L,)
    inputs : array, shape (n, d)
    activation : callable
        Elementwise activation (a :class:`~replica.simulations.activations.JaxActivation`).

    Returns
    -------
    array, shape (n,)
        ``vᵀ h^L / √k_L`` with ``h^ℓ = σ(W_ℓ h^{ℓ−1}/√k_{ℓ−1})``.
    """
    hidden = inputs
    for w in weights:
        hidden = activation(hidden @ w.T / math.sqrt(w.shape[1]))
    return hidden @ readout / math.sqrt(readout.shape[0])


def make_dataset(teacher: Teacher, num_samples: int, *, delta: float, activation,
                 rng: np.random.Generator, noiseless: bool = False, channel=None, centre: float = 0.0) -> Dataset:
    """Teacher–student data ``y = λ(x; W⁰) + √Δ z``, or ``y ~ P_out(· | λ(x; W⁰) − centre)`` with a channel.

    Parameters
    ----------
    teacher : Teacher
    num_samples : int
        ``n``.
    delta : float
        Label-noise variance ``Δ ≥ 0``.
    activation : callable
        JAX activation (:func:`replica.simulations.activations.get_jax_activation`).
    rng : numpy.random.Generator
    noiseless : bool, optional
        Return ``λ(x; W⁰)`` (test data) instead of noisy labels.
    channel : priors.output_channels.OutputChannel, optional
        Draw the labels with ``channel.sample`` from the centred output ``λ(x; W⁰) − centre`` (``delta`` is
        then not used); None: Gaussian noise of variance ``delta``.
    centre : float, optional
        The known mean removed before the channel (``μ₀ Σv/√k_L``, :mod:`replica.simulations.channels`).

    Returns
    -------
    Dataset

    Notes
    -----
    The teacher output is evaluated with the same JAX activation (and precision) that the
    student uses, so that data and model agree exactly.
    """
    if delta < 0:
        raise ValueError(f"delta must be >= 0, got {delta}")
    dim = teacher.weights[0].shape[1]
    inputs = rng.standard_normal((num_samples, dim))
    outputs = np.asarray(_teacher_output(teacher, inputs, activation), dtype=float)
    if not noiseless:
        if channel is None:
            outputs = outputs + math.sqrt(delta) * rng.standard_normal(num_samples)
        else:
            outputs = np.asarray(channel.sample(outputs - centre, rng), dtype=float)
    return Dataset(inputs=inputs, labels=outputs)


def _teacher_output(teacher: Teacher, inputs, activation):
    import jax.numpy as jnp

    weights = tuple(jnp.asarray(w) for w in teacher.weights)
    return network_output(weights, jnp.asarray(teacher.readout), jnp.asarray(inputs), activation)
