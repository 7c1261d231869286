"""numba helpers shared by the profile solvers: scalar root finding, minimization, folded panel rules.

The profile solvers read every neuron's fixed point off an explicit curve ``s = T(r)``
(:mod:`replica.readout_grid`, :mod:`replica.models._two_layer_profile`); the curve-specific
kernels live with their model, the pieces that do not depend on the curve live here:

* :func:`folded_gaussian_panel_rule` — the composite rule of
  :meth:`priors.continuous_laws.ContinuousLaw.panel_rule` for the standard Gaussian on
  ``[−8.5, 8.5]`` (unit panels, graded towards every breakpoint), folded onto ``s > 0`` (weights
  doubled): the rule of an even integrand ``E_s f(s²)``;
* :func:`running_extrema` — the running minimum from the right and maximum from the left of a
  tabulated curve (where the largest and the low root of ``T(r) = s`` are looked up);
* :func:`illinois_point` and :func:`illinois_update` — one step of the Illinois (regula falsi) iteration
  that inverts a curve on a monotone cell, without the curve.

Root finding and minimization inside kernels are written out per curve (numba cannot take a
Python callable in a cached kernel), around the curve-free steps above; their tolerances are those
of the Python code they replace.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from priors._kernels import kernel

__all__ = ["folded_gaussian_panel_rule", "running_extrema", "gauss_legendre_unit", "illinois_point", "illinois_update",
           "GAUSSIAN_HALF_RANGE"]

#: the Gaussian law is integrated on [−8.5, 8.5] (:class:`priors.continuous_laws.GaussianLaw`)
GAUSSIAN_HALF_RANGE = 8.5
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@kernel(cache=True, inline="always")
def illinois_point(a, b, fa, fb):  # pragma: no cover - compiled
    """The next trial point of the Illinois iteration on ``[a, b]`` (``fa < 0 < fb``): the secant's root, the
    midpoint where it is not strictly inside."""
    x = (a * fb - b * fa) / (fb - fa)
    if not (x > a and x < b):
        x = 0.5 * (a + b)
    return x


@kernel(cache=True, inline="always")
def illinois_update(a, b, fa, fb, side, x, fx):  # pragma: no cover - compiled
    """The bracket after the trial ``(x, fx)``: ``(a, b, fa, fb, side)``, the value kept at the end that did not
    move twice in a row halved (Illinois), ``side`` = +1 when ``b`` moved, −1 when ``a`` did."""
    if fx > 0.0:
        if side == 1:
            fa *= 0.5
        return a, x, fa, fx, 1
    if side == -1:
        fb *= 0.5
    return x, b, fx, fb, -1


@functools.lru_cache(maxsize=None)
def gauss_legendre_unit(n: int):
    """``n``-point Gauss–Legendre rule on ``[0, 1]``: nodes and weights (read-only arrays)."""
    x, w = np.polynomial.legendre.leggauss(int(n))
    t, wt = 0.5 * (x + 1.0), 0.5 * w
    t.setflags(write=False)
    wt.setflags(write=False)
    return t, wt


@kernel(cache=True)
def running_extrema(T):  # pragma: no cover - compiled
    """``(min of T[j:], max of T[:j+1])`` for every j (NaN-free input)."""
    n = T.size
    rmin = np.empty(n)
    lmax = np.empty(n)
    cur = np.inf
    for j in range(n - 1, -1, -1):
        cur = min(cur, T[j])
        rmin[j] = cur
    cur = -np.inf
    for j in range(n):
        cur = max(cur, T[j])
        lmax[j] = cur
    return rmin, lmax


@kernel(cache=True)
def folded_gaussian_panel_rule(breakpoints, t, wt):  # pragma: no cover - compiled
    """Composite rule for ``E_s f(s²)``, ``s ~ N(0, 1)``, on ``s > 0``, panel ends at ``breakpoints``.

    The positive half of :meth:`priors.continuous_laws.GaussianLaw.panel_rule` with breakpoints
    ``{0, ±b}``: unit panels ``[k − ½, k + ½]`` up to 8.5, split at every ``0 < b < 8.5`` and at 0; on
    each panel the Gauss–Legendre rule ``(t, wt)`` on [0, 1], graded as ``t²`` towards a breakpoint at
    one end and as ``(1 − cos πt)/2`` between two; weights ``2 φ(s)`` times the Jacobian.

    Returns
    -------
    nodes, weights : ndarray, shape (n_panels · t.size,)
    """
    hi = 8.5
    n_base = 9  # 0.5, 1.5, …, 8.5
    nb = 0
    for b in breakpoints:
        if b > 0.0 and b < hi and np.isfinite(b):
            nb += 1
    m = 1 + n_base + nb
    pts = np.empty(m)
    flag = np.zeros(m, dtype=np.bool_)
    pts[0] = 0.0
    flag[0] = True
    for k in range(n_base):
        pts[1 + k] = 0.5 + k
    i = 1 + n_base
    for b in breakpoints:
        if b > 0.0 and b < hi and np.isfinite(b):
            pts[i] = b
            flag[i] = True
            i += 1
    order = np.argsort(pts, kind="mergesort")
    pts = pts[order]
    flag = flag[order]
    # merge points closer than 1e-13 relative; a merged group is special if any member is
    ends = np.empty(m)
    special = np.zeros(m, dtype=np.bool_)
    n_ends = 0
    for k in range(m):
        if n_ends == 0 or pts[k] - ends[n_ends - 1] > 1e-13 * (1.0 + abs(pts[k])):
            ends[n_ends] = pts[k]
            special[n_ends] = flag[k]
            n_ends += 1
        else:
            special[n_ends - 1] = special[n_ends - 1] or flag[k]
    ends[0] = 0.0
    ends[n_ends - 1] = hi
    n = t.size
    nodes = np.empty((n_ends - 1) * n)
    weights = np.empty((n_ends - 1) * n)
    for p in range(n_ends - 1):
        a = ends[p]
        c = ends[p + 1]
        width = c - a
        left = special[p]
        right = special[p + 1]
        for j in range(n):
            if left and not right:
                x = a + width * t[j] * t[j]
                jac = width * 2.0 * t[j] * wt[j]
            elif right and not left:
                x = c - width * t[j] * t[j]
                jac = width * 2.0 * t[j] * wt[j]
            elif left and right:
                x = a + 0.5 * width * (1.0 - math.cos(math.pi * t[j]))
                jac = 0.5 * width * math.pi * math.sin(math.pi * t[j]) * wt[j]
            else:
                x = a + width * t[j]
                jac = width * wt[j]
            nodes[p * n + j] = x
            weights[p * n + j] = 2.0 * jac * math.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return nodes, weights
