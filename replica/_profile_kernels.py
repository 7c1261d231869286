"""Compiled curve of the one-hidden-layer readout profiles (:class:`replica.readout_grid.OverlapProfile`).

``T(r) = r/(A g'(m_P(r)) + B m_P(r))`` and its inversion on a monotone cell ``[r_j, r_{j+1}]`` of the
profile's table by the Illinois (regula falsi) iteration, element by element: the same curve, iteration
and stopping rule as the NumPy methods :meth:`~replica.readout_grid.OverlapProfile.T` and
:meth:`~replica.readout_grid.OverlapProfile._invert`, on the compiled forms of the activation
(:func:`replica.activations.compiled_activation`, within 1e-13 of its methods) and of the prior
(:func:`priors.compiled.compiled_prior`: exact for the Gaussian prior). The equal-potential front of a
100-atom readout law inverts ``T`` about 4,600 times per sweep, each inversion about ten evaluations of
``T``: in NumPy on one or two numbers, 0.3 ms each; here about 1 µs.
"""

from __future__ import annotations

import numpy as np

from priors._kernels import kernel
from priors.compiled import spec_overlap

from ._curve_kernels import illinois_point, illinois_update
from .activations import spec_g_prime

__all__ = ["curve_T_many", "invert_many"]


@kernel(cache=True, inline="always", error_model="numpy")
def _curve_T(r, A, B, prior, act):  # pragma: no cover - compiled
    q = min(max(spec_overlap(prior, r), 0.0), 1.0)
    k = A * spec_g_prime(act, q) + B * q
    if k > 0.0:
        return r / k
    return np.inf


@kernel(cache=True, error_model="numpy")
def curve_T_many(r, A, B, prior, act):  # pragma: no cover - compiled
    """``T`` at every entry of the 1-D array ``r`` (``inf`` where the denominator is not positive)."""
    out = np.empty(r.size)
    for i in range(r.size):
        out[i] = _curve_T(r[i], A, B, prior, act)
    return out


@kernel(cache=True, error_model="numpy")
def invert_many(s, j, r_grid, T_grid, A, B, prior, act):  # pragma: no cover - compiled
    """``r`` in ``[r_grid[j_i], r_grid[j_i + 1]]`` with ``T(r) = s_i`` for every ``i`` (``T`` increasing there):
    Illinois iteration from the cell's ends, at most 100 steps, stopped when the bracket is below 1e-14 of its
    upper end or ``|T(r) − s| ≤ 1e-14 s`` (IEEE division: a secant through equal values falls back to the
    midpoint, as in NumPy)."""
    out = np.empty(s.size)
    for i in range(s.size):
        si = s[i]
        a, b = r_grid[j[i]], r_grid[j[i] + 1]
        fa = max(T_grid[j[i]] - si, -1e300)
        fb = min(T_grid[j[i] + 1] - si, 1e300)
        x = a
        side = 0
        for _ in range(100):
            x = illinois_point(a, b, fa, fb)
            fx = _curve_T(x, A, B, prior, act) - si
            a, b, fa, fb, side = illinois_update(a, b, fa, fb, side, x, fx)
            if b - a <= 1e-14 * b or abs(fx) <= 1e-14 * si:
                break
        out[i] = x
    return out
