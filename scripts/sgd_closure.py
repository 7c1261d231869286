"""Gaussian closure vs online SGD: test-error figure and specialization-time table.

For each activation, run ``replica-sgd``'s SGD (:func:`replica.simulations.sgd.run_sgd`) at
dimension ``d`` for several seeds (files ``DIR/ACT_dD_sS.h5``, reused when present), add the
closure prediction (:func:`replica.simulations.closure.closure_for_run`, group ``closure/``,
recomputed on every call so that a stored group is never stale), and
draw simulated (thin lines, seed band) and predicted (dashed) test error against
``t = n/(kd)`` up to the end of the runs, with the onset of specialization marked (first
record where the seed-averaged specialized fraction is positive: a student neuron has
``|cos| >`` the run's threshold with a teacher neuron).  Printed: for each
activation, before the onset: the share of records at which the closure lies inside the
range of the seeds (with the share an exact prediction of the seed median would reach,
``1 − 2^(1−n)`` for ``n`` seeds) and within one seed standard deviation of the mean, and the
median and largest deviation from the seed mean, relative and in seed standard deviations.

Then the table of specialization times ``t_spec(k)`` (fraction 0.5 of student neurons with
``|cos| > 0.8``): predicted by the escape model (:func:`replica.simulations.closure.escape_time`,
with and without the noise shielding of the learned linear and quadratic parts) and
measured by ``scripts/sgd_scaling.py`` (its runs made here and kept in
``DIR/sgd_scaling_lr…_gamma…_delta….json``, or read from ``--scaling FILE.json``;
``--no-measure`` skips them).

Example (figure at d = 128 with 8 seeds and the table for k = 8…64 with 2 seeds each)::

    python scripts/sgd_closure.py --dim 128 --seeds 8 --time 200 --dir sgd_closure_runs \\
        --figure sgd_closure.png --widths 8,16,32,64
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sgd_scaling import _list  # noqa: E402  (comma-list option type shared with sgd_scaling.py)

logger = logging.getLogger("sgd_closure")


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--activation", type=_list(str), default=["relu", "elu", "tanh"])
    p.add_argument("--dim", type=int, default=128, help="input dimension d (default 128)")
    p.add_argument("--gamma", type=float, default=0.5, help="k/d (default 0.5)")
    p.add_argument("--seeds", type=int, default=8, help="seeds per activation (default 8)")
    p.add_argument("--time", type=float, default=200.0, help="final t = n/(kd) (default 200)")
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--delta", type=float, default=0.1)
    p.add_argument("--dir", default="sgd_closure_runs", help="folder of the HDF5 runs")
    p.add_argument("--figure", default="sgd_closure.png", help="PNG of the test errors")
    p.add_argument("--widths", type=_list(int), default=[8, 16, 32, 64],
                   help="widths k of the specialization-time table (default 8,16,32,64)")
    p.add_argument("--scaling", default=None,
                   help="JSON of scripts/sgd_scaling.py with the measured t_spec (default: "
                        "measure them here, in DIR/sgd_scaling_lr*_gamma*_delta*.json, runs reused)")
    p.add_argument("--scaling-seeds", type=int, default=2,
                   help="seeds per width when the t_spec are measured here (default 2)")
    p.add_argument("--no-measure", action="store_true",
                   help="without --scaling: print only the predicted t_spec")
    p.add_argument("--students", type=int, default=300, help="Monte Carlo students (default 300)")
    p.add_argument("--no-table", action="store_true", help="skip the specialization-time table")
    p.add_argument("--control", type=_list(int), default=None, metavar="K,...",
                   help="shielding control: for these widths, run SGD with the quadratic Hermite "
                        "component removed from teacher and student (--drop-hermite 2) until "
                        "specialization, 2 seeds each, and compare with the normal runs of the "
                        "scaling file and with the predictions (slow: minutes per width)")
    p.add_argument("--control-activation", default="relu")
    p.add_argument("--max-time", type=float, default=5000.0, help="cap of the control runs' t")
    return p


def _validate(parser, args):
    """Reject bad options before any run starts (argparse error, exit status 2)."""
    from replica.simulations.sgd import activation_functions

    checks = [(args.seeds >= 2, f"--seeds must be >= 2 (the seed spread), got {args.seeds}"),
              (args.dim >= 2, f"--dim must be >= 2, got {args.dim}"),
              (math.isfinite(args.gamma) and args.gamma > 0, f"--gamma must be > 0, got {args.gamma}"),
              (math.isfinite(args.time) and args.time > 0, f"--time must be > 0, got {args.time}"),
              (math.isfinite(args.lr) and args.lr > 0, f"--lr must be > 0, got {args.lr}"),
              (math.isfinite(args.delta) and args.delta >= 0, f"--delta must be >= 0, got {args.delta}"),
              (args.scaling_seeds >= 1, f"--scaling-seeds must be >= 1, got {args.scaling_seeds}"),
              (args.students >= 1, f"--students must be >= 1, got {args.students}"),
              (min(args.widths) >= 1, f"--widths must be >= 1, got {args.widths}"),
              (args.control is None or min(args.control) >= 1, f"--control widths must be >= 1, got {args.control}"),
              (math.isfinite(args.max_time) and args.max_time > 0, f"--max-time must be > 0, got {args.max_time}")]
    for ok, message in checks:
        if not ok:
            parser.error(message)
    for act in list(args.activation) + [args.control_activation]:
        try:
            activation_functions(act)
        except ValueError as exc:
            parser.error(f"activation {act!r}: {exc}")


def run_or_load(act, seed, args):
    from replica.simulations.closure import closure_for_run
    from replica.workflow.sgd_results import write_closure
    from replica.simulations.sgd import SGDConfig, run_sgd
    from replica.workflow.sgd_results import read_sgd, write_sgd

    path = Path(args.dir) / f"{act}_d{args.dim}_s{seed}.h5"
    if not path.exists():
        cfg = SGDConfig(activation=act, dim=args.dim, gamma=args.gamma, delta=args.delta,
                        lr=args.lr, time=args.time, seed=seed)
        result = run_sgd(cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_sgd(result, path)
        logger.info("%s seed %d: %.0f s", act, seed, result.wall_time)
    data = read_sgd(path)
    # always recomputed (a group stored by an older version of the closure would be stale);
    # the prediction does not depend on the seed: one integration per activation and grid
    key = (act, tuple(np.round(data["time"], 12)))
    if key not in _CLOSURES:
        _CLOSURES[key] = closure_for_run(data["parameters"], times=data["time"])
    write_closure(path, _CLOSURES[key])
    return read_sgd(path)


_CLOSURES = {}


def _within_sd_probability(n):
    if n < 2:
        return float("nan")
    from scipy.stats import t as student

    return float(2.0 * student.cdf(math.sqrt(n), n - 1) - 1.0)


def compare(runs):
    """Seed statistics and the closure's deviation before the specialization onset."""
    t = np.asarray(runs[0]["time"], dtype=float)
    err = np.array([r["test_error"] for r in runs])
    frac = np.mean([r["specialized_fraction"] for r in runs], axis=0)
    pred = np.asarray(runs[0]["closure"]["test_error"], dtype=float)
    onset_idx = np.nonzero(frac > 0)[0]         # first specialized neuron (seed average)
    onset = float(t[onset_idx[0]]) if onset_idx.size else float("inf")
    mean, sd = err.mean(0), err.std(0, ddof=1) if len(runs) > 1 else np.zeros_like(t)
    lo, hi = err.min(0), err.max(0)
    sel = (t > 0) & (t < onset)
    inside = np.mean((pred[sel] >= lo[sel]) & (pred[sel] <= hi[sel])) if np.any(sel) else float("nan")
    # |pred − mean| within one seed standard deviation (the seed-to-seed spread)
    within_sd = np.mean(np.abs(pred[sel] - mean[sel]) <= sd[sel]) if np.any(sel) else float("nan")
    rel = np.abs(pred[sel] - mean[sel]) / mean[sel]
    z = np.abs(pred[sel] - mean[sel]) / np.maximum(sd[sel], 1e-12)
    # bulk width: rms of the k² cosines from the stored histograms (bin centres) vs closure
    edges = np.asarray(runs[0]["overlap_bin_edges"], dtype=float)
    centres = 0.5 * (edges[1:] + edges[:-1])
    hist = np.mean([r["overlap_histograms"] for r in runs], axis=0)
    rms = np.sqrt(hist @ centres ** 2 / hist.sum(axis=1))
    width_rel = np.abs(np.asarray(runs[0]["closure"]["bulk_width"])[sel] / rms[sel] - 1)
    n = len(runs)
    return {"onset": onset, "inside_fraction": float(inside), "max_rel_dev": float(rel.max()),
            # an exact prediction of the seed median lies inside the range of n independent
            # seeds with probability 1 − 2^(1−n) (75 % for 3 seeds, 99 % for 8)
            "inside_expected": 1.0 - 2.0 ** (1 - n), "within_sd_fraction": float(within_sd),
            # and within one sample standard deviation of the mean of n seeds with probability
            # P(|t_{n−1}| ≤ √n) (Student t; 77 % for 3 seeds, 97 % for 8)
            "within_sd_expected": _within_sd_probability(n),
            "width_max_rel_dev": float(width_rel.max()), "width_final": (float(rms[sel][-1]),
            float(runs[0]["closure"]["bulk_width"][sel][-1])),
            "t_max_rel_dev": float(t[sel][np.argmax(rel)]), "max_z": float(z.max()),
            "median_rel_dev": float(np.median(rel)), "t": t, "err": err, "pred": pred,
            "mean": mean, "lo": lo, "hi": hi}


