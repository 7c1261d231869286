r"""Deep networks of any depth L whose odd activations keep their linear part (docs/deep_linear.md).

Model (docs/theory.md §1): ``h⁰ = x``, ``h^ℓ = σ_ℓ(W_ℓ h^{ℓ−1}/√k_{ℓ−1})``, ``λ = vᵀh^L/√k_L``,
``k_ℓ = γ_ℓ d`` (``k₀ = d``), ``n = α d²``, odd activations (``μ₀ = μ₂ = 0``) with linear
parts ``a_ℓ = (μ₁⁽ℓ⁾)²`` and degree-≥3 parts ``g_ℓ``; the inner activations (ℓ < L) have
``E σ_ℓ² = 1``. The derivation, every approximation and the checks are in
``docs/deep_linear.md``; this docstring is the summary the code follows.

Labels and matrices
-------------------
Neurons of layer ℓ < L are labelled by their *effective readout* ``s_ℓ`` (the readout of the
linear path from the neuron to the output, ``s_ℓ = (vᵀ W_{L:ℓ+1})_j/√k_L``, ``N(0, 1)`` by the
central limit theorem, on the folded Gauss–Hermite grid of :func:`effective_readout_grid`);
neurons of layer L by their readout ``v``; the input coordinates (layer 0) by a single label.
For ``1 ≤ m ≤ ℓ ≤ L`` the matrix ``W_{ℓ:m} = W_ℓ ⋯ W_m/√(k_{ℓ−1}⋯k_m)`` (``k_ℓ × k_{m−1}``;
``W_{ℓ:ℓ} = W_ℓ``) has the overlap profile ``Q_{ℓ:m}(ρ, κ)`` over (row label of layer ℓ,
column label of layer m − 1). It has ``γ_ℓ γ_{m−1} d²`` entries (``γ₀ = 1``).

Kernel and error (``A_{ℓ,m} = Π_{p=m}^{ℓ−1} a_p``, ``G₀ ≡ 1``, ``G_m = g_m(c_m)``)::

    c_ℓ(ρ) = Σ_{m=1}^{ℓ} A_{ℓ,m} E_κ[Q_{ℓ:m}(ρ, κ) G_{m−1}(κ)]      (pre-activation correlation)
    K*     = A_{L+1,1} + Σ_{m=1}^{L} A_{L+1,m+1} E_ρ[ρ² g_m(c_m(ρ))]   (ρ = s_m, or v for m = L)
    mmse   = K_d − K* = Σ_m A_{L+1,m+1} E_ρ[ρ² (g_m(1) − g_m(c_m(ρ)))],   D = Δ + mmse

Products (``m < ℓ``) are learned through rectangular channels: the overlap implied by the
factors is the *tilt* ``t_{ℓ:m} = Q_T diag(p) Q_B`` with ``(T, B) = (W_ℓ, W_{ℓ−1:m})``
(``tilt_split="top"``, default) or ``(W_{ℓ:m+1}, W_m)`` (``"bottom"``), ``m_rect(τ) = t``,
and ``Q_{ℓ:m} = m_rect(τ + r_{ℓ:m})``. Free entropy (per d², maximized over stationary points)::

    f = −½ ln(2πe D)
        + Σ_ℓ     (γ_ℓγ_{ℓ−1}/α) E[ψ_{P_ℓ}(Q̂_ℓ) − Q_ℓ Q̂_ℓ/2]
        + Σ_{m<ℓ} (γ_ℓγ_{m−1}/α) E[r_{ℓ:m}(1 − Q_{ℓ:m})/2 − ι_{ℓ:m}(τ + r_{ℓ:m}) + ι_{ℓ:m}(τ)]

Stationarity gives, for every matrix X = W_{ℓ:m} (conjugate ``Q̂`` for layers, ``r`` for
products), with ``B_ℓ(ρ) = ∂K*/∂c_ℓ(ρ)`` per unit weight and ``w(·) = (m(τ+r) − m(τ))/m'(τ)``::

    X̂(ρ, κ) = α A_{ℓ,m} B_ℓ(ρ) G_{m−1}(κ) / (γ_ℓγ_{m−1} D)
              + Σ_{products P with top factor X}    (w_P/w_X) Σ_κ' p(κ') w_P(ρ, κ') Q_B(κ, κ')
              + Σ_{products P with bottom factor X} (w_P/w_X) Σ_σ  p(σ)  Q_T(σ, ρ) w_P(σ, κ)
    B_L(v)  = v² g_L'(c_L(v))
    B_m(κ)  = g_m'(c_m(κ)) [A_{L+1,m+1} κ² + Σ_{ℓ>m} A_{ℓ,m+1} E_ρ[B_ℓ(ρ) Q_{ℓ:m+1}(ρ, κ)]]

(``w_X`` = number of entries of X in units of d²). With L = 2 these are exactly the equations of
:mod:`replica.models.two_layer` (docs/theory.md §6.2 with ``a`` in ``r₂:₁`` and ``α/γ₁``); with ``μ₁ = 0``
every product decouples (``r = 0``, ``Q = t``) and they are those of :mod:`replica.models.deep`.

Approximations (docs/deep_linear.md): the effective readouts of different layers are
independent standard Gaussians; each group of a product (row label × column label) uses the
homogeneous rectangular channel at its own SNR (the per-readout-group ansatz of the L = 2
code); the tilt of a product of ≥ 3 factors uses one split into two learned factors. The
channel of a product of p ≥ 3 Gaussian factors is exact (free multiplicative convolution of
the factors' Marchenko–Pastur laws, :mod:`hciz.rectangular`; checked against the RIE on sampled
matrices in docs/deep_linear.md §5).

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2510.24616 (deep MLPs near interpolation).
Troiani, Erba, Krzakala, Maillard, Zdeborová (2022), arXiv:2203.07752 (rectangular channel).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from hciz.compiled import iota_of, overlap_of, tilt_gain_of, tilt_of
from hciz.rectangular import rectangular_channel

from ..activations import get_activation
from ..engine import STATUS_MESSAGES, FixedPointResult, solve_fixed_point
from ..interface import ModelDefaults, RecordedArguments, records_arguments
from ._common import (DEFAULT_S_GRID, ODD_TOLERANCE, PHASE_THRESHOLD, effective_readout_grid,
                      layer_priors_and_readout, refined_solve)
from ._output import OutputChannelTerms, make_output_channel

__all__ = ["DeepLinearModel", "DeepLinearState", "matrix_keys", "product_channel_shape", "phase_label"]

logger = logging.getLogger(__name__)

INFORMED_OVERLAP = 0.99
TILT_SPLITS = ("top", "bottom")


def matrix_keys(n_layers: int) -> list:
    """Matrices ``W_{ℓ:m}`` of an L-layer network in packing order.

    Layers ``(1, 1) … (L, L)`` first, then the products ``(ℓ, m)``, ``m < ℓ``, by increasing
    number of factors ``ℓ − m + 1`` and then increasing ℓ (L = 2: ``(1,1), (2,2), (2,1)``).

    Parameters
    ----------
    n_layers : int
        L ≥ 1.

    Returns
    -------
    list of (int, int)
    """
    L = int(n_layers)
    keys = [(ell, ell) for ell in range(1, L + 1)]
    for span in range(1, L):
        keys += [(m + span, m) for m in range(1, L - span + 1)]
    return keys


def product_channel_shape(gammas, ell: int, m: int) -> tuple:
    """Aspect ratios ``(R1, R2)`` of the rectangular channel of ``W_{ℓ:m}``, ``m < ℓ``.

    ``W_{ℓ:m}`` is ``k_ℓ × k_{m−1}`` (``k₀ = d``) with inner widths ``k_m … k_{ℓ−1}``; with
    ``(M, P)`` the smaller and larger outer dimension, ``R1 = P/M ≥ 1`` and ``R2 = N/M`` for
    the inner widths ``N``. A product of two factors is the channel of :mod:`hciz.rectangular`
    with ``N = k_m`` (``R2`` a float); for three or more factors ``R2`` is the tuple of all
    inner ratios, sorted, and :func:`hciz.rectangular.rectangular_channel` builds the exact
    channel of the product (free multiplicative convolution, docs/deep_linear.md §5).

    Parameters
    ----------
    gammas : sequence of float, length L
    ell, m : int
        ``1 ≤ m < ℓ ≤ L``.

    Returns
    -------
    (float, float or tuple of float)
        ``(R1, R2)``.

    Raises
    ------
    ValueError
        ``m ≥ ℓ`` or indices out of range.
    """
    g = [1.0] + [float(x) for x in gammas]
    if not (1 <= m < ell <= len(g) - 1):
        raise ValueError(f"product indices must satisfy 1 <= m < ell <= L, got ({ell}, {m})")
    rows, cols = g[ell], g[m - 1]
    lo, hi = min(rows, cols), max(rows, cols)
    inner = tuple(sorted(x / lo for x in g[m:ell]))
    return hi / lo, (inner[0] if len(inner) == 1 else inner)


def phase_label(learned_layers, extra_products: bool) -> str:
    """Name of a phase from the set of learned layers.

    Parameters
    ----------
    learned_layers : iterable of int
        Layers whose largest overlap exceeds the threshold.
    extra_products : bool
        Some product is learned although not all of its factors are.

    Returns
    -------
    str
        ``universal``, ``product`` (only products), ``layer_ℓ`` / ``layers_ℓ_ℓ'_…`` with a
        ``+product`` suffix when ``extra_products`` (the names of
        :func:`replica.models.two_layer.phase_name` for L = 2).
    """
    layers = sorted(set(int(x) for x in learned_layers))
    if not layers:
        return "product" if extra_products else "universal"
    name = f"layer_{layers[0]}" if len(layers) == 1 else "layers_" + "_".join(str(x) for x in layers)
    return name + ("+product" if extra_products else "")


@dataclass
class DeepLinearState:
    """Order parameters of one stationary point of the L-layer functional.

    Attributes
    ----------
    alpha : float
    overlaps, overlap_hats : dict[(int, int), ndarray]
        ``Q_{ℓ:m}`` and its conjugate (``Q̂`` for layers, ``r`` for products), shape
        (n_label(ℓ), n_label(m − 1)) with ``n_label`` = n_s for inner layers, n_readout for
        layer L and 1 for the input.
    tilts : dict[(int, int), ndarray]
        ``τ_{ℓ:m}`` of the products.
    mmse, free_entropy, mutual_information : float
    keys : list of (int, int)
        Packing order (:func:`matrix_keys`).
    mean_overlaps : dict[(int, int), float]
        Label-averaged overlaps (:meth:`DeepLinearModel.mean_overlaps`).
    """

    alpha: float
    overlaps_by_matrix: dict
    overlap_hats: dict
    tilts: dict
    mmse: float
    free_entropy: float
    mutual_information: float
    keys: list = field(repr=False, default_factory=list)
    mean_overlaps: dict = field(repr=False, default_factory=dict)

    @property
    def overlaps(self) -> np.ndarray:
        """Packed overlaps in the order of :func:`matrix_keys` (all zero on the universal branch)."""
        return np.concatenate([self.overlaps_by_matrix[k].ravel() for k in self.keys])

    @staticmethod
    def _stored(q):
        """Drop the trailing input axis (length 1) of ``W_{ℓ:1}`` matrices."""
        q = np.asarray(q, dtype=float)
        return q[..., 0] if q.ndim == 2 and q.shape[1] == 1 else q

    def record(self) -> dict:
        """Fields stored per α (HDF5 datasets): ``overlap_layer_<ℓ>``, ``overlap_product_<ℓ>_<m>``,
        their ``overlap_hat_*`` conjugates, ``tau_product_<ℓ>_<m>``, and the label-averaged
        ``overlap_mean_layer_<ℓ>``/``overlap_mean_product_<ℓ>_<m>`` (scalars)."""
        rec = {"mmse": self.mmse, "free_entropy": self.free_entropy, "mutual_information": self.mutual_information}
        for (ell, m) in self.keys:
            tag = f"layer_{ell}" if ell == m else f"product_{ell}_{m}"
            rec[f"overlap_{tag}"] = self._stored(self.overlaps_by_matrix[(ell, m)])
            rec[f"overlap_hat_{tag}"] = self._stored(self.overlap_hats[(ell, m)])
            if ell != m:
                rec[f"tau_{tag}"] = self._stored(self.tilts[(ell, m)])
            if (ell, m) in self.mean_overlaps:
                rec[f"overlap_mean_{tag}"] = self.mean_overlaps[(ell, m)]
        return rec


def _matvec(M, v):
    """``M @ v`` over the last two axes of ``M`` and the last axis of ``v``, broadcasting leading (batch) axes."""
    return (M @ v[..., None])[..., 0]


def _vecmat(v, M):
    """``v @ M`` over the last axis of ``v`` and the last two axes of ``M``, broadcasting leading (batch) axes."""
    return (v[..., None, :] @ M)[..., 0, :]


def _finite_rows(c) -> np.ndarray:
    """Per batch row of :meth:`DeepLinearModel.conjugates`: True where ``D`` and every conjugate are finite."""
    ok = np.isfinite(np.asarray(c["D"], float))
    for h in c["hat"].values():
        ok = ok & np.all(np.isfinite(h), axis=(-2, -1))
    return ok


class DeepLinearModel(OutputChannelTerms, RecordedArguments, ModelDefaults):
    """L hidden layers with odd activations that keep their linear part (docs/deep_linear.md).

    Parameters
    ----------
    activation : str, Activation, or a sequence of L of them (σ₁ … σ_L)
        Odd activations (``μ₀ = μ₂ = 0``); σ₁ … σ_{L−1} need ``E σ² = 1`` (names are built with
        ``unit_variance``). ``μ₁ = 0`` is allowed (then this is :class:`replica.models.deep.DeepModel`).
    gammas : sequence of L floats
        ``γ_ℓ = k_ℓ/d > 0``.
    delta : float
        Label-noise variance Δ ≥ 0.
    weight_prior : str, WeightPrior, or a sequence (one per layer), keyword-only
    readout_law : str or ReadoutLaw, keyword-only
    readout_grid : int, keyword-only
        Grid size of continuous readout laws.
    s_grid : int, keyword-only
        Positive nodes of the effective-readout (Gauss–Hermite) rule of every inner layer, 1 to 150
        (default 12); :meth:`discretization_error` solves on twice as many, so the command line
        allows at most 75.
    drop_hermite : tuple of int, keyword-only
        Hermite degrees removed when activations are given by name.
    unit_variance : bool, keyword-only
        Rescale named activations to ``E σ² = 1`` (default True).
    tilt_split : {"top", "bottom"}, keyword-only
        Factorization used for the tilt of products of ≥ 3 factors: ``W_ℓ · W_{ℓ−1:m}``
        (default) or ``W_{ℓ:m+1} · W_m`` (identical for L = 2; docs/deep_linear.md §4).

    Raises
    ------
    ValueError
        ``μ₀`` or ``μ₂`` ≠ 0, ``E σ_ℓ² ≠ 1`` for an inner layer, bad widths, Δ < 0, unknown
        names, ``s_grid < 1``, a wrong number of activations, unknown ``tilt_split``.
    """

    #: f = −½ ln(2πe(Δ + mmse)) + G/α with G a function of the order parameters only, so that
    #: df/dα = −(f + ½ ln 2πe(Δ + mmse))/α along a branch (:func:`replica.continuation.events.envelope_slope`)
    envelope_identity = True

    @property
    def n_layers(self) -> int:
        """Number of hidden layers L (per-layer transitions of :func:`replica.continuation.sweep`)."""
        return int(self.L)

    @records_arguments
    def __init__(self, activation="tanh2", gammas=(1.0, 1.0, 1.0), delta=0.1, *, weight_prior="gaussian",
                 readout_law="ones", readout_grid=None, s_grid=DEFAULT_S_GRID, drop_hermite=(),
                 unit_variance=True, tilt_split="top", output_channel=None):
        g = np.atleast_1d(np.asarray(gammas, dtype=float))
        if g.ndim != 1 or g.size == 0 or not np.all(np.isfinite(g)) or np.any(g <= 0):
            raise ValueError(f"gammas must be a list of finite numbers > 0 (one per layer), got {g.tolist()}")
        if not (np.isfinite(delta) and delta >= 0):
            raise ValueError(f"delta must be a finite number >= 0, got {delta}")
        if tilt_split not in TILT_SPLITS:
            raise ValueError(f"tilt_split must be one of {TILT_SPLITS}, got {tilt_split!r}")
        self.L = L = g.size
        self.gammas = g
        self.output_channel = make_output_channel(delta, output_channel)
        self.delta = float(self.output_channel.delta)
        self.tilt_split = tilt_split
        acts = list(activation) if isinstance(activation, (list, tuple)) else [activation] * L
        if len(acts) != L:
            raise ValueError(f"activation: expected one activation or {L} (one per layer), got {len(acts)}")
        self.activations = [get_activation(a, drop_hermite=tuple(drop_hermite), unit_variance=unit_variance)
                            if isinstance(a, str) else a for a in acts]
        for ell, act in enumerate(self.activations, start=1):
            low = max(abs(act.mu0), abs(act.mu2))
            if low > ODD_TOLERANCE:
                raise ValueError(f"activation: the deep solver with linear parts needs odd activations "
                                 f"(μ₀ = μ₂ = 0); layer {ell} has max(|μ₀|, |μ₂|) = {low:.3g}")
            if ell < L and abs(act.nu - 1.0) > 1e-8:
                raise ValueError(f"activation: inner layers need E σ² = 1 (use --unit-variance); layer {ell} "
                                 f"has {act.nu:.6g}")
        self.a = np.array([float(act.mu1) ** 2 for act in self.activations])  # a_ℓ, index ℓ−1
        self.g_one = np.array([float(act.g1) for act in self.activations])
        self.weight_priors, self.readout_law = layer_priors_and_readout(weight_prior, L, readout_law, readout_grid)
        self.readout_values = np.asarray(self.readout_law.values, dtype=float)
        self.readout_weights = np.asarray(self.readout_law.weights, dtype=float)
        self.v2 = self.readout_values**2
        self.s_values, self.s_weights = effective_readout_grid(s_grid)
        self.n_s = self.s_values.size
        # label grids of layers 0 … L: weights p_ℓ and squared labels ρ² (for the K* paths)
        self.label_weights = [np.ones(1)] + [self.s_weights] * (L - 1) + [self.readout_weights]
        self.label_squares = [np.ones(1)] + [self.s_values**2] * (L - 1) + [self.v2]
        self.keys = matrix_keys(L)
        self.products = [k for k in self.keys if k[0] != k[1]]
        gam0 = np.concatenate([[1.0], g])
        self.entries = {(ell, m): gam0[ell] * gam0[m - 1] for (ell, m) in self.keys}  # w_X in units of d²
        self.shapes = {(ell, m): (self.label_weights[ell].size, self.label_weights[m - 1].size)
                       for (ell, m) in self.keys}
        self.factors = {}
        for (ell, m) in self.products:
            self.factors[(ell, m)] = ((ell, ell), (ell - 1, m)) if tilt_split == "top" else ((ell, m + 1), (m, m))
        self.channels = {(ell, m): rectangular_channel(*product_channel_shape(g, ell, m)) for (ell, m) in self.products}
        offsets = np.cumsum([0] + [int(np.prod(self.shapes[k])) for k in self.keys])
        self._slices = {k: slice(int(offsets[i]), int(offsets[i + 1])) for i, k in enumerate(self.keys)}
        self.mmse_universal = float(self._gap({}, universal=True))
        #: K_d = A_{L+1,1} + Σ_m A_{L+1,m+1} E_ρ[ρ² g_m(1)]: the variance of the centred teacher pre-output
        self.output_variance = self.A(L + 1, 1) + self.mmse_universal

    # ----------------------------------------------------------------- helpers
    def A(self, ell: int, m: int) -> float:
        """``A_{ℓ,m} = Π_{p=m}^{ℓ−1} a_p`` (1 when ``m = ℓ``); ``ℓ = L + 1`` is the readout."""
        table = self.__dict__.get("_A_table")
        if table is None:
            L = int(self.a.size)
            table = self._A_table = {(i, j): float(np.prod(self.a[j - 1:i - 1]))
                                     for i in range(1, L + 2) for j in range(1, i + 1)}
        return table[(ell, m)]

    @property
    def grids(self) -> dict:
        """Extra coordinates stored with a sweep: ``s_values``, ``s_weights`` (n_s,), and one copy
        ``s_values_<ℓ>`` of the s grid per inner layer ℓ = 2 … L − 1 (a dimension of its own, so that
        ``overlap_layer_2`` is labelled ``(alpha, s_values_2, s_values)``)."""
        out = {"s_values": self.s_values, "s_weights": self.s_weights}
        for ell in range(2, self.L):
            out[f"s_values_{ell}"] = self.s_values
        return out

    @property
    def s_grid_rule(self) -> str:
        """Rule in ``s`` of every inner layer, stored as the root attribute ``s_grid_rule``:
        ``gauss-hermite:<n_s>`` (as :attr:`replica.models.two_layer.TwoLayerModel.s_grid_rule`)."""
        return f"gauss-hermite:{self.s_values.size}"

    def _label_axis(self, layer):
        """Dimension scale labelling the neurons of ``layer`` (0: the input, no axis)."""
        if layer == 0:
            return None
        if layer == self.L:
            return "readout_values"
        return "s_values" if layer == 1 else f"s_values_{layer}"

    @property
    def dataset_axes(self) -> dict:
        """Dimension scales of the axes after α of every stored matrix dataset: rows label the
        neurons of layer ℓ (effective readout s_ℓ, or v for the last layer), columns those of layer
        m − 1 (none for m = 1), for ``overlap_*``, ``overlap_hat_*`` and ``tau_*`` of ``W_{ℓ:m}``."""
        axes = {}
        for (ell, m) in self.keys:
            tag = f"layer_{ell}" if ell == m else f"product_{ell}_{m}"
            names = tuple(a for a in (self._label_axis(ell), self._label_axis(m - 1)) if a is not None)
            for prefix in ("overlap_", "overlap_hat_") + (("tau_",) if ell != m else ()):
                axes[prefix + tag] = names
        return axes

    @property
    def specialized_branch(self) -> str:
        """The phase with every layer learned (``layers_1_2_…_L``), the file's main branch."""
        return phase_label(range(1, self.L + 1), False)

    @property
    def n_readout(self) -> int:
        """Number of readout atoms (rows of the last layer's matrices)."""
        return self.readout_values.size

    @property
    def size(self) -> int:
        """Length of the packed vector of all overlaps (:func:`matrix_keys` order)."""
        return self._slices[self.keys[-1]].stop

    def unpack(self, x) -> dict:
        """Packed vector(s) → ``{(ℓ, m): Q_{ℓ:m}}`` (views reshaped to :attr:`shapes`).

        ``x`` of shape ``(p,)`` or a batch ``(..., p)``; the matrices then have shape ``(...,) + shapes[k]``.
        """
        x = np.asarray(x, dtype=float)
        batch = x.shape[:-1]
        return {k: x[..., self._slices[k]].reshape(batch + self.shapes[k]) for k in self.keys}

    def pack(self, overlaps: dict) -> np.ndarray:
        """``{(ℓ, m): array or scalar}`` → packed vector (scalars broadcast; missing keys are 0).

        Matrices with leading batch axes (shape ``(...,) + shapes[k]``) give packed rows ``(..., p)``."""
        arrays = {k: np.asarray(overlaps.get(k, 0.0), float) for k in self.keys}
        batch = max((a.shape[:-2] for a in arrays.values() if a.ndim > 2), key=len, default=())
        return np.concatenate([np.broadcast_to(arrays[k], batch + self.shapes[k]).reshape(batch + (-1,))
                               for k in self.keys], axis=-1)

    # ------------------------------------------------------------------ kernel
    def kernel(self, Q: dict) -> dict:
        """Forward pass: ``c_ℓ`` (n_label(ℓ),) and ``G_ℓ = g_ℓ(c_ℓ)``, ℓ = 0 … L (``c₀ = G₀ = 1``).

        Matrices with leading batch axes (:meth:`unpack` of a batch) give ``c_ℓ``, ``G_ℓ`` of shape
        ``(..., n_label(ℓ))`` (``c₀ = G₀`` stay of shape (1,))."""
        c = [np.ones(1)]
        G = [np.ones(1)]
        for ell in range(1, self.L + 1):
            acc = 0.0
            for m in range(1, ell + 1):
                acc = acc + self.A(ell, m) * _matvec(Q[(ell, m)], self.label_weights[m - 1] * G[m - 1])
            c.append(acc)
            G.append(self.activations[ell - 1].g_inside(np.clip(acc, -1.0, 1.0)))
        return {"c": c, "G": G}

    def _gap(self, ker, universal=False):
        """``K_d − K* = Σ_m A_{L+1,m+1} E_ρ[ρ²(g_m(1) − G_m)]`` without cancellation (a float, or an
        array of the batch shape)."""
        total = 0.0
        for m in range(1, self.L + 1):
            Gm = 0.0 if universal else ker["G"][m]
            total = total + self.A(self.L + 1, m + 1) * (
                (self.label_squares[m] * (self.g_one[m - 1] - Gm)) @ self.label_weights[m])
        return float(total) if np.ndim(total) == 0 else total

    def backward(self, Q: dict, ker: dict) -> list:
        """``B_ℓ = ∂K*/∂c_ℓ`` per unit label weight, ℓ = 1 … L (index 0 unused)."""
        return self.backward_terms(Q, ker)[0]

    def backward_terms(self, Q: dict, ker: dict) -> tuple:
        """``(B, U)``: :meth:`backward` and the bracket ``U_ℓ`` with ``B_ℓ = g_ℓ'(c_ℓ) U_ℓ``
        (``U_L = v²``; ``∂K*/∂p(j) = G_ℓ(j) U_ℓ(j)`` for a node j of inner layer ℓ)."""
        L = self.L
        c = ker["c"]
        B = [None] * (L + 1)
        U = [None] * (L + 1)
        U[L] = self.v2
        B[L] = self.v2 * self.activations[L - 1].g_prime_inside(np.clip(c[L], -1.0, 1.0))
        for m in range(L - 1, 0, -1):
            acc = self.A(L + 1, m + 1) * self.label_squares[m]
            for ell in range(m + 1, L + 1):
                acc = acc + self.A(ell, m + 1) * _vecmat(self.label_weights[ell] * B[ell], Q[(ell, m + 1)])
            U[m] = acc
            B[m] = self.activations[m - 1].g_prime_inside(np.clip(c[m], -1.0, 1.0)) * acc
        return B, U

    def tilts(self, Q: dict) -> dict:
        """``t_{ℓ:m} = Q_T diag(p) Q_B`` (overlap of each product implied by its two factors)."""
        out = {}
        for P in self.products:
            T, Bk = self.factors[P]
            inner = self.label_weights[T[1] - 1]
            out[P] = np.clip(Q[T] @ (inner[:, None] * Q[Bk]), 0.0, 1.0)
        return out

    # -------------------------------------------------------------- conjugates
    def conjugates(self, alpha, x) -> dict:
        """Conjugates at packed overlaps ``x`` (module docstring).

        Returns
        -------
        dict
            ``Q`` (clipped to [0, 1]), ``hat`` (``Q̂`` of layers, ``r`` of products, clipped ≥ 0),
            ``t``, ``tau``, ``gain`` (per product), ``new`` (the next overlaps), ``c``, ``G``, ``D``.
        """
        Q = {k: np.clip(v, 0.0, 1.0) for k, v in self.unpack(x).items()}
        ker = self.kernel(Q)
        mmse = self._gap(ker)
        D = self._effective_variances(mmse)
        B, U = self.backward_terms(Q, ker)
        G = ker["G"]
        hat = {}
        scale = alpha / np.asarray(D)[..., None, None]
        for (ell, m) in self.keys:
            hat[(ell, m)] = (self.A(ell, m) / self.entries[(ell, m)]) * scale * (B[ell][..., :, None] * G[m - 1][..., None, :])
        t = self.tilts(Q)
        tau = {P: tilt_of(self.channels[P], t[P]) for P in self.products}
        # conjugates of products first (largest spans first: a product's r needs the gains of
        # the longer products it is a factor of)
        gain = {}
        for P in sorted(self.products, key=lambda k: -(k[0] - k[1])):
            hat[P] = hat[P] + self._tilt_feedback(P, Q, gain)
            hat[P] = np.maximum(hat[P], 0.0)
            gain[P] = tilt_gain_of(self.channels[P], tau[P], hat[P])
        for ell in range(1, self.L + 1):
            X = (ell, ell)
            hat[X] = np.maximum(hat[X] + self._tilt_feedback(X, Q, gain), 0.0)
        new = {}
        for X in self.keys:
            if X[0] == X[1]:
                new[X] = self.weight_priors[X[0] - 1].overlap(hat[X])
            else:
                new[X] = overlap_of(self.channels[X], tau[X] + hat[X])
        return {"Q": Q, "hat": hat, "t": t, "tau": tau, "gain": gain, "new": new, "c": ker["c"], "G": G, "D": D,
                "mmse": mmse, "U": U}

    def _effective_variances(self, mmse):
        """:meth:`effective_variance` of a float or, elementwise, of a batch of mmse values."""
        if np.ndim(mmse) == 0:
            return self.effective_variance(mmse)
        if self._gaussian:
            return self.output_channel.delta + mmse
        return np.array([self.effective_variance(float(m)) for m in np.ravel(mmse)]).reshape(np.shape(mmse))

    def _tilt_feedback(self, X, Q, gain):
        """Derivative of the products' tilt terms with respect to ``Q_X`` over X's entropic weight."""
        out = 0.0
        for P in self.products:
            T, Bk = self.factors[P]
            if P not in gain or X not in (T, Bk):
                continue
            ratio = self.entries[P] / self.entries[X]
            rows_w = self.label_weights[P[0]]
            cols_w = self.label_weights[P[1] - 1]
            if X == T:
                out = out + ratio * ((gain[P] * cols_w[None, :]) @ np.swapaxes(Q[Bk], -1, -2))
            if X == Bk:
                out = out + ratio * (np.swapaxes(Q[T], -1, -2) @ (rows_w[:, None] * gain[P]))
        return out

    def update(self, alpha, x):
        """Fixed-point map on the packed overlaps (NaN where the conjugates are not finite, e.g. NaN overlaps)."""
        c = self.conjugates(alpha, x)
        if not (np.isfinite(c["D"]) and all(np.all(np.isfinite(h)) for h in c["hat"].values())):
            return np.full(np.shape(x), np.nan)
        return self.pack(c["new"])

    def update_many(self, alpha, X):
        """:meth:`update` of every row of ``X`` (shape (B, size)) in one vectorized evaluation:
        shape (B, size), rows where the map is not finite set to NaN (as :meth:`update`)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        c = self.conjugates(alpha, X)
        out = self.pack(c["new"])
        return np.where(_finite_rows(c)[:, None], out, np.nan)

    # ----------------------------------------------------------- free entropy
    def free_entropy(self, alpha, overlaps: dict, hats: dict) -> float:
        """Free entropy ``f`` per d² as a function of every order parameter.

        Parameters
        ----------
        alpha : float
            α > 0.
        overlaps, hats : dict[(int, int), ndarray]
            ``Q_{ℓ:m}`` and its conjugate (``Q̂`` for layers, ``r ≥ 0`` for products), shapes
            :attr:`shapes`. ``τ`` is a function of the overlaps.

        Returns
        -------
        float
            ``f`` (module docstring); its stationary points are the fixed points of :meth:`update`.
        """
        Q = {k: np.asarray(v, dtype=float).reshape(self.shapes[k]) for k, v in overlaps.items()}
        H = {k: np.asarray(v, dtype=float).reshape(self.shapes[k]) for k, v in hats.items()}
        ker = self.kernel(Q)
        total = self.energetic(self._gap(ker))
        t = self.tilts(Q)
        for X in self.keys:
            pr, pc = self.label_weights[X[0]], self.label_weights[X[1] - 1]
            if X[0] == X[1]:
                P = self.weight_priors[X[0] - 1]
                term = P.free_entropy(H[X]) - Q[X] * H[X] / 2.0
            else:
                ch = self.channels[X]
                tau = tilt_of(ch, t[X])

                def iota(lam, ch=ch):
                    return iota_of(ch, lam)
                term = H[X] * (1.0 - Q[X]) / 2.0 - np.asarray(iota(tau + H[X])) + np.asarray(iota(tau))
            total += self.entries[X] / alpha * float(pr @ np.asarray(term).reshape(self.shapes[X]) @ pc)
        return float(total)

    @property
    def weights_per_d2(self) -> float:
        """Number of weight parameters per d², ``Σ_ℓ γ_ℓγ_{ℓ−1}``."""
        return float(sum(self.entries[(ell, ell)] for ell in range(1, self.L + 1)))

    def mutual_information(self, alpha, free_entropy) -> float:
        """Mutual information per weight parameter ``α/Σ_ℓ γ_ℓγ_{ℓ−1} (E ln P_out(y | λ⁰) − f)`` (Gaussian
        labels: ``−½ ln(2πeΔ)`` for the first term)."""
        return self.mutual_information_from(alpha / self.weights_per_d2, free_entropy)

    def state(self, alpha, x) -> DeepLinearState:
        """All order parameters, error and free entropy at packed point ``x``."""
        c = self.conjugates(alpha, x)
        Q = {k: v.copy() for k, v in self.unpack(x).items()}
        f = self.free_entropy(alpha, Q, c["hat"])
        st = DeepLinearState(float(alpha), Q, c["hat"], c["tau"], float(c["mmse"]), f,
                             self.mutual_information(alpha, f), list(self.keys))
        st.mean_overlaps = self.mean_overlaps(st)
        return st

    def mean_overlaps(self, state) -> dict:
        """Label-averaged overlap of every matrix, ``{(ℓ, m): E_{ρ,κ} Q_{ℓ:m}}`` (rows of layer L
        weighted by ``p(v) v²``)."""
        out = {}
        for X in self.keys:
            pr = self.label_weights[X[0]] * (self.v2 if X[0] == self.L else 1.0)
            out[X] = float(pr @ state.overlaps_by_matrix[X] @ self.label_weights[X[1] - 1] / pr.sum())
        return out

    def state_schema(self) -> tuple:
        """The plotted fields of a state's record (:class:`replica.interface.FieldSpec`, role ``layer``): the
        label-averaged overlap ``overlap_mean_layer_<ℓ>`` of every layer, then ``overlap_mean_product_<ℓ>_<m>``
        of every product (:func:`matrix_keys` order), labelled ``ℓ`` and ``ℓ:m``."""
        from ..interface import FieldSpec

        return tuple(FieldSpec(f"overlap_mean_layer_{ell}" if ell == m else f"overlap_mean_product_{ell}_{m}",
                               str(ell) if ell == m else f"{ell}:{m}", "layer") for ell, m in self.keys)

    def specialization(self, state) -> float:
        """Sum over matrices of the weighted mean squared overlaps (orders non-universal points)."""
        total = 0.0
        for X in self.keys:
            q = state.overlaps_by_matrix[X]
            total += float(self.label_weights[X[0]] @ q**2 @ self.label_weights[X[1] - 1])
        return total

    def phase(self, state, *, threshold=PHASE_THRESHOLD) -> str:
        """Name of what a state has learned (:func:`phase_label`): the layers whose largest overlap
        exceeds ``threshold``, and ``+product`` when a product is learned without all its factors."""
        Q = state.overlaps_by_matrix
        learned = {ell for ell in range(1, self.L + 1) if float(np.max(Q[(ell, ell)])) > threshold}
        extra = any(float(np.max(Q[P])) > threshold and not set(range(P[1], P[0] + 1)) <= learned
                    for P in self.products)
        return phase_label(learned, extra)

    @property
    def main_phase(self) -> str:
        """Phase whose first appearance as the equilibrium gives the top-level transitions
        (:mod:`replica.continuation`)."""
        return self.specialized_branch

    def universal_only_reason(self):
        """None: the universal branch is never imposed (:class:`replica.interface.ReplicaModel`)."""
        return None

    # ------------------------------------------------------- grid error estimate
    def refined(self) -> "DeepLinearModel":
        """The same model on an s-grid of twice as many nodes (built once)."""
        if getattr(self, "_refined_model", None) is None:
            self._refined_model = DeepLinearModel(
                list(self.activations), tuple(self.gammas), self.delta, weight_prior=list(self.weight_priors),
                readout_law=self.readout_law, s_grid=2 * self.n_s, tilt_split=self.tilt_split,
                output_channel=self.output_channel)
        return self._refined_model

    def interpolate_to(self, fine, x) -> np.ndarray:
        """Packed point ``x`` of this model carried onto the s-grid of ``fine``: every profile
        is interpolated piecewise linearly along its inner-layer (s-labelled) axes."""
        coarse_s, fine_s = self.s_values, fine.s_values
        out = {}
        for (ell, m), q in self.unpack(x).items():
            if 1 <= ell <= self.L - 1:  # rows labelled by s_ℓ
                q = np.array([np.interp(fine_s, coarse_s, col) for col in q.T]).T
            if 1 <= m - 1 <= self.L - 1:  # columns labelled by s_{m−1}
                q = np.array([np.interp(fine_s, coarse_s, row) for row in q])
            out[(ell, m)] = q
        return fine.pack(out)

    def discretization_error(self, alpha, x, **solver_options) -> float:
        """Error estimate of the s-grid at the converged packed point ``x`` (shape ``(size,)``) at α > 0:
        ``max(|Δ mmse|/mmse, |Δ f|/|f|)`` when the grid of every inner layer is doubled (as for L = 2;
        the first value of :func:`~replica.models._common.refined_solve`, which interpolates the
        profiles onto :meth:`refined` and solves there with ``solver_options``, as :meth:`solve_from`).
        A float: 0 at ``Q ≡ 0``, NaN when the refined solve fails or changes phase."""
        return refined_solve(self, alpha, x, **solver_options)[0]

    # ----------------------------------------------------------------- solving
    def _result(self, alpha, res: FixedPointResult) -> FixedPointResult:
        res.info["state"] = self.state(alpha, res.x)
        return res

    def solve_universal(self, alpha) -> FixedPointResult:
        """``Q ≡ 0`` (an exact fixed point, ``g_ℓ'(0) = 0``): only the linear path is learned."""
        x = np.zeros(self.size)
        res = FixedPointResult(x, True, "exact", STATUS_MESSAGES["exact"], 0, 0.0, 0.0, "universal")
        return self._result(alpha, res)

    def solve_from(self, alpha, overlaps, warm=None, *, start="", **solver_options) -> FixedPointResult:
        """Damped iteration from packed ``overlaps`` (or a dict ``{(ℓ, m): value}``) or from ``warm``.

        ``solver_options`` go to :func:`replica.engine.solve_fixed_point`; a non-finite map ends
        with status ``"nan"`` (no state attached). The Newton polish of the damped iteration is
        off unless ``polish_below`` is given: with ~100–200 order parameters its finite-difference
        Jacobian costs more than the iterations it saves (measured 2–6× slower at L = 3, n_s = 12).

        Raises
        ------
        ValueError
            A packed start of the wrong length.
        """
        if warm is not None:
            x0 = np.asarray(warm, dtype=float)
        elif isinstance(overlaps, dict):
            x0 = self.pack(overlaps)
        else:
            x0 = np.asarray(overlaps, dtype=float)
        if x0.shape != (self.size,):
            raise ValueError(f"overlaps: expected {self.size} packed values, got shape {x0.shape}")
        solver_options = {"polish_below": None, **solver_options}
        res = solve_fixed_point(lambda x: self.update(alpha, x), x0, start=start, **solver_options)
        if res.status == "nan":
            return res
        return self._result(alpha, res)

    def starts(self) -> dict:
        """Starts and their sweep directions.

        Returns
        -------
        dict[str, tuple[ndarray, str]]
            ``informed`` (every overlap .99, both directions); for every depth ``k < L``,
            ``layers_1_to_k`` (layers ≤ k and the products inside them at .99; ``layer_1`` for
            k = 1, as in :meth:`replica.models.two_layer.TwoLayerModel.starts`); ``product`` (every
            product at .99) and ``layer_1+product``; ``partial_s_q50`` (all matrices at .99 only
            for columns/rows of inner layers with ``|s|`` above its median). All but
            ``informed`` sweep downwards. The universal start is :meth:`solve_universal`.
        """
        hi = INFORMED_OVERLAP
        out = {"informed": (self.pack({k: hi for k in self.keys}), "both")}
        for depth in range(1, self.L):
            name = "layer_1" if depth == 1 else f"layers_1_to_{depth}"
            out[name] = (self.pack({k: hi for k in self.keys if k[0] <= depth}), "down")
        out["product"] = (self.pack({k: hi for k in self.products}), "down")
        out["layer_1+product"] = (self.pack({**{k: hi for k in self.products}, (1, 1): hi}), "down")
        median = self.s_values[min(np.searchsorted(np.cumsum(self.s_weights), 0.5), self.n_s - 1)]
        mask_s = (self.s_values > median).astype(float)
        if 0 < mask_s.sum() < self.n_s:
            masks = [np.ones(1)] + [mask_s] * (self.L - 1) + [np.ones(self.n_readout)]
            partial = {k: hi * np.outer(masks[k[0]], masks[k[1] - 1]) for k in self.keys}
            out["partial_s_q50"] = (self.pack(partial), "down")
        return out
