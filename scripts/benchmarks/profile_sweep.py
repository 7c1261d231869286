"""Print the top cProfile hot spots of the one-hidden-layer sweep (all branches).

The profile is taken on the *warm* sweep (a first sweep builds the HCIZ table and the
numba kernels; the second one is profiled), ReLU, γ = 0.5, Δ = 0.1, ``v ≡ 1``, Gaussian W.

Usage::

    python scripts/benchmarks/profile_sweep.py [--activation relu] [--points 201] [--top 25]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time

import numpy as np


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--activation", default="relu")
    p.add_argument("--gamma", type=float, default=0.5)
    p.add_argument("--delta", type=float, default=0.1)
    p.add_argument("--readout", default="ones")
    p.add_argument("--points", type=int, default=201, help="number of α values in [0.01, 8] (default 201)")
    p.add_argument("--top", type=int, default=25, help="number of functions shown (default 25)")
    p.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    args = p.parse_args(argv)

    from replica.continuation import sweep
    from replica.models.shallow import ShallowModel

    model = ShallowModel(args.activation, args.gamma, args.delta, readout_law=args.readout)
    alphas = np.linspace(0.01, 8, args.points)
    t0 = time.perf_counter()
    sweep(model, alphas, progress=False)
    first = time.perf_counter() - t0
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    result = sweep(model, alphas, progress=False)
    prof.disable()
    warm = time.perf_counter() - t0
    print(f"{args.activation}, gamma={args.gamma}, delta={args.delta}, readout={args.readout}, "
          f"{args.points} alpha: first sweep {first:.2f} s, profiled warm sweep {warm:.2f} s "
          f"(profiler overhead included); transitions {result.transitions}")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
