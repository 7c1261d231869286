r"""Rectangular matrix denoising: spectral law, optimal RIE, MMSE and mutual information.

Channel (docs/theory.md §4.2).  ``S = U_L U_R / sqrt(N sqrt(M P))`` with ``U_L`` (M×N) and
``U_R`` (N×P) iid standard Gaussian, observed as ``Y = S + sqrt(Δ) Z`` with ``Z`` iid
Gaussian of variance ``1/sqrt(M P)``; aspect ratios ``R1 = P/M >= 1`` and ``R2 = N/M``.
More generally ``S = U_1 U_2 ⋯ U_p / sqrt(N_1 ⋯ N_{p−1} sqrt(M P))``, a product of
``p >= 2`` Gaussian factors with inner dimensions ``N_i`` (``aspect_ratio_n`` is then the
sequence of the ``N_i/M``; docs/deep_linear.md §5).  All errors are per
``‖·‖_F² / sqrt(M P)``.  In that normalization the signal power is

    E‖S‖_F² / sqrt(MP) = M P N / (N sqrt(MP)) / sqrt(MP) = 1,

and the noise power is Δ.  Equivalently, with ``S̃ = (MP)^{1/4} S = U_L U_R / sqrt(N)``
(unit-variance entries, the ``W₂:₁ = W₂ W₁ / sqrt(k₁)`` of docs/theory.md §6.2) and
``λ = 1/Δ``, the channel is ``Y' = sqrt(λ) S̃ + Z'`` with ``Z'`` iid N(0, 1), and
``mmse`` is the mean squared error *per entry* of ``S̃``.

Arguments and errors of the public functions
--------------------------------------------
``aspect_ratio_p = R1 = P/M`` (finite, ``>= 1``) and ``aspect_ratio_n`` = ``R2 = N/M`` (finite,
``> 0``) for two factors, or the sequence of the inner ratios ``N_i/M`` of a product of
``p >= 3`` factors (a one-element sequence is two factors); ``delta = Δ`` finite and ``> 0``.
Every public function raises ``ValueError`` (one line naming the argument) outside these
domains, and for complex points with ``Im x < 0`` where points are taken.

Notes
-----
**Prior law (free multiplicative convolution).**  ``X = S Sᵀ/sqrt(R1)`` is the M×M Gram
matrix of ``Π_i U_i/sqrt(N_i)`` (``N_p = P``), a free product of Marchenko–Pastur laws; in
the M-dimensional normalization its S-transform is the product of theirs,
``S_X(ψ) = Π_{i=1}^{p} 1/(1 + ψ M/N_i)`` (Burda et al. 2010).  With ``e_i = 1 + ψ M/N_i``,
``χ_X(ψ) = ψ S_X/(1 + ψ)``, so ``ψ`` parametrizes the curve of ``X`` rationally:
``ζ_X = (1 + ψ) Π_i e_i / ψ`` and ``∫ dX(t)/(ζ_X − t) = ψ / Π_i e_i``.

**Spectral curve.**  Let ``ν`` be the limiting eigenvalue law of ``Y Yᵀ`` (M×M) and
``m(z) = ∫ dν(t)/(t − z)``.  By the Dozier–Silverstein equation for information-plus-noise
matrices (noise variance ``σ² = Δ sqrt(R1)``, ``c = 1/R1``; the rectangular free
convolution of the signal's singular-value law with the noise's),
``m = w m_H(w² z − b w)``, ``w = 1 + a m``, with ``a = Δ/sqrt(R1)``,
``b = Δ (R1 − 1)/sqrt(R1)`` and ``H = sqrt(R1) X`` the law of ``S Sᵀ``.  Inserting the
parametrization of ``H`` gives the whole curve rationally in ``ψ``: with
``E'(ψ) = Π_{i<p} (1 + ψ M/N_i)`` (inner factors only),

    m(ψ) = −sqrt(R1) ψ / D(ψ),          D = (R1 + ψ) E' + Δ ψ,
    z(ψ) = D(ψ) C(ψ) / (sqrt(R1) ψ E'),  C = (1 + ψ) E' + Δ ψ.

Solving ``z(ψ) = z`` is a polynomial equation of degree ``2p`` (a naive derivation has the
spurious factor ``R1 + ψ``, which cancels exactly because ``b = a (R1 − 1)``).  For
``p = 2`` (``ψ = R2 ψ₂`` with ``ψ₂`` the ψ-transform of the N×N product) it is the quartic of
docs/theory.md §4.2 after the change of variable ``u = −m`` (checked: identical root sets).
Roots are found by companion matrices in charts ``ψ = A + s η`` anchored at the roots
``A ∈ {0, −1, −R1, −N_i/M}`` of the linear factors (``s = Δ min_i N_i/M`` at the poles),
polished by Newton in the factored form, every factor that vanishes at the anchor being
exactly ``β s η`` (so that the clusters of width ``O(Δ)`` that appear at small Δ keep full
relative accuracy).  The physical root has ``Im m ≥ 0``, ``Im m_H ≥ 0``, ``Im ζ ≥ 0``,
``Im ψ ≤ 0`` and, for ``p >= 3`` where these no longer single it out, satisfies the
subordination constraint of free multiplicative convolution (Biane 1998): ``ζ/Π_{i∈J} e_i``
stays in the upper half-plane for every subset ``J`` of factors, i.e. the winding
``arg ζ − Σ_i arg e_i ≤ π``; among those, the root of largest ``Im m``.  The symmetrized
singular-value law ``μ_Y`` has ``G(x) = ∫ dμ_Y(t)/(x − t) = −x m(x²)`` and density
``ρ(x) = |x| Im m(x² + i0)/π``.  Support edges are the critical values of ``z(ψ)``.
Checks of the p-factor law (tests/test_hciz_product.py): ``∫ρ = 1``,
``∫x² dμ_Y = sqrt(R1)(1 + Δ)`` and ``∫x⁴ dμ_Y = (R1 + 1)(1 + Δ)² + R1 Σ_{i<p} M/N_i``
(Wick) to 1e-10; an inner dimension ``N → ∞`` gives the ``p − 1``-factor channel.

**MMSE without finite differences.**  The optimal estimator is the posterior mean, so
Tweedie's formula holds exactly at every size: ``Ŝ = Y + (Δ/sqrt(MP)) ∇ ln p(Y)`` and
``E‖S − Ŝ‖² = E‖Y − S‖² − E‖Y − Ŝ‖²``.  With the shrinkage of docs/theory.md §4.2,
``σ ↦ σ − (2Δ/sqrt(R1)) h(σ)``, ``h(σ) = Re G(σ) + (R1 − 1)/(2σ)``, this gives

    mmse(Δ) = Δ − (4 Δ² / R1^{3/2}) ∫ h(x)² dμ_Y(x).

Two contour identities (``G³`` and ``G²/z`` are analytic in the upper half-plane and
decay like ``z⁻³``; ``G(0) = 0`` when ``0`` is outside the support, i.e. ``R1 > 1``)
give ``∫ (Re G)² dμ_Y = (π²/3) ∫ ρ³ dx`` and ``∫ Re G(x)/x dμ_Y = 0``, hence

    mmse(Δ) = Δ − (4 Δ² / R1^{3/2}) [ (π²/3) ∫ ρ_Y(x)³ dx + ((R1 − 1)²/4) E_ν[1/t] ],

with the closed form ``E_ν[1/t] = m(0) = −sqrt(R1) ψ₀ / ((R1 − 1) E'(ψ₀))``, ``ψ₀`` the
largest negative root of ``C`` (there ``D = (R1 − 1) E'``).  The prior is
bi-rotation-invariant for every p, so the posterior mean is a rotation-invariant estimator
and these formulas, which only involve ``μ_Y``, hold for products of any number of factors.  ``∫ ρ³`` is a tanh–sinh quadrature on
each support interval (double-exponential clustering at the square-root edges); where two
bulks have just merged (e.g. R1 = 2, R2 = 0.2 at Δ ≈ 1.289) the density has a narrow dip
at the real part of the nearby complex critical value, and the interval is cut there
(without the cut the error was 1e-3 relative at 1% above the merging point).

At large Δ the formula above cancels (``mmse → 1``, ``overlap = O(1/Δ)``).  In the
parametrization the shrinkage itself is cancellation-free:
``x f(x) = Re[((1 + ψ)(R1 + ψ) E'² − Δ² ψ²)/(sqrt(R1) ψ E')]`` (the terms linear in Δ
cancel identically), and ``overlap = 1 − mmse = R1^{-1/2} ∫ f² dμ_Y`` (orthogonality of the
posterior mean) is then accurate to ~1e-16 *absolute*; it is used for Δ >= 1.
This is the Δ-derivative form of Troiani et al. (docs/theory.md §4.2),
``Δ − (2Δ²/R1) d/dΔ[Σ(μ_Y) + (R1 − 1) ∫ ln|x| dμ_Y]`` in closed form.  Checks (tests):
``∫ρ = 1`` and ``∫x² dμ_Y = sqrt(R1)(1+Δ)`` to 1e-13; the ``∫ h² dμ_Y`` form, the
orthogonality form ``1 − R1^{-1/2} ∫ f² dμ_Y`` and the quadrature of ``∫ρ/x²`` all agree
with the closed form; S = 0 gives ``f ≡ 0``; empirical MSE of the denoiser on sampled
matrices; the published finite-difference curves.

**Mutual information.**  ``ι(λ) = I(S; Y)/(M P)`` (nats per entry of the M×P signal,
the same for the transpose), ``λ = 1/Δ``.  The I-MMSE relation of the Gaussian channel
``Y' = sqrt(λ) S̃ + Z'`` reads ``dI/dλ = ½ E‖S̃ − E[S̃|Y']‖²``, i.e.

    2 ι'(λ) = mmse(λ),      ι(λ) = ½ ∫₀^λ mmse(t) dt,

which is the form used by the deep theory (docs/theory.md §6.2, ``ι_rect`` per entry of
``W₂:₁``; multiply by ``k₂ d / d²`` for a per-d² quantity).  ``overlap(λ) = 1 − mmse(λ)``
(signal power 1, so ``overlap(0) = 0``).

**Asymptotics.**  Small λ: ``overlap = λ − λ² + c₃ λ³ + O(λ⁴)`` with
``c₃ = 1 + R1 (Σ_{i<p} M/N_i)²`` (``1 + R1/R2²`` for two factors); the first two terms are
those of any prior with uncorrelated unit-variance entries, the excess of ``c₃`` over its
Gaussian value 1 is the sum of the squared fourth cumulants
``κ(S̃_ij, S̃_ij', S̃_i'j, S̃_i'j') ≈ Σ_i 1/N_i`` over the ``M²P²`` quadruples, per entry
(a leading-order count, checked to ~1e-3 for several shapes; it only serves below
λ = 1e-6, where it is below double precision).  Large λ:
``mmse = c₁/λ + …`` with ``c₁ = r (M + P − r)/(M P)``, ``r = min(M, N_1, …, P)`` the
rank of ``S`` (dimension of the manifold of rank-r matrices), i.e.
``c₁ = min(1, R2)(1 + R1 − min(1, R2))/R1`` with ``R2 = min_i N_i/M``.  The next order is
``c₂/λ²`` (analytic in Δ, checked) when no two of ``M, N_i`` coincide; a square inner
factor (``N_i = M``) gives a correction ``∝ Δ^{1/2}`` (p = 2) or ``∝ Δ^{1/3}`` (two of them),
because the prior density diverges at 0.  The tables use ``c₁/λ + c₂/λ²`` only beyond
λ = 1e8, where the difference is below 1e-11 absolute.

**Tables.**  ``RectangularChannel`` tabulates ``ln(overlap/λ)`` (λ <= 1) and ``ln mmse``
(λ >= 1) in ``t = ln λ`` on adaptive piecewise Chebyshev panels (order 16), with
breakpoints at the Δ where the number of support intervals changes (the MMSE is not
analytic there).  ``ι`` is the exact antiderivative of the Chebyshev series of the
integrands.  Measured: table vs direct <= 1e-14 absolute on the overlap and ~1e-10
relative on the MMSE; direct vs published FD curves: see tests/test_hciz_rectangular.py.
The direct evaluation is reliable for ``1e-8 <= Δ <= 1e6``.  ``R1 = 1`` is accepted but
the quadrature converges slowly there (~1e-6).

References
----------
.. [1] E. Troiani, V. Erba, F. Krzakala, A. Maillard, L. Zdeborová, "Optimal denoising of
   rotationally invariant rectangular matrices", MSML 2022, arXiv:2203.07752 (denoiser
   and MMSE, their Eqs. for the rectangular RIE and the log-potential MMSE formula).
.. [2] F. Benaych-Georges, "Rectangular random matrices, related convolution",
   Probab. Theory Relat. Fields 144 (2009) 471–515 (rectangular free convolution).
.. [3] R. B. Dozier, J. W. Silverstein, "On the empirical distribution of eigenvalues of
   large dimensional information-plus-noise-type matrices", J. Multivariate Anal. 98
   (2007) 678–694.
.. [4] D. Guo, S. Shamai, S. Verdú, "Mutual information and minimum mean-square error in
   Gaussian channels", IEEE Trans. Inf. Theory 51 (2005) 1261–1282 (I-MMSE).
.. [5] Z. Burda, A. Jarosz, G. Livan, M. A. Nowak, A. Swiech, "Eigenvalues and singular
   values of products of rectangular Gaussian random matrices", Phys. Rev. E 82 (2010)
   061114 (S-transform of a product of rectangular Gaussian factors).
.. [6] P. Biane, "Processes with free increments", Math. Z. 227 (1998) 143–174
   (subordination for free multiplicative convolution).

Why one module of this size: the rectangular channel is one computation — the
Stieltjes curve of its spectral law (:class:`_Curve`), the RIE and MMSE derived from it, and
the adaptive piecewise-Chebyshev tables of :class:`RectangularChannel` built from those
functions and cached — whose pieces share the private curve parametrization and tolerances;
splitting it would expose them (docs/architecture.md, "Module size").
"""

