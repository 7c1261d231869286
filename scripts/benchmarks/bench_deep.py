"""Deep networks: the package against a plain method of the same equations, CPU time and accuracy.

Workloads (tanh(2x) with unit variance and its linear part, Gaussian weights, Δ = 0.1):

* ``two``: two hidden layers, γ = (0.5, 0.5), ``v ≡ 1``, 16 α in [0.5, 8] (the sweep of docs/physics.md);
* ``two-4point``: the same with the 4-point readout law, 6 α;
* ``three``: three hidden layers, γ = 0.5 each, 16 α (optional, ``--workloads``);
* ``four``: four hidden layers, γ = 0.5 each, 16 α in [1, 8] (optional);
* ``six``: six hidden layers, γ = 0.5 each, 8 α in [2, 9] (optional; the plain method's tables of the
  products of up to six factors are built first, about a minute).

The same plain method (written here for any depth, docs/deep_linear.md §2–§4) runs at every depth, and
the end of a run prints the package's CPU time per α against L for the workloads run.

The package runs what ``replica-sweep`` runs: :func:`replica.continuation.sweep` (every start, every
branch by continuation, located transitions) and the per-point ``discretization_error``. The
*plain method* is written here, not imported from the package's solvers: the replica-symmetric
equations of docs/theory.md §6.2–§6.3 (docs/deep_linear.md §2–§4, top split) on the fixed
12-node folded Gauss–Hermite rule in every effective readout, iterated from fresh starts at every
α (informed, every ``layers_1_to_k``, product-only, universal) with the damping of the published
notebooks (docs/theory.md §5.2: weight 0.2 on the new iterate, ``x ← 0.8x + 0.2F(x)``), in two
variants: a fixed budget of 500 iterations per start (``plain, fixed budget``: 0.96⁵⁰⁰ ≈ 1e-9 for a
map contracting at 0.8) and the notebooks' stopping rule, the error changing by less than 1e-6
between iterations (``plain, notebook stop``, at most 2000 iterations). The equilibrium is the start
of largest free entropy and α_c the midpoint of the grid interval where the equilibrium first
enters the phase with every layer learned. It uses the package's foundations only (activations'
``g``, the priors' scalar channels, :mod:`hciz.rectangular`).

Both run alternately in one process (``--repeat`` times, warm tables and kernels; the minimum
CPU time of each is reported) and are compared with a reference: for two layers the package's
equilibrium solved again on its adaptive rule with 4× the nodes per panel, refined to 1e-7; for
three layers (front-aligned rules, :mod:`replica.models.deep_fronts`) the package's equilibrium solved
again with 3× the Gauss nodes on each side of every front, to 1e-12.

Profile of the two-layer package sweep (cProfile, warm): ~70 % in the compiled evaluation of the
map (``_two_layer_kernels.evaluate_point``: tabulating the first-layer curve, the equal-potential
front, the folded panel rule and its roots, ~0.3 ms per evaluation), ~2000 evaluations per sweep
(continuation ~45 %, damped passes ~22 %, jumps beyond folds ~13 %, crossings ~5 %, stability
~13 %); Python around it ~25 %. Before this solver: 14 ms per evaluation (NumPy), ~9500 evaluations.

Usage::

    python scripts/benchmarks/bench_deep.py [--workloads two,two-4point,three,four,six] [--repeat 2]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

WORKLOADS = {
    "two": dict(gammas=(0.5, 0.5), readout="ones", alphas=np.linspace(0.5, 8.0, 16)),
    "two-4point": dict(gammas=(0.5, 0.5), readout="4point", alphas=np.linspace(0.5, 8.0, 6)),
    "three": dict(gammas=(0.5, 0.5, 0.5), readout="ones", alphas=np.linspace(0.5, 8.0, 16)),
    "four": dict(gammas=(0.5,) * 4, readout="ones", alphas=np.linspace(1.0, 8.0, 16)),
    "six": dict(gammas=(0.5,) * 6, readout="ones", alphas=np.linspace(2.0, 9.0, 8)),
}
DELTA = 0.1
PLAIN_NODES = 12
PLAIN_BUDGET = 500  # fixed budget per start and α
PLAIN_STOP_BUDGET = 2000  # the most iterations of the notebook-stop variant
PLAIN_TOL = 1e-6  # on the change of the error between iterations (the notebooks' test on K*)
PLAIN_NEW_WEIGHT = 0.2
INFORMED = 0.99


# ------------------------------------------------------------------------------------ plain method
class PlainDeep:
    """The equations of docs/deep_linear.md (§6.2 for L = 2) on a fixed folded Gauss–Hermite rule."""

    def __init__(self, gammas, readout, n_s=PLAIN_NODES):
        from hciz.rectangular import rectangular_channel
        from priors import get_readout_law, get_weight_prior
        from replica.activations import get_activation

        self.L = L = len(gammas)
        self.gammas = np.array([1.0] + list(gammas))  # γ₀ = 1 (the input)
        act = get_activation("tanh2", unit_variance=True)
        self.act = act
        self.a = float(act.mu1) ** 2
        self.g_one = float(act.g1)
        self.prior = get_weight_prior("gaussian")
        law = get_readout_law(readout)
        x, w = np.polynomial.hermite_e.hermegauss(2 * n_s)
        s, p = x[x > 0], 2.0 * w[x > 0]
        s_w = p / p.sum()
        v, pv = np.asarray(law.values, float), np.asarray(law.weights, float)
        self.weights = [np.ones(1)] + [s_w] * (L - 1) + [pv]
        self.squares = [np.zeros(1)] + [s**2] * (L - 1) + [v**2]
        self.keys = [(ell, m) for ell in range(1, L + 1) for m in range(1, ell + 1)]
        self.shape = {k: (self.weights[k[0]].size, self.weights[k[1] - 1].size) for k in self.keys}
        self.entries = {k: self.gammas[k[0]] * self.gammas[k[1] - 1] for k in self.keys}
        self.products = [k for k in self.keys if k[1] < k[0]]
        self.channels = {}
        for ell, m in self.products:
            rows, cols = self.gammas[ell], self.gammas[m - 1]
            lo, hi = min(rows, cols), max(rows, cols)
            inner = tuple(sorted(float(g / lo) for g in self.gammas[m:ell]))
            self.channels[(ell, m)] = rectangular_channel(float(hi / lo), inner[0] if len(inner) == 1 else inner)
        self.sizes = [int(np.prod(self.shape[k])) for k in self.keys]

    def A(self, ell, m):
        return self.a ** max(ell - m, 0)

    def unpack(self, x):
        out, i = {}, 0
        for k, n in zip(self.keys, self.sizes):
            out[k] = x[i:i + n].reshape(self.shape[k])
            i += n
        return out

    def pack(self, q):
        return np.concatenate([np.broadcast_to(np.asarray(q.get(k, 0.0), float), self.shape[k]).ravel()
                               for k in self.keys])

    def _tilt(self, ch, t):
        t = np.clip(t, 0.0, 1.0 - 1e-15)
        return np.array([ch.overlap_inverse(float(u)) if u > 0 else 0.0 for u in t.ravel()]).reshape(t.shape)

    def solve_point(self, alpha, x):
        """``(F(x), free entropy, mmse)`` of the packed overlaps ``x``."""
        L, act = self.L, self.act
        Q = {k: np.clip(q, 0.0, 1.0) for k, q in self.unpack(x).items()}
        c, G = [np.ones(1)], [np.ones(1)]
        for ell in range(1, L + 1):
            acc = sum(self.A(ell, m) * (Q[(ell, m)] @ (self.weights[m - 1] * G[m - 1])) for m in range(1, ell + 1))
            c.append(np.clip(acc, 0.0, 1.0))
            G.append(act.g(c[-1]))
        gap = sum(self.A(L + 1, m + 1) * float(self.weights[m] @ (self.squares[m] * (self.g_one - G[m])))
                  for m in range(1, L + 1))
        D = DELTA + gap
        B = [None] * (L + 1)
        B[L] = self.squares[L] * act.g_prime(c[L])
        for m in range(L - 1, 0, -1):
            acc = self.A(L + 1, m + 1) * self.squares[m]
            for ell in range(m + 1, L + 1):
                acc = acc + self.A(ell, m + 1) * ((self.weights[ell] * B[ell]) @ Q[(ell, m + 1)])
            B[m] = act.g_prime(c[m]) * acc
        hat = {k: alpha * self.A(*k) * np.outer(B[k[0]], G[k[1] - 1]) / (self.entries[k] * D) for k in self.keys}
        tilt, tau, gain = {}, {}, {}
        factors = {P: ((P[0], P[0]), (P[0] - 1, P[1])) for P in self.products}  # top split
        for P in self.products:
            T, Bk = factors[P]
            tilt[P] = Q[T] @ (self.weights[T[1] - 1][:, None] * Q[Bk])
            tau[P] = self._tilt(self.channels[P], tilt[P])

        def feedback(X):
            out = np.zeros(self.shape[X])
            for P in gain:
                T, Bk = factors[P]
                ratio = self.entries[P] / self.entries[X]
                if X == T:
                    out += ratio * ((gain[P] * self.weights[P[1] - 1][None, :]) @ Q[Bk].T)
                if X == Bk:
                    out += ratio * (Q[T].T @ (self.weights[P[0]][:, None] * gain[P]))
            return out

        for P in sorted(self.products, key=lambda k: -(k[0] - k[1])):
            hat[P] = np.maximum(hat[P] + feedback(P), 0.0)
            ch = self.channels[P]
            gain[P] = (ch.overlap(tau[P] + hat[P]) - ch.overlap(tau[P])) / ch.overlap_derivative(tau[P])
        for ell in range(1, L + 1):
            hat[(ell, ell)] = np.maximum(hat[(ell, ell)] + feedback((ell, ell)), 0.0)
        new = {}
        f = -0.5 * math.log(2 * math.pi * math.e * D)
        for X in self.keys:
            h = hat[X]
            if X[0] == X[1]:
                new[X] = self.prior.overlap(h)
                term = self.prior.free_entropy(h) - Q[X] * h / 2.0
            else:
                ch = self.channels[X]
                new[X] = np.asarray(ch.overlap(tau[X] + h)).reshape(self.shape[X])
                term = h * (1.0 - Q[X]) / 2.0 - ch.mutual_information(tau[X] + h) + ch.mutual_information(tau[X])
            f += self.entries[X] / alpha * float(self.weights[X[0]] @ np.asarray(term) @ self.weights[X[1] - 1])
        return self.pack(new), f, D - DELTA

    def starts(self):
        out = {"informed": self.pack({k: INFORMED for k in self.keys})}
        for depth in range(1, self.L):
            out[f"layers_1_to_{depth}"] = self.pack({k: INFORMED for k in self.keys if k[0] <= depth})
        out["product"] = self.pack({k: INFORMED for k in self.products})
        return out

    def sweep(self, alphas, stop=False):
        """Per α: ``(best free entropy, its mmse, whether it has every layer learned)`` and the number
        of iterations; ``stop``: the notebooks' stopping rule instead of the fixed budget."""
        rows, iterations = [], 0
        x_zero = self.pack({})
        for alpha in alphas:
            _, f0, mmse0 = self.solve_point(alpha, x_zero)
            best = (f0, mmse0, False)
            for name, x0 in self.starts().items():
                x, previous = x0, math.inf
                for _ in range(PLAIN_STOP_BUDGET if stop else PLAIN_BUDGET):
                    fx, f, mmse = self.solve_point(alpha, x)
                    iterations += 1
                    if stop and abs(mmse - previous) < PLAIN_TOL:
                        break
                    previous = mmse
                    x = (1.0 - PLAIN_NEW_WEIGHT) * x + PLAIN_NEW_WEIGHT * fx
                q = self.unpack(x)
                every = all(float(np.max(q[(ell, ell)])) > 0.1 for ell in range(1, self.L + 1))
                if f > best[0]:
                    best = (f, mmse, every)
            rows.append(best)
        return rows, iterations


