"""Benchmark ``replica-spectrum`` against the plain published method and an mpmath reference.

In one run, for a width ratio γ never used before (nothing cached: the subprocess gets a
fresh ``REPLICA_HCIZ_CACHE`` directory) and a 600-point λ grid (default ``0.1:100:600``):

(i)   the package: ``replica-spectrum`` as a subprocess, start-up and table build included;
(ii)  the plain method, implemented here: for each λ the density ``ρ(x) = max Im G/π`` from
      ``np.roots`` of the polynomial in ``G`` (docs/theory.md §4.1: for ``v ≡ 1`` the cubic
      ``c G³ + (a + c x) G² + (a x − a c + c) G + a`` with ``a = γ``, ``c = √(γλ)``; for
      ``rademacher`` the quartic ``−c² G⁴ − c² x G³ + (a² + a c² − c²) G² + a² x G + a²``),
      the support found by scanning ``x`` and bisecting the edges, and
      ``mmse_S = (1 − (4π²/3) ∫ρ³)/λ`` with ``scipy.integrate.quad`` on every band. It is
      timed on every ``--subsample``-th λ and extrapolated linearly to the whole grid;
(iii) a reference at ``--reference-points`` λ of the grid (``v ≡ 1`` only), half of them in
      the window where the spectrum splits into two bands: mpmath at 30 digits, Cardano
      roots and the discriminant's roots as band edges (``scripts/make_quadratic_reference.py``),
      tanh–sinh quadrature on 64 parts of every band.

The polynomial conventions are checked against the package's density at one point first.
Printed: wall times, the speed-up ratio, and the largest absolute error of ``mmse_S`` of
both methods against the reference.

Usage::

    python scripts/benchmarks/bench_spectrum.py [--gamma 0.4137] [--readout ones,rademacher]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import integrate

ROOT = Path(__file__).resolve().parents[2]


def coefficients(x, lam, gamma, readout):
    """Coefficients (highest degree first) of the polynomial in G at the real point ``x``."""
    a, c = gamma, np.sqrt(gamma * lam)
    if readout == "ones":
        return [c, a + c * x, a * x - a * c + c, a]
    if readout == "rademacher":
        return [-c * c, -c * c * x, a * a + a * c * c - c * c, a * a * x, a * a]
    raise ValueError(f"no plain polynomial for readout law {readout!r}")


def plain_density(x, lam, gamma, readout):
    """``max Im G / π`` over the roots of the polynomial (0 outside the support)."""
    return max(np.roots(coefficients(x, lam, gamma, readout)).imag.max(), 0.0) / np.pi


def plain_support(lam, gamma, readout, *, n_scan=400, tiny=1e-12):
    """Bands of ρ_λ by scanning ``x`` and bisecting every sign change of ``ρ > tiny``."""
    right = 2.5 + np.sqrt(lam) * (1 + np.sqrt(gamma)) ** 2 / np.sqrt(gamma)
    left = -right if readout == "rademacher" else -2.5 - 0.1 * np.sqrt(lam)
    xs = np.linspace(left, right, n_scan)
    inside = np.array([plain_density(x, lam, gamma, readout) > tiny for x in xs])
    edges = []
    for k in np.nonzero(inside[1:] != inside[:-1])[0]:
        lo, hi = xs[k], xs[k + 1]
        lo_inside = inside[k]
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if (plain_density(mid, lam, gamma, readout) > tiny) == lo_inside:
                lo = mid
            else:
                hi = mid
        edges.append(0.5 * (lo + hi))
    return list(zip(edges[::2], edges[1::2]))


def plain_mmse(lam, gamma, readout):
    """``mmse_S(λ)`` by the plain method (scipy quad of ρ³ on every band)."""
    total = 0.0
    for a, b in plain_support(lam, gamma, readout):
        total += integrate.quad(lambda x: plain_density(x, lam, gamma, readout) ** 3, a, b,
                                limit=200, epsabs=1e-14, epsrel=1e-12)[0]
    return (1.0 - 4.0 * np.pi**2 / 3.0 * total) / lam


def reference_module():
    spec = importlib.util.spec_from_file_location("make_quadratic_reference",
                                                  ROOT / "scripts" / "make_quadratic_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def reference_mmse(lam, gamma, ref, *, pieces=64):
    """``mmse_S(λ)`` at 30 digits: tanh–sinh on ``pieces`` equal parts of every band.

    (One tanh–sinh rule per band, as in ``make_quadratic_reference.integral_rho_cubed``, can
    be off by ~4e-10 where ρ has a shoulder or a neck inside a band (16 parts still miss
    4e-10 next to the split at γ = 0.4137, λ = 23.1); 64 parts agree with the package to 1e-13.)
    """
    mp = ref.mp
    lam = mp.mpf(lam)
    a, c = mp.mpf(gamma), mp.sqrt(mp.mpf(gamma) * lam)
    edges = ref.band_edges(a, c)
    total = mp.mpf(0)
    for lo, hi in zip(edges[:-1], edges[1:]):
        if ref.density((lo + hi) / 2, a, c) > mp.mpf(10) ** -25:
            nodes = [lo + (hi - lo) * k / pieces for k in range(pieces + 1)]
            total += mp.quad(lambda x: ref.density(x, a, c) ** 3, nodes)
    return float((1 - 4 * mp.pi**2 / 3 * total) / lam)


def reference_lambdas(grid, gamma, n):
    """``n`` grid points: half spread over the grid, half in the band-splitting window."""
    from hciz import symmetric_channel

    channel = symmetric_channel(gamma, [1.0], [1.0])
    coarse = grid[:: max(1, grid.size // 150)]
    n_bands = np.array([len(channel.support(float(lam))) for lam in coarse])
    split = np.nonzero(n_bands > 1)[0]
    picks = list(np.linspace(0, grid.size - 1, n - n // 2).round().astype(int))
    if split.size:
        lam_split = coarse[split[0]]
        window = np.nonzero((grid > 0.45 * lam_split) & (grid < 1.02 * lam_split))[0]
        picks += list(window[np.linspace(0, window.size - 1, n // 2).round().astype(int)])
    return np.unique(picks), (coarse[split[0]] if split.size else None)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gamma", type=float, default=0.4137, help="new width ratio (default 0.4137)")
    p.add_argument("--readout", default="ones", help="comma list of ones, rademacher (default ones)")
    p.add_argument("--lambda", dest="lambda_grid", default="0.1:100:600", help="λ grid (default 0.1:100:600)")
    p.add_argument("--subsample", type=int, default=20,
                   help="time the plain method on every n-th λ and extrapolate (default 20)")
    p.add_argument("--reference-points", type=int, default=12, help="mpmath reference λ's (default 12)")
    args = p.parse_args(argv)
    start, stop, num = args.lambda_grid.split(":")
    grid = np.linspace(float(start), float(stop), int(num))
    print(f"gamma = {args.gamma}, {grid.size} lambdas in [{grid[0]:g}, {grid[-1]:g}]")

    from hciz import symmetric_channel
    from replica.workflow.spectrum import read_spectrum

    for readout in args.readout.split(","):
        print(f"\n=== readout {readout}")
        # convention check of the polynomial against the package (tables not needed)
        law = {"ones": ([1.0], [1.0]), "rademacher": ([-1.0, 1.0], [0.5, 0.5])}[readout]
        channel = symmetric_channel(args.gamma, *law)
        for lam, x in ((10.0, 0.7), (50.0, 3.0)):
            mine, theirs = plain_density(x, lam, args.gamma, readout), float(channel.density(np.array([x]), lam)[0])
            print(f"convention check rho({x}; lambda={lam}): polynomial {mine:.15f}, package {theirs:.15f}")
            if abs(mine - theirs) > 1e-8:
                print("  the polynomial does not match the package: skipping this readout law")
                break
        else:
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "spectrum.h5"
                env = dict(os.environ, REPLICA_HCIZ_CACHE=str(Path(tmp) / "hciz-cache"))
                cmd = ["replica-spectrum", "--gamma", repr(args.gamma), "--readout", readout,
                       "--lambda", args.lambda_grid, "--quiet", "-o", str(out)]
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, env=env)
                t_package = time.perf_counter() - t0
                data = read_spectrum(out)
            np.testing.assert_allclose(data["lambda"], grid, rtol=0, atol=1e-12)

            sub = np.arange(0, grid.size, args.subsample)
            t0 = time.perf_counter()
            plain = {int(i): plain_mmse(float(grid[i]), args.gamma, readout) for i in sub}
            t_sub = time.perf_counter() - t0
            t_plain = t_sub * grid.size / sub.size
            print(f"(i)  package, replica-spectrum subprocess incl. start-up and table build: {t_package:8.2f} s")
            print(f"(ii) plain np.roots + quad: {t_sub:.2f} s on {sub.size} lambdas (every {args.subsample}th), "
                  f"extrapolated linearly to {grid.size}: {t_plain:8.2f} s")
            print(f"speed-up package / plain: {t_plain / t_package:.1f}x")
            agree = max(abs(plain[i] - data["mmse"][i]) for i in plain)
            print(f"max |plain − package| of mmse_S on the subsample: {agree:.2e}")

            if readout != "ones" or args.reference_points <= 0:
                print("(iii) mpmath reference: only for v ≡ 1 (the cubic)")
                continue
            if importlib.util.find_spec("mpmath") is None:
                # mpmath is a test dependency only (pip install -e '.[test]'); the package never needs it
                print("(iii) mpmath reference skipped: mpmath is not installed (pip install -e '.[test]' or "
                      "pip install mpmath)")
                continue
            ref = reference_module()
            picks, lam_split = reference_lambdas(grid, args.gamma, args.reference_points)
            print(f"(iii) mpmath reference (30 digits) at {picks.size} lambdas"
                  + (f"; two bands from lambda ≈ {lam_split:.3g}" if lam_split is not None else ""))
            t0 = time.perf_counter()
            errors = []
            for i in picks:
                lam = float(grid[i])
                exact = reference_mmse(lam, args.gamma, ref)
                e_pkg, e_plain = data["mmse"][i] - exact, plain_mmse(lam, args.gamma, readout) - exact
                errors.append((abs(e_pkg), abs(e_plain)))
                print(f"  lambda = {lam:9.4f}  mmse_S = {exact:.15f}  "
                      f"package err {e_pkg:+.1e}  plain err {e_plain:+.1e}", flush=True)
            errors = np.array(errors)
            print(f"  reference took {time.perf_counter() - t0:.1f} s")
            print(f"max abs error vs reference: package {errors[:, 0].max():.2e}, plain {errors[:, 1].max():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
