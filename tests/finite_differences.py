"""Finite-difference gradients shared by the stationarity tests."""

import numpy as np


def gradient(fun, x, h=1e-6):
    """Gradient of ``fun`` at ``x`` (any shape) by central differences; second-order forward
    differences where a coordinate is below ``h`` (conjugates and overlaps live in ``[0, ∞)``)."""
    x = np.asarray(x, dtype=float)
    flat = x.ravel()
    out = np.zeros(x.size)
    for i in range(x.size):
        def at(step):
            y = flat.copy()
            y[i] += step
            return fun(y.reshape(x.shape))
        if flat[i] >= h:
            out[i] = (at(h) - at(-h)) / (2 * h)
        else:
            out[i] = (-3 * at(0.0) + 4 * at(h) - at(2 * h)) / (2 * h)
    return out.reshape(x.shape)
