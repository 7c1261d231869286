"""Time warm sweeps with all branches (the second sweep in the same process, tables built).

* one hidden layer: ``replica.continuation.sweep`` on ``ShallowModel(activation, 0.5, 0.1)``
  (``v ≡ 1``, Gaussian W), 201 values of α in [0.01, 8], every start, equilibrium and
  transitions (target: under 5 s on 2 cores);
* two hidden layers, when ``replica.models.two_layer`` exists: ``TwoLayerModel("tanh2", (1, 1), 0.1)``,
  51 values of α in [0.1, 8], every start (printed as skipped otherwise).

Usage::

    python scripts/benchmarks/bench_sweeps.py [--activations relu,elu,tanh2] [--skip-two-layer]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import numpy as np


def timed_sweeps(model, alphas):
    """(first, warm) wall times of two identical sweeps and the warm sweep's result."""
    from replica.continuation import sweep

    t0 = time.perf_counter()
    sweep(model, alphas, progress=False)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = sweep(model, alphas, progress=False)
    return first, time.perf_counter() - t0, result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--activations", default="relu", help="one-hidden-layer activations (default relu)")
    p.add_argument("--skip-two-layer", action="store_true", help="do not time the two-hidden-layer sweep")
    args = p.parse_args(argv)

    from replica.models.shallow import ShallowModel

    alphas = np.linspace(0.01, 8, 201)
    for activation in args.activations.split(","):
        first, warm, result = timed_sweeps(ShallowModel(activation, 0.5, 0.1), alphas)
        tr = result.transitions
        print(f"one hidden layer, {activation}, gamma=0.5, delta=0.1, 201 alpha, all branches: "
              f"first {first:.2f} s (tables included), warm {warm:.2f} s; "
              f"alpha_sp = {tr['alpha_sp']:.7g}, alpha_c = {tr['alpha_c']:.7g}", flush=True)

    if args.skip_two_layer:
        return 0
    if importlib.util.find_spec("replica.models.two_layer") is None:
        print("two hidden layers: skipped (replica.models.two_layer not available)")
        return 0
    from replica.models.two_layer import TwoLayerModel

    alphas = np.linspace(0.1, 8, 51)
    first, warm, result = timed_sweeps(TwoLayerModel("tanh2", (1.0, 1.0), 0.1), alphas)
    tr = result.transitions
    print(f"two hidden layers, tanh2, gammas=(1, 1), delta=0.1, 51 alpha, all starts: "
          f"first {first:.2f} s, warm {warm:.2f} s; alpha_sp = {tr['alpha_sp']:.7g}, alpha_c = {tr['alpha_c']:.7g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