from __future__ import annotations

import bisect
import functools
import logging
import math

from pathlib import Path

import numpy as np
from numpy.polynomial import polynomial as _P

from .package_data import data_dir

__all__ = [
    "RectangularChannel",
    "rectangular_channel",
    "signal_power",
    "low_snr_slope",
    "low_snr_cubic",
    "high_snr_coefficient",
    "stieltjes",
    "density",
    "support",
    "shrinkage",
    "denoise",
    "mmse_noise",
    "table_cache_dir",
]

logger = logging.getLogger(__name__)

_QUAD_STEP = 1.0 / 16.0  # tanh-sinh step: converged to ~1e-15 on the checks (1/8: ~1e-11)
_GEOMETRIC_CUT = 8.0  # ratio of the extra quadrature cuts above a small lower edge (p >= 3 factors)


def signal_power(aspect_ratio_p: float = 1.0, aspect_ratio_n=1.0) -> float:
    """Signal power ``E‖S‖_F²/sqrt(MP)`` of the product channel.

    Returns
    -------
    float
        Always 1: ``E‖U_L U_R‖_F² = M N P`` and the normalization is ``N sqrt(MP)``
        (docs/theory.md §4.2).  Provided so that callers do not hard-code it.
    """
    _check_ratios(aspect_ratio_p, aspect_ratio_n)
    return 1.0


def high_snr_coefficient(aspect_ratio_p: float, aspect_ratio_n) -> float:
    """Leading large-λ coefficient ``c₁`` in ``mmse(λ) = c₁/λ + O(λ⁻²)``.

    ``c₁ = r(M + P − r)/(MP)`` with ``r = min(M, N_1, …, N_{p−1}, P)`` the rank of ``S``,
    i.e. ``min(1, R2)(1 + R1 − min(1, R2))/R1`` with ``R2`` the smallest inner ratio
    (dimension of the manifold of rank-r M×P matrices per entry).

    Parameters
    ----------
    aspect_ratio_p, aspect_ratio_n : float, and float or sequence of float
        ``R1 >= 1`` and ``R2 > 0`` (or the inner ratios of p ≥ 3 factors), module docstring.

    Returns
    -------
    float
        ``c₁`` in ``(0, 1]``.
    """
    r1, r2 = _check_ratios(aspect_ratio_p, aspect_ratio_n)
    r = min(1.0, min(_inner_tuple(r2)))
    return r * (1.0 + r1 - r) / r1


def low_snr_cubic(aspect_ratio_p: float, aspect_ratio_n) -> float:
    """Coefficient ``c₃`` of ``overlap(λ) = λ − λ² + c₃ λ³ + O(λ⁴)``: ``1 + R1 (Σ_i M/N_i)²``.

    The excess over the Gaussian value 1 is the sum of squared fourth cumulants of the
    entries of ``S̃`` per entry: ``κ(S̃_ij, S̃_ij', S̃_i'j, S̃_i'j') = Σ_i 1/N_i`` to leading
    order, over ``M²P²`` quadruples (module Notes).  Two factors: ``1 + R1/R2²``.  Checked
    against the direct overlap at λ ~ 1e-4 (tests); used only below λ = 1e-6.

    Parameters
    ----------
    aspect_ratio_p, aspect_ratio_n : float, and float or sequence of float
        ``R1 >= 1`` and ``R2 > 0`` (or the inner ratios of p ≥ 3 factors), module docstring.

    Returns
    -------
    float
        ``c₃ >= 1``.
    """
    r1, r2 = _check_ratios(aspect_ratio_p, aspect_ratio_n)
    return 1.0 + r1 * sum(1.0 / n for n in _inner_tuple(r2)) ** 2


def low_snr_slope(aspect_ratio_p: float = 1.0, aspect_ratio_n=1.0) -> float:
    """``d overlap/dλ`` at λ = 0, equal to 1 (uncorrelated unit-variance entries of S̃)."""
    _check_ratios(aspect_ratio_p, aspect_ratio_n)
    return 1.0


def _inner_tuple(r2):
    """Inner ratios ``N_i/M`` as a sorted tuple (a float is one inner dimension)."""
    if isinstance(r2, tuple):
        return r2
    return tuple(sorted(float(x) for x in np.atleast_1d(np.asarray(r2, dtype=float))))


def _inner_poly(inner):
    """Coefficients (increasing degree) of ``E'(ψ) = Π_i (1 + ψ/n_i)``."""
    e = np.array([1.0])
    for n in inner:
        e = _P.polymul(e, np.array([1.0, 1.0 / n]))
    return e


def _check_ratios(r1, r2):
    """``(R1, R2)`` validated; ``R2`` a float (two factors) or a sorted tuple of the inner
    ratios ``N_i/M`` (p ≥ 3 factors; a one-element sequence becomes a float)."""
    r1 = float(r1)
    if not (np.isfinite(r1) and r1 >= 1.0):
        raise ValueError(f"aspect_ratio_p = P/M must be finite and >= 1, got {r1!r}")
    try:
        inner = tuple(sorted(float(x) for x in np.atleast_1d(np.asarray(r2, dtype=float))))
    except (TypeError, ValueError):
        raise ValueError(f"aspect_ratio_n = N/M must be a number or a list of numbers, got {r2!r}") from None
    if not inner or not all(np.isfinite(x) and x > 0.0 for x in inner) or np.ndim(r2) > 1:
        raise ValueError(f"aspect_ratio_n = N/M must be finite and > 0 (one per inner dimension), got {r2!r}")
    return r1, (inner[0] if len(inner) == 1 else inner)


def _check_delta(delta):
    delta = float(delta)
    if not (np.isfinite(delta) and delta > 0.0):
        raise ValueError(f"noise variance delta must be finite and > 0, got {delta!r}")
    return delta


