"""The README's quick-start sweep against a plain loop of the same equations, CPU time and accuracy.

Workload: the README's quick start (docs/theory.md §6.1), two hidden layers, ``σ = tanh(2x)`` with
its Hermite components of degree ≤ 2 removed and unit variance, γ = (1, 1), Gaussian weights,
``v ≡ 1``, Δ = 0.1, 29 values of α in [1, 8]::

    replica-sweep --layers 2 --gamma 1,1 --activation tanh2 --drop-hermite 0,1,2 --unit-variance \\
        --delta 0.1 --alpha 1:8:29 -o deep.h5

The *plain method* (:func:`plain_sweep`) is the loop of the authors of [BCNPS-2]
(``deep-tanh/deep_tanh.py`` of ``github.com/Minh-Toan/statphys-deep-NN``), written here again, not
imported from the package: ``g`` tabulated on the 21 equispaced nodes of [0, 1] and fitted by AAA
(:class:`scipy.interpolate.AAA`, as theirs; scipy ≥ 1.15 has it, the fallback on older versions is a
degree-12 least-squares polynomial in q, said in the output), the nested kernel
``K(q) = g(q₂ g(q₁))``, its gradient by finite differences (central with step 1e-6; one-sided with
step 1e-12 within 1e-6 of 0 or 1), and the *undamped* iteration
``r = α ∇K/(Δ + 1 − K)``, ``q = r/(1 + r)`` from ``q = 1`` at every α, stopped when
``max |Δq| < 1e-12`` or after 500 iterations. The equilibrium is that fixed point where its potential
``−α ln(Δ + 1 − K) + Σ [q + ln(1 − q)]`` exceeds that of ``q = 0`` (``−α ln(Δ + 1)``), else ``q = 0``
(mmse 1). The 21 values of ``g`` are computed here too (the authors load them from ``g_21.csv``):
``g(q) = (E[σ(u)σ(w)] − μ₁² q)/(ν − μ₁²)`` for the base ``tanh 2x`` (odd: μ₀ = μ₂ = 0), the
expectation by the trapezoid rule of step 0.1 on [−12, 12]² with ``w = qu + √(1 − q²) ξ`` (geometric
convergence: ``tanh 2x`` is analytic in the strip |Im x| < π/4; 2e-13 from the package's ``g``, where
241 Gauss–Hermite nodes still miss by 1e-8), ``μ₁`` and ``ν`` by the same 1-D rule. The plain method
needs numpy and scipy only.

How it is measured: by default the script runs, ``--repeat`` times alternately, the README command
(``replica-sweep …`` exactly as written there, progress bar included, each time in a fresh temporary
directory), the same command with the packages of every ``--baseline`` checkout first on ``PYTHONPATH``
(e.g. a copy of the tree before a change), and this script with ``--plain-only`` (the plain loop alone,
its imports and start-up included), each as a subprocess whose CPU time (user + system) is read from
``os.wait4``; the minimum over the repeats is reported, with the ratio to the plain loop and the largest
difference between the equilibrium mmse of the package (its HDF5 file, ``equilibrium/mmse``) and that of
the plain loop (and of the baselines). A first, untimed run of each command fills the caches (numba's,
Python's bytecode, the tables of :mod:`hciz.cache`); its time is printed as ``first run``. The plain
loop's mmse differs from the package's by ~1e-7 on the specialized branch: the error of the AAA fit on
21 equispaced nodes (3e-8 near q = 0.99, where the nodes 0.95 and 1 are far apart for ``g``).

Profile of the package's sweep (cProfile of ``replica.workflow.cli:sweep_main``, the console entry
point, and CPU timers around its phases; shared 2-core machine). Before (2.45–2.5 s of CPU): building
the activation (``get_activation``: two piecewise-Chebyshev dual-kernel interpolants by 276 direct
quadratures each, and the import of ``scipy.special``) 0.65 s; ``Activation.g``/``g_prime`` 0.84 s
(16 680 calls from :meth:`DeepModel.kernel`, ~40 µs each of NumPy overhead on one or two numbers, and
numba's import with the compiled Chebyshev evaluator at the first call, 0.3 s); the rest of
``replica.continuation.sweep`` 0.65 s (the engine, the priors' channels, ``scipy.optimize``'s import);
Python and NumPy 0.15 s, the package's imports, the HDF5 file and the command 0.15 s. After (1.35–1.4 s):
:class:`replica.models.deep.KernelTable` evaluates ``g`` and ``g'`` on Python floats (~1.5 µs per pair,
read from the table cache in 3 ms; built in 0.35 s on a first run, numba included) and the map works on
Python floats for one readout value, with one call of the weight prior's channel: ``branches.sweep``
0.35 s (0.2 s warm: the §6.1 map 40 % — 18 % in the table's Horner loops —, the prior's channel 20 %,
the engine, MINPACK and the continuation the rest); the activation's 0.65 s is now half the run
(replica/activations.py builds its interpolants eagerly), then ``scipy.optimize`` (the Newton polish of :mod:`replica.engine` and the continuation's corrector in
:mod:`replica.continuation`; 0.12 s after ``scipy.special``, 0.35 s with it). numba, dask and tqdm are not
imported with ``--quiet`` (tqdm is, for the progress bar, without it).

Usage::

    python scripts/benchmarks/bench_quickstart.py [--repeat 3] [--baseline DIR ...]
    python scripts/benchmarks/bench_quickstart.py --plain-only [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

README_COMMAND = ["--layers", "2", "--gamma", "1,1", "--activation", "tanh2", "--drop-hermite", "0,1,2",
                  "--unit-variance", "--delta", "0.1", "--alpha", "1:8:29"]
ALPHAS = np.linspace(1.0, 8.0, 29)
DELTA = 0.1
LAYERS = 2
FIT_NODES = 21  # the authors' g_21.csv: g on np.linspace(0, 1, 21)
MAX_ITERATIONS = 500
TOLERANCE = 1e-12  # on max |q_new − q_old|
STEP = 1e-6  # central differences
EDGE_STEP = 1e-12  # one-sided differences within STEP of 0 or 1
TRAPEZOID_STEP = 0.1
TRAPEZOID_END = 12.0


# ------------------------------------------------------------------------------------ plain method
def g_values(q):
    """``g(q)`` of ``tanh 2x`` without its Hermite degrees ≤ 2, unit variance (trapezoid rule, docstring)."""
    x = np.arange(-TRAPEZOID_END, TRAPEZOID_END + TRAPEZOID_STEP / 2, TRAPEZOID_STEP)
    w = np.exp(-0.5 * x * x)
    w = w / w.sum()
    s = np.tanh(2.0 * x)
    mu1 = float(w @ (x * s))
    nu = float(w @ (s * s))
    out = []
    for qi in np.atleast_1d(q):
        inner = np.tanh(2.0 * (qi * x[:, None] + math.sqrt(max(0.0, 1.0 - qi * qi)) * x[None, :])) @ w
        out.append((float(w @ (s * inner)) - mu1**2 * qi) / (nu - mu1**2))
    return np.array(out)


def fit_g():
    """``(g, description)``: the AAA fit of ``g`` on the 21 nodes (polynomial fallback without AAA)."""
    nodes = np.linspace(0.0, 1.0, FIT_NODES)
    values = g_values(nodes)
    try:
        from scipy.interpolate import AAA
    except ImportError:  # scipy < 1.15
        coef = np.polynomial.polynomial.polyfit(nodes, values, 12)
        return (lambda q: np.polynomial.polynomial.polyval(q, coef)), "degree-12 polynomial fit (no AAA in scipy)"
    return AAA(nodes, values), f"AAA fit on {FIT_NODES} nodes"


def plain_sweep(alphas=ALPHAS, delta=DELTA, layers=LAYERS, g=None):
    """The plain loop (module docstring). Returns ``(rows, fit)``: per α ``(mmse, q, iterations, informed)``,
    the equilibrium's mmse and overlaps, and whether it is the fixed point found from ``q = 1``."""
    fit = "given"
    if g is None:
        g, fit = fit_g()

    def K(q):
        c = q[0]
        for ell in range(1, q.size):
            c = q[ell] * g(c)
        return float(g(c))

    def grad(q):
        out = np.empty(q.size)
        for i in range(q.size):
            e = np.zeros(q.size)
            e[i] = 1.0
            if q[i] < STEP:
                out[i] = (K(q + EDGE_STEP * e) - K(q)) / EDGE_STEP
            elif q[i] > 1.0 - STEP:
                out[i] = (K(q) - K(q - EDGE_STEP * e)) / EDGE_STEP
            else:
                out[i] = (K(q + STEP * e) - K(q - STEP * e)) / (2.0 * STEP)
        return out

    rows = []
    for alpha in alphas:
        q = np.ones(layers)
        for it in range(1, MAX_ITERATIONS + 1):
            old = q
            mmse = 1.0 - K(q)
            r = alpha * grad(q) / (delta + mmse)
            q = r / (1.0 + r)
            if np.max(np.abs(q - old)) < TOLERANCE:
                break
        mmse = 1.0 - K(q)
        with np.errstate(divide="ignore"):
            potential = -alpha * math.log(delta + mmse) + float(np.sum(q + np.log1p(-q)))
        if potential > -alpha * math.log(delta + 1.0):
            rows.append((mmse, q.tolist(), it, True))
        else:
            rows.append((1.0, [0.0] * layers, it, False))
    return rows, fit


