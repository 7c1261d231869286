"""A grid phase diagram on the local cluster: the package's workers against workers with dask's own environment.

dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``).
With that variable set, glibc stops adapting its mmap threshold, and every array above 128 KiB (a Jacobian's
batch of points of the deep map) is mapped and unmapped again. ``replica-phase-diagram`` starts its local workers
without it (:func:`replica.workflow.phase_diagram._client`); the *plain method* here is the same command with the
variable in the environment, which the workers then inherit, i.e. what dask would do by default.

Both run alternately in one process, ``--repeat`` times each. Reported per run: wall time, the workers' CPU time
(user and system, from ``getrusage(RUSAGE_CHILDREN)`` once the cluster's worker processes have exited) and
their minor page faults; then the ratios (dask's environment / the package's) of the minima, and the largest
difference between the two files' α_sp and α_c (they must agree: only the allocator differs).

Workload (default): three hidden layers, tanh(2x) with unit variance and its linear part, γ = 0.5 each,
Δ = 0.02:0.4 with ``--deltas`` values, α = 0.5:8 with ``--alphas`` values, 2 workers. ``--layers 4`` runs four.

Usage::

    python scripts/benchmarks/bench_phase_diagram_workers.py [--layers 3] [--deltas 8] [--alphas 20] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def run(argv, trim):
    """One ``replica-phase-diagram`` run (``trim``: dask's MALLOC_TRIM_THRESHOLD_ in the environment, or not):
    ``(wall s, workers' user s, workers' system s, workers' minor faults, output path)``."""
    from replica.workflow.cli import phase_diagram_main

    out = Path(tempfile.mkdtemp(prefix="bench_pd_")) / "ph.h5"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    saved = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    if trim:
        os.environ["MALLOC_TRIM_THRESHOLD_"] = "65536"
    else:
        os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    try:
        t0 = time.perf_counter()
        rc = phase_diagram_main(argv + ["--quiet", "-o", str(out)])
        wall = time.perf_counter() - t0
    finally:
        if saved is None:
            os.environ.pop("MALLOC_TRIM_THRESHOLD_", None)
        else:
            os.environ["MALLOC_TRIM_THRESHOLD_"] = saved
    if rc != 0:
        raise SystemExit(f"replica-phase-diagram exited with {rc}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
            after.ru_minflt - before.ru_minflt, out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=3, choices=(3, 4))
    p.add_argument("--deltas", type=int, default=8)
    p.add_argument("--alphas", type=int, default=20)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args(argv)
    from replica.workflow.io import read_phase_diagram

    gamma = ",".join(["0.5"] * args.layers)
    command = ["--layers", str(args.layers), "--gamma", gamma, "--activation", "tanh2", "--unit-variance",
               "--delta", f"0.02:0.4:{args.deltas}", "--alpha", f"0.5:8:{args.alphas}", "--workers", "2"]
    rows = {False: [], True: []}
    for _ in range(max(1, args.repeat)):
        for trim in (False, True):
            rows[trim].append(run(command, trim))
    print(f"== {args.layers} hidden layers, {args.deltas} delta x {args.alphas} alpha, 2 workers")
    for trim, label in ((False, "package's workers      "), (True, "dask's MALLOC_TRIM     ")):
        for wall, user, system, faults, _ in rows[trim]:
            print(f"   {label}: {wall:7.1f} s wall, workers {user:7.1f} s user + {system:6.1f} s system, "
                  f"{faults / 1e6:6.2f} M minor faults")
    best = {t: min(rows[t], key=lambda r: r[0]) for t in rows}
    print(f"   ratio dask/package: wall {best[True][0] / best[False][0]:.2f}, workers' CPU "
          f"{(best[True][1] + best[True][2]) / (best[False][1] + best[False][2]):.2f}, "
          f"system {best[True][2] / max(best[False][2], 1e-9):.1f}")
    a, b = read_phase_diagram(best[False][4]), read_phase_diagram(best[True][4])
    diff = max(float(np.nanmax(np.abs(np.asarray(a[k]) - np.asarray(b[k])), initial=0.0)) for k in ("alpha_sp", "alpha_c"))
    print(f"   largest difference of alpha_sp, alpha_c between the two: {diff:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
