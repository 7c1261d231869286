"""Time a 101-point universal-branch sweep for a *new* (γ, readout law) pair.

Runs ``replica-sweep --branches universal`` in a fresh process (so the timing includes
process start-up, imports, the construction of the HCIZ table for the new pair and
the HDF5 write), for a width ratio never used before in this process tree, and
compares it with the same sweep for a pair whose table is already built in the process
(``warm``), measured in the same run.

Usage::

    python scripts/benchmarks/bench_universal_sweep.py [--gamma 0.4137] [--readout 4point]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gamma", type=float, default=None, help="new width ratio (default: random in [0.2, 2])")
    p.add_argument("--readout", default="4point")
    p.add_argument("--activation", default="relu")
    args = p.parse_args(argv)
    gamma = args.gamma if args.gamma is not None else float(np.round(np.random.default_rng().uniform(0.2, 2), 6))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "u.h5"
        cmd = [sys.executable, "-m", "replica", "--branches", "universal", "--gamma", str(gamma),
               "--readout", args.readout, "--activation", args.activation, "--alpha", "0.01:8:101",
               "--quiet", "-o", str(out)]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        cold = time.perf_counter() - t0
        # start-up alone (imports + argument parsing)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import replica.workflow.cli, replica.models.shallow, replica.continuation"], check=True)
        startup = time.perf_counter() - t0

    from replica.continuation import sweep
    from replica.models.shallow import ShallowModel

    t0 = time.perf_counter()
    model = ShallowModel(args.activation, gamma, 0.1, readout_law=args.readout)
    model.channel.overlap(1.0)  # the HCIZ table is built lazily: force it here
    build = time.perf_counter() - t0
    alphas = np.linspace(0.01, 8, 101)
    t0 = time.perf_counter()
    sweep(model, alphas, branches="universal", progress=False)
    warm = time.perf_counter() - t0
    print(f"gamma={gamma} readout={args.readout} activation={args.activation}")
    print(f"cold CLI sweep, 101 alpha, new (gamma, law), incl. start-up: {cold:.3f} s")
    print(f"  of which python start-up + imports:                        {startup:.3f} s")
    print(f"in-process: model/table construction {build:.3f} s, warm 101-point sweep {warm:.4f} s")
    print(f"ratio cold CLI / warm in-process sweep: {cold / max(warm, 1e-9):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
