"""The rectangular channel inside numba kernels: its tables in a numba-typed form.

:class:`hciz.rectangular.RectangularChannel` evaluates its overlap, MMSE, derivative, mutual
information and inverse from piecewise Chebyshev tables in ``ln λ`` (two charts, ``ln(overlap/λ)``
for ``λ ≤ 1`` and ``ln mmse`` for ``λ ≥ 1``, with the series ``λ − λ² + c₃λ³`` below ``λ = 1e-6`` and
``mmse = c₁/λ + c₂/λ²`` above ``1e8``). :func:`compiled_rectangular` packs those tables into a tuple,
and the kernels below evaluate them with the same formulas (its pure-Python scalar path, compiled),
so that solvers can call the channel from their own kernels
(:mod:`replica.models._two_layer_kernels`).

Spec layout (:func:`compiled_rectangular`): ``(scalars, ea, ca, dca, eb, cb, dcb, eia, cia, eib, cib,
key_a, key_b)`` with ``scalars = [c₃, c₁, c₂, ∫₀^{λs} overlap, ι(1), ι(1e8), overlap(1e-6), overlap(1),
ln mmse(1e8)]``.
"""

from __future__ import annotations

import math

import numpy as np

from priors._kernels import kernel

__all__ = ["compiled_rectangular", "rect_values", "rect_iota", "rect_inverse", "rect_gain", "rect_overlap_many",
           "rect_iota_many", "rect_tilt_many", "rect_gain_many", "overlap_of", "iota_of", "tilt_of", "tilt_gain_of"]

_LAM_SMALL = 1e-6
_LAM_LARGE = 1e8
_GAIN_SWITCH = 50.0
_GL16_X, _GL16_W = np.polynomial.legendre.leggauss(16)


def compiled_rectangular(channel) -> tuple:
    """The numba-typed tables of a :class:`~hciz.rectangular.RectangularChannel` (built once per instance).

    Parameters
    ----------
    channel : RectangularChannel

    Returns
    -------
    tuple
        The spec of the module docstring, for :func:`rect_values`, :func:`rect_iota`,
        :func:`rect_inverse` and :func:`rect_gain`.
    """
    cached = channel.__dict__.get("_compiled_spec")
    if cached is not None:
        return cached
    tab = channel.tables

    def arrays(t):
        return (np.ascontiguousarray(t.edges, dtype=float), np.ascontiguousarray(t.coeffs, dtype=float))

    ea, ca = arrays(tab["a"])
    eb, cb = arrays(tab["b"])
    eia, cia = arrays(tab["ia"])
    eib, cib = arrays(tab["ib"])
    scalars = np.array([channel.low_snr_cubic, channel.high_snr_coefficient, tab["c2"], tab["int_small"],
                        tab["iota_one"], tab["iota_large"], tab["ov_small"], tab["ov_one"], tab["log_mmse_large"]])
    spec = (scalars, ea, ca, np.ascontiguousarray(tab["a"].dcoeffs), eb, cb, np.ascontiguousarray(tab["b"].dcoeffs),
            eia, cia, eib, cib, np.ascontiguousarray(tab["key_a"], dtype=float),
            np.ascontiguousarray(tab["key_b"], dtype=float))
    channel.__dict__["_compiled_spec"] = spec
    return spec


@kernel(cache=True, inline="always")
def _search_right(a, t):  # pragma: no cover - compiled
    """``np.searchsorted(a, t, side="right")`` for a sorted 1-D ``a`` without NaN: the first index with
    ``a[i] > t`` (``a.size`` for NaN ``t``, as NumPy sorts NaN last), by bisection without a call."""
    if t != t:
        return a.size
    lo, hi = 0, a.size
    while lo < hi:
        mid = (lo + hi) // 2
        if t < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@kernel(cache=True, inline="always")
def _search_left(a, t):  # pragma: no cover - compiled
    """``np.searchsorted(a, t)`` (side ``"left"``): the first index with ``a[i] >= t`` (``a.size`` for NaN)."""
    if t != t:
        return a.size
    lo, hi = 0, a.size
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


