"""GAMP-RIE's d × d eigendecompositions with one BLAS thread vs the default thread pool.

The experiment runner imports JAX (data generation), whose thread pool competes with a
multithreaded BLAS; ``replica.simulations.gamp_rie.make_gamp_rie_runner`` therefore limits BLAS to one
thread around the iteration (threadpoolctl).  This script measures, in one process and with JAX
loaded, the time of one GAMP-RIE matrix step (``numpy.linalg.eigh`` plus one product) at several
d with the default BLAS threads and with one thread, and prints the ratio.

Usage: ``python scripts/benchmarks/bench_gamp_rie_threads.py [--dims 30,100,200,400]``
"""

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits


def step_time(d, limit, repeats, rng):
    b = rng.standard_normal((d, d))
    b = b + b.T
    with threadpool_limits(limits=limit, user_api="blas"):
        np.linalg.eigh(b)  # warm-up
        t0 = time.perf_counter()
        for _ in range(repeats):
            w, v = np.linalg.eigh(b)
            (v * w) @ v.T
        return (time.perf_counter() - t0) / repeats


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", default="30,100,200,400")
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args()
    try:
        import jax  # noqa: F401  - the runner's situation: JAX's thread pool is up
        jax.numpy.zeros(1).block_until_ready()
    except ImportError:
        print("jax not installed: measuring without it")
    rng = np.random.default_rng(0)
    print(f"{'d':>5} {'default [ms]':>13} {'1 thread [ms]':>14} {'ratio':>7}")
    for d in (int(x) for x in args.dims.split(",")):
        default = step_time(d, None, args.repeats, rng)
        single = step_time(d, 1, args.repeats, rng)
        print(f"{d:>5} {1e3 * default:>13.2f} {1e3 * single:>14.2f} {default / single:>7.1f}")


if __name__ == "__main__":
    main()