# ---------------------------------------------------------------------------------------
# spectral curve at fixed (R1, R2, Δ)
# ---------------------------------------------------------------------------------------
class _Curve:
    """Rational parametrization of the spectral curve of ``Y Yᵀ`` (see module Notes).

    ``inner`` holds the inner widths ``N_i/M`` of ``S = U_1 ⋯ U_p`` (a float for two
    factors).  All polynomials are products of the linear factors ``ψ``, ``1 + ψ``,
    ``R1 + ψ`` and ``1 + ψ/n_i``, kept in factored form in charts ``ψ = A + s η`` anchored
    at their roots (so that a factor vanishing at the anchor is exactly ``β s η``).
    """

    def __init__(self, r1: float, inner, delta: float):
        inner = _inner_tuple(inner)
        self.r1, self.inner, self.delta = float(r1), inner, float(delta)
        self.sr1 = math.sqrt(self.r1)
        self.roots = np.array([0.0, -1.0, -self.r1] + [-n for n in inner])
        self.betas = np.array([1.0, 1.0, 1.0] + [1.0 / n for n in inner])
        anchors = []
        for r in self.roots:
            if not any(abs(r - a) <= 1e-12 * max(1.0, abs(a)) for a in anchors):
                anchors.append(r)
        self.anchors = np.array(anchors)
        vanish = (np.abs(self.roots[None, :] - self.anchors[:, None])
                  <= 1e-12 * np.maximum(1.0, np.abs(self.anchors[:, None])))
        # constants of the linear factors at each anchor, exactly 0 where they vanish
        self.consts = np.where(vanish, 0.0, self.betas * (self.anchors[:, None] - self.roots))
        self.degree = 2 * (len(inner) + 1)
        # chart scale Δ·min N_i/M at the poles (roots cluster within O(Δ) of them at small Δ;
        # for two factors this is the scale Δ of the N×N ψ-transform)
        scale = delta * min(inner)
        self._charts = [self._chart(ia, 1.0 if ia == 0 else scale) for ia in range(self.anchors.size)]
        self._support = None
        self._near = np.empty(0)
        self._quad = None

    # charts ψ = A + s η with exact linear factors -----------------------------------
    def _chart(self, ia, s):
        """(ia, s, N(η), K(η)) with ``z(ψ) = N/K``, polynomial coefficients in η."""
        lin = [np.array([c, b * s]) for c, b in zip(self.consts[ia], self.betas)]
        e = np.array([1.0])
        for f in lin[3:]:
            e = _P.polymul(e, f)
        d = self.delta
        dw = _P.polyadd(_P.polymul(lin[2], e), d * lin[0])
        c2 = _P.polyadd(_P.polymul(lin[1], e), d * lin[0])
        return ia, s, _P.polymul(dw, c2), self.sr1 * _P.polymul(lin[0], e)

    def _pieces(self, ia, eps, values=False):
        """``(ψ, P0 = ψ, P1 = 1 + ψ, PR = R1 + ψ, E', dE'/dψ)`` at ``ψ = A_ia + eps``
        (with ``values``: ``(ψ, P0, P1, PR, all linear factors)``)."""
        ia = np.asarray(ia)
        eps = np.asarray(eps)
        vals = self.consts[ia] + self.betas * eps[..., None]
        if values:
            return self.anchors[ia] + eps, vals[..., 0], vals[..., 1], vals[..., 2], vals
        inner = vals[..., 3:]
        e = np.prod(inner, axis=-1)
        de = np.zeros_like(e)
        for j in range(inner.shape[-1]):
            de = de + self.betas[3 + j] * np.prod(np.delete(inner, j, axis=-1), axis=-1)
        return self.anchors[ia] + eps, vals[..., 0], vals[..., 1], vals[..., 2], e, de

    def _residual(self, ia, eps, z):
        psi, p0, p1, pr, e, de = self._pieces(ia, eps)
        d, sr1 = self.delta, self.sr1
        dw = pr * e + d * p0
        c2 = p1 * e + d * p0
        t1 = dw * c2
        t2 = z * sr1 * p0 * e
        ddw = e + pr * de + d
        dc2 = e + p1 * de + d
        dF = ddw * c2 + dw * dc2 - z * sr1 * (e + p0 * de)
        return t1 - t2, dF, np.abs(t1) + np.abs(t2), psi, p0, p1, pr, e, dw

    def _nearest_anchor(self, psi):
        ia = np.abs(psi[..., None] - self.anchors).argmin(-1)
        return ia, psi - self.anchors[ia]

    def candidates(self, z, newton=6):
        """All polished roots at the points ``z`` (1-D complex), shape (n, charts·2p)."""
        z = np.asarray(z, complex).ravel()
        dtype = float if np.all(z.imag == 0) else complex  # real companions are ~2x faster
        zc = z.real if dtype is float else z
        n = self.degree
        blocks = []
        for ia, s, N, K in self._charts:
            coef = np.empty((z.size, n + 1), dtype)
            coef[:] = N
            coef[:, : K.size] -= zc[:, None] * K
            comp = np.zeros((z.size, n, n), dtype)
            comp[:, 1:, :-1] = np.eye(n - 1)
            comp[:, :, -1] = -coef[:, :n] / coef[:, n:n + 1]
            blocks.append(self.anchors[ia] + s * np.linalg.eigvals(comp))
        psi = np.concatenate(blocks, axis=1)
        ia, eps = self._nearest_anchor(psi)
        zz = np.broadcast_to(z[:, None], psi.shape)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for _ in range(newton):
                F, dF = self._residual(ia, eps, zz)[:2]
                step = F / dF
                eps = eps - np.where(np.isfinite(step), step, 0.0)
            F, _, scale, psi, p0, p1, pr, e, dw = self._residual(ia, eps, zz)
            res = np.abs(F) / scale
            m = -self.sr1 * p0 / dw
            m_h = -self.sr1 * p0 / (e * pr)
            zeta = p1 * e * pr / (self.sr1 * p0)
            # subordination (Biane): ζ/Π_{i∈J} e_i stays in the upper half-plane for every
            # subset J of the factors e_i = 1 + ψ M/N_i (and R1 + ψ), i.e. the winding
            # arg ζ − Σ_i arg e_i (each arg e_i in (−π, 0] on the physical branch) is <= π
            # (ψ itself is in the lower half-plane; real ψ, i.e. real z outside the
            # support, is not constrained here)
            vals = self._pieces(ia, eps, values=True)[-1][..., 2:]
            tol = 1e-9 * (1.0 + np.abs(psi))
            args = np.arctan2(np.minimum(vals.imag, 0.0), vals.real)
            wind = np.angle(zeta) - np.sum(args, axis=-1)
            sub = (psi.imag <= tol) & ((psi.imag >= -tol) | (wind <= math.pi * (1.0 + 1e-9)))
        good = np.isfinite(m) & np.isfinite(m_h) & np.isfinite(zeta) & (res < 1e-9) & sub
        return m, m_h, zeta, good, psi

    def m_upper(self, z, tol=1e-10, return_psi=False):
        """Physical ``m(z)`` for ``Im z >= 0`` (boundary value from above on the real axis)."""
        z = np.asarray(z, complex)
        shape = z.shape
        m, m_h, zeta, good, psi = self.candidates(z)
        ok = (
            good
            & (m.imag >= -tol * (1 + np.abs(m)))
            & (m_h.imag >= -tol * (1 + np.abs(m_h)))
            & (zeta.imag >= -tol * (1 + np.abs(zeta)))
        )
        key = np.where(ok, m.imag / (1 + np.abs(m)), -np.inf)
        sel = key.argmax(-1)
        out = np.take_along_axis(m, sel[:, None], -1)[:, 0]
        out = np.where(ok.any(-1), out, np.nan)
        if return_psi:
            psi_sel = np.take_along_axis(psi, sel[:, None], -1)[:, 0]
            return out.reshape(shape), psi_sel.reshape(shape)
        return out.reshape(shape)

    def m_real(self, lam):
        """``m(λ + i0)`` for real ``λ >= 0``, real branch chosen by a quadrature reference
        outside the support (needed for singular values of finite matrices)."""
        lam = np.asarray(lam, float).ravel()
        m_up = self.m_upper(lam.astype(complex))
        inside = m_up.imag > 1e-9 * np.abs(m_up)
        out = m_up.copy()
        if np.any(~inside):
            x, w, rho = self.quadrature()[:3]
            zo = lam[~inside]
            # m(z) = ∫ dμ_Y(t)/(t² − z) on the symmetric law (nodes on x > 0, weight 2)
            ref = 2.0 * np.sum(w * rho / (x[None, :] ** 2 - zo[:, None]), axis=1)
            m_all, _, _, good, _ = self.candidates(zo.astype(complex))
            real = good & (np.abs(m_all.imag) <= 1e-8 * (1 + np.abs(m_all)))
            dist = np.where(real, np.abs(m_all.real - ref[:, None]), np.inf)
            sel = dist.argmin(-1)
            pick = np.take_along_axis(m_all.real, sel[:, None], -1)[:, 0]
            out[~inside] = np.where(np.isfinite(dist.min(-1)), pick, ref)
        return out

    # support -------------------------------------------------------------------------
    def critical_values(self):
        """Critical values ``z(ψ_c)``, ``z'(ψ_c) = 0``, polished in the anchored charts.

        Returns
        -------
        edges : ndarray
            Positive real critical values (candidate support edges in λ = x²).
        near : ndarray
            Real parts of complex critical values close to the positive axis
            (``|Im| < Re/2``): where two edges have just merged the density has a narrow
            dip there, and the quadrature splits the interval at these points.
        """
        roots = []
        for ia, s, N, K in self._charts:
            g = _P.polysub(_P.polymul(_P.polyder(N), K), _P.polymul(N, _P.polyder(K)))
            g = np.trim_zeros(g, "b")
            roots.append(self.anchors[ia] + s * np.roots(g[::-1]))
        r = np.concatenate(roots)
        ia, eps = self._nearest_anchor(r)

        def crit(e):
            _, p0, p1, pr, ee, de = self._pieces(ia, e)
            d, sr1 = self.delta, self.sr1
            dw = pr * ee + d * p0
            c2 = p1 * ee + d * p0
            num = dw * c2
            dnum = (ee + pr * de + d) * c2 + dw * (ee + p1 * de + d)
            k = sr1 * p0 * ee
            dk = sr1 * (ee + p0 * de)
            return dnum * k - num * dk, num / k

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            eps = eps.astype(complex)
            for _ in range(8):  # Newton, central-difference derivative (g is polynomial)
                hstep = 1e-6 * (np.abs(eps) + 1e-300)
                der = (crit(eps + hstep)[0] - crit(eps - hstep)[0]) / (2 * hstep)
                val = crit(eps)[0]
                step = val / der
                eps = eps - np.where(np.isfinite(step), step, 0.0)
            _, zc = crit(eps)
        zc = zc[np.isfinite(zc)]
        real = np.abs(zc.imag) <= 1e-12 * np.abs(zc)
        edges = np.sort(zc.real[real & (zc.real > 0)])
        if edges.size > 1:
            edges = edges[np.concatenate([[True], np.diff(edges) > 1e-12 * edges[1:]])]
        near = np.sort(zc.real[~real & (zc.real > 0) & (np.abs(zc.imag) < 0.5 * zc.real)])
        return edges, near

    def edges(self):
        """Positive real critical values of ``z(ψ)`` (candidate edges in λ = x²)."""
        return self.critical_values()[0]

    def support_lambda(self):
        """Support of ``ν`` (law of the squared singular values) as (k, 2) intervals."""
        if self._support is None:
            edges, near = self.critical_values()
            # cut the quadrature at complex critical values close to the axis and at real
            # ones inside the support (cusps, near-merging bulks; spurious ones are harmless)
            # (p >= 3 factors only; two-factor products keep the cuts of the quartic)
            self._near = np.sort(np.concatenate([near, edges])) if len(self.inner) > 1 else near
            pts = np.concatenate([[0.0], edges])
            mids = 0.5 * (pts[:-1] + pts[1:])
            m = self.m_upper(mids.astype(complex))
            inside = np.nan_to_num(m.imag) > 1e-8 * np.abs(np.nan_to_num(m))
            ints = []
            for lo, hi, ins in zip(pts[:-1], pts[1:], inside):
                if ins:
                    if ints and ints[-1][1] == lo:
                        ints[-1][1] = hi
                    else:
                        ints.append([lo, hi])
            if not ints:
                raise RuntimeError(
                    f"no support found for R1={self.r1}, inner={self.inner}, delta={self.delta}"
                )
            self._support = np.array(ints)
        return self._support

    def quadrature(self):
        """tanh-sinh nodes ``x > 0``, weights, density and ``m`` on the support of ``μ_Y``."""
        if self._quad is None:
            omu, sgn, wts = _tanh_sinh(_QUAD_STEP)
            xs, ws = [], []
            pieces = []
            for lo, hi in self.support_lambda():
                near = self._near
                if len(self.inner) > 1:
                    # products of >= 3 factors: the prior density diverges at 0 (faster than
                    # for two factors), so the density of Y rises steeply just above a small
                    # lower edge (or near 0 when R1 = 1); geometric cuts resolve that peak
                    powers = _GEOMETRIC_CUT ** np.arange(1, 40)
                    extra = lo * powers if lo > 0 else hi / powers[hi / powers > 1e-3 * self.delta * hi]
                    near = np.concatenate([near, extra])
                cuts = near[(near > lo * (1 + 1e-9)) & (near < hi * (1 - 1e-9))]
                cuts = np.sort(cuts)
                if cuts.size > 1:
                    cuts = cuts[np.concatenate([[True], np.diff(cuts) > 1e-10 * cuts[1:]])]
                pts = np.sqrt(np.concatenate([[lo], cuts, [hi]]))
                pieces += list(zip(pts[:-1], pts[1:]))
            for lo, hi in pieces:
                hw = 0.5 * (hi - lo)
                xs.append(np.where(sgn > 0, hi - hw * omu, lo + hw * omu))
                ws.append(wts * hw)
            x = np.concatenate(xs)
            w = np.concatenate(ws)
            # when the support touches 0 (R1 = 1) avoid evaluating at x² below roundoff
            xe = np.maximum(x, 1e-6 * x.max())
            m, psi = self.m_upper((xe * xe).astype(complex), return_psi=True)
            rho = xe * m.imag / math.pi
            if not np.all(np.isfinite(rho)):
                raise RuntimeError(
                    f"root selection failed for R1={self.r1}, inner={self.inner}, delta={self.delta}"
                )
            self._quad = (x, w, rho, m, psi, xe)
        return self._quad

    def inverse_moment(self):
        """``E_ν[1/t] = m(0) = −√R1 ψ₀/((R1 − 1) E'(ψ₀))`` (R1 > 1).

        ``ψ₀`` is the largest negative root of ``C = (1 + ψ) E' + Δψ`` (the branch of ``m``
        on ``(−∞, 0]`` starts at ψ = 0⁻), where ``D = C + (R1 − 1) E'``.
        """
        c_poly = _P.polyadd(_P.polymul(np.array([1.0, 1.0]), _inner_poly(self.inner)),
                            self.delta * np.array([0.0, 1.0]))
        roots = np.roots(c_poly[::-1])
        real = roots.real[(np.abs(roots.imag) <= 1e-8 * (1 + np.abs(roots))) & (roots.real < 0)]
        ia, eps = self._nearest_anchor(np.array([real.max()]))
        for _ in range(8):
            _, p0, p1, _, e, de = self._pieces(ia, eps)
            eps = eps - (p1 * e + self.delta * p0) / (e + p1 * de + self.delta)
        _, p0, _, _, e, _ = self._pieces(ia, eps)
        return float(-self.sr1 * p0[0] / ((self.r1 - 1.0) * e[0]))

    def overlap(self):
        """``1 − mmse`` as ``R1^{-1/2} ∫ f² dμ_Y`` with the cancellation-free form of ``f``.

        ``x f(x) = Re[((1 + ψ)(R1 + ψ) E'² − Δ² ψ²)/(√R1 ψ E')]`` on the support (module
        Notes); accurate in relative terms as λ = 1/Δ → 0.
        """
        x, w, rho, m, psi, xe = self.quadrature()
        ia, eps = self._nearest_anchor(psi)
        _, p0, p1, pr, e, _ = self._pieces(ia, eps)
        d = self.delta
        xf = (p1 * pr * e * e - d * d * p0 * p0) / (self.sr1 * p0 * e)
        f = xf.real / xe
        return 2.0 * float(np.sum(w * rho * f * f)) / math.sqrt(self.r1)

    def mmse(self):
        x, w, rho = self.quadrature()[:3]
        cubic = 2.0 * float(np.sum(w * rho**3))
        k = 0.5 * (self.r1 - 1.0)
        inv = self.inverse_moment() if self.r1 > 1.0 else 0.0
        bracket = math.pi**2 / 3.0 * cubic + k * k * inv
        d = self.delta
        return d - 4.0 * d * d / self.r1**1.5 * bracket


