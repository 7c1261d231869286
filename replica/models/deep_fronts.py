r"""L ≥ 3 hidden layers with no fixed grid in s: front-aligned rules (docs/deep_linear.md §11).

:class:`DeepFrontModel` solves the equations of :class:`replica.models.deep_linear.DeepLinearModel`
(same kernel, conjugates and free entropy) on rules in the effective readouts ``s_ℓ`` that follow
the *specialization fronts* of the inner layers instead of a fixed Gauss–Hermite grid.

Why
---
On a partially specialized sheet the neurons of an inner layer ℓ with ``|s_ℓ|`` above a front
``f_ℓ`` sit on the large root of their fixed-point equations and those below on the small one: the
profiles jump at ``f_ℓ``. A fixed grid turns every node the front crosses into a fold of its own (a
staircase of branches, ``layer_1-2``, ``layers_1_2-8``, …) and integrates the jump with the error of
one node. Here the front is an unknown and a panel end.

The rule of one inner layer
---------------------------
For a front ``f`` (``0 ≤ f ≤`` :data:`FRONT_MAX`) the rule of ``E_s φ(s²)``, ``s ~ N(0, 1)`` folded on
``s ≥ 0``, is the ``n``-point Gauss rule of the density ``2φ(s)`` on ``[0, f]`` and the ``n``-point Gauss
rule of the same density on ``[f, ∞)`` (:func:`folded_gauss_rule`; orthogonal polynomials of the
truncated Gaussian by the discretized Stieltjes procedure), so that the profiles are smooth on each
panel and the rule converges fast in ``n``. Two more nodes of weight 0 sit at ``s = f``: the *probes*,
one on the small root and one on the large root. A probe is a neuron of zero mass: it follows its own
fixed-point equations at the global order parameters of the others and leaves them unchanged.

The front
---------
Moving a group of neurons of mass ``ε`` at ``s`` from one root to the other changes the free
entropy by ``ε Δφ(s)`` with ``φ(s) = ∂f/∂p(s)``, the derivative of ``f`` with respect to the
quadrature weight of a node at ``s`` at fixed order parameters (f is stationary in all of them).
The stationary point of largest ``f`` puts every neuron on the root of larger ``φ``, so the front sits
where the two probes have equal potential, ``Δφ(f) = φ_large(f) − φ_small(f) = 0`` (for L = 2 this is
the equal-potential rule of :mod:`replica.models._two_layer_profile`; :class:`DeepFrontModel` with
``L = 2`` reproduces it, tests/test_deep_fronts.py). ``φ`` is computed in closed form (:meth:`DeepFrontModel.neuron_potentials`; tested against
differences of :meth:`DeepLinearModel.free_entropy` in the probe's weight). Its derivative along the front at fixed
neuron states is explicit: the labels enter ``f`` only through ``ρ²`` in ``K*``, and the probes are
stationary points of their own potential, so ``dΔφ/d(f²) = A_{L+1,ℓ+1}(G_large − G_small)/(2D)``
(``G = g_ℓ(c_ℓ)`` at the probes). The map moves the front by that Newton step in ``f²``, clipped to
``[0, FRONT_MAX]``; where both probes sit on one root (the other does not exist at the front, or the
probe left it during the iteration) the probe is re-seeded from the nearest node on its side, or the
front moves towards the root that exists (:meth:`DeepFrontModel._new_fronts`). ``f = 0``: every neuron of the layer is on the
large root; ``f = FRONT_MAX``: none is.

Packed vector and storage
-------------------------
``x = (f_1, …, f_{L−1}, overlaps of every W_{ℓ:m} on the current rules)`` (the overlaps in the order
of :func:`replica.models.deep_linear.matrix_keys`, each inner-layer axis with ``2n + 2`` nodes: the two
probes, the small-root panel, the large-root panel). States report every profile on the fixed folded
Gauss–Hermite grid of ``report_grid`` nodes (interpolated on the side of the front each reporting node
lies on), so that the stored datasets of a branch share one axis; the label averages
(``overlap_mean_*``), the phase and the error are computed on the front-aligned rules, and the
fronts are stored per point (``front_layer_<ℓ>``, in units of s).

Continuous readouts
-------------------
Gaussian, uniform and continuum power-law readout laws (without a fixed ``readout_grid``) give the last layer a
front in ``|v|`` as well (:attr:`DeepFrontModel.readout_front`): ``x = (f_1, …, f_{L−1}, f_v, overlaps)``, the
readout axis of every matrix of layer L on :func:`readout_front_rule`, the same probes and equal-potential step
(``U_L = v²``), the largest front per law in :attr:`DeepFrontModel.front_max`; the profiles are reported on the
law's quantile grid (folded onto ``|v|`` where it is symmetric, :func:`folded_readout_law`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from hciz.compiled import iota_of
from priors._kernels import kernel

from ..engine import STATUS_MESSAGES, FixedPointResult, solve_fixed_point
from ..interface import records_arguments
from ._common import DEFAULT_S_GRID, PHASE_THRESHOLD, neuron_quantiles, readout_front_law, refined_solve
# the one import of another architecture module: DeepFrontModel is DeepLinearModel on front-aligned rules
# (the same architecture family, docs/architecture.md)
from .deep_linear import INFORMED_OVERLAP, DeepLinearModel, DeepLinearState, _finite_rows, phase_label

__all__ = ["DeepFrontModel", "DeepFrontState", "folded_gauss_rule", "front_rule", "FRONT_MAX",
           "DEFAULT_PANEL_NODES", "LEARNED_MASS"]

#: largest front (units of s): above it the folded Gaussian has mass < 2e-17 (no neuron is specialized)
FRONT_MAX = 8.5
#: Gauss nodes per side of the front (the rule of one inner layer has 2n + 2 nodes)
DEFAULT_PANEL_NODES = 6
#: scaled residual below which the damped iteration of :meth:`DeepFrontModel.solve_from` tries a Newton
#: polish (accepted only within 100 damped steps of the iterate, :func:`replica.engine.solve_fixed_point`;
#: its Jacobian costs one vectorized call), for at most ``dense_size`` of :mod:`replica.continuation.settings` unknowns (L = 3:
#: 255; with four hidden layers, 676, MINPACK's factorizations cost more than the iterations saved: 210 s
#: against 67 s for the L = 4 sweep)
POLISH_BELOW = 1e4
#: nodes of the fine Gauss–Legendre rule the Stieltjes procedure discretizes the Gaussian with
_STIELTJES_NODES = 400
#: a matrix counts as learned when its groups above the phase threshold carry at least this mass
#: (a fraction of its entries; the front of a layer learned from its largest readouts is then below
#: s ≈ 6.1)
LEARNED_MASS = 1e-9
#: a probe is on the large root when its overlaps exceed this (else the root does not exist there)
_PROBE_FLOOR = 1e-6

_FINE_X, _FINE_W = np.polynomial.legendre.leggauss(_STIELTJES_NODES)


def folded_gauss_rule(a: float, b: float, n: int):
    """``n``-point Gauss rule of the folded Gaussian density ``2φ(s)`` on ``[a, b]``.

    Parameters
    ----------
    a, b : float
        ``0 ≤ a < b ≤ ∞`` (units of s; the part beyond ``s = 13`` is dropped: mass < 1e-38).
    n : int
        Number of nodes, 1 ≤ n ≤ 40.

    Returns
    -------
    nodes, weights : ndarray, shape (n,)
        Increasing nodes in ``(a, b)``; positive weights summing to ``P(a ≤ |s| ≤ b)``. Exact for
        polynomials of degree < 2n against ``2φ(s) ds`` (up to the 400-point discretization, 1e-15).
        Computed by the discretized Stieltjes procedure and the Golub–Welsch eigenproblem (Gautschi,
        *Orthogonal Polynomials: Computation and Approximation*, 2004, §2.2.3.1).

    Raises
    ------
    ValueError
        ``a < 0``, ``b ≤ a`` or ``n`` outside [1, 40].
    """
    if not (0.0 <= a < b) or not 1 <= int(n) <= 40:
        raise ValueError(f"folded_gauss_rule: need 0 <= a < b and 1 <= n <= 40, got a={a}, b={b}, n={n}")
    hi = min(float(b), 13.0)
    if hi <= a:
        return np.full(int(n), float(a)), np.zeros(int(n))
    nodes, weights = _stieltjes_gauss(float(a), hi, int(n), _FINE_X, _FINE_W)
    if not weights.sum() > 0.0:
        return np.full(int(n), float(a)), np.zeros(int(n))
    return nodes, weights


@kernel(cache=True)
def _stieltjes_gauss(a, hi, n, fine_x, fine_w):  # pragma: no cover - compiled
    """:func:`folded_gauss_rule` on ``[a, hi]``, compiled: the discretized Stieltjes recurrence on the
    Gauss–Legendre rule ``(fine_x, fine_w)`` mapped to ``[a, hi]``, then Golub–Welsch (zero weights when the
    panel carries no mass)."""
    m = fine_x.size
    s = np.empty(m)
    ws = np.empty(m)
    mass = 0.0
    for i in range(m):
        s[i] = a + (hi - a) * (fine_x[i] + 1.0) / 2.0
        ws[i] = (hi - a) / 2.0 * fine_w[i] * 2.0 * math.exp(-0.5 * s[i] * s[i]) / math.sqrt(2.0 * math.pi)
        mass += ws[i]
    if not mass > 0.0:
        return np.full(n, a), np.zeros(n)
    for i in range(m):
        ws[i] /= mass
    jac = np.zeros((n, n))
    p_prev = np.zeros(m)
    p = np.ones(m)
    norm_prev = 1.0
    for k in range(n):
        norm = 0.0
        first = 0.0
        for i in range(m):
            norm += ws[i] * p[i] * p[i]
            first += ws[i] * s[i] * p[i] * p[i]
        alpha_k = first / norm
        beta_k = norm / norm_prev if k > 0 else 0.0
        jac[k, k] = alpha_k
        if k > 0:
            jac[k, k - 1] = jac[k - 1, k] = math.sqrt(beta_k)
        p_new = (s - alpha_k) * p - beta_k * p_prev
        p_prev = p
        p = p_new
        norm_prev = norm
    nodes, vec = np.linalg.eigh(jac)
    return nodes, mass * vec[0, :] ** 2


def front_rule(front: float, n: int):
    """Rule of one inner layer for the front ``front``: ``(nodes, weights, side)``, shape (2n + 2,).

    Order: the small-root probe and the large-root probe (both at ``s = front``, weight 0), the
    ``n`` nodes of ``[0, front]``, the ``n`` nodes of ``[front, ∞)`` (:func:`folded_gauss_rule`).
    ``side`` is 0 for the small-root nodes, 1 for the large-root ones. A front at 0 (every neuron
    on the large root) gives the small-root panel zero weight; a front at :data:`FRONT_MAX`, the
    large-root panel a mass < 2e-17. The arrays are shared between calls with the same front (memoized)
    and read-only: copy them to modify.
    """
    return _front_rule(float(min(max(front, 0.0), FRONT_MAX)), int(n))


@functools.lru_cache(maxsize=512)
def _front_rule(f: float, n: int):
    """:func:`front_rule`, memoized (a continuation and its finite-difference Jacobians revisit the same
    fronts); the arrays are read-only."""
    nodes, weights = _front_rule_kernel(f, n, _FINE_X, _FINE_W)
    side = _front_side(n)
    for a in (nodes, weights):
        a.setflags(write=False)
    return nodes, weights, side


@functools.lru_cache(maxsize=64)
def _front_side(n: int) -> np.ndarray:
    """``side`` of :func:`front_rule` (read-only, shared)."""
    side = np.concatenate([[0, 1], np.zeros(n, int), np.ones(n, int)])
    side.setflags(write=False)
    return side


@kernel(cache=True)
def _front_rule_kernel(f, n, fine_x, fine_w):  # pragma: no cover - compiled
    """Nodes and weights of :func:`front_rule` (``0 ≤ f ≤ FRONT_MAX``) in one compiled call: the probes, then
    :func:`folded_gauss_rule` on ``[0, f]`` (zero weights at ``f ≤ 1e-12``) and on ``[f, 13]``, with the
    same guards."""
    nodes = np.empty(2 * n + 2)
    weights = np.zeros(2 * n + 2)
    nodes[0] = nodes[1] = f
    for k in range(2):
        a = 0.0 if k == 0 else f
        b = f if k == 0 else 13.0
        base = 2 + k * n
        ok = (k == 1 or f > 1e-12) and b > a
        x = np.zeros(n)
        w = np.zeros(n)
        if ok:
            x, w = _stieltjes_gauss(a, b, n, fine_x, fine_w)
            ok = w.sum() > 0.0
        for i in range(n):
            nodes[base + i] = x[i] if ok else (a if k == 1 else 0.0)
            weights[base + i] = w[i] if ok else 0.0
    return nodes, weights


def _map_axis(q, axis, target, target_side, nodes, side):
    """``q`` with its ``axis`` carried from a front rule ``(nodes, side)`` onto the nodes ``target``:
    piecewise linear in s, each target node from the nodes on its own side of the front
    (``target_side``: 0 small root, 1 large root)."""
    q = np.moveaxis(np.asarray(q, dtype=float), axis, -1)
    target = np.asarray(target, dtype=float)
    out = np.empty(q.shape[:-1] + (target.size,))
    for k in (0, 1):
        sel, src = target_side == k, side == k
        if not np.any(sel):
            continue
        order = np.argsort(nodes[src], kind="mergesort")
        s_src = nodes[src][order]
        for idx in np.ndindex(q.shape[:-1]):
            out[idx + (sel,)] = np.interp(target[sel], s_src, q[idx][src][order])
    return np.moveaxis(out, -1, axis)


class _Reported(Mapping):
    """The profiles of one state carried onto the reporting grid, computed at the first access (a
    continuation builds thousands of states and reads only their rule overlaps, phase and error; the
    reports are read when a point is stored, named or plotted). Pickles as a plain dict."""

    def __init__(self, source):
        self._source, self._data = source, None

    def _get(self) -> dict:
        if self._data is None:
            self._data, self._source = self._source(), None
        return self._data

    def __getitem__(self, key):
        return self._get()[key]

    def __iter__(self):
        return iter(self._get())

    def __len__(self):
        return len(self._get())

    def __reduce__(self):
        return dict, (self._get(),)


@dataclass
class DeepFrontState(DeepLinearState):
    """:class:`DeepLinearState` reported on the fixed grid, with the fronts and the phase of the rule.

    Attributes
    ----------
    fronts : ndarray, shape (n_fronts,)
        Specialization front ``f_ℓ`` of every inner layer (units of s; 0: every neuron on the
        large root, :data:`FRONT_MAX`: none), and of the readouts (units of |v|) with a readout front.
    learned : tuple
        ``(layers, extra_products)`` read on the front-aligned rules (probes excluded).
    neuron_maps : dict
        ``{ℓ: Q_ℓ}`` per neuron (:meth:`DeepFrontModel.neuron_maps`), stored as ``neuron_overlap_layer_<ℓ>``;
        computed at the first access (from ``neuron_source``), not for every state of a continuation.
    rule_overlaps : ndarray
        Every overlap on the front-aligned rules times the square root of its group's mass
        ``p(row) p(column)``: :attr:`overlaps`, continuous along a sheet (the reported profiles jump
        where a front crosses a reporting node), blind to the probes and to groups of vanishing mass
        (two states that differ only there are one state).
    """

    fronts: np.ndarray = None
    learned: tuple = ((), False)
    rule_overlaps: np.ndarray = None
    neuron_source: object = field(default=None, repr=False)

    @property
    def neuron_maps(self) -> dict:
        """The per-neuron maps (computed once, at the first access)."""
        if callable(self.neuron_source):
            self.neuron_source = self.neuron_source()
        return self.neuron_source

    @property
    def overlaps(self) -> np.ndarray:
        """The mass-weighted overlaps on the front-aligned rules (what continuation and comparisons read)."""
        return self.rule_overlaps

    def record(self) -> dict:
        """:meth:`DeepLinearState.record` and ``front_layer_<ℓ>`` for every front (ℓ = 1 … L − 1, and L with a
        readout front)."""
        rec = super().record()
        for ell, f in enumerate(np.atleast_1d(self.fronts), start=1):
            rec[f"front_layer_{ell}"] = float(f)
        for ell, q in (self.neuron_maps or {}).items():
            rec[f"neuron_overlap_layer_{ell}"] = q
        return rec


#: mass of readouts above the largest readout front (the analogue of the folded Gaussian's mass beyond FRONT_MAX)
_READOUT_TAIL = 1e-17


def readout_front_max(density) -> float:
    """The largest readout front of a density of :func:`readout_front_law` (no readout learned): :data:`FRONT_MAX`
    for the Gaussian, ``√3`` for the uniform law, the ``|v|`` with a mass :data:`_READOUT_TAIL` above it for the
    power law."""
    from priors.continuous_laws import GaussianLaw, UniformLaw

    if isinstance(density, GaussianLaw):
        return FRONT_MAX
    if isinstance(density, UniformLaw):
        return math.sqrt(3.0)
    return float(density.c * _READOUT_TAIL ** (-density.beta))


def readout_front_rule(density, front: float, n: int):
    """Rule of the last layer's readouts ``|v|`` for the front ``front``: ``(nodes, weights, side)`` in the layout of
    :func:`front_rule` (two probes at the front, ``n`` nodes below it, ``n`` above, ascending in each panel).

    Gaussian: :func:`front_rule` (``|v|`` is a folded standard Gaussian, as ``s``). Uniform (``|v|`` uniform on
    ``[0, √3]``): Gauss–Legendre on each side. Power law (``v = c u^−β``, ``u`` the mass above ``v``): Gauss–Legendre
    in ``t = u^{1−2β}`` on each side, where ``v² du = c² dt/(1 − 2β)`` is bounded (the variable of
    :meth:`priors.continuous_laws.PowerLawDensity.panel_rule`), weights ``du = t^{2β/(1−2β)} dt/(1 − 2β)``.
    ``front`` is clipped to ``[0, readout_front_max(density)]``; the arrays are read-only (memoized)."""
    return _readout_front_rule(density, float(min(max(front, 0.0), readout_front_max(density))), int(n))


@functools.lru_cache(maxsize=512)
def _readout_front_rule(density, f, n):
    from priors.continuous_laws import GaussianLaw, UniformLaw

    if isinstance(density, GaussianLaw):
        return front_rule(f, n)
    x, w = np.polynomial.legendre.leggauss(n)
    x, w = 0.5 * (x + 1.0), 0.5 * w  # on [0, 1], ascending
    if isinstance(density, UniformLaw):
        top = math.sqrt(3.0)
        low_nodes, low_w = f * x, f * w / top
        high_nodes, high_w = f + (top - f) * x, (top - f) * w / top
    else:  # the continuum power law, in its variable t (PowerLawDensity.t_of, v_of)
        t_f = 1.0 if f <= density.c else float(density.t_of(f))

        def panel(lo, hi):  # t on [lo, hi], returned ascending in v (descending in t)
            v, du = density.v_of(lo + (hi - lo) * x[::-1])
            return v, (hi - lo) * w[::-1] * du

        low_nodes, low_w = panel(t_f, 1.0)
        high_nodes, high_w = panel(0.0, t_f)
    nodes = np.concatenate([[f, f], low_nodes, high_nodes])
    weights = np.concatenate([[0.0, 0.0], low_w, high_w])
    for a in (nodes, weights):
        a.setflags(write=False)
    return nodes, weights, _front_side(n)


def folded_readout_law(law):
    """A continuous readout law's grid that is symmetric about 0 (the quantile grids of ``gaussian`` and
    ``uniform``) folded onto ``|v|``, every weight of a pair on its positive node: exact, because the
    readout enters the equations only through ``v²`` (docs/deep_linear.md §2, §4), and half the unknowns of
    every matrix of the last layer. Other laws are returned unchanged.

    Parameters
    ----------
    law : ReadoutLaw

    Returns
    -------
    ReadoutLaw
        With ``values > 0`` (a node at 0 kept), ``law`` and ``fixed_grid`` of the input.
    """
    if law.law is None:
        return law
    v, w = np.asarray(law.values, dtype=float), np.asarray(law.weights, dtype=float)
    order = np.argsort(v, kind="mergesort")
    vs, ws = v[order], w[order]
    tol = 1e-10 * max(1.0, float(np.max(np.abs(v))))  # quantile grids are symmetric to ~1e-12 at 256 nodes
    if not (np.allclose(vs, -vs[::-1], rtol=0.0, atol=tol) and np.allclose(ws, ws[::-1], rtol=1e-12, atol=0.0)):
        return law
    import dataclasses

    from priors.readout_laws import discrete_readout_law

    keep = vs > -tol  # the positive nodes and a node at 0 (odd grids)
    values = np.abs(vs[keep])
    weights = np.where(vs[keep] > tol, 2.0, 1.0) * ws[keep]
    out = discrete_readout_law(values, weights / weights.sum(), name=law.name, exact=False)
    return dataclasses.replace(out, law=law.law, fixed_grid=law.fixed_grid)


class DeepFrontModel(DeepLinearModel):
    """L ≥ 2 hidden layers with linear parts on front-aligned rules in s (module docstring).

    Parameters
    ----------
    activation : str, Activation, or a sequence of L of them
        As :class:`~replica.models.deep_linear.DeepLinearModel` (odd, inner layers of unit variance).
    gammas : sequence of L floats
        ``γ_ℓ = k_ℓ/d > 0``.
    delta : float
        Label-noise variance Δ ≥ 0.
    weight_prior : str, WeightPrior, or a sequence (one per layer), keyword-only
    readout_law : str or ReadoutLaw, keyword-only
        Gaussian, uniform and continuum power-law readouts get a front in ``|v|`` (:attr:`readout_front`,
        :func:`readout_front_rule`); another continuous law, or one of those with ``readout_grid``, is solved on
        its quantile grid,
        folded onto ``|v|`` where it is symmetric (:func:`folded_readout_law`), and
        :meth:`discretization_error` doubles that grid as well.
    readout_grid : int, keyword-only
        A fixed grid of this many nodes for a continuous readout law (before folding); without it, the
        law's default grid (64 nodes), which for Gaussian readouts only carries the reported profiles.
    drop_hermite : tuple of int, keyword-only
        Hermite degrees removed when activations are given by name.
    unit_variance : bool, keyword-only
        Rescale named activations to ``E σ² = 1`` (default True).
    tilt_split : {"top", "bottom"}, keyword-only
        Factorization of the tilt of products of ≥ 3 factors (docs/deep_linear.md §3).
    output_channel : OutputChannel, optional, keyword-only
        The labels' channel (default Gaussian with variance Δ).
    panel_nodes : int, keyword-only
        Gauss nodes on each side of every front, 2 ≤ n ≤ 40 (default 6);
        :meth:`discretization_error` solves with twice as many (n ≤ 20).
    report_grid : int, keyword-only
        Nodes of the folded Gauss–Hermite grid the stored profiles are reported on (default 12).
    neuron_grid : int, keyword-only
        Neuron quantiles of the stored per-neuron maps (:meth:`neuron_maps`; default 64).

    Raises
    ------
    ValueError
        As :class:`DeepLinearModel`; ``panel_nodes`` outside [2, 40].
    """

    @records_arguments
    def __init__(self, activation="tanh2", gammas=(1.0, 1.0, 1.0), delta=0.1, *, weight_prior="gaussian",
                 readout_law="ones", readout_grid=None, drop_hermite=(), unit_variance=True, tilt_split="top",
                 output_channel=None, panel_nodes=DEFAULT_PANEL_NODES, report_grid=DEFAULT_S_GRID,
                 neuron_grid=None):
        if isinstance(panel_nodes, bool) or not float(panel_nodes).is_integer() or not 2 <= int(panel_nodes) <= 40:
            raise ValueError(f"panel_nodes must be an integer in [2, 40], got {panel_nodes!r}")
        if isinstance(readout_law, str):
            from priors import get_readout_law

            readout_law = get_readout_law(readout_law, grid_size=readout_grid)
        #: nodes of a continuous readout law's quantile grid before folding (None: a discrete law);
        #: :meth:`refined` doubles them
        self.readout_grid_nodes = None if readout_law.law is None else int(readout_law.values.size)
        if readout_law.law is not None and readout_law.law.symmetric and np.all(readout_law.values >= 0):
            # a grid folded already (e.g. the law of another model): the grid it was folded from
            self.readout_grid_nodes = 2 * self.readout_grid_nodes - int(np.any(readout_law.values == 0))
        given_law, readout_law = readout_law, folded_readout_law(readout_law)
        super().__init__(activation, gammas, delta, weight_prior=weight_prior, readout_law=readout_law,
                         readout_grid=None, s_grid=report_grid, drop_hermite=drop_hermite,
                         unit_variance=unit_variance, tilt_split=tilt_split, output_channel=output_channel)
        if self.L < 2:
            raise ValueError("DeepFrontModel needs at least two hidden layers")
        self.panel_nodes = int(panel_nodes)
        self._init_kw = dict(activation=list(self.activations), gammas=tuple(self.gammas), delta=self.delta,
                             weight_prior=list(self.weight_priors), readout_law=given_law,
                             tilt_split=self.tilt_split, output_channel=self.output_channel, report_grid=report_grid,
                             neuron_grid=neuron_grid)
        #: Gaussian, uniform and continuum power-law readouts (without a fixed ``readout_grid``): the last layer's
        #: neurons have a front in |v| too (:func:`readout_front_rule`; for Gaussian readouts the rules of the fronts
        #: in s, |v| and s being both folded standard Gaussians); ``readout_values`` are then only the grid the
        #: profiles are reported on
        self.readout_front = readout_front_law(readout_law)
        self._readout_density = readout_law.law if self.readout_front else None
        core_law = self.readout_law
        if self.readout_front:  # a placeholder of the rules' size: rules() sets the readout labels
            from priors.readout_laws import discrete_readout_law

            core_law = discrete_readout_law(np.ones(2 * self.panel_nodes + 2), np.full(2 * self.panel_nodes + 2,
                                            1.0 / (2 * self.panel_nodes + 2)), exact=False)
        # the working model: the same equations, its label rules replaced at every evaluation
        self.core = DeepLinearModel(list(self.activations), tuple(self.gammas), self.delta,
                                    weight_prior=list(self.weight_priors), readout_law=core_law,
                                    s_grid=2 * self.panel_nodes + 2, tilt_split=self.tilt_split,
                                    output_channel=self.output_channel)
        #: the layers with a front, in the order of the packed fronts: the inner layers, and L with a readout front
        self.front_layers = tuple(range(1, self.L + int(self.readout_front)))
        self.n_fronts = len(self.front_layers)
        #: the largest value of every front (none of its layer's neurons learned), shape (n_fronts,)
        self.front_max = np.array([FRONT_MAX] * (self.L - 1) + ([readout_front_max(self._readout_density)]
                                                               if self.readout_front else []))
        self.front_max.setflags(write=False)
        self._rules = None
        self._fronts = None
        self._flat_rules = None
        self.neuron_u, self.neuron_s = neuron_quantiles() if neuron_grid is None else neuron_quantiles(neuron_grid)

    # ------------------------------------------------------------------ rules
    @property
    def s_grid_rule(self) -> str:
        """``fronts:<n> (…)``: the rule (root attribute ``s_grid_rule`` of a sweep)."""
        readout = (f" and of the readout front in |v| (profiles reported on {self.readout_values.size} values of |v|)"
                   if self.readout_front else "")
        return (f"fronts:{self.panel_nodes} (Gauss rules of {self.panel_nodes} nodes on each side of every inner "
                f"layer's specialization front{readout}, equal-potential fronts; profiles reported on "
                f"gauss-hermite:{self.n_s})")

    def rules(self, fronts):
        """Set the working model's rules for ``fronts`` (shape (n_fronts,)) and return them:
        a list of ``(nodes, weights, side)`` per layer of :attr:`front_layers` (:meth:`_rule`: :func:`front_rule`, or
        :func:`readout_front_rule` for the readout front)."""
        fr = tuple(float(min(max(f, 0.0), top)) for f, top in zip(np.atleast_1d(fronts), self.front_max))
        if fr != self._fronts:
            rules = [self._rule(i, f) for i, f in enumerate(fr)]
            core = self.core
            inner = rules[:self.L - 1]
            core.label_weights = [np.ones(1)] + [r[1] for r in inner] + [self.readout_weights]
            core.label_squares = [np.ones(1)] + [r[0] ** 2 for r in inner] + [self.v2]
            if self.readout_front:
                nodes, weights, _ = rules[self.L - 1]
                core.label_weights[self.L], core.label_squares[self.L] = weights, nodes ** 2
                core.readout_values, core.readout_weights, core.v2 = nodes, weights, nodes ** 2
            core.s_values = rules[0][0]
            self._rules, self._fronts = rules, fr
            self._flat_rules = None  # the compiled map's label arrays, built when first needed
        return self._rules

    def _rule(self, i, f):
        """The rule of front ``i`` (:attr:`front_layers`) at ``f``: :func:`front_rule`, or
        :func:`readout_front_rule` for the readout front."""
        if self.readout_front and i == self.L - 1:
            return readout_front_rule(self._readout_density, f, self.panel_nodes)
        return front_rule(f, self.panel_nodes)

    def _rule_slope(self, f0, i=0):
        """``(d nodes/df, d weights/df)`` of the rule of front ``i`` at ``f0``: a central difference of
        :meth:`_rule` (one-sided at the ends of ``[0, front_max[i]]``), step 1e-6 relative."""
        eps = 1e-6 * max(1.0, f0)
        lo, hi = max(f0 - eps, 0.0), min(f0 + eps, float(self.front_max[i]))
        n_lo, w_lo, _ = self._rule(i, lo)
        n_hi, w_hi, _ = self._rule(i, hi)
        return (n_hi - n_lo) / (hi - lo), (w_hi - w_lo) / (hi - lo)

    @property
    def size(self) -> int:
        """Length of the packed vector: the ``n_fronts`` fronts and the overlaps on the front rules."""
        return self.n_fronts + self.core.size

    def split(self, x):
        """``(fronts (n_fronts,), packed overlaps of the working model)`` (of every row for a batch
        ``(..., size)``)."""
        x = np.asarray(x, dtype=float)
        if x.shape[-1:] != (self.size,):  # e.g. a stored point of another packing (an older version's checkpoint)
            raise ValueError(f"overlaps: expected {self.size} packed values (fronts first), got shape {x.shape}")
        return x[..., :self.n_fronts], x[..., self.n_fronts:]

    # ------------------------------------------------------------------ map
    def neuron_potentials(self, alpha, c, ell, nodes):
        """``φ(j) = ∂f/∂p(j)`` for nodes ``j`` of inner layer ``ell`` at fixed order parameters.

        Parameters
        ----------
        alpha : float
        c : dict
            :meth:`DeepLinearModel.conjugates` of the working model at the point.
        ell : int
            A layer with a front (:attr:`front_layers`): an inner layer, or L with a readout front.
        nodes : sequence of int
            Indices on the layer's rule (0, 1: the probes).

        Returns
        -------
        ndarray, shape (len(nodes),), or (B, len(nodes)) for the conjugates of a batch of B points
            The first-order change of f per unit mass of neurons added at the node, in its state
            (docs/deep_linear.md §11): the energetic part ``−(∂mmse/∂p)/(2D)`` with
            ``∂K*/∂p(j) = G_ℓ(j) U_ℓ(j)`` (``U_ℓ``: the kernel's back-propagated label weight, ``B_ℓ = g_ℓ' U_ℓ``),
            the entropic terms of the rows and columns labelled by ``j``, and the products whose tilt
            runs through layer ℓ (``∂f/∂t = w_P gain/2α`` per entry, ``∂t/∂p(j) = Q_T(·, j) Q_B(j, ·)``).
            The free entropy's differences in the node weight give the same to 1e-6 relative
            (tests/test_deep_fronts.py).
        """
        core = self.core
        L = self.L
        Q, G, D, U = c["Q"], c["G"], c["D"], c["U"]
        nodes = np.asarray(nodes, dtype=int)
        p = core.label_weights
        dgap = self.A(L + 1, ell + 1) * core.label_squares[ell][nodes] * self.g_one[ell - 1] - G[ell][..., nodes] * U[ell][..., nodes]
        phi = -dgap / (2.0 * np.asarray(D)[..., None])
        for X in self.keys:
            a, b = X
            rows, cols = a == ell, b - 1 == ell
            if not (rows or cols):
                continue
            scale = core.entries[X] / alpha
            if rows:
                phi = phi + scale * (self._entropic_term(c, X, (Ellipsis, nodes, slice(None))) @ p[b - 1])
            if cols:
                phi = phi + scale * (p[a] @ self._entropic_term(c, X, (Ellipsis, slice(None), nodes)))
        for P in self.products:
            T, Bk = core.factors[P]
            if T[1] - 1 != ell or P not in c["gain"]:
                continue
            g = c["gain"][P] * (c["t"][P] < 1.0)  # t is clipped at 1
            weighted = (p[P[0]][:, None] * g) * p[P[1] - 1][None, :]
            # Σ_{ρ,κ} p p gain Q_T(ρ, j) Q_B(j, κ)
            phi = phi + core.entries[P] / (2.0 * alpha) * np.einsum("...rk,...rj,...jk->...j", weighted,
                                                                   Q[T][..., :, nodes], Q[Bk][..., nodes, :])
        return phi

    def _entropic_term(self, c, X, index):
        """The entropic term of matrix ``X`` (``ψ_P(Q̂) − QQ̂/2``, or ``r(1 − Q)/2 − ι(τ + r) + ι(τ)``
        for a product) on the groups ``index`` only."""
        Q, hat = c["Q"][X][index], c["hat"][X][index]
        if X[0] == X[1]:
            return self.weight_priors[X[0] - 1].free_entropy(hat) - Q * hat / 2.0
        ch = self.core.channels[X]
        tau = c["tau"][X][index]
        return hat * (1.0 - Q) / 2.0 - iota_of(ch, tau + hat) + iota_of(ch, tau)

    def _probe_potentials(self, alpha, c):
        """``(Δφ_ℓ, dΔφ_ℓ/d(f²), roots)`` of every inner layer, each of shape (B,) for conjugates of a batch
        of B points (:meth:`neuron_potentials`, :meth:`_probe_roots`)."""
        out = []
        for ell in self.front_layers:
            phi = self.neuron_potentials(alpha, c, ell, (0, 1))
            G = c["G"][ell]
            slope = self.A(self.L + 1, ell + 1) * (G[..., 1] - G[..., 0]) / (2.0 * c["D"])
            out.append((phi[..., 1] - phi[..., 0], slope, self._probe_roots(c, ell)))
        return out

    def _probe_roots(self, c, ell) -> np.ndarray:
        """Where the probes of inner layer ``ell`` are, per point of the batch (int array): 0 on two roots
        (the front equation applies), −1 both on the small root, +1 both on the large root."""
        pre = c["c"][ell]
        large = np.max(c["Q"][(ell, ell)][..., 0, :], axis=-1) > PHASE_THRESHOLD
        return np.where(pre[..., 1] - pre[..., 0] > _PROBE_FLOOR, 0, np.where(large, 1, -1))

    def _reseed(self, Q, ell, probe, source, rows):
        """Copy the rows and columns of node ``source`` of inner layer ``ell`` onto node ``probe``, at the
        batch points ``rows`` (bool, shape (B,))."""
        if not np.any(rows):
            return
        for (a, m), q in Q.items():
            if a == ell:
                q[rows, probe, :] = q[rows, source, :]
            if m - 1 == ell:
                q[rows, :, probe] = q[rows, :, source]

    def _new_fronts(self, alpha, c):
        """The next fronts, shape (B, n_fronts) for conjugates of a batch of B points: a Newton step of
        ``Δφ_ℓ = 0`` in ``f_ℓ²`` (``dΔφ/d(f²)`` is explicit at fixed neuron states, module docstring). Where
        both probes sit on one root, the probe that lost its root is re-seeded (in ``c["new"]``) from the
        nearest node on its side of the front (it returns to its root if that root exists there) and, if
        that node is on the same root too, the front moves towards it (up when no neuron near the front
        is on the large root, down when none is on the small one)."""
        n = self.panel_nodes
        new = np.empty(np.shape(c["D"]) + (self.n_fronts,))
        for i, (dphi, slope, roots) in enumerate(self._probe_potentials(alpha, c)):
            ell = i + 1
            f = self._fronts[i]
            pre = c["c"][ell]
            u = f * f
            steep = slope > 1e-14
            step = np.clip(-dphi / np.where(steep, slope, 1.0), -(1.0 + u), 1.0 + u)
            top = float(self.front_max[i])
            front = np.minimum(np.sqrt(np.where(steep, np.maximum(u + step, 0.0), u)), top)
            # both probes on the small root: re-seed the large-root probe from the smallest node above
            # the front, or move the front up
            first_high = 2 + n
            both_small = roots < 0
            reseed = both_small & (pre[..., first_high] - pre[..., 0] > _PROBE_FLOOR)
            self._reseed(c["new"], ell, 1, first_high, reseed)
            front = np.where(reseed, f, np.where(both_small, min(f + 0.05 * (1.0 + f), top), front))
            # both on the large root: re-seed the small-root probe from the largest node below, or move down
            last_low = 1 + n
            both_large = roots > 0
            reseed = both_large & (f > 1e-12) & (pre[..., 1] - pre[..., last_low] > _PROBE_FLOOR)
            self._reseed(c["new"], ell, 0, last_low, reseed)
            front = np.where(reseed, f, np.where(both_large, max(f - 0.25 * (1.0 + f), 0.0), front))
            new[..., i] = front
        return new

    def project(self, x) -> np.ndarray:
        """``x`` with every front clipped to ``[0, front_max]`` (:attr:`front_max`, the domain of the rules;
        Newton steps of the continuation may leave it where a front sits at an end)."""
        y = np.array(x, dtype=float)
        y[:self.n_fronts] = np.clip(y[:self.n_fronts], 0.0, self.front_max)
        return y

    def lower_bounds(self, x):
        """The overlaps of the packed ``x`` (every entry after the fronts) and their lower bound 0: ``(indices,
        lower)`` (:func:`replica.continuation.problem.lower_bounds`). A curve that leaves a sheet at a branch point
        opens some of the sheet's zero overlaps linearly in α (two hidden layers, Gaussian readouts, Δ = 0.1: the
        small-root overlaps of layer 1, ≈ 1.4 (α − 2.0274458)); followed back, it ends where they reach 0. The
        fronts are not declared: a front at 0 (every neuron of its layer on the large root) is a point of the same
        curve, not of its host."""
        idx = np.arange(self.n_fronts, np.size(x))
        return idx, np.zeros(idx.size)

    def without_overlaps(self, x, mask) -> np.ndarray:
        """Packed ``x`` with the overlaps selected by ``mask`` set to 0 and the front of every inner
        layer left with no learned neuron moved to :data:`FRONT_MAX`: the start of the host branch at a
        bifurcation (:func:`replica.continuation.events.host_point`).

        Parameters
        ----------
        x : ndarray, shape (size,)
        mask : ndarray of bool, shape of :attr:`DeepFrontState.overlaps` (the packed overlaps without
            the fronts)
        """
        fronts, q = self.split(x)
        q = np.where(np.asarray(mask, bool), 0.0, q)
        fronts = np.array(fronts, dtype=float)
        Q = self.core.unpack(q)
        for ell in self.front_layers:
            # the readout front orders the rows of the products of the last layer as well (a branch that learns
            # only products keeps it)
            rows = [Q[k] for k in Q if k[0] == ell] if ell == self.L else [Q[(ell, ell)]]
            if not any(np.any(r > 0.0) for r in rows):
                fronts[ell - 1] = self.front_max[ell - 1]
        return np.concatenate([fronts, q])

    def update(self, alpha, x):
        """The map on the packed vector: the working model's map on the overlaps (rules at the
        current fronts) and the Newton step of every front towards equal potential."""
        return self._update_rows(alpha, np.asarray(x, dtype=float)[None, :])[0]

    def update_many(self, alpha, X):
        """:meth:`update` of every row of ``X`` (shape (B, size)), vectorized over the rows that share
        their fronts (the columns of a finite-difference Jacobian but the fronts' own): shape (B, size),
        NaN rows where the map is not finite."""
        return self._grouped(alpha, X, near=False)

    def update_near(self, alpha, X):
        """:meth:`update_many` for the points of a forward-difference Jacobian: ``X[0]`` and points next to it
        (shape (B, size)). The rows at the fronts of ``X[0]`` have their product channels to first order
        about ``X[0]`` (:func:`replica.models._deep_kernels.front_map_rows`): each differs from :meth:`update`
        by the square of its distance from ``X[0]``, as much as the forward difference itself, at a fraction
        of the cost. Where the compiled map does not apply, :meth:`update_many`."""
        return self._grouped(alpha, X, near=True)

    def _grouped(self, alpha, X, near):
        X = np.atleast_2d(np.asarray(X, dtype=float))
        fronts = np.clip(X[:, :self.n_fronts], 0.0, self.front_max)
        groups, which = np.unique(fronts, axis=0, return_inverse=True)
        which = np.ravel(which)
        out = np.empty_like(X)
        for g in range(groups.shape[0]):
            rows = np.flatnonzero(which == g)
            out[rows] = self._update_rows(alpha, X[rows], near=near and g == which[0])
        return out

    #: evaluate the map with the compiled kernel of :mod:`replica.models._deep_kernels` where it applies
    #: (Gaussian labels, and neither :meth:`_new_fronts` nor :meth:`_without_ghosts` overridden by a subclass);
    #: False: the NumPy map of :meth:`DeepLinearModel.conjugates` and :meth:`_new_fronts` (the reference the
    #: kernel is tested against, tests/test_deep_kernels_map.py)
    compiled_map = True

    #: the methods whose formulas the compiled kernel replaces: a subclass or an instance that overrides one
    #: of them gets the NumPy map
    _KERNEL_REPLACES = ("_new_fronts", "_without_ghosts", "neuron_potentials", "_entropic_term",
                        "_probe_potentials", "_probe_roots", "_reseed")

    def _compiled_applies(self) -> bool:
        cls = type(self)
        return (self.compiled_map and self.core._gaussian and type(self.core) is DeepLinearModel
                and all(getattr(cls, name) is getattr(DeepFrontModel, name) and name not in self.__dict__
                        for name in self._KERNEL_REPLACES))

    def _update_rows(self, alpha, X, near=False):
        """:meth:`update_many` of rows with equal fronts (``near``: :meth:`update_near` of them, the first
        row being the base point)."""
        fronts, q = self.split(X)
        self.rules(fronts[0])
        if self._compiled_applies():
            return self._compiled_rows(alpha, q, near)
        c = self.core.conjugates(alpha, q)
        finite = _finite_rows(c)
        new_fronts = np.broadcast_to(self._new_fronts(alpha, c), fronts.shape)
        out = np.concatenate([new_fronts, self.core.pack(self._without_ghosts(c["new"]))], axis=1)
        return np.where(finite[:, None], out, np.nan)

    def _kernel_arguments(self):
        """``(static, flat rules)`` of the compiled kernels: the layout, typed lists of the compiled activations,
        priors and product channels, ``g(1)`` per layer, the kernels and the Gauss–Legendre rule (built once per
        model), and the label weights, squares and sides of the current rules (built once per rule)."""
        core = self.core
        static = self.__dict__.get("_kernel_static")
        if static is None:
            from numba.typed import List  # lazy: start-up (docs/architecture.md)

            from hciz.compiled import _GL16_W, _GL16_X, compiled_rectangular
            from priors.compiled import compiled_prior

            from ..activations import compiled_activation
            from ._deep_kernels import BASE_ROWS, front_map_rows, layout_of, state_row

            def typed(items):  # a typed list: one compiled specialization whatever the depth
                out = List()
                for item in items:
                    out.append(item)
                return out

            static = self._kernel_static = (
                layout_of(core),
                typed(compiled_activation(a) for a in self.activations),
                typed(compiled_prior(p) for p in self.weight_priors),
                typed(compiled_rectangular(core.channels[P]) for P in core.products),
                np.ascontiguousarray(self.g_one, dtype=float), (front_map_rows, state_row, BASE_ROWS),
                (_GL16_X, _GL16_W))
        if self._flat_rules is None:
            sides = [np.zeros(1, np.int64)] + [np.asarray(r[2], np.int64) for r in self._rules[:self.L - 1]] + \
                [np.asarray(self._rules[self.L - 1][2], np.int64) if self.readout_front
                 else np.zeros(self.readout_weights.size, np.int64)]
            self._flat_rules = (np.ascontiguousarray(np.concatenate(core.label_weights), dtype=float),
                                np.ascontiguousarray(np.concatenate(core.label_squares), dtype=float),
                                np.ascontiguousarray(np.concatenate(sides)))
        return static, self._flat_rules

    def _compiled_rows(self, alpha, q, near=False, base=None):
        """:meth:`_update_rows` by :func:`replica.models._deep_kernels.front_map_rows` (rules already set; the
        kernel's static arguments are built once per model, outside this hot path). ``near``: the kernel's
        mode 1 (``base`` receives the first row's channel values when given), or with ``base`` and
        ``near == 2`` every row linear about those values."""
        static, (lw, lsq, lside) = self._kernel_arguments()
        (keys, kfloat, order, Atab, loff), acts, priors, rects, g_one, (front_map_rows, _, base_rows), \
            (gl_x, gl_w) = static
        q = np.ascontiguousarray(q, dtype=float)
        out = np.empty((q.shape[0], self.n_fronts + q.shape[1]))
        mode = int(near)
        if base is None:
            base = np.full((base_rows, q.shape[1]), np.nan)
            mode = min(mode, 1)
        front_map_rows(float(alpha), float(self.output_channel.delta), q, np.asarray(self._fronts, dtype=float),
                       self.panel_nodes, self.front_max, _PROBE_FLOOR, PHASE_THRESHOLD, keys, kfloat, order, Atab, loff,
                       lw, lsq, lside, acts, priors, rects, g_one, gl_x, gl_w, mode, base, out)
        return out

    def _compiled_state(self, alpha, q):
        """``(mmse, f, conjugates, tilt inverses)`` of packed overlaps ``q`` on the current rules by
        :func:`replica.models._deep_kernels.state_row` (the packed conjugates and ``τ``, shape (p,))."""
        static, (lw, lsq, _) = self._kernel_arguments()
        (keys, kfloat, order, Atab, loff), acts, priors, rects, g_one, (_, state_row, _), (gl_x, gl_w) = static
        q = np.ascontiguousarray(q, dtype=float)
        hat, tau = np.empty(q.size), np.empty(q.size)
        mmse, f = state_row(float(alpha), float(self.output_channel.delta), q, keys, kfloat, order, Atab, loff,
                            lw, lsq, acts, priors, rects, g_one, gl_x, gl_w, hat, tau)
        return float(mmse), float(f), hat, tau

    def near_map(self, alpha, x):
        """The map about the point ``x`` for Jacobian–vector products: a function ``f(alpha', Z)`` of points
        ``Z`` (shape (size,) or (B, size)) next to ``x`` at ``alpha'`` next to ``alpha``, whose product channels
        are evaluated to first order about those of ``x`` (:func:`replica.models._deep_kernels.front_map_rows`,
        mode 2): each value differs from :meth:`update` by the square of its distance from ``(alpha, x)``, as
        much as a forward difference's own error, at a fraction of the cost (L = 4: 0.45 → 0.07 ms). One
        evaluation of ``x`` builds it; where the compiled map does not apply, ``f`` is :meth:`update_many`.

        Raises
        ------
        ValueError
            ``x`` not of shape (size,).
        """
        x = np.asarray(x, dtype=float)
        if x.shape != (self.size,):
            raise ValueError(f"near_map: expected a packed point of {self.size} values, got shape {x.shape}")
        fronts, q = self.split(x)
        self.rules(fronts)
        if not self._compiled_applies():
            return lambda a, Z: self.update_many(a, np.atleast_2d(Z)).reshape(np.shape(Z))
        base_rows = self._kernel_arguments()[0][5][2]
        base = np.full((base_rows, q.size), np.nan)  # NaN: every entry evaluated in full
        self._compiled_rows(alpha, q[None, :], near=1, base=base)
        # the label weights and squares to first order in the fronts as well: a product moves every front a
        # little, and the Gauss rules of new fronts cost more than the kernel (the model's rules stay those of x)
        static, (lw0, lsq0, lside) = self._kernel_arguments()
        (keys, kfloat, order, Atab, loff), acts, priors, rects, g_one, (front_map_rows, _, _), (gl_x, gl_w) = static
        fronts0 = np.array(self._fronts, dtype=float)
        layer = np.full(lw0.size, -1, dtype=int)  # the front each label's rule follows (−1: none)
        dlw, dlsq = np.zeros(lw0.size), np.zeros(lw0.size)
        for i, (f0, (nodes0, _, _)) in enumerate(zip(fronts0, self._rules)):
            dn, dw = self._rule_slope(float(f0), i)
            sl = slice(loff[i + 1], loff[i + 2])
            layer[sl], dlw[sl], dlsq[sl] = i, dw, 2.0 * nodes0 * dn
        moved = layer >= 0
        delta = float(self.output_channel.delta)
        nf = self.n_fronts

        def f(a, Z):
            Z = np.asarray(Z, dtype=float)
            if Z.ndim == 1:  # one point (a Jacobian–vector product): no grouping
                fr = np.clip(Z[:nf], 0.0, self.front_max)
                shift = np.where(moved, (fr - fronts0)[layer], 0.0)
                out = np.empty((1, Z.size))
                front_map_rows(float(a), delta, np.ascontiguousarray(Z[None, nf:]), fr, self.panel_nodes, self.front_max,
                               _PROBE_FLOOR, PHASE_THRESHOLD, keys, kfloat, order, Atab, loff, lw0 + shift * dlw,
                               lsq0 + shift * dlsq, lside, acts, priors, rects, g_one, gl_x, gl_w, 2, base, out)
                return out[0]
            return np.stack([f(a, z) for z in Z.reshape(-1, Z.shape[-1])]).reshape(Z.shape)
        return f

    def _without_ghosts(self, Q):
        """``Q`` with the large-root side of every layer whose front is at :data:`FRONT_MAX` set to 0.

        Such a layer has no neuron on the large root: its large-root panel carries a mass < 2e-17,
        and neurons there that stayed specialized would make a sheet of the universal point's error
        that counts as learned (a ghost). Rows and columns labelled by them are zeroed, the probe included."""
        dead = [ell for ell in self.front_layers if self._fronts[ell - 1] >= self.front_max[ell - 1]]
        if not dead:
            return Q
        out = {}
        for key, q in Q.items():
            q = np.array(q, dtype=float)
            ell, m = key
            for layer in dead:
                high = self._rules[layer - 1][2] == 1
                if ell == layer:
                    q[..., high, :] = 0.0
                if m - 1 == layer:
                    q[..., :, high] = 0.0
            out[key] = q
        return out

    # ------------------------------------------------------------------ per-neuron maps
    @property
    def grids(self) -> dict:
        """:attr:`DeepLinearModel.grids` and the axes of the per-neuron maps: ``neuron_quantiles`` (n_q,;
        :func:`replica.models._common.neuron_quantiles`), ``neuron_effective_readouts`` (``|s|`` there)
        and one copy ``neuron_quantiles_<ℓ>`` per inner layer ℓ = 2 … L − 1 (rows of its map)."""
        out = dict(super().grids)
        out["neuron_quantiles"] = self.neuron_u
        out["neuron_effective_readouts"] = self.neuron_s
        for ell in range(2, self.L):
            out[f"neuron_quantiles_{ell}"] = self.neuron_u
        return out

    @property
    def dataset_axes(self) -> dict:
        """:attr:`DeepLinearModel.dataset_axes` and those of ``neuron_overlap_layer_<ℓ>``: (neuron quantile)
        for ℓ = 1, (quantile of layer ℓ, quantile of layer ℓ − 1) for inner layers, (readout value,
        quantile of layer L − 1) for the last layer."""
        axes = dict(super().dataset_axes)
        axes["neuron_overlap_layer_1"] = ("neuron_quantiles",)
        for ell in range(2, self.L + 1):
            rows = "readout_values" if ell == self.L else f"neuron_quantiles_{ell}"
            axes[f"neuron_overlap_layer_{ell}"] = (rows, "neuron_quantiles")
        return axes

    def neuron_maps(self, Q, rules=None, fronts=None) -> dict:
        """Per-neuron overlaps ``{ℓ: Q_ℓ}`` from the overlaps ``Q`` on the front rules ``rules`` at the fronts
        ``fronts`` (default: the current ones, :meth:`rules`).

        Every inner layer's neurons are ordered by the strength of their effective readout: the neuron
        quantile ``u`` (the fraction of the layer's neurons with a stronger readout) sits at
        ``|s| = √2 erfc⁻¹(u)`` (:func:`replica.models._common.neuron_quantiles`), and ``Q`` is carried
        there piecewise linearly in s from the nodes on the same side of the layer's front (the jump at
        the front is kept, not smeared).

        Returns
        -------
        dict
            ``1``: shape (n_q,), the overlap of each first-layer neuron; ``ℓ`` = 2 … L − 1: shape (n_q, n_q),
            the weights between the layer-ℓ neuron at quantile ``u_ℓ`` (rows) and the layer-(ℓ−1) neuron at
            ``u_{ℓ−1}`` (columns); ``L``: shape (n_readout, n_q), readout value × layer-(L−1) quantile.
        """
        rules = self._rules if rules is None else rules
        fronts = self._fronts if fronts is None else fronts
        out = {}
        for ell in range(1, self.L + 1):
            q = np.asarray(Q[(ell, ell)], dtype=float)
            for axis, layer in ((0, ell), (1, ell - 1)):
                if layer in self.front_layers:
                    target = self.readout_values if layer == self.L else self.neuron_s
                    nodes, _, side = rules[layer - 1]
                    q = _map_axis(q, axis, target, (target >= fronts[layer - 1]).astype(int), nodes, side)
            out[ell] = q.ravel() if ell == 1 else q
        return out

    # ------------------------------------------------------------------ states
    def _report(self, key, q, rules=None, fronts=None):
        """A profile of the rules ``rules`` at ``fronts`` (default: the working ones) carried onto the
        reporting grid (rows, then columns)."""
        rules = self._rules if rules is None else rules
        fronts = self._fronts if fronts is None else fronts
        ell, m = key
        for axis, layer in ((0, ell), (1, m - 1)):
            if layer in self.front_layers:
                target = self.readout_values if layer == self.L else self.s_values
                nodes, _, side = rules[layer - 1]
                q = _map_axis(q, axis, target, (target >= fronts[layer - 1]).astype(int), nodes, side)
        return q

    def _reports(self, profiles, rules, fronts, shapes=None) -> _Reported:
        """:meth:`_report` of every profile of ``profiles`` (``{key: array}``, reshaped to ``shapes[key]``
        when given), at the first access."""
        def build():
            return {k: self._report(k, q if shapes is None else np.asarray(q, float).reshape(shapes[k]),
                                    rules, fronts) for k, q in profiles.items()}
        return _Reported(build)

    def _group_mass(self, key):
        """``p(row) p(column)`` of every group of the matrix ``key`` on the working rules."""
        p = self.core.label_weights
        return np.outer(p[key[0]], p[key[1] - 1])

    def _mass_weighted(self, Q):
        return {k: np.asarray(q, float) * np.sqrt(self._group_mass(k)) for k, q in Q.items()}

    def _learned(self, Q):
        """``(learned layers, extra products)`` on the working rules: a matrix is learned when the
        groups with overlap above the phase threshold carry a mass of at least :data:`LEARNED_MASS`
        (probes and the vanishing mass beyond :data:`FRONT_MAX` never count)."""
        def learned(key):
            return float(np.sum(self._group_mass(key) * (Q[key] > PHASE_THRESHOLD))) >= LEARNED_MASS
        layers = {ell for ell in range(1, self.L + 1) if learned((ell, ell))}
        extra = any(learned(P) and not set(range(P[1], P[0] + 1)) <= layers for P in self.products)
        return tuple(sorted(layers)), bool(extra)

    def state(self, alpha, x) -> DeepFrontState:
        """All order parameters, error and free entropy at packed point ``x`` (profiles reported on
        the fixed grid, averages, phase and error on the front rules)."""
        fronts, q = self.split(x)
        self.rules(fronts)
        core = self.core
        Q = {k: np.clip(v, 0.0, 1.0).copy() for k, v in core.unpack(q).items()}
        if self._compiled_applies():
            mmse, f, hat, tau = self._compiled_state(alpha, q)  # NaN where the conjugates are not finite
            c = {"hat": core.unpack(hat), "tau": core.unpack(tau), "mmse": mmse}
        else:
            c = core.conjugates(alpha, q)
            f = core.free_entropy(alpha, Q, c["hat"])
        means = {}
        for X in self.keys:
            pr = core.label_weights[X[0]] * (core.label_squares[self.L] if X[0] == self.L else 1.0)
            means[X] = float(pr @ Q[X] @ core.label_weights[X[1] - 1] / pr.sum())
        rules, fronts = self._rules, self._fronts
        rep = self._reports({X: Q[X] for X in self.keys}, rules, fronts)
        hats = self._reports({X: c["hat"][X] for X in self.keys}, rules, fronts)
        taus = self._reports({P: c["tau"][P] for P in self.products}, rules, fronts, core.shapes)
        st = DeepFrontState(float(alpha), rep, hats, taus, float(c["mmse"]), float(f),
                            self.mutual_information(alpha, f), list(self.keys), means,
                            fronts=np.array(self._fronts), learned=self._learned(Q),
                            rule_overlaps=core.pack(self._mass_weighted(Q)),
                            neuron_source=functools.partial(self.neuron_maps, Q, self._rules, self._fronts))
        return st

    def phase(self, state, *, threshold=PHASE_THRESHOLD) -> str:
        """Name of what a state has learned, read on the front rules (:func:`phase_label`)."""
        if threshold == PHASE_THRESHOLD and isinstance(state, DeepFrontState):
            return phase_label(*state.learned)
        return super().phase(state, threshold=threshold)

    # ------------------------------------------------------------------ starts and solves
    def pack_start(self, fronts, learned_layers, value=INFORMED_OVERLAP):
        """Packed start: fronts, and ``value`` on the large-root side of every learned layer's
        neurons (products where all their factors are learned), 0 elsewhere."""
        fronts = np.clip(np.asarray(fronts, float), 0.0, self.front_max)
        rules = self.rules(fronts)
        learned = set(learned_layers)
        n_readout = self.core.n_readout
        masks = [np.ones(1)]
        for ell in self.front_layers:
            masks.append((rules[ell - 1][2] == 1).astype(float) if ell in learned else np.zeros(rules[ell - 1][0].size))
        if not self.readout_front:
            masks.append(np.ones(n_readout) if self.L in learned else np.zeros(n_readout))
        q = {}
        for (ell, m) in self.keys:
            if set(range(m, ell + 1)) <= learned:
                q[(ell, m)] = value * np.outer(masks[ell] if ell < self.L or self.readout_front else np.ones(n_readout),
                                               masks[m - 1] if m > 1 else np.ones(1))
        return np.concatenate([fronts, self.core.pack(q)])

    def starts(self) -> dict:
        """``informed`` (every layer on the large root, fronts at 0, a readout front at the median of |v|; both
        directions), and for every
        depth ``k < L`` ``layer_1`` / ``layers_1_to_k`` (fronts of layers ≤ k at the median of |s|,
        the others at :data:`FRONT_MAX`; downwards). The fronts then move to equal potential."""
        median = 0.6744897501960817
        # the readout front starts at the median of |v|: at v = 0 the last layer has no signal (U_L = v²), so a
        # front there leaves its large-root probe on no root and its first nodes above it unlearned
        informed = np.zeros(self.n_fronts)
        if self.readout_front:  # the median of |v|
            density = self._readout_density
            informed[-1] = float(density.ppf(0.75) if density.symmetric else density.ppf(0.5))
        out = {"informed": (self.pack_start(informed, range(1, self.L + 1)), "both")}
        for depth in range(1, self.L):
            name = "layer_1" if depth == 1 else f"layers_1_to_{depth}"
            fr = [median if ell <= depth else self.front_max[ell - 1] for ell in self.front_layers]
            out[name] = (self.pack_start(fr, range(1, depth + 1)), "down")
        return out

    def _result(self, alpha, res: FixedPointResult) -> FixedPointResult:
        res.info["state"] = self.state(alpha, res.x)
        return res

    def universal_point(self) -> np.ndarray:
        """``Q ≡ 0`` with every front at :data:`FRONT_MAX` (an exact fixed point of :meth:`update`)."""
        return np.concatenate([self.front_max, np.zeros(self.core.size)])

    def solve_universal(self, alpha) -> FixedPointResult:
        """``Q ≡ 0``: only the linear path is learned (exact, ``g_ℓ'(0) = 0``)."""
        res = FixedPointResult(self.universal_point(), True, "exact", STATUS_MESSAGES["exact"], 0, 0.0, 0.0,
                               "universal")
        return self._result(alpha, res)

    def solve_from(self, alpha, overlaps, warm=None, *, start="", **solver_options) -> FixedPointResult:
        """Damped iteration (:func:`replica.engine.solve_fixed_point`) from a packed start or ``warm``.

        Raises
        ------
        ValueError
            A packed start of the wrong length (or a dict: give :meth:`pack_start` output).
        """
        x0 = np.asarray(warm if warm is not None else overlaps, dtype=float)
        if x0.shape != (self.size,):
            raise ValueError(f"overlaps: expected {self.size} packed values (fronts first), got shape {x0.shape}")
        from ..continuation.operators import dense_jacobians  # lazy: start-up (docs/architecture.md)

        solver_options = {"polish_below": POLISH_BELOW if dense_jacobians(self.size, True) else None,
                          **solver_options}
        if solver_options["polish_below"] is not None:
            solver_options.setdefault("jacobian", lambda x: self._jacobian(alpha, x))
        res = solve_fixed_point(lambda x: self.update(alpha, x), x0, start=start, **solver_options)
        if res.status == "nan":
            return res
        return self._result(alpha, res)

    def _jacobian(self, alpha, x) -> np.ndarray:
        """Forward-difference Jacobian of :meth:`update` at ``x`` from one :meth:`update_many` call (the
        Newton polish of :meth:`solve_from`), shape (size, size)."""
        from ..continuation.jacobians import jacobian  # lazy: start-up (docs/architecture.md)

        return jacobian(self, alpha, x, order=1, indices=np.arange(self.size))

    # ------------------------------------------------------------------ error estimate
    def refined(self) -> "DeepFrontModel":
        """The same model with twice the nodes on each side of every front and, for a continuous readout
        law, on twice the nodes of its quantile grid (built once).

        Raises
        ------
        ValueError
            ``panel_nodes`` > 20 (the rules have at most 40 nodes per side).
        """
        if getattr(self, "_refined_model", None) is None:
            kw = dict(self._init_kw)
            if self.readout_grid_nodes is not None and not self.readout_front:  # a law on its grid: twice that
                from priors.readout_laws import continuous_readout_law

                n = 2 * self.readout_grid_nodes
                kw["readout_law"] = continuous_readout_law(self.readout_law.law, n, default_size=n)
            self._refined_model = DeepFrontModel(panel_nodes=2 * self.panel_nodes, **kw)
            self._refined_model.compiled_map = self.compiled_map
        return self._refined_model

    def interpolate_to(self, fine, x) -> np.ndarray:
        """Packed point ``x`` carried onto the rules of ``fine`` at the same fronts (each profile
        interpolated on its side of every front, and piecewise linearly in the readout where ``fine`` has
        other readout values: the refined grid of a continuous law)."""
        fronts, q = self.split(x)
        rules = self.rules(fronts)
        Q = self.core.unpack(q)
        fine_rules = fine.rules(fronts)
        # in |v|: the profiles depend on the readout only through v² (folded and signed grids alike)
        v, v_fine = np.abs(self.readout_values), np.abs(fine.readout_values)
        regrid = v.shape != v_fine.shape or not np.array_equal(v, v_fine)
        out = {}
        for key, val in Q.items():
            ell, m = key
            for axis, layer in ((0, ell), (1, m - 1)):
                if layer in self.front_layers:
                    nodes, _, side = rules[layer - 1]
                    f_nodes, _, f_side = fine_rules[layer - 1]
                    val = _map_axis(val, axis, f_nodes, f_side, nodes, side)
                elif layer == self.L and regrid:
                    val = _map_axis(val, axis, v_fine, np.zeros(v_fine.size, int), v, np.zeros(v.size, int))
            out[key] = val
        return np.concatenate([fronts, fine.core.pack(out)])

    def discretization_error(self, alpha, x, **solver_options) -> float:
        """Relative change of mmse and free entropy when the nodes on each side of every front are
        doubled, and those of a continuous readout law's grid (:meth:`refined`; :func:`replica.models._common.refined_solve`, the refined point solved by Newton–Krylov from
        the carried one, :func:`replica.continuation.correctors.newton_krylov`, about half the evaluations of the damped
        iteration; damped where it fails); 0 at ``Q ≡ 0``."""
        from ..continuation.correctors import newton_krylov  # lazy: start-up (docs/architecture.md)

        if not np.any(self.split(x)[1]):
            return 0.0
        return refined_solve(self, alpha, x, corrector=lambda fine, a, x0: newton_krylov(fine, a, x0, solver_options).result,
                             **solver_options)[0]
