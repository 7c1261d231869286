r"""Two hidden layers, odd activations with a linear part (docs/theory.md §6.2).

Model: ``λ(x) = vᵀ σ₂(W₂ σ₁(W₁ x/√d)/√k₁)/√k₂`` with ``W₁ ∈ R^{k₁×d}``,
``W₂ ∈ R^{k₂×k₁}``, ``k_ℓ = γ_ℓ d``, ``n = α d²``, a known readout ``v ~ P_v`` and odd
activations (``μ₀ = μ₂ = 0``) whose linear parts ``μ₁`` are kept. The first activation has
``E σ₁² = 1`` so that the second layer's pre-activations have unit variance (the
argument of ``g₂`` below is a correlation).

Notation: ``a = (μ₁⁽¹⁾)²``, ``b = (μ₁⁽²⁾)²``, ``g_ℓ`` the Hermite part of degree ≥ 3 of
``σ_ℓ`` (``a + g₁(1) = 1``).

Order parameters
----------------
* ``Q₁(s)``: overlap of first-layer neurons whose *effective readout*
  ``s = (vᵀW₂)_j/√k₂`` equals ``s``. By the central limit theorem ``s ~ N(0, E v²)``
  (``E v² = 1``). Everything depends on ``s`` through ``s²``, so ``E_s`` is a rule on
  ``s > 0``. Default (``s_grid="adaptive"``): no grid among the unknowns — the profile solver of
  :mod:`replica.models._two_layer_profile` iterates on global order parameters, reads ``Q₁(s)`` off
  one explicit curve and integrates with a rule that follows the layer-1 front (docs/two_layer.md,
  "The default: no grid in s"). Fixed rules: the ``2 n_s``-point Gauss–Hermite rule
  (probabilists', exact for polynomials of degree ``4 n_s − 1``) folded onto its ``n_s`` positive
  nodes (weights doubled; :func:`effective_readout_grid`), or a composite rule graded where
  ``Q₁(s)`` jumps (:func:`effective_readout_panels`, refined per sweep by :func:`converge_s_grid`;
  docs/two_layer.md, "Convergence in s").
* ``Q₂(v, s)``: overlap of the second-layer entries ``(W₂)_{ij}`` with ``v_i = v`` and
  ``s_j = s``.
* ``Q₂:₁(v)``: overlap of the rows with readout ``v`` of the product
  ``W₂:₁ = W₂W₁/√k₁`` (``k₂ × d``, inner dimension ``k₁``).
* Conjugates ``Q̂₁(s)``, ``Q̂₂(v, s)``, ``r₂:₁(v)`` and the tilt ``τ_v`` defined by
  ``m_rect(τ_v) = t_v := E_s[Q₂(v, s) Q₁(s)]`` (specialization of both layers implies
  part of the product).

Kernel, error and free entropy (per d²)::

    inner_v = a Q₂:₁(v) + E_s[Q₂(v, s) g₁(Q₁(s))]
    K_d     = a b + b g₁(1) + g₂(1)
    K*      = a b + b E_s[s² g₁(Q₁(s))] + E_v[v² g₂(inner_v)],     mmse = K_d − K*
    D       = Δ + K_d − K*

    f = −½ ln(2πe D)
        + (γ₁/α)    E_s    [ψ_{P₁}(Q̂₁(s))   − Q₁(s) Q̂₁(s)/2]
        + (γ₁γ₂/α)  E_{v,s}[ψ_{P₂}(Q̂₂(v,s)) − Q₂(v,s) Q̂₂(v,s)/2]
        + (γ₂/α)    E_v    [r₂:₁(v)(1 − Q₂:₁(v))/2 − ι_rect(τ_v + r₂:₁(v)) + ι_rect(τ_v)]

The weights ``γ₁``, ``γ₁γ₂`` and ``γ₂`` are the numbers of entries of ``W₁``, ``W₂`` and
``W₂:₁`` in units of d²; ``ι_rect`` is the mutual information per entry of the product
channel, ``2 ι_rect' = mmse_rect`` (:func:`product_channel`).

Derivation of the conjugate equations (stationarity of ``f``)
-------------------------------------------------------------
Write ``p(s)``, ``p(v)`` for the quadrature weights and ``w(v) = (Q₂:₁(v) − t_v)/m_rect'(τ_v)``.
Only the energetic term ``−½ ln D`` depends on the kernel, with
``∂(−½ ln D)/∂θ = (∂K*/∂θ)/(2D)``; the rectangular term depends on ``Q₁, Q₂`` only through
``τ_v``, with ``∂/∂τ_v[−ι(τ_v + r) + ι(τ_v)] = (m(τ_v + r) − m(τ_v))/2`` and
``∂τ_v/∂t_v = 1/m'(τ_v)``; at ``∂f/∂r = 0`` (``Q₂:₁ = m(τ_v + r)``) this is ``w(v)/2``.

* ``∂f/∂Q̂ = 0``: ``Q₁ = m_{P₁}(Q̂₁)``, ``Q₂ = m_{P₂}(Q̂₂)`` (``ψ' = m/2``).
* ``∂f/∂r₂:₁(v) = 0``: ``Q₂:₁(v) = m_rect(τ_v + r₂:₁(v))`` (``2ι' = 1 − m``).
* ``∂f/∂Q₂:₁(v) = 0``, with ``∂K*/∂Q₂:₁(v) = p(v) a v² g₂'(inner_v)``::

      r₂:₁(v) = (α/γ₂) a v² g₂'(inner_v) / D

  (the transcription of the reference notebooks this package started from prints ``b``; ``Q₂:₁`` enters ``K*`` only through ``a Q₂:₁`` — the product
  is seen through the *first* layer's linear part — so stationarity gives ``a``. The two
  coincide when both layers use the same activation.)
* ``∂f/∂Q₁(s) = 0``, with ``∂K*/∂Q₁(s) = p(s) g₁'(Q₁(s)) [b s² + E_v[v² g₂'(inner_v) Q₂(v,s)]]``
  and ``∂t_v/∂Q₁(s) = p(s) Q₂(v, s)``::

      (γ₁/α) Q̂₁(s)/2 = g₁'(Q₁(s)) [b s² + E_v[v² g₂'(inner_v) Q₂(v,s)]] / (2D)
                       + (γ₂/α) E_v[w(v) Q₂(v,s)]/2
      Q̂₁(s) = (α/γ₁) b s² g₁'(Q₁(s))/D + (α/γ₁) g₁'(Q₁(s)) E_v[v² g₂'(inner_v) Q₂(v,s)]/D
              + (γ₂/γ₁) E_v[w(v) Q₂(v,s)]

  **The second term carries α/γ₁.** Every kernel derivative with respect to a first-layer
  overlap is divided by the entropic weight ``γ₁`` of ``W₁`` (its ``k₁d = γ₁d²`` entries);
  ``α/γ₂`` would require ``W₁`` to carry the weight ``γ₂`` in the first term as well, and
  no single ``f`` is stationary at the solutions of the ``α/γ₂`` equations when
  ``γ₁ ≠ γ₂`` (tested by finite differences at γ = (0.7, 1.3)). With ``γ₁ = γ₂`` the
  reference notebooks agree.
* ``∂f/∂Q₂(v, s) = 0``, with ``∂K*/∂Q₂(v,s) = p(v)p(s) v² g₂'(inner_v) g₁(Q₁(s))`` and
  ``∂t_v/∂Q₂(v,s) = p(s) Q₁(s)``::

      Q̂₂(v, s) = α v² g₂'(inner_v) g₁(Q₁(s)) / (γ₁γ₂ D) + w(v) Q₁(s)/γ₁

These are the equations of docs/theory.md §6.2 (with ``a`` in ``r₂:₁``). The mutual information
per weight parameter is ``α/(γ₁ + γ₁γ₂) (−½ ln(2πeΔ) − f)``.

Special cases (tests): with ``μ₁ = 0`` (``drop_hermite=(0, 1, 2)``) one has ``a = b = 0``,
``r₂:₁ = 0``, ``w = 0``, and the equations are those of :class:`replica.models.deep.DeepModel`
with L = 2 (``Q₁`` independent of ``s``). ``Q ≡ 0`` is always a fixed point (``g_ℓ'(0) = 0``):
the universal branch, with ``mmse = b g₁(1) + g₂(1)`` (only the linear part is learned).
For readout laws with several ``|v|`` the per-group use of the homogeneous product channel
is the ansatz of the reference code, not derived here (exact for ``v² ≡ 1``).

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2510.24616 (deep MLPs, two hidden layers).
Troiani, Erba, Krzakala, Maillard, Zdeborová (2022), arXiv:2203.07752 (rectangular channel).

Why one module of this size: the two-layer solver is one set of saddle-point equations —
packing, the fixed-point map, the free entropy and its per-layer phases — over the same
private s-grid and product-channel quantities (docs/architecture.md, "Module size").
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from hciz.compiled import tilt_gain_of, tilt_of
from hciz.rectangular import rectangular_channel

from ..activations import get_activation
from ..engine import STATUS_MESSAGES, FixedPointResult, solve_fixed_point
from ..interface import ModelDefaults, RecordedArguments, records_arguments
from ..readout_grid import SELECT_EQUILIBRIUM, SELECT_LOW, SELECT_ZERO, readout_groups
# shared with the other architectures (replica/models/_common.py); effective_readout_grid, refined_solve,
# converge_s_grid, neuron_quantiles and the constants stay importable from here as they were
from ._common import (DEFAULT_S_GRID, MAX_GAUSS_HERMITE_S_GRID, MAX_S_PANELS, NEURON_QUANTILES,  # noqa: F401
                      PHASE_THRESHOLD, S_GRID_TARGET, converge_s_grid, effective_readout_grid,
                      layer_priors_and_readout, neuron_quantiles, refined_solve)
from ._output import OutputChannelTerms, make_output_channel

__all__ = ["TwoLayerModel", "TwoLayerState", "product_channel", "effective_readout_grid", "effective_readout_panels",
           "neuron_quantiles",
           "converge_s_grid", "phase_name", "channel_tilt", "channel_tilt_gain",
           "refined_solve"]

logger = logging.getLogger(__name__)

INFORMED_OVERLAP = 0.99
PARTIAL_QUANTILES = (0.5,)
#: panels of the composite rule in s before the sweep-level refinement (:func:`converge_s_grid`)
DEFAULT_S_PANELS = 16
#: Gauss–Legendre nodes per panel of the composite rule in s
S_PANEL_NODES = 4
_S_TAIL_RATIO = 1e-3  # mass ratio of successive tail panels
_S_TAIL_FLOOR = 1e-13  # folded-Gaussian mass left out beyond the last panel (the rule stops there)
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


def product_channel(gammas):
    """Rectangular channel of the product ``W₂:₁ = W₂W₁/√k₁`` (docs/theory.md §4.2 ↔ §6.2).

    The channel of :mod:`hciz.rectangular` observes ``S̃ = U_L U_R/√N`` (``U_L`` M×N,
    ``U_R`` N×P, iid unit entries, so ``S̃`` has unit-variance entries) at SNR ``λ``
    per entry, with ``R1 = P/M ≥ 1``, ``R2 = N/M``. ``W₂:₁`` is ``k₂ × d`` with inner
    dimension ``k₁`` and unit-variance entries, so ``U_L = W₂``, ``U_R = W₁``,
    ``N = k₁``; ``(M, P) = (k₂, d)`` if ``γ₂ ≤ 1`` and the transpose ``(M, P) = (d, k₂)``
    otherwise (overlap, MMSE and mutual information per entry are transpose-invariant):

        γ₂ ≤ 1:  R1 = 1/γ₂,  R2 = γ₁/γ₂;        γ₂ > 1:  R1 = γ₂,  R2 = γ₁.

    The SNR ``λ`` of the channel is ``τ_v + r₂:₁(v)`` and its per-entry ``ι`` obeys
    ``2ι' = mmse``; ``W₂:₁`` has ``γ₂ d²`` entries.

    Parameters
    ----------
    gammas : sequence of two floats
        ``(γ₁, γ₂) > 0``.

    Returns
    -------
    RectangularChannel
        Cached (tables built once per (R1, R2); see :func:`hciz.rectangular_channel`).

    Raises
    ------
    ValueError
        Not two finite positive widths.
    """
    g1, g2 = _check_gammas(gammas)
    if g2 <= 1.0:
        r1, r2 = 1.0 / g2, g1 / g2
    else:
        r1, r2 = g2, g1
    return rectangular_channel(float(r1), float(r2))


def channel_tilt(channel, t):
    """Tilt ``τ`` of a product channel: ``m_rect(τ) = t`` elementwise (0 where ``t ≤ 0``).

    Parameters
    ----------
    channel : RectangularChannel
    t : array_like
        Product overlap implied by the factors, in ``[0, 1]`` (clipped below 1 − 1e-15).

    Returns
    -------
    ndarray of the shape of ``t``.
    """
    t = np.asarray(t, dtype=float)
    out = np.zeros_like(t)
    pos = t > 0
    if np.any(pos):
        out[pos] = channel.overlap_inverse(np.minimum(t[pos], 1.0 - 1e-15))
    return out


def channel_tilt_gain(channel, tau, r):
    """``(m(τ + r) − m(τ))/m'(τ)`` elementwise, without cancellation at large τ.

    Above τ = 50 the difference is ``∫_τ^{τ+r} m'`` by 16-point Gauss–Legendre in
    ``u = 1/λ`` (integrand ``m'(1/u)/u²`` tends to a constant), as in
    :meth:`replica.models.shallow.ShallowModel.tilt_gain`.

    Parameters
    ----------
    channel : RectangularChannel
    tau, r : array_like of the same shape, >= 0

    Returns
    -------
    ndarray of that shape (0 where ``r = 0``).
    """
    ch = channel
    tau = np.asarray(tau, dtype=float)
    r = np.asarray(r, dtype=float)
    out = np.zeros_like(tau)
    low = (r != 0.0) & (tau <= 50.0)
    if np.any(low):
        out[low] = (ch.overlap(tau[low] + r[low]) - ch.overlap(tau[low])) / ch.overlap_derivative(tau[low])
    for i in zip(*np.nonzero((r != 0.0) & (tau > 50.0))):
        ti, ri = float(tau[i]), float(r[i])
        u_lo, u_hi = 1.0 / (ti + ri), 1.0 / ti
        u = 0.5 * (u_hi - u_lo) * _GL_NODES + 0.5 * (u_hi + u_lo)
        integral = 0.5 * (u_hi - u_lo) * float(_GL_WEIGHTS @ (ch.overlap_derivative(1.0 / u) / u**2))
        out[i] = integral / float(ch.overlap_derivative(ti))
    return out


def _chi_tail(s):
    """``μ((s, ∞)) = erfc(s/√2) + s φ(s)`` for the measure ``μ(ds) = φ(s)(1 + s²) ds`` on
    ``s > 0`` (mass 1; ``φ`` the standard normal density), without cancellation."""
    return special.erfc(s / math.sqrt(2.0)) + s * np.exp(-0.5 * s * s) / math.sqrt(2.0 * math.pi)


def _chi_tail_inverse(mass):
    """``s`` with ``μ((s, ∞)) = mass`` (``0 < mass < 1``)."""
    return optimize.brentq(lambda z: math.log(_chi_tail(z)) - math.log(mass), 0.0, 30.0, xtol=1e-14, rtol=1e-14)


def effective_readout_panels(panels: int, nodes: int = S_PANEL_NODES):
    """Composite Gauss–Legendre rule for ``E_s f(s²)``, ``s ~ N(0, 1)``, graded where ``Q₁(s)`` jumps.

    On the layer-1-only phase ``Q₁(s)`` jumps from 0 to ≈ 1 at the specialization front
    ``|s| = s*(α)`` (docs/two_layer.md); a grid that does not follow the front has an error of
    the order of the weight of the node next to it, times ``s²`` (the kernel weighs a neuron by
    ``b s²``). The panels therefore have equal mass under ``μ(ds) = φ(s)(1 + s²) ds``
    (:func:`_chi_tail`), so that every node has a weight and an ``s²``-weight below
    ``≈ 1/panels``; the last panel of mass ``1/panels`` is split geometrically (mass ratio
    1e-3) down to a folded mass of 1e-13, so that smooth integrands converge exponentially
    in ``nodes``. On each panel ``[a, b]`` (in ``s``) the ``nodes``-point Gauss–Legendre rule
    with the weights ``2φ(s)`` of the folded Gaussian.

    Parameters
    ----------
    panels : int
        Panels of equal ``μ``-mass, ``1 ≤ panels ≤ 100000``.
    nodes : int
        Gauss–Legendre nodes per panel, ``1 ≤ nodes ≤ 64``.

    Returns
    -------
    s_values : ndarray, shape (nodes · (panels + n_tail),)
        Increasing positive nodes (``n_tail`` ≈ 4 tail panels).
    s_weights : ndarray, same shape
        Positive weights with ``Σ w = 1`` and ``Σ w s² = 1`` exactly (the Gauss–Legendre weights
        times ``2φ(s)``, multiplied by ``c₀ + c₁ s²`` with ``|c₁| ≲ 1e-2/panels²``; the mass
        beyond the last node is < 1e-13).

    Raises
    ------
    ValueError
        ``panels`` or ``nodes`` not an integer in range.
    """
    for name, val, top in (("panels", panels, 100_000), ("nodes", nodes, 64)):
        if isinstance(val, bool) or not float(val).is_integer() or not 1 <= int(val) <= top:
            raise ValueError(f"s-grid {name} must be an integer in [1, {top}], got {val!r}")
    panels, nodes = int(panels), int(nodes)
    tails = [1.0 / panels]
    while tails[-1] * _S_TAIL_RATIO > _S_TAIL_FLOOR:
        tails.append(tails[-1] * _S_TAIL_RATIO)
    masses = np.concatenate([1.0 - np.arange(1, panels) / panels, tails[1:], [_S_TAIL_FLOOR]])
    edges = np.concatenate([[0.0], [_chi_tail_inverse(m) for m in masses]])
    x, w = np.polynomial.legendre.leggauss(nodes)
    a, b = edges[:-1, None], edges[1:, None]
    s = (0.5 * (a + b) + 0.5 * (b - a) * x).ravel()
    p = (0.5 * (b - a) * w).ravel() * 2.0 * np.exp(-0.5 * s * s) / math.sqrt(2.0 * math.pi)
    # moment matching: w_i (c0 + c1 s_i²) integrates 1 and s² exactly (the universal branch depends
    # on the rule only through E 1 and E s², so it is exact on every rule); c1 = O(1e-2/panels²)
    m0, m2, m4 = p.sum(), p @ s**2, p @ s**4
    c0, c1 = np.linalg.solve([[m0, m2], [m2, m4]], [1.0, 1.0])
    return s, p * (c0 + c1 * s * s)


def phase_name(overlap_layer_1, overlap_layer_2, overlap_product_2_1, *, threshold=PHASE_THRESHOLD) -> str:
    """Name of the phase of a stationary point from its overlaps.

    Parameters
    ----------
    overlap_layer_1 : array_like, shape (n_s,)
    overlap_layer_2 : array_like, shape (n_readout, n_s)
    overlap_product_2_1 : array_like, shape (n_readout,)
    threshold : float, keyword-only
        A part counts as learned when its largest overlap exceeds it (default 0.1).

    Returns
    -------
    str
        ``universal`` (nothing beyond the linear part), ``product`` (only ``W₂:₁``),
        ``layer_1`` (only ``W₁``, possibly for a subset of ``s``), ``layer_1+product``,
        or ``layers_1_2`` (both layers, hence the product).
    """
    l1 = float(np.max(overlap_layer_1)) > threshold
    l2 = float(np.max(overlap_layer_2)) > threshold
    pr = float(np.max(overlap_product_2_1)) > threshold
    if l1 and l2:
        return "layers_1_2"
    if l1:
        return "layer_1+product" if pr else "layer_1"
    return "product" if pr else "universal"


def _check_gammas(gammas):
    g = np.asarray(gammas, dtype=float).ravel()
    if g.size != 2 or not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ValueError(f"gammas must be two finite numbers > 0 (γ₁, γ₂), got {np.asarray(gammas).tolist()}")
    return float(g[0]), float(g[1])


@dataclass
class TwoLayerState:
    """Order parameters of one stationary point of the two-layer functional.

    Attributes
    ----------
    alpha : float
    overlap_layer_1, overlap_hat_layer_1 : ndarray, shape (n_s,)
        ``Q₁(s)``, ``Q̂₁(s)`` on the effective-readout grid.
    overlap_layer_2, overlap_hat_layer_2 : ndarray, shape (n_readout, n_s)
        ``Q₂(v, s)``, ``Q̂₂(v, s)``.
    overlap_product_2_1, overlap_hat_product_2_1 : ndarray, shape (n_readout,)
        ``Q₂:₁(v)`` and its conjugate ``r₂:₁(v)``.
    tau_product : ndarray, shape (n_readout,)
        Tilt ``τ_v``.
    mmse, free_entropy, mutual_information : float
    collective : ndarray or None
        Profile solver: ``(E_s Q₁, inner_v…, t_v…, Q₂:₁(v)…)`` on its adaptive rule, the
        :attr:`overlaps` the continuation compares (smooth along a branch while the layer-1 front
        crosses the reporting grid); None on a fixed rule.
    discretization_error : float or None
        Profile solver: relative change of mmse and free entropy on the doubled rule.
    neuron_overlap_layer_1 : ndarray, shape (n_q,), or None
        ``Q₁`` of the first-layer neuron at each neuron quantile (:func:`neuron_quantiles`: the
        fraction ``u`` of neurons with a stronger effective readout, strongest first).
    neuron_overlap_layer_2 : ndarray, shape (n_readout, n_q), or None
        ``Q₂(v, s)`` of the pair (second-layer neuron with readout ``v``, first-layer neuron at
        quantile ``u``).
    learned_features, learned_mass : float or None
        A discrete readout law (:meth:`TwoLayerModel.learned_groups`): the number of groups of equal ``|v|``
        whose second-layer neurons are learned (``max_s Q₂(v, s)`` above the phase threshold 0.1) and their
        readout mass (the learned fraction of the second layer). None for a continuous law.
    """

    alpha: float
    overlap_layer_1: np.ndarray
    overlap_hat_layer_1: np.ndarray
    overlap_layer_2: np.ndarray
    overlap_hat_layer_2: np.ndarray
    overlap_product_2_1: np.ndarray
    overlap_hat_product_2_1: np.ndarray
    tau_product: np.ndarray
    mmse: float
    free_entropy: float
    mutual_information: float
    collective: np.ndarray | None = None
    discretization_error: float | None = None
    neuron_overlap_layer_1: np.ndarray | None = None
    neuron_overlap_layer_2: np.ndarray | None = None
    learned_features: float | None = None
    learned_mass: float | None = None

    @property
    def overlaps(self) -> np.ndarray:
        """Packed ``(Q₁(s)…, Q₂(v, s)… row-major, Q₂:₁(v)…)``, all zero on the universal branch
        (profile solver: :attr:`collective`)."""
        if self.collective is not None:
            return self.collective
        return np.concatenate([self.overlap_layer_1, self.overlap_layer_2.ravel(), self.overlap_product_2_1])

    def record(self) -> dict:
        """Fields stored per α in a branch (HDF5 datasets)."""
        return {
            "mmse": self.mmse, "free_entropy": self.free_entropy, "mutual_information": self.mutual_information,
            "overlap_layer_1": self.overlap_layer_1, "overlap_hat_layer_1": self.overlap_hat_layer_1,
            "overlap_layer_2": self.overlap_layer_2, "overlap_hat_layer_2": self.overlap_hat_layer_2,
            "overlap_product_2_1": self.overlap_product_2_1,
            "overlap_hat_product_2_1": self.overlap_hat_product_2_1, "tau_product_2_1": self.tau_product,
            **({} if self.neuron_overlap_layer_1 is None else
               {"neuron_overlap_layer_1": self.neuron_overlap_layer_1,
                "neuron_overlap_layer_2": self.neuron_overlap_layer_2}),
            **({} if self.learned_features is None else
               {"learned_features": self.learned_features, "learned_mass": self.learned_mass}),
        }


class TwoLayerModel(OutputChannelTerms, RecordedArguments, ModelDefaults):
    """Two-hidden-layer network with odd activations and linear parts (docs/theory.md §6.2).

    Parameters
    ----------
    activation : str, Activation, or a pair of them (σ₁, σ₂)
        Odd activations (``μ₀ = μ₂ = 0``); ``σ₁`` must have ``E σ₁² = 1`` (names are built
        with ``unit_variance``). ``μ₁ = 0`` is allowed (then this is the L = 2 case of
        :class:`replica.models.deep.DeepModel`).
    gammas : sequence of two floats
        ``(γ₁, γ₂) = (k₁/d, k₂/d) > 0``.
    delta : float
        Label-noise variance Δ ≥ 0 (with ``output_channel``: the channel's Δ, 0 for sign and logistic).
    weight_prior : str, WeightPrior, or a pair (one per layer), keyword-only
    readout_law : str or ReadoutLaw, keyword-only
    readout_grid : int, keyword-only
        Grid size of continuous readout laws.
    s_grid : "adaptive", int or None, keyword-only
        ``"adaptive"`` (default): the s-integrals are done by the profile solver of
        :mod:`replica.models._two_layer_profile` — no grid among the unknowns, the rule follows the
        layer-1 front and is refined until mmse and free entropy are converged to 1e-3 (error
        estimate per point), profiles reported on the 16-panel rule; when ``Q₁`` cannot depend on
        ``s`` (``b = 0`` or ``g₁ ≡ 0``) the exact fixed rule of 12 Gauss–Hermite nodes instead.
        An int ``n_s ≥ 1`` (``--s-grid N``): the fixed folded Gauss–Hermite rule of
        :func:`effective_readout_grid`; ``None``: the composite rule of
        :func:`effective_readout_panels` with ``s_panels`` panels (``--s-grid panels:P``;
        :func:`converge_s_grid` refines it for a sweep, ``--s-grid auto``). Convergence
        (docs/two_layer.md): where both layers are specialized ``Q₁(s)`` is smooth and both
        rules converge fast; on the layer-1-only phase ``Q₁(s)`` jumps at the front ``|s| = s*``
        and the error is of the order of the (``s²``-)weight of the node next to it: 0.5–2% for
        Gauss–Hermite with 12–96 nodes, ≈ 1e-3 for the panel rule with 16 panels (76 nodes).
    s_panels : int, keyword-only
        Panels of the default rule (:data:`DEFAULT_S_PANELS`); ignored when ``s_grid`` is set.
    drop_hermite : tuple of int, keyword-only
        Hermite degrees removed when ``activation`` is a name.
    unit_variance : bool, keyword-only
        Rescale named activations to ``E σ² = 1`` (default True).
    output_channel : priors.output_channels.OutputChannel, keyword-only, optional
        Law of the labels (default Gaussian noise of variance ``delta``; docs/theory.md §10).

    Raises
    ------
    ValueError
        ``μ₀`` or ``μ₂`` ≠ 0, ``E σ₁² ≠ 1``, bad widths, Δ < 0, unknown names,
        ``s_grid < 1``, ``s_panels`` not an integer in [1, 100000].
    """

    #: the phase whose first appearance as the equilibrium gives the top-level ``alpha_sp``/``alpha_c``
    main_phase = "layers_1_2"
    #: the labels of the profile solver's packed point (selection, rule level) are constant along a
    #: branch: the continuation corrects the global unknowns by Newton (:mod:`replica.continuation`)
    fixed_labels = True
    #: number of hidden layers (per-layer transitions of :func:`replica.continuation.sweep`)
    n_layers = 2
    #: class of the states (built by the profile solver of :mod:`replica.models._two_layer_profile` too)
    state_type = TwoLayerState
    #: f = −½ ln(2πe(Δ + mmse)) + G/α with G a function of the order parameters only, so that
    #: df/dα = −(f + ½ ln 2πe(Δ + mmse))/α along a branch (:func:`replica.continuation.events.envelope_slope`)
    envelope_identity = True

    @records_arguments
    def __init__(self, activation="tanh2", gammas=(1.0, 1.0), delta=0.1, *, weight_prior="gaussian",
                 readout_law="ones", readout_grid=None, s_grid="adaptive", s_panels=DEFAULT_S_PANELS,
                 drop_hermite=(), unit_variance=True, output_channel=None):
        self.gammas = np.array(_check_gammas(gammas))
        if not (np.isfinite(delta) and delta >= 0):
            raise ValueError(f"delta must be a finite number >= 0, got {delta}")
        self.output_channel = make_output_channel(delta, output_channel)
        self.delta = float(self.output_channel.delta)
        acts = activation if isinstance(activation, (list, tuple)) else (activation, activation)
        if len(acts) != 2:
            raise ValueError(f"activation: expected one activation or a pair, got {len(acts)}")
        self.activations = [get_activation(s, drop_hermite=tuple(drop_hermite), unit_variance=unit_variance)
                            if isinstance(s, str) else s for s in acts]
        for ell, act in enumerate(self.activations, start=1):
            low = max(abs(act.mu0), abs(act.mu2))
            if low > 1e-10:
                raise ValueError(f"activation: the two-layer solver needs odd activations (μ₀ = μ₂ = 0); "
                                 f"layer {ell} has max(|μ₀|, |μ₂|) = {low:.3g}")
        if abs(self.activations[0].nu - 1.0) > 1e-8:
            raise ValueError(f"activation: the first layer needs E σ² = 1 (use --unit-variance), "
                             f"got {self.activations[0].nu:.6g}")
        self.a = float(self.activations[0].mu1) ** 2
        self.b = float(self.activations[1].mu1) ** 2
        self.g1_one = float(self.activations[0].g1)
        self.g2_one = float(self.activations[1].g1)
        self.weight_priors, self.readout_law = layer_priors_and_readout(weight_prior, 2, readout_law,
                                                                        readout_grid)
        self.readout_values = np.asarray(self.readout_law.values, dtype=float)
        self.readout_weights = np.asarray(self.readout_law.weights, dtype=float)
        self.v2 = self.readout_values**2
        #: K_d = a b + b g₁(1) + g₂(1) E v² (E s² = 1): the variance of the centred teacher pre-output
        self.output_variance = self.a * self.b + self.b * self.g1_one + self.g2_one * float(self.readout_weights @ self.v2)
        #: the solver through global order parameters (``s_grid="adaptive"``), else None
        self.profile_solver = None
        if isinstance(s_grid, str) and s_grid != "adaptive":
            raise ValueError(f"s_grid must be 'adaptive', an integer or None, got {s_grid!r}")
        if s_grid == "adaptive" and not (self.b > 0.0 and self.g1_one > 1e-12):
            s_grid = DEFAULT_S_GRID  # Q₁ does not depend on s: every rule exact for E 1 and E s² is exact
        if s_grid == "adaptive":
            from ._two_layer_profile import REPORT_PANELS, TwoLayerProfileSolver

            self.s_values, self.s_weights = effective_readout_panels(REPORT_PANELS)
            self.s_grid, self.s_panels, self.s_report_panels = None, None, REPORT_PANELS
            self.profile_solver = TwoLayerProfileSolver(self)
        elif s_grid is None:
            self.s_values, self.s_weights = effective_readout_panels(s_panels)
            self.s_grid, self.s_panels = None, int(s_panels)
        else:
            self.s_grid, self.s_panels = int(s_grid), None
            self.s_values, self.s_weights = effective_readout_grid(s_grid)
        self._refined_model = None
        self.neuron_u, self.neuron_s = neuron_quantiles()
        self.s2 = self.s_values**2
        self.channel = product_channel(self.gammas)
        self.n_s = self.s_values.size
        # Δ + K_d − K* at Q ≡ 0 (K_d − ab, written on the grids)
        self.mmse_universal = self.b * self.g1_one * float(self.s_weights @ self.s2) \
            + self.g2_one * float(self.readout_weights @ self.v2)

    @property
    def grids(self) -> dict:
        """Extra coordinates stored with a sweep: ``s_values``, ``s_weights`` (n_s,); the neuron
        quantiles of the per-neuron maps ``neuron_quantiles`` and the effective readouts there,
        ``neuron_effective_readouts`` (n_q,; :func:`neuron_quantiles`)."""
        return {"s_values": self.s_values, "s_weights": self.s_weights, "neuron_quantiles": self.neuron_u,
                "neuron_effective_readouts": self.neuron_s}

    @property
    def dataset_axes(self) -> dict:
        """Dimension scales of the per-neuron maps: ``neuron_overlap_layer_1`` (α, neuron quantile),
        ``neuron_overlap_layer_2`` (α, readout value, neuron quantile)."""
        return {"neuron_overlap_layer_1": ("neuron_quantiles",),
                "neuron_overlap_layer_2": ("readout_values", "neuron_quantiles")}

    def neuron_maps(self, q1, q2):
        """The per-neuron maps from profiles on the reporting grid ``s_values`` (piecewise linear in s):
        ``(Q₁ at the neuron quantiles (n_q,), Q₂ (n_readout, n_q))``."""
        q1 = np.asarray(q1, dtype=float)
        q2 = np.asarray(q2, dtype=float).reshape(self.n_readout, -1)
        return (np.interp(self.neuron_s, self.s_values, q1),
                np.array([np.interp(self.neuron_s, self.s_values, row) for row in q2]))

    @property
    def s_grid_rule(self) -> str:
        """Description of the rule in ``s`` (stored as the root attribute ``s_grid_rule``):
        ``gauss-hermite:<n_s>`` or ``panels:<panels>x<nodes>`` (n_s nodes in all)."""
        if self.profile_solver is not None:
            return (f"adaptive (profile solver, converged to {self.profile_solver.target:g}; profiles reported on "
                    f"panels:{self.s_report_panels}x{S_PANEL_NODES}, {self.n_s} nodes)")
        if self.s_grid is not None:
            return f"gauss-hermite:{self.n_s}"
        return f"panels:{self.s_panels}x{S_PANEL_NODES} ({self.n_s} nodes)"

    def universal_only_reason(self):
        """None: the universal branch is never imposed for two hidden layers."""
        return None

    def refined(self) -> "TwoLayerModel":
        """The same model on an s-grid of twice as many nodes (Gauss–Hermite; beyond 150 nodes the panel
        rule with as many nodes) or panels (built once)."""
        if self._refined_model is None:
            if self.s_grid is None:
                self._refined_model = self.with_s_grid(s_grid=None, s_panels=2 * self.s_panels)
            elif 2 * self.s_grid <= MAX_GAUSS_HERMITE_S_GRID:
                self._refined_model = self.with_s_grid(s_grid=2 * self.s_grid)
            else:  # Gauss–Hermite weights underflow: the panel rule with twice the nodes
                self._refined_model = self.with_s_grid(s_grid=None, s_panels=max(2 * self.n_s // S_PANEL_NODES, 1))
        return self._refined_model

    def with_s_grid(self, *, s_grid=None, s_panels=None) -> "TwoLayerModel":
        """The same model on another rule in ``s`` (arguments as in the constructor)."""
        return TwoLayerModel(tuple(self.activations), tuple(self.gammas), self.delta,
                             weight_prior=tuple(self.weight_priors), readout_law=self.readout_law,
                             s_grid=s_grid, s_panels=DEFAULT_S_PANELS if s_panels is None else s_panels,
                             output_channel=self.output_channel)

    def discretization_error(self, alpha, x, **solver_options) -> float:
        """Change of the solution at ``x`` when the s-grid is refined (error estimate of the grid):
        the first value of :func:`refined_solve` (profiles interpolated onto :meth:`refined`, twice
        the nodes or panels, and solved there; :class:`replica.models.deep_linear.DeepLinearModel` does the
        same with every inner layer's grid doubled).

        Parameters
        ----------
        alpha : float
        x : ndarray, shape (size,)
            A converged packed point of this model.
        **solver_options
            As :meth:`solve_from`.

        Returns
        -------
        float
            ``max(|Δ mmse|/mmse, |Δ f|/|f|)`` between the two grids (0 at ``Q ≡ 0``, NaN when the
            refined solve fails or changes phase).
        """
        if getattr(self, "profile_solver", None) is not None:
            return self.profile_solver.refinement_error(alpha, x, **solver_options)
        return refined_solve(self, alpha, x, **solver_options)[0]

    def relabel(self, alpha, x, like):
        """Profile solver: ``x`` re-solved with the labels (rule level) of ``like``
        (:meth:`replica.readout_grid.ProfileSolver.relabel`); on a fixed rule there are no labels
        (``x`` itself)."""
        if self.profile_solver is None:
            return np.asarray(x, dtype=float)
        return self.profile_solver.relabel(alpha, x, like)

    def interpolate_to(self, fine, x) -> np.ndarray:
        """Packed point ``x`` carried onto the s-grid of ``fine`` (``Q₁(s)`` and every row of
        ``Q₂(v, s)`` interpolated piecewise linearly in s; ``Q₂:₁`` unchanged)."""
        q1, q2, q21 = self.unpack(x)
        sf = fine.s_values
        return fine.pack(np.interp(sf, self.s_values, q1),
                         np.array([np.interp(sf, self.s_values, row) for row in q2]), q21)

    # ----------------------------------------------------------------- packing
    @property
    def n_readout(self) -> int:
        return self.readout_values.size

    @property
    def size(self) -> int:
        """Length of the packed vector ``(Q₁(s), Q₂(v, s), Q₂:₁(v))``; with the profile solver
        ``(D, inner_v…, t_v…, s_threshold, level, discretization_error)``."""
        if self.profile_solver is not None:
            return self.profile_solver.n_globals + 3
        return self.n_s + self.n_readout * self.n_s + self.n_readout

    def moving_indices(self, x) -> np.ndarray:
        """Packed entries the map moves: all on a fixed rule; the ``1 + 2 n_v`` globals for the
        profile solver (its selection, rule level and error estimate are labels)."""
        if self.profile_solver is not None:
            return np.arange(self.profile_solver.n_globals)
        return np.arange(np.size(x))

    def unpack(self, x):
        """Split a packed vector into ``Q₁`` (n_s,), ``Q₂`` (n_readout, n_s), ``Q₂:₁`` (n_readout,)."""
        x = np.asarray(x, dtype=float)
        n_s, n_v = self.n_s, self.n_readout
        return x[:n_s], x[n_s:n_s + n_v * n_s].reshape(n_v, n_s), x[n_s + n_v * n_s:]

    def pack(self, q1, q2, q21):
        """Packed vector from ``Q₁``, ``Q₂``, ``Q₂:₁`` (scalars are broadcast)."""
        n_s, n_v = self.n_s, self.n_readout
        return np.concatenate([np.broadcast_to(np.asarray(q1, float), (n_s,)),
                               np.broadcast_to(np.asarray(q2, float), (n_v, n_s)).ravel(),
                               np.broadcast_to(np.asarray(q21, float), (n_v,))])

    # ------------------------------------------------------------------ kernel
    def kernel(self, q1, q2, q21):
        """Kernel quantities at given overlaps.

        Returns
        -------
        dict
            ``g1q`` (n_s,) = ``g₁(Q₁(s))``, ``inner`` (n_readout,) = ``inner_v``,
            ``t`` (n_readout,) = ``E_s[Q₂ Q₁]``, ``mmse`` = K_d − K* (without cancellation) and ``D``, the
            output channel's effective variance there (Δ + mmse for Gaussian labels).
        """
        act1, act2 = self.activations
        g1q = act1.g(np.clip(q1, -1.0, 1.0))
        inner = self.a * q21 + q2 @ (self.s_weights * g1q)
        t = q2 @ (self.s_weights * q1)
        gap1 = self.b * float(self.s_weights @ (self.s2 * (self.g1_one - g1q)))
        gap2 = float(self.readout_weights @ (self.v2 * (self.g2_one - act2.g(np.clip(inner, -1.0, 1.0)))))
        return {"g1q": g1q, "inner": inner, "t": t, "mmse": gap1 + gap2, "D": self.effective_variance(gap1 + gap2)}

    def tilt(self, t):
        """``τ_v`` with ``m_rect(τ_v) = t_v`` (0 where ``t_v ≤ 0``), shape (n_readout,); compiled
        (:func:`hciz.compiled.tilt_of`; :func:`channel_tilt` is the same in Python)."""
        return tilt_of(self.channel, t)

    def tilt_gain(self, tau, r):
        """``(m(τ + r) − m(τ))/m'(τ)`` per readout value, compiled (:func:`hciz.compiled.tilt_gain_of`;
        :func:`channel_tilt_gain` is the same in Python)."""
        return tilt_gain_of(self.channel, tau, r)

    def conjugates(self, alpha, x):
        """Conjugates at packed overlaps ``x`` (docs/theory.md §6.2, derived in the module docstring).

        Returns
        -------
        dict
            ``q1, q2, q21`` (unpacked, clipped to [0, 1]), ``tau`` (n_readout,),
            ``r21`` (n_readout,), ``gain`` = w(v) at ``Q₂:₁ = m(τ + r)`` (n_readout,),
            ``q1_hat`` (n_s,), ``q2_hat`` (n_readout, n_s), ``q21_new`` = ``m_rect(τ + r)``,
            and the kernel dict entries.
        """
        q1, q2, q21 = (np.clip(z, 0.0, 1.0) for z in self.unpack(x))
        act1, act2 = self.activations
        ker = self.kernel(q1, q2, q21)
        D = ker["D"]
        g2p = act2.g_prime(np.clip(ker["inner"], -1.0, 1.0))
        g1p = act1.g_prime(q1)
        gam1, gam2 = self.gammas
        tau = self.tilt(ker["t"])
        r21 = np.maximum(alpha * self.a * self.v2 * g2p / (gam2 * D), 0.0)
        gain = self.tilt_gain(tau, r21)
        vg = self.readout_weights * self.v2 * g2p  # p(v) v² g₂'(inner_v)
        q1_hat = alpha / gam1 * g1p * (self.b * self.s2 + vg @ q2) / D \
            + gam2 / gam1 * ((self.readout_weights * gain) @ q2)
        q2_hat = alpha * np.outer(self.v2 * g2p, ker["g1q"]) / (gam1 * gam2 * D) + np.outer(gain, q1) / gam1
        q21_new = self.channel.overlap(tau + r21)
        return {**ker, "q1": q1, "q2": q2, "q21": q21, "tau": tau, "r21": r21, "gain": gain,
                "q1_hat": np.maximum(q1_hat, 0.0), "q2_hat": np.maximum(q2_hat, 0.0),
                "q21_new": np.atleast_1d(q21_new)}

    def update(self, alpha, x):
        """Fixed-point map on the packed overlaps ``(Q₁, Q₂, Q₂:₁)`` (profile solver: on the globals,
        labels unchanged)."""
        if self.profile_solver is not None:
            return self.profile_solver.packed_update(alpha, x)
        c = self.conjugates(alpha, x)
        if not (np.isfinite(c["D"]) and np.all(np.isfinite(c["q1_hat"])) and np.all(np.isfinite(c["q2_hat"]))):
            return np.full(np.shape(x), np.nan)
        p1, p2 = self.weight_priors
        return self.pack(p1.overlap(c["q1_hat"]), p2.overlap(c["q2_hat"]), c["q21_new"])

    # ----------------------------------------------------------- free entropy
    def free_entropy(self, alpha, q1, q1_hat, q2, q2_hat, q21, r21) -> float:
        """Free entropy ``f`` per d² as a function of every order parameter.

        Parameters
        ----------
        alpha : float
            α > 0.
        q1, q1_hat : ndarray, shape (n_s,)
        q2, q2_hat : ndarray, shape (n_readout, n_s)
        q21, r21 : ndarray, shape (n_readout,)
            ``Q₂:₁(v)`` and its conjugate ``r₂:₁(v) ≥ 0``.

        Returns
        -------
        float
            ``f`` (module docstring); ``τ_v`` is a function of ``Q₁, Q₂``. Its stationary
            points are the fixed points of :meth:`update`.
        """
        q1, q1_hat, q2, q2_hat, q21, r21 = (np.asarray(z, dtype=float) for z in (q1, q1_hat, q2, q2_hat, q21, r21))
        ker = self.kernel(q1, q2, q21)
        tau = self.tilt(ker["t"])
        gam1, gam2 = self.gammas
        p1, p2 = self.weight_priors
        iota = self.channel.mutual_information
        ent1 = float(self.s_weights @ (p1.free_entropy(q1_hat) - q1 * q1_hat / 2.0))
        ent2 = float(self.readout_weights @ ((p2.free_entropy(q2_hat) - q2 * q2_hat / 2.0) @ self.s_weights))
        rect = float(self.readout_weights @ (r21 * (1.0 - q21) / 2.0 - iota(tau + r21) + iota(tau)))
        energetic = self.energetic(ker["mmse"])
        if not math.isfinite(energetic):
            return math.inf  # perfect recovery with noiseless labels: f diverges
        return float(energetic
                     + gam1 / alpha * ent1 + gam1 * gam2 / alpha * ent2 + gam2 / alpha * rect)

    def mutual_information(self, alpha, free_entropy) -> float:
        """Mutual information per weight parameter ``α/(γ₁ + γ₁γ₂) (E ln P_out(y | λ⁰) − f)`` (Gaussian labels:
        ``−½ ln(2πeΔ)`` for the first term)."""
        gam1, gam2 = self.gammas
        return self.mutual_information_from(alpha / (gam1 + gam1 * gam2), free_entropy)

    def state(self, alpha, x) -> TwoLayerState:
        """All order parameters, error and free entropy at packed point ``x``."""
        return self.learned_groups(self._state(alpha, x))

    @functools.cached_property
    def readout_groups(self):
        """``(index of each atom's group, v² of each group)``, groups of equal ``|v|`` strongest first (−1: an atom at
        ``v = 0``), for a discrete readout law (:func:`replica.readout_grid.readout_groups`; None for a continuous
        one, put on a grid)."""
        if not self.readout_law.exact:
            return None
        return readout_groups(self.v2)

    def learned_groups(self, state) -> TwoLayerState:
        """``state`` with :attr:`TwoLayerState.learned_features` and ``learned_mass`` set (a discrete readout
        law; unchanged otherwise): a group is learned when the largest ``Q₂(v, s)`` of its atoms exceeds
        :data:`~replica.models._common.PHASE_THRESHOLD` (the test of :func:`phase_name`)."""
        grouping = self.readout_groups
        if grouping is None:
            return state
        index, groups = grouping
        on = np.max(np.asarray(state.overlap_layer_2, dtype=float), axis=1) > PHASE_THRESHOLD
        atoms = index >= 0
        learned = np.zeros(groups.size, dtype=bool)
        np.logical_or.at(learned, index[atoms], on[atoms])
        state.learned_features = float(np.count_nonzero(learned))
        state.learned_mass = float(np.sum(self.readout_weights[atoms][learned[index[atoms]]]))
        return state

    def feature_point(self, alpha, k, x_guess, solve_kw=None):
        """The branch through the packed point ``x_guess`` solved at ``alpha`` (a two-layer branch has a fixed set
        of learned groups; ``k`` is not used): per group ``s`` (``v²``), readout ``mass`` and the ``overlap``
        ``Q₂:₁(v)`` of its features (the product ``W₂W₁``; mean over the group's atoms), or None (hook of
        :func:`replica.workflow.run.feature_transitions`)."""
        grouping = self.readout_groups
        if grouping is None or x_guess is None:
            return None
        r = self.solve_from(alpha, None, np.asarray(x_guess, dtype=float), start="feature", **dict(solve_kw or {}))
        if not r.converged or "state" not in r.info:
            return None
        index, groups = grouping
        atoms = index >= 0
        q = np.asarray(r.info["state"].overlap_product_2_1, dtype=float)[atoms]
        index, n = index[atoms], groups.size
        return {"s": groups.copy(), "mass": np.bincount(index, weights=self.readout_weights[atoms], minlength=n),
                "overlap": np.bincount(index, weights=q, minlength=n) / np.bincount(index, minlength=n)}

    def _state(self, alpha, x) -> TwoLayerState:
        if self.profile_solver is not None:
            return self.profile_solver.state(alpha, x)
        c = self.conjugates(alpha, x)
        q1, q2, q21 = self.unpack(x)
        f = self.free_entropy(alpha, q1, c["q1_hat"], q2, c["q2_hat"], q21, c["r21"])
        n1, n2 = self.neuron_maps(q1, q2)
        return TwoLayerState(float(alpha), q1.copy(), c["q1_hat"], q2.copy(), c["q2_hat"], q21.copy(), c["r21"],
                             c["tau"], max(float(c["mmse"]), 0.0), f, self.mutual_information(alpha, f),
                             neuron_overlap_layer_1=n1, neuron_overlap_layer_2=n2)

    def state_schema(self) -> tuple:
        """The plotted fields of a state's record (:class:`replica.interface.FieldSpec`, role ``layer``):
        ``Q₁(s)``, ``Q₂(v, s)`` and the product overlap ``Q₂:₁(v)``, averaged over ``s`` and ``v``."""
        from ..interface import FieldSpec

        return (FieldSpec("overlap_layer_1", "1", "layer", ("s_values",)),
                FieldSpec("overlap_layer_2", "2", "layer", ("readout_values", "s_values")),
                FieldSpec("overlap_product_2_1", "2:1", "layer", ("readout_values",)))

    def specialization(self, state) -> float:
        """``E_s Q₁² + E_{v,s} v² Q₂² + E_v v² Q₂:₁²`` (orders the non-universal branches)."""
        return float(self.s_weights @ state.overlap_layer_1**2
                     + self.readout_weights @ (self.v2[:, None] * state.overlap_layer_2**2) @ self.s_weights
                     + self.readout_weights @ (self.v2 * state.overlap_product_2_1**2))

    @staticmethod
    def phase(state, *, threshold=PHASE_THRESHOLD) -> str:
        """Name of what a state has learned (see :func:`phase_name`)."""
        return phase_name(state.overlap_layer_1, state.overlap_layer_2, state.overlap_product_2_1,
                          threshold=threshold)

    # ----------------------------------------------------------------- solving
    def _profile_starts(self) -> dict:
        """:meth:`starts` of the profile solver: packed ``(D, inner, t, s_threshold)``, every neuron on
        the root of larger free entropy (:data:`~replica.models._two_layer_profile.SELECT_EQUILIBRIUM`:
        the layer-1 front at the equal-potential point). No partial start in ``s``: every threshold
        above the spinodal gives a stationary point (a continuous family, of which this selection is
        the one of largest ``f``; ``SELECT_LARGEST``, the front at the spinodal, is the attractor of an
        informed start on a fixed grid), and a start pinned at a quantile of ``|s|`` would pick an
        arbitrary member."""
        hi = INFORMED_OVERLAP
        init = self.profile_solver.initial_point
        out = {"informed": (init(hi, hi, hi, SELECT_EQUILIBRIUM), "both"),
               "layer_1": (init(hi, 0.0, 0.0, SELECT_EQUILIBRIUM), "down"),
               "product": (init(0.0, 0.0, hi, SELECT_LOW), "down"),
               "layer_1+product": (init(hi, 0.0, hi, SELECT_EQUILIBRIUM), "down")}
        for qt, mask_v in self._partial_v_masks():
            q = np.where(mask_v, hi, 0.0)
            out[f"partial_v_q{int(qt * 100)}"] = (init(hi, q, q, SELECT_EQUILIBRIUM), "down")
        return out

    def _partial_v_masks(self):
        """``(quantile, mask)`` of the readout values with ``|v|`` above each of
        :data:`PARTIAL_QUANTILES` of ``|v|``, for the masks that select some but not all values."""
        a = np.abs(self.readout_values)
        order = np.argsort(a)
        cdf = np.cumsum(self.readout_weights[order])
        for qt in PARTIAL_QUANTILES:
            mask_v = a > a[order][min(np.searchsorted(cdf, qt), self.n_readout - 1)]
            if 0 < np.count_nonzero(mask_v) < self.n_readout:
                yield qt, mask_v

    def _result(self, alpha, res: FixedPointResult) -> FixedPointResult:
        res.info["state"] = self.state(alpha, res.x)
        return res

    def solve_universal(self, alpha) -> FixedPointResult:
        """``Q ≡ 0`` (an exact fixed point): only the linear part is learned,
        ``mmse = b g₁(1) + g₂(1)``."""
        x = np.zeros(self.size) if self.profile_solver is None else self.profile_solver.universal_point()
        res = FixedPointResult(x, True, "exact", STATUS_MESSAGES["exact"], 0, 0.0, 0.0, "universal")
        return self._result(alpha, res)

    def solve_from(self, alpha, overlaps, warm=None, *, start="", **solver_options) -> FixedPointResult:
        """Damped iteration from ``overlaps`` (packed, or a triple ``(Q₁, Q₂, Q₂:₁)`` of scalars)
        or from the packed point ``warm``.

        ``solver_options`` go to :func:`replica.engine.solve_fixed_point`; a non-finite map
        ends with status ``"nan"`` (no state attached).
        """
        if self.profile_solver is not None:
            ps = self.profile_solver
            x0 = np.asarray(warm if warm is not None else overlaps, dtype=float)
            if x0.size == 3:  # three scalars: every neuron on its root of larger free entropy
                x0 = ps.initial_point(*x0, SELECT_EQUILIBRIUM)
            if x0.size not in (ps.n_globals + 1, ps.n_globals + 3):
                raise ValueError(f"overlaps: expected a packed point of {ps.n_globals + 1} or {self.size} values "
                                 f"or 3 scalars, got shape {x0.shape}")
            if float(x0[ps.n_globals]) == SELECT_ZERO:
                return self.solve_universal(alpha)
            return ps.solve(alpha, x0, start=start, **solver_options)
        if warm is not None:
            x0 = np.asarray(warm, dtype=float)
        else:
            x0 = np.asarray(overlaps, dtype=float)
            if x0.size == 3 and self.size != 3:
                x0 = self.pack(*x0)
        if x0.shape != (self.size,):
            raise ValueError(f"overlaps: expected {self.size} packed values or 3 scalars, got shape {x0.shape}")
        res = solve_fixed_point(lambda x: self.update(alpha, x), x0, start=start, **solver_options)
        if res.status == "nan":
            return res
        return self._result(alpha, res)

    def starts(self) -> dict:
        """Starts of docs/theory.md §6.2 and their sweep directions.

        Returns
        -------
        dict[str, tuple[ndarray, str]]
            ``informed`` (.99, .99, .99; both directions), ``layer_1`` (.99, 0, 0),
            ``product`` (0, 0, .99), ``layer_1+product`` (.99, 0, .99), all downwards, and
            partial starts: ``partial_s_q50`` (``Q₁, Q₂ = .99`` only for ``|s|`` above its
            median) and, for readout laws with several ``|v|``, ``partial_v_q50``
            (``Q₂, Q₂:₁ = .99`` only for ``|v|`` above its median). The universal start
            (0, 0, 0) is :meth:`solve_universal`.
        """
        hi = INFORMED_OVERLAP
        if self.profile_solver is not None:
            return self._profile_starts()
        out = {"informed": (self.pack(hi, hi, hi), "both"),
               "layer_1": (self.pack(hi, 0.0, 0.0), "down"),
               "product": (self.pack(0.0, 0.0, hi), "down"),
               "layer_1+product": (self.pack(hi, 0.0, hi), "down")}
        for qt in PARTIAL_QUANTILES:
            mask_s = self.s_values > self.s_values[min(np.searchsorted(np.cumsum(self.s_weights), qt), self.n_s - 1)]
            if 0 < np.count_nonzero(mask_s) < self.n_s:
                q1 = np.where(mask_s, hi, 0.0)
                out[f"partial_s_q{int(qt * 100)}"] = (self.pack(q1, np.broadcast_to(q1, (self.n_readout, self.n_s)),
                                                                hi), "down")
        for qt, mask_v in self._partial_v_masks():
            q2 = np.where(mask_v[:, None], hi, 0.0) * np.ones(self.n_s)
            out[f"partial_v_q{int(qt * 100)}"] = (self.pack(hi, q2, np.where(mask_v, hi, 0.0)), "down")
        return out