def figure(stats, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from replica.workflow.style import figure_style

    with figure_style():  # the package style
        fig, axes = plt.subplots(1, len(stats), figsize=(4.3 * len(stats), 3.8), squeeze=False)
        for a, (act, s) in zip(axes[0], stats.items()):
            t = s["t"]
            pos = t > 0
            a.fill_between(t[pos], s["lo"][pos], s["hi"][pos], color="tab:blue", alpha=0.25,
                           label=f"SGD, {len(s['err'])} seeds (range)")
            for e in s["err"]:
                a.loglog(t[pos], e[pos], color="tab:blue", lw=0.6)
            a.loglog(t[pos], s["pred"][pos], "k--", lw=1.2, label="Gaussian closure")
            if math.isfinite(s["onset"]):
                a.axvline(s["onset"], color="gray", ls=":", lw=1)
                a.text(s["onset"], a.get_ylim()[0] * 1.1, " specialization onset", fontsize=7,
                       color="gray", rotation=90, va="bottom")
            a.set_title(f"{act}: d = {args.dim}, k = {round(args.gamma * args.dim)}, η = {args.lr}, "
                        f"Δ = {args.delta}", fontsize=9)
            a.set_xlabel(r"$t = n/(kd)$")
            a.legend(fontsize=7, loc="lower left")
        axes[0][0].set_ylabel(r"test error $E_x(\lambda(x;W_t)-\lambda(x;W^0))^2$")
        fig.tight_layout()
        fig.savefig(args.figure, dpi=150)
    plt.close(fig)


def table(args):
    from replica.simulations.closure import specialization_time_prediction

    measured = {}
    if args.scaling:
        payload = json.loads(Path(args.scaling).read_text())
        for r in payload.get("runs", []):
            measured.setdefault((r["activation"], r["k"]), []).append(
                r["t_spec"] if not r["censored"] else float("nan"))
        settings = payload.get("settings", {})
        if settings and (settings.get("lr") != args.lr or settings.get("gamma") != args.gamma):
            logger.warning("scaling file has lr=%s gamma=%s, the table uses lr=%s gamma=%s",
                           settings.get("lr"), settings.get("gamma"), args.lr, args.gamma)
    rows = []
    for act in args.activation:
        shielded = specialization_time_prediction(act, args.widths, gamma=args.gamma, delta=args.delta,
                                                  lr=args.lr, students=args.students)
        bare = specialization_time_prediction(act, args.widths, gamma=args.gamma, delta=args.delta,
                                              lr=args.lr, students=args.students, shielding=False)
        for s, b in zip(shielded, bare):
            m = np.asarray(measured.get((act, s["k"]), []), dtype=float)
            fin = m[np.isfinite(m)]
            rows.append({"activation": act, "k": s["k"], "d": s["d"], "predicted": s["t_spec"],
                         "predicted_unshielded": b["t_spec"],
                         "predicted_negative_fraction": s["negative_fraction"],
                         "measured_geomean": float(np.exp(np.mean(np.log(fin)))) if fin.size else None,
                         "measured_runs": f"{fin.size}/{m.size}"})
    return rows


def measure_specialization_times(args):
    """Run ``scripts/sgd_scaling.py`` for the table's activations and widths (resumable)."""
    from sgd_scaling import main as scaling_main

    # one file per setting, so that a rerun with other parameters never mixes in old runs
    path = Path(args.dir) / f"sgd_scaling_lr{args.lr:g}_gamma{args.gamma:g}_delta{args.delta:g}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    argv = ["--activation", ",".join(args.activation), "--widths", ",".join(map(str, args.widths)),
            "--seeds", str(args.scaling_seeds), "--gamma", str(args.gamma), "--lr", str(args.lr),
            "--delta", str(args.delta), "-o", str(path), "--resume"]
    if scaling_main(argv) != 0:
        raise SystemExit(f"sgd_closure: error: the specialization-time runs failed ({path})")
    return path