def _tanh_sinh(h, tmax=3.1):
    t = np.arange(-tmax, tmax + 0.5 * h, h)
    s = 0.5 * math.pi * np.sinh(t)
    e = np.exp(-2.0 * np.abs(s))
    one_minus_abs_u = 2.0 * e / (1.0 + e)  # distance of the node to the nearest end, in [0,2]
    wts = h * 0.5 * math.pi * np.cosh(t) / np.cosh(s) ** 2
    return one_minus_abs_u, np.sign(s), wts


@functools.lru_cache(maxsize=64)
def _curve(r1, r2, delta):
    return _Curve(r1, r2, delta)


# ---------------------------------------------------------------------------------------
# public direct (uncached-table) functions
# ---------------------------------------------------------------------------------------
def stieltjes(x, delta: float, *, aspect_ratio_p: float, aspect_ratio_n):
    """Stieltjes transform ``G(x) = ∫ dμ_Y(t)/(x − t)`` of the symmetrized singular-value law.

    Parameters
    ----------
    x : array_like of float or complex, any shape
        Real points (boundary value ``G(x + i0)``) or complex points with ``Im x >= 0``.
    delta : float
        Noise variance Δ > 0.
    aspect_ratio_p, aspect_ratio_n : float
        ``R1 = P/M >= 1`` and ``R2 = N/M > 0`` (or the sequence of inner ratios ``N_i/M`` of a product of
        p ≥ 3 factors).

    Returns
    -------
    ndarray of complex, shape of ``x``
        ``G``; on the real axis ``−Im G/π`` is the density and ``Re G`` the (principal
        value) Hilbert transform used by the denoiser.  Outside the support the real
        branch connected to infinity is returned.

    Notes
    -----
    ``G(z) = −z m(z²)`` with ``m`` the Stieltjes transform (``∫dν/(t − z)``) of the law of
    ``Y Yᵀ``; ``m`` from the quartic of the module Notes (equivalent to docs/theory.md §4.2).
    """
    r1, r2 = _check_ratios(aspect_ratio_p, aspect_ratio_n)
    curve = _curve(r1, r2, _check_delta(delta))
    z = np.asarray(x)
    shape = z.shape
    z = z.astype(complex).ravel()
    if np.any(z.imag < 0):
        raise ValueError("stieltjes: points must satisfy Im x >= 0")
    out = np.empty(z.size, complex)
    real = z.imag == 0
    if np.any(real):
        xr = z.real[real]
        m = curve.m_real(xr * xr).astype(complex)
        m = np.where(xr < 0, np.conj(m), m)  # (x + i0)² = x² − i0 sign(x)
        out[real] = -xr * m
    if np.any(~real):
        zc = z[~real]
        w = zc * zc
        lower = w.imag < 0
        m = curve.m_upper(np.where(lower, np.conj(w), w))
        out[~real] = -zc * np.where(lower, np.conj(m), m)
    return out.reshape(shape)


def density(x, delta: float, *, aspect_ratio_p: float, aspect_ratio_n):
    """Density of the symmetrized singular-value law ``μ_Y`` of ``Y``.

    Parameters
    ----------
    x : array_like of float
        Points (any shape); the law is symmetric, ``ρ(−x) = ρ(x)``.
    delta, aspect_ratio_p, aspect_ratio_n : float
        Δ > 0, ``R1 = P/M >= 1``, ``R2 = N/M > 0`` (or the sequence of inner ratios ``N_i/M`` of a product of
        p ≥ 3 factors).

    Returns
    -------
    ndarray of float, shape of ``x``
        ``ρ(x) = |x| Im m(x² + i0)/π``; integrates to 1 over the real line.
    """
    r1, r2 = _check_ratios(aspect_ratio_p, aspect_ratio_n)
    curve = _curve(r1, r2, _check_delta(delta))
    x = np.asarray(x, float)
    lam = (x * x).ravel()
    m = curve.m_upper(lam.astype(complex))
    rho = np.abs(x).ravel() * np.nan_to_num(m.imag) / math.pi
    rho = np.where(rho > 1e-14 * np.nanmax(np.abs(np.nan_to_num(m)), initial=1.0), rho, 0.0)
    return rho.reshape(x.shape)


def support(delta: float, *, aspect_ratio_p: float, aspect_ratio_n):
    """Support of ``μ_Y`` on the positive half-line (the law is symmetric).

    Parameters
    ----------
    delta : float
        Noise variance Δ > 0.
    aspect_ratio_p, aspect_ratio_n : float, and float or sequence of float, keyword-only
        ``R1`` and ``R2`` (or the inner ratios), module docstring.

    Returns
    -------
    ndarray of float, shape (k, 2)
        Disjoint intervals ``[lo, hi]`` of singular values, increasing; for two factors
        ``k`` is 1 or 2 (a separate bulk near 0 appears when ``R2 < 1`` and Δ is small).  The full
        support is their union with the mirror images.
    """
    r1, r2 = _check_ratios(aspect_ratio_p, aspect_ratio_n)
    return np.sqrt(_curve(r1, r2, _check_delta(delta)).support_lambda())


