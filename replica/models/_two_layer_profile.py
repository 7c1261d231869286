r"""Two hidden layers solved through global order parameters: the s-integrals without a fixed grid.

The first-layer overlap ``Q₁(s)`` of :class:`replica.models.two_layer.TwoLayerModel` jumps in the
effective readout ``s`` (the layer-1 front, docs/two_layer.md), so a fixed rule in ``s``
converges only like the weight of one node, and every node the front crosses is a fold of its
own (the staircase). This module removes the grid from the unknowns, as
:mod:`replica.readout_grid` does for the readout ``v`` of one hidden layer.

Reduction
---------
Fix the global order parameters ``y = (D, inner_v, t_v)`` (one ``D``, and per readout value
``inner_v = a Q₂:₁(v) + E_s[Q₂(v, s) g₁(Q₁(s))]`` and ``t_v = E_s[Q₂(v, s) Q₁(s)]``). They fix
``g₂'(inner_v)``, the tilt ``τ_v`` (``m_rect(τ_v) = t_v``), ``r₂:₁(v) = (α/γ₂) a v² g₂'(inner_v)/D``,
the gain ``w_v = (m(τ_v + r₂:₁) − m(τ_v))/m'(τ_v)`` and ``Q₂:₁(v) = m_rect(τ_v + r₂:₁(v))``. The
conjugate equations of the module docstring of :mod:`replica.models.two_layer` then give

    Q̂₂(v, s) = A_v g₁(Q₁(s)) + w_v Q₁(s)/γ₁,       A_v = α v² g₂'(inner_v)/(γ₁γ₂D),

so ``Q₂(v, s) = h_v(Q₁(s))`` with ``h_v(q) = m_{P₂}(A_v g₁(q) + w_v q/γ₁)``: the second layer
depends on ``s`` only through ``Q₁(s)``. And

    Q̂₁(s) = s² k(Q₁(s)) + c(Q₁(s)),
    k(q) = (α b/(γ₁D)) g₁'(q),
    c(q) = (α/(γ₁D)) g₁'(q) Σ_v p(v) v² g₂'(inner_v) h_v(q) + (γ₂/γ₁) Σ_v p(v) w_v h_v(q).

With ``r = Q̂₁`` and ``q = m_{P₁}(r)``, a first-layer neuron with effective readout ``s`` is at a
fixed point exactly when

    s² = T(r) = (r − c(m_{P₁}(r))) / k(m_{P₁}(r)),

an explicit curve, as ``v² = T(r)`` for one hidden layer. ``r = 0`` is a fixed point for every
``s`` (``c(0) = 0``); since ``g₁'(q) = O(q²)`` (odd activations, degrees ≥ 3),
``T(0+) = ±∞`` with the sign of ``1 − c'(0)``, ``c'(0) = (γ₂/γ₁²) Σ_v p(v) w_v² m_{P₂}'(0)``: ``Q₁ = 0``
is stable for every ``s`` unless the product channel drives it (``T(0+) = −∞``, every neuron
unstable). :class:`EffectiveReadoutProfile` tabulates this ``T`` and inverts it with the
machinery of :class:`replica.readout_grid.OverlapProfile` (largest root, low root, selection
``s_threshold`` on ``s²``).

The integrals over ``s ~ N(0, 1)`` (through ``s²``: the Gaussian panel rule of
:meth:`priors.continuous_laws.ContinuousLaw.panel_rule` folded onto ``s > 0``) have panel ends at
the non-smooth points ``s = √T_k`` (the extrema of ``T``: the fronts), graded there, and are
refined by doubling the nodes per panel until two levels agree (the loop of
:class:`replica.readout_grid.ProfileSolver`); the solver iterates only on the ``1 + 2 n_v``
global unknowns. The stored ``Q₁(s)``, ``Q₂(v, s)`` are the profile evaluated on a fixed
reporting grid (:func:`replica.models.two_layer.effective_readout_panels` with 16 panels).

Special cases: ``b = 0`` (no linear part in the second activation) or ``g₁ ≡ 0`` make ``Q₁``
independent of ``s``; then any rule exact for ``E 1`` and ``E s²`` is exact and
:class:`~replica.models.two_layer.TwoLayerModel` keeps its fixed rule.

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2510.24616 (two hidden layers); the reduction to
one curve per set of global order parameters is the one of :mod:`replica.readout_grid`.
"""

