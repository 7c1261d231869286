"""Continuous readout laws: accuracy and speed of the profile solver (replica.readout_grid).

Input of the issue: σ = He₂/√2 + He₃/6 (``hermite:2=1.4142135623730951,3=1``), Gaussian W,
γ = 0.5, Δ = 0.1, warm HCIZ cache (the channel of each law is built once per γ).

Measured in one run:

* the plain method — dense damped iteration over all nodes of a fixed 64-node grid (the
  solver used for every continuous law before; ``model.profile_solver = None``), informed
  start at α = 3.2;
* the profile solver at the same point, cold (informed start) and warm (continuation in α);
* a 101-α sweep with every branch, equilibrium and transitions (``replica.continuation.sweep``);
* mmse with its ``discretization_error`` at α = 2, 3.2, 8 for the gaussian and uniform laws, and
  the same with 4× more nodes per panel (the default must not move by 1e-3).

Targets: one α of a warm sweep ≤ 0.5 s, the 101-α sweep ≤ 30 s (2 cores).

Usage::

    python scripts/benchmarks/bench_readout_grid.py [--laws gaussian,uniform] [--skip-dense]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

ACTIVATION = "hermite:2=1.4142135623730951,3=1"


def main(argv=None) -> int:
    from replica.continuation import sweep
    from replica.readout_grid import BASE_NODES, ProfileSolver
    from replica.models.shallow import ShallowModel

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--laws", default="gaussian,uniform")
    p.add_argument("--skip-dense", action="store_true", help="do not time the dense 64-node solve")
    args = p.parse_args(argv)

    for law in args.laws.split(","):
        model = ShallowModel(ACTIVATION, 0.5, 0.1, readout_law=law)
        model.channel.mmse(1.0)  # table from the cache (built once per γ and law)
        print(f"== readout law {law}")
        fine = ShallowModel(ACTIVATION, 0.5, 0.1, readout_law=law)
        fine.profile_solver = ProfileSolver(fine, base_nodes=4 * BASE_NODES)
        for alpha in (2.0, 3.2, 8.0):
            t0 = time.perf_counter()
            st = model.solve_from(alpha, 0.99, None, start="informed").info["state"]
            dt = time.perf_counter() - t0
            st4 = fine.solve_from(alpha, 0.99, None, start="informed").info["state"]
            print(f"alpha={alpha:4.1f}  mmse={st.mmse:.8f}  discretization_error={st.discretization_error:.1e}  "
                  f"4x finer: {st4.mmse:.8f} (rel. change {abs(st.mmse - st4.mmse) / st4.mmse:.1e})  "
                  f"cold solve {dt:.3f} s")
        alphas = np.linspace(3.0, 3.5, 11)
        res = model.solve_from(alphas[0], 0.99, None)
        t0 = time.perf_counter()
        for a in alphas[1:]:
            res = model.solve_from(a, None, res.x)
        warm = (time.perf_counter() - t0) / (alphas.size - 1)
        print(f"warm continuation: {warm:.3f} s per alpha (target <= 0.5 s)")
        if not args.skip_dense:
            dense = ShallowModel(ACTIVATION, 0.5, 0.1, readout_law=law, readout_grid=64)
            dense.solve(3.2, 0.99, start="informed")  # warm-up (tables, compiled kernels)
            dense.profile_solver = None
            t0 = time.perf_counter()
            slow = dense.solve(3.2, 0.99, start="informed")
            dt_dense = time.perf_counter() - t0
            t0 = time.perf_counter()
            quick = ShallowModel(ACTIVATION, 0.5, 0.1, readout_law=law, readout_grid=64).solve(
                3.2, 0.99, start="informed")
            dt_quick = time.perf_counter() - t0
            print(f"64-node grid, alpha=3.2: dense iteration {dt_dense:.2f} s ({slow.iterations} iterations, "
                  f"mmse {slow.info['state'].mmse:.8f}); profile solver {dt_quick:.3f} s "
                  f"(mmse {quick.info['state'].mmse:.8f}); ratio {dt_dense / dt_quick:.0f}x")
        grid = np.linspace(0.01, 8.0, 101)
        t0 = time.perf_counter()
        result = sweep(model, grid, progress=False)
        dt = time.perf_counter() - t0
        print(f"101-alpha sweep, all branches: {dt:.1f} s (target <= 30 s); branches {list(result.branches)}; "
              f"alpha_sp = {result.transitions['alpha_sp']:.6g}, alpha_c = {result.transitions['alpha_c']:.6g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