def shrinkage(sigma, delta: float, *, aspect_ratio_p: float, aspect_ratio_n):
    """Optimal singular-value shrinkage ``f(σ) = σ − (2Δ/√R1)(Re G(σ) + (R1 − 1)/(2σ))``.

    Parameters
    ----------
    sigma : array_like of float, > 0
        Singular values of ``Y`` (normalized as in docs/theory.md §4.2).
    delta, aspect_ratio_p, aspect_ratio_n : float
        Δ > 0, ``R1 >= 1``, ``R2 > 0``.

    Returns
    -------
    ndarray of float, shape of ``sigma``
        Singular values of the optimal rotationally invariant estimator (clipped at 0).

    References
    ----------
    Troiani et al. (2022), arXiv:2203.07752, optimal rectangular RIE.
    """
    r1, _ = _check_ratios(aspect_ratio_p, aspect_ratio_n)
    sigma = np.asarray(sigma, float)
    if np.any(sigma <= 0):
        raise ValueError("shrinkage: singular values must be > 0")
    g = stieltjes(sigma, delta, aspect_ratio_p=aspect_ratio_p, aspect_ratio_n=aspect_ratio_n)
    h = g.real + 0.5 * (r1 - 1.0) / sigma
    return np.maximum(sigma - 2.0 * delta / math.sqrt(r1) * h, 0.0)


def denoise(y, delta: float, *, aspect_ratio_p: float | None = None, aspect_ratio_n):
    """Apply the optimal rotationally invariant denoiser to an observed matrix.

    Parameters
    ----------
    y : array_like, shape (M, P) or (P, M)
        Observation ``Y = S + sqrt(Δ) Z`` normalized as in docs/theory.md §4.2 (noise entries of
        variance ``Δ/sqrt(MP)``).  A matrix with more rows than columns is transposed,
        denoised and transposed back.
    delta : float
        Noise variance Δ > 0.
    aspect_ratio_p : float, optional
        ``R1 = P/M``; defaults to the shape of ``y``.  A mismatch with the shape larger
        than 5% is logged as a warning.
    aspect_ratio_n : float
        ``R2 = N/M`` (inner dimension of the product over the small side).

    Returns
    -------
    ndarray of float, shape of ``y``
        ``Ŝ = U f(Σ) Vᵀ`` with ``f`` from :func:`shrinkage`.

    Raises
    ------
    ValueError
        If ``y`` is not a 2-D finite array or the parameters are out of range.
    """
    y = np.asarray(y, float)
    if y.ndim != 2 or not np.all(np.isfinite(y)):
        raise ValueError("denoise: y must be a finite 2-D array")
    transpose = y.shape[0] > y.shape[1]
    ym = y.T if transpose else y
    shape_ratio = ym.shape[1] / ym.shape[0]
    if aspect_ratio_p is None:
        aspect_ratio_p = shape_ratio
    elif abs(aspect_ratio_p / shape_ratio - 1.0) > 0.05:
        logger.warning("denoise: R1=%g but the matrix has P/M=%g", aspect_ratio_p, shape_ratio)
    # Ŝ = U f(Σ) Vᵀ = U diag(f(σ)/σ) Uᵀ Y, with (U, σ²) from the small Gram matrix (the
    # singular values are bounded away from 0 when P > M); plain SVD otherwise
    gram_eig, u = np.linalg.eigh(ym @ ym.T)
    s = np.sqrt(np.maximum(gram_eig, 0.0))
    if s.min() > 1e-6 * s.max():
        f = shrinkage(s, delta, aspect_ratio_p=aspect_ratio_p, aspect_ratio_n=aspect_ratio_n)
        out = (u * (f / s)) @ (u.T @ ym)
    else:
        u, s, vt = np.linalg.svd(ym, full_matrices=False)
        f = shrinkage(
            np.maximum(s, 1e-300), delta,
            aspect_ratio_p=aspect_ratio_p, aspect_ratio_n=aspect_ratio_n,
        )
        out = (u * f) @ vt
    return out.T if transpose else out


def mmse_noise(delta: float, *, aspect_ratio_p: float, aspect_ratio_n) -> float:
    """Direct (untabulated) MMSE per ``‖·‖_F²/sqrt(MP)`` at noise variance Δ.

    Parameters
    ----------
    delta : float
        Δ > 0.
    aspect_ratio_p, aspect_ratio_n : float
        ``R1 = P/M >= 1``, ``R2 = N/M > 0`` (or the sequence of inner ratios ``N_i/M`` of a product of
        p ≥ 3 factors).

    Returns
    -------
    float
        ``Δ − (4Δ²/R1^{3/2})[(π²/3)∫ρ_Y³ + ((R1−1)²/4) E_ν[1/t]]`` (module Notes), in
        ``[0, 1]``.  For ``Δ >= 1`` it is computed as ``1 − R1^{-1/2} ∫ f² dμ_Y`` with the
        cancellation-free shrinkage (module Notes).  Accuracy: ~1e-15 absolute for
        ``1e-8 <= Δ <= 1e6`` (relative ~1e-10 on the MMSE at small Δ).

    Notes
    -----
    Costs about 10–30 ms (root finding on ~100 tanh-sinh nodes).
    """
    r1, r2 = _check_ratios(aspect_ratio_p, aspect_ratio_n)
    curve = _Curve(r1, r2, _check_delta(delta))
    # large Δ: 1 − overlap keeps the small overlap exact; small Δ: the MMSE form
    return float(1.0 - curve.overlap() if curve.delta >= 1.0 else curve.mmse())


# ---------------------------------------------------------------------------------------
# piecewise Chebyshev tables
# ---------------------------------------------------------------------------------------
def _cheb_nodes(n):
    return np.cos(math.pi * (np.arange(n) + 0.5) / n)


def _cheb_coeffs(values):
    """Chebyshev coefficients from values at first-kind nodes (last axis)."""
    n = values.shape[-1]
    k = np.arange(n)
    cosm = np.cos(math.pi * np.outer(k, np.arange(n) + 0.5) / n)
    c = 2.0 / n * values @ cosm.T
    c[..., 0] *= 0.5
    return c


class _PiecewiseCheb:
    """Piecewise Chebyshev series on sorted panels ``[edges[i], edges[i+1]]``."""

    def __init__(self, edges, coeffs):
        self.edges = np.asarray(edges, float)
        self.coeffs = np.asarray(coeffs, float)
        self.mid = 0.5 * (self.edges[1:] + self.edges[:-1])
        self.half = 0.5 * (self.edges[1:] - self.edges[:-1])
        dc = [np.polynomial.chebyshev.chebder(c) for c in self.coeffs]
        self.dcoeffs = np.array([np.append(d, 0.0) for d in dc]) / self.half[:, None]
        self.coeffs_list = [list(map(float, c)) for c in self.coeffs]
        self.dcoeffs_list = [list(map(float, c)) for c in self.dcoeffs]
        self.edges_list = list(map(float, self.edges))
        self.mid_list = list(map(float, self.mid))
        self.half_list = list(map(float, self.half))
        self.n_panels = len(self.coeffs_list)
        self._k = np.arange(self.coeffs.shape[1], dtype=float)

    def locate(self, t):
        i = np.searchsorted(self.edges, t, side="right") - 1
        return np.clip(i, 0, self.coeffs.shape[0] - 1)

    @staticmethod
    def _clenshaw(c, u):
        b1 = np.zeros_like(u)
        b2 = np.zeros_like(u)
        for k in range(c.shape[-1] - 1, 0, -1):
            b1, b2 = 2.0 * u * b1 - b2 + c[..., k], b1
        return u * b1 - b2 + c[..., 0]

    def __call__(self, t, deriv=False):
        """Vectorized evaluation (and derivative) through ``T_k(u) = cos(k arccos u)``."""
        t = np.asarray(t, float)
        i = np.minimum(np.maximum(np.searchsorted(self.edges, t, side="right") - 1, 0),
                       self.coeffs.shape[0] - 1)
        u = np.minimum(np.maximum((t - self.mid[i]) / self.half[i], -1.0), 1.0)
        theta = np.arccos(u)[..., None]
        k = self._k
        val = np.sum(self.coeffs[i] * np.cos(k * theta), axis=-1)
        if not deriv:
            return val
        sin_theta = np.sin(theta)
        small = sin_theta < 1e-7
        # dT_k/du = k sin(kθ)/sin θ, → k² (±1)^(k+1) at u = ±1
        edge = k * k * np.where(u[..., None] > 0, 1.0, (-1.0) ** (k + 1))
        dt = np.where(small, edge, k * np.sin(k * theta) / np.where(small, 1.0, sin_theta))
        return val, np.sum(self.coeffs[i] * dt, axis=-1) / self.half[i]

    def scalar(self, t, deriv=False):
        """Pure-Python evaluation for one float (fast path); ``(value, derivative)`` if
        ``deriv``."""
        i = bisect.bisect_right(self.edges_list, t) - 1
        i = min(max(i, 0), self.n_panels - 1)
        u = (t - self.mid_list[i]) / self.half_list[i]
        c = self.coeffs_list[i]
        b1 = b2 = 0.0
        for k in range(len(c) - 1, 0, -1):
            b1, b2 = 2.0 * u * b1 - b2 + c[k], b1
        val = u * b1 - b2 + c[0]
        if not deriv:
            return val
        c = self.dcoeffs_list[i]
        b1 = b2 = 0.0
        for k in range(len(c) - 1, 0, -1):
            b1, b2 = 2.0 * u * b1 - b2 + c[k], b1
        return val, u * b1 - b2 + c[0]

    def antiderivative(self):
        """Piecewise Chebyshev of ``∫_{edges[0]}^t``, continuous across panels."""
        ints = []
        const = 0.0
        for c, h in zip(self.coeffs, self.half):
            ci = np.polynomial.chebyshev.chebint(c, lbnd=-1.0) * h
            ci[0] += const
            const = float(np.polynomial.chebyshev.chebval(1.0, ci))
            ints.append(ci)
        return _PiecewiseCheb(self.edges, np.array(ints))


