"""Figure: learning curves and per-layer overlap maps for L = 1, 2, 3 at equal γ, Δ; thresholds vs L.

Reads one ``replica-sweep`` file per depth (same activation, γ per layer, Δ and α grid), e.g.::

    for L in 1 2 3; do
        replica-sweep --layers $L --gamma 0.5 --activation tanh2 --unit-variance --delta 0.1 \\
            --alpha 0.5:8:16 -o L$L.h5
    done
    python scripts/experiments/depth_figure.py L1.h5 L2.h5 L3.h5 -o depth.png

and draws (a) the equilibrium learning curves (metastable branches thin), (b) one map per depth of
the equilibrium per-layer (and product) overlaps against α, (c) the per-layer thresholds against L:
the located α where the equilibrium phase first contains layer ℓ (a first-order change of phase)
or, for layers learned progressively (no located change), the α where the equilibrium's mean
overlap of layer ℓ first exceeds 1/2 (linear interpolation on the grid); and the located α_c of the
phase with every layer learned. The thresholds are printed
as a table too.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np


def layer_rows(branch, readout_weights=None):
    """Mean overlap of every layer (then product) of a branch, with labels."""
    from replica.workflow.plotting import _layer_labels, _layer_overlaps

    rows = _layer_overlaps(branch, readout_weights if readout_weights is not None
                           else branch.get("readout_weights", [1.0]))
    if not rows and "overlap_W" in branch:  # one hidden layer
        w = np.asarray(branch["readout_weights"], dtype=float)
        rows = [np.asarray(branch["overlap_W"], dtype=float) @ (w / w.sum())]
        return rows, ["1"]
    return rows, _layer_labels(branch, len(rows))


def equilibrium_rows(data):
    """Per-layer mean overlaps of the equilibrium (rows × α) and their labels."""
    eq = np.asarray(data["equilibrium"]["branch"], dtype=object)
    out, labels = None, None
    for name, b in data["branches"].items():
        rows, lab = layer_rows(b)
        if not rows:
            continue
        if out is None:
            out, labels = np.zeros((len(rows), eq.size)), lab
        sel = eq == name
        out[:, sel] = np.vstack(rows)[:, sel]
    return out, labels


def thresholds(data, level=0.5):
    """α where the equilibrium mean overlap of each layer first exceeds ``level`` (NaN if never)."""
    rows, labels = equilibrium_rows(data)
    alpha = np.asarray(data["equilibrium"]["alpha"], dtype=float)
    out = {}
    for q, lab in zip(rows, labels):
        if ":" in lab:
            continue
        above = np.flatnonzero(q > level)
        if above.size == 0:
            out[lab] = np.nan
        elif above[0] == 0:
            out[lab] = alpha[0]
        else:
            i = above[0]
            out[lab] = float(np.interp(level, [q[i - 1], q[i]], [alpha[i - 1], alpha[i]]))
    return out


def phase_layers(phase: str) -> set:
    """Layers learned in a phase name (``layer_1`` → {1}, ``layers_1_2+product`` → {1, 2})."""
    head = phase.split("+")[0]
    if not head.startswith("layer"):
        return set()
    return {int(x) for x in head.split("_")[1:]}


def layer_thresholds(data, level=0.5) -> dict:
    """Per layer: the located α where the equilibrium phase first contains it (a first-order change,
    ``/transitions`` attribute ``alpha_<phase>``), else the mean-overlap crossing of :func:`thresholds`."""
    out = thresholds(data, level)
    tr = data.get("transitions", {})
    first = phase_layers(str(data["equilibrium"]["branch"][0]))  # learned already at the first grid point
    located = {}
    for key, val in tr.items():
        if not key.startswith("alpha_") or key in ("alpha_c", "alpha_sp") or not np.isfinite(val):
            continue
        for ell in phase_layers(key[len("alpha_"):].replace("_and_", "+")) - first:
            located[str(ell)] = min(float(val), located.get(str(ell), np.inf))
    changes = sorted(v for k, v in tr.items() if k.startswith("alpha_") and k != "alpha_sp"
                     and np.isfinite(v))
    alpha = np.asarray(data["equilibrium"]["alpha"], dtype=float)
    for lab, v in out.items():
        if lab in located or not np.isfinite(v):
            continue
        # a crossing by a jump: the located change of phase inside the grid interval
        i = int(np.searchsorted(alpha, v))
        lo, hi = alpha[max(i - 1, 0)], alpha[min(i, alpha.size - 1)]
        inside = [c for c in changes if lo < c <= hi]
        if inside:
            located[lab] = inside[0]
    return {lab: located.get(lab, v) for lab, v in out.items()}


def figure(datas):
    """The figure of the sweeps ``datas`` (one per depth, :func:`replica.workflow.io.read_sweep`) and the
    table of thresholds: ``(fig, [(L, layer thresholds, alpha_c, alpha_sp, located changes), ...])``."""
    from replica.workflow.plotting import (ALPHA_LABEL, MMSE_LABEL, _cell_edges, _mpl, describe, equilibrium_curve,
                                           figure_style)

    depths = [int(d["parameters"].get("layers", 1)) for d in datas]
    matplotlib, plt = _mpl()
    from matplotlib.ticker import MaxNLocator

    n = len(datas)
    with figure_style():
        fig = plt.figure(figsize=(3.3 * (n + 1), 5.6), layout="constrained")
        gs = fig.add_gridspec(2, n + 1)
        ax_curve = fig.add_subplot(gs[0, : (n + 1) // 2 + 1])
        ax_curve.set_gid("learning-curve")
        ax_thr = fig.add_subplot(gs[0, (n + 1) // 2 + 1:])
        colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b"]
        table = []
        for k, (L, d) in enumerate(zip(depths, datas)):
            c = colors[k % len(colors)]
            # the equilibrium through the located changes (jumps at the located α, not across a grid step)
            for j, (_, x, y) in enumerate(equilibrium_curve(d)):
                ax_curve.plot(x, y, color=c, lw=2, zorder=3, label=f"L = {L}" if j == 0 else None)
            for name, b in d["branches"].items():
                ok = np.asarray(b["exists"], bool)
                ax_curve.plot(np.asarray(b["alpha"])[ok], np.asarray(b["mmse"])[ok], color=c, lw=0.7, ls="--",
                              alpha=0.6)
            thr = layer_thresholds(d)
            tr = d.get("transitions", {})
            changes = {k[len("alpha_"):]: v for k, v in tr.items() if k.startswith("alpha_") and k not in ("alpha_c",
                                                                                                         "alpha_sp")}
            table.append((L, thr, tr.get("alpha_c", np.nan), tr.get("alpha_sp", np.nan), changes))
            for lab, a in thr.items():  # layers side by side (they often jump together)
                ax_thr.plot([L + 0.12 * (int(lab) - (L + 1) / 2)], [a], "o",
                            color=colors[(int(lab) - 1) % len(colors)], ms=5)
            ax_thr.plot([L], [tr.get("alpha_c", np.nan)], "k_", ms=14, mew=2)
            rows, labels = equilibrium_rows(d)
            ax = fig.add_subplot(gs[1, k])
            a = np.asarray(d["equilibrium"]["alpha"], dtype=float)
            x_edges = _cell_edges(a, lower=0.0)  # α ≥ 0: the first cell does not run below 0
            mesh = ax.pcolormesh(x_edges, np.arange(len(labels) + 1) - 0.5, rows, shading="flat", cmap="viridis",
                                 vmin=0, vmax=1)
            ax.set_yticks(np.arange(len(labels)))
            ax.set_yticklabels(labels)
            ax.set_xlabel(ALPHA_LABEL)
            ax.set_ylabel("layer / product")
            ax.set_title(f"L = {L}: equilibrium overlaps", loc="left")
        fig.colorbar(mesh, ax=fig.axes[-1], label="mean overlap")
        ax_curve.set_xlabel(ALPHA_LABEL)
        ax_curve.set_ylabel(MMSE_LABEL)
        ax_curve.set_xlim(left=0)
        ax_curve.set_ylim(bottom=0)
        ax_curve.legend(loc="best")
        ax_curve.set_title("learning curves (equilibrium; dashed: all branches)", loc="left")
        for lab in sorted({lab for _, thr, _, _, _ in table for lab in thr}):
            ax_thr.plot([], [], "o", color=colors[(int(lab) - 1) % len(colors)], label=f"layer {lab} learned")
        ax_thr.plot([], [], "k_", ms=14, mew=2, label=r"$\alpha_c$ (all layers)")
        ax_thr.set_xlabel("depth L")
        ax_thr.set_ylabel(r"threshold $\alpha$")
        ax_thr.set_xticks(sorted(set(depths)))
        ax_thr.xaxis.set_major_locator(MaxNLocator(integer=True))  # L counts layers
        ax_thr.legend(loc="best")
        ax_thr.set_title("thresholds vs depth", loc="left")
        fig.suptitle(describe(datas[0]["parameters"], skip=()).replace(f"$L = {depths[0]}$, ", ""))
    return fig, table


def main(argv=None) -> int:
    from replica.workflow.io import read_sweep
    from replica.workflow.plotting import save_figure

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+", help="replica-sweep files, one per depth")
    p.add_argument("-o", "--output", required=True)
    args = p.parse_args(argv)
    fig, table = figure([read_sweep(f) for f in args.files])
    save_figure(fig, args.output, dpi=150)
    print("L | alpha where layer l is learned (located phase change, else mean overlap 1/2) | alpha_c (all layers) | alpha_sp "
          "| located changes of the equilibrium phase")
    for L, thr, ac, asp, changes in table:
        ch = ", ".join(f"{k}: {v:.4f}" for k, v in changes.items())
        print(f"{L} | {', '.join(f'{k}: {v:.3f}' for k, v in thr.items())} | {ac:.4f} | {asp:.4f} | {ch}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