def plain_alpha_c(alphas, rows):
    """α_c of the plain method: linear interpolation of the equilibrium free entropy's jump into the
    phase with every layer learned (NaN when the equilibrium never enters it on the grid)."""
    every = [r[2] for r in rows]
    for i in range(1, len(rows)):
        if every[i] and not every[i - 1]:
            return 0.5 * (alphas[i - 1] + alphas[i])
    return math.nan


# ------------------------------------------------------------------------------------ the package
def package_model(gammas, readout, **kw):
    from replica.workflow.model_options import build_model

    options = {"layers": len(gammas), "gamma": list(gammas), "activation": "tanh2", "drop_hermite": [],
               "unit_variance": True, "prior": "gaussian", "readout": readout, "readout_grid": None,
               "delta": DELTA, **kw}
    return build_model(options)


def package_sweep(model, alphas):
    from replica.continuation import sweep
    from replica.workflow.run import discretization_errors

    res = sweep(model, alphas, progress=False)
    res.branches = discretization_errors(model, res, {})
    return res


def reference_mmse(model, alphas, res):
    """Equilibrium mmse on the refined rule (two layers: 4× the nodes per panel, adaptive target 1e-7;
    L ≥ 3: 3× the nodes on each side of every front; each point of the package's equilibrium solved
    again there)."""
    ps = getattr(model, "profile_solver", None)
    out = np.array(res.equilibrium["mmse"], dtype=float)
    from replica.models.deep_fronts import DeepFrontModel

    if isinstance(model, DeepFrontModel):
        fine = DeepFrontModel(panel_nodes=3 * model.panel_nodes, **model._init_kw)
        for i, name in enumerate(res.equilibrium["branch"]):
            x = res.branches[name].points.get(i)
            if x is None:
                continue
            r = fine.solve_from(float(alphas[i]), model.interpolate_to(fine, np.asarray(x, float)), atol=1e-13,
                                rtol=1e-12)
            if r.converged:
                out[i] = r.info["state"].mmse
        return out
    if ps is None:
        return out
    from replica.models._two_layer_profile import TwoLayerProfileSolver

    fine = TwoLayerProfileSolver(model, target=1e-7, base_nodes=32)
    for i, name in enumerate(res.equilibrium["branch"]):
        x = res.branches[name].points.get(i)
        if x is None:
            continue
        r = fine.solve(float(alphas[i]), np.asarray(x, float)[:ps.n_globals + 1])
        if r.converged:
            out[i] = r.info["state"].mmse
    return out


