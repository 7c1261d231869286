"""Output channels (docs/theory.md §10): HMC with the probit channel against the theory, and the table of
transitions and classification errors of ``replica-sweep --channel``.

Two parts, each resumable (finished files are reused; an interrupted ``replica-experiment`` resumes from
its checkpoint, written after every chain):

* ``hmc`` — ``replica-experiment --channel probit`` (HMC, informed = teacher start, uninformed = prior
  start) for one hidden layer ReLU, γ = 0.5, v ≡ 1, Δ = 0.1, at α in the universal phase and in the
  specialized phase of the theory (α_sp = α_c ≈ 1.62 there), one file per α; the theory from
  ``replica-sweep --channel probit`` at the same α (every branch). Compared: the Bayes classification
  error, the Gibbs classification error, the mmse (half Gibbs error of the output), the cross-fitted
  overlap (mean 0 when nothing is learned; the theory's Q), and the Nishimori check
  (teacher–sample vs sample–sample sign disagreement). ``--model`` runs the same for another
  one-hidden-layer model of the table (``tanh2_ones`` etc.; files ``hmc_<model>_d<d>_alpha<α>.h5``).
* ``table`` — ``replica-sweep`` on α = 0.25:8:32 for ReLU and tanh2 (one hidden layer, v ≡ 1 and
  4point) and two hidden layers (``--layers 2 --gamma 0.5,0.5 --activation tanh2 --unit-variance``),
  probit Δ = 0.1 and sign: α_sp, α_c and the equilibrium classification error at α = 1, 2, 4, 8.

Theory of the Gibbs error (θ = 0, probit Δ; derived in docs/theory.md §10.1): with
``K* = K_d − mmse``, one posterior sample ``λ^a`` and the label's latent ``λ⁰ + √Δ ξ`` are jointly
Gaussian with correlation ``K*/√(K_d(K_d + Δ))``, so ``P(sign λ^a ≠ y) = arccos(K*/√(K_d(K_d + Δ)))/π``
and the teacher–sample (= sample–sample) sign disagreement is ``arccos(K*/K_d)/π``.

Usage (CPU, 2 cores shared; the run of docs/theory.md §10.1 took the CPU time printed in its table)::

    nice -n 5 python scripts/experiments/channel_validation.py all --out channel_runs \\
        --dim 30,40 --teachers 4 --alpha 1,4,8 --steps 3000 --markdown channel_validation.md

Outputs in ``--out``: ``hmc_d<d>_alpha<α>.h5`` (replica-experiment files), ``theory.h5`` (replica-sweep;
other models: ``hmc_<model>_…``, ``theory_<model>.h5``),
``sweep_<model>_<channel>.h5``, ``cpu_seconds.json`` (CPU time of every finished command) and the
markdown tables (``--markdown``).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["TABLE_MODELS", "run_hmc", "run_table", "hmc_table", "closing_table", "main"]

#: the models of the closing table: file key → (label, replica-sweep options)
TABLE_MODELS = {
    "relu_ones": ("ReLU, v ≡ 1", ["--activation", "relu", "--gamma", "0.5", "--readout", "ones"]),
    "relu_4point": ("ReLU, 4point", ["--activation", "relu", "--gamma", "0.5", "--readout", "4point"]),
    "tanh2_ones": ("tanh2, v ≡ 1", ["--activation", "tanh2", "--gamma", "0.5", "--readout", "ones"]),
    "tanh2_4point": ("tanh2, 4point", ["--activation", "tanh2", "--gamma", "0.5", "--readout", "4point"]),
    "two_layer": ("two layers, tanh2 unit variance, γ = (0.5, 0.5), v ≡ 1",
                  ["--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2", "--unit-variance"]),
}
TABLE_CHANNELS = {"probit": ("probit Δ = 0.1", ["--channel", "probit", "--delta", "0.1"]),
                  "sign": ("sign", ["--channel", "sign"])}
TABLE_ALPHAS = (1.0, 2.0, 4.0, 8.0)
#: HMC: one-hidden-layer models of the table (default relu_ones), probit Δ = 0.1
HMC_MODELS = ("relu_ones", "relu_4point", "tanh2_ones", "tanh2_4point")
HMC_CHANNEL = ["--channel", "probit", "--delta", "0.1"]
DELTA = 0.1


def _prefix(model: str) -> str:
    """File prefix of a model's HMC and theory files (``hmc_``/``theory`` for the default ReLU, v ≡ 1)."""
    return "" if model == "relu_ones" else f"{model}_"


