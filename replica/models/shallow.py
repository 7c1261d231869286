"""One hidden layer: replica-symmetric free entropy and its fixed point.

Model (docs/theory.md §1): ``λ(x; W) = vᵀ σ(W x/√d)/√k``, ``W ∈ R^{k×d}``, ``k = γ d``,
``n = α d²`` samples, labels ``y = λ(x; W⁰) + √Δ z``.  The student knows ``v``,
the activation ``σ``, the weight prior ``P_W`` and ``Δ``.

Order parameters (docs/theory.md §5.2): the specialization overlap profile ``Q(v)``
over the readout atoms, ``R₂`` (overlap of ``S = Wᵀdiag(v)W/√(kd)``), their
conjugates ``Q̂(v)``, ``R̂₂``, and the tilt ``τ`` defined by
``m_S(τ) = E_v[v² Q(v)²]``.

    K*    = μ₁² + μ₂² R₂/2 + E_v[v² g(Q(v))],      mmse = K_d − K*
    R̂₂    = α μ₂² / (Δ + K_d − K*)
    R₂    = m_S(τ + R̂₂) + (R_d − 1)
    Q̂(v) = (α/γ) v² g'(Q)/(Δ + K_d − K*) + (1/γ)(m_S(τ+R̂₂) − m_S(τ)) v² Q / m_S'(τ)
    Q(v)  = m_{P_W}(Q̂(v))

    f = −½ ln(2πe(Δ + K_d − K*)) + (R_d − R₂)R̂₂/(4α)
        + (γ/α) E_v[ψ_{P_W}(Q̂) − Q Q̂/2] − (1/α)[ι(τ + R̂₂) − ι(τ)]

Without a quadratic part (μ₂ = 0: odd activations) ``R̂₂ = 0``, so the tilt term of ``Q̂`` and
``ι(τ + R̂₂) − ι(τ)`` vanish and ``R₂ = m_S(τ) + R_d − 1 = E_v[v² Q²] + R_d − 1``: the S channel is
not observed, and its HCIZ table is neither built nor read (:meth:`ShallowModel.s_channel`).

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2501.18530 and 2505.24849
(one hidden layer); Maillard, Troiani, Martin, Krzakala, Zdeborová,
arXiv 2408.03733 (quadratic activation, universal branch).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from hciz import readout_channel
from priors import get_readout_law, get_weight_prior

from ..activations import get_activation
from ..engine import STATUS_MESSAGES, FixedPointResult, solve_fixed_point
from ..interface import ModelDefaults, RecordedArguments, records_arguments
from ..readout_grid import SELECT_ZERO, ProfileSolver
from ._output import OutputChannelTerms, make_output_channel

__all__ = ["ShallowModel", "ShallowState"]

logger = logging.getLogger(__name__)

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)
INFORMED_OVERLAP = 0.99
UNINFORMED_OVERLAP = 1e-2
PARTIAL_QUANTILES = (0.25, 0.5, 0.75)
#: a readout group has learned (branch names) when its mean overlap Q(v) reaches this
PHASE_THRESHOLD = 0.5
#: guarded Newton steps (finite-difference Jacobians, one evaluation per order parameter)
#: are used by default up to this many order parameters; beyond, plain damped iteration
GUARDED_NEWTON_MAX_SIZE = 16


@dataclass
class ShallowState:
    """All order parameters of one stationary point (docs/theory.md §5.2).

    Attributes
    ----------
    alpha : float
        Sample ratio n/d².
    overlap_W : ndarray, shape (n_readout,)
        ``Q(v)`` on the readout atoms, in [0, 1].
    overlap_W_hat : ndarray, shape (n_readout,)
        Conjugates ``Q̂(v) ≥ 0``.
    R2, R2_hat, tau : float
        ``R₂``, ``R̂₂`` and the tilt ``τ`` (NaN where μ₂ = 0 and ``Q ≢ 0``: nothing depends on it
        there and it is not computed, :meth:`ShallowModel.s_channel`).
    mmse : float
        Bayes-optimal excess test error ``K_d − K*``.
    free_entropy : float
        ``f`` per d² (docs/theory.md §5.2), to be maximized over stationary points.
    mutual_information : float
        ``(α/γ)(−½ ln(2πeΔ) − f)`` per weight parameter (``inf`` at Δ = 0).
    discretization_error : float or None
        Continuous readout laws and laws with many atoms (:mod:`replica.readout_grid`):
        relative change of mmse and free entropy between the last two refinements of the
        ``v``-quadrature (0 for an exact discrete law); ``None`` for the dense solver.
    learned_features, learned_mass : float or None
        Profile solver (:mod:`replica.readout_grid`): the number of groups of equal ``|v|`` whose neurons sit
        on their specialized root (their largest root, where it is not ``Q = 0``), strongest first, and the
        readout mass of those groups (the learned fraction of the hidden units: ``k_c = learned_mass · k``
        of a width-``k`` network; for a continuous law the mass above the front, on the rule's nodes);
        ``None`` for the dense solver.
    """

    alpha: float
    overlap_W: np.ndarray
    overlap_W_hat: np.ndarray
    R2: float
    R2_hat: float
    tau: float
    mmse: float
    free_entropy: float
    mutual_information: float
    discretization_error: float | None = None
    learned_features: float | None = None
    learned_mass: float | None = None

    @property
    def overlaps(self) -> np.ndarray:
        """Specialization overlaps used to tell stationary points apart, shape (n_readout,)."""
        return self.overlap_W

    def specialization(self, readout_weights, v2) -> float:
        """``E_v[v² Q(v)²]``: orders non-universal branches (largest = ``specialized``)."""
        return float(np.dot(readout_weights, v2 * self.overlap_W**2))

    def record(self) -> dict:
        """Fields stored per α in a branch (HDF5 datasets)."""
        out = {
            "mmse": self.mmse, "free_entropy": self.free_entropy,
            "mutual_information": self.mutual_information, "R2": self.R2, "R2_hat": self.R2_hat,
            "tau": self.tau, "overlap_W": self.overlap_W, "overlap_W_hat": self.overlap_W_hat,
        }
        if self.discretization_error is not None:
            out["discretization_error"] = self.discretization_error
        if self.learned_features is not None:
            out["learned_features"] = self.learned_features
            out["learned_mass"] = self.learned_mass
        return out


class ShallowModel(OutputChannelTerms, RecordedArguments, ModelDefaults):
    """One-hidden-layer Bayes-optimal learning problem.

    Parameters
    ----------
    activation : str or Activation
        Activation name (see ``replica.activations``), e.g. ``"relu"``.
    gamma : float
        Width ratio γ = k/d > 0.
    delta : float
        Label-noise variance Δ ≥ 0 of Gaussian labels (with ``output_channel``: the channel's Δ, 0 for sign
        and logistic; a different value is refused, as by ``replica-sweep``).
    weight_prior : str or WeightPrior, keyword-only
        ``"gaussian"``, ``"rademacher"`` or ``"uniform"``.
    readout_law : str or ReadoutLaw, keyword-only
        Readout law spec (``"ones"``, ``"gaussian"``, …, see ``priors``).
    readout_grid : int or None, keyword-only
        Fixed grid size for continuous readout laws (default: adaptive, converged rule).
    output_channel : priors.output_channels.OutputChannel, keyword-only, optional
        Law of the labels given the centred pre-output (default: Gaussian noise of variance ``delta``;
        docs/theory.md §10).

    Notes
    -----
    Continuous readout laws and discrete laws with more than ``GUARDED_NEWTON_MAX_SIZE``
    atoms are solved through the two global order parameters ``(D, M)`` and the profile
    ``Q(v)`` of :mod:`replica.readout_grid` (packed points ``(D, M, s_threshold, level, discretization_error)``, states
    with ``discretization_error``); other discrete laws by damped iteration on the packed
    vector ``(Q(v)…, R̂₂)``.

    Raises
    ------
    ValueError
        γ ≤ 0, Δ < 0 or non-finite, unknown names.
    """

    #: class of the states (built by the profile solver of :mod:`replica.readout_grid` too)
    state_type = ShallowState

    #: f = −½ ln(2πe(Δ + mmse)) + G/α with G a function of the order parameters only, so that
    #: df/dα = −(f + ½ ln 2πe(Δ + mmse))/α along a branch (:func:`replica.continuation.events.envelope_slope`)
    envelope_identity = True

    @records_arguments
    def __init__(
        self,
        activation="relu",
        gamma: float = 0.5,
        delta: float = 0.1,
        *,
        weight_prior="gaussian",
        readout_law="ones",
        readout_grid: int | None = None,
        output_channel=None,
    ):
        if not (np.isfinite(gamma) and gamma > 0):
            raise ValueError(f"gamma must be a finite number > 0, got {gamma}")
        if not (np.isfinite(delta) and delta >= 0):
            raise ValueError(f"delta must be a finite number >= 0, got {delta}")
        self.output_channel = make_output_channel(delta, output_channel)
        self.activation = get_activation(activation) if isinstance(activation, str) else activation
        self.weight_prior = get_weight_prior(weight_prior) if isinstance(weight_prior, str) else weight_prior
        self.readout_law = (
            get_readout_law(readout_law, grid_size=readout_grid) if isinstance(readout_law, str) else readout_law
        )
        self.gamma = float(gamma)
        self.delta = float(self.output_channel.delta)
        v = np.asarray(self.readout_law.values, dtype=float)
        p = np.asarray(self.readout_law.weights, dtype=float)
        self.readout_values = v
        self.readout_weights = p
        self.v2 = v * v
        # continuous readout laws enter the HCIZ channel exactly (not through their grid)
        self.channel = readout_channel(self.gamma, self.readout_law)
        self.mu1 = float(self.activation.mu1)
        # odd activations: μ₂ is zero up to quadrature rounding; treat it as exactly zero
        self.mu2 = float(self.activation.mu2) if abs(self.activation.mu2) > 1e-12 else 0.0
        self.g1 = float(self.activation.g1)
        self._kernel_cache = {}
        self.R_d = 1.0 + self.gamma * float(np.dot(p, v)) ** 2
        self.K_d = self.mu1**2 + self.mu2**2 * self.R_d / 2.0 + self.g1
        self.output_variance = self.K_d
        profile = getattr(self.readout_law, "law", None) is not None or v.size > GUARDED_NEWTON_MAX_SIZE
        #: solver through global order parameters (None: dense iteration on Q(v))
        self.profile_solver = ProfileSolver(self) if profile else None

    # ------------------------------------------------------------------ helpers
    @property
    def n_readout(self) -> int:
        return self.readout_values.size

    def starts(self) -> dict:
        """Named initial overlaps ``Q(v)`` and the sweep direction of each.

        Returns
        -------
        dict[str, tuple[ndarray, str]]
            ``informed`` (Q = 0.99, followed downwards and upwards), ``uninformed``
            (Q = 0.01, upwards) and partial starts (Q = 0.99 only where ``|v|`` exceeds a
            quantile of ``|v|``, downwards) for readout laws with several ``|v|``.
            With the profile solver (continuous laws, many atoms) there are no partial
            starts: the informed start puts every neuron on its largest root, so its profile
            is already partially specialized where the largest root jumps (the front), and a
            start pinned at a quantile of ``|v|`` would only pick one member of a continuous
            family of stationary points.
        """
        n = self.n_readout
        out = {"informed": (np.full(n, INFORMED_OVERLAP), "both"),
               "uninformed": (np.full(n, UNINFORMED_OVERLAP), "up")}
        a = np.abs(self.readout_values)
        if self.profile_solver is None and np.unique(np.round(a, 12)).size >= 2:
            order = np.argsort(a)
            cdf = np.cumsum(self.readout_weights[order])
            for qt in PARTIAL_QUANTILES:
                thr = a[order][min(np.searchsorted(cdf, qt), n - 1)]
                Q0 = np.where(a > thr, INFORMED_OVERLAP, 0.0)
                if 0 < np.count_nonzero(Q0) < n:
                    out[f"partial_q{int(qt * 100)}"] = (Q0, "down")
        return out

    def specialization(self, state) -> float:
        """``E_v[v² Q(v)²]`` of a state (a branch is named after its most specialized point)."""
        return state.specialization(self.readout_weights, self.v2)

    def state_schema(self) -> tuple:
        """The plotted fields of a state's record (:class:`replica.interface.FieldSpec`): ``Q(v)`` over the
        readout values and ``R₂`` (which holds the known mean ``γ (E v)²`` of ``S``)."""
        from ..interface import default_schema

        return default_schema()

    def phase(self, state) -> str:
        """Name of what a state has learned (:class:`replica.interface.ReplicaModel`).

        The readout atoms are grouped by ``|v|``; a group has learned when its mean ``Q(v)``
        is at least :data:`PHASE_THRESHOLD` (0.5). With the profile solver (continuous laws,
        many atoms) the criterion is the readout-averaged ``Q``: ``specialized`` or ``weak``.

        Returns
        -------
        str
            ``universal`` (every ``Q(v)`` below 1e-6), ``specialized`` (every group has
            learned), ``partial`` (some groups have, e.g. the large ``|v|`` first) or
            ``weak`` (``Q > 0`` but no group has learned).
        """
        Q = np.asarray(state.overlap_W, dtype=float)
        if float(np.max(np.abs(Q), initial=0.0)) < 1e-6:
            return "universal"
        if self.profile_solver is not None:
            # continuous laws: every atom is its own group and the small |v| never learn
            # (the front of the profile); the branch has specialized when most of the law has
            mean = float(np.dot(self.readout_weights, Q))
            return "specialized" if mean >= PHASE_THRESHOLD else "weak"
        a = np.round(np.abs(self.readout_values), 12)
        learned = []
        for value in np.unique(a):
            m = a == value
            w = self.readout_weights[m]
            learned.append(float(np.dot(w, Q[m]) / w.sum()) >= PHASE_THRESHOLD)
        if all(learned):
            return "specialized"
        return "partial" if any(learned) else "weak"

    def universal_only_reason(self) -> str | None:
        """Why only the universal branch is Bayes-optimal here, or None (docs/theory.md §5.4).

        With no Hermite component above degree two (``g ≡ 0``: quadratic, linear +
        quadratic) and Gaussian weights the output depends on ``W`` only through
        ``S = Wᵀdiag(v)W/√(kd)`` (and ``vᵀW``), whose prior is rotation invariant: the
        Bayes-optimal error is that of estimating ``S``, the universal branch (Maillard et
        al.), for every readout law. The ``Q > 0`` stationary points of the §5.2 functional
        would beat it, so they are artefacts of the ansatz there and are not reported.
        Non-Gaussian priors are not covered by the argument (None).
        """
        g_zero = abs(self.g1) <= 1e-12 * max(1.0, abs(float(self.activation.nu)))
        if g_zero and getattr(self.weight_prior, "name", "") == "gaussian":
            return ("g ≡ 0 (no Hermite component of the activation above degree two) with Gaussian weights: the "
                    "output depends on W only through S and vᵀW, whose prior is rotation invariant, so the "
                    "Bayes-optimal error is the universal branch for every readout law (docs/theory.md §5.4); "
                    "Q > 0 stationary points of the published functional are not reported")
        return None

    def moving_indices(self, x) -> np.ndarray:
        """Packed entries the map moves: all for the dense solver; ``(D, M)`` for the profile
        solver (:mod:`replica.readout_grid`: the selection and the rule level stay fixed along a
        continuation step)."""
        n = np.size(x)
        return np.arange(2) if self.profile_solver is not None else np.arange(n)

    def project(self, x) -> np.ndarray:
        """``x`` with the overlaps ``Q(v)`` (every entry but the last, ``R̂₂``) clipped to ``[0, 1]`` (their domain:
        the map's values lie there), for the correctors of the continuation; the profile solver's packed point
        (globals and labels) as it is. The map is not differentiable at ``Q(v) = 0`` from below (``Q̂`` is clipped
        at 0 there), so a rounding residue of −1e-24 on a group that is not learned (its overlap exactly 0 on the
        branch) grows at every chord step next to a branch point, where ``F_x − I`` is nearly singular along it,
        until the corrector fails (ReLU, 4point readouts, Δ = 0.02: a false fold on ``partial`` at α = 1.712)."""
        y = np.array(x, dtype=float)
        if self.profile_solver is None:
            y[:-1] = np.clip(y[:-1], 0.0, 1.0)
        return y

    def universal_indices(self) -> np.ndarray:
        """Packed indices free on the universal branch: ``R̂₂`` (the last one); ``D`` for the
        profile solver."""
        return np.array([0]) if self.profile_solver is not None else np.array([self.n_readout])

    def solve_from(self, alpha, overlaps, warm=None, *, start="", **kw) -> FixedPointResult:
        """Solve from initial overlaps, or from a previous result's packed point ``warm``."""
        if self.profile_solver is not None:
            x0 = np.asarray(warm, dtype=float) if warm is not None else \
                self.profile_solver.initial_point(alpha, overlaps)
            if float(x0[2]) == SELECT_ZERO:
                return self.solve_universal(alpha)
            return self.profile_solver.solve(alpha, x0, start=start, **kw)
        if warm is not None:
            return self.solve(alpha, warm[:-1], warm[-1], start=start, **kw)
        return self.solve(alpha, overlaps, None, start=start, **kw)

    def _groups_solver(self):
        """The profile solver where the readout law is discrete (its groups of equal ``|v|`` are what
        :meth:`feature_transitions` locates), else None."""
        ps = self.profile_solver
        return ps if ps is not None and ps.law is None else None

    def feature_transitions(self, a0, x0, k0, a1, k1, solve_kw=None):
        """Each group's own transition between two points of a curve (hook of
        :func:`replica.workflow.run.feature_transitions`;
        :meth:`replica.readout_grid.ProfileSolver.feature_transitions`), or None without groups (dense solver,
        continuous law)."""
        ps = self._groups_solver()
        if ps is None:
            return None
        return ps.feature_transitions(a0, x0, k0, a1, k1, solve_kw)

    def feature_solution(self, alpha, k, x_guess, solve_kw=None):
        """The stationary point with the ``k`` strongest groups learned at ``alpha`` from the packed point
        ``x_guess`` as the :class:`~replica.engine.FixedPointResult` of :meth:`solve_from` (hook of
        :func:`replica.workflow.run.feature_transitions`, which stores it where a grid point's equal-potential
        selection learned a group before its located α_p), or None."""
        ps = self._groups_solver()
        if ps is None or x_guess is None:
            return None
        return ps.family_result(alpha, k, np.asarray(x_guess, dtype=float)[:ps.n_globals], solve_kw)

    def feature_point(self, alpha, k, x_guess, solve_kw=None):
        """The stationary point with the ``k`` strongest groups learned at ``alpha`` from the packed point
        ``x_guess``: ``{"s", "mass", "overlap"}`` per group (shape (n_groups,): ``v²``, readout mass, mean ``Q``),
        or None."""
        ps = self._groups_solver()
        if ps is None or x_guess is None:
            return None
        got = ps.family_point(alpha, k, np.asarray(x_guess, dtype=float)[:ps.n_globals], solve_kw)
        if got is None:
            return None
        idx, n = ps.group_of_atom, ps.groups.size
        ok = idx >= 0
        mass = np.bincount(idx[ok], weights=self.readout_weights[ok], minlength=n)
        Q = np.asarray(got[1].overlap_W, dtype=float)
        return {"s": ps.groups.copy(), "mass": mass,
                "overlap": np.bincount(idx[ok], weights=Q[ok], minlength=n) / np.bincount(idx[ok], minlength=n)}

    def _ev(self, x) -> float:
        """E_v over the readout atoms."""
        return float(np.dot(self.readout_weights, x))

    def tilt(self, overlap_W) -> float:
        """τ with ``m_S(τ) = E_v[v² Q(v)²]`` (0 when that moment vanishes)."""
        q2 = self._ev(self.v2 * np.asarray(overlap_W) ** 2)
        if q2 <= 0.0:
            return 0.0
        return float(self.channel.overlap_inverse(min(q2, 1.0 - 1e-15)))

    def s_channel(self, M, R2_hat) -> tuple[float, float]:
        """``(τ, R₂)`` at ``M = E_v[v² Q(v)²] ∈ [0, 1)`` and ``R̂₂``: ``m_S(τ) = M`` and
        ``R₂ = m_S(τ + R̂₂) + R_d − 1``.

        Without a quadratic part (μ₂ = 0) ``R̂₂ = α μ₂²/D`` is 0 and the S channel carries nothing:
        every term of the equations and of ``f`` where it enters is then zero (:meth:`tilt_gain` at
        ``R̂₂ = 0``, ``ι(τ + R̂₂) − ι(τ)``, ``μ₂²(R_d − R₂)/2``) and ``R₂ = m_S(τ) + R_d − 1 = M + R_d − 1``
        exactly. The HCIZ table of the channel (tens of seconds to build for a readout law of many
        atoms) is therefore not used: ``R̂₂`` is taken as 0 whatever is passed, and ``τ`` is NaN (0 when
        ``M = 0``) — nothing depends on it.
        """
        M = float(M)
        if self.mu2 == 0.0:
            return (0.0 if M <= 0.0 else math.nan), M + (self.R_d - 1.0)
        tau = float(self.channel.overlap_inverse(M)) if M > 0.0 else 0.0
        return tau, float(self.channel.overlap(tau + R2_hat)) + (self.R_d - 1.0)

    def tilt_gain(self, tau, R2_hat) -> float:
        """``(m_S(τ + R̂₂) − m_S(τ)) / m_S'(τ)`` without cancellation.

        For large τ both overlaps are ``1 − O(1/τ)`` and their difference ``O(R̂₂/τ²)``
        cancels catastrophically; there the difference is computed as
        ``∫_τ^{τ+R̂₂} m_S'(s) ds`` by 16-point Gauss–Legendre in ``u = 1/s``, where the
        integrand ``m_S'(1/u)/u²`` tends to the constant ``lim λ² m_S'(λ)``.
        """
        if R2_hat == 0.0:
            return 0.0  # the difference vanishes (τ is not needed: NaN where μ₂ = 0, :meth:`s_channel`)
        ch = self.channel
        if tau <= 50.0:
            return float((ch.overlap(tau + R2_hat) - ch.overlap(tau)) / ch.overlap_derivative(tau))
        u_lo, u_hi = 1.0 / (tau + R2_hat), 1.0 / tau
        u = 0.5 * (u_hi - u_lo) * _GL_NODES + 0.5 * (u_hi + u_lo)
        integral = 0.5 * (u_hi - u_lo) * float(np.dot(_GL_WEIGHTS, ch.overlap_derivative(1.0 / u) / u**2))
        return integral / float(ch.overlap_derivative(tau))

    def _kernel_terms(self, overlap_W):
        """``(E_v[v² (g(1) − g(Q))], g'(Q))``, memoized on the last few ``Q``.

        The solvers evaluate the map repeatedly at the same ``Q`` (finite-difference
        Jacobian columns in ``R̂₂``, the state and free entropy of a solved point), and the
        dual kernels dominate the cost of one evaluation.
        """
        Q = np.ascontiguousarray(overlap_W, dtype=float)
        key = Q.tobytes()
        terms = self._kernel_cache.get(key)
        if terms is None:
            terms = (self._ev(self.v2 * (self.g1 - self.activation.g(Q))), self.activation.g_prime(Q))
            if len(self._kernel_cache) >= 8:
                self._kernel_cache = {}
            self._kernel_cache[key] = terms
        return terms

    def _gap(self, overlap_W, R2) -> float:
        """``mmse = K_d − K*`` written without cancellation."""
        return self.mu2**2 * (self.R_d - R2) / 2.0 + self._kernel_terms(overlap_W)[0]

    # ------------------------------------------------------------- free entropy
    def free_entropy(self, alpha, R2, R2_hat, overlap_W, overlap_W_hat) -> float:
        """Replica-symmetric free entropy ``f`` as a function of all order parameters.

        Parameters
        ----------
        alpha : float
            Sample ratio α > 0.
        R2, R2_hat : float
            ``R₂`` and ``R̂₂ ≥ 0``.
        overlap_W, overlap_W_hat : ndarray, shape (n_readout,)
            ``Q(v) ∈ [0, 1]`` and ``Q̂(v) ≥ 0``.

        Returns
        -------
        float
            ``f`` per d² (docs/theory.md §5.2); its stationary points are the solutions of
            the fixed-point equations. ``τ`` is a function of ``Q`` through
            ``m_S(τ) = E_v[v² Q²]``.
        """
        Q = np.asarray(overlap_W, dtype=float)
        Qh = np.asarray(overlap_W_hat, dtype=float)
        energetic = self.energetic(self._gap(Q, R2))
        if not math.isfinite(energetic):
            # perfect recovery (noiseless labels and the target learned exactly): f diverges, as
            # ``−½ ln(2πe(Δ + mmse))`` does when Δ + mmse → 0
            return math.inf
        entropic = self._ev(self.weight_prior.free_entropy(Qh) - Q * Qh / 2.0)
        if R2_hat == 0.0:  # ι(τ) − ι(τ): no HCIZ table needed (μ₂ = 0, :meth:`s_channel`)
            tilt_term = 0.0
        else:
            tau = self.tilt(Q)
            tilt_term = self.channel.mutual_information(tau + R2_hat) - self.channel.mutual_information(tau)
        return float(
            energetic
            + (self.R_d - R2) * R2_hat / (4 * alpha)
            + self.gamma / alpha * entropic
            - tilt_term / alpha
        )

    def mutual_information(self, alpha, free_entropy) -> float:
        """Mutual information per weight parameter ``(α/γ)(E ln P_out(y | λ⁰) − f)`` (Gaussian labels:
        ``(α/γ)(−½ ln(2πeΔ) − f)``)."""
        return self.mutual_information_from(alpha / self.gamma, free_entropy)

    # -------------------------------------------------------------- update map
    def conjugates(self, alpha, overlap_W, R2_hat):
        """Evaluate everything the map needs from ``(Q, R̂₂)``.

        Returns
        -------
        dict with keys ``tau, R2, mmse, D, R2_hat_new, overlap_W_hat`` (``D`` = :meth:`effective_variance`
        of ``mmse``). For μ₂ = 0 the S channel is not evaluated (:meth:`s_channel`: ``R̂₂`` enters as 0, ``τ``
        NaN).
        """
        Q = np.clip(np.asarray(overlap_W, dtype=float), 0.0, 1.0)
        R2_hat = max(float(R2_hat), 0.0)
        if self.mu2 == 0.0:
            q2 = self._ev(self.v2 * Q**2)
            R2_hat = 0.0
            tau, R2 = self.s_channel(min(q2, 1.0 - 1e-15) if q2 > 0.0 else 0.0, R2_hat)
        else:
            tau = self.tilt(Q)
            R2 = self.channel.overlap(tau + R2_hat) + (self.R_d - 1.0)
        g_gap, g_prime = self._kernel_terms(Q)
        mmse = self.mu2**2 * (self.R_d - R2) / 2.0 + g_gap
        D = np.float64(self.effective_variance(mmse))
        with np.errstate(divide="ignore", invalid="ignore"):  # D = 0 (noiseless, g ≡ 0): inf → failed solve
            R2_hat_new = alpha * self.mu2**2 / D
            Qh = (alpha / self.gamma) * self.v2 * g_prime / D
        if np.any(Q != 0.0):
            Qh = Qh + self.tilt_gain(tau, R2_hat) / self.gamma * self.v2 * Q
        return {"tau": tau, "R2": R2, "mmse": mmse, "D": D, "R2_hat_new": R2_hat_new,
                "overlap_W_hat": np.maximum(Qh, 0.0)}

    @staticmethod
    def _project(x):
        """Packed point moved into the domain of the map: ``Q ∈ [0, 1]``, ``R̂₂ ≥ 0``."""
        y = np.clip(x, 0.0, 1.0)
        y[-1] = max(float(x[-1]), 0.0)
        return y

    def update(self, alpha, x):
        """Fixed-point map on the packed vector ``x = (Q(v)…, R̂₂)`` (profile solver:
        ``x = (D, M, s_threshold, level, error)``; only ``(D, M)`` move)."""
        if self.profile_solver is not None:
            return self.profile_solver.packed_update(alpha, x)
        c = self.conjugates(alpha, x[:-1], x[-1])
        Qh = c["overlap_W_hat"]
        if not (np.all(np.isfinite(Qh)) and np.isfinite(c["R2_hat_new"])):
            return np.full(x.shape, np.nan)  # reported by the engine as a failure
        Q = np.clip(self.weight_prior.overlap(Qh), 0.0, 1.0)
        return np.concatenate([Q, [c["R2_hat_new"]]])

    def state(self, alpha, x) -> ShallowState:
        """All order parameters, the error and the free entropy at packed point ``x``."""
        if self.profile_solver is not None:
            return self.profile_solver.state(alpha, x)
        return self._dense_state(alpha, x)

    def _dense_state(self, alpha, x) -> ShallowState:
        Q = np.asarray(x[:-1], dtype=float)
        R2_hat = float(x[-1])
        c = self.conjugates(alpha, Q, R2_hat)
        f = self.free_entropy(alpha, c["R2"], R2_hat, Q, c["overlap_W_hat"])
        return ShallowState(
            alpha=float(alpha),
            overlap_W=Q.copy(),
            overlap_W_hat=c["overlap_W_hat"],
            R2=float(c["R2"]),
            R2_hat=R2_hat,
            tau=float(c["tau"]),
            mmse=max(float(c["mmse"]), 0.0),
            free_entropy=f,
            mutual_information=self.mutual_information(alpha, f),
        )

    # ------------------------------------------------------------------ solvers
    def solve_universal(self, alpha: float) -> FixedPointResult:
        """Universal branch ``Q ≡ 0`` (docs/theory.md §5.1): the fixed point of one order parameter.

        ``R̂₂ = 2α/(Δ₂ + mmse_S(R̂₂))`` with ``Δ₂ = 2(Δ + g(1))/μ₂²``, solved by
        :func:`replica.engine.solve_fixed_point` (damped iteration with guarded Newton steps, residual
        below 4 ulp of R̂₂; the fixed point is unique and stable since λ·mmse_S(λ) increases); for μ₂ = 0 the
        branch is flat (``mmse = g(1)``). When Δ₂ = 0 and ``2α`` exceeds
        ``lim λ·mmse_S(λ)`` the quadratic part is recovered perfectly (mmse = g(1),
        ``R̂₂ = ∞``).
        """
        alpha = float(alpha)
        zeros = np.zeros(self.n_readout)
        if self.mu2 == 0.0:
            return self._finish(alpha, np.concatenate([zeros, [0.0]]), "universal", "exact")
        if not self._gaussian:
            return self._solve_universal_channel(alpha, zeros)
        delta2 = 2.0 * (self.delta + self.g1) / self.mu2**2
        mmse_S = self.channel.mmse

        def h(lam):
            return lam * (delta2 + mmse_S(lam)) - 2.0 * alpha

        if delta2 > 0:
            hi = 2.0 * alpha / delta2
        else:
            if 2.0 * alpha >= self.channel.mmse_lambda_limit:
                return self._finish(alpha, np.concatenate([zeros, [np.inf]]), "universal", "exact")
            hi = 2.0 * alpha
            while h(hi) < 0:
                hi *= 4.0
                if hi > 1e15:
                    return self._finish(alpha, np.concatenate([zeros, [np.inf]]), "universal", "exact")
        if alpha == 0.0:
            lam = 0.0
        else:
            # the fixed point of λ ↦ 2α/(Δ₂ + mmse_S(λ)) in [0, hi] is unique and stable (λ·mmse_S(λ)
            # increases), so the engine's damped iteration with guarded Newton steps finds it; no
            # bracketing root finder (scipy.optimize) is loaded for a universal sweep
            res = solve_fixed_point(lambda x: np.minimum(2.0 * alpha / (delta2 + mmse_S(np.maximum(x, 0.0))), hi),
                                    np.array([0.5 * hi]), damping=0.5, atol=1e-300, rtol=4 * np.finfo(float).eps,
                                    guarded_newton=True, polish_below=None, max_iter=5000, start="universal")
            if not res.converged:
                return self._finish(alpha, np.concatenate([zeros, res.x]), "universal", res.status, res)
            lam = float(res.x[0])
        return self._finish(alpha, np.concatenate([zeros, [lam]]), "universal", "exact")

    def _solve_universal_channel(self, alpha, zeros) -> FixedPointResult:
        """The universal branch for a non-Gaussian output channel: ``R̂₂ = α μ₂²/D(mmse(R̂₂))`` with
        ``mmse(λ) = g(1) + μ₂² mmse_S(λ)/2`` and ``D`` the channel's :meth:`effective_variance` (for
        Gaussian labels ``D = Δ + mmse`` and this is the equation of :meth:`solve_universal`). With ``D``
        increasing in ``mmse`` (every channel of :mod:`priors.output_channels`) the right side lies in
        ``[0, hi]``, ``hi = α μ₂²/D(g(1))``, and Brent's method finds the fixed point in that bracket (unique for
        Gaussian labels, where ``λ·mmse_S(λ)`` increases; for other channels the first sign change of
        ``λ − R̂₂(λ)`` above 0 — the tests compare with damped iterations). A noiseless channel with ``g ≡ 0``
        (``D(g(1)) = 0``) may recover the quadratic part exactly (``R̂₂ = ∞``) when the bracket grows without
        bound."""
        mmse_S = self.channel.mmse
        scale = alpha * self.mu2**2

        def target(lam):
            return scale / self.effective_variance(self.g1 + self.mu2**2 * float(mmse_S(max(lam, 0.0))) / 2.0)

        floor = self.effective_variance(self.g1)
        hi = scale / floor if floor > 0 else None
        if hi is None:
            hi = 1.0
            while target(hi) > hi:
                hi *= 4.0
                if hi > 1e15:
                    return self._finish(alpha, np.concatenate([zeros, [np.inf]]), "universal", "exact")
        if alpha == 0.0:
            return self._finish(alpha, np.concatenate([zeros, [0.0]]), "universal", "exact")
        # λ − target(λ) increases from −target(0) < 0 to hi − target(hi) >= 0: Brent's method brackets the
        # one root in ~10–40 evaluations of the channel (a damped iteration needs hundreds)
        from scipy.optimize import brentq

        if hi - target(hi) <= 0.0:
            return self._finish(alpha, np.concatenate([zeros, [hi]]), "universal", "exact")
        lam = brentq(lambda lam: lam - target(lam), 0.0, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
        return self._finish(alpha, np.concatenate([zeros, [float(lam)]]), "universal", "exact")

    def _finish(self, alpha, x, start, status, result: FixedPointResult | None = None) -> FixedPointResult:
        if np.isinf(x[-1]):
            # perfect recovery of the quadratic part (noiseless, μ-only quadratic target)
            st = ShallowState(alpha, x[:-1].copy(), np.zeros(self.n_readout), self.R_d, np.inf, 0.0,
                              max(self.g1, 0.0), np.inf, math.inf)
        else:
            st = self._dense_state(alpha, x)
        if result is None:
            result = FixedPointResult(x, True, status, STATUS_MESSAGES[status], 0, 0.0, 0.0, start)
        if self.profile_solver is not None and start == "universal":
            # Q ≡ 0: every v-integral is exact; packed as (D, M = 0, SELECT_ZERO, level, error)
            st.discretization_error = 0.0
            st.learned_features, st.learned_mass = 0.0, 0.0
            result.x = np.array([self.effective_variance(st.mmse), 0.0, SELECT_ZERO, 0.0, 0.0])
        result.info["state"] = st
        return result

    def solve(
        self,
        alpha: float,
        overlap_W0,
        R2_hat0: float | None = None,
        *,
        start: str = "",
        **solver_options,
    ) -> FixedPointResult:
        """Damped iteration of the full one-hidden-layer equations from ``Q = overlap_W0``.

        Parameters
        ----------
        alpha : float
            α > 0.
        overlap_W0 : float or ndarray, shape (n_readout,)
            Initial ``Q(v)``.
        R2_hat0 : float, optional
            Initial ``R̂₂`` (default: the universal-branch value).
        start : str
            Label stored in the result.
        **solver_options
            ``damping``, ``atol``, ``rtol``, ``max_iter``, ``method``, ``guarded_newton``
            (default: True for at most ``GUARDED_NEWTON_MAX_SIZE`` order parameters, i.e.
            guarded Newton steps shortcut the damped iteration) and ``project`` (default:
            clip ``Q`` to [0, 1] and ``R̂₂`` to ≥ 0), see :func:`replica.engine.solve_fixed_point`.

        Returns
        -------
        FixedPointResult
            ``info["state"]`` holds the :class:`ShallowState` at the returned point. With the
            profile solver (continuous laws, many atoms) ``overlap_W0`` only selects the roots
            (:func:`replica.readout_grid.selection_from_overlaps`), ``R2_hat0`` is not used
            and ``x = (D, M, s_threshold, level, discretization_error)``.
        """
        alpha = float(alpha)
        if self.profile_solver is not None:
            x0 = self.profile_solver.initial_point(alpha, overlap_W0)
            return self.profile_solver.solve(alpha, x0, start=start, **solver_options)
        Q0 = np.broadcast_to(np.asarray(overlap_W0, dtype=float), (self.n_readout,)).copy()
        if R2_hat0 is None:
            R2_hat0 = self.solve_universal(alpha).x[-1]
            if not np.isfinite(R2_hat0):
                R2_hat0 = 1e6
        x0 = np.concatenate([Q0, [float(R2_hat0)]])
        solver_options.setdefault("guarded_newton", x0.size <= GUARDED_NEWTON_MAX_SIZE)
        solver_options.setdefault("project", self._project)
        res = solve_fixed_point(lambda x: self.update(alpha, x), x0, start=start, **solver_options)
        if res.status == "nan":
            return res
        return self._finish(alpha, res.x, start, res.status, res)
