#!/usr/bin/env python
"""Table of an experiment file against a reference HMC curve (and the theory, if available).

Usage::

    python scripts/experiments/compare_reference.py exp.h5 \
        --reference path/to/hmc_relu_delta0.1_gamma0.5_readout_ones_d150.csv

The reference CSV has columns ``alpha, info_mean, unfo_mean, info_std, unfo_std`` (the
published HMC runs of Barbier et al. at d = 150); rows are matched by α.  With
``--theory`` the equilibrium and universal branch of ``replica`` are added.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from replica.workflow.experiment_io import read_experiment


def _theory(parameters, alphas):
    try:
        from replica.continuation import sweep
        from replica.models.shallow import ShallowModel
    except ImportError as exc:  # solver not installed
        print(f"theory unavailable: {exc}", file=sys.stderr)
        return None
    model = ShallowModel(parameters["activation"], parameters["gamma"][0], parameters["delta"],
                         weight_prior=parameters["prior"], readout_law=parameters["readout"])
    result = sweep(model, list(alphas), progress=False)
    return result.equilibrium["mmse"], result.branches["universal"]["mmse"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("experiment", help="HDF5 file written by replica-experiment")
    p.add_argument("--reference", help="reference CSV (alpha, info_mean, unfo_mean, info_std, unfo_std)")
    p.add_argument("--theory", action="store_true", help="add the replica equilibrium and universal branch")
    args = p.parse_args(argv)
    data = read_experiment(args.experiment)
    params = data["parameters"]
    reference = {}
    if args.reference:
        table = np.genfromtxt(args.reference, delimiter=",", names=True)
        reference = {round(float(r["alpha"]), 6): r for r in table}
    groups = data["groups"]
    alphas = next(iter(groups.values()))["alpha"]
    theory = _theory(params, alphas) if args.theory else None
    inits = sorted({init for _, init in groups})
    sampler = params["sampler"]
    header = ["alpha"] + [f"{sampler} {i} (d={params['dim']}, {params['teachers']} teachers)" for i in inits]
    if reference:
        header += ["ref informed", "ref uninformed"]
    if theory is not None:
        header += ["theory equilibrium", "theory universal"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for a, alpha in enumerate(alphas):
        row = [f"{alpha:g}"]
        for init in inits:
            g = groups[(sampler, init)]
            row.append(f"{g['mmse_mean'][a]:.5f} ± {g['mmse_sem'][a]:.5f} (q={g['overlap_mean'][a, 0]:.2f})")
        if reference:
            r = reference.get(round(float(alpha), 6))
            row += ([f"{r['info_mean']:.5f} ± {r['info_std']:.5f}", f"{r['unfo_mean']:.5f} ± {r['unfo_std']:.5f}"]
                    if r is not None else ["—", "—"])
        if theory is not None:
            row += [f"{theory[0][a]:.5f}", f"{theory[1][a]:.5f}"]
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
