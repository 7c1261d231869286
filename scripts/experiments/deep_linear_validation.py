"""L hidden layers with linear parts (docs/deep_linear.md): replica theory vs HMC at small d.

Runs :class:`replica.models.deep_linear.DeepLinearModel` (every branch, equilibrium, mean overlap of every
layer and product) and the teacher–student HMC experiment of :mod:`replica.simulations.experiment` from
informed (teacher) and uninformed (prior draw) starts, for ``tanh(2x)`` rescaled to unit variance
with its linear part kept, and prints/writes a comparison table. The sampling part is that of
``two_layer_validation.py`` with L = ``len(--gamma)``.

Usage (CPU; d = 30, three α, two teachers, 1500 steps: a few CPU-minutes, 2–3 in the run of
docs/deep_linear.md §10)::

    nice -n 10 python scripts/experiments/deep_linear_validation.py --gamma 0.5,0.5,0.5 --dim 30 \\
        --alpha 1,2,5 --teachers 2 --steps 1500 -o deep_linear_validation.json

Tolerances: as for two layers (finite-size shifts of the transitions at d = 30, O(d/n) excess
from the linear paths, 10–30% teacher-to-teacher spread); the matched per-layer overlaps of
HMC carry a matching bias of ≈ 0.3–0.45 when nothing is learned (docs/two_layer.md).

References
----------
Barbier, Camilli, Nguyen, Pastore, Skerk, arXiv 2510.24616.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from two_layer_validation import ACTIVATION, common_arguments, report, sampling_table  # noqa: E402

__all__ = ["theory_table", "format_table", "main"]


def theory_table(alphas, gammas, delta, *, s_grid=8):
    """Theory at each α: equilibrium and every branch (mmse, phase, mean overlap per matrix).

    Returns
    -------
    dict
        ``alpha``, ``branches`` ({name: list of dicts or None}), ``equilibrium`` (branch names),
        ``mmse_universal``, ``matrices`` (labels ``1``, ``2``, …, ``2:1``, … of the mean overlaps).
    """
    from replica.continuation import sweep
    from replica.models.deep_linear import DeepLinearModel

    model = DeepLinearModel(ACTIVATION, gammas, delta, s_grid=s_grid)
    res = sweep(model, np.asarray(alphas, dtype=float), progress=False, locate=False)
    labels = [f"{k[0]}" if k[0] == k[1] else f"{k[0]}:{k[1]}" for k in model.keys]
    out = {"alpha": res.alpha.tolist(), "branches": {}, "equilibrium": list(res.equilibrium["branch"]),
           "mmse_universal": model.mmse_universal, "matrices": labels}
    for name, b in res.branches.items():
        rows = []
        for i in range(res.alpha.size):
            if not b["exists"][i]:
                rows.append(None)
                continue
            st = model.state(float(res.alpha[i]), b.points[i])
            rows.append({"mmse": st.mmse, "free_entropy": st.free_entropy, "phase": model.phase(st),
                         "mean_overlaps": [st.mean_overlaps[k] for k in model.keys]})
        out["branches"][name] = rows
    return out


def format_table(theory, sampling) -> str:
    """Plain-text comparison table (theory: mmse and mean overlaps of layers, then products)."""
    n_layers = sum(":" not in m for m in theory["matrices"])
    lines = [f"alpha | theory eq (phase, mmse, q[{', '.join(theory['matrices'])}]) | other branches "
             f"| HMC informed err (q1..q{n_layers}) | HMC uninformed err (q1..q{n_layers})"]
    for i, a in enumerate(theory["alpha"]):
        eq = theory["equilibrium"][i]
        e = theory["branches"][eq][i] if eq != "universal" else {
            "phase": "universal", "mmse": theory["mmse_universal"], "mean_overlaps": [0.0] * len(theory["matrices"])}
        others = [f"{n} {b[i]['mmse']:.4f}" for n, b in theory["branches"].items() if b[i] is not None and n != eq]
        qs = ", ".join(f"{q:.2f}" for q in e["mean_overlaps"])
        row = [f"{a:g}", f"{e['phase']} {e['mmse']:.4f} ({qs})", ", ".join(others)]
        for init in ("informed", "uninformed"):
            s = sampling.get(init)
            if s is None:
                row.append("-")
                continue
            q = ", ".join(f"{x:.2f}" for x in s["overlap_mean"][i])
            row.append(f"{s['error_mean'][i]:.4f} ± {s['error_sem'][i]:.4f} ({q})")
        lines.append(" | ".join(row))
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common_arguments(p, gamma="0.5,0.5,0.5", alpha="1,2,5", steps=1500)
    p.add_argument("--s-grid", type=int, default=8, help="effective-readout nodes of the theory (default 8)")
    p.add_argument("--theory-only", action="store_true", help="skip the sampling")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", force=True)
    gammas = [float(g) for g in args.gamma.split(",")]
    alphas = [float(a) for a in args.alpha.split(",")]
    t0 = time.perf_counter()
    theory = theory_table(alphas, gammas, args.delta, s_grid=args.s_grid)
    t1 = time.perf_counter()
    sampling = {} if args.theory_only else sampling_table(
        alphas, gammas, args.delta, dim=args.dim, teachers=args.teachers, steps=args.steps, seed=args.seed,
        n_test=args.n_test)
    t2 = time.perf_counter()
    report(args, theory, sampling, format_table(theory, sampling), {"theory": t1 - t0, "sampling": t2 - t1})
    return 0

if __name__ == "__main__":
    sys.exit(main())
