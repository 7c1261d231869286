"""Start-up of the command line against the work it does (issue 17 targets, warm caches).

Measures, in one run, each as the median of ``--repeat`` fresh processes:

* ``python -c pass`` and ``python -c "import numpy"``: the floor no command can go below;
* ``replica-sweep --help`` (target ≤ 0.3 s);
* ``replica-sweep --branches universal --alpha 0.02:0.4:50`` end to end, progress bar and
  HDF5 file included (target ≤ 0.6 s);

and, in this process, the same sweep's solve (:func:`replica.continuation.sweep` on a model whose
HCIZ table is built), so that the ratio *end to end / solve* says how much of the command is
overhead whatever the machine's load. Warm caches: one untimed run first fills numba's,
the HCIZ tables' and Python's bytecode caches (``PYTHONDONTWRITEBYTECODE`` is unset for the
timed processes).

``--baseline DIR`` times the same two commands with the packages of another checkout
(e.g. ``/work/main`` before the change, ``git worktree add /tmp/before <commit>``) on
``PYTHONPATH``, in the same run. Wall-clock times on a loaded machine are upper bounds.

Usage::

    python scripts/benchmarks/bench_startup.py [--repeat 7] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ["--branches", "universal", "--alpha", "0.02:0.4:50"]
# the command's entry point in a checkout's layout (the editable install's finder would resolve
# a missing replica.workflow of another checkout to this one: never try one and fall back)
RUNNER = "import sys\nfrom {module} import sweep_main\nsys.exit(sweep_main(sys.argv[1:]))\n"


def _entry_module(root: Path) -> str:
    return "replica.workflow.cli" if (root / "replica" / "workflow" / "cli.py").is_file() else "replica.cli"


def _wall(cmd, env, repeat, cwd):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env, cwd=cwd)  # cwd: not a checkout
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _env(root: Path) -> dict:
    """Environment of the timed processes: ``root`` first on the path, bytecode cache on."""
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # warm caches include Python's own (__pycache__)
    return env


def _commands(root: Path, repeat: int, tmp: Path) -> dict:
    env = _env(root)
    out = str(tmp / f"sweep_{root.name}.h5")
    py = [sys.executable, "-c", RUNNER.format(module=_entry_module(root))]
    subprocess.run(py + SWEEP + ["-o", out, "--overwrite"], check=True, capture_output=True, env=env,
                   cwd=tmp)  # warm caches
    return {
        "replica-sweep --help": _wall(py + ["--help"], env, repeat, tmp),
        "replica-sweep " + " ".join(SWEEP): _wall(py + SWEEP + ["-o", out, "--overwrite"], env, repeat, tmp),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=7, help="fresh processes per measurement (median)")
    p.add_argument("--baseline", type=Path, default=None, help="another checkout to time in the same run")
    args = p.parse_args(argv)

    env = _env(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        floor = {"python -c pass": _wall([sys.executable, "-c", "pass"], env, args.repeat, tmp),
                 "python -c 'import numpy'": _wall([sys.executable, "-c", "import numpy"], env, args.repeat, tmp)}
        ours = _commands(ROOT, args.repeat, Path(tmp))
        base = _commands(args.baseline.resolve(), args.repeat, Path(tmp)) if args.baseline else None

    sys.path.insert(0, str(ROOT))
    import numpy as np

    from replica.continuation import sweep
    from replica.workflow.model_options import build_model

    model = build_model({"layers": 1, "gamma": [0.5], "activation": "relu", "drop_hermite": [],
                         "unit_variance": False, "prior": "gaussian", "readout": "ones", "readout_grid": None,
                         "delta": 0.1})
    alphas = np.linspace(0.02, 0.4, 50)
    sweep(model, alphas, branches="universal", progress=False)  # table built, kernels loaded
    solves = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        sweep(model, alphas, branches="universal", progress=False)
        solves.append(time.perf_counter() - t0)
    solve = statistics.median(solves)

    print(f"median of {args.repeat} fresh processes; warm caches; load average {os.getloadavg()[0]:.1f}")
    for name, t in floor.items():
        print(f"  {name:58s} {t:7.3f} s")
    print(f"  {'in-process solve of the 50-point universal sweep':58s} {solve:7.3f} s")
    targets = {"replica-sweep --help": 0.3, "replica-sweep " + " ".join(SWEEP): 0.6}
    for name, t in ours.items():
        line = f"  {name:58s} {t:7.3f} s  (target {targets[name]:.1f} s; {t / solve:5.1f}× the solve"
        if base is not None:
            line += f"; baseline {base[name]:.3f} s, {base[name] / t:4.1f}× slower"
        print(line + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
