"""Finite-size study: posterior sampling at growing d against the replica theory, extrapolated in 1/d.

Two protocols (issue "feature learning resolved neuron by neuron", docs/two_layer.md):

``two_layer``
    two hidden layers with linear parts, tanh(2x) rescaled to unit variance, γ = (0.5, 0.5),
    Δ = 0.1, Gaussian weights, v ≡ 1; HMC from informed (teacher) and uninformed (prior draw)
    starts at α = 1 (theory: only layer 1 learned, strong effective readouts first), 2.5 and 5
    (both layers learned). Questions: does the error deficit of HMC at α = 1 close as d grows,
    and is layer 1 learned first (cross-fitted overlaps, unbiased on unlearned networks)?
``rademacher``
    one hidden layer, Rademacher weights, σ = He₂/√2, γ = 0.5, Δ = 1.25, v ≡ 1; Metropolis from
    informed and uninformed starts at α = 0.8, 1.2, 1.6, where the theory's equilibrium is the
    ``weak`` branch a few per cent below the universal one. Question: is the weak branch observed
    at finite d, or do informed chains relax to the universal error?

Every run is a ``replica-experiment`` (and ``replica-sweep`` for the theory) written into the output
directory, chains checkpointed as they finish: an interrupted study resumes where it stopped when run
again with the same options. The report (printed, and ``finite_size_study.json`` / ``.md``) gives per α
the theory's branches and equilibrium, the measured errors and unbiased per-layer overlaps per d, and
their weighted least-squares extrapolation ``y(d) = y_∞ + b/d`` (the standard error of ``y_∞`` from the
fit's covariance with the measured standard errors, inflated by √χ²/dof when χ²/dof > 1).

Usage::

    nice -n 10 python scripts/experiments/finite_size_study.py -o finite_size/            # full, ~1.5 h
    python scripts/experiments/finite_size_study.py --quick -o /tmp/fs                    # seeded smoke test

Report, do not tune: no option of the theory depends on the measured numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["PROTOCOLS", "extrapolate", "theory", "measured", "study", "format_report", "main"]

PROTOCOLS = {
    "two_layer": {
        "model": ["--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2", "--unit-variance", "--delta", "0.1",
                  "--readout", "ones", "--prior", "gaussian"],
        "sampler": "hmc", "alpha": (1.0, 2.5, 5.0), "dims": (40, 60, 80), "steps": 2000, "teachers": 3,
    },
    "rademacher": {
        "model": ["--layers", "1", "--gamma", "0.5", "--activation", "hermite:2=1.4142135623730951", "--delta",
                  "1.25", "--readout", "ones", "--prior", "rademacher"],
        "sampler": "metropolis", "alpha": (0.8, 1.2, 1.6), "dims": (40, 60, 80), "steps": 1000, "teachers": 3,
    },
}
#: the seeded smoke test (``--quick``): tiny sizes, the same code paths
QUICK = {"dims": (12, 16), "steps": 60, "teachers": 2}


def extrapolate(dims, values, sems):
    """Weighted least-squares fit ``y(d) = y_∞ + b/d``.

    Parameters
    ----------
    dims : array_like, shape (m,)
        Input dimensions, m ≥ 2 distinct.
    values, sems : array_like, shape (m,)
        Measurements and their standard errors (non-finite entries are left out; a standard error
        ≤ 0 or NaN is replaced by the largest finite one, or 1 if none).

    Returns
    -------
    dict
        ``infinity`` (y_∞), ``infinity_sem``, ``slope`` (b), ``chi2_per_dof`` (NaN for two points), or NaN
        entries when fewer than two finite points remain.
    """
    d = np.asarray(dims, dtype=float)
    y = np.asarray(values, dtype=float)
    s = np.asarray(sems, dtype=float)
    keep = np.isfinite(y)
    d, y, s = d[keep], y[keep], s[keep]
    nan = {"infinity": float("nan"), "infinity_sem": float("nan"), "slope": float("nan"), "chi2_per_dof": float("nan")}
    if np.unique(d).size < 2:
        return nan
    good = np.isfinite(s) & (s > 0)
    s = np.where(good, s, np.max(s[good]) if good.any() else 1.0)
    design = np.column_stack([np.ones_like(d), 1.0 / d])
    w = 1.0 / s
    coef, *_ = np.linalg.lstsq(design * w[:, None], y * w, rcond=None)
    cov = np.linalg.inv((design * w[:, None] ** 2).T @ design)
    dof = d.size - 2
    chi2 = float(np.sum(((design @ coef - y) * w) ** 2) / dof) if dof > 0 else float("nan")
    scale = np.sqrt(chi2) if np.isfinite(chi2) and chi2 > 1 else 1.0
    return {"infinity": float(coef[0]), "infinity_sem": float(np.sqrt(cov[0, 0]) * scale), "slope": float(coef[1]),
            "chi2_per_dof": chi2}


def theory(outdir: Path, name: str, protocol: dict) -> dict:
    """The theory at the protocol's α: every branch's mmse, the equilibrium, per-layer mean overlaps."""
    from replica.workflow.cli import sweep_main
    from replica.workflow.io import read_sweep

    path = outdir / f"{name}_theory.h5"
    alphas = ",".join(f"{a:g}" for a in protocol["alpha"])
    code = sweep_main([*protocol["model"], "--alpha", alphas, "-o", str(path), "--overwrite", "--quiet"])
    if code != 0:
        raise RuntimeError(f"replica-sweep for {name} failed with exit code {code}")
    data = read_sweep(path)
    out = {"alpha": list(protocol["alpha"]), "equilibrium": [str(b) for b in data["equilibrium"]["branch"]],
           "equilibrium_mmse": np.asarray(data["equilibrium"]["mmse"], float).tolist(), "branches": {}}
    for bname, b in data["branches"].items():
        rows = []
        for i in range(len(protocol["alpha"])):
            if not bool(b["exists"][i]):
                rows.append(None)
                continue
            row = {"mmse": float(b["mmse"][i])}
            if "neuron_overlap_layer_1" in b:  # per-layer means from the per-neuron maps (equal-weight nodes)
                row["overlap_layer_1"] = float(np.mean(b["neuron_overlap_layer_1"][i]))
                w = np.asarray(b["readout_weights"], float)
                q2 = np.asarray(b["neuron_overlap_layer_2"][i], float).reshape(w.size, -1)
                row["overlap_layer_2"] = float(w @ q2.mean(axis=1) / w.sum())
            elif "overlap_W" in b:
                row["overlap_layer_1"] = float(np.mean(b["overlap_W"][i]))
            rows.append(row)
        out["branches"][bname] = rows
    return out


def measured(outdir: Path, name: str, protocol: dict, dim: int, *, steps: int, teachers: int, seed: int) -> dict:
    """One ``replica-experiment`` (informed and uninformed starts) at input dimension ``dim``."""
    from replica.workflow.experiment_cli import main as experiment_main
    from replica.workflow.experiment_io import read_experiment

    path = outdir / f"{name}_d{dim}.h5"
    alphas = ",".join(f"{a:g}" for a in protocol["alpha"])
    t0 = time.process_time()
    w0 = time.perf_counter()
    code = experiment_main([*protocol["model"], "--alpha", alphas, "--dim", str(dim), "--teachers", str(teachers),
                            "--sampler", protocol["sampler"], "--init", "informed,uninformed", "--steps", str(steps),
                            "--kept", "20", "--seed", str(seed), "-o", str(path), "--resume", "--overwrite",
                            "--quiet"])
    if code != 0:
        raise RuntimeError(f"replica-experiment for {name} at d = {dim} failed with exit code {code}")
    data = read_experiment(path)
    out = {"cpu_seconds_this_call": time.process_time() - t0, "wall_seconds_this_call": time.perf_counter() - w0}
    for (_, init), g in data["groups"].items():
        out[init] = {
            "error_mean": np.asarray(g["mmse_mean"], float).tolist(),
            "error_sem": np.asarray(g["mmse_sem"], float).tolist(),
            "unbiased_overlap_mean": np.asarray(g["unbiased_overlap_mean"], float).tolist(),
            "unbiased_overlap_sem": np.asarray(g["unbiased_overlap_sem"], float).tolist(),
            "nishimori_error_mean": np.asarray(g.get("nishimori_error_mean", np.full(len(alphas), np.nan)),
                                               float).tolist(),
            "neuron_overlap_layer_1_mean": np.asarray(g["neuron_overlap_layer_1_mean"], float).tolist(),
            "chain_seconds": np.asarray(g["wall_time"], float).tolist(),
        }
    return out


def study(outdir: Path, names, *, quick: bool = False, seed: int = 0) -> dict:
    """Run the protocols ``names``; returns the report dict (theory, per-d measurements, extrapolations)."""
    outdir.mkdir(parents=True, exist_ok=True)
    report = {}
    for name in names:
        protocol = dict(PROTOCOLS[name])
        if quick:
            protocol.update(QUICK)
        th = theory(outdir, name, protocol)
        runs = {d: measured(outdir, name, protocol, d, steps=protocol["steps"], teachers=protocol["teachers"],
                            seed=seed) for d in protocol["dims"]}
        fits = {}
        for init in ("informed", "uninformed"):
            for i, a in enumerate(protocol["alpha"]):
                dims = list(runs)
                fits[f"{init}/error/{a:g}"] = extrapolate(dims, [runs[d][init]["error_mean"][i] for d in dims],
                                                          [runs[d][init]["error_sem"][i] for d in dims])
                layers = len(runs[dims[0]][init]["unbiased_overlap_mean"][i])
                for ell in range(layers):
                    fits[f"{init}/overlap_layer_{ell + 1}/{a:g}"] = extrapolate(
                        dims, [runs[d][init]["unbiased_overlap_mean"][i][ell] for d in dims],
                        [runs[d][init]["unbiased_overlap_sem"][i][ell] for d in dims])
        report[name] = {"protocol": {k: (list(v) if isinstance(v, tuple) else v) for k, v in protocol.items()},
                        "theory": th, "measured": {str(d): r for d, r in runs.items()}, "extrapolation": fits}
    return report


def _fmt(x, s=None):
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:.4f}" if s is None or not np.isfinite(s) else f"{x:.4f} ± {s:.4f}"


def format_report(report: dict) -> str:
    """Markdown tables: per protocol and α, theory, measurements per d and the 1/d extrapolation."""
    lines = []
    for name, r in report.items():
        p, th, runs, fits = r["protocol"], r["theory"], r["measured"], r["extrapolation"]
        dims = list(runs)
        lines += [f"### {name} ({p['sampler']}, {p['teachers']} teachers, {p['steps']} steps)", ""]
        head = ["α", "theory: equilibrium (mmse)", "other branches", "start"] + [f"d = {d}" for d in dims] + ["d → ∞"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for i, a in enumerate(p["alpha"]):
            eq = th["equilibrium"][i]
            others = ", ".join(f"{n} {rows[i]['mmse']:.4f}" for n, rows in th["branches"].items()
                               if rows[i] is not None and n != eq)
            for init in ("informed", "uninformed"):
                cells = [_fmt(runs[d][init]["error_mean"][i], runs[d][init]["error_sem"][i]) for d in dims]
                f = fits[f"{init}/error/{a:g}"]
                lines.append("| " + " | ".join([f"{a:g}", f"{eq} ({th['equilibrium_mmse'][i]:.4f})", others, init, *cells,
                                               _fmt(f["infinity"], f["infinity_sem"])]) + " |")
        lines += ["", "Unbiased (cross-fitted) per-layer overlaps, theory at equilibrium:", ""]
        head = ["α", "layer", "theory", "start"] + [f"d = {d}" for d in dims] + ["d → ∞"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for i, a in enumerate(p["alpha"]):
            eq_row = th["branches"].get(th["equilibrium"][i], [None] * len(p["alpha"]))[i] or {}
            layers = len(runs[dims[0]]["informed"]["unbiased_overlap_mean"][i])
            for ell in range(layers):
                q_th = eq_row.get(f"overlap_layer_{ell + 1}", 0.0 if th["equilibrium"][i] == "universal" else None)
                for init in ("informed", "uninformed"):
                    cells = [_fmt(runs[d][init]["unbiased_overlap_mean"][i][ell],
                                  runs[d][init]["unbiased_overlap_sem"][i][ell]) for d in dims]
                    f = fits[f"{init}/overlap_layer_{ell + 1}/{a:g}"]
                    lines.append("| " + " | ".join([f"{a:g}", str(ell + 1), _fmt(q_th), init, *cells,
                                                   _fmt(f["infinity"], f["infinity_sem"])]) + " |")
        seconds = {d: float(np.nansum(runs[d]["informed"]["chain_seconds"]) +
                            np.nansum(runs[d]["uninformed"]["chain_seconds"])) for d in dims}
        lines += ["", "Sampling time (sum of chain wall times): " +
                  ", ".join(f"d = {d}: {s / 60:.1f} min" for d, s in seconds.items()), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True, help="directory for the run files and the report")
    p.add_argument("--only", default=",".join(PROTOCOLS), help=f"comma list of protocols ({', '.join(PROTOCOLS)})")
    p.add_argument("--quick", action="store_true", help=f"seeded smoke test: {QUICK}")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in PROTOCOLS]
    if unknown or not names:
        p.error(f"--only: unknown protocol(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(PROTOCOLS)}")
    outdir = Path(args.output)
    t0 = time.perf_counter()
    report = study(outdir, names, quick=args.quick, seed=args.seed)
    text = format_report(report)
    print(text)
    print(f"total {time.perf_counter() - t0:.0f} s of wall time")
    (outdir / "finite_size_study.json").write_text(json.dumps(report, indent=1))
    (outdir / "finite_size_study.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
