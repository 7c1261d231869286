"""The continuation's settings: every tolerance, step bound, budget and size policy in one frozen object.

The sweep (:func:`replica.continuation.sweep.sweep`) and every algorithm below it read the settings
in force through :func:`active`; :func:`using` puts another set in force for a block (a context
variable, so that threads and asynchronous tasks each keep their own). The defaults are the values the
package's results were computed with; changing one changes results (the tests of the package run with
the defaults). In the spirit of BifurcationKit.jl's ``ContinuationPar``: the parameters of the
algorithm, apart from the problem.

Examples
--------
>>> from dataclasses import replace
>>> from replica.continuation.settings import ContinuationSettings, active, using
>>> active().max_move
0.05
>>> with using(replace(active(), max_move=0.02)):
...     active().max_move
0.02
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, fields

__all__ = ["ContinuationSettings", "DEFAULT", "active", "using"]


@dataclass(frozen=True)
class ContinuationSettings:
    """Parameters of the continuation (tolerances are relative or max-norm as each says; α is dimensionless).

    Raises
    ------
    ValueError
        A field is not a non-negative number.
    """

    #: step of the first-order finite differences (Jacobians, Jacobian–vector products, the α column of the
    #: bordered system), relative to max(1, |x|)
    fd_step: float = 1e-7
    #: step of the second-order one-sided differences of :func:`~replica.continuation.jacobians.jacobian`
    #: (stability), relative to max(1, |x|)
    fd_step_second: float = 1e-5

    #: overlaps below this (max-norm) count as the universal (zero-overlap) solution
    universal_tol: float = 1e-6

    #: two stationary points closer than this in max-norm of their overlaps are the same point
    distinct_tol: float = 1e-5

    #: points whose overlaps differ by less than this are compared again with the same labels
    #: (:func:`same_point`: one sheet solved on two rule levels differs by the discretization error)
    relabel_distance: float = 1e-2

    #: an overlap below this is zero (the continuation never lets a learned overlap reach it)
    zero_overlap: float = 1e-12

    #: overlaps above this are learned (below: rounding noise of an exact zero, not tracked)
    support_overlap: float = 1e-9

    #: largest change of any overlap in one continuation step (larger: the step is halved)
    max_move: float = 0.05

    #: smallest continuation step relative to max(1, α); a branch ends where steps fall below it
    min_step: float = 1e-9

    #: an end where some learned overlap is below this is a bifurcation (merge), else a fold
    bifurcation_overlap: float = 1e-4

    #: where a bounded entry (:func:`replica.continuation.problem.lower_bounds`) is predicted to fall onto its lower
    #: bound within a step, each trial of the end's location goes this fraction of the way to the root of the
    #: entry's secant line (:func:`replica.continuation.stepper.bound_end`): a trial beyond the root would land on the
    #: host, where the entry sits at its bound
    bound_end_approach: float = 0.9

    #: most corrections while the root of a bounded entry is located
    bound_end_trials: int = 40

    #: the entry's secant slope may change by at most this fraction between two trials (an entry that falls to its
    #: bound linearly, as an overlap opening at a branch point; an exponential or square-root approach is not such
    #: an end, and is left to the step control)
    bound_end_rate_change: float = 0.5

    #: failed trials in a row (correctors that do not converge) that end the location of a bounded entry's root: at
    #: the last secant root within ``bound_end_near`` of it, else without an end
    bound_end_failures: int = 2

    #: Newton trials (after a failed chord trial) while a bounded entry's root is located
    bound_end_newton: int = 4

    #: a trial within this distance (relative to max(1, α)) of a bounded entry's secant root is next to the root:
    #: failures of the correctors there end the location at that root (farther away they are a fold before the bound)
    bound_end_near: float = 1e-6

    #: Newton iterations of one solve of the bordered system at a fold (:func:`refine_fold`)
    fold_newton_iter: int = 12

    #: most solves of the bordered system while a fold is refined
    fold_max_solves: int = 12

    #: a refined fold is accepted where the smallest singular value of F_x − I is below this fraction of the
    #: largest (measured at refined folds: ~1e-8; at the last point of a bisection to MIN_STEP: ~5e-6)
    fold_singular: float = 1e-4

    #: evaluation budget of one Newton corrector, in units of (number of order parameters + 1)
    corrector_maxfev: int = 8

    #: iterations and required contraction of the chord-Newton corrector of the continuation
    chord_max_iter: int = 20


    chord_contraction: float = 0.7

    #: a chord corrector that needed more iterations than this refreshes its Jacobian at the next step; for
    #: matrix-free models (:func:`matrix_free`) a fresh Jacobian costs as many evaluations as unknowns, so Broyden's
    #: updates are trusted longer (three hidden layers before the vectorized map: 6.7e4 → 6.2e4 evaluations per
    #: sweep, results equal to 1e-12)
    chord_refresh: int = 3


    chord_refresh_large: int = 8

    #: solvers with labels re-solve from the overlap profile only on steps above this (relative)
    label_resolve_step: float = 1e-3

    #: solvers with labels: relative precision of the ends located by damped warm-started solves
    labelled_end_rtol: float = 1e-7
    #: solvers with labels: damped iterations one bisection step of an end may take; a step that has not
    #: converged by then counts as outside the curve. Past a fold the iteration crawls through the fold's
    #: ghost, ∝ 1/√(α − α_end) iterations (13,460 at 7e-8 beyond it, 30 atoms of nearly equal strength), while
    #: the steps inside converge in at most 19 (guarded Newton from the warm start; five laws measured). At damping η
    #: the budget is this times 0.5/(1 − η): the steps inside need more (301 at η = 0.97 on a 40-atom law)
    labelled_end_budget: int = 200

    #: distance (relative to max(1, α)) beyond a branch end where the system's jump is sought
    jump_offset: float = 1e-3

    #: a jump beyond a fold starts this many widths of the fold's ghost downstream (:func:`past_the_ghost`)
    ghost_widths: float = 8.0

    #: smallest step in the second parameter of a traced phase line (:mod:`replica.continuation.codim2`),
    #: relative to max(1, |p|): a line is lost where its steps fall below it
    line_min_step: float = 1e-7
    #: branch switching (:mod:`replica.continuation.branchpoints`): the curve's point next to a branch point is
    #: displaced along the null vector by this much (max-norm), times 0.1, 1 and 3, before Newton
    switch_offset: float = 1e-2
    #: a degenerate branch point where no traced curve ends (:func:`~replica.continuation.seeds.degenerate_switches`)
    #: is left by the damped iteration from the curve's unstable point this far beyond it (relative to max(1, α)):
    #: the escape along an eigenvalue 1 + ε takes ~1/ε iterations (two hidden layers, Gaussian readouts: 13,700
    #: at 3e-3, 3,400 at 1e-2)
    degenerate_switch_offset: float = 1e-2
    #: a located crossing at which a third branch has the larger free entropy is split into the two changes it
    #: hides, at most this many times in one interval of nodes (:func:`~replica.continuation.equilibrium.equilibrium_changes`)
    crossing_splits: int = 3
    #: points of a traced curve (nearest first) from which :func:`curve_through` tries to continue it
    curve_through_tries: int = 3

    #: two traced phase lines are one (traced from both ends of the range, :mod:`replica.continuation.triples`)
    #: where their α agree at every shared parameter value to this (relative to max(1, α))
    line_same_rtol: float = 1e-7
    #: a crossing line passes through a triple point, and two located triple points are one, within this
    #: (relative, in both coordinates): the locators' precision is ``root_rtol``, their predictions' 1e-8
    triple_rtol: float = 1e-6
    #: a cusp is sought between two consecutive points of a lost spinodal at most this many points back from its
    #: end (its last points may lie past the cusp, :func:`~replica.continuation.cusps.critical_points`)
    cusp_back_points: int = 4
    #: two cusps located from the two spinodals of one S, each traced alone (lost at different parameter values:
    #: one followed a little past the cusp), are one where they agree to this (relative: to |p| in the parameter, to
    #: max(1, α) in α; the cubic fit of :func:`~replica.continuation.linepoints.cusp_discriminant` locates a cusp to
    #: about 1e-6 relative in p and 1e-4 in α)
    cusp_same_rtol: float = 1e-3
    #: a third branch makes a crossing metastable where its free entropy exceeds the crossing's by more than this
    #: (relative to max(1, |f|)): the rounding of f
    metastable_margin: float = 1e-12

    #: above this many moving order parameters, a model without a vectorized map (``update_many``) gets stability
    #: from Jacobian–vector products (ARPACK) and Newton–Krylov correctors (:func:`matrix_free`), and every
    #: model's bifurcation ends are the ends found by halving the step (no root of the host's eigenvalue)
    arnoldi_size: int = 40

    #: at most this many moving unknowns, a model without a vectorized map is corrected and polished by Newton's
    #: method on a forward-difference Jacobian at every iterate (:func:`replica.engine.newton_lu`, p + 1
    #: evaluations per iterate) instead of MINPACK ``hybr``: the same fixed point, and no ``scipy.optimize``
    #: (0.4 s of CPU to import, half of the README quick-start sweep: docs/performance.md)
    newton_size: int = 8

    #: with a vectorized map (``update_many``), dense Jacobians up to this many moving order parameters, and
    #: Jacobian–vector products above. Three hidden layers (255): 17–20 s of CPU per sweep dense (with the polish
    #: of ``DeepFrontModel.solve_from``, limited to the same size), 26–30 s matrix-free. Four hidden layers (676):
    #: 83 s dense, 67 s matrix-free (one run each, the other core busy)
    dense_size: int = 400

    #: restarts of ARPACK for the leading eigenvalue
    arnoldi_maxiter: int = 200

    #: seed of ARPACK's start vector (:func:`replica.continuation.operators.arnoldi_start`): the same in every run
    arnoldi_seed: int = 20261207

    #: eigenvalues ARPACK computes when the one nearest a value is sought (bifurcations of large models)
    arnoldi_near: int = 8

    #: relative residual of the inner GMRES solves of the matrix-free Newton corrector (inexact Newton)
    krylov_rtol: float = 1e-3

    #: Krylov subspace size before GMRES restarts (at most the number of unknowns)
    krylov_restart: int = 60

    #: Newton iterations of the matrix-free corrector of :func:`correct` (seeds, host points)
    krylov_newton_iter: int = 30

    #: at most this many branches per sweep (a safeguard)
    max_branches: int = 64

    #: relative tolerance of the root finding for bifurcations and the instability of the universal branch
    root_rtol: float = 1e-12

    #: relative tolerance of the free-entropy crossings (the transitions are promised to ~1e-9)
    crossing_rtol: float = 1e-10

    #: a factorized Jacobian is reused by a continuation that starts within this distance (relative to
    #: max(1, α)) of the point where it was computed (the corrector refreshes it when it fails)
    jacobian_reuse: float = 1e-2

    #: a damped pass that converges to a linearly unstable point (a saddle on an exactly invariant set, e.g.
    #: unlearned neurons at Q = 0 whose zero state has lost its stability) is restarted from that point
    #: displaced by this much (max-norm) along the unstable eigenvector, as round-off would displace it
    saddle_escape: float = 1e-6

    #: at most this many such restarts of one point (:func:`escape_saddle`)
    saddle_rounds: int = 3

    #: how many bytes of Jacobians a sweep remembers, the most recent first (the chord corrector factorizes at an
    #: accepted point; the stability of that point, computed when its curve is complete, takes the same matrix):
    #: 64 MiB, about 120 Jacobians of the 255 unknowns of three hidden layers, 18 of 676 (four)
    jacobian_memo_bytes: int = 64 * 2**20

    #: how far a curve is continued past a grid end for its name only: up to this factor beyond the last α of
    #: the grid (upper end), down to the first α divided by it (lower end); α is a scale, so the bound is a
    #: ratio, alike for every grid and spacing (past α = 2 it reaches 8, beyond the sign channel's fold at 4.28)
    name_extension_factor: float = 4.0

    #: that range is followed in this many legs of equal ratio in α (each by :func:`advance`, with its own
    #: step control); the continuation stops after the first leg at which the phase is decided
    name_extension_legs: int = 24

    #: and in at most this many accepted continuation steps per end (a bound on the cost of a slow curve)
    name_extension_steps: int = 200

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and value >= 0):
                raise ValueError(f"continuation setting {f.name} must be a non-negative number, got {value!r}")


#: the settings the package's results are computed with
DEFAULT = ContinuationSettings()
_ACTIVE = contextvars.ContextVar("replica_continuation_settings", default=DEFAULT)


def active() -> ContinuationSettings:
    """The settings in force (:data:`DEFAULT` outside a :func:`using` block)."""
    return _ACTIVE.get()


@contextlib.contextmanager
def using(settings: ContinuationSettings):
    """Put ``settings`` in force for the block.

    Raises
    ------
    TypeError
        ``settings`` is not a :class:`ContinuationSettings`.
    """
    if not isinstance(settings, ContinuationSettings):
        raise TypeError(f"expected ContinuationSettings, got {type(settings).__name__}")
    token = _ACTIVE.set(settings)
    try:
        yield settings
    finally:
        _ACTIVE.reset(token)
