r"""Exact continuous readout laws (``gaussian``: N(0,1); ``uniform``: U[−√3, √3]).

With ``t = c v``, ``c = √(λ/γ)`` and ``ζ = −1/(c m)`` (``Im ζ > 0`` for ``Im m > 0``),

.. math::  E_v[t/(1+tm)] = H(ζ)/m,\qquad H(ζ) = 1 − ζ G(ζ),\qquad G(ζ) = E_v[1/(ζ − v)],

so ``z(m) = −1/m − m + γ H(ζ)/m`` and ``z'(m) = (1 − m² + γ J(ζ))/m²`` with
``J = 2ζG + ζ²G' − 1``.  Closed forms (``Im ζ > 0``):

* gaussian: ``G(ζ) = −i √(π/2) w(ζ/√2)`` (Faddeeva ``w``), ``G' = 1 − ζG`` (Stein);
* uniform:  ``G(ζ) = (Log(ζ+√3) − Log(ζ−√3)) / (2√3)``, ``G' = −1/(ζ² − 3)``.

For ``|ζ| > 10`` the cancellation in ``H`` and ``J`` is avoided by the (asymptotic for the
gaussian, convergent for the uniform) moment series ``H = −Σ μ_{2k} ζ^{−2k}``,
``J = Σ (1 − 2k) μ_{2k} ζ^{−2k}``.

``m(x + i0)`` is obtained by vectorized Newton with continuation in ``η = Im z`` from
``η = 10 + |x|`` (where ``m ≈ −1/z``) down to 0, which tracks the physical root (unique with
``Im m > 0`` for ``η > 0``).  ``∫ρ³``: uniform law — bands from the real critical points of
``z`` in ``0 < |m| < 1/(c√3)`` (all λ at once), adaptive composite Gauss–Legendre in ``θ``
(``x = a + (b−a)(1−cos θ)/2``); gaussian law — ``ρ > 0`` on ℝ (analytic), the same rule on
the range where ``ρ³`` matters.  Only the first nodes use η-continuation: the first pass
sweeps Newton along the nodes of each band, and the nodes of bisected panels start from the
interpolant of the roots at the parent's nodes (both fall back to η-continuation where
Newton fails).
"""
from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

LAWS = ("gaussian", "uniform")
_S3 = np.sqrt(3.0)
_NSER = 30


def _moments(law):
    k = np.arange(1, _NSER + 1)
    if law == "gaussian":
        # (2k−1)!!
        mu = np.cumprod(2.0 * k - 1.0)
    else:
        mu = 3.0 ** k / (2.0 * k + 1.0)
    return mu