def _build_adaptive(fun, lo, hi, *, width, order, tol, breakpoints=(), min_width=1e-3):
    """Adaptive panels on ``[lo, hi]``; ``fun(t_array) -> (k, n) values``, first row refined.

    ``tol(a, b)`` is the accepted size of the trailing Chebyshev coefficients on ``[a, b]``.
    """
    n_panels = max(1, int(math.ceil((hi - lo) / width)))
    grid = np.linspace(lo, hi, n_panels + 1)
    bps = np.asarray([b for b in breakpoints if lo < b < hi], float)
    if bps.size:
        grid = np.sort(np.concatenate([grid, bps]))
        grid = grid[np.concatenate([[True], np.diff(grid) > 1e-9])]
    todo = [(a, b, np.inf) for a, b in zip(grid[:-1], grid[1:])]
    done = []
    nodes = _cheb_nodes(order)
    evaluations = 0
    plateau = 0
    while todo:
        a, b, parent_tail = todo.pop()
        t = 0.5 * (a + b) + 0.5 * (b - a) * nodes
        vals = fun(t)
        evaluations += order
        c = _cheb_coeffs(vals)
        tail = float(np.max(np.abs(c[0, -3:])) / max(1.0, abs(c[0, 0])))
        if tail <= tol(a, b) or (b - a) <= min_width:
            done.append((a, b, c))
        elif tail > 0.7 * parent_tail:
            # splitting no longer reduces the tail: the direct values' rounding floor
            plateau += 1
            done.append((a, b, c))
        else:
            mid = 0.5 * (a + b)
            todo += [(a, mid, tail), (mid, b, tail)]
    if plateau:
        logger.debug("%d table panels stopped at the rounding floor of the direct values", plateau)
    done.sort(key=lambda p: p[0])
    edges = [done[0][0]] + [p[1] for p in done]
    coeffs = np.stack([p[2] for p in done], axis=1)  # (k, panels, order)
    return edges, coeffs, evaluations


# ---------------------------------------------------------------------------------------
# channel object with cached tables
# ---------------------------------------------------------------------------------------
_LAM_SMALL = 1e-6  # below: series λ − λ² + c₃λ³
_LAM_LARGE = 1e8  # above: mmse = c₁/λ + c₂/λ²
_TABLE_TOL = 1e-13
_TABLE_FORMAT = 1
_DATA_DIR = data_dir()  # data/ of the repository, installed as replica_hciz_data