# The two bisections and the Chebyshev series are inlined into their callers (``inline="always"``): as calls
# with ``np.searchsorted`` a table value cost 0.5 µs (the same operations, hence the same results). The
# channel kernels themselves stay calls: with every one inlined the first compilation of the deep map
# (replica.models._deep_kernels) took 108 s of CPU; with :func:`rect_values` inlined (its three charts copied
# into every call site) 44 s for the deep family of tests/_warm_numba.py and 47 s for the two-layer one, as a
# call 25 s and 41 s, with the map's cost unchanged (0.065 ms a point, 8.8 ms a 256-row batch at L = 3) and
# every number of the sweeps bit for bit the same.
@kernel(cache=True, inline="always")
def _cheb(edges, coeffs, t):  # pragma: no cover - compiled
    """Piecewise Chebyshev series on ``[edges[i], edges[i+1]]`` at ``t`` (clamped to the end panels)."""
    n = coeffs.shape[0]
    i = _search_right(edges, t) - 1
    if i < 0:
        i = 0
    elif i > n - 1:
        i = n - 1
    half = 0.5 * (edges[i + 1] - edges[i])
    u = (t - 0.5 * (edges[i + 1] + edges[i])) / half
    if u > 1.0:
        u = 1.0
    elif u < -1.0:
        u = -1.0
    b1 = 0.0
    b2 = 0.0
    for k in range(coeffs.shape[1] - 1, 0, -1):
        b1, b2 = 2.0 * u * b1 - b2 + coeffs[i, k], b1
    return u * b1 - b2 + coeffs[i, 0]


@kernel(cache=True)
def rect_values(spec, lam):  # pragma: no cover - compiled
    """``(overlap, mmse, d overlap/dλ)`` of the channel at one ``λ ≥ 0``."""
    sc = spec[0]
    if lam < _LAM_SMALL:
        c3 = sc[0]
        ov = lam * (1.0 - lam + c3 * lam * lam)
        return ov, 1.0 - ov, 1.0 - 2.0 * lam + 3.0 * c3 * lam * lam
    if lam <= 1.0:
        t = math.log(lam)
        a = _cheb(spec[1], spec[2], t)
        da = _cheb(spec[1], spec[3], t)
        ea = math.exp(a)
        return lam * ea, 1.0 - lam * ea, ea * (1.0 + da)
    if lam <= _LAM_LARGE:
        t = math.log(lam)
        b = _cheb(spec[4], spec[5], t)
        db = _cheb(spec[4], spec[6], t)
        mm = math.exp(b)
        return -math.expm1(b), mm, -mm * db / lam
    c1, c2 = sc[1], sc[2]
    mm = c1 / lam + c2 / (lam * lam)
    return 1.0 - mm, mm, c1 / (lam * lam) + 2.0 * c2 / (lam * lam * lam)


@kernel(cache=True)
def rect_iota(spec, lam):  # pragma: no cover - compiled
    """Mutual information per entry ``ι(λ)`` (``2ι' = mmse``) at one ``λ ≥ 0``."""
    sc = spec[0]
    if lam < _LAM_SMALL:
        c3 = sc[0]
        return 0.5 * (lam - (lam * lam / 2.0 - lam ** 3 / 3.0 + c3 * lam ** 4 / 4.0))
    if lam <= 1.0:
        return 0.5 * (lam - sc[3] - _cheb(spec[7], spec[8], math.log(lam)))
    if lam <= _LAM_LARGE:
        return sc[4] + 0.5 * _cheb(spec[9], spec[10], math.log(lam))
    c1, c2 = sc[1], sc[2]
    return sc[5] + 0.5 * (c1 * math.log(lam / _LAM_LARGE) - c2 * (1.0 / lam - 1.0 / _LAM_LARGE))


@kernel(cache=True)
def rect_inverse(spec, m):  # pragma: no cover - compiled
    """The SNR ``λ`` with ``overlap(λ) = m``, ``0 ≤ m < 1``."""
    sc = spec[0]
    if m <= 0.0:
        return 0.0
    if m < sc[6]:
        c3 = sc[0]
        x = m
        for _ in range(6):
            x -= (x * (1.0 - x + c3 * x * x) - m) / (1.0 - 2.0 * x + 3.0 * c3 * x * x)
        return x
    log_mmse = math.log1p(-m)
    if m <= sc[7]:
        edges, coeffs, dcoeffs, keys = spec[1], spec[2], spec[3], spec[11]
        y, slope, sign = math.log(m), 1.0, 1.0
    elif log_mmse >= sc[8]:
        edges, coeffs, dcoeffs, keys = spec[4], spec[5], spec[6], spec[12]
        y, slope, sign = -log_mmse, 0.0, -1.0
    else:
        mm = math.exp(log_mmse)
        c1, c2 = sc[1], sc[2]
        return (c1 + math.sqrt(c1 * c1 + 4.0 * c2 * mm)) / (2.0 * mm)
    n = coeffs.shape[0]
    i = _search_left(keys, y) - 1
    if i < 0:
        i = 0
    elif i > n - 1:
        i = n - 1
    lo, hi = edges[i], edges[i + 1]
    klo, khi = keys[i], keys[i + 1]
    if khi > klo:
        frac = min(max((y - klo) / (khi - klo), 0.0), 1.0)
        t = lo + (hi - lo) * frac
    else:
        t = lo
    for _ in range(30):
        v = _cheb(edges, coeffs, t)
        dv = _cheb(edges, dcoeffs, t)
        t_new = min(max(t - (sign * v + slope * t - y) / (sign * dv + slope), lo), hi)
        if abs(t_new - t) <= 1e-15 * (1.0 + abs(t)):
            t = t_new
            break
        t = t_new
    return math.exp(t)


