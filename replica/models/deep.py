"""Deep MLPs whose activation has no Hermite component of degree ≤ 2 (docs/theory.md §6.1).

Model: ``h⁰ = x``, ``h^ℓ = σ(W_ℓ h^{ℓ−1}/√k_{ℓ−1})``, ``λ = vᵀh^L/√k_L``, widths
``k_ℓ = γ_ℓ d`` (``k_0 = d``), ``n = α d²``, with ``μ₀ = μ₁ = μ₂ = 0`` and
``E σ² = 1`` (use ``drop_hermite=(0, 1, 2)`` and ``unit_variance=True``).

Order parameters: one overlap ``Q_ℓ`` per inner layer ``ℓ < L`` and a readout-resolved
overlap ``Q_L(v)`` for the last layer. With ``C_0 = 1`` and ``C_ℓ = g(Q_ℓ C_{ℓ−1})``,

    K(Q)  = E_v[ v² g(Q_L(v) C_{L−1}) ],          mmse = g(1) − K(Q)
    D     = Δ + mmse
    Q̂_ℓ  = α ∂K/∂Q_ℓ / (γ_{ℓ−1} γ_ℓ D)          (per readout atom for ℓ = L)
    Q_ℓ   = m_{P_ℓ}(Q̂_ℓ)
    f     = −½ ln(2πe D) + Σ_ℓ (γ_{ℓ−1}γ_ℓ/α) E[ψ_{P_ℓ}(Q̂_ℓ) − Q_ℓ Q̂_ℓ/2]

Derivation of the generalization (widths, priors, readout law). docs/theory.md §6.1 gives the
potential ``−α ln(Δ + 1 − K) + Σ_ℓ [q_ℓ + ln(1 − q_ℓ)]`` for γ_ℓ = 1, Gaussian prior,
``v ≡ 1``. For a Gaussian prior, ``ψ(Q̂) − Q Q̂/2`` at ``Q = Q̂/(1+Q̂)`` equals
``½[Q + ln(1 − Q)]``, so that potential is ``2α f`` up to a constant with entropic weight
1 per layer. Layer ℓ has ``k_ℓ k_{ℓ−1} = γ_ℓ γ_{ℓ−1} d²`` weights, and in the
one-hidden-layer free entropy (§5.2) the entropic term of the ``γ d²`` first-layer weights
enters as ``(γ/α) E_v[ψ − QQ̂/2]``; the same counting gives the weight ``γ_{ℓ−1}γ_ℓ/α``
per layer, a general prior replaces ``ψ`` by ``ψ_{P_ℓ}``, and a readout law resolves the
last layer's neurons by their readout ``v`` exactly as ``Q(v)`` in §5.2 (inner neurons
feed every output through ``W_{ℓ+1}`` and stay homogeneous). Checks (tests): for L = 1
this is the one-hidden-layer functional of §5.2 with μ₂ = 0 (``R̂₂ = 0``, the HCIZ term
vanishes) and the solvers agree; stationarity of ``f`` by finite differences; the
reference thresholds of docs/theory.md §8 for γ = 1.

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2510.24616 (deep MLPs).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from ..activations import get_activation
from ..engine import STATUS_MESSAGES, FixedPointResult, solve_fixed_point
from ._common import layer_priors_and_readout
from ._output import OutputChannelTerms, make_output_channel

__all__ = ["DeepModel", "DeepState"]

logger = logging.getLogger(__name__)

# The informed start sits next to the teacher (docs/theory.md §6.1 starts the reference iteration at
# q = 1): the basin of the specialized branch shrinks with depth, and from q = 0.99 the
# iteration falls to q = 0 for L ≥ 4 even where the branch exists (measured: L = 4, α = 40).
INFORMED_OVERLAP = 1.0 - 1e-6
UNINFORMED_OVERLAP = 1e-2
#: a layer has learned (branch names) when its overlap reaches this
PHASE_THRESHOLD = 0.5


@dataclass
class DeepState:
    """Order parameters of one stationary point of the deep functional.

    Attributes
    ----------
    alpha : float
    overlap_layers : list of ndarray
        ``Q_ℓ`` for ℓ = 1…L: shape () for inner layers, (n_readout,) for the last.
    overlap_hat_layers : list of ndarray
        Conjugates, same shapes.
    mmse, free_entropy, mutual_information : float
    """

    alpha: float
    overlap_layers: list
    overlap_hat_layers: list
    mmse: float
    free_entropy: float
    mutual_information: float

    @property
    def overlaps(self) -> np.ndarray:
        """Packed overlaps ``(Q_1, …, Q_{L−1}, Q_L(v)…)``."""
        return np.concatenate([np.atleast_1d(q) for q in self.overlap_layers])

    def record(self) -> dict:
        rec = {"mmse": self.mmse, "free_entropy": self.free_entropy, "mutual_information": self.mutual_information}
        for ell, (q, qh) in enumerate(zip(self.overlap_layers, self.overlap_hat_layers), start=1):
            rec[f"overlap_layer_{ell}"] = q
            rec[f"overlap_hat_layer_{ell}"] = qh
        return rec


class DeepModel(OutputChannelTerms):
    """L-hidden-layer network with the Hermite degrees ≤ 2 removed (docs/theory.md §6.1).

    Parameters
    ----------
    activation : str or Activation
        Must have ``μ₀ = μ₁ = μ₂ = 0`` and, for L ≥ 2, ``E σ² = 1``.
    gammas : sequence of float, length L
        Width ratios ``γ_ℓ = k_ℓ/d > 0``.
    delta : float
        Label-noise variance Δ ≥ 0 (with ``output_channel``: the channel's Δ, 0 for sign and logistic).
    weight_prior : str, WeightPrior, or a sequence of them (one per layer), keyword-only
    readout_law : str or ReadoutLaw, keyword-only
    readout_grid : int, keyword-only
        Grid size of continuous readout laws.
    drop_hermite, unit_variance : keyword-only
        Activation modifiers applied when ``activation`` is a name.
    output_channel : priors.output_channels.OutputChannel, keyword-only, optional
        Law of the labels (default Gaussian noise of variance ``delta``; docs/theory.md §10).

    Raises
    ------
    ValueError
        Activation with a Hermite component of degree ≤ 2, non-unit variance for L ≥ 2,
        γ_ℓ ≤ 0, Δ < 0, unknown names.
    """

    #: f = −½ ln(2πe(Δ + mmse)) + G/α with G a function of the order parameters only, so that
    #: df/dα = −(f + ½ ln 2πe(Δ + mmse))/α along a branch (:func:`replica.branches._envelope_slope`)
    envelope_identity = True

    @property
    def n_layers(self) -> int:
        """Number of hidden layers L (per-layer transitions of :func:`replica.branches.sweep`)."""
        return int(self.L)

    def __init__(self, activation="tanh2", gammas=(1.0,), delta=0.1, *, weight_prior="gaussian",
                 readout_law="ones", readout_grid=None, drop_hermite=(), unit_variance=False, output_channel=None):
        gammas = np.atleast_1d(np.asarray(gammas, dtype=float))
        if gammas.ndim != 1 or gammas.size == 0 or not np.all(np.isfinite(gammas)) or np.any(gammas <= 0):
            raise ValueError(f"gamma must be a list of finite numbers > 0 (one per layer), got {gammas.tolist()}")
        if not (np.isfinite(delta) and delta >= 0):
            raise ValueError(f"delta must be a finite number >= 0, got {delta}")
        self.gammas = gammas
        self.L = gammas.size
        self.output_channel = make_output_channel(delta, output_channel)
        self.delta = float(self.output_channel.delta)
        if isinstance(activation, str):
            activation = get_activation(activation, drop_hermite=tuple(drop_hermite), unit_variance=unit_variance)
        self.activation = activation
        low = max(abs(activation.mu0), abs(activation.mu1), abs(activation.mu2))
        if low > 1e-10:
            raise ValueError(
                "activation: the deep solver needs μ₀ = μ₁ = μ₂ = 0; use --drop-hermite 0,1,2 "
                f"(got max |μ_ℓ≤2| = {low:.3g})"
            )
        if self.L >= 2 and abs(activation.nu - 1.0) > 1e-8:
            raise ValueError(f"activation: the deep solver needs E σ² = 1 for L ≥ 2; use --unit-variance "
                             f"(got {activation.nu:.6g})")
        self.weight_priors, self.readout_law = layer_priors_and_readout(weight_prior, self.L, readout_law,
                                                                        readout_grid)
        self.readout_values = np.asarray(self.readout_law.values, dtype=float)
        self.readout_weights = np.asarray(self.readout_law.weights, dtype=float)
        self.v2 = self.readout_values**2
        # number of weights of layer ℓ in units of d²
        self.layer_sizes = np.concatenate([[1.0], gammas[:-1]]) * gammas
        self.g1 = float(activation.g1)
        self.output_variance = self.g1  # K_d: μ₀ = μ₁ = μ₂ = 0, E v² = 1

    @property
    def n_readout(self) -> int:
        return self.readout_values.size

    # ----------------------------------------------------------------- packing
    def unpack(self, x):
        x = np.asarray(x, dtype=float)
        return list(x[: self.L - 1]), x[self.L - 1:]

    def pack(self, inner, last):
        return np.concatenate([np.asarray(inner, dtype=float).ravel(), np.asarray(last, dtype=float).ravel()])

    # ------------------------------------------------------------------ kernel
    def kernel(self, x):
        """Output kernel and its derivatives.

        Returns
        -------
        K : float
        grad_inner : ndarray, shape (L−1,)
            ``∂K/∂Q_ℓ`` for the inner layers.
        grad_last : ndarray, shape (n_readout,)
            ``∂K/∂Q_L(v)`` per unit readout weight, ``v² g'(Q_L(v) C_{L−1}) C_{L−1}``.
        C : list of float
            ``C_0 … C_{L−1}``.
        """
        g, gp = self.activation.g, self.activation.g_prime
        inner, last = self.unpack(x)
        C = [1.0]
        for q in inner:
            C.append(float(g(q * C[-1])))
        arg = last * C[-1]
        K = float(np.dot(self.readout_weights, self.v2 * g(arg)))
        gp_last = gp(arg)
        grad_last = self.v2 * gp_last * C[-1]
        B = float(np.dot(self.readout_weights, self.v2 * gp_last * last))  # ∂K/∂C_{L−1}
        grad_inner = np.zeros(self.L - 1)
        for ell in range(self.L - 1, 0, -1):  # layers L−1 … 1 (index ell−1)
            q, c_prev = inner[ell - 1], C[ell - 1]
            gpe = float(gp(q * c_prev))
            grad_inner[ell - 1] = B * gpe * c_prev
            B = B * gpe * q
        return K, grad_inner, grad_last, C

    def conjugates(self, alpha, x):
        K, grad_inner, grad_last, _ = self.kernel(x)
        D = self.effective_variance(self.g1 - K)
        hat_inner = alpha * grad_inner / (self.layer_sizes[:-1] * D)
        hat_last = alpha * grad_last / (self.layer_sizes[-1] * D)
        return K, D, np.maximum(hat_inner, 0.0), np.maximum(hat_last, 0.0)

    def update(self, alpha, x):
        """Fixed-point map on the packed overlaps."""
        _, _, hi, hl = self.conjugates(alpha, x)
        inner = [self.weight_priors[ell].overlap(hi[ell]) for ell in range(self.L - 1)]
        return self.pack(inner, self.weight_priors[-1].overlap(hl))

    # ----------------------------------------------------------- free entropy
    def free_entropy(self, alpha, x, hats) -> float:
        """``f`` as a function of the packed overlaps ``x`` and packed conjugates ``hats``."""
        K, *_ = self.kernel(x)
        total = self.energetic(self.g1 - K)
        if not math.isfinite(total):
            return math.inf  # perfect recovery with noiseless labels: f diverges
        inner, last = self.unpack(x)
        h_inner, h_last = self.unpack(hats)
        for ell in range(self.L - 1):
            P = self.weight_priors[ell]
            total += self.layer_sizes[ell] / alpha * (float(P.free_entropy(h_inner[ell])) - inner[ell] * h_inner[ell] / 2)
        P = self.weight_priors[-1]
        total += self.layer_sizes[-1] / alpha * float(
            np.dot(self.readout_weights, P.free_entropy(h_last) - last * h_last / 2)
        )
        return float(total)

    def state(self, alpha, x) -> DeepState:
        K, D, hi, hl = self.conjugates(alpha, x)
        hats = self.pack(hi, hl)
        f = self.free_entropy(alpha, x, hats)
        inner, last = self.unpack(x)
        mi = self.mutual_information_from(alpha / self.layer_sizes.sum(), f)
        return DeepState(float(alpha), [np.float64(q) for q in inner] + [np.array(last)],
                         [np.float64(h) for h in hi] + [np.array(hl)], max(float(self.g1 - K), 0.0), f, mi)

    def state_schema(self) -> tuple:
        """The plotted fields of a state's record (:class:`replica.interface.FieldSpec`): the overlap
        ``overlap_layer_<ℓ>`` of every layer (role ``layer``; readout-resolved ones averaged over ``v``)."""
        from ..interface import FieldSpec

        return tuple(FieldSpec(f"overlap_layer_{ell}", str(ell), "layer", ("readout_values",))
                     for ell in range(1, self.n_layers + 1))

    def specialization(self, state) -> float:
        """Sum over layers of the squared overlaps (readout-weighted for the last layer)."""
        inner, last = self.unpack(state.overlaps)
        return float(np.sum(np.square(inner)) + np.dot(self.readout_weights, self.v2 * last**2))

    def phase(self, state) -> str:
        """Name of what a state has learned (:class:`replica.interface.ReplicaModel`).

        A layer has learned when its overlap (readout-weighted mean for the last layer) is at
        least 0.5. Returns ``universal`` (every overlap below 1e-6), ``specialized`` (every
        layer), ``weak`` (none) or ``layers_<ℓ>_<ℓ'>…`` (the learned layers).
        """
        inner, last = self.unpack(state.overlaps)
        if float(np.max(np.abs(state.overlaps), initial=0.0)) < 1e-6:
            return "universal"
        learned = [float(q) >= PHASE_THRESHOLD for q in inner]
        learned.append(float(np.dot(self.readout_weights, last)) >= PHASE_THRESHOLD)
        if all(learned):
            return "specialized"
        if not any(learned):
            return "weak"
        return "layers_" + "_".join(str(ell + 1) for ell, ok in enumerate(learned) if ok)

    def universal_only_reason(self):
        """None: the zero-overlap branch is never imposed (no HCIZ term, docs/theory.md §6.1)."""
        return None

    def universal_indices(self) -> np.ndarray:
        """No packed entry is free on the zero-overlap branch."""
        return np.array([], dtype=int)

    # ----------------------------------------------------------------- solving
    def _result(self, alpha, x, res: FixedPointResult) -> FixedPointResult:
        res.info["state"] = self.state(alpha, x)
        return res

    def solve_universal(self, alpha) -> FixedPointResult:
        """Zero-overlap branch: nothing beyond degree 2 is learned, ``mmse = g(1)``."""
        x = np.zeros(self.L - 1 + self.n_readout)
        res = FixedPointResult(x, True, "exact", STATUS_MESSAGES["exact"], 0, 0.0, 0.0, "universal")
        return self._result(alpha, x, res)

    def solve_from(self, alpha, overlaps, warm=None, *, start="", **solver_options) -> FixedPointResult:
        """Damped iteration from packed ``overlaps`` (or the packed point ``warm``).

        ``solver_options`` are passed to :func:`replica.engine.solve_fixed_point`.
        """
        x0 = np.asarray(warm if warm is not None else overlaps, dtype=float)
        res = solve_fixed_point(lambda x: self.update(alpha, x), x0, start=start, **solver_options)
        if res.status == "nan":
            return res
        return self._result(alpha, res.x, res)

    def starts(self) -> dict:
        """Informed, uninformed, and per-layer partial starts (inner layers specialized)."""
        n = self.L - 1 + self.n_readout
        out = {"informed": (np.full(n, INFORMED_OVERLAP), "both"),
               "uninformed": (np.full(n, UNINFORMED_OVERLAP), "up")}
        for depth in range(1, self.L):
            inner = [INFORMED_OVERLAP if ell < depth else UNINFORMED_OVERLAP for ell in range(self.L - 1)]
            out[f"layers_1_to_{depth}"] = (self.pack(inner, np.full(self.n_readout, UNINFORMED_OVERLAP)), "down")
        return out