class RectangularChannel:
    r"""Rectangular product-matrix denoising channel of docs/theory.md §4.2 with fast tables.

    Parameters
    ----------
    aspect_ratio_p : float
        ``R1 = P/M >= 1`` (transpose the problem if ``P < M``).
    aspect_ratio_n : float or sequence of float
        ``R2 = N/M > 0`` (inner dimension of ``S = U_L U_R/sqrt(N sqrt(MP))``), or the inner
        ratios ``N_i/M > 0`` of a product of ``p = len + 1 >= 3`` Gaussian factors (any
        order; stored sorted, as a tuple).
    resolution : int, optional
        Chebyshev order per table panel (>= 8, default 16).  Panels are refined until
        the trailing coefficients are below 1e-13 (or the rounding floor of the direct
        values), with breakpoints at the Δ where the support changes topology; table and
        direct evaluation then agree to about 1e-12 (tested to 1e-9).
    use_disk_cache : bool, optional
        Load the tables from ``data/rectangular_table_*.npz`` or from the user cache
        (:func:`table_cache_dir`) when a file for the same (R1, R2, resolution, format)
        exists (written by :meth:`save_tables`, see ``scripts/make_rectangular_reference.py``);
        otherwise build them (a few seconds) and write them to the user cache.

    Notes
    -----
    SNR convention: ``λ = 1/Δ`` (``Y' = sqrt(λ) S̃ + Z'`` with unit-variance entries).
    ``mmse(λ)`` is per ``‖·‖_F²/sqrt(MP)`` of ``S`` (= per entry of ``S̃``), the signal
    power is 1, ``overlap = 1 − mmse``, and ``mutual_information(λ) = I(S;Y)/(MP)``
    satisfies ``2 ι'(λ) = mmse(λ)`` (module Notes).  Tables are built lazily on the first
    call of a table method (a few seconds; about 300–500 direct evaluations) on
    ``ln λ ∈ [ln 1e-6, ln 1e8]``, in two charts: ``ln(overlap/λ)`` for ``λ <= 1`` and
    ``ln mmse`` for ``λ >= 1``, so that both small overlaps and small errors keep full
    relative accuracy.  Outside: ``overlap = λ − λ² + c₃ λ³`` for ``λ < 1e-6``
    (:func:`low_snr_cubic`, verified to ~1e-4 and irrelevant there at double precision) and
    ``mmse = c₁/λ + c₂/λ²`` for ``λ > 1e8`` (``c₁`` exact, ``c₂`` matched to the table end).
    A product of ``p >= 3`` factors (``aspect_ratio_n`` a sequence) costs about 10 s of
    table building per shape (a direct evaluation is ~2–3× slower than for two factors).

    References
    ----------
    Troiani, Erba, Krzakala, Maillard, Zdeborová (2022), arXiv:2203.07752;
    Benaych-Georges (2009), rectangular free convolution.
    """

    def __init__(
        self,
        aspect_ratio_p: float,
        aspect_ratio_n,
        *,
        resolution: int = 16,
        use_disk_cache: bool = True,
    ):
        self.aspect_ratio_p, self.aspect_ratio_n = _check_ratios(aspect_ratio_p, aspect_ratio_n)
        resolution = int(resolution)
        if resolution < 8:
            raise ValueError(f"resolution must be >= 8, got {resolution}")
        self.resolution = resolution
        self.use_disk_cache = bool(use_disk_cache)
        self._transition_lambdas = None
        self.signal_power = 1.0
        self.high_snr_coefficient = high_snr_coefficient(self.aspect_ratio_p, self.aspect_ratio_n)
        self.low_snr_cubic = low_snr_cubic(self.aspect_ratio_p, self.aspect_ratio_n)
        self.n_factors = len(_inner_tuple(self.aspect_ratio_n)) + 1
        self._tables = None

    def __repr__(self):
        return (
            f"RectangularChannel(aspect_ratio_p={self.aspect_ratio_p!r}, "
            f"aspect_ratio_n={self.aspect_ratio_n!r}, resolution={self.resolution})"
        )

    # direct evaluations -------------------------------------------------------------
    def _curve(self, delta):
        return _Curve(self.aspect_ratio_p, self.aspect_ratio_n, _check_delta(delta))

    def direct_mmse_noise(self, delta: float) -> float:
        """Uncached MMSE at noise variance Δ (no table; ~10–30 ms).

        Uses the cancellation-free overlap form for ``Δ >= 1`` and the MMSE form below.
        """
        curve = self._curve(delta)
        return 1.0 - curve.overlap() if curve.delta >= 1.0 else curve.mmse()

    def direct_overlap(self, lam: float) -> float:
        """Uncached ``overlap(λ) = 1 − mmse(1/λ)``, relative accuracy ~1e-12 for all λ > 0."""
        lam = float(lam)
        if lam == 0.0:
            return 0.0
        curve = self._curve(1.0 / lam)
        return curve.overlap() if lam <= 1.0 else 1.0 - curve.mmse()

    # spectral quantities ------------------------------------------------------------
    def stieltjes(self, x, delta: float):
        """``G(x)`` of the symmetrized singular-value law; see :func:`stieltjes`."""
        return stieltjes(
            x, delta, aspect_ratio_p=self.aspect_ratio_p, aspect_ratio_n=self.aspect_ratio_n
        )

    def density(self, x, delta: float):
        """Density of ``μ_Y`` at ``x`` (any shape); see :func:`density`."""
        return density(
            x, delta, aspect_ratio_p=self.aspect_ratio_p, aspect_ratio_n=self.aspect_ratio_n
        )

    def support(self, delta: float):
        """Positive support intervals of ``μ_Y``, shape (k, 2); see :func:`support`."""
        return support(delta, aspect_ratio_p=self.aspect_ratio_p, aspect_ratio_n=self.aspect_ratio_n)

    def shrinkage(self, sigma, delta: float):
        """Optimal singular-value shrinkage; see :func:`shrinkage`."""
        return shrinkage(
            sigma, delta, aspect_ratio_p=self.aspect_ratio_p, aspect_ratio_n=self.aspect_ratio_n
        )

    def denoise(self, y, delta: float):
        """Optimal RIE ``Ŝ`` of an observed matrix ``y`` (shape (M, P) or (P, M)).

        ``R1`` is taken from the channel (a shape mismatch > 5% is logged); see
        :func:`denoise`.
        """
        return denoise(
            y, delta, aspect_ratio_p=self.aspect_ratio_p, aspect_ratio_n=self.aspect_ratio_n
        )

    # tables -------------------------------------------------------------------------
    def _build_raw(self):
        """Direct evaluations on adaptive Chebyshev panels (the expensive part)."""
        t_small, t_large = math.log(_LAM_SMALL), math.log(_LAM_LARGE)

        def fun_a(ts):
            lam = np.exp(ts)
            ov = np.array([self._curve(1.0 / x).overlap() for x in lam])
            a = np.log(ov / lam)
            return np.stack([a, np.exp(2 * ts + a)])

        def fun_b(ts):
            lam = np.exp(ts)
            mm = np.array([self._curve(1.0 / x).mmse() for x in lam])
            b = np.log(mm)
            return np.stack([b, np.exp(ts + b)])

        order = self.resolution
        breaks = self._transitions(t_small, t_large)
        # chart a: an error δ on ln(overlap/λ) is an absolute error λ·δ on the overlap,
        # whose direct evaluation is accurate to ~1e-16 absolute
        ea, ca, na = _build_adaptive(
            fun_a, t_small, 0.0, width=3.5, order=order, breakpoints=breaks,
            tol=lambda a, b: max(_TABLE_TOL, 1e-14 * math.exp(-b)),
        )
        eb, cb, nb = _build_adaptive(
            fun_b, 0.0, t_large, width=2.5, order=order, breakpoints=breaks,
            tol=lambda a, b: _TABLE_TOL,
        )
        logger.info(
            "RectangularChannel(R1=%g, R2=%s): tables with %d+%d panels, %d direct evaluations",
            self.aspect_ratio_p, self.aspect_ratio_n, len(ea) - 1, len(eb) - 1, na + nb,
        )
        return dict(
            edges_a=np.asarray(ea), coeffs_a=ca, edges_b=np.asarray(eb), coeffs_b=cb,
            transitions=np.asarray(self._transition_lambdas),
        )

    def _finalize(self, raw):
        t_small, t_large = math.log(_LAM_SMALL), math.log(_LAM_LARGE)
        ea, ca, eb, cb = raw["edges_a"], raw["coeffs_a"], raw["edges_b"], raw["coeffs_b"]
        self._transition_lambdas = np.asarray(raw["transitions"])
        tab = {"raw": raw}
        tab["a"] = _PiecewiseCheb(ea, ca[0])
        tab["b"] = _PiecewiseCheb(eb, cb[0])
        tab["ia"] = _PiecewiseCheb(ea, ca[1]).antiderivative()
        tab["ib"] = _PiecewiseCheb(eb, cb[1]).antiderivative()
        c3 = self.low_snr_cubic
        ls = _LAM_SMALL
        tab["int_small"] = ls**2 / 2 - ls**3 / 3 + c3 * ls**4 / 4  # ∫_0^{λs} overlap
        tab["iota_one"] = 0.5 * (1.0 - tab["int_small"] - tab["ia"].scalar(0.0))
        tab["iota_large"] = tab["iota_one"] + 0.5 * tab["ib"].scalar(t_large)
        c1 = self.high_snr_coefficient
        mmse_large = math.exp(tab["b"].scalar(t_large))
        tab["c2"] = (mmse_large * _LAM_LARGE - c1) * _LAM_LARGE
        tab["ov_small"] = math.exp(tab["a"].scalar(t_small)) * _LAM_SMALL
        tab["ov_one"] = math.exp(tab["a"].scalar(0.0))
        tab["log_mmse_large"] = tab["b"].scalar(t_large)
        # monotone keys at the panel edges for the inverse
        tab["key_a"] = np.asarray(tab["a"].edges) + tab["a"](np.asarray(tab["a"].edges))
        tab["key_b"] = -tab["b"](np.asarray(tab["b"].edges))
        tab["key_a_list"] = list(map(float, tab["key_a"]))
        tab["key_b_list"] = list(map(float, tab["key_b"]))
        self._tables = tab
        return tab

    def _table_name(self):
        if self.n_factors == 2:
            inner = f"R2_{self.aspect_ratio_n!r}"
        else:  # products of >= 3 factors: all inner ratios
            inner = "N_" + "_".join(repr(x) for x in self.aspect_ratio_n)
        return f"rectangular_table_R1_{self.aspect_ratio_p!r}_{inner}_res{self.resolution}.npz"

    def table_path(self):
        """Path of the shipped table for this (R1, R2, resolution) under ``data/``."""
        return _DATA_DIR / self._table_name()

    def user_table_path(self):
        """Path of the table in the user cache (:func:`table_cache_dir`; None when it is off)."""
        directory = table_cache_dir()
        return None if directory is None else directory / self._table_name()

    def save_tables(self, path=None):
        """Write the raw tables (panels and Chebyshev coefficients) to ``path`` (npz),
        atomically; default :meth:`table_path`."""
        import os
        import tempfile

        path = self.table_path() if path is None else path
        raw = self.tables["raw"]
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
        os.close(fd)
        np.savez(
            tmp, format_version=_TABLE_FORMAT, aspect_ratio_p=self.aspect_ratio_p,
            aspect_ratio_n=self.aspect_ratio_n, resolution=self.resolution,
            lam_small=_LAM_SMALL, lam_large=_LAM_LARGE, **raw,
        )
        os.replace(tmp, path)
        return path

    def _load(self):
        if not self.use_disk_cache:
            return None
        for path in (self.table_path(), self.user_table_path()):
            if path is not None and path.exists():
                raw = self._load_file(path)
                if raw is not None:
                    return raw
        return None

    def _load_file(self, path):
        try:
            with np.load(path) as f:
                ok = (
                    int(f["format_version"]) == _TABLE_FORMAT
                    and float(f["aspect_ratio_p"]) == self.aspect_ratio_p
                    and np.array_equal(np.atleast_1d(f["aspect_ratio_n"]),
                                       np.asarray(_inner_tuple(self.aspect_ratio_n)))
                    and int(f["resolution"]) == self.resolution
                    and float(f["lam_small"]) == _LAM_SMALL
                    and float(f["lam_large"]) == _LAM_LARGE
                )
                if not ok:
                    return None
                raw = {k: np.array(f[k]) for k in
                       ("edges_a", "coeffs_a", "edges_b", "coeffs_b", "transitions")}
        except (OSError, KeyError, ValueError) as err:
            logger.warning("ignoring unreadable table cache %s: %s", path, err)
            return None
        logger.debug("loaded rectangular tables from %s", path)
        return raw

    def _build(self):
        raw = self._load()
        if raw is None:
            where = self.user_table_path() if self.use_disk_cache else None
            logger.info("building the tables of the rectangular channel (R1=%g, R2=%s): done once, %s",
                        self.aspect_ratio_p, self.aspect_ratio_n,
                        f"then read from the cache {where}" if where is not None else "not cached")
            raw = self._build_raw()
            tab = self._finalize(raw)
            if self.use_disk_cache and self.user_table_path() is not None:
                try:
                    self.save_tables(self.user_table_path())
                except OSError as err:  # read-only home, full disk: the tables stay in memory
                    logger.info("could not cache rectangular tables in %s: %s", self.user_table_path(), err)
            return tab
        return self._finalize(raw)

    def _support_count(self, t):
        return len(self._curve(math.exp(-t)).support_lambda())

    def _transitions(self, t_lo, t_hi, samples=80):
        """``ln λ`` where the number of support intervals changes (mmse is not analytic
        there); located by bisection to 1e-12 and used as table breakpoints."""
        ts = np.linspace(t_lo, t_hi, samples)
        counts = [self._support_count(t) for t in ts]
        out = []
        for a, b, ca, cb in zip(ts[:-1], ts[1:], counts[:-1], counts[1:]):
            if ca == cb:
                continue
            while b - a > 1e-12:
                mid = 0.5 * (a + b)
                if self._support_count(mid) == ca:
                    a = mid
                else:
                    b = mid
            out.append(0.5 * (a + b))
        if out:
            logger.debug("support transitions at lambda = %s", np.exp(out))
        self._transition_lambdas = np.exp(np.array(out))
        return out

    @property
    def tables(self):
        """The lazily built table dictionary (built on first access)."""
        return self._tables if self._tables is not None else self._build()

    @property
    def transitions(self) -> np.ndarray:
        """SNRs λ where the number of support intervals of ``μ_Y`` changes, shape (k,).

        The MMSE is not analytic there (the tables put panel breakpoints at these λ).
        Located by bisection to 1e-12 in ``ln λ`` on ``[1e-6, 1e8]``; building or loading
        the tables on first access (never ``None``).
        """
        self.tables  # noqa: B018 - builds or loads the tables, which set the transitions
        return self._transition_lambdas

    def _regions(self, lam):
        lam = np.asarray(lam, float)
        if np.any(~(lam >= 0)):
            raise ValueError("SNR lam must be >= 0 (and not NaN)")
        return lam

    def _scalar(self, lam):
        """(overlap, mmse, d overlap/dλ) for one float λ >= 0, pure Python."""
        tab = self.tables
        if lam < _LAM_SMALL:
            c3 = self.low_snr_cubic
            ov = lam * (1.0 - lam + c3 * lam * lam)
            return ov, 1.0 - ov, 1.0 - 2.0 * lam + 3.0 * c3 * lam * lam
        if lam <= 1.0:
            a, da = tab["a"].scalar(math.log(lam), deriv=True)
            ea = math.exp(a)
            return lam * ea, 1.0 - lam * ea, ea * (1.0 + da)
        if lam <= _LAM_LARGE:
            b, db = tab["b"].scalar(math.log(lam), deriv=True)
            mm = math.exp(b)
            return -math.expm1(b), mm, -mm * db / lam
        c1, c2 = self.high_snr_coefficient, tab["c2"]
        mm = c1 / lam + c2 / lam**2
        return 1.0 - mm, mm, c1 / lam**2 + 2.0 * c2 / lam**3

    def _scalar_iota(self, lam):
        tab = self.tables
        if lam < _LAM_SMALL:
            c3 = self.low_snr_cubic
            return 0.5 * (lam - (lam**2 / 2 - lam**3 / 3 + c3 * lam**4 / 4))
        if lam <= 1.0:
            return 0.5 * (lam - tab["int_small"] - tab["ia"].scalar(math.log(lam)))
        if lam <= _LAM_LARGE:
            return tab["iota_one"] + 0.5 * tab["ib"].scalar(math.log(lam))
        c1, c2 = self.high_snr_coefficient, tab["c2"]
        return tab["iota_large"] + 0.5 * (
            c1 * math.log(lam / _LAM_LARGE) - c2 * (1.0 / lam - 1.0 / _LAM_LARGE)
        )

    def _scalar_inverse(self, m):
        tab = self.tables
        if m == 0.0:
            return 0.0
        if m < tab["ov_small"]:
            c3 = self.low_snr_cubic
            x = m
            for _ in range(6):
                x -= (x * (1 - x + c3 * x * x) - m) / (1 - 2 * x + 3 * c3 * x * x)
            return x
        log_mmse = math.log1p(-m)
        if m <= tab["ov_one"]:
            table, keys, y, slope, sign = tab["a"], tab["key_a_list"], math.log(m), 1.0, 1.0
        elif log_mmse >= tab["log_mmse_large"]:
            table, keys, y, slope, sign = tab["b"], tab["key_b_list"], -log_mmse, 0.0, -1.0
        else:
            mm = math.exp(log_mmse)
            c1, c2 = self.high_snr_coefficient, tab["c2"]
            return (c1 + math.sqrt(c1 * c1 + 4.0 * c2 * mm)) / (2.0 * mm)
        i = min(max(bisect.bisect_left(keys, y) - 1, 0), table.n_panels - 1)
        lo, hi = table.edges_list[i], table.edges_list[i + 1]
        klo, khi = keys[i], keys[i + 1]
        t = lo + (hi - lo) * min(max((y - klo) / (khi - klo), 0.0), 1.0) if khi > klo else lo
        for _ in range(30):
            v, dv = table.scalar(t, deriv=True)
            t_new = min(max(t - (sign * v + slope * t - y) / (sign * dv + slope), lo), hi)
            if abs(t_new - t) <= 1e-15 * (1.0 + abs(t)):
                t = t_new
                break
            t = t_new
        return math.exp(t)

    @staticmethod
    def _is_scalar(x):
        return isinstance(x, float | int | np.floating | np.integer) and not isinstance(x, bool)

    def _evaluate(self, lam, column):
        """Column ``column`` of (overlap, mmse, d overlap/dλ) at a scalar or an array λ ≥ 0."""
        if self._is_scalar(lam):
            if not lam >= 0:
                raise ValueError("SNR lam must be >= 0")
            return self._scalar(float(lam))[column]
        return self._vector(np.asarray(lam, float))[column]

    def _vector(self, lam):
        """(overlap, mmse, d overlap/dλ) arrays for an array λ."""
        tab = self.tables
        lam = self._regions(lam)
        if lam.size == 1:  # one element: the pure-Python path is ~30x cheaper
            vals = self._scalar(float(lam.reshape(-1)[0]))
            return tuple(np.full(lam.shape, v) for v in vals)
        ov = np.empty(lam.shape)
        mm = np.empty(lam.shape)
        der = np.empty(lam.shape)
        c3 = self.low_snr_cubic
        r0 = lam < _LAM_SMALL
        r1 = (~r0) & (lam <= 1.0)
        r2 = (lam > 1.0) & (lam <= _LAM_LARGE)
        r3 = lam > _LAM_LARGE
        x = lam[r0]
        ov[r0] = x * (1.0 - x + c3 * x * x)
        mm[r0] = 1.0 - ov[r0]
        der[r0] = 1.0 - 2.0 * x + 3.0 * c3 * x * x
        if np.any(r1):
            x = lam[r1]
            a, da = tab["a"](np.log(x), deriv=True)
            ov[r1] = x * np.exp(a)
            mm[r1] = 1.0 - ov[r1]
            der[r1] = np.exp(a) * (1.0 + da)
        if np.any(r2):
            x = lam[r2]
            b, db = tab["b"](np.log(x), deriv=True)
            mm[r2] = np.exp(b)
            ov[r2] = -np.expm1(b)
            der[r2] = -mm[r2] * db / x
        if np.any(r3):
            x = lam[r3]
            c1, c2 = self.high_snr_coefficient, tab["c2"]
            mm[r3] = c1 / x + c2 / x**2
            ov[r3] = 1.0 - mm[r3]
            der[r3] = c1 / x**2 + 2.0 * c2 / x**3
        return ov, mm, der

    def overlap(self, lam):
        """Overlap ``1 − mmse(λ)`` (signal power 1, ``overlap(0) = 0``).

        Parameters
        ----------
        lam : float or array_like of float, >= 0
            SNR ``λ = 1/Δ``.

        Returns
        -------
        float or ndarray
            Same shape as ``lam``; increasing from 0 to 1.

        Raises
        ------
        ValueError
            If ``lam < 0`` or NaN.
        """
        return self._evaluate(lam, 0)

    def mmse(self, lam):
        """MMSE per ``‖·‖_F²/sqrt(MP)`` at SNR ``λ = 1/Δ`` (``mmse(0) = 1``), table-based.

        Same conventions as :meth:`overlap`; for large λ the value keeps full relative
        accuracy (``mmse ≈ c₁/λ``).
        """
        return self._evaluate(lam, 1)

    def mmse_noise(self, delta):
        """Table-based MMSE as a function of the noise variance Δ > 0 (``= mmse(1/Δ)``)."""
        if self._is_scalar(delta):
            if not delta > 0:
                raise ValueError("noise variance delta must be > 0")
            return self._scalar(1.0 / float(delta))[1]
        d = np.asarray(delta, float)
        if np.any(~(d > 0)):
            raise ValueError("noise variance delta must be > 0")
        out = self.mmse(1.0 / d)
        return float(out) if np.ndim(delta) == 0 else out

    def overlap_derivative(self, lam):
        """``d overlap/dλ = −d mmse/dλ`` (> 0), from the differentiated Chebyshev tables.

        Parameters
        ----------
        lam : float or array_like, >= 0

        Returns
        -------
        float or ndarray of the shape of ``lam``.
        """
        out = self._evaluate(lam, 2)
        return float(out) if np.ndim(lam) == 0 else out

    def mutual_information(self, lam):
        """Mutual information per entry ``ι(λ) = I(S; Y)/(MP) = ½ ∫₀^λ mmse(t) dt``.

        Normalization: nats per entry of the M×P signal, SNR ``λ = 1/Δ`` of the
        unit-variance form ``Y' = sqrt(λ) S̃ + Z'``; then ``2 ι'(λ) = mmse(λ)``
        (I-MMSE, docs/theory.md §6.2).  Grows like ``(c₁/2) ln λ`` at large λ.

        Parameters
        ----------
        lam : float or array_like, >= 0

        Returns
        -------
        float or ndarray of the shape of ``lam``.
        """
        if self._is_scalar(lam):
            if not lam >= 0:
                raise ValueError("SNR lam must be >= 0")
            return self._scalar_iota(float(lam))
        tab = self.tables
        lam_arr = self._regions(lam)
        out = np.empty(lam_arr.shape)
        c3 = self.low_snr_cubic
        r0 = lam_arr < _LAM_SMALL
        r1 = (~r0) & (lam_arr <= 1.0)
        r2 = (lam_arr > 1.0) & (lam_arr <= _LAM_LARGE)
        r3 = lam_arr > _LAM_LARGE
        x = lam_arr[r0]
        out[r0] = 0.5 * (x - (x**2 / 2 - x**3 / 3 + c3 * x**4 / 4))
        if np.any(r1):
            x = lam_arr[r1]
            out[r1] = 0.5 * (x - tab["int_small"] - tab["ia"](np.log(x)))
        if np.any(r2):
            out[r2] = tab["iota_one"] + 0.5 * tab["ib"](np.log(lam_arr[r2]))
        if np.any(r3):
            x = lam_arr[r3]
            c1, c2 = self.high_snr_coefficient, tab["c2"]
            out[r3] = tab["iota_large"] + 0.5 * (
                c1 * np.log(x / _LAM_LARGE) - c2 * (1.0 / x - 1.0 / _LAM_LARGE)
            )
        return float(out) if np.ndim(lam) == 0 else out

    def overlap_inverse(self, m):
        """Inverse of :meth:`overlap`: the SNR λ with ``overlap(λ) = m``.

        Parameters
        ----------
        m : float or array_like, in ``[0, 1)``
            Target overlap; values up to ``1 − 1e-12`` are handled through the large-λ
            asymptotics (no clipping).  Conditioning: a relative error ``ε`` on ``m``
            near 1 moves λ by ``ε/(1 − m)`` relatively.

        Returns
        -------
        float or ndarray of the shape of ``m``.

        Raises
        ------
        ValueError
            If some ``m`` is outside ``[0, 1)``.
        """
        if self._is_scalar(m):
            if not 0.0 <= m < 1.0:
                raise ValueError("overlap_inverse: m must lie in [0, 1)")
            return self._scalar_inverse(float(m))
        tab = self.tables
        m_arr = np.asarray(m, float)
        if np.any(~((m_arr >= 0) & (m_arr < 1))):
            raise ValueError("overlap_inverse: m must lie in [0, 1)")
        out = np.zeros(m_arr.shape)
        c3 = self.low_snr_cubic
        r0 = (m_arr > 0) & (m_arr < tab["ov_small"])
        r1 = (m_arr >= tab["ov_small"]) & (m_arr <= tab["ov_one"])
        log_mmse = np.log1p(-m_arr)
        r3 = log_mmse < tab["log_mmse_large"]
        r2 = (m_arr > tab["ov_one"]) & ~r3
        if np.any(r0):
            y = m_arr[r0]
            x = y.copy()
            for _ in range(6):
                x -= (x * (1 - x + c3 * x * x) - y) / (1 - 2 * x + 3 * c3 * x * x)
            out[r0] = x
        if np.any(r1):
            y = np.log(m_arr[r1])
            t = self._solve(tab["a"], tab["key_a"], y, slope=1.0, sign=1.0)
            out[r1] = np.exp(t)
        if np.any(r2):
            y = -log_mmse[r2]
            t = self._solve(tab["b"], tab["key_b"], y, slope=0.0, sign=-1.0)
            out[r2] = np.exp(t)
        if np.any(r3):
            mm = np.exp(log_mmse[r3])
            c1, c2 = self.high_snr_coefficient, tab["c2"]
            u = 2.0 * mm / (c1 + np.sqrt(c1 * c1 + 4.0 * c2 * mm))
            out[r3] = 1.0 / u
        return float(out) if np.ndim(m) == 0 else out

    @staticmethod
    def _solve(table, keys, y, *, slope, sign):
        """Solve ``sign·table(t) + slope·t = y`` (increasing key) by safeguarded Newton."""
        edges = np.asarray(table.edges)
        i = np.clip(np.searchsorted(keys, y) - 1, 0, len(edges) - 2)
        lo, hi = edges[i], edges[i + 1]
        klo, khi = keys[i], keys[i + 1]
        t = lo + (hi - lo) * np.clip((y - klo) / np.where(khi > klo, khi - klo, 1.0), 0, 1)
        for _ in range(30):
            v, dv = table(t, deriv=True)
            f = sign * v + slope * t - y
            df = sign * dv + slope
            step = f / df
            t_new = np.clip(t - step, lo, hi)
            if np.all(np.abs(t_new - t) <= 1e-15 * (1 + np.abs(t))):
                t = t_new
                break
            t = t_new
        return t