class ContinuousEngine:
    """Spectral engine of ``√λ S⁰ + Z`` for an exact continuous readout law."""

    def __init__(self, gamma, law):
        if law not in LAWS:
            raise ValueError(f"law must be one of {LAWS}, got {law!r}")
        self.gamma = float(gamma)
        self.law = law
        self._mu = _moments(law)
        self._k = np.arange(1, _NSER + 1)
        self.mass_tol = 1e-11

    # ------------------------------------------------------------------ H, J
    def _HJ(self, zeta):
        zeta = np.asarray(zeta, dtype=complex)
        H = np.empty(zeta.shape, dtype=complex)
        J = np.empty(zeta.shape, dtype=complex)
        big = np.abs(zeta) > 10.0
        if np.any(big):
            q = 1.0 / zeta[big] ** 2
            # Horner in q for Σ a_k q^k
            h = np.zeros(q.shape, dtype=complex)
            j = np.zeros(q.shape, dtype=complex)
            for kk in range(_NSER, 0, -1):
                h = (h - self._mu[kk - 1]) * q
                j = (j + (1.0 - 2.0 * kk) * self._mu[kk - 1]) * q
            H[big] = h
            J[big] = j
        sm = ~big
        if np.any(sm):
            zs = zeta[sm]
            if self.law == "gaussian":
                from scipy.special import wofz  # imported here: scipy.special is slow to load

                G = -1j * np.sqrt(np.pi / 2.0) * wofz(zs / np.sqrt(2.0))
                Hs = 1.0 - zs * G
                Gp = Hs
            else:
                G = (np.log(zs + _S3) - np.log(zs - _S3)) / (2.0 * _S3)
                Hs = 1.0 - zs * G
                Gp = -1.0 / (zs * zs - 3.0)
            H[sm] = Hs
            J[sm] = 2.0 * zs * G + zs * zs * Gp - 1.0
        return H, J

    def _zzp(self, m, c):
        """z(m), z'(m) (c broadcast with m)."""
        if np.all(c == 0):
            return -1.0 / m - m, 1.0 / (m * m) - 1.0
        zeta = -1.0 / (c * m)
        H, J = self._HJ(zeta)
        z = (-1.0 - m * m + self.gamma * H) / m
        zp = (1.0 - m * m + self.gamma * J) / (m * m)
        return z, zp

    # ------------------------------------------------------------------ Stieltjes
    def solve(self, z, lam):
        """m(z) for Im z ≥ 0 (arrays z, lam broadcast), η-continuation + Newton."""
        z, lam = np.broadcast_arrays(np.asarray(z, dtype=complex), np.asarray(lam, float))
        shape = z.shape
        z = z.ravel().copy()
        c = np.sqrt(lam.ravel() / self.gamma)
        x, eta_t = z.real, np.maximum(z.imag, 0.0)
        eta = np.maximum(10.0 + 2.0 * np.abs(z), eta_t)
        m = -1.0 / (x + 1j * eta)
        act = np.arange(z.size)
        nfin = np.zeros(z.size, dtype=int)
        for outer in range(200):
            if act.size == 0:
                break
            zt = x[act] + 1j * eta[act]
            mm = m[act]
            cc = c[act]
            final = eta[act] <= eta_t[act]
            for it in range(40 if outer > 0 else 8):
                zv, zp = self._zzp(mm, cc)
                step = (zv - zt) / zp
                new = mm - step
                for _ in range(40):
                    bad = ~(new.imag >= 0) | ~np.isfinite(new)
                    if not np.any(bad):
                        break
                    step = np.where(bad, 0.5 * step, step)
                    new = mm - step
                mm = np.where(np.isfinite(new), new, mm)
                conv = np.abs(step) <= 1e-13 * np.abs(mm) + 1e-300
                if np.all(conv) or (it >= 3 and not np.any(final)):
                    break
            m[act] = mm
            nfin[act] += final
            done = final & (conv | (nfin[act] >= 4))
            e = eta[act]
            en = 0.2 * e
            jump = (en < 1e-3 * mm.imag) | (en < 1e-15 * (1.0 + np.abs(x[act])))
            en = np.where(jump, eta_t[act], np.maximum(en, eta_t[act]))
            eta[act] = en
            act = act[~done]
        else:
            logger.debug("stieltjes continuation not converged at %d points", act.size)
        return m.reshape(shape)

    def stieltjes_complex(self, z, lam):
        return self.solve(z, lam)

    def stieltjes_real(self, x, lam):
        return self.solve(np.asarray(x, dtype=float) + 0j, lam)

    # ------------------------------------------------------------------ support
    def bands(self, lam):
        """List of (a, b) bands of ρ_λ (gaussian: [(-inf, inf)])."""
        lam = float(lam)
        if lam == 0:
            return [(-2.0, 2.0)]
        if self.law == "gaussian":
            return [(-np.inf, np.inf)]
        return self._uniform_bands(np.array([lam]))[0]

    def _uniform_bands(self, lams):
        """Bands of ρ_λ for the uniform law, every λ > 0 of ``lams`` at once.

        The real critical points of ``z`` lie in ``0 < |m| < 1/(c√3)`` (beyond, ``z`` is
        not real-analytic); they are bracketed on a fixed grid of ``u = |m| c√3`` and
        bisected, all brackets together.  ``z`` increases on ``(0, r₀⁺)``, ``(r₀⁻, 0)`` and
        between the pairs ``(r_{2i−1}, r_{2i})`` of further critical points on each side;
        their images are the gaps.
        """
        lams = np.asarray(lams, dtype=float)
        c = np.sqrt(lams / self.gamma)
        M = 1.0 / (c * _S3)
        lo = np.logspace(-9, -1.5, 60)
        u = np.concatenate([lo, np.linspace(0.035, 0.965, 200), 1.0 - lo[::-1]])
        sg = np.array([1.0, -1.0])
        mu = sg[None, :, None] * M[:, None, None] * u[None, None, :]  # (L, 2, U)
        cc = np.broadcast_to(c[:, None, None], mu.shape)
        f = self._zzp(mu + 0j, cc)[1].real
        li, si, ui = np.nonzero(np.sign(f[..., 1:]) != np.sign(f[..., :-1]))
        a, b = mu[li, si, ui], mu[li, si, ui + 1]
        fa = f[li, si, ui]
        cb = c[li]
        for _ in range(60):
            mid = 0.5 * (a + b)
            fm = self._zzp(mid + 0j, cb)[1].real
            same = np.sign(fm) == np.sign(fa)
            a = np.where(same, mid, a)
            fa = np.where(same, fm, fa)
            b = np.where(same, b, mid)
        root = 0.5 * (a + b)
        zroot = self._zzp(root + 0j, cb)[0].real
        out = []
        for i in range(lams.size):
            rp = zroot[(li == i) & (si == 0)]  # sorted by |m| (grid order)
            rn = zroot[(li == i) & (si == 1)]
            if rp.size == 0 or rn.size == 0:
                raise RuntimeError(f"critical points around m = 0 not found at lam={lams[i]}")
            gaps = [(-np.inf, rp[0]), (rn[0], np.inf)]
            gaps += [(rp[k], rp[k + 1]) for k in range(1, rp.size - 1, 2)]
            gaps += [(rn[k + 1], rn[k]) for k in range(1, rn.size - 1, 2)]
            gaps.sort()
            out.append([(g1, h0) for (_, g1), (h0, _) in zip(gaps[:-1], gaps[1:]) if h0 > g1])
        return out

    # ------------------------------------------------------------------ ∫ρ³
    def _gauss_range(self, lam):
        a, b = self._gauss_ranges(np.array([float(lam)]))
        return a[0], b[0]

    def _gauss_ranges(self, lams):
        """[−R_l, R_r] per λ, where ρ = cut with cut³ · R = 1e-17 (tails of c v).

        At small λ the density ends in an almost square-root edge, which the θ-mapped rule
        of :meth:`moments` resolves; the point ρ = cut is located to R/4096 by three
        16-point refinements of a coarse bracket (sweeps outward, all λ at once).
        """
        lams = np.asarray(lams, dtype=float)
        scale = 2.0 + np.sqrt(lams / self.gamma) * (1.0 + np.sqrt(self.gamma)) ** 2
        fac = np.array([0.0, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 12.0])
        cut = (1e-17 / scale) ** (1.0 / 3.0)
        nl = lams.size
        sg = np.array([-1.0, 1.0])
        R = scale[:, None, None] * fac[None, None, :] * np.ones((1, 2, 1))
        c = np.sqrt(lams / self.gamma)
        rows = lambda P: (sg[None, :, None] * P).reshape(2 * nl, -1)  # noqa: E731
        cr = np.repeat(c, 2)
        rho = self._sweep(rows(R), cr).imag.reshape(R.shape) / np.pi
        below = rho < cut[:, None, None]
        below[..., -1] = True
        below[..., 0] = False
        k = np.argmax(below, axis=-1)
        lo = np.take_along_axis(R, (k - 1)[..., None], -1)[..., 0]
        hi = np.take_along_axis(R, k[..., None], -1)[..., 0]
        t = np.linspace(0.0, 1.0, 17)[1:]
        for _ in range(3):
            P = lo[..., None] + (hi - lo)[..., None] * t
            r = self._sweep(rows(P), cr).imag.reshape(P.shape) / np.pi
            b = r < cut[:, None, None]
            b[..., -1] = True
            kk = np.argmax(b, axis=-1)
            newhi = np.take_along_axis(P, kk[..., None], -1)[..., 0]
            newlo = np.where(kk > 0, np.take_along_axis(P, np.maximum(kk - 1, 0)[..., None],
                                                        -1)[..., 0], lo)
            lo, hi = newlo, newhi
        return -hi[:, 0], hi[:, 1]

    def moments(self, lams, tol=2e-15, max_rounds=40):
        """(∫ρ³, ∫ρ, unconverged λ indices) for each λ > 0.

        Adaptive composite 16-point Gauss–Legendre in θ (``x = a + (b−a)(1−cos θ)/2`` on
        every band of the uniform law, on the range ``ρ > cut`` of the gaussian law),
        vectorized over all panels of all λ: a panel is accepted when the sum over its
        halves agrees with its own value to ``tol`` (on ∫ρ³; 1e-12 on ∫ρ).  The roots at
        the nodes of the halves start from the degree-15 interpolant of the roots at the
        parent's nodes and are polished by Newton (η-continuation only where that fails).
        """
        lams = np.atleast_1d(np.asarray(lams, dtype=float))
        P_l, P_a, P_b, P_u0, P_u1 = [], [], [], [], []
        if self.law == "gaussian":
            ga, gb = self._gauss_ranges(lams)
            spans = [[(ga[i], gb[i])] for i in range(lams.size)]
            br = np.linspace(0.0, np.pi, 17)
        else:
            spans = self._uniform_bands(lams)
            br = np.linspace(0.0, np.pi, 9)
        for i, bands in enumerate(spans):
            for a, b in bands:
                n = br.size - 1
                P_l.append(np.full(n, i))
                P_a.append(np.full(n, a))
                P_b.append(np.full(n, b))
                P_u0.append(br[:-1])
                P_u1.append(br[1:])
        L, A, B, U0, U1 = (np.concatenate(q) for q in (P_l, P_a, P_b, P_u0, P_u1))

        def integ(Li, Ai, Bi, u0, u1, guess=None):
            h = 0.5 * (u1 - u0)
            u = u0[:, None] + h[:, None] * (_GL_X + 1.0)[None, :]
            x = Ai[:, None] + 0.5 * (Bi - Ai)[:, None] * (1.0 - np.cos(u))
            jac = 0.5 * (Bi - Ai)[:, None] * np.sin(u) * h[:, None] * _GL_W[None, :]
            lam_ = np.broadcast_to(lams[Li][:, None], x.shape)
            if guess is None:
                m = self.solve(x + 0j, lam_)
            else:
                m, ok = self._polish(x, np.sqrt(lam_ / self.gamma), guess)
                if not np.all(ok):
                    m[~ok] = self.solve(x[~ok] + 0j, lam_[~ok])
            rho = np.maximum(m.imag, 0.0) / np.pi
            return np.sum(rho ** 3 * jac, axis=1), np.sum(rho * jac, axis=1), m

        # first pass: sweep along the nodes of every band (rows), all bands at once
        h0 = 0.5 * (U1 - U0)
        u = U0[:, None] + h0[:, None] * (_GL_X + 1.0)[None, :]
        x0 = (A[:, None] + 0.5 * (B - A)[:, None] * (1.0 - np.cos(u))).reshape(-1, 16 * n)
        c0 = np.sqrt(lams[L[::n]] / self.gamma)
        V3, V1, Vm = integ(L, A, B, U0, U1, self._sweep(x0, c0).reshape(-1, 16))
        i3 = np.zeros(lams.size)
        i1 = np.zeros(lams.size)
        for r in range(max_rounds):
            if L.size == 0:
                break
            M = 0.5 * (U0 + U1)
            L2, A2, B2 = (np.concatenate([q, q]) for q in (L, A, B))
            u0 = np.concatenate([U0, M])
            u1 = np.concatenate([M, U1])
            guess = np.concatenate([Vm @ _TO_HALVES[0].T, Vm @ _TO_HALVES[1].T])
            c3, c1, cm = integ(L2, A2, B2, u0, u1, guess)
            n = L.size
            s3 = c3[:n] + c3[n:]
            s1 = c1[:n] + c1[n:]
            # absolute tolerances, floored at the rounding noise of the roots (1e-13 relative);
            # beyond 2000 open panels per λ everything is accepted (bounds the work)
            ok = ((np.abs(s3 - V3) <= np.maximum(tol, 1e-13 * np.abs(s3)))
                  & (np.abs(s1 - V1) <= np.maximum(1e-12, 1e-13 * np.abs(s1))))
            ok |= (U1 - U0) < 1e-9 * (1.0 + np.abs(U0))
            if n > 2000 * lams.size:
                logger.debug("continuous-law quadrature: %d panels left open", n)
                ok[:] = True
            np.add.at(i3, L[ok], s3[ok])
            np.add.at(i1, L[ok], s1[ok])
            keep = np.concatenate([~ok, ~ok])
            L, A, B, U0, U1 = L2[keep], A2[keep], B2[keep], u0[keep], u1[keep]
            V3, V1, Vm = c3[keep], c1[keep], cm[keep]
        bad = np.unique(L)
        if bad.size:
            np.add.at(i3, L, V3)
            np.add.at(i1, L, V1)
        return i3, i1, bad

    def _sweep(self, x, c):
        """``m(x + i0)`` along the rows of ``x`` (shape (R, N), each row ordered).

        η-continuation (:meth:`solve`) at the first node of every row, then Newton from the
        linear extrapolation of the two previous roots, one column at a time for all rows
        together; nodes where Newton fails fall back to η-continuation.
        """
        lam = c * c * self.gamma
        m = np.empty(x.shape, dtype=complex)
        m[:, 0] = self.solve(x[:, 0] + 0j, lam)
        for j in range(1, x.shape[1]):
            guess = m[:, j - 1]
            if j > 1:
                r = (x[:, j] - x[:, j - 1]) / np.where(x[:, j - 1] != x[:, j - 2],
                                                       x[:, j - 1] - x[:, j - 2], 1.0)
                ext = guess + (guess - m[:, j - 2]) * r
                guess = np.where((ext.imag > 0) & np.isfinite(ext), ext, guess)
            mj, ok = self._polish(x[:, j], c, guess)
            if not np.all(ok):
                mj[~ok] = self.solve(x[~ok, j] + 0j, lam[~ok])
            m[:, j] = mj
        return m

    def _polish(self, x, c, m, maxit=20):
        """Newton for ``z(m) = x`` from the guesses ``m`` (arrays of one shape).

        Returns the roots and a mask of those that converged (last Newton step below
        1e-13 |m|); every iterate keeps ``Im m > 0`` (damped steps), so that Newton cannot
        settle on a root of ``z(m) = x`` on or near the real axis that is not the boundary
        value ``m(x + i0)`` (the callers fall back to η-continuation there).
        """
        shape = m.shape
        x, c, m = x.ravel(), c.ravel(), m.ravel().copy()
        conv = np.zeros(m.size, dtype=bool)
        act = np.arange(m.size)
        for _ in range(maxit):
            zv, zp = self._zzp(m[act], c[act])
            step = (zv - x[act]) / zp
            full = step
            for _ in range(30):  # damping: halve steps that leave the upper half plane
                new = m[act] - step
                good = np.isfinite(new) & (new.imag > 0)
                if np.all(good):
                    break
                step = np.where(good, step, 0.5 * step)
            m[act[good]] = new[good]
            done = good & (np.abs(full) <= 1e-13 * np.abs(new))
            conv[act[done]] = True
            act = act[good & ~done]
            if act.size == 0:
                break
        return m.reshape(shape), conv.reshape(shape)


def _interpolation_to_halves():
    """Lagrange matrices from the 16 Gauss–Legendre nodes of a panel to those of its halves."""
    out = []
    for y in ((_GL_X - 1.0) / 2.0, (_GL_X + 1.0) / 2.0):
        P = np.ones((y.size, _GL_X.size))
        for j in range(_GL_X.size):
            for i in range(_GL_X.size):
                if i != j:
                    P[:, j] *= (y - _GL_X[i]) / (_GL_X[j] - _GL_X[i])
        out.append(P)
    return out


_GL_X, _GL_W = np.polynomial.legendre.leggauss(16)
_TO_HALVES = _interpolation_to_halves()
