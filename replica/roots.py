"""Bracketed scalar root finding without importing :mod:`scipy.optimize` (start-up).

:func:`brentq` is Brent's method exactly as scipy implements it (``scipy/optimize/Zeros/brentq.c``,
after Brent, *Algorithms for Minimization without Derivatives*, 1973, ch. 4): the same
iterates, tests and tolerances, so it returns the root ``scipy.optimize.brentq`` returns
(``tests/test_roots.py`` compares the two). It exists because importing ``scipy.optimize``
costs about 0.3 s, more than a whole 50-point universal sweep, whose every point is one such
root (:meth:`replica.models.shallow.ShallowModel.solve_universal`); other root finding in the
package uses :mod:`scipy.optimize`, imported when needed.
"""

from __future__ import annotations

import math

__all__ = ["brentq"]

_EPS = 2.220446049250313e-16


def brentq(f, a: float, b: float, *, xtol: float = 2e-12, rtol: float = 4 * _EPS, maxiter: int = 100) -> float:
    """Root of ``f`` in ``[a, b]`` by Brent's method (the algorithm of ``scipy.optimize.brentq``).

    Parameters
    ----------
    f : callable
        Scalar function, continuous on ``[a, b]``.
    a, b : float
        Bracket; ``f(a)`` and ``f(b)`` must have opposite signs (or one be zero).
    xtol, rtol : float, keyword-only
        The root is returned when the bracket half-width is below ``(xtol + rtol |x|)/2``;
        ``xtol > 0``, ``rtol >= 4 eps``.
    maxiter : int, keyword-only

    Returns
    -------
    float

    Raises
    ------
    ValueError
        No sign change on the bracket, or bad tolerances.
    RuntimeError
        Not converged in ``maxiter`` iterations.
    """
    if not xtol > 0:
        raise ValueError(f"xtol too small ({xtol:g} <= 0)")
    if not rtol >= 4 * _EPS:
        raise ValueError(f"rtol too small ({rtol:g} < {4 * _EPS:g})")
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = float(f(xpre)), float(f(xcur))
    if fpre * fcur > 0:
        raise ValueError("f(a) and f(b) must have different signs")
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    for _ in range(maxiter):
        if fpre != 0 and fcur != 0 and math.copysign(1.0, fpre) != math.copysign(1.0, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = float(f(xcur))
    raise RuntimeError(f"brentq: not converged in {maxiter} iterations")