@kernel(cache=True)
def rect_gain(spec, tau, r, gl_x, gl_w):  # pragma: no cover - compiled
    """``(m(τ + r) − m(τ))/m'(τ)`` without cancellation at large τ (0 at ``r = 0``).

    Above τ = 50 the difference is ``∫_τ^{τ+r} m'`` by Gauss–Legendre (nodes ``gl_x``, weights
    ``gl_w`` on [−1, 1]) in ``u = 1/λ``, as :func:`replica.models.two_layer.channel_tilt_gain`.
    """
    if r == 0.0:
        return 0.0
    if tau <= _GAIN_SWITCH:
        at_tau = rect_values(spec, tau)
        return (rect_values(spec, tau + r)[0] - at_tau[0]) / at_tau[2]
    u_lo = 1.0 / (tau + r)
    u_hi = 1.0 / tau
    total = 0.0
    for k in range(gl_x.size):
        u = 0.5 * (u_hi - u_lo) * gl_x[k] + 0.5 * (u_hi + u_lo)
        total += gl_w[k] * rect_values(spec, 1.0 / u)[2] / (u * u)
    return 0.5 * (u_hi - u_lo) * total / rect_values(spec, tau)[2]


@kernel(cache=True)
def rect_overlap_many(spec, lam):  # pragma: no cover - compiled
    """:func:`rect_values`' overlap at every entry of the 1-D array ``lam``."""
    out = np.empty(lam.size)
    for i in range(lam.size):
        out[i] = rect_values(spec, lam[i])[0]
    return out


@kernel(cache=True)
def rect_iota_many(spec, lam):  # pragma: no cover - compiled
    """:func:`rect_iota` at every entry of the 1-D array ``lam``."""
    out = np.empty(lam.size)
    for i in range(lam.size):
        out[i] = rect_iota(spec, lam[i])
    return out


@kernel(cache=True)
def rect_tilt_many(spec, t):  # pragma: no cover - compiled
    """The tilt ``τ`` with ``overlap(τ) = t`` at every entry of the 1-D array ``t`` (0 where ``t ≤ 0``;
    ``t`` capped at 1 − 1e-15)."""
    out = np.zeros(t.size)
    for i in range(t.size):
        if t[i] > 0.0:
            out[i] = rect_inverse(spec, min(t[i], 1.0 - 1e-15))
    return out


@kernel(cache=True)
def rect_gain_many(spec, tau, r, gl_x, gl_w):  # pragma: no cover - compiled
    """:func:`rect_gain` at every pair of the 1-D arrays ``tau``, ``r``."""
    out = np.empty(tau.size)
    for i in range(tau.size):
        out[i] = rect_gain(spec, tau[i], r[i], gl_x, gl_w)
    return out


def _flat(x):
    x = np.asarray(x, dtype=float)
    return x, np.ascontiguousarray(x.ravel())


def overlap_of(channel, lam):
    """``channel.overlap(λ)`` for an array of SNRs through the compiled tables (shape kept)."""
    lam, flat = _flat(lam)
    return rect_overlap_many(compiled_rectangular(channel), flat).reshape(lam.shape)


def iota_of(channel, lam):
    """``channel.mutual_information(λ)`` for an array through the compiled tables (shape kept)."""
    lam, flat = _flat(lam)
    return rect_iota_many(compiled_rectangular(channel), flat).reshape(lam.shape)


def tilt_of(channel, t):
    """Tilt ``τ`` with ``channel.overlap(τ) = t`` elementwise (0 where ``t ≤ 0``), compiled (shape kept)."""
    t, flat = _flat(t)
    return rect_tilt_many(compiled_rectangular(channel), flat).reshape(t.shape)


def tilt_gain_of(channel, tau, r):
    """``(m(τ + r) − m(τ))/m'(τ)`` elementwise without cancellation at large τ (:func:`rect_gain`),
    compiled (shape of ``tau``)."""
    tau, flat = _flat(tau)
    r = np.ascontiguousarray(np.broadcast_to(np.asarray(r, dtype=float), tau.shape).ravel())
    return rect_gain_many(compiled_rectangular(channel), flat, r, _GL16_X, _GL16_W).reshape(tau.shape)
