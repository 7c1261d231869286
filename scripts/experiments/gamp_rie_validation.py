"""GAMP-RIE at finite d against the universal branch, the specialized branch and published AMP.

Runs :func:`replica.simulations.experiment.run_experiment` with ``sampler='gamp-rie'`` for the
validation cases of issue 19 (docs/gamp_rie.md §5) and prints one markdown table:

* ``quadratic``: σ = x²/√2, γ = 0.5, Δ = 0, against Maillard et al.'s AMP points;
* ``quadratic-noisy``: the same with Δ = 0.125, i.e. their noise σ = 0.25 in our convention
  (Δ = γ Δ_M/2 with Δ_M = 4σ²/κ = 0.5, see tests/test_shallow_universal.py);
* ``relu``, ``elu``: γ = 0.5, Δ = 0.1, v ≡ 1, Gaussian weights, α up to 6.

Each case also writes its HDF5 file (layout of :mod:`replica.workflow.experiment_io`, overlay with
``replica-plot --experiment``).  Example (about 25 min on 2 loaded CPU cores)::

    python scripts/experiments/gamp_rie_validation.py --case all --output-dir gamp_runs
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from pathlib import Path

import numpy as np

# Maillard, Troiani, Martin, Krzakala, Zdeborová (arXiv 2408.03733), public code repository,
# files AMP_<d>_0.5_<sigma>.csv: (alpha, AMP_mean, AMP_std) of their GAMP-RIE, normalized to 1
# at alpha = 0 (equal to our mmse for x²/√2, docs/theory.md §5.1).
PUBLISHED_AMP = {
    ("quadratic", 0.0, 100): {0.1: (0.7320577845845866, 0.025035385992398577),
                              0.2: (0.4184109807155514, 0.023582713287529117),
                              0.3: (0.13695115320056844, 0.00481551731845491)},
    ("quadratic", 0.0, 200): {0.1: (0.747974289804983, 0.019906509764854093),
                              0.2: (0.4027693069251995, 0.012830667421436414),
                              0.3: (0.13296975695792235, 0.007127793005896496)},
    ("quadratic", 0.125, 200): {0.1: (0.7986043250448727, 0.008665952835291226),
                                0.2: (0.5381041309299426, 0.009305078220639454),
                                0.3: (0.3485648947051891, 0.0034214619785057853),
                                0.4: (0.23707681997835728, 0.0029993385583185384),
                                0.5: (0.1728838874318005, 0.002963887488680867)},
}

CASES = {
    "quadratic": [dict(activation="quadratic", delta=0.0, dim=100, alpha=(0.1, 0.2, 0.3), teachers=6),
                  dict(activation="quadratic", delta=0.0, dim=200, alpha=(0.1, 0.2, 0.3), teachers=3)],
    "quadratic-noisy": [dict(activation="quadratic", delta=0.125, dim=200, alpha=(0.1, 0.2, 0.3, 0.4, 0.5),
                             teachers=3)],
    "relu": [dict(activation="relu", delta=0.1, dim=100, alpha=(0.5, 1.0, 2.0, 4.0, 6.0), teachers=3)],
    "elu": [dict(activation="elu", delta=0.1, dim=100, alpha=(0.5, 1.0, 2.0, 4.0, 6.0), teachers=3)],
}


def theory(activation, delta, alpha, gamma=0.5):
    """(universal mmse, specialized mmse or NaN, finite-d state evolution at d) for one α."""
    from replica.models.shallow import ShallowModel

    model = ShallowModel(activation, gamma, delta)
    universal = model.solve_universal(alpha).info["state"].mmse
    specialized = math.nan
    if activation != "quadratic":  # docs/theory.md §5.4 rule 1: g ≡ 0 with Gaussian weights reports universal only
        res = model.solve_from(alpha, np.full(model.n_readout, 0.99), start="informed")
        state = res.info.get("state")
        if res.converged and state is not None and float(np.max(state.overlap_W)) > 1e-3:
            specialized = state.mmse
    return universal, specialized


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=tuple(CASES) + ("all",), default="all")
    parser.add_argument("--output-dir", default="gamp_rie_runs", help="directory of the HDF5 files")
    parser.add_argument("--teachers", type=int, default=None, help="override the number of teachers")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    from replica.simulations.experiment import ExperimentConfig, run_experiment
    from replica.simulations.gamp_rie import state_evolution
    from replica.workflow.experiment_io import write_experiment

    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in (tuple(CASES) if args.case == "all" else (args.case,)):
        for spec in CASES[name]:
            teachers = args.teachers or spec["teachers"]
            config = ExperimentConfig(activation=spec["activation"], gamma=(0.5,), delta=spec["delta"],
                                      alpha=spec["alpha"], dim=spec["dim"], teachers=teachers,
                                      sampler="gamp-rie", init=("uninformed",), steps=500, seed=args.seed,
                                      x64=True)
            begin = time.perf_counter()
            results = run_experiment(config)
            elapsed = time.perf_counter() - begin
            path = out / f"{name}_d{spec['dim']}.h5"
            write_experiment(path, config, results, overwrite=True)
            data = results["uninformed"].datasets
            for i, alpha in enumerate(spec["alpha"]):
                universal, specialized = theory(spec["activation"], spec["delta"], alpha)
                finite = state_evolution(alpha, activation=spec["activation"], gamma=0.5, delta=spec["delta"],
                                         dim=spec["dim"])["mmse"][-1]
                amp = PUBLISHED_AMP.get((spec["activation"], spec["delta"], spec["dim"]), {}).get(alpha)
                rows.append((spec["activation"], spec["delta"], alpha, spec["dim"], teachers,
                             data["mmse_mean"][i], data["mmse_sem"][i], int(np.nansum(data["converged"][i])),
                             universal, finite, specialized, amp))
            print(f"{name} d={spec['dim']}: {elapsed:.0f} s, written {path}", flush=True)

    print("\n| activation | Δ | α | d | teachers | GAMP-RIE mmse ± sem | converged | universal (d=∞) "
          "| SE at d | rel. to universal | specialized | published AMP ± std |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (act, delta, alpha, d, t, mean, sem, conv, uni, fin, spec, amp) in rows:
        amp_text = f"{amp[0]:.4f} ± {amp[1]:.4f}" if amp else "–"
        spec_text = f"{spec:.5f}" if math.isfinite(spec) else "–"
        print(f"| {act} | {delta:g} | {alpha:g} | {d} | {t} | {mean:.5f} ± {sem:.5f} | {conv}/{t} | {uni:.5f} "
              f"| {fin:.5f} | {mean / uni - 1:+.1%} | {spec_text} | {amp_text} |")


if __name__ == "__main__":
    main()