def _option(options, name):
    return options[options.index(name) + 1]


def _run(command, cpu_log: Path, key: str) -> float:
    """Run a command (its output goes to ``<key>.log``); returns and records its CPU seconds (user + sys)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = cpu_log.parent / f"{key}.log"
    with open(log, "w") as handle:
        status = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if status != 0:
        raise RuntimeError(f"{' '.join(command)} failed with status {status} (see {log})")
    record = json.loads(cpu_log.read_text()) if cpu_log.exists() else {}
    record[key] = record.get(key, 0.0) + cpu  # a resumed run adds its time
    cpu_log.write_text(json.dumps(record, indent=1, sort_keys=True))
    return cpu


def _bin(name):
    return str(Path(sys.executable).with_name(name))


def run_hmc(out: Path, *, alphas, dims, teachers, steps, kept, seed, n_test=10_000, model="relu_ones"):
    """HMC files ``hmc_[<model>_]d<d>_alpha<α>.h5`` (one per d and α, skipped when complete) and the theory
    ``theory[_<model>].h5`` (the prefix is empty for ``relu_ones``)."""
    cpu_log = out / "cpu_seconds.json"
    prefix = _prefix(model)
    options = TABLE_MODELS[model][1] + HMC_CHANNEL
    theory = out / ("theory.h5" if not prefix else f"theory_{model}.h5")
    if not theory.exists():
        _run([_bin("replica-sweep"), *options, "--alpha", ",".join(f"{a:g}" for a in alphas), "-o", str(theory),
              "--quiet"], cpu_log, theory.stem)
    for dim, alpha in ((d, a) for d in dims for a in alphas):
        path = out / f"hmc_{prefix}d{dim}_alpha{alpha:g}.h5"
        if path.exists():
            continue
        command = [_bin("replica-experiment"), *options, "--alpha", f"{alpha:g}", "--dim", str(dim),
                   "--teachers", str(teachers), "--steps", str(steps), "--kept", str(kept), "--n-test", str(n_test),
                   "--init", "informed,uninformed", "--seed", str(seed), "--quiet", "-o", str(path)]
        if path.with_name(path.stem + ".checkpoint.h5").exists():
            command.append("--resume")
        begin = time.perf_counter()
        cpu = _run(command, cpu_log, path.stem)
        print(f"d={dim} alpha={alpha:g}: {cpu:.0f} s CPU, {time.perf_counter() - begin:.0f} s wall", flush=True)


def run_table(out: Path):
    """``replica-sweep`` files of the closing table (skipped when present)."""
    cpu_log = out / "cpu_seconds.json"
    for model, (_, options) in TABLE_MODELS.items():
        for channel, (_, channel_options) in TABLE_CHANNELS.items():
            path = out / f"sweep_{model}_{channel}.h5"
            if path.exists():
                continue
            _run([_bin("replica-sweep"), *options, *channel_options, "--alpha", "0.25:8:32", "-o", str(path),
                  "--quiet"], cpu_log, path.stem)


def _fmt(mean, sem=None, digits=4):
    if mean is None or not np.isfinite(mean):
        return "—"
    if sem is None or not np.isfinite(sem):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sem:.{digits}f}"


def _theory_rows(path: Path, model="relu_ones"):
    """Per α and branch: mmse, Q, classification and Gibbs errors, sign disagreement (teacher–sample)."""
    import h5py

    from priors.output_channels import ProbitChannel
    from replica.models.shallow import ShallowModel

    options = TABLE_MODELS[model][1]
    k_d = ShallowModel(_option(options, "--activation"), float(_option(options, "--gamma")),
                       readout_law=_option(options, "--readout"), output_channel=ProbitChannel(DELTA)).K_d
    rows = {}
    with h5py.File(path, "r") as f:
        alpha = f["equilibrium/alpha"][()]
        eq = [b.decode() if isinstance(b, bytes) else str(b) for b in f["equilibrium/branch"][()]]
        for name, group in f["branches"].items():
            for i, a in enumerate(alpha):
                if not group["exists"][i]:
                    continue
                mmse = float(group["mmse"][i])
                k_star = k_d - mmse
                rows.setdefault(float(a), {})[name] = {
                    "equilibrium": eq[i] == name, "unstable": bool(group["stability"][i] > 1.0), "mmse": mmse, "Q": float(np.mean(group["overlap_W"][i])),
                    "classification_error": float(group["classification_error"][i]),
                    "sign_disagreement": float(group["sign_disagreement"][i]),
                    "gibbs": math.acos(k_star / math.sqrt(k_d * (k_d + DELTA))) / math.pi,
                    "gibbs_sign": math.acos(k_star / k_d) / math.pi}
    return rows, k_d


def hmc_table(out: Path, model="relu_ones") -> str:
    """Markdown table: HMC (informed, uninformed) beside the theory's branches at every α run."""
    from replica.workflow.experiment_io import read_experiment

    prefix = _prefix(model)
    theory, k_d = _theory_rows(out / ("theory.h5" if not prefix else f"theory_{model}.h5"), model)
    cpu = json.loads((out / "cpu_seconds.json").read_text()) if (out / "cpu_seconds.json").exists() else {}
    lines = ["| α | source | Bayes class. error | Gibbs class. error | mmse | overlap Q | "
             "sign disagr. teacher–sample | sample–sample | chains | CPU s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    setup = None
    runs = []
    for path in _hmc_files(out, model):
        data = read_experiment(path)
        runs.append((float(data["parameters"]["alpha"][0]), int(data["parameters"]["dim"]), path, data))
    shown = set()
    for alpha, dim, path, data in sorted(runs, key=lambda r: r[:2]):
        p = data["parameters"]
        setup = (f"k = d/2, {p['teachers']} teachers, {p['steps']} HMC transitions "
                 f"({p['num_integration_steps']} leapfrog steps, half warm-up), {p['num_kept']} kept samples, "
                 f"{p['n_test']} test points and test labels per teacher, seed {p['seed']}")
        for name, row in sorted(theory.get(alpha, {}).items()) if alpha not in shown else ():
            tag = "equilibrium" if row["equilibrium"] else ("linearly unstable" if row["unstable"] else "metastable")
            lines.append(f"| {alpha:g} | theory {name} ({tag}) | {_fmt(row['classification_error'])} | "
                         f"{_fmt(row['gibbs'])} | {_fmt(row['mmse'])} | {_fmt(row['Q'], digits=3)} | "
                         f"{_fmt(row['gibbs_sign'])} | {_fmt(row['gibbs_sign'])} | | |")
        shown.add(alpha)
        for init in ("informed", "uninformed"):
            g = data["groups"][("hmc", init)]

            def ms(name, digits=4):
                return _fmt(float(np.ravel(g[f"{name}_mean"])[0]), float(np.ravel(g[f"{name}_sem"])[0]), digits)

            cpu_text = f"{cpu[path.stem]:.0f}" if init == "informed" and path.stem in cpu else ""
            lines.append(f"| {alpha:g} | HMC d = {dim} {init} | {ms('classification_error')} | "
                         f"{ms('gibbs_classification_error')} | {ms('mmse')} | {ms('unbiased_overlap', 3)} | "
                         f"{ms('nishimori_teacher_disagreement')} | {ms('nishimori_replica_disagreement')} | "
                         f"{int(g['chains_used'][0])} | {cpu_text} |")
    header = [f"K_d = {k_d:.5f} ({TABLE_MODELS[model][0]}, γ = 0.5, probit Δ = {DELTA}); {setup}. Errors ± one standard "
              "error over teachers; CPU s: all chains of that α (both starts), from getrusage."]
    return "\n".join(header + [""] + lines)


def closing_table(out: Path, hmc_rows=None) -> str:
    """Markdown table: α_sp, α_c and the equilibrium classification error at α = 1, 2, 4, 8."""
    import h5py

    head = ("| model | channel | α_sp | α_c | " + " | ".join(f"ε(α = {a:g})" for a in TABLE_ALPHAS)
            + " | equilibrium changes (α: to branch) | CPU s |")
    lines = [head, "|---|---|---|---|" + "---|" * len(TABLE_ALPHAS) + "---|---|"]
    cpu = json.loads((out / "cpu_seconds.json").read_text()) if (out / "cpu_seconds.json").exists() else {}
    for model, (model_label, _) in TABLE_MODELS.items():
        for channel, (channel_label, _) in TABLE_CHANNELS.items():
            path = out / f"sweep_{model}_{channel}.h5"
            if not path.exists():
                continue
            with h5py.File(path, "r") as f:
                tr = f["transitions"].attrs
                alpha = f["equilibrium/alpha"][()]
                err = f["equilibrium/classification_error"][()]
                cells = []
                for a in TABLE_ALPHAS:
                    i = int(np.argmin(np.abs(alpha - a)))
                    text = _fmt(float(err[i])) if abs(alpha[i] - a) < 1e-9 else "—"
                    extra = [v for k, v in sorted((hmc_rows or {}).items()) if k[:3] == (model, channel, a)]
                    cells.append(text + "".join(f"<br>(HMC {e})" for e in extra))
                sp, c = float(tr.get("alpha_sp", np.nan)), float(tr.get("alpha_c", np.nan))
                ch = f["equilibrium_changes"]
                changes = "; ".join(f"{float(a):.4g}: {_text(b)}" for a, b in zip(ch["alpha"][()], ch["to_branch"][()]))
                first = _text(f["equilibrium/branch"][0])
                changes = f"{first} at α = {alpha[0]:g}" + (f"; {changes}" if changes else "")
            lines.append(f"| {model_label} | {channel_label} | {_fmt(sp, digits=3)} | {_fmt(c, digits=3)} | "
                         + " | ".join(cells) + f" | {changes} | {cpu.get(path.stem, float('nan')):.1f} |")
    return "\n".join(lines)


def _hmc_files(out: Path, model="relu_ones") -> list:
    """Finished HMC files of a model (not the checkpoints of unfinished ones)."""
    return sorted(p for p in out.glob(f"hmc_{_prefix(model)}d*_alpha*.h5") if not p.name.endswith(".checkpoint.h5"))


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _hmc_cells(out: Path) -> dict:
    """HMC Bayes classification errors (informed; uninformed) keyed like the closing table's cells."""
    from replica.workflow.experiment_io import read_experiment

    cells = {}
    for model, path in ((m, p) for m in HMC_MODELS for p in _hmc_files(out, m)):
        data = read_experiment(path)
        alpha, dim = float(data["parameters"]["alpha"][0]), int(data["parameters"]["dim"])
        parts = []
        for init in ("informed", "uninformed"):
            g = data["groups"][("hmc", init)]
            parts.append(_fmt(float(g["classification_error_mean"][0]), float(g["classification_error_sem"][0])))
        cells[(model, "probit", alpha, dim)] = f"d = {dim}: {parts[0]} inf., {parts[1]} uninf."
    return cells


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("part", choices=("hmc", "table", "report", "all"))
    parser.add_argument("--out", default="channel_runs", help="directory of the files (default channel_runs)")
    parser.add_argument("--alpha", default="1,4,8", help="α of the HMC runs (default 1,4,8: universal, specialized)")
    parser.add_argument("--dim", default="30,40", help="comma list of input dimensions d (default 30,40)")
    parser.add_argument("--teachers", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--kept", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", default=None, help="write the tables to this markdown file")
    parser.add_argument("--model", choices=HMC_MODELS, default="relu_ones",
                        help="one-hidden-layer model of the HMC part (default relu_ones); the report shows every "
                             "model with files")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    alphas = [float(a) for a in args.alpha.split(",")]
    if args.part in ("table", "all"):
        run_table(out)
    if args.part in ("hmc", "all"):
        run_hmc(out, alphas=alphas, dims=[int(d) for d in args.dim.split(",")], teachers=args.teachers, steps=args.steps, kept=args.kept,
                seed=args.seed, model=args.model)
    text = []
    for model in HMC_MODELS:
        theory = out / ("theory.h5" if not _prefix(model) else f"theory_{model}.h5")
        if theory.exists() and _hmc_files(out, model):
            text += [f"## HMC (probit) against the theory: {TABLE_MODELS[model][0]}", "", hmc_table(out, model), ""]
    text += ["## Transitions and classification errors (replica-sweep, equilibrium)", "",
             closing_table(out, _hmc_cells(out)), ""]
    report = "\n".join(text)
    print(report)
    if args.markdown:
        Path(args.markdown).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
