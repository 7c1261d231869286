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

Evaluation of ``g`` and ``g'``. The solver calls ``g`` and ``g'`` on one or a few numbers at a time,
thousands of times per sweep (about 9000 pairs for the README's quick start): :meth:`Activation.g` costs
~40 µs per call there (NumPy overhead) and loads numba. :class:`KernelTable` tabulates both once per
activation on [−1, 1] (the Hermite series next to 0; elsewhere piecewise polynomials in ``θ = arccos q``,
the variable of the activations' own interpolants, which removes the ``√(1 ∓ q)`` branch points of
non-smooth activations) and evaluates them on plain Python floats (~1.5 µs per pair). Its largest
deviation from the exact methods is measured when it is built, at points between its nodes (2e-14 … 3e-14
for the quick start), and the model keeps the exact methods where that exceeds :data:`TABLE_TOLERANCE`
(tests/test_deep_kernels.py checks the bound against the exact ``g`` and ``g'`` on a dense grid, and the
sweep against the exact-kernel sweep). Arguments outside [−1, 1] or NaN (never reached by the solver) go
to the exact methods, so their checks and errors are unchanged. The table is stored in the table cache
of :mod:`hciz.cache` (``$REPLICA_HCIZ_CACHE``; ``off`` disables it) under a key made of the activation's
name and Hermite coefficients and a digest of :mod:`replica.activations`: a later run reads it (1 ms)
instead of building it (the exact methods' first call, 0.3 s, most of it importing numba).

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2510.24616 (deep MLPs).
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..activations import get_activation
from ..engine import STATUS_MESSAGES, FixedPointResult, solve_fixed_point
from ..interface import ModelDefaults, RecordedArguments, records_arguments
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
#: scaled residual (:func:`replica.engine.scaled_residual`) below which the damped iteration of
#: :meth:`DeepModel.solve_from` tries Newton's polish (default of the engine: 1e4). With L − 1 + K unknowns a
#: Newton step costs L + K evaluations (:func:`replica.engine.difference_jacobian`), and the engine keeps a
#: polished point only within 100 times the current residual of it, so the fixed point the iteration was
#: approaching: 2,995 → 2,431 evaluations in the README quick-start sweep, equilibrium unchanged to 2e-11
POLISH_BELOW = 1e6
#: panels in θ = arccos q ∈ [0, π] and polynomial degree of :class:`KernelTable`: a multiple of the 12
#: panels of the activations' own interpolants (replica.activations), so that no panel of the table
#: straddles one of their panel ends, where they jump by their own error (~1e-13)
TABLE_PANELS = 48
TABLE_DEGREE = 10
#: the largest deviation of :class:`KernelTable` from the exact ``g``, ``g'`` (measured when it is built)
#: with which the model uses the table; above it the exact methods (measured with ``--drop-hermite 0,1,2
#: --unit-variance``: tanh2 2e-14, tanh 5e-14, erf 1e-14, elu 4e-13, relu 1e-12, sigmoid 1.5e-12; softplus
#: 1.4e-11 keeps the exact methods)
TABLE_TOLERANCE = 1e-11
#: |q| below which :class:`KernelTable` sums the Hermite series of g (terms above degree 60 are below
#: 0.1^61 there)
SERIES_SWITCH = 0.1
#: bumped whenever :class:`KernelTable` changes what it stores or how it builds it (cache key)
TABLE_VERSION = 1


class KernelTable:
    """``g`` and ``g'`` of an activation on [−1, 1], tabulated for the solver's scalar calls.

    * ``|q| ≤`` :data:`SERIES_SWITCH`: the Hermite series ``g(q) = Σ_{ℓ=3}^{60} μ_ℓ² q^ℓ/ℓ!`` and its
      derivative (as :func:`replica.activations.compiled_activation`), cut where the terms fall below
      1e-20 at the switch, so that ``g(0) = g'(0) = 0`` exactly and ``g = O(q³)`` keeps its relative
      accuracy: the fixed points next to the universal branch, which the Newton polish of
      :func:`replica.engine.solve_fixed_point` drives to 0, see a smooth map there;
    * elsewhere piecewise polynomials in ``θ = arccos q`` on :data:`TABLE_PANELS` equal panels of
      [0, π], each the interpolant of degree :data:`TABLE_DEGREE` at the Chebyshev points of the panel
      of the exact :meth:`Activation.g` and :meth:`Activation.g_prime` (Price's theorem: the dual kernel
      of σ', not a derivative of the table), stored as monomials in the panel's variable ``t ∈ [−1, 1]``.

    Both are evaluated by Horner's rule on Python floats (:meth:`both`) or arrays (:meth:`arrays`,
    the same operations). ``q`` outside [−1, 1] or NaN calls the exact methods, with their checks.

    Attributes
    ----------
    error_g, error_g_prime : float
        Largest ``|table − exact|`` measured when built, at the :data:`TABLE_DEGREE` + 2 Chebyshev points
        of the second kind of every panel (between the interpolation nodes and at the panel ends), at 41
        points of ``[−S, S]``, ``S`` = :data:`SERIES_SWITCH`, and at ``±(1 − ε)``, ``ε`` = 25 values from
        1e-14 to 1e-2 (where closed forms such as ReLU's lose digits).
    error : float
        ``max(error_g, error_g_prime)``.
    """

    def __init__(self, activation, panels=TABLE_PANELS, degree=TABLE_DEGREE, switch=SERIES_SWITCH, *, cache=True):
        self.activation = activation
        self.panels = int(panels)
        self.degree = int(degree)
        self.switch = float(switch)
        self._scale = self.panels / math.pi
        key = _table_key(activation, self.panels, self.degree, self.switch) if cache else None
        names = ("coef_g", "coef_g_prime", "series_g", "series_g_prime", "errors")
        stored = None
        if key is not None:
            from hciz.cache import load_table

            stored = load_table(key, names)
        #: whether the table was read from the cache (:func:`hciz.cache.cache_dir`)
        self.from_cache = stored is not None
        if stored is None:
            stored = self._build()
            if key is not None:
                from hciz.cache import save_table

                save_table(key, stored)
        self.coef = [stored["coef_g"], stored["coef_g_prime"]]
        self.series = (stored["series_g"], stored["series_g_prime"])
        self.error_g, self.error_g_prime = (float(e) for e in stored["errors"])
        self.error = max(self.error_g, self.error_g_prime)
        self._rows = [tuple(zip(self.coef[0][p].tolist(), self.coef[1][p].tolist())) for p in range(self.panels)]
        self._series = tuple(zip(self.series[0].tolist(), self.series[1].tolist()))

    def _build(self) -> dict:
        """The arrays of the table from the exact methods, and its measured errors."""
        act = self.activation
        width = math.pi / self.panels
        k = np.arange(self.degree + 1)
        t = np.cos(np.pi * (k + 0.5) / (self.degree + 1))  # Chebyshev points of the first kind
        theta = width * (np.arange(self.panels)[:, None] + 0.5 * (t[None, :] + 1.0))
        q = np.cos(theta).ravel()
        values = (np.asarray(act.g(q), float).reshape(theta.shape),
                  np.asarray(act.g_prime(q), float).reshape(theta.shape))
        # Chebyshev coefficients by the discrete cosine transform, then monomials in t
        T = np.cos(np.outer(k, np.pi * (k + 0.5) / (self.degree + 1)))
        cheb2mono = np.zeros((self.degree + 1, self.degree + 1))  # row j: T_j in monomials
        for j in range(self.degree + 1):
            mono = np.polynomial.chebyshev.cheb2poly(np.eye(self.degree + 1)[j])
            cheb2mono[j, :mono.size] = mono
        coef = []
        for v in values:
            c = (2.0 / (self.degree + 1)) * v @ T.T
            c[:, 0] *= 0.5
            coef.append(np.ascontiguousarray((c @ cheb2mono)[:, ::-1]))  # decreasing powers (Horner)
        # the Hermite series of g and g', cut at 1e-20 at the switch; decreasing powers
        ell = np.arange(61)
        mu = np.array([act.hermite(j) for j in ell])
        series = np.where(ell >= 3, mu**2 / np.array([math.factorial(j) for j in ell], float), 0.0)
        if float(act.g1) == 0.0:
            series[:] = 0.0
        series_d = np.zeros_like(series)
        series_d[:-1] = series[1:] * ell[1:]
        keep = np.flatnonzero((np.abs(series) + np.abs(series_d)) * self.switch**ell > 1e-20)
        n = keep[-1] + 1 if keep.size else 1
        self.coef = coef
        self.series = (np.ascontiguousarray(series[:n][::-1]), np.ascontiguousarray(series_d[:n][::-1]))
        self._series = tuple(zip(self.series[0].tolist(), self.series[1].tolist()))
        # measured bound (docstring)
        s = np.cos(np.pi * np.arange(self.degree + 2) / (self.degree + 1))
        check = np.cos(width * (np.arange(self.panels)[:, None] + 0.5 * (s[None, :] + 1.0))).ravel()
        ends = 1.0 - np.geomspace(1e-14, 1e-2, 25)
        check = np.concatenate([np.clip(check, -1.0, 1.0), np.linspace(-self.switch, self.switch, 41), ends, -ends])
        tab_g, tab_gp = self.arrays(check)
        errors = np.array([np.max(np.abs(tab_g - act.g(check))), np.max(np.abs(tab_gp - act.g_prime(check)))])
        return {"coef_g": coef[0], "coef_g_prime": coef[1], "series_g": self.series[0],
                "series_g_prime": self.series[1], "errors": errors}

    def both(self, q):
        """``(g(q), g'(q))`` as Python floats at one number ``q``."""
        vg = vd = 0.0
        if -self.switch <= q <= self.switch:
            for a, b in self._series:
                vg = vg * q + a
                vd = vd * q + b
            return vg, vd
        if not -1.0 <= q <= 1.0:
            return (float(self.activation.g(np.array(q))), float(self.activation.g_prime(np.array(q))))
        x = math.acos(q) * self._scale
        p = int(x)
        if p >= self.panels:
            p = self.panels - 1
        t = 2.0 * (x - p) - 1.0
        for a, b in self._rows[p]:
            vg = vg * t + a
            vd = vd * t + b
        return vg, vd

    def arrays(self, q):
        """``(g(q), g'(q))`` as arrays of the shape of ``q``."""
        q = np.asarray(q, dtype=float)
        if q.ndim != 1:
            vg, vd = self.arrays(q.ravel())
            return vg.reshape(q.shape), vd.reshape(q.shape)
        inside = (q >= -1.0) & (q <= 1.0)
        if not np.all(inside):
            out_g = np.asarray(self.activation.g(q), float).copy()
            out_gp = np.asarray(self.activation.g_prime(q), float).copy()
            if np.any(inside):
                g_in, gp_in = self.arrays(q[inside])
                out_g[inside], out_gp[inside] = g_in, gp_in
            return out_g, out_gp
        x = np.arccos(q) * self._scale
        p = np.minimum(x.astype(int), self.panels - 1)
        t = 2.0 * (x - p) - 1.0
        cg, cd = self.coef[0][p], self.coef[1][p]
        vg = np.zeros_like(q)
        vd = np.zeros_like(q)
        for j in range(self.degree + 1):
            vg = vg * t + cg[..., j]
            vd = vd * t + cd[..., j]
        small = np.abs(q) <= self.switch
        if np.any(small):
            qs = q[small]
            sg = np.zeros_like(qs)
            sd = np.zeros_like(qs)
            for a, b in self._series:
                sg = sg * qs + a
                sd = sd * qs + b
            vg[small], vd[small] = sg, sd
        return vg, vd


def _table_key(activation, panels, degree, switch):
    """Key of a :class:`KernelTable` in the table cache (:mod:`hciz.cache`), or None (no cache): the
    activation's name and Hermite coefficients μ_0 … μ_60 (after its modifiers), the table's parameters and
    :data:`TABLE_VERSION`, and a digest of the source of :mod:`replica.activations` (which evaluates the exact
    ``g``: a table built by another version of it is never read)."""
    from .. import activations as module

    try:
        source = hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:20]
        mu = ",".join(float(activation.hermite(j)).hex() for j in range(61))
        name = str(activation.name)
    except (OSError, TypeError, ValueError, AttributeError):
        return None
    return (f"deep-kernel-table-v{TABLE_VERSION};activation={name};hermite={mu};panels={int(panels)};"
            f"degree={int(degree)};switch={float(switch).hex()};source={source}")


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


class DeepModel(OutputChannelTerms, RecordedArguments, ModelDefaults):
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
    kernel_table : bool, keyword-only
        Evaluate ``g`` and ``g'`` from :class:`KernelTable` (default; module docstring) or, False, by the
        activation's exact methods.

    Raises
    ------
    ValueError
        Activation with a Hermite component of degree ≤ 2, non-unit variance for L ≥ 2,
        γ_ℓ ≤ 0, Δ < 0, unknown names.
    """

    #: f = −½ ln(2πe(Δ + mmse)) + G/α with G a function of the order parameters only, so that
    #: df/dα = −(f + ½ ln 2πe(Δ + mmse))/α along a branch (:func:`replica.continuation.events.envelope_slope`)
    envelope_identity = True

    @property
    def n_layers(self) -> int:
        """Number of hidden layers L (per-layer transitions of :func:`replica.continuation.sweep`)."""
        return int(self.L)

    @records_arguments
    def __init__(self, activation="tanh2", gammas=(1.0,), delta=0.1, *, weight_prior="gaussian",
                 readout_law="ones", readout_grid=None, drop_hermite=(), unit_variance=False, output_channel=None,
                 kernel_table=True):
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
        first = self.weight_priors[0]
        self._shared_prior = first if all(P is first for P in self.weight_priors) else None
        self.readout_values = np.asarray(self.readout_law.values, dtype=float)
        self.readout_weights = np.asarray(self.readout_law.weights, dtype=float)
        self.v2 = self.readout_values**2
        self._w0, self._v20 = float(self.readout_weights[0]), float(self.v2[0])  # the scalar kernel
        # number of weights of layer ℓ in units of d²
        self.layer_sizes = np.concatenate([[1.0], gammas[:-1]]) * gammas
        self._sizes = self.layer_sizes.tolist()
        self.g1 = float(activation.g1)
        self.output_variance = self.g1  # K_d: μ₀ = μ₁ = μ₂ = 0, E v² = 1
        if not kernel_table:
            self.__dict__["_kernel_table"] = None

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
    @property
    def kernel_table(self):
        """The :class:`KernelTable` of the activation (built at the first use), or None where its measured
        error exceeds :data:`TABLE_TOLERANCE` (then :meth:`kernel` uses the exact methods)."""
        if "_kernel_table" not in self.__dict__:
            table = KernelTable(self.activation)
            if not table.error <= TABLE_TOLERANCE:
                logger.info("activation %s: tabulated g, g' deviate by %.1e > %.0e; using the exact methods",
                            self.activation, table.error, TABLE_TOLERANCE)
                table = None
            self.__dict__["_kernel_table"] = table
        return self.__dict__["_kernel_table"]

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

        Notes
        -----
        ``g`` and ``g'`` come from :attr:`kernel_table` (module docstring); :meth:`kernel_exact` is the
        same with the exact methods of the activation. With one readout value the arithmetic is done on
        Python floats, in the order of :meth:`kernel_exact`.
        """
        table = self.kernel_table
        if table is None:
            return self.kernel_exact(x)
        if self.n_readout == 1:
            return self._kernel_scalar(table.both, x)
        return self._kernel_arrays(table.arrays, x)

    def kernel_exact(self, x):
        """:meth:`kernel` with the activation's exact :meth:`~Activation.g` and :meth:`~Activation.g_prime`."""
        g, gp = self.activation.g, self.activation.g_prime
        return self._kernel_arrays(lambda q: (g(q), gp(q)), x)

    def _kernel_arrays(self, both, x):
        inner, last = self.unpack(x)
        C = [1.0]
        gp_inner = []
        for q in inner:
            value, slope = both(q * C[-1])
            C.append(float(value))
            gp_inner.append(float(slope))
        arg = last * C[-1]
        g_last, gp_last = both(arg)
        K = float(np.dot(self.readout_weights, self.v2 * g_last))
        grad_last = self.v2 * gp_last * C[-1]
        B = float(np.dot(self.readout_weights, self.v2 * gp_last * last))  # ∂K/∂C_{L−1}
        return K, np.array(self._chain_rule(B, inner, C, gp_inner), dtype=float), grad_last, C

    @staticmethod
    def _chain_rule(B, inner, C, gp_inner):
        """``∂K/∂Q_ℓ`` of the inner layers ℓ = 1 … L−1 from ``B = ∂K/∂C_{L−1}``, the overlaps,
        ``C_0 … C_{L−1}`` and ``g'(Q_ℓ C_{ℓ−1})``."""
        grad_inner = [0.0] * len(inner)
        for ell in range(len(inner), 0, -1):  # layers L−1 … 1 (index ell−1)
            q, c_prev = inner[ell - 1], C[ell - 1]
            gpe = gp_inner[ell - 1]
            grad_inner[ell - 1] = B * gpe * c_prev
            B = B * gpe * q
        return grad_inner

    def _kernel_floats(self, both, x):
        """``(K, ∂K/∂Q_ℓ (list), ∂K/∂Q_L, C)`` for one readout value, on Python floats in the order of
        :meth:`_kernel_arrays`."""
        values = np.asarray(x, dtype=float).tolist()
        inner, last = values[: self.L - 1], values[self.L - 1]
        w, v2 = self._w0, self._v20
        C = [1.0]
        gp_inner = []
        for q in inner:
            value, slope = both(q * C[-1])
            C.append(value)
            gp_inner.append(slope)
        g_last, gp_last = both(last * C[-1])
        K = w * (v2 * g_last)
        grad_last = v2 * gp_last * C[-1]
        B = w * (v2 * gp_last * last)
        return K, self._chain_rule(B, inner, C, gp_inner), grad_last, C

    def _kernel_scalar(self, both, x):
        K, grad_inner, grad_last, C = self._kernel_floats(both, x)
        return K, np.array(grad_inner, dtype=float), np.array([grad_last]), C

    def _hats_floats(self, alpha, x):
        """``(K, D, [Q̂_1 … Q̂_L])`` of :meth:`conjugates` for one readout value, on Python floats."""
        K, grad_inner, grad_last, _ = self._kernel_floats(self.kernel_table.both, x)
        D = self.effective_variance(self.g1 - K)
        sizes = self._sizes
        hats = [max(alpha * g / (s * D), 0.0) for g, s in zip(grad_inner, sizes)]
        hats.append(max(alpha * grad_last / (sizes[-1] * D), 0.0))
        return K, D, hats

    def conjugates(self, alpha, x):
        """``(K, D, Q̂_inner, Q̂_L)``: the kernel, ``D = Δ + mmse`` (or the channel's) and the conjugates
        ``α ∂K/∂Q_ℓ / (γ_{ℓ−1}γ_ℓ D)``, clipped at 0."""
        if self.n_readout == 1 and self.kernel_table is not None:
            K, D, hats = self._hats_floats(alpha, x)
            return K, D, np.array(hats[:-1], dtype=float), np.array(hats[-1:])
        K, grad_inner, grad_last, _ = self.kernel(x)
        D = self.effective_variance(self.g1 - K)
        hat_inner = alpha * grad_inner / (self.layer_sizes[:-1] * D)
        hat_last = alpha * grad_last / (self.layer_sizes[-1] * D)
        return K, D, np.maximum(hat_inner, 0.0), np.maximum(hat_last, 0.0)

    def update(self, alpha, x):
        """Fixed-point map on the packed overlaps."""
        if self._shared_prior is not None and self.n_readout == 1 and self.kernel_table is not None:
            return np.asarray(self._shared_prior.overlap(np.array(self._hats_floats(alpha, x)[2])), dtype=float)
        _, _, hi, hl = self.conjugates(alpha, x)
        if self._shared_prior is not None:  # one call on the packed conjugates (the channels act elementwise)
            return np.asarray(self._shared_prior.overlap(np.concatenate([hi, hl])), dtype=float)
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
        solver_options.setdefault("polish_below", POLISH_BELOW)
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
