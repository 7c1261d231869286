"""The step control of the natural-parameter continuation in α (secant predictor, chord corrector, halving
and doubling, fold location where the corrector fails)."""

from __future__ import annotations

import math

import numpy as np

from .correctors import check_step, chord_correct, correct
from .folds import fold_estimate, refine_fold
from .jacobians import factor_jacobian
from .operators import matrix_free
from .problem import is_labelled, lower_bounds, overlaps_of, unknowns
from .settings import active

__all__ = ["advance", "bound_crossing", "bound_end"]


def advance(model, a0, r0, a_target, slope, solve_kw, jac_cache=None, trail=None):
    """Continue from the point ``r0`` at ``a0`` to ``a_target`` with step control.

    Predictor: secant (``slope``); corrector: chord Newton with ``J − I`` factorized at the
    last accepted point (refreshed after a slow corrector step, and once before a step is
    halved); the step is halved when the corrector fails or :func:`check_step` rejects the
    point, doubled after a success. Where the corrector fails and the last three accepted points
    show a fold ahead (:func:`fold_estimate`), the fold is located by :func:`refine_fold` (the
    curve followed through it in a coordinate along the curve, the vertex of ``α`` found by parabolic
    interpolation) instead of bisection of the step to ``min_step``. Returns ``(result at
    a_target or None, slope, failure)`` where ``failure`` is None or ``(last α, last result, reason,
    learned overlaps)`` when the curve ends before ``a_target`` (at a located fold, at the located root of an
    entry falling to its lower bound, reason ``"bound"``, :func:`bound_end`, or where steps fall below
    ``min_step``). ``jac_cache`` (a dict, optional) carries the last factorized Jacobian between calls on
    one curve: it is reused when it was computed within ``jacobian_reuse`` of ``a0`` and left there for the
    next call. ``trail`` (a list, optional) receives every accepted point ``(α, result)`` (later solves on the
    curve start from the nearest of them).
    """
    a, r = a0, r0
    x = np.asarray(r0.x, dtype=float)
    ov = overlaps_of(r0)
    support = np.abs(ov) > active().support_overlap
    h = abs(a_target - a0)
    lu, fresh = None, False
    if jac_cache and abs(jac_cache["alpha"] - a0) <= active().jacobian_reuse * max(1.0, abs(a0)):
        lu = jac_cache["lu"]
    idx = unknowns(model, x)
    accepted = [(a, r0)]
    direction = 1.0 if a_target >= a0 else -1.0
    fold_tried = bound_tried = False
    missed = set()  # entries whose approach to their bound was not an end (not sought again in this call)
    while True:
        rem = a_target - a
        if rem == 0.0:
            return r, slope, None
        step = math.copysign(min(h, abs(rem)), rem)
        a_new = a_target if abs(step) >= abs(rem) * (1 - 1e-12) else a + step
        step = a_new - a
        x_pred = x if slope is None else x + slope * step
        if lu is None:
            lu, fresh = factor_jacobian(model, a, x), True
            if jac_cache is not None and lu is not None:
                jac_cache.update(alpha=a, lu=lu)
        if slope is not None and lu is not None and not bound_tried:
            hit = bound_crossing(model, x, slope, step, missed)
            if hit is not None:
                bound_tried = True  # once per accepted point: an entry that turns before its bound is followed on
                got = bound_end(model, a, r, slope, hit, lu, support, solve_kw, a_new)
                if got is not None:
                    if trail is not None:
                        trail.extend(got[2])
                    return None, slope, (got[0], got[1], "bound", support)
                missed.add(hit[0])
        # the corrector updates a copy of the inverse Jacobian; its Broyden updates are kept only when
        # the point is accepted: the updates of a failed or rejected trial (a step past a fold, or onto
        # another sheet) can wreck the inverse (changes of 1e6 measured on ReLU with the sign channel),
        # and every shorter step would then fail with it, down to active().min_step: a false fold
        trial = None if lu is None else lu.copy()
        r_new = None if trial is None else chord_correct(model, a_new, x_pred, trial, solve_kw).result
        why = check_step(r_new, ov, support)
        if why is not None and fresh and is_labelled(model, x) \
                and abs(step) > active().label_resolve_step * max(1.0, abs(a)):
            # a solver with labels (the profile solver's selection of roots): the labels
            # may have to change along the curve; re-solve from the current overlap profile
            r_alt = model.solve_from(a_new, ov, None, start="continuation", **solve_kw)
            if r_alt.converged and "state" in r_alt.info and check_step(r_alt, ov, support) is None:
                r_new, why, trial = r_alt, None, None  # the chord trial failed: its updates are dropped
        if why == "newton" and not fresh:
            lu = None  # retry the same step with the Jacobian at the current point
            continue
        if why is None:
            if trial is not None:
                lu.adopt(trial)  # in place: a cached factorization (jac_cache) keeps the accepted updates
            slope = (np.asarray(r_new.x) - x) / step
            a, r, x, ov = a_new, r_new, np.asarray(r_new.x, dtype=float), overlaps_of(r_new)
            accepted.append((a, r))
            if trail is not None:
                trail.append((a, r))
            support |= np.abs(ov) > active().support_overlap  # learned overlaps stay tracked down to zero
            h = 2.0 * abs(step)
            if r_new.iterations > (active().chord_refresh_large if matrix_free(model, x) else active().chord_refresh):
                lu = None
            fresh = False
            fold_tried = bound_tried = False
        else:
            h = 0.5 * abs(step)
            if why == "newton" and len(accepted) >= 3 and not fold_tried and not is_labelled(model, x):
                fold_tried = True
                a_fold = fold_estimate([(al, np.asarray(rr.x, dtype=float)[idx]) for al, rr in accepted[-3:]],
                                        direction)
                if a_fold is not None and 0.0 < (a_fold - a) * direction < abs(step):
                    got = refine_fold(model, accepted, direction, solve_kw)
                    if got is not None and 0.0 <= (got[0] - a) * direction < abs(step) \
                            and check_step(got[1], ov, support) in (None, "move"):
                        return None, slope, (got[0], got[1], why, support)
            if h < active().min_step * max(1.0, abs(a)):
                return None, slope, (a, r, why, support)