def control_runs(args):
    """t_spec of SGD without the quadratic part (drop_hermite=(2,)), measured and predicted."""
    from replica.simulations.closure import specialization_time_prediction
    from replica.simulations.sgd import SGDConfig
    from replica.workflow.sgd_results import run_to_specialization

    act = args.control_activation
    rows = []
    for k in args.control:
        d = max(1, int(round(k / args.gamma)))
        times = []
        for seed in range(2):
            cfg = SGDConfig(activation=act, dim=d, gamma=k / d, delta=args.delta, lr=args.lr,
                            batch=2, time=args.max_time, seed=seed, n_test=1000, threshold=0.8,
                            drop_hermite=(2,))
            times.append(run_to_specialization(cfg, level=0.5)[1])
        pred = specialization_time_prediction(act, [k], gamma=args.gamma, delta=args.delta, lr=args.lr,
                                              students=args.students, drop_hermite=(2,))[0]
        rows.append({"k": k, "d": d, "measured": times, "predicted": pred["t_spec"]})
    return rows


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    _validate(parser, args)
    if args.scaling and not Path(args.scaling).is_file():
        print(f"sgd_closure: error: no such file: {args.scaling} (run scripts/sgd_scaling.py first, "
              "or leave out --scaling)", file=sys.stderr)
        return 2
    stats = {}
    for act in args.activation:
        runs = [run_or_load(act, seed, args) for seed in range(args.seeds)]
        s = compare(runs)
        stats[act] = s
        print(f"{act}: specialization onset t = {s['onset']:.3g}; before it the closure lies inside "
              f"the seed range at {100 * s['inside_fraction']:.0f}% of the records ({len(runs)} seeds: "
              f"{100 * s['inside_expected']:.0f}% expected for an exact prediction), within one seed "
              f"standard deviation of the mean at {100 * s['within_sd_fraction']:.0f}% "
              f"({100 * s['within_sd_expected']:.0f}% expected), median relative "
              f"deviation from the seed mean {100 * s['median_rel_dev']:.1f}%, largest "
              f"{100 * s['max_rel_dev']:.1f}% at t = {s['t_max_rel_dev']:.3g} "
              f"({s['max_z']:.1f} seed standard deviations); bulk width (rms of the k² cosines, "
              f"histograms) within {100 * s['width_max_rel_dev']:.1f}% of the closure "
              f"(last record before onset: {s['width_final'][0]:.4f} vs {s['width_final'][1]:.4f})")
    figure(stats, args)
    print(f"wrote {args.figure}")
    if not args.no_table and not args.scaling and not args.no_measure:
        args.scaling = str(measure_specialization_times(args))
    if not args.no_table:
        rows = table(args)
        print("\nspecialization time t_spec (fraction 0.5 with |cos| > 0.8), t = n/(kd):")
        print(f"{'activation':>10} {'k':>4} {'d':>4} {'predicted':>10} {'no shielding':>13} "
              f"{'measured':>10} {'runs':>5} {'pred. anti-aligned':>19}")
        for r in rows:
            meas = "—" if r["measured_geomean"] is None else f"{r['measured_geomean']:.4g}"
            print(f"{r['activation']:>10} {r['k']:>4} {r['d']:>4} {r['predicted']:>10.4g} "
                  f"{r['predicted_unshielded']:>13.4g} {meas:>10} {r['measured_runs']:>5} "
                  f"{r['predicted_negative_fraction']:>19.2f}")
    if args.control:
        print(f"\nshielding control ({args.control_activation} without its quadratic part, "
              "--drop-hermite 2): t_spec")
        for r in control_runs(args):
            meas = ", ".join("censored" if not math.isfinite(x) else f"{x:.4g}" for x in r["measured"])
            print(f"  k = {r['k']:>3}, d = {r['d']:>4}: measured {meas}; predicted {r['predicted']:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