from __future__ import annotations

import math

import numpy as np


from hciz.compiled import compiled_rectangular
from priors.compiled import compiled_prior
from priors.continuous_laws import GaussianLaw

from ..activations import compiled_activation
from ..readout_grid import (_FRONT_SCAN, _R_GRID, SELECT_EQUILIBRIUM, SELECT_LARGEST, SELECT_LOW, SELECT_ZERO,
                            OverlapProfile, ProfileSolver, _relative_change)
from .._curve_kernels import folded_gaussian_panel_rule, gauss_legendre_unit
from . import _two_layer_kernels as _kernels

__all__ = ["EffectiveReadoutProfile", "TwoLayerProfileSolver", "REPORT_PANELS"]

#: panels of the reporting grid in s (:func:`replica.models.two_layer.effective_readout_panels`)
REPORT_PANELS = 16
_GL16_X, _GL16_W = np.polynomial.legendre.leggauss(16)  # the tail integral of the tilt gain


class EffectiveReadoutProfile(OverlapProfile):
    """Fixed points ``Q₁(s)`` of every first-layer neuron at given global order parameters.

    Parameters
    ----------
    prior1, prior2 : WeightPrior
        ``P₁``, ``P₂`` (unit variance), vectorized ``overlap``.
    activation1 : Activation
        ``σ₁`` (vectorized ``g``, ``g_prime`` on [0, 1]).
    kappa : float
        ``α b/(γ₁D) > 0``.
    A, W : ndarray, shape (n_v,)
        ``A_v = α v² g₂'(inner_v)/(γ₁γ₂D)`` and ``w_v/γ₁`` (the two parts of ``Q̂₂``).
    cA, cW : ndarray, shape (n_v,)
        ``(α/(γ₁D)) p(v) v² g₂'(inner_v)`` and ``(γ₂/γ₁) p(v) w_v`` (the two parts of ``c``).

    Notes
    -----
    ``snr(s², s_threshold)`` returns ``Q̂₁`` at effective readouts ``s``; the variable called ``s``
    there is ``s²`` here. The curve is tabulated, its extrema refined and its roots found by the
    compiled kernels of :mod:`replica.models._two_layer_kernels` (the algorithms of
    :class:`replica.readout_grid.OverlapProfile`); the priors and ``σ₁`` enter through their compiled
    forms (:func:`priors.compiled.compiled_prior`, :func:`replica.activations.compiled_activation`).
    """

    def __init__(self, prior1, prior2, activation1, kappa, A, W, cA, cW):
        self.prior = prior1
        self.prior2 = prior2
        self.activation = activation1
        self.kappa = float(kappa)
        self.A_v, self.W_v = np.ascontiguousarray(A, dtype=float), np.ascontiguousarray(W, dtype=float)
        self.cA, self.cW = np.ascontiguousarray(cA, dtype=float), np.ascontiguousarray(cW, dtype=float)
        self.specs = (compiled_activation(activation1), compiled_prior(prior1), compiled_prior(prior2))
        self.curve = (self.kappa, self.A_v, self.W_v, self.cA, self.cW)
        tiny = 1e-9
        onset = math.inf if tiny - self.c(np.array([self.prior.overlap(np.array([tiny]))[0]]))[0] > 0 else -math.inf
        self._tabulate(onset)

    @classmethod
    def from_table(cls, prior1, prior2, activation1, specs, curve, onset, r, T, rmin, lmax, minima, maxima):
        """A profile from the curve and table one call of :func:`replica.models._two_layer_kernels.evaluate_point`
        returned (no recomputation)."""
        self = cls.__new__(cls)
        self.prior, self.prior2, self.activation, self.specs = prior1, prior2, activation1, specs
        self.curve = curve
        self.kappa, self.A_v, self.W_v, self.cA, self.cW = curve
        self.onset = float(onset)
        self._r, self._T, self._Rmin, self._Lmax, self.minima, self.maxima = r, T, rmin, lmax, minima, maxima
        return self

    def _tabulate(self, onset):
        self.onset = float(onset)
        (self._r, self._T, self.minima, self.maxima, self._Rmin,
         self._Lmax) = _kernels.tabulate(_R_GRID, self.onset, self.curve, *self.specs)

    @property
    def table(self) -> tuple:
        """``(r, T, running min from the right, running max from the left, onset)`` of the tabulated curve."""
        return self._r, self._T, self._Rmin, self._Lmax, self.onset

    def snr2(self, q, g=None):
        """``Q̂₂(v, s)`` at first-layer overlaps ``q`` (``g = g₁(q)`` if already known): shape
        ``(n_v,) + q.shape``."""
        q = np.asarray(q, dtype=float)
        g = self.activation.g(q) if g is None else g
        shape = (-1,) + (1,) * q.ndim
        return np.maximum(self.A_v.reshape(shape) * g + self.W_v.reshape(shape) * q, 0.0)

    def c(self, q, gp=None):
        """``c(q)`` of the module docstring (vectorized in ``q``)."""
        q = np.asarray(q, dtype=float)
        return _kernels.c_many(np.ascontiguousarray(q.ravel()), self.curve, self.specs[0],
                               self.specs[2]).reshape(q.shape)

    def roots(self, snr1):
        """Everything a root ``Q̂₁ = snr1`` fixes (arrays of ``snr1``'s shape, ``(n_v,) + shape`` for the
        second layer): ``(Q₁, g₁(Q₁), Q̂₂, Q₂)``."""
        snr1 = np.asarray(snr1, dtype=float)
        q1, g1q, snr2, q2 = _kernels.roots_from_snr(np.ascontiguousarray(snr1.ravel()), self.curve, *self.specs)
        n_v = self.A_v.size
        return (q1.reshape(snr1.shape), g1q.reshape(snr1.shape), snr2.reshape((n_v,) + snr1.shape),
                q2.reshape((n_v,) + snr1.shape))

    def T(self, r):
        """``T(r) = (r − c(q))/k(q)``, ``q = m_{P₁}(r)`` (``±inf`` where ``k(q) = 0``)."""
        r = np.asarray(r, dtype=float)
        return _kernels.curve_T_many(np.ascontiguousarray(r.ravel()), self.curve, *self.specs).reshape(r.shape)

    def snr(self, s, s_threshold=SELECT_LARGEST):
        """SNRs ``Q̂₁`` of the selected fixed points at ``s² = s`` (:meth:`OverlapProfile.snr`)."""
        s = np.asarray(s, dtype=float)
        out = _kernels.snr_many(np.ascontiguousarray(s.ravel()), float(s_threshold), *self.table, self.curve,
                                *self.specs)
        return out.reshape(s.shape)