def bound_crossing(model, x, slope, step, skip=()):
    """``(index, lower bound)`` of the bounded entry of ``x`` (:func:`~replica.continuation.problem.lower_bounds`)
    that the secant prediction ``x + slope · step`` takes first onto or below its bound, from above it by more than
    ``support_overlap``; None when none does (or the model declares no bounds). Entries in ``skip`` are left out."""
    bounds = lower_bounds(model, x)
    if bounds is None or bounds[0].size == 0:
        return None
    idx, lower = bounds
    f, df = np.asarray(x, dtype=float)[idx], np.asarray(slope, dtype=float)[idx] * step
    hit = (f > lower + active().support_overlap) & (f + df <= lower) & ~np.isin(idx, list(skip))
    if not np.any(hit):
        return None
    k = int(np.argmin(np.where(hit, (f - lower) / np.where(hit, -df, 1.0), np.inf)))
    return int(idx[k]), float(lower[k])


def bound_end(model, a, r, slope, hit, lu, support, solve_kw, reach):
    """Where the curve through ``r`` (at ``a``, secant ``slope``) ends because its entry ``hit = (index, lower)``
    falls linearly to its bound within ``reach`` (the α of the step's end): the root of ``x_i(α) − lower`` along the
    curve, located by secant steps on the curve's own corrected points (the chord corrector with the factors ``lu``
    of the last accepted point, else Newton: near the branch point ``F_x − I`` is nearly singular and the chord's
    factors are stale there).

    Each trial goes ``bound_end_approach`` of the way to the secant root, so that it stays on the curve (past the
    root the point would leave the domain, and the corrector lands on the host, where the entry sits at its bound).
    A trial that lands on the host (``check_step``: support loss, or the entry at its bound) brackets the root from
    outside, and the next trial bisects the bracket; a trial whose correctors fail or move too far is tried again
    half as far. Returns ``(α of the root, last corrected point, [(α, point) of the corrected trials])`` once the
    root is within ``min_step`` of the last point on the curve, else None — the step control then goes on as without
    bounds — where the secant root leaves the step (an entry that falls exponentially or turns before its bound),
    the entry turns away, its secant slope changes by more than ``bound_end_rate_change`` between trials (not a
    linear approach), ``bound_end_failures`` trials in a row fail, or ``bound_end_trials`` trials are spent. Once a
    trial on the curve has come within ``bound_end_near`` (relative) of the secant root, a later trial that breaks
    the linear approach, ``bound_end_failures`` failed trials in a row or ``bound_end_newton`` Newton trials end the
    search at that root instead: next to the root the correctors fail, or take long (four hidden layers:
    Newton–Krylov trials of 1–1.6 s within 1e-6 of the root), and the corrected points are only as accurate as the
    residual test allows. Farther from the root such failures are a fold before the bound (``q² − tq + ε² = 0``:
    the curve ``q ≈ t`` turns at ``t = 2ε``), and give None.

    Two hidden layers, Gaussian readouts, Δ = 0.1: the curve that leaves the partially specialized sheet at its
    branch point α = 2.0274458243 opens the sheet's zero small-root overlaps of layer 1 linearly, ≈ 1.4 (α −
    2.0274458); followed backwards, it ends at their root, 2.0274458262. With the corrector's iterates projected
    onto the overlaps' domain (tests/test_bound_ends.py), it crept on along the sheet without this end, with those
    overlaps at 2e-9–4e-9 within the residual test, and ended 7e-5 beyond the branch point."""
    s = active()
    i, lower = hit
    tol = s.min_step * max(1.0, abs(a))
    a_in, r_in, x_in = a, r, np.asarray(r.x, dtype=float)
    sl = np.asarray(slope, dtype=float)
    a_out, inside, frac, failures, newton = None, [], s.bound_end_approach, 0, 0
    for _ in range(s.bound_end_trials):
        rate = float(sl[i])
        if not (np.isfinite(rate) and rate != 0.0):
            return None
        root = a_in - (x_in[i] - lower) / rate
        if not (root - a) * (reach - root) >= 0.0:
            return None  # the root left the step: not this step's end
        if a_out is not None and abs(a_out - a_in) <= tol:
            return (root if (root - a_in) * (a_out - root) >= 0.0 else a_in), r_in, inside
        near = bool(inside) and abs(root - a_in) <= s.bound_end_near * max(1.0, abs(a))
        if abs(root - a_in) <= tol or (near and newton >= s.bound_end_newton):
            return root, r_in, inside
        a_try = a_in + frac * (root - a_in)
        if a_out is not None and not (a_try - a_in) * (a_out - a_try) > 0.0:
            a_try = 0.5 * (a_in + a_out)
        x_pred = x_in + sl * (a_try - a_in)
        got = chord_correct(model, a_try, x_pred, lu.copy(), solve_kw).result
        if got is None and newton < s.bound_end_newton:
            newton += 1
            got = correct(model, a_try, x_pred, solve_kw, newton_if_small=True).result
        why = check_step(got, overlaps_of(r_in), support)
        if why is None and float(got.x[i]) > lower:
            x_new = np.asarray(got.x, dtype=float)
            sl_new = (x_new - x_in) / (a_try - a_in)
            if not (x_new[i] - x_in[i]) * (x_in[i] - lower) < 0.0 or \
                    abs(float(sl_new[i]) - rate) > s.bound_end_rate_change * abs(rate):
                # the entry does not fall linearly towards its bound: no end here, unless the trials came within
                # bound_end_near of the root; there F_x − I is nearly singular and the corrected point is as
                # uncertain as the residual test allows: the last secant root stands
                return (root, r_in, inside) if near else None
            sl, a_in, r_in, x_in = sl_new, a_try, got, x_new
            inside.append((a_in, r_in))
            frac, failures = s.bound_end_approach, 0
        elif why == "support" or why is None:  # on the host (the entry at its bound): beyond the root
            a_out = a_try
        else:  # the correctors failed or moved too far: a shorter trial
            failures += 1
            if failures >= s.bound_end_failures:  # next to the root, as above; farther: a fold before the bound
                return (root, r_in, inside) if near else None
            frac *= 0.5
    return None
