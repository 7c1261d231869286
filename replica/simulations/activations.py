"""JAX versions of the activations of :mod:`replica.activations`.

The simulations need differentiable, jit-compilable activations; the theory needs
Hermite coefficients.  This module maps the *same* specification strings as
:func:`replica.activations.get_activation` to JAX functions, so that one ``--activation``
option drives both the solver and the simulations:

the names of :data:`replica.activations.ACTIVATIONS` (the one registry; ``ACTIVATION_NAMES`` here is
that tuple) and Hermite series ``'hermite:2=1.4142,3=1'`` meaning ``σ(x) = Σ_ℓ μ_ℓ He_ℓ(x)/ℓ!``
(docs/theory.md §2). The JAX table below is the compiled form of those names; a registered name
without one is refused with a one-line message.

The options ``drop_hermite`` and ``unit_variance`` are applied as in docs/theory.md §6.1:

    σ̃(x) = c · (σ(x) − Σ_{ℓ ∈ drop} μ_ℓ He_ℓ(x)/ℓ!),   c = 1/√(ν − Σ_{ℓ ∈ drop} μ_ℓ²/ℓ!)

(``c = 1`` without ``unit_variance``), with ``μ_ℓ`` and ``ν = E σ(z)²`` taken from
:mod:`replica.activations`.  ``tests/test_simulations.py`` checks that every JAX activation
agrees with the NumPy one of :mod:`replica.activations`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from replica.activations import ACTIVATIONS as ACTIVATION_NAMES  # the one registry (re-exported)
from replica.activations import get_activation

_MAX_DEGREE = 60  # highest Hermite degree of a 'hermite:' series (as replica.activations)

__all__ = ["JaxActivation", "get_jax_activation", "ACTIVATION_NAMES", "hermite_polynomial"]


def hermite_polynomial(ell: int, x):
    """Probabilists' Hermite polynomial ``He_ℓ(x)`` by the three-term recurrence.

    Parameters
    ----------
    ell : int
        Degree ``ℓ ≥ 0``.
    x : array_like (NumPy or JAX)
        Points.

    Returns
    -------
    array
        ``He_ℓ(x)``, same type and shape as ``x``.

    Notes
    -----
    ``He_0 = 1``, ``He_1 = x``, ``He_{ℓ+1} = x He_ℓ − ℓ He_{ℓ−1}``.
    """
    if ell < 0:
        raise ValueError(f"Hermite degree must be >= 0, got {ell}")
    h_prev, h = 0.0 * x + 1.0, x
    if ell == 0:
        return h_prev
    for m in range(1, ell):
        h_prev, h = h, x * h - m * h_prev
    return h


def _base_function(spec: str) -> Callable:
    """The JAX form of the base activation ``spec`` (no modifiers).

    Raises
    ------
    ValueError
        Unknown name (message of :func:`replica.activations.get_activation`, listing the registry),
        malformed ``hermite:`` terms, or a registered name without a JAX form here.
    """
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as jsp

    name = spec.strip().lower().replace(" ", "")
    reference = get_activation(name)  # the registry decides which names exist
    table = {
        "relu": lambda x: jnp.maximum(x, 0.0),
        "elu": jax.nn.elu,
        "tanh": jnp.tanh,
        "tanh2": lambda x: jnp.tanh(2.0 * x),
        "erf": jsp.erf,
        "sigmoid": jax.nn.sigmoid,
        "softplus": jax.nn.softplus,
        "quadratic": lambda x: x * x / math.sqrt(2.0),
    }
    if name in table:
        return table[name]
    if name.startswith("hermite:"):
        coefficients = {ell: mu for ell in range(_MAX_DEGREE + 1) if (mu := float(reference.hermite(ell))) != 0.0}

        def series(x):
            out = 0.0 * x
            for ell, mu in coefficients.items():
                out = out + (mu / math.factorial(ell)) * hermite_polynomial(ell, x)
            return out

        return series
    raise ValueError(f"activation {spec!r} has no JAX form (replica.simulations.activations); "
                     "replica-experiment cannot sample with it")


@dataclass(frozen=True)
class JaxActivation:
    """A JAX activation with the Hermite data it was built from.

    Attributes
    ----------
    name : str
        The specification string.
    fn : callable
        ``jax.Array -> jax.Array``, elementwise, jit-compatible.
    drop_hermite : tuple of int
        Hermite degrees removed from the base function.
    unit_variance : bool
        Whether the result was rescaled to ``E σ(z)² = 1``.
    dropped : dict
        ``{ℓ: μ_ℓ}`` of the base function for the dropped degrees.
    scale : float
        The factor ``c`` applied after dropping.
    """

    name: str
    fn: Callable
    drop_hermite: tuple = ()
    unit_variance: bool = False
    dropped: dict = field(default_factory=dict)
    scale: float = 1.0

    def __call__(self, x):
        return self.fn(x)


def get_jax_activation(spec: str, *, drop_hermite=(), unit_variance: bool = False) -> JaxActivation:
    """JAX activation for a specification string of :func:`replica.activations.get_activation`.

    Parameters
    ----------
    spec : str
        Activation name (see module docstring) or ``'hermite:ℓ=μ_ℓ,...'``.
    drop_hermite : iterable of int, optional
        Hermite degrees ``ℓ`` whose component ``μ_ℓ He_ℓ/ℓ!`` is subtracted.
    unit_variance : bool, optional
        Rescale so that ``E σ̃(z)² = 1`` for ``z ~ N(0, 1)``.

    Returns
    -------
    JaxActivation

    Raises
    ------
    ValueError
        Unknown name, malformed Hermite specification, a zero-variance result, or a constant
        activation (refused by :func:`replica.activations.get_activation`: nothing to learn).

    Notes
    -----
    ``σ̃ = c (σ − Σ_{ℓ∈drop} μ_ℓ He_ℓ/ℓ!)`` with ``c = (ν − Σ_{ℓ∈drop} μ_ℓ²/ℓ!)^{-1/2}``
    (docs/theory.md §2 and §6.1).
    """
    drop = tuple(sorted({int(ell) for ell in drop_hermite}))
    # the same names and refusals as the theory (a constant σ: nothing to learn), one source
    get_activation(spec, drop_hermite=drop, unit_variance=unit_variance)
    base = _base_function(spec)
    if not drop and not unit_variance:
        return JaxActivation(name=spec, fn=base)
    mus, nu = _reference_moments(spec, drop)
    remaining = nu - sum(mus[ell] ** 2 / math.factorial(ell) for ell in drop)
    if unit_variance and not remaining > 1e-14:
        raise ValueError(f"activation {spec!r} with drop_hermite={drop} has zero variance")
    scale = 1.0 / math.sqrt(remaining) if unit_variance else 1.0
    dropped = {ell: mus[ell] for ell in drop}

    def modified(x):
        out = base(x)
        for ell, mu in dropped.items():
            out = out - (mu / math.factorial(ell)) * hermite_polynomial(ell, x)
        return scale * out

    return JaxActivation(name=spec, fn=modified, drop_hermite=drop, unit_variance=unit_variance,
                         dropped=dropped, scale=scale)


def _reference_moments(spec: str, drop) -> tuple[dict[int, float], float]:
    """``μ_ℓ`` (ℓ in ``drop``) and ``ν`` of the base activation, from :mod:`replica.activations`."""
    reference = get_activation(spec)
    return {ell: float(reference.hermite(ell)) for ell in drop}, float(reference.nu)