class TwoLayerProfileSolver(ProfileSolver):
    """Solver of the two-layer equations through ``y = (D, inner_v…, t_v…)`` (module docstring).

    The packed point of a solution is ``x = (D, inner_v…, t_v…, s_threshold, level,
    discretization_error)``; only the ``1 + 2 n_v`` globals are iterated, the selection (on
    ``s²``; :data:`~replica.readout_grid.SELECT_LARGEST`, ``SELECT_LOW``, ``SELECT_ZERO``) and the
    rule level are labels, and ``discretization_error`` is the relative change of mmse and free
    entropy between the last two levels of the rule (nodes per panel doubled until it is below a
    tenth of ``target``, at most :data:`replica.readout_grid.MAX_LEVEL` times).

    Parameters
    ----------
    model : TwoLayerModel
        With ``b > 0`` and ``g₁ ≢ 0``.
    target : float, keyword-only
        Relative accuracy of mmse and free entropy (default 1e-3).
    base_nodes : int, keyword-only
        Nodes per panel of the coarsest rule (default 8).
    """

    def __init__(self, model, **kw):
        super().__init__(model, **kw)
        self.law = GaussianLaw()  # the law of s (the loop of ProfileSolver.solve needs a continuous law)
        self.adaptive = True
        self._args = None

    @property
    def n_globals(self) -> int:
        return 1 + 2 * self.model.n_readout

    @property
    def _d_floor(self) -> float:
        """``D(mmse = 0)``: the smallest effective variance (Δ for Gaussian labels)."""
        if getattr(self, "_floor", None) is None:
            self._floor = float(self.model.effective_variance(0.0))
        return self._floor

    # ------------------------------------------------------------------ rules
    def rule(self, profile, s_threshold, level):
        """Folded Gaussian panel rule on ``s > 0`` with panel ends at the fronts
        (:func:`replica._curve_kernels.folded_gaussian_panel_rule`)."""
        t, wt = gauss_legendre_unit(self.base_nodes * 2**level)
        return folded_gaussian_panel_rule(np.sqrt(self._breakpoints(profile, s_threshold)), t, wt)

    @staticmethod
    def _breakpoints(profile, s_threshold):
        """Values of ``s²`` where the selected ``Q₁(s)`` may be non-smooth (extrema of ``T``, the front)."""
        s_pts = profile.breakpoints() if profile is not None else np.zeros(0)
        if 0.0 < s_threshold < SELECT_LOW:
            s_pts = np.append(s_pts, s_threshold)
        return np.ascontiguousarray(s_pts, dtype=float)

    # ------------------------------------------------------------------ map
    def split(self, y):
        """``(D, inner (n_v,), t (n_v,))`` from the globals, projected on their domains."""
        n_v = self.model.n_readout
        y = np.asarray(y, dtype=float)
        # D = D(mmse) ≥ D(0) (Δ for Gaussian labels; and ≥ 1e-14 for noiseless labels: the SNRs stay finite)
        return (max(float(y[0]), self._d_floor, 1e-14), np.minimum(np.maximum(y[1:1 + n_v], 0.0), 1.0),
                np.minimum(np.maximum(y[1 + n_v:1 + 2 * n_v], 0.0), 1.0 - 1e-15))

    def _kernel_args(self) -> tuple:
        """The compiled forms the kernels take (built at the first evaluation, then kept):
        ``(consts, p(v), v², σ₁, σ₂, P₁, P₂, product channel)``."""
        if self._args is None:
            m = self.model
            act1, act2 = m.activations
            p1, p2 = m.weight_priors
            # the kernels return the new mmse in place of D' (their Δ is 0); the channel maps it to D'
            consts = (float(m.a), float(m.b), float(m.gammas[0]), float(m.gammas[1]), float(m.g1_one),
                      float(m.g2_one), 0.0)
            self._args = (consts, np.ascontiguousarray(m.readout_weights, dtype=float),
                          np.ascontiguousarray(m.v2, dtype=float), compiled_activation(act1),
                          compiled_activation(act2), compiled_prior(p1), compiled_prior(p2),
                          compiled_rectangular(m.channel))
        return self._args

    def _evaluate(self, alpha, y, s_threshold, level):
        m = self.model
        D, inner, t = self.split(y)
        consts, pv, v2, act1_spec, act2_spec, p1_spec, p2_spec, rect = self._kernel_args()
        if s_threshold == SELECT_ZERO:  # the universal point: no profile
            g2p, tau, r21, gain, q21 = _kernels.global_channels(float(alpha), D, inner, t, consts, v2, act2_spec, rect,
                                                                 _GL16_X, _GL16_W)
            nodes, weights = self.rule(None, s_threshold, level)
            snr1 = q1 = g1q = np.zeros(nodes.size)
            snr2 = q2 = np.zeros((m.n_readout, nodes.size))
            inner_new, t_new = m.a * q21, np.zeros(m.n_readout)
            gap2 = float(pv @ (v2 * (m.g2_one - m.activations[1].g(np.clip(inner_new, 0.0, 1.0)))))
            mmse_new = m.b * m.g1_one * float(weights @ (nodes * nodes)) + gap2
            iota = m.channel.mutual_information
            rect_sum = float(pv @ (r21 * (1.0 - q21) / 2.0 - iota(r21) + iota(0.0 * r21)))
            profile, entropic = None, (0.0, 0.0, rect_sum)
        else:
            t_gl, w_gl = gauss_legendre_unit(self.base_nodes * 2**level)
            (g2p, tau, r21, gain, q21, curve, onset, r, T, rmin, lmax, minima, maxima, s_threshold, nodes, weights,
             snr1, q1, g1q, snr2, q2, inner_new, t_new, mmse_new, ent1, ent2, rect_sum) = _kernels.evaluate_point(
                float(alpha), D, inner, t, float(s_threshold), consts, pv, v2, act1_spec, act2_spec, p1_spec,
                p2_spec, rect, _R_GRID, _FRONT_SCAN, t_gl, w_gl, _GL16_X, _GL16_W)
            p1, p2 = m.weight_priors
            profile = EffectiveReadoutProfile.from_table(p1, p2, m.activations[0], (act1_spec, p1_spec, p2_spec),
                                                         curve, onset, r, T, rmin, lmax, minima, maxima)
            entropic = (ent1, ent2, rect_sum)
        return {"tau": tau, "r21": r21, "gain": gain, "q21": q21, "profile": profile, "threshold": s_threshold,
                "nodes": nodes, "weights": weights, "snr1": snr1, "q1": q1, "snr2": snr2, "q2": q2, "inner": inner_new,
                "t": t_new, "D": m.effective_variance(mmse_new), "mmse": mmse_new, "entropic": entropic, "g2p": g2p}

    def _roots(self, profile, s2, s_threshold):
        """``(Q̂₁, Q₁, g₁(Q₁), Q̂₂, Q₂)`` of the selected roots at effective readouts ``√s2`` (zeros for
        the universal point, ``profile`` None)."""
        if profile is None:
            z = np.zeros(s2.shape)
            z2 = np.zeros((self.model.n_readout, s2.size))
            return z, z, z, z2, z2
        snr1 = profile.snr(s2, s_threshold)
        return (snr1, *profile.roots(snr1))

    def _potential_args(self, ctx):
        """The tuple ``pot`` of :mod:`replica.models._two_layer_kernels` from the context of one evaluation."""
        m = self.model
        pv = m.readout_weights
        gam1, gam2 = (float(g) for g in m.gammas)
        return (float(m.b), float(ctx["D"]), float(ctx["alpha"]), gam1, gam2,
                np.ascontiguousarray(pv * m.v2 * ctx["g2p"], dtype=float), np.ascontiguousarray(pv, dtype=float),
                np.ascontiguousarray(pv * ctx["gain"], dtype=float))

    def neuron_potential(self, profile, s2, snr1, ctx):
        r"""Free entropy per unit mass of the first-layer neurons with effective readout ``s`` on the root
        ``Q̂₁ = snr1`` (its second-layer entries following, ``Q₂(v, s) = h_v(Q₁)``), relative to ``Q ≡ 0``::

            φ = g₁(Q₁) [b s² + Σ_v p(v) v² g₂'(inner_v) Q₂(v)] / (2D)
                + (γ₁/α) [ψ_{P₁}(Q̂₁) − Q₁Q̂₁/2] + (γ₁γ₂/α) Σ_v p(v) [ψ_{P₂}(Q̂₂) − Q₂Q̂₂/2]
                + (γ₂/2α) Σ_v p(v) w_v Q₂(v) Q₁

        (the first-order change of ``f`` when a group of mass ε moves from ``Q ≡ 0`` to that root; its
        stationary points in ``(Q₁, Q̂₁, Q₂, Q̂₂)`` are the per-neuron equations). Compiled:
        :func:`replica.models._two_layer_kernels.potential`.

        Parameters
        ----------
        profile : EffectiveReadoutProfile
        s2, snr1 : ndarray of one shape
            ``s²`` and ``Q̂₁`` of a root at ``s``.
        ctx : dict
            ``alpha``, ``D``, ``g2p`` (n_v,), ``gain`` (n_v,).

        Returns
        -------
        ndarray, shape of ``s2``
        """
        s2, snr1 = np.broadcast_arrays(np.asarray(s2, dtype=float), np.asarray(snr1, dtype=float))
        out = _kernels.potential_many(np.ascontiguousarray(s2.ravel()), np.ascontiguousarray(snr1.ravel()),
                                      profile.curve, self._potential_args(ctx), *profile.specs)
        return out.reshape(s2.shape)

    def equilibrium_threshold(self, profile, ctx) -> float:
        """``s²`` of the equal-potential front (the algorithm of
        :func:`replica.readout_grid.equal_potential_threshold` with :meth:`neuron_potential`, compiled:
        :func:`replica.models._two_layer_kernels.front`): every neuron on the root of larger free entropy."""
        r, T, rmin, lmax, onset = profile.table
        return float(_kernels.front(r, T, profile.minima, profile.maxima, rmin, lmax, onset, _FRONT_SCAN,
                                    profile.curve, self._potential_args(ctx), *profile.specs))

    def update(self, alpha, y, s_threshold, level=0):
        """The map ``(D, inner, t) → (D', inner', t')`` at fixed selection and rule."""
        e = self.evaluate(alpha, y, s_threshold, level)
        return np.concatenate([[e["D"]], e["inner"], e["t"]])

    def _project(self, y):
        D, inner, t = self.split(y)
        return np.concatenate([[D], inner, t])

    # ------------------------------------------------------------------ state
    def free_entropy(self, alpha, e) -> float:
        """``f`` of the module docstring of :mod:`replica.models.two_layer` on the rule of ``e`` (the
        entropic sums are those of the evaluation; the product term uses the tilt of the new ``t``)."""
        gam1, gam2 = self.model.gammas
        energetic = self.model.energetic(e["mmse"])
        if not math.isfinite(energetic):
            return math.inf
        ent1, ent2, rect = e["entropic"]
        return float(energetic
                     + gam1 / alpha * ent1 + gam1 * gam2 / alpha * ent2 + gam2 / alpha * rect)

    def state(self, alpha, x):
        """The state (``model.state_type``: :class:`~replica.models.two_layer.TwoLayerState`) at ``x = (globals…, s_threshold[, level[,
        error]])``: mmse and free entropy on the adaptive rule, the profiles on the reporting grid
        (``model.s_values``)."""
        m = self.model
        y, sel, level, error = self.labels(x)
        e = self.evaluate(alpha, y, sel, level)
        f = self.free_entropy(alpha, e)
        snr1, q1, _, snr2, q2 = self._roots(e["profile"], m.s_values**2, e["threshold"])
        # the per-neuron maps: every neuron's own root at the neuron quantiles (no interpolation)
        _, n1, _, _, n2 = self._roots(e["profile"], m.neuron_s**2, e["threshold"])
        collective = np.concatenate([[float(e["weights"] @ e["q1"])], e["inner"], e["t"], e["q21"]])
        st = m.state_type(float(alpha), q1, snr1, q2, snr2, e["q21"].copy(), e["r21"].copy(), e["tau"].copy(),
                          max(float(e["mmse"]), 0.0), f, m.mutual_information(alpha, f),
                          collective=collective, discretization_error=error, neuron_overlap_layer_1=n1,
                          neuron_overlap_layer_2=n2)
        learned = getattr(m, "learned_groups", None)  # the groups of a discrete readout law (TwoLayerModel)
        return st if learned is None else learned(st)

    def refinement_error(self, alpha, x, **solver_options) -> float:
        """Relative change of mmse and free entropy when the rule of the solution ``x`` is refined
        once (nodes per panel doubled; chord-Newton steps from ``x``): the discretization error of
        a point found by continuation at a fixed rule. 0 at the universal point, NaN when the
        refined solve fails."""
        y, sel, level, _ = self.labels(x)
        if sel == SELECT_ZERO:
            return 0.0
        r = self._refine(float(alpha), y, sel, level + 1, "refinement", solver_options)
        if r is None:
            return math.nan
        return _relative_change(self.state(alpha, np.concatenate([y, [sel, level]])),
                                self.state(alpha, np.concatenate([r.x, [sel, level + 1]])))

    def initial_point(self, q1, q2, q21, selection):
        """Packed start ``(D, inner, t, s_threshold)`` from constant overlaps ``Q₁, Q₂, Q₂:₁`` (scalars
        or per readout value for ``Q₂``, ``Q₂:₁``) and a selection."""
        m = self.model
        act1, act2 = m.activations
        q1 = float(np.clip(q1, 0.0, 1.0))
        q2 = np.clip(np.broadcast_to(np.asarray(q2, float), (m.n_readout,)), 0.0, 1.0)
        q21 = np.clip(np.broadcast_to(np.asarray(q21, float), (m.n_readout,)), 0.0, 1.0)
        g1q = float(act1.g(np.array([q1]))[0])
        inner = m.a * q21 + q2 * g1q
        t = q2 * q1
        D = m.effective_variance(m.b * (m.g1_one - g1q) + float(m.readout_weights @ (m.v2 * (m.g2_one - act2.g(inner)))))
        return np.concatenate([[max(D, 1e-12)], inner, t, [selection]])

    def universal_point(self):
        """Packed universal point (``Q ≡ 0``, selection :data:`SELECT_ZERO`, exact: error 0)."""
        return np.concatenate([self.initial_point(0.0, 0.0, 0.0, SELECT_ZERO), [0.0, 0.0]])

