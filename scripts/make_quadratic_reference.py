"""High-precision reference for the noiseless quadratic network (docs/theory.md §5.1).

For ``σ(x) = x²/√2``, ``v ≡ 1``, Gaussian weights and Δ = 0 the universal branch is
the exact Bayes-optimal error of Maillard et al. (arXiv 2408.03733):

    R̂ = 2α / mmse_S(R̂),   mmse = mmse_S(R̂),
    mmse_S(λ) = (1 − (4π²/3) ∫ρ_λ³)/λ,

with ρ_λ the density of √λ S + Z whose Stieltjes transform solves the cubic of docs/theory.md §4.1
(``a = γ``, ``c = √(γλ)``):  c G³ + (a + c x) G² + (a x − a c + c) G + a = 0.

Everything here is independent of the package's ``hciz`` code: the band edges are the real
roots of the cubic's discriminant (a quartic in x), ∫ρ³ is computed by mpmath tanh–sinh
quadrature between consecutive edges at 30 digits, and the fixed point by mpmath's
secant/Anderson root finder. Output: ``data/quadratic_reference.json``.

Usage::

    python scripts/make_quadratic_reference.py [--gamma 0.5] [--alpha 0.05,0.1,0.2,0.3]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import mpmath as mp

mp.mp.dps = 30


def cubic_coefficients(x, a, c):
    return [c, a + c * x, a * x - a * c + c, a]


def cubic_roots(A, B, C, D):
    """Cardano's formula in mpmath complex arithmetic (robust at double roots)."""
    p = (3 * A * C - B**2) / (3 * A**2)
    q = (2 * B**3 - 9 * A * B * C + 27 * A**2 * D) / (27 * A**3)
    s = mp.sqrt(mp.mpc(q**2 / 4 + p**3 / 27))
    u = mp.cbrt(mp.mpc(-q / 2 + s))
    if abs(u) < mp.mpf(10) ** -40:
        u = mp.cbrt(mp.mpc(-q / 2 - s))
    omega = mp.exp(2j * mp.pi / 3)
    out = []
    for k in range(3):
        uk = u * omega**k
        vk = -p / (3 * uk) if abs(uk) > 0 else 0
        out.append(uk + vk - B / (3 * A))
    return out


def density(x, a, c):
    roots = cubic_roots(*cubic_coefficients(x, a, c))
    return max(abs(mp.im(r)) for r in roots) / mp.pi


def band_edges(a, c):
    """Real roots of the discriminant of the cubic in G, as a polynomial in x."""

    def disc(x):
        A, B, C, D = cubic_coefficients(x, a, c)
        return 18 * A * B * C * D - 4 * B**3 * D + B**2 * C**2 - 4 * A * C**3 - 27 * A**2 * D**2

    xs = [mp.mpf(k) for k in range(-2, 3)]
    # degree-4 polynomial through 5 points (exact up to rounding at 30 digits)
    V = mp.matrix([[x**p for p in range(4, -1, -1)] for x in xs])
    coeffs = mp.lu_solve(V, mp.matrix([disc(x) for x in xs]))
    roots = mp.polyroots([coeffs[i] for i in range(5)], maxsteps=400, extraprec=120)
    return sorted(mp.re(r) for r in roots if abs(mp.im(r)) < mp.mpf(10) ** -20)


def integral_rho_cubed(lam, gamma):
    a, c = mp.mpf(gamma), mp.sqrt(mp.mpf(gamma) * lam)
    edges = band_edges(a, c)
    total = mp.mpf(0)
    for lo, hi in zip(edges[:-1], edges[1:]):
        mid = (lo + hi) / 2
        if density(mid, a, c) > mp.mpf(10) ** -25:
            total += mp.quad(lambda x: density(x, a, c) ** 3, [lo, hi])
    return total


def mmse_S(lam, gamma):
    lam = mp.mpf(lam)
    return (1 - 4 * mp.pi**2 / 3 * integral_rho_cubed(lam, gamma)) / lam


def solve(alpha, gamma):
    alpha = mp.mpf(alpha)
    # R̂ mmse_S(R̂) = 2α, bracketed: it increases from 0 to 2γ − γ² for γ < 1
    def f(lam):
        return lam * mmse_S(lam, gamma) - 2 * alpha

    lo, hi = mp.mpf("1e-6"), mp.mpf(1)
    while f(hi) < 0:
        lo, hi = hi, hi * 4
    lam = mp.findroot(f, (lo, hi), solver="anderson", tol=mp.mpf(10) ** -24)
    return lam, mmse_S(lam, gamma)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gamma", type=float, default=0.5)
    p.add_argument("--alpha", default="0.05,0.1,0.2,0.3")
    p.add_argument("-o", "--output", default=str(Path(__file__).resolve().parents[1] / "data" / "quadratic_reference.json"))
    args = p.parse_args(argv)
    rows = []
    for a in [float(s) for s in args.alpha.split(",")]:
        lam, err = solve(a, args.gamma)
        rows.append({"alpha": a, "R2_hat": float(lam), "mmse": float(err)})
        print(f"alpha={a}: R2_hat={mp.nstr(lam, 15)}  mmse={mp.nstr(err, 15)}", flush=True)
    out = {"gamma": args.gamma, "delta": 0.0, "activation": "quadratic", "readout": "ones",
           "method": "mpmath 30 digits: discriminant band edges, tanh-sinh quadrature of rho^3, findroot",
           "rows": rows}
    Path(args.output).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
