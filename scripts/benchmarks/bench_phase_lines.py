"""Phase lines traced as curves against a grid phase diagram of the same model, in one run.

The grid method (what ``replica-phase-diagram`` does for every line): one α sweep with every branch at each
of 20 values of Δ, 40 values of α each. The traced method (:mod:`replica.continuation.codim2`): one such sweep
at the first Δ, then every fold (a branch's start, its spinodal) and every crossing of the equilibrium
(first-order transition) followed through the same 20 Δ by continuation. Reported: CPU time of each (the
process's, both cores' worth on this shared machine), their ratio (target ≤ 1/10), and the largest
difference of each traced line from the sweeps' located α_sp / α_c at 10 of the Δ (target ≤ 1e-8; where a
line is lost before the last Δ, at the Δ it reached; a crossing line only where it is not metastable, i.e. not
beyond a triple point, :mod:`replica.continuation.triples`). The differences are reported apart where the sweep's
points next to its located α are on another rule level than the line's (a solver that refines its rule, the two-layer profile
solver, carries the level of its start along a continuation): the difference of two discretizations, printed with
the sweep's ``discretization_error`` there; and a sampled Δ where the sweep has no fold or crossing within 1e-3
of the line is counted, not compared. The traced method is what ``replica-phase-diagram
--trace`` runs: sweeps at both ends, the lines from both, the critical and triple points. A branch that the
grid of a sweep misses (a short sheet between two grid points) is missing from that sweep's reference.

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


def traced(make, deltas, alphas):
    """What ``replica-phase-diagram --trace`` computes: the sweeps at ``deltas[0]`` and ``deltas[-1]``, every fold
    and crossing line through ``deltas`` from the first and, backwards, from the last, each line once, the triple
    points and the metastable pieces: ``{key: PhaseLine}`` (``key``: kind, branch names, the Δ traced from)."""
    from replica.continuation import sweep
    from replica.continuation.codim2 import critical_points, phase_line_tasks
    from replica.continuation.triples import (distinct_lines, mark_metastable, run_line_tasks, third_lines,
                                             triple_points)

    tasks = []
    for end, vals in enumerate((deltas, deltas[::-1])):
        model = make(float(vals[0]))
        tasks += phase_line_tasks(model, sweep(model, alphas, progress=False), "delta", vals)
        if end == 0:
            n_first = len(tasks)
    model = make(float(deltas[0]))
    lines = distinct_lines([line for line in run_line_tasks(tasks, n_first, deltas[-1]) if line is not None])
    critical_points(model, "delta", lines, deltas)
    triples = triple_points(model, "delta", lines)
    lines = distinct_lines(lines + third_lines(model, "delta", lines, triples, deltas))
    mark_metastable(model, "delta", lines, triples)
    for t in triples:
        print(f"  triple point: delta = {t.parameter:.10g}, alpha = {t.alpha:.10g}")
    return {(line.kind,) + line.branches + (f"{line.points[0].parameter:g}",): line for line in lines}


def grid(make, deltas, alphas):
    """One sweep per Δ: ``{Δ: SweepResult}``."""
    from replica.continuation import sweep

    return {float(d): sweep(make(float(d)), alphas, progress=False) for d in deltas}


def _reference(res, key, alpha):
    """``(α, points)``: the sweep's located α of the line's kind nearest the traced ``alpha`` (a branch start at a
    fold, a branch point, a branch start by bifurcation, the universal branch's instability, or a crossing of the
    equilibrium; names are not compared: the sweep at another Δ may name the same curve
    ``-2`` when a second one of its phase appears), and the sweep's packed points next to it on the branches
    involved (the grid point before it), for their rule levels."""
    if key[0] == "fold":
        found = [(float(b.alpha_start), (n,)) for n, b in res.branches.items()
                 if n != "universal" and b.start_kind == "fold"]
    elif key[0] == "branch_point":
        found = [(float(a), (n,)) for n, b in res.branches.items() for a in b.branch_points]
    elif key[0] == "bifurcation":
        found = [(float(b.alpha_start), (n,)) for n, b in res.branches.items()
                 if n != "universal" and b.start_kind == "bifurcation"]
    elif key[0] == "instability":
        found = [(float(res.branch_transitions.get("universal", {}).get("alpha_instability", np.nan)), ("universal",))]
    else:
        found = [(float(c["alpha"]), (c["from"], c["to"])) for c in res.equilibrium_changes if c["kind"] == "crossing"]
    found = [item for item in found if np.isfinite(item[0])]
    if not found:
        return np.nan, ()
    a, names = min(found, key=lambda item: abs(item[0] - alpha))
    points = []
    for n in names:
        b = res.branches.get(n)
        near = [] if b is None else sorted(b.points, key=lambda i: abs(float(b.alpha[i]) - a))
        points.append(None if not near else b.points[near[0]])
    return a, tuple(points)


def _levels(model, points) -> tuple:
    """Rule levels of packed points of a model whose solver refines its rule (the two-layer profile solver: a
    label of the point); () where the model's rule is fixed."""
    ps = getattr(model, "profile_solver", None)
    if ps is None or not hasattr(ps, "labels"):
        return ()
    return tuple(None if x is None else ps.labels(np.asarray(x, dtype=float))[2] for x in points)


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or ["one,two"]
    workloads = _workloads()
    for name in names[0].split(","):
        if name not in workloads:
            print(f"unknown workload {name!r}: choose from {', '.join(workloads)}", file=sys.stderr)
            return 2
        make, deltas, alphas = workloads[name]
        from replica.continuation import sweep

        # tables, compiled kernels and lazy imports outside the timings: one sweep at a Δ of neither method
        sweep(make(float(deltas[0] + deltas[-1]) / 2 + 1e-3), alphas, progress=False)
        t0 = time.process_time()
        lines = traced(make, deltas, alphas)
        t_traced = time.process_time() - t0
        t0 = time.process_time()
        sweeps = grid(make, deltas, alphas)
        t_grid = time.process_time() - t0
        report = []
        for key, line in lines.items():
            stable = {pt.parameter for pt, meta in zip(line.points, line.metastable) if not meta}
            same, other, missing, errors = [], [], 0, []
            for pt in line.points:
                d = pt.parameter
                if d not in stable or float(d) not in {float(v) for v in deltas[1::2]}:
                    continue
                ref, points = _reference(sweeps[float(d)], key, pt.alpha)
                diff = abs(pt.alpha - ref)
                if not np.isfinite(diff) or diff > 1e-3:
                    missing += 1  # no such fold or crossing in that sweep (a sheet between its grid points)
                    continue
                model = make(float(d))
                mine = _levels(model, [r.x if r is not None else None for r in pt.results])
                theirs = _levels(model, points)
                if mine == theirs:
                    same.append(diff)
                    continue
                other.append(diff)
                # the sweep's own error estimate there: relative change of mmse and f on the refined rule
                errors += [model.discretization_error(ref, np.asarray(x, dtype=float)) for x in points if x is not None]
            text = (f"{'/'.join(key)}: {len(line.points)} points, end {line.end}, largest difference from the "
                    f"sweeps {max(same, default=np.nan):.1e} at {len(same)} sampled delta")
            if other:
                finite = [e for e in errors if np.isfinite(e)]
                text += (f"; {max(other):.1e} at {len(other)} more where the sweep's points are on another rule "
                         f"level (two discretizations; the sweep's discretization_error there "
                         + (f"up to {max(finite):.1e})" if finite else "not available)"))
            if missing:
                text += f"; {missing} sampled delta where the sweep has no such line within 1e-3 (a sheet it misses)"
            report.append(text)
        print(f"{name}: {len(deltas)} delta x {len(alphas)} alpha grid {t_grid:.2f} s CPU; traced {t_traced:.2f} s "
              f"CPU; ratio {t_traced / t_grid:.3f} (target <= 0.1); differences target <= 1e-8\n  "
              + "\n  ".join(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
