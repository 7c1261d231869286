"""Branches of stationary points by continuation, the equilibrium, its changes, stability.

Several stationary points of the free entropy coexist over wide ranges of α
(docs/theory.md §5.2, §6). The phase structure is computed for any solver that implements
:class:`replica.interface.ReplicaModel` (one hidden layer, deep, two hidden layers):

1. **Universal branch.** Solved exactly at every α (``model.solve_universal``).
2. **Seeds.** Each of the model's starts (``model.starts()``: informed, uninformed, partial,
   per-layer …) is followed along the α grid by the damped iteration with warm starts, in
   its direction (``up``, ``down`` or ``both``). The damped iteration reaches only fixed
   points that attract it (stable fixed points of the damped map); every non-universal
   point it finds with ``stability < 1`` is a *seed* (a Newton polish of a slow iterate can
   land on a saddle: such points are not seeds).
3. **Branches by continuation.** A branch is a connected curve of stationary points. From
   each seed that does not lie on a branch already traced, the curve is followed in α in
   both directions by natural-parameter continuation: a secant predictor, a Newton corrector
   (MINPACK ``hybr`` on ``F(x) − x``, :func:`replica.engine.solve_fixed_point` with
   ``method="newton"``) and a step control that halves the step when the corrector fails,
   when any overlap would move by more than ``max_move`` in one step (the curve is
   refined where the solution moves fast) or when an overlap would drop to zero (the curve
   would land on another branch with fewer learned overlaps). A branch ends where the step
   falls below ``min_step`` (relative): there it ceases to exist, and the end is
   located to that precision by this bisection. Two kinds of ends (``start_kind``,
   ``end_kind``):

   * ``fold`` — a saddle-node: the curve turns back (the stable curve meets an unstable
     one); located by the bisection of the step control (to ~1e-9 relative).
   * ``bifurcation`` — some overlaps go to zero continuously: the curve merges into a
     branch with fewer learned overlaps (the universal branch for a continuous onset). The
     end is then refined by root finding (Brent) on the eigenvalue of that host branch's
     Jacobian nearest 1, which crosses 1 exactly at the branch point.
   * ``grid`` — the curve reaches the first or last α of the grid (``alpha_start`` or
     ``alpha_end`` is then NaN: the event lies outside the grid).

   Two solutions at the same α belong to the same branch only if continuation connects
   them; a curve that exists on two disjoint α intervals is two branches. Where a branch
   ends inside the grid, what the system goes to is traced too (seeds off the grid, found
   independently of it): beyond a fold the damped iteration from the branch's last point,
   beyond a bifurcation the host branch it merged into.

   *Choice:* the corrector accepts unstable points too (a branch keeps its name and is
   followed through a loss of stability; ``stability`` says where), but the continuation
   parameter is α, so it cannot turn around a fold: the unstable middle part of an S-shaped
   curve, between two folds, is not traced (the damped iteration cannot reach it, and it
   never has the largest free entropy of the S: it is the saddle between the two stable
   parts). The two stable parts are two branches, each ending at its fold.
   *Branch points.* Where a traced curve's leading eigenvalue crosses 1 between two grid points while
   the curve goes on, or between its last grid point and the last point before a ``bifurcation`` end, the
   crossing is located by root finding along the curve
   (:mod:`~replica.continuation.branchpoints`, to ``root_rtol``, for every model size) and stored in the
   branch's ``branch_points``; at a simple branch point the curves crossing there are followed from it
   (branch switching: the point displaced along the null vector of ``F_x − I``, Newton at α* ± ``jump_offset``,
   then the same tracing as every seed); a degenerate one (several eigenvalues crossing together, as the nodes
   of a rule in s do at three hidden layers) is located, and where no traced curve ends there the curve that
   leaves it is found by the damped iteration from the curve's unstable point beyond it, left along its
   unstable direction (:func:`~replica.continuation.seeds.degenerate_switches`); a complex pair crossing is a
   ``stability_crossing``. A ``bifurcation`` end of a large model (above ``arnoldi_size``) within 1e-6 of a
   located branch point takes its α.
4. **Names.** A branch is named after the phase of the curve, assigned once the curve is traced:
   what its most specialized point has learned (``model.phase`` at the point of largest
   ``model.specialization`` among its grid points *and its located ends*, so that a fold or
   bifurcation between two grid points counts whatever the grid): for one hidden layer ``weak``
   (every readout group has ``Q < 0.5``), ``partial`` (some groups have learned, ``Q ≥ 0.5``,
   others not) or ``specialized`` (every group has ``Q ≥ 0.5``); for two hidden layers what is
   learned (``layer_1``, ``layers_1_2``, …); for deep networks ``specialized`` (every layer) or
   ``layers_1_to_<k>``. The name is fixed along the curve. Curves of the same phase are told
   apart by how strongly they learn it: the one with the largest mmse where they coexist on the
   grid keeps the name, the others get ``-2``, ``-3``, … in order of decreasing mmse (curves that
   never coexist on the grid: in the order of their first α). Neither rule depends on where the
   grid points fall, as long as the grid holds the curves' ends. Where it does not, a curve whose
   points on the grid have not learned (``weak``, :data:`UNLEARNED_PHASES`) may learn beyond it: such
   a curve is followed past its grid ends by the same continuation, for its name only (nothing of it
   is stored), until it ends, its phase is decided or ``name_extension_factor`` (4) times the
   last α (a quarter of the first) is reached (:func:`states_past_the_grid`): the sign channel's
   curve through α = 1 … 2 is ``specialized`` on ``--alpha 1:2:3`` as on ``0.05:8:30`` (its overlaps
   pass 0.5 at α ≈ 4.2, beyond the first grid). A curve still below the threshold there is ``weak``.
5. **Stability.** At every stored point, ``stability`` is the leading eigenvalue (largest
   real part) of the Jacobian of the *undamped* map ``F`` (finite differences): ``< 1``
   means linearly stable (the damped iteration with damping close enough to 1 converges
   to it). ``transitions/universal`` gets ``alpha_instability``, where the universal
   branch loses stability (Brent on ``stability − 1``).
6. **Equilibrium and its changes.** At every α the equilibrium is the branch of largest
   free entropy. Every change of the equilibrium branch is located: a crossing of two
   free entropies (Brent on their difference, both branches followed by continuation), or
   the end (fold) of the equilibrium branch, or the birth of a branch that starts above
   (a continuous onset at a bifurcation). ``equilibrium_changes`` lists them in α.
7. **Transitions.** ``alpha_c`` is the first change of the equilibrium away from the
   universal branch — for models with a ``main_phase`` attribute (two hidden layers:
   ``layers_1_2``), the first change to a branch of that phase — and ``alpha_sp`` the first
   α of the branch it goes to (where there is no such change on the grid: the smallest
   ``alpha_start`` of the branches of that phase, NaN when the equilibrium is already in it at the
   first α, so that its spinodal lies below the grid); per branch, ``alpha_sp`` (= its
   ``alpha_start``), ``alpha_end`` and ``alpha_c`` (first α where it becomes the
   equilibrium). All are independent of the α grid (to ~1e-9 relative) as long as they lie
   inside it.

Solvers whose packed vector holds labels besides the unknowns (``model.moving_indices``:
the profile solver of continuous readout laws, :mod:`replica.readout_grid`, whose selection
of roots changes along a curve) are followed by the damped iteration with warm starts
instead of the Newton corrector; their ends are located by bisection on it (relative
precision ``labelled_end_rtol``), and a curve leaves only by returning to the universal
point. Models whose labels are constant along a branch (``model.fixed_labels``: two hidden
layers with the profile solver in s) are continued like label-free ones, on their moving entries.

When ``model.universal_only_reason()`` is not None (one hidden layer with ``g ≡ 0`` and
Gaussian weights, docs/theory.md §5.4) only the universal branch is reported, the reason is
logged and returned in :attr:`SweepResult.universal_only_reason`, and the stability stored
is that of the map restricted to ``Q ≡ 0``.

Layout (one concern per module; the numbers every module reads are the fields of
:class:`~replica.continuation.settings.ContinuationSettings`, ``active()`` of :mod:`.settings`):

======================  ==================================================================
``settings``            the frozen settings object, the one in force (``active``, ``using``)
``problem``             unknowns of a packed point, overlaps, vectorized map, corrected-point records
``jacobians``           finite-difference Jacobians, the sweep's memo, the factorized ``(F_x − I)⁻¹``
``operators``           the size policy (dense or matrix-free), stability eigenvalues, GMRES
``correctors``          Newton (LU, MINPACK), Newton–Krylov and chord correctors, the step test
``folds``               fold estimate, bordered system, fold refinement, singularity test
``stepper``             natural-parameter continuation in α with step control
``events``              bifurcation ends, loss of stability, free-entropy crossings
``branchpoints``        branch points along a curve, branch switching, bifurcation ends at branch points
``codim2``              phase lines in the plane of α and a second parameter (spinodals, first-order lines)
``linepoints``          the points of those lines at one value of the parameter
``curves``              :class:`~replica.continuation.curves.Curve`: tracing, ends, jumps, solves on a curve
``naming``              names of curves after their phases
``equilibrium``         the equilibrium, its located changes, the transitions
``seeds``               damped passes, saddles, seeds and the curves traced from them
``records``             :class:`BranchData`, :class:`SweepResult`, the end of a curve
``sweep``               :func:`sweep`
======================  ==================================================================

:mod:`replica.branches` re-exports the public names for code written before the split.
"""

from __future__ import annotations

from .jacobians import jacobian, remembered_jacobians
from .operators import stability
from .records import BranchData, SweepResult, learned_layers
from .settings import DEFAULT, ContinuationSettings, active, using
from .sweep import sweep

__all__ = ["BranchData", "SweepResult", "sweep", "stability", "jacobian", "learned_layers", "remembered_jacobians",
           "ContinuationSettings", "DEFAULT", "active", "using"]