# ------------------------------------------------------------------------------------ measuring
# the command's entry point with another checkout's packages first on the path (as bench_startup.py)
RUNNER = "import sys\nfrom replica.workflow.cli import sweep_main\nsys.exit(sweep_main(sys.argv[1:]))\n"


def _child_cpu(cmd, cwd, env=None):
    """Run ``cmd``; return ``(CPU seconds of the child, stdout)`` (user + system, ``os.wait4``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # reaps the child: its own rusage, nothing else's
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.read().decode()[-2000:]}")
        return usage.ru_utime + usage.ru_stime, out.read().decode()


def _sweep_command():
    """The console script ``replica-sweep`` next to this interpreter (else ``python -m replica``)."""
    exe = Path(sys.executable).with_name("replica-sweep")
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "replica"]


class _Sweep:
    """The README command, run in a fresh directory each time (``-o deep.h5`` as written there)."""

    def __init__(self, tmp, label, checkout=None):
        self.tmp, self.label, self.runs, self.times = Path(tmp), label, 0, []
        # byte code cached as on a user's machine (the first, untimed run writes it), with or without a baseline
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        if checkout is None:
            self.cmd = _sweep_command() + README_COMMAND + ["-o", "deep.h5"]
        else:
            self.cmd = [sys.executable, "-c", RUNNER] + README_COMMAND + ["-o", "deep.h5"]
            self.env["PYTHONPATH"] = str(Path(checkout).resolve())

    def run(self, timed=True):
        self.runs += 1
        cwd = self.tmp / f"{self.label}-{self.runs}"
        cwd.mkdir()
        dt, _ = _child_cpu(self.cmd, cwd, self.env)
        if timed:
            self.times.append(dt)
        self.output = cwd / "deep.h5"
        return dt


def _equilibrium_mmse(path):
    import h5py

    with h5py.File(path, "r") as f:
        alpha = np.asarray(f["equilibrium/alpha"][...], float)
        assert np.allclose(alpha, ALPHAS, rtol=0, atol=1e-12), alpha
        return np.asarray(f["equilibrium/mmse"][...], float), float(f["transitions/specialized"].attrs["alpha_c"])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--plain-only", action="store_true", help="run the plain loop only (timed as a subprocess)")
    p.add_argument("--json", action="store_true", help="with --plain-only: print the per-α results as JSON")
    p.add_argument("--repeat", type=int, default=3, help="alternating runs of each (minimum reported)")
    p.add_argument("--baseline", type=Path, action="append", default=[],
                   help="another checkout (e.g. before a change) whose replica-sweep is timed in the same run "
                        "(its packages first on PYTHONPATH; repeatable)")
    args = p.parse_args(argv)
    if args.plain_only:
        rows, fit = plain_sweep()
        if args.json:
            print(json.dumps({"fit": fit, "mmse": [r[0] for r in rows], "q": [r[1] for r in rows],
                              "iterations": [r[2] for r in rows]}))
        else:
            print(f"plain loop ({fit}): {sum(r[2] for r in rows)} iterations")
        return 0

    load = os.getloadavg()[0]
    plain_cmd = [sys.executable, str(Path(__file__).resolve()), "--plain-only", "--json"]
    with tempfile.TemporaryDirectory() as tmp:
        sweeps = [_Sweep(tmp, "package")] + [_Sweep(tmp, f"baseline{i}", b) for i, b in enumerate(args.baseline)]
        first = [s.run(timed=False) for s in sweeps]  # caches as found; fills them (numba, bytecode, tables)
        _child_cpu(plain_cmd, tmp, sweeps[0].env)  # the plain loop's byte code too
        t_plain, result = [], None
        for _ in range(max(1, args.repeat)):
            for s in sweeps:
                s.run()
            dt, text = _child_cpu(plain_cmd, tmp, sweeps[0].env)
            t_plain.append(dt)
            result = json.loads(text.strip().splitlines()[-1])
        found = [_equilibrium_mmse(s.output) for s in sweeps]
    mmse_plain = np.asarray(result["mmse"], float)
    (mmse_pkg, alpha_c), tq = found[0], min(t_plain)
    print(f"README quick-start sweep, {ALPHAS.size} values of alpha in [1, 8]; CPU time (user + sys) of each "
          f"subprocess, start-up included, minimum of {max(1, args.repeat)}; load average {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs")
    print(f"  plain loop ({result['fit']}, {sum(result['iterations'])} iterations): {tq:6.2f} s   "
          f"(all: {', '.join(f'{t:.2f}' for t in t_plain)})")
    for s, f0, (mmse, ac) in zip(sweeps, first, found):
        name = "package (replica-sweep)" if "PYTHONPATH" not in s.env else f"{s.label} {s.env['PYTHONPATH']}"
        tp = min(s.times)
        line = (f"  {name}: {tp:6.2f} s   (all: {', '.join(f'{t:.2f}' for t in s.times)}; first run {f0:.2f} s)   "
                f"ratio to the plain loop {tp / tq:.2f}")
        if s is not sweeps[0]:
            line += (f"; |mmse - package's| <= {np.max(np.abs(mmse - mmse_pkg)):.1e}, "
                     f"|alpha_c - package's| = {abs(ac - alpha_c):.1e}")
        print(line)
    diff = np.abs(mmse_pkg - mmse_plain)
    worst = int(np.argmax(diff))
    print(f"  ratio package/plain = {min(sweeps[0].times) / tq:.2f}   (target <= 0.5)")
    print(f"  largest |mmse_package - mmse_plain| over the equilibrium = {diff[worst]:.1e} "
          f"(alpha = {ALPHAS[worst]:g}); package alpha_c = {alpha_c:.9g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
