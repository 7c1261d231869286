"""Scaling of the SGD specialization time with the width k (d = k/γ), fitted exponent vs r.

For each activation and width ``k`` (``d = round(k/γ)``) and several seeds, run online SGD
(:func:`replica.simulations.sgd.run_sgd`, time ``t = n/(kd)``) until the fraction of specialized
student neurons (``|cos| > threshold`` with the best-matched teacher neuron) has reached
``level`` (plus a margin) or ``t = max_time``; the specialization time ``t_spec`` is the
crossing of ``level`` (:func:`replica.workflow.sgd_results.specialization_time`).  Then fit

    log t_spec = c + b log k            (raw exponent b)
    log t_spec + (r−2) log log k = c + b' log k     (exponent with the predicted log factor)

and compare b' with the prediction ``t_spec ∝ k^r/(log k)^(r−2)``, ``r`` the lowest Hermite
degree above two of the activation (ReLU: 4; ELU, tanh: 3).  Exponents in other time
variables follow from ``n = k d t = k² t/γ`` (add 2) and ``n/d = k t`` (add 1).  Runs that
never reach the level are reported as censored (``t_spec > t_max``) and left out of the fit.

Results are appended to a JSON file run by run (``--resume`` skips runs already there), so a
time-limited invocation keeps what it finished.  Example (about 10 minutes on 2 cores)::

    python scripts/sgd_scaling.py --activation relu,elu,tanh --widths 8,12,16,24 --seeds 3 \\
        -o sgd_scaling.json
    python scripts/sgd_scaling.py --fit-only -o sgd_scaling.json --figure sgd_scaling.png
    python scripts/sgd_scaling.py --fit-only --fit-min-width 16 -o sgd_scaling.json

``--lr-scaling noise-limited`` lowers the learning rate with k as ``η ∝ (log k/d)^((r−2)/2)``
(the regime where the SGD noise on the largest initial overlap ``√(log k/d)`` stays below
the drift ``∝ overlap^(r−1)``); the heuristic count ``t ∝ overlap^(2−r)/η`` then gives
``n = k d t ∝ k^r/(log k)^(r−2)``, the predicted law, whereas at constant ``η`` it gives
``n ∝ k^((r+2)/2)/(log k)^((r−2)/2)``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

logger = logging.getLogger("sgd_scaling")


def _list(kind):
    def conv(text):
        try:
            values = [kind(t) for t in text.split(",") if t.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma list, got {text!r}") from None
        if not values:
            raise argparse.ArgumentTypeError("empty list")
        return values
    return conv


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--activation", type=_list(str), default=["relu", "elu", "tanh"],
                   help="comma list of activations (default relu,elu,tanh)")
    p.add_argument("--widths", type=_list(int), default=[8, 12, 16, 24],
                   help="comma list of widths k (default 8,12,16,24)")
    p.add_argument("--gamma", type=float, default=0.5, help="k/d (default 0.5)")
    p.add_argument("--seeds", type=int, default=3, help="seeds per width (default 3)")
    p.add_argument("--lr", type=float, default=0.5, help="learning rate per sample (default 0.5)")
    p.add_argument("--lr-scaling", choices=("constant", "noise-limited"), default="constant",
                   help="constant: η = --lr at every k; noise-limited: η_k = lr · ((log k/d)/(log k₀/d₀))"
                        "^((r−2)/2) relative to the smallest width k₀ (the scaling under which the "
                        "SGD noise on an overlap of size √(log k/d) stays below its drift; default constant)")
    p.add_argument("--batch", type=int, default=2, help="samples per step (default 2)")
    p.add_argument("--delta", type=float, default=0.1, help="label noise Δ (default 0.1)")
    p.add_argument("--threshold", type=float, default=0.8,
                   help="specialization threshold on |cos| (default 0.8)")
    p.add_argument("--level", type=float, default=0.5,
                   help="specialized fraction defining t_spec (default 0.5)")
    p.add_argument("--max-time", type=float, default=20000.0,
                   help="largest t = n/(kd) per run (default 20000)")
    p.add_argument("--budget", type=float, default=None,
                   help="wall-clock seconds for all runs; remaining runs are skipped (default none)")
    p.add_argument("-o", "--output", default="sgd_scaling.json", help="JSON results (default sgd_scaling.json)")
    p.add_argument("--resume", action="store_true", help="skip runs already in the output")
    p.add_argument("--fit-only", action="store_true", help="only fit the runs in the output")
    p.add_argument("--figure", default=None, help="PNG of t_spec against k with the fits")
    p.add_argument("--fit-min-width", type=int, default=0,
                   help="fit only widths k >= this (robustness against the small-k crossover; "
                        "default: all)")
    return p


def _write_json(path, payload):
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or Path("."))
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f, indent=1)
    os.replace(tmp, path)


def run_one(activation, k, seed, args):
    from replica.simulations.sgd import SGDConfig
    from replica.workflow.sgd_results import predicted_exponent, run_to_specialization

    d = max(1, int(round(k / args.gamma)))
    gamma = k / d
    lr = args.lr
    if args.lr_scaling == "noise-limited":
        r = predicted_exponent(activation) or 3
        k0 = min(args.widths)
        d0 = max(1, int(round(k0 / args.gamma)))
        lr = args.lr * ((math.log(k) / d) / (math.log(k0) / d0)) ** ((r - 2) / 2)
    cfg = SGDConfig(activation=activation, dim=d, gamma=gamma, delta=args.delta, lr=lr,
                    batch=args.batch, time=args.max_time, record="log:20", seed=seed,
                    n_test=1000, threshold=args.threshold)
    assert cfg.width == k
    result, t_spec = run_to_specialization(cfg, level=args.level)
    positive = result.match_sign_positive_fraction[-1]
    return {"activation": activation, "k": k, "d": d, "seed": seed, "lr": lr, "t_spec": t_spec,
            "n_spec": t_spec * k * d, "samples_end": int(result.samples[-1]),
            "censored": not math.isfinite(t_spec), "t_end": float(result.time[-1]),
            "final_fraction": float(result.specialized_fraction[-1]),
            "final_positive_fraction": None if not math.isfinite(positive) else float(positive),
            "final_test_error": float(result.test_error[-1]), "wall_time": result.wall_time}


def fit(runs, activations):
    from replica.workflow.sgd_results import fit_power_law, predicted_exponent

    out = {}
    for act in activations:
        sel = [r for r in runs if r["activation"] == act]
        if not sel:
            continue
        r = predicted_exponent(act)
        k = np.array([s["k"] for s in sel], float)
        t = np.array([s["t_spec"] if not s["censored"] else np.nan for s in sel], float)
        entry = {"r": r, "n_runs": len(sel), "n_censored": int(np.sum(~np.isfinite(t))),
                 "per_width": {}}
        for kk in sorted(set(k.tolist())):
            tt = t[k == kk]
            fin = tt[np.isfinite(tt)]
            entry["per_width"][str(int(kk))] = {
                "t_spec_geomean": float(np.exp(np.mean(np.log(fin)))) if fin.size else None,
                "log_sd": float(np.std(np.log(fin), ddof=1)) if fin.size > 1 else None,
                "finite": int(fin.size), "runs": int(tt.size)}
        try:
            entry["raw"] = fit_power_law(k, t, log_power=0.0)
            if r is not None:
                entry["log_corrected"] = fit_power_law(k, t, log_power=r - 2)
        except ValueError as exc:
            entry["error"] = str(exc)
        out[act] = entry
    return out


def report(fits):
    lines = []
    for act, e in fits.items():
        r = e["r"]
        lines.append(f"{act}: r = {r}; runs {e['n_runs']} ({e['n_censored']} censored)")
        for kk, w in e["per_width"].items():
            g = w["t_spec_geomean"]
            sd = w["log_sd"]
            lines.append(f"   k = {kk:>3}: t_spec ≈ {g if g is None else f'{g:.4g}'}"
                         f"{'' if sd is None else f' (sd of log {sd:.2f})'}  [{w['finite']}/{w['runs']} finite]")
        if "raw" in e:
            b, s = e["raw"]["exponent"], e["raw"]["stderr"]
            lines.append(f"   fit t_spec ∝ k^b:               b = {b:.2f} ± {s:.2f}  "
                         f"(in n: {b + 2:.2f}, in n/d: {b + 1:.2f})")
        if "log_corrected" in e:
            b, s = e["log_corrected"]["exponent"], e["log_corrected"]["stderr"]
            z = (b + 2 - r) / s if s > 0 else float("nan")
            lines.append(f"   fit t_spec ∝ k^b'/(log k)^{r - 2}:   b' = {b:.2f} ± {s:.2f}  "
                         f"(in n: {b + 2:.2f} ± {s:.2f}; prediction n ∝ k^{r}/(log k)^{r - 2}: {z:+.1f} σ)")
        if "error" in e:
            lines.append(f"   no fit: {e['error']}")
    return "\n".join(lines)


def figure(runs, fits, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from replica.workflow.style import figure_style

    with figure_style():  # the package style
        fig, ax = plt.subplots(figsize=(5.5, 4.2))
        for i, (act, e) in enumerate(fits.items()):
            color = f"C{i}"
            sel = [r for r in runs if r["activation"] == act and not r["censored"]]
            ax.loglog([r["k"] for r in sel], [r["t_spec"] for r in sel], "o", color=color, ms=4, alpha=0.6)
            cen = [r for r in runs if r["activation"] == act and r["censored"]]
            if cen:
                ax.loglog([r["k"] for r in cen], [r["t_end"] for r in cen], "^", color=color, ms=5, mfc="none")
            if "raw" in e:
                kk = np.linspace(min(r["k"] for r in sel), max(r["k"] for r in sel), 50)
                f = e["raw"]
                ax.loglog(kk, np.exp(f["intercept"]) * kk ** f["exponent"], "-", color=color,
                          label=f"{act}: b = {f['exponent']:.2f} ± {f['stderr']:.2f} (r = {e['r']})")
        ax.set_xlabel("width k (d = k/γ)")
        ax.set_ylabel(r"$t_{spec}$ ($t = n/(kd)$)")
        ax.set_title("SGD specialization time (▵: censored at t_max)", fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=150)
    plt.close(fig)


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = build_parser().parse_args(argv)
    path = Path(args.output)
    payload = {"runs": [], "settings": {}}
    if path.exists() and (args.resume or args.fit_only):
        payload = json.loads(path.read_text())
    elif path.exists():
        print(f"sgd_scaling: error: {path} exists (use --resume or --fit-only)", file=sys.stderr)
        return 2
    if not args.fit_only:
        payload["settings"] = {k: v for k, v in vars(args).items() if k not in ("resume", "fit_only")}
        done = {(r["activation"], r["k"], r["seed"]) for r in payload["runs"]}
        start = time.perf_counter()
        for k in args.widths:                       # widths outermost: a budget cuts the largest k
            for act in args.activation:
                for seed in range(args.seeds):
                    if (act, k, seed) in done:
                        continue
                    if args.budget is not None and time.perf_counter() - start > args.budget:
                        logger.warning("budget spent: skipping %s k=%d seed=%d", act, k, seed)
                        continue
                    res = run_one(act, k, seed, args)
                    payload["runs"].append(res)
                    _write_json(path, payload)
                    logger.info("%s k=%d d=%d seed=%d: t_spec=%.4g (t_end %.4g, fraction %.2f, "
                                "positive %s) %.1fs", act, k, res["d"], seed, res["t_spec"],
                                res["t_end"], res["final_fraction"], res["final_positive_fraction"],
                                res["wall_time"])
    activations = list(dict.fromkeys(r["activation"] for r in payload["runs"]))
    runs = [r for r in payload["runs"] if r["k"] >= args.fit_min_width]
    fits = fit(runs, activations)
    payload["fits" if args.fit_min_width <= 0 else f"fits_k_ge_{args.fit_min_width}"] = fits
    _write_json(path, payload)
    print(report(fits))
    if args.figure:
        figure(runs, fits, args.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
