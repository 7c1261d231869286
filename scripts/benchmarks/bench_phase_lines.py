"""Phase lines traced as curves against a grid phase diagram of the same model, in one run.

The grid method (what ``replica-phase-diagram`` does for every line): one α sweep with every branch at each
of 20 values of Δ, 40 values of α each. The traced method (:mod:`replica.continuation.codim2`): one such sweep
at the first Δ, then every fold (a branch's start, its spinodal) and every crossing of the equilibrium
(first-order transition) followed through the same 20 Δ by continuation. Reported: CPU time of each (the
process's, both cores' worth on this shared machine), their ratio (target ≤ 1/10), and the largest
difference between the traced lines and the sweeps' located α_sp / α_c at 10 of the Δ (target ≤ 1e-8; where a
line is lost before the last Δ, at the Δ it reached).

Workloads: ``one`` (one hidden layer, tanh2, γ = 0.5, v ≡ 1, Δ in [0.02, 0.4]), ``two`` (two hidden layers,
tanh2, γ = (0.5, 0.5), Δ in [0.05, 0.2]), ``three`` (three hidden layers, tanh2 with its linear part,
γ = 0.5 each, Δ in [0.05, 0.2], 16 α and 8 Δ: minutes).

Usage::

    python scripts/benchmarks/bench_phase_lines.py [one,two,three]
"""

from __future__ import annotations

import sys
import time

import numpy as np


def _workloads():
    from replica.models.deep_fronts import DeepFrontModel
    from replica.models.shallow import ShallowModel
    from replica.models.two_layer import TwoLayerModel

    return {
        "one": (lambda d: ShallowModel("tanh2", 0.5, d), np.linspace(0.02, 0.4, 20), np.linspace(0.05, 8.0, 40)),
        "two": (lambda d: TwoLayerModel("tanh2", (0.5, 0.5), d), np.linspace(0.05, 0.2, 20),
                np.linspace(0.5, 8.0, 40)),
        "three": (lambda d: DeepFrontModel(gammas=(0.5,) * 3, activation="tanh2", delta=d), np.linspace(0.05, 0.2, 8),
                  np.linspace(0.5, 8.0, 16)),
    }


def _point(model, alphas, branch, alpha):
    """The branch's point at the grid α nearest ``alpha`` where it exists (Newton-polished), or None."""
    ok = np.flatnonzero(branch["exists"])
    if ok.size == 0:
        return None
    i = int(ok[np.argmin(np.abs(alphas[ok] - alpha))])
    return model.solve_from(float(alphas[i]), None, branch.points[i], method="newton")


def traced(make, deltas, alphas):
    """The sweep at ``deltas[0]`` and every fold and crossing line through ``deltas``: ``{key: PhaseLine}``."""
    from replica.continuation import sweep
    from replica.continuation.codim2 import trace_crossing_line, trace_fold_line

    model = make(float(deltas[0]))
    res = sweep(model, alphas, progress=False)
    lines = {}
    for name, b in res.branches.items():
        if name != "universal" and b.start_kind == "fold":
            pt = _point(model, alphas, b, b.alpha_start)
            if pt is not None:
                lines[("fold", name)] = trace_fold_line(model, "delta", deltas, b.alpha_start, pt, +1)
    for c in res.equilibrium_changes:
        if c["kind"] != "crossing":
            continue
        a = None if c["from"] == "universal" else _point(model, alphas, res.branches[c["from"]], c["alpha"])
        b = _point(model, alphas, res.branches[c["to"]], c["alpha"])
        if b is not None and (a is not None or c["from"] == "universal"):
            lines[("crossing", c["from"], c["to"])] = trace_crossing_line(model, "delta", deltas, c["alpha"], a, b)
    return lines


def grid(make, deltas, alphas):
    """One sweep per Δ: ``{Δ: SweepResult}``."""
    from replica.continuation import sweep

    return {float(d): sweep(make(float(d)), alphas, progress=False) for d in deltas}


def _reference(res, key, alpha):
    """The sweep's located α of the line's kind nearest the traced ``alpha``: a branch start at a fold, or a
    crossing of the equilibrium (names are not compared: the sweep at another Δ may name the same curve
    ``-2`` when a second one of its phase appears)."""
    if key[0] == "fold":
        found = [float(b.alpha_start) for n, b in res.branches.items() if n != "universal" and b.start_kind == "fold"]
    else:
        found = [float(c["alpha"]) for c in res.equilibrium_changes if c["kind"] == "crossing"]
    return min(found, key=lambda a: abs(a - alpha)) if found else np.nan


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or ["one,two"]
    workloads = _workloads()
    for name in names[0].split(","):
        if name not in workloads:
            print(f"unknown workload {name!r}: choose from {', '.join(workloads)}", file=sys.stderr)
            return 2
        make, deltas, alphas = workloads[name]
        make(float(deltas[0]))  # tables and compiled kernels outside the timings
        t0 = time.process_time()
        lines = traced(make, deltas, alphas)
        t_traced = time.process_time() - t0
        t0 = time.process_time()
        sweeps = grid(make, deltas, alphas)
        t_grid = time.process_time() - t0
        worst, compared = 0.0, 0
        for key, line in lines.items():
            for d in deltas[1::2]:
                ref = _reference(sweeps[float(d)], key, line.at(d))
                if np.isfinite(ref) and np.isfinite(line.at(d)):
                    worst, compared = max(worst, abs(line.at(d) - ref)), compared + 1
        ends = ", ".join(f"{'/'.join(k)}: {len(v.points)} points, end {v.end}" for k, v in lines.items())
        print(f"{name}: {len(deltas)} delta x {len(alphas)} alpha grid {t_grid:.2f} s CPU; traced {t_traced:.2f} s "
              f"CPU ({len(lines)} lines: {ends}); ratio {t_traced / t_grid:.3f} (target <= 0.1); largest "
              f"difference from the sweeps at {compared} sampled (line, delta) {worst:.2e} (target <= 1e-8)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