def cpu(fn):
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="two,two-4point", help="comma list of " + ", ".join(WORKLOADS))
    p.add_argument("--repeat", type=int, default=2, help="alternating runs of each method (minimum reported)")
    args = p.parse_args(argv)
    names = [w for w in args.workloads.split(",") if w]
    unknown = sorted(set(names) - set(WORKLOADS))
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)}; valid: {', '.join(WORKLOADS)}")
    import scipy.linalg  # noqa: F401 - scipy's own BLAS, loaded before the limit so that it is limited too
    from threadpoolctl import threadpool_limits

    per_alpha = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name in names:
            w = WORKLOADS[name]
            alphas = w["alphas"]
            plain = PlainDeep(w["gammas"], w["readout"])
            package_sweep(package_model(w["gammas"], w["readout"]), alphas[-2:])  # warm: tables, kernels
            plain.solve_point(float(alphas[0]), plain.pack({}))
            t_pkg, t_fixed, t_stop = [], [], []
            for _ in range(max(1, args.repeat)):
                model = package_model(w["gammas"], w["readout"])
                dt, res = cpu(lambda m=model: package_sweep(m, alphas))
                t_pkg.append(dt)
                dt, fixed = cpu(lambda: plain.sweep(alphas))
                t_fixed.append(dt)
                dt, stopped = cpu(lambda: plain.sweep(alphas, stop=True))
                t_stop.append(dt)
            ref = reference_mmse(model, alphas, res)
            eq_pkg = np.array(res.equilibrium["mmse"], float)
            tp = min(t_pkg)
            per_alpha[name] = (len(w["gammas"]), getattr(model, "size", 0), tp / alphas.size)
            print(f"== {name}: L = {len(w['gammas'])}, gamma = {w['gammas']}, readout {w['readout']}, "
                  f"{alphas.size} alpha in [{alphas[0]:g}, {alphas[-1]:g}], delta = {DELTA}")
            worst = np.nanmax([np.nanmax(b["discretization_error"]) for b in res.branches.values()])
            print(f"   package              : {tp:.2f} s CPU ({tp / alphas.size:.3f} s per alpha), "
                  f"{len(res.branches)} branches, alpha_c = {res.transitions['alpha_c']:.9g}, largest "
                  f"discretization_error {worst:.1e}, mmse error vs reference {np.nanmax(np.abs(eq_pkg - ref) / ref):.1e}")
            for label, times, (rows, iters) in (("plain, fixed budget ", t_fixed, fixed),
                                                ("plain, notebook stop", t_stop, stopped)):
                tq = min(times)
                err = np.nanmax(np.abs(np.array([r[1] for r in rows]) - ref) / ref)
                print(f"   {label} : {tq:.2f} s CPU ({iters} iterations), alpha_c (grid midpoint) = "
                      f"{plain_alpha_c(alphas, rows):.4g}, mmse error vs reference {err:.1e}; "
                      f"ratio plain/package CPU = {tq / tp:.1f}")
    if len(per_alpha) > 1:
        print("== package CPU per alpha against depth (this run)")
        first = min(per_alpha.values())
        for name, (L, size, t) in sorted(per_alpha.items(), key=lambda kv: kv[1][0]):
            print(f"   L = {L} ({name}): {size} unknowns, {t:.3f} s per alpha, {t / first[2]:.2f} x L = {first[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