def table_cache_dir():
    """Directory of the user cache of rectangular tables, or None when caching is off.

    The same location as the symmetric tables (:func:`hciz.cache.cache_dir`):
    ``$REPLICA_HCIZ_CACHE`` (``off`` disables it), else ``$XDG_CACHE_HOME/replica-hciz``,
    else ``~/.cache/replica-hciz``. Tables built for an (R1, R2) without a shipped file
    under ``data/`` are written there (atomically, named like the shipped files) and
    reloaded by later processes, so a new aspect ratio costs its build (seconds) once.
    """
    from .cache import cache_dir

    return cache_dir()


def rectangular_channel(r1: float, r2, *, resolution: int = 16) -> RectangularChannel:
    """Cached :class:`RectangularChannel` for ``(R1, R2, resolution)`` (tables built once).

    Parameters
    ----------
    r1 : float
        ``R1 = P/M >= 1``.
    r2 : float or sequence of float
        ``R2 = N/M > 0`` for a product of two factors; the inner ratios ``N_i/M`` (any order)
        for a product of ``p = len(r2) + 1 >= 3`` Gaussian factors.
    resolution : int, optional
        Chebyshev order per panel.
    """
    r1, r2 = _check_ratios(r1, r2)
    return _rectangular_channel(r1, r2, int(resolution))


@functools.lru_cache(maxsize=32)
def _rectangular_channel(r1, r2, resolution):
    return RectangularChannel(r1, r2, resolution=resolution)
