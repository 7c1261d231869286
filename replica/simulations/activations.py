"""JAX versions of the activations of :mod:`replica.activations`.

The simulations need differentiable, jit-compilable activations; the theory needs
Hermite coefficients.  This module maps the *same* specification strings as
:func:`replica.activations.get_activation` to JAX functions, so that one ``--activation``
option drives both the solver and the simulations:

``relu``, ``elu``, ``tanh``, ``tanh2`` (= tanh 2x), ``erf``, ``sigmoid``, ``softplus``,
``quadratic`` (= x²/√2) and Hermite series ``'hermite:2=1.4142,3=1'`` meaning
``σ(x) = Σ_ℓ μ_ℓ He_ℓ(x)/ℓ!`` (docs/theory.md §2).

The options ``drop_hermite`` and ``unit_variance`` are applied as in docs/theory.md §6.1:

    σ̃(x) = c · (σ(x) − Σ_{ℓ ∈ drop} μ_ℓ He_ℓ(x)/ℓ!),   c = 1/√(ν − Σ_{ℓ ∈ drop} μ_ℓ²/ℓ!)

(``c = 1`` without ``unit_variance``), with ``μ_ℓ`` and ``ν = E σ(z)²`` taken from
:mod:`replica.activations` when it is importable and otherwise computed here by
Gauss–Hermite quadrature.  ``tests/test_simulations.py`` checks that every JAX activation
agrees with the NumPy one of :mod:`replica.activations`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["JaxActivation", "get_jax_activation", "ACTIVATION_NAMES", "hermite_polynomial"]

ACTIVATION_NAMES = ("relu", "elu", "tanh", "tanh2", "erf", "sigmoid", "softplus", "quadratic")


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


def _parse_hermite(spec: str) -> dict[int, float]:
    body = spec.split(":", 1)[1]
    coefficients: dict[int, float] = {}
    try:
        for item in body.split(","):
            key, value = item.split("=")
            coefficients[int(key)] = float(value)
    except ValueError:
        raise ValueError(f"activation {spec!r}: expected 'hermite:ℓ=μ_ℓ,ℓ=μ_ℓ,...'") from None
    if not coefficients or min(coefficients) < 0:
        raise ValueError(f"activation {spec!r}: Hermite degrees must be >= 0")
    return coefficients


def _base_function(spec: str) -> Callable:
    import jax
    import jax.numpy as jnp
    import jax.scipy.special as jsp

    name = spec.strip().lower()
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
        coefficients = _parse_hermite(name)

        def series(x):
            out = 0.0 * x
            for ell, mu in coefficients.items():
                out = out + (mu / math.factorial(ell)) * hermite_polynomial(ell, x)
            return out

        return series
    raise ValueError(
        f"unknown activation {spec!r}; expected one of {', '.join(ACTIVATION_NAMES)} or 'hermite:ℓ=μ,...'"
    )


def _quadrature_moments(fn: Callable, degrees, order: int = 400) -> tuple[dict[int, float], float]:
    """``μ_ℓ`` and ``ν`` of a JAX function by Gauss–Hermite quadrature (fallback only)."""
    import jax.numpy as jnp

    nodes, weights = np.polynomial.hermite_e.hermegauss(order)
    weights = weights / np.sqrt(2.0 * np.pi)
    values = np.asarray(fn(jnp.asarray(nodes)), dtype=float)
    mus = {ell: float(np.sum(weights * values * hermite_polynomial(ell, nodes))) for ell in degrees}
    nu = float(np.sum(weights * values**2))
    return mus, nu


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
    base = _base_function(spec)
    drop = tuple(sorted({int(ell) for ell in drop_hermite}))
    try:
        from replica.activations import get_activation
    except ImportError:  # pragma: no cover - the package ships both
        pass
    else:  # the same refusals as the theory (a constant σ: nothing to learn), one source
        get_activation(spec, drop_hermite=drop, unit_variance=unit_variance)
    if not drop and not unit_variance:
        return JaxActivation(name=spec, fn=base)
    mus, nu = _reference_moments(spec, base, drop)
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


def _reference_moments(spec: str, base: Callable, drop) -> tuple[dict[int, float], float]:
    """``μ_ℓ`` (ℓ in ``drop``) and ``ν`` from :mod:`replica.activations`, else by quadrature."""
    try:
        from replica.activations import get_activation
    except ImportError:
        return _quadrature_moments(base, drop)
    reference = get_activation(spec)
    mus = {ell: float(reference.hermite(ell)) for ell in drop}
    nu = getattr(reference, "nu", None)
    if nu is None:
        nu = _quadrature_moments(base, ())[1]
    return mus, float(nu)
