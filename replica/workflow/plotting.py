"""Figures from the HDF5 files of the package (plotting only reads files).

* :func:`plot_sweep` — learning curve ``mmse(α)`` with every branch (the equilibrium
  part of each branch solid, metastable parts dashed, linearly unstable parts dotted), the
  transitions ``α_sp`` and ``α_c`` and every other change of the equilibrium marked, experiment points (mean ± s.e.m.) and reference curves overlaid; the overlaps:
  ``Q(v)`` profiles at several α for readout laws with several atoms, ``Q`` (and per-layer
  ``q_ℓ``) against α otherwise; per-layer overlap maps (layer × α) for deep networks.
* :func:`plot_phase_diagram` — equilibrium mmse on the grid α × (Δ, γ, …) with the
  transition lines ``α_sp`` and ``α_c``.
* :func:`plot_experiments` — experiment points alone.
* :func:`plot_file` dispatches on the kind of file; :func:`save_figure` writes PNG/PDF/SVG.

Symbols and units follow docs/theory.md (α = n/d², Δ the label-noise variance, γ = k/d, the
error is the excess Bayes-optimal test error ``mmse``, dimensionless).

Why one module of this size: one figure function per file kind (sweep, phase diagram,
experiment, spectrum, SGD) sharing the style, colour and branch-segment helpers, and the
dispatch :func:`plot_file` (docs/architecture.md, "Module size").
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from .style import STYLE_FILE, _mpl, figure_style, style_path  # noqa: F401 (re-exported)

__all__ = [
    "plot_file",
    "plot_sweep",
    "overlap_fields",
    "plot_phase_diagram",
    "plot_phase_lines",
    "plot_neuron_maps",
    "plot_neuron_comparison",
    "plot_training",
    "escape_alpha",
    "binned_neuron_maps",
    "plot_experiments",
    "plot_spectrum",
    "plot_sgd",
    "read_reference",
    "save_figure",
    "PlotError",
    "BRANCH_STYLE",
    "branch_label",
    "equilibrium_curve",
    "experiment_label",
    "reference_label",
    "figure_style",
    "style_path",
]

logger = logging.getLogger(__name__)

#: colour and label of each branch
BRANCH_STYLE = {
    "universal": ("#1f5fa8", "universal ($Q\\equiv 0$)"),
    "specialized": ("#c0392b", "specialized"),
    "partial": ("#2e8b57", "partially specialized"),
    "weak": ("#d68910", "weakly specialized"),
}
#: colours of branches without a style of their own, in order of appearance (distinct from
#: BRANCH_STYLE's); beyond 16 such branches (a long staircase of the s grid) colours are spaced
#: evenly along one colour map instead, so that no two branches share one
_EXTRA_COLORS = ("#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#e84393", "#2c3e50", "#b7950b", "#6c5ce7",
                 "#00a8ff", "#a0522d", "#44bd32", "#c23616", "#273c75", "#e1b12c", "#8c7ae6", "#0097e6")
_EXPERIMENT_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_EXPERIMENT_COLORS = ("#000000", "#6c3483", "#b9770e", "#117a65", "#884ea0", "#5d6d7e")

ALPHA_LABEL = r"sample ratio $\alpha = n/d^2$"
MMSE_LABEL = r"Bayes-optimal test error (mmse)"
CLASSIFICATION_LABEL = r"classification error $P(\hat y \neq y)$"
PARAMETER_LABELS = {
    "delta": r"label-noise variance $\Delta$",
    "gamma": r"width ratio $\gamma = k/d$",
    "readout_grid": r"readout grid size",
    "temperature": r"temperature $T$ of the logistic labels",
    "channel_threshold": r"decision threshold $\theta$ of the labels",
}

class PlotError(ValueError):
    """The file cannot be plotted (unknown layout, incomplete, nothing to draw)."""


# --------------------------------------------------------------------------- text helpers
def describe(parameters: dict, *, skip=()) -> str:
    """Short mathtext description of the model parameters (for titles)."""
    p = parameters
    parts = []
    act = str(p.get("activation", "?"))
    names = {"relu": "ReLU", "tanh2": r"$\tanh(2x)$", "tanh": r"$\tanh$", "erf": "erf", "elu": "ELU",
             "sigmoid": "sigmoid", "softplus": "softplus", "quadratic": r"$x^2/\sqrt{2}$"}
    act_text = names.get(act, act)
    if p.get("drop_hermite"):
        act_text += r" minus He$_{" + ",".join(str(d) for d in p["drop_hermite"]) + "}$"
    if p.get("unit_variance"):
        act_text += r", $\mathbb{E}\sigma^2=1$"
    parts.append(r"$\sigma$ = " + act_text)
    layers = int(p.get("layers", 1) or 1)
    if layers > 1:
        parts.append(f"$L = {layers}$")
    if "gamma" not in skip and p.get("gamma") is not None:
        g = p["gamma"]
        g = g if isinstance(g, (list, tuple)) else [g]
        if len(set(g)) == 1:
            parts.append(rf"$\gamma = {g[0]:g}$")
        else:
            parts.append(r"$\gamma_\ell = " + ",".join(f"{x:g}" for x in g) + "$")
    channel = p.get("channel", "gaussian")
    if channel == "logistic":
        parts.append(r"logistic labels" if "temperature" in skip else
                     rf"logistic labels, $T = {float(p.get('temperature') or 1.0):g}$")
    elif channel == "sign":
        theta = r" - \theta" if "channel_threshold" in skip else (
            rf" - {float(p['channel_threshold']):g}" if p.get("channel_threshold") else "")
        parts.append(r"labels sign$(\lambda" + theta + ")$")
    else:
        if channel == "probit":
            parts.append(r"probit labels" + (rf", $\theta = {float(p['channel_threshold']):g}$"
                                               if p.get("channel_threshold") else ""))
        if "delta" not in skip and p.get("delta") is not None:
            parts.append(rf"$\Delta = {float(p['delta']):g}$")
    if p.get("prior"):
        parts.append(rf"$P_W$ {p['prior']}")
    if p.get("readout"):
        parts.append(rf"$P_v$ {p['readout']}")
    return ", ".join(parts)


def _visible_length(text: str) -> int:
    """Rough printed length of a mathtext string (commands and braces not counted)."""
    import re

    return len(re.sub(r"\\[a-zA-Z]+|[{}$_^]", "", text))


def _wrap(text: str, width: int) -> str:
    """Break a ``", "``-separated description into lines of about ``width`` printed characters."""
    lines, current = [], ""
    for part in text.split(", "):
        candidate = part if not current else current + ", " + part
        if current and _visible_length(candidate) > width:
            lines.append(current + ",")
            current = part
        else:
            current = candidate
    lines.append(current)
    return "\n".join(lines)


def _cell_edges(centres, *, lower=None, upper=None, log=False):
    """Edges of the cells of a colour map around increasing ``centres`` (midpoints; the outer cells as
    wide as their neighbours), clipped to ``[lower, upper]``: the map of a nonnegative quantity (α, Δ, γ,
    |s|) does not run below 0. ``log``: midpoints in log scale. Not increasing: None (use ``shading="nearest"``)."""
    c = np.asarray(centres, dtype=float)
    if c.size == 0 or np.any(~np.isfinite(c)) or (c.size > 1 and np.any(np.diff(c) <= 0)) or (log and np.any(c <= 0)):
        return None
    t = np.log(c) if log else c
    if t.size == 1:
        half = 0.5 * max(abs(t[0]), 1.0) if not log else 0.5
        edges = np.array([t[0] - half, t[0] + half])
    else:
        mid = 0.5 * (t[1:] + t[:-1])
        edges = np.concatenate([[t[0] - (mid[0] - t[0])], mid, [t[-1] + (t[-1] - mid[-1])]])
    edges = np.exp(edges) if log else edges
    if lower is not None:
        edges = np.maximum(edges, lower)
    if upper is not None:
        edges = np.minimum(edges, upper)
    return edges


def _mesh(ax, x, y, z, *, x_lower=None, y_lower=None, y_upper=None, x_upper=None, log_y=False, **kw):
    """``pcolormesh`` of ``z`` (len(y) × len(x)) with the cells of :func:`_cell_edges`."""
    xe = _cell_edges(x, lower=x_lower, upper=x_upper)
    ye = _cell_edges(y, lower=y_lower, upper=y_upper, log=log_y)
    if xe is None or ye is None:
        return ax.pcolormesh(x, y, z, shading="nearest", **kw)
    return ax.pcolormesh(xe, ye, z, shading="flat", **kw)


def _segments(mask):
    """Index runs where ``mask`` is True."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > 1)
    starts = np.concatenate([[idx[0]], idx[breaks + 1]])
    ends = np.concatenate([idx[breaks], [idx[-1]]])
    return [np.arange(s, e + 1) for s, e in zip(starts, ends)]


def _and(words) -> str:
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def branch_label(name: str) -> str:
    """The branch ``name`` of a file in words, for legends: ``layer_1`` → "layer 1 learned",
    ``layers_1_2-2`` → "layers 1 and 2 learned, sheet 2", ``layers_1_to_3`` → "layers 1 to 3 learned",
    ``layer_1+product`` → "layer 1 and a product learned" (names: docs/two_layer.md, the ``phase`` of
    each model; ``-k``: the k-th branch of one phase)."""
    import re

    name = str(name)
    base, sheet = name, ""
    m = re.fullmatch(r"(.+)-(\d+)", name)
    if m:
        base, sheet = m.group(1), f", sheet {m.group(2)}"
    if base in BRANCH_STYLE:
        return BRANCH_STYLE[base][1] + sheet
    head, _, extra = base.partition("+")
    m = re.fullmatch(r"layers?_(\d+)_to_(\d+)", head)
    if m:
        words = f"layers {m.group(1)} to {m.group(2)}"
    elif re.fullmatch(r"layers?(_\d+)+", head):
        layers = head.split("_")[1:]
        words = ("layer " if len(layers) == 1 else "layers ") + _and(layers)
    elif head == "product":
        return "a product of layers learned" + sheet
    else:
        return base.replace("_", " ") + sheet
    if extra:
        words += " and a product"
    return words + " learned" + sheet


def _branch_color(name, names):
    """(colour, label) of branch ``name``; ``names``: every branch in drawing order (the k-th
    branch without a style of its own gets the k-th extra colour, the same in every panel)."""
    if name in BRANCH_STYLE:
        return BRANCH_STYLE[name]
    extras = [n for n in names if n not in BRANCH_STYLE]
    k = extras.index(name)
    if len(extras) <= len(_EXTRA_COLORS):
        return _EXTRA_COLORS[k], branch_label(name)
    from matplotlib import colormaps  # more branches than colours: evenly spaced along one colour map

    return colormaps["turbo"](0.04 + 0.92 * k / (len(extras) - 1)), branch_label(name)


#: experiment samplers (``replica-experiment --sampler``) and starts in words
SAMPLER_WORDS = {"hmc": "HMC", "nuts": "NUTS", "metropolis": "Metropolis", "adam": "Adam", "sgd": "online SGD",
                 "gamp-rie": "GAMP-RIE"}


def experiment_label(sampler, init) -> str:
    """Legend entry of an experiment group: "HMC, informed start", "Adam, uninformed start"."""
    return f"{SAMPLER_WORDS.get(str(sampler), str(sampler).replace('_', ' '))}, {str(init).replace('_', ' ')} start"


#: columns of the published tables of data/reference/ in words (the rest: the column name without '_')
REFERENCE_COLUMNS = {"mmse": "theory", "gen_error": "Bayes-optimal error", "info_mean": "HMC, informed",
                     "unfo_mean": "HMC, uninformed", "AMP_mean": "GAMP-RIE", "y_MMSEs": "MMSE"}


def reference_label(column: str, meta: dict, fallback: str) -> str:
    """Legend entry of a published table's column from its ``# key: value`` header (data/reference/):
    what the column is, the first author and year of the paper (from its arXiv number), the dimension of a
    finite-size run — e.g. "HMC, informed (Barbier et al. 2025, d = 150)", "universal branch (Barbier et al.
    2025)". Without a ``paper`` line: ``fallback`` (the file's name and the column), underscores as spaces."""
    import re

    paper = str(meta.get("paper", ""))
    if not paper:
        return fallback.replace("_", " ")
    content = str(meta.get("content", ""))
    what = REFERENCE_COLUMNS.get(column, column.replace("_", " "))
    if column == "mmse":
        for key, words in (("universal branch", "universal branch"), ("informed start", "specialized branch"),
                           ("specialized", "specialized branch")):
            if key in content:
                what = words
                break
    author = paper.split(",")[0].strip()
    arxiv = re.search(r"arXiv (\d{2})(\d{2})\.\d+", paper)
    year = re.search(r"\b(19|20)\d\d\b", paper)
    cite = f"{author} et al." + (f" 20{arxiv.group(1)}" if arxiv else f" {year.group(0)}" if year else "")
    dim = re.search(r"\bd = (\d+)", content) if column not in ("mmse", "gen_error") else None
    return f"{what} ({cite}{f', d = {dim.group(1)}' if dim else ''})"


# --------------------------------------------------------------------------- references
def read_reference(spec: str) -> dict:
    """Read a reference curve ``FILE.csv[:COLUMN[:ERROR]]`` (a header row with an ``alpha`` column).

    Returns
    -------
    dict
        ``alpha``, ``value``, ``error`` (or None), ``label``.

    Raises
    ------
    ValueError
        Missing file, no ``alpha`` column, unknown column, or non-numeric entries.
    """
    parts = str(spec).split(":")
    # allow Windows-like drive letters and paths containing ':' only at the first field
    path = Path(parts[0])
    column = parts[1] if len(parts) > 1 and parts[1] else None
    error = parts[2] if len(parts) > 2 and parts[2] else None
    if not path.is_file():
        raise ValueError(f"{path} does not exist")
    from .reference import read_csv   # skips the '# key: value' header of data/reference files

    table_ = read_csv(path)
    columns = table_.columns
    header = list(columns)
    if "alpha" not in header:
        raise ValueError(f"{path} has no 'alpha' column (columns: {', '.join(header)})")
    if column is None:
        column = next((c for c in ("mmse", "gen_error", "y_MMSEs", "info_mean") if c in header), None)
        if column is None:
            raise ValueError(f"{path}: name the column to plot, FILE.csv:COLUMN (columns: {', '.join(header)})")
    for c in (column, error):
        if c is not None and c not in header:
            raise ValueError(f"{path} has no column {c!r} (columns: {', '.join(header)})")
    table = np.column_stack([np.atleast_1d(columns[h]) for h in header])
    if table.shape[0] == 0:
        raise ValueError(f"{path} has a header but no data rows")
    out = {"alpha": table[:, header.index("alpha")], "value": table[:, header.index(column)],
           "error": table[:, header.index(error)] if error else None,
           "label": reference_label(column, table_.meta, f"{path.stem}: {column}")}
    order = np.argsort(out["alpha"])
    for k in ("alpha", "value", "error"):
        if out[k] is not None:
            out[k] = out[k][order]
    return out


# --------------------------------------------------------------------------- drawing pieces
def _ordered_branches(branches: dict) -> list:
    """Branch names in the order universal, specialized, partial, others."""
    known = [n for n in BRANCH_STYLE if n in branches]
    return known + sorted(n for n in branches if n not in BRANCH_STYLE)


#: line styles of the transition lines: the spinodal dash-dot-dot, α_c dash-dot (apart from the dotted
#: "linearly unstable" and the dashed "metastable" branch styles)
SPINODAL_STYLE = (0, (6, 1.5, 1, 1.5, 1, 1.5))
TRANSITION_STYLE = "-."


def _draw_transition_lines(ax, transitions, *, color="0.35", legend=True):
    for key, text, ls in (("alpha_sp", r"spinodal $\alpha_{\rm sp}$", SPINODAL_STYLE),
                          ("alpha_c", r"transition $\alpha_c$", TRANSITION_STYLE)):
        a = (transitions or {}).get(key, math.nan)
        if a is not None and np.isfinite(a):
            ax.axvline(a, color=color, ls=ls, lw=0.9, zorder=1, label=f"{text} = {a:.4g}" if legend else None)


def _located_changes(data, field="mmse"):
    """The located changes of the equilibrium branch, ordered in α: dicts ``alpha``, ``from``, ``to``,
    ``before``, ``after`` (the value of ``field`` on the two branches at the change; NaN where unknown).

    ``mmse_before``/``mmse_after`` are stored in the file (``/equilibrium_changes``, solved at the
    located α). The per-point fields of ±1 output channels (``classification_error``, …) are functions of
    the mmse alone (docs/theory.md §10), so at a change they are read off the map mmse ↦ field of the
    file's points (linear interpolation). Older files without the group: only ``α_c``, without branch
    names and values.
    """
    tr = data.get("transitions", {}) or {}
    group = data.get("equilibrium_changes") or {}
    alphas = np.atleast_1d(np.asarray(group.get("alpha", []), dtype=float))
    if alphas.size == 0:
        a_c = tr.get("alpha_c", math.nan)
        return ([{"alpha": float(a_c), "from": None, "to": None, "before": math.nan, "after": math.nan}]
                if a_c is not None and np.isfinite(a_c) else [])
    n = alphas.size

    def column(key, fill):
        return list(np.atleast_1d(np.asarray(group.get(key, [fill] * n), dtype=object)))

    frm, to = column("from_branch", ""), column("to_branch", "")
    before = np.atleast_1d(np.asarray(group.get("mmse_before", np.full(n, np.nan)), dtype=float))
    after = np.atleast_1d(np.asarray(group.get("mmse_after", np.full(n, np.nan)), dtype=float))
    if field != "mmse":
        pairs = [(m, v) for b in data["branches"].values() if field in b and "mmse" in b
                 for m, v in zip(np.asarray(b["mmse"], float), np.asarray(b[field], float))
                 if np.isfinite(m) and np.isfinite(v)]
        if len(pairs) >= 2:
            m, v = np.asarray(sorted(pairs)).T
            before, after = (np.where(np.isfinite(x), np.interp(x, m, v), np.nan) for x in (before, after))
        else:
            before, after = np.full(n, np.nan), np.full(n, np.nan)
    out = [{"alpha": float(alphas[i]), "from": str(frm[i]), "to": str(to[i]), "before": float(before[i]),
            "after": float(after[i])} for i in range(n)]
    return sorted(out, key=lambda c: c["alpha"])


def _equilibrium_pieces(name, alpha, values, ok, is_eq, changes):
    """The equilibrium curve of one branch: the runs of its equilibrium grid points, each extended to
    the located changes of the equilibrium next to it (the branch's own value there, stored in the file;
    for older files linear interpolation between the grid points around the change), and the stretches
    between two changes where the branch is the equilibrium without a grid point (a branch that wins
    only between two grid points). Returns a list of (x, y)."""
    pieces = []
    tol = 1e-12

    def neighbour_value(a, i, j):  # older files: interpolate on the branch between grid points i < j
        if 0 <= i < j < alpha.size and ok[i] and ok[j]:
            return float(np.interp(a, alpha[[i, j]], values[[i, j]]))
        return math.nan

    for seg in _segments(is_eq):
        lo, hi = seg[0], seg[-1]
        left = alpha[lo - 1] if lo > 0 else -math.inf
        right = alpha[hi + 1] if hi + 1 < alpha.size else math.inf
        x, y = list(alpha[seg]), list(values[seg])
        into = [c for c in changes if left + tol < c["alpha"] < alpha[lo] - tol and c["to"] in (name, None)]
        if into:
            c = into[-1]
            v = c["after"] if c["to"] == name and np.isfinite(c["after"]) else neighbour_value(c["alpha"], lo - 1, lo)
            if np.isfinite(v):
                x, y = [c["alpha"]] + x, [v] + y
        out = [c for c in changes if alpha[hi] + tol < c["alpha"] < right - tol and c["from"] in (name, None)]
        if out:
            c = out[0]
            v = c["before"] if c["from"] == name and np.isfinite(c["before"]) else neighbour_value(c["alpha"], hi, hi + 1)
            if np.isfinite(v):
                x, y = x + [c["alpha"]], y + [v]
        pieces.append((np.asarray(x), np.asarray(y)))
    for c, d in zip(changes[:-1], changes[1:]):  # equilibrium between two changes, no grid point between
        if c["to"] == name and d["from"] == name and not np.any((alpha > c["alpha"]) & (alpha < d["alpha"])) \
                and np.isfinite(c["after"]) and np.isfinite(d["before"]):
            pieces.append((np.array([c["alpha"], d["alpha"]]), np.array([c["after"], d["before"]])))
    return pieces


def equilibrium_curve(data: dict, field: str = "mmse") -> list:
    """The equilibrium curve of a sweep (:func:`replica.workflow.io.read_sweep`) as drawn by
    ``replica-plot``: a list of ``(branch, alpha, value)`` pieces, ordered in α, through the grid points
    of the equilibrium branch and the located changes of the equilibrium (both branches' values there,
    :func:`_equilibrium_pieces`), so the pieces cover the α range of the grid without gaps."""
    eq_alpha = np.asarray(data["equilibrium"]["alpha"], dtype=float)
    eq_branch = np.asarray(data["equilibrium"]["branch"], dtype=object)
    located = _located_changes(data, field)
    out = []
    for name, b in data["branches"].items():
        if field not in b:
            continue
        alpha = np.asarray(b["alpha"], dtype=float)
        values = np.asarray(b[field], dtype=float)
        ok = np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool) & np.isfinite(values)
        is_eq = ok & np.isin(alpha, eq_alpha[eq_branch == name])
        out += [(name, x, y) for x, y in _equilibrium_pieces(name, alpha, values, ok, is_eq, located)]
    return sorted(out, key=lambda piece: float(piece[1][0]))


def _draw_curves(ax, data, *, logy=False, field="mmse", ylabel=None):
    """Branches (equilibrium solid, metastable dashed, linearly unstable dotted) and transitions, of the
    per-point ``field`` (``mmse``; ``classification_error`` for ±1 output channels).

    A point is linearly unstable where the branch's ``stability`` (leading eigenvalue of the
    Jacobian of the undamped map) is above 1. The equilibrium curve runs through the located changes
    of the equilibrium (``/equilibrium_changes``: α and the values on both branches there), not only
    through grid points (:func:`_equilibrium_pieces`): it has no gap in α, and the jump of the
    equilibrium error sits at the located change.
    """
    eq = data["equilibrium"]
    eq_alpha = np.asarray(eq["alpha"], dtype=float)
    eq_branch = np.asarray(eq["branch"], dtype=object)
    tr = data.get("transitions", {}) or {}
    located = _located_changes(data, field)
    changes = np.asarray([c["alpha"] for c in located], dtype=float)
    a_c = tr.get("alpha_c", math.nan)
    drawn = []
    metastable = unstable_any = False
    order = _ordered_branches(data["branches"])
    for name in order:
        b = data["branches"][name]
        if field not in b:  # branch found nowhere on the grid (files of older versions)
            continue
        alpha = np.asarray(b["alpha"], dtype=float)
        mmse = np.asarray(b[field], dtype=float)
        ok = np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool) & np.isfinite(mmse)
        is_eq = np.isin(alpha, eq_alpha[eq_branch == name]) & ok
        pieces = _equilibrium_pieces(name, alpha, mmse, ok, is_eq, located)
        if not ok.any() and not pieces:
            continue
        color, label = _branch_color(name, order)
        stab = np.asarray(b.get("stability", np.full(alpha.shape, np.nan)), dtype=float)
        unstable = ok & (stab > 1.0)
        metastable |= bool(np.any(ok & ~is_eq & ~unstable))
        unstable_any |= bool(unstable.any())
        for seg in _segments(ok & ~unstable):  # a branch met at one α only: a marker (a line of one point is invisible)
            ax.plot(alpha[seg], mmse[seg], color=color, ls=(0, (4, 2.5)), lw=1.0, alpha=0.9, zorder=2,
                    marker="D" if seg.size == 1 else None, ms=2.5, mfc="none")
        for seg in _segments(unstable):
            # extend to the neighbouring stable points so that the curve stays connected
            lo, hi = max(seg[0] - 1, 0), min(seg[-1] + 1, alpha.size - 1)
            seg = np.arange(lo, hi + 1)[ok[lo:hi + 1]]
            ax.plot(alpha[seg], mmse[seg], color=color, ls=(0, (1, 1.5)), lw=1.0, alpha=0.7, zorder=2,
                    gid=f"unstable:{name}")
        for x, y in pieces:
            if x.size == 1:
                ax.plot(x, y, "o", color=color, ms=3, zorder=3, gid=f"equilibrium:{name}")
            else:
                ax.plot(x, y, color=color, lw=2.0, zorder=3, gid=f"equilibrium:{name}")
        ax.plot([], [], color=color, lw=2.0, label=label)
        drawn.append(name)
    if metastable:
        ax.plot([], [], color="0.3", lw=2.0, label="equilibrium (largest $f$)")
        ax.plot([], [], color="0.3", lw=1.0, ls=(0, (4, 2.5)), label="metastable")
    if unstable_any:
        ax.plot([], [], color="0.3", lw=1.0, ls=(0, (1, 1.5)), label="linearly unstable")
    _draw_transition_lines(ax, tr)
    others = [a for a in changes if not (a_c is not None and np.isfinite(a_c) and abs(a - a_c) <= 1e-12 * abs(a))]
    for j, a in enumerate(others):
        ax.axvline(a, color="0.55", ls=(0, (5, 2, 1, 2)), lw=0.7, zorder=1,
                   label="equilibrium change" if j == 0 else None)
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel(MMSE_LABEL if ylabel is None else ylabel)
    if logy:
        ax.set_yscale("log")
    return drawn


def _draw_experiments(ax, experiments: dict, *, column="mmse_mean", error="mmse_sem", layer=None):
    n = 0
    for k, ((sampler, init), d) in enumerate(sorted(experiments.items())):
        if column not in d or "alpha" not in d:
            continue
        y = np.asarray(d[column], dtype=float)
        e = np.asarray(d[error], dtype=float) if error in d else None
        if y.ndim == 2:
            y = y[:, -1 if layer is None else layer]
            e = e[:, -1 if layer is None else layer] if e is not None and e.ndim == 2 else None
        label = experiment_label(sampler, init)
        bad = ~np.isfinite(y)
        if np.any(bad):
            logger.warning("experiment %s/%s: %d of %d points not drawn (%s not finite at alpha = %s)", sampler, init,
                           int(bad.sum()), y.size, column,
                           ", ".join(f"{a:g}" for a in np.asarray(d["alpha"], float)[bad]))
        if "excluded" in d and np.any(np.asarray(d["excluded"]) != 0):
            logger.warning("experiment %s/%s: %d chains diverged and are left out of the means (dataset "
                           "excluded)", sampler, init, int(np.sum(np.asarray(d["excluded"]) != 0)))
        ax.errorbar(np.asarray(d["alpha"], float), y, yerr=e, fmt=_EXPERIMENT_MARKERS[k % len(_EXPERIMENT_MARKERS)],
                    ms=4, mfc="white", mec=_EXPERIMENT_COLORS[k % len(_EXPERIMENT_COLORS)],
                    color=_EXPERIMENT_COLORS[k % len(_EXPERIMENT_COLORS)], elinewidth=0.8, capsize=2, lw=0,
                    label=label, zorder=5)
        n += 1
    return n


def _draw_references(ax, references):
    """Reference curves: dense ones as thin grey lines under the theory, sparse ones (or with
    error bars) as markers."""
    markers = ("x", "+", "1", "d")
    colors = ("#7d3c98", "#a04000", "#1e8449", "0.15")
    for k, ref in enumerate(references or []):
        color = colors[k % len(colors)]
        if ref["error"] is not None or ref["alpha"].size <= 40:
            ax.errorbar(ref["alpha"], ref["value"], yerr=ref["error"], fmt=markers[k % len(markers)], ms=4.5,
                        color=color, elinewidth=0.7, capsize=1.5, lw=0, label=ref["label"], zorder=4)
        else:
            ax.plot(ref["alpha"], ref["value"], ls=(0, (1, 1.2)), lw=1.6, color="0.1", label=ref["label"],
                    zorder=4)


def _layer_fields(data) -> list:
    """The per-layer overlaps of a sweep's state schema (role ``layer``, in the schema's order) that some
    branch stores; ``[]`` for files without a schema (then :func:`_layer_overlaps` reads the built-in names)."""
    schema = data.get("state_schema")
    if not schema:
        return []
    present = {k for b in data["branches"].values() for k in b}
    return [f for f in schema if f.role == "layer" and f.name in present]


def _is_deep(data) -> bool:
    """Whether a sweep has per-layer overlaps (its schema's ``layer`` fields; files without a schema: the
    built-in ``overlap_layer_1``)."""
    if data.get("state_schema"):
        return bool(_layer_fields(data))
    return any("overlap_layer_1" in b for b in data["branches"].values())


def _layer_overlaps(branch: dict, readout_weights, fields=()) -> list:
    """Per-layer overlaps of a branch, list of (n_alpha,): the schema's ``layer`` fields (``fields``,
    :func:`_layer_fields`) averaged over their axes; without them the built-in names: readout-averaged
    for readout-resolved layers; for two-layer files (with ``s_weights``) ``Q₁(s)`` and ``Q₂(v, s)`` are
    averaged over ``s`` (and ``v``) and the product overlap ``Q₂:₁`` is appended (see :func:`_layer_labels`)."""
    if any(f.name in branch for f in fields):
        return [_field_average(branch, f) for f in fields if f.name in branch]
    if "overlap_mean_layer_1" in branch:  # replica.models.deep_linear: stored label averages, layers then products
        return [np.asarray(branch[k], dtype=float) for k in _mean_overlap_keys(branch)]
    out = []
    ell = 1
    w = np.asarray(readout_weights, dtype=float)
    w = w / w.sum()
    ws = branch.get("s_weights")
    while f"overlap_layer_{ell}" in branch:
        q = np.asarray(branch[f"overlap_layer_{ell}"], dtype=float)
        if ws is not None and q.ndim >= 2:
            q = q @ np.asarray(ws, dtype=float)  # average over the last axis s
        if q.ndim == 2:
            q = q @ w
        out.append(q)
        ell += 1
    if "overlap_product_2_1" in branch and out:
        out.append(np.asarray(branch["overlap_product_2_1"], dtype=float) @ w)
    return out


def _mean_overlap_keys(branch: dict) -> list:
    """``overlap_mean_layer_<ℓ>`` then ``overlap_mean_product_<ℓ>_<m>`` datasets of a branch
    (:mod:`replica.models.deep_linear`), products by number of factors and then ℓ."""
    layers = sorted((k for k in branch if k.startswith("overlap_mean_layer_")), key=lambda k: int(k.rsplit("_", 1)[1]))
    prods = [k for k in branch if k.startswith("overlap_mean_product_")]

    def order(k):
        ell, m = (int(x) for x in k.split("_")[-2:])
        return (ell - m, ell)
    return layers + sorted(prods, key=order)


def _layer_labels(branch: dict, n: int, fields=()) -> list:
    """Tick labels of the rows of :func:`_layer_overlaps` (``layer_labels`` of the branch if given, else the
    labels of the schema's ``fields``)."""
    if "layer_labels" in branch:
        return list(branch["layer_labels"])
    if any(f.name in branch for f in fields):
        return [f.label or f.name for f in fields if f.name in branch][:n]
    if "overlap_mean_layer_1" in branch:
        return [k.split("_", 3)[-1].replace("_", ":") if "product" in k else k.rsplit("_", 1)[1]
                for k in _mean_overlap_keys(branch)][:n]
    labels = [str(i) for i in range(1, n + 1)]
    if "overlap_product_2_1" in branch and n:
        labels[-1] = "2:1"
    return labels


def _equilibrium_field(data, key):
    """Dataset ``key`` of the equilibrium branch at every α (NaN where that branch lacks it)."""
    eq_branch = np.asarray(data["equilibrium"]["branch"], dtype=object)
    out = None
    for name, b in data["branches"].items():
        if key not in b:
            continue
        arr = np.asarray(b[key], dtype=float)
        if out is None:
            out = np.full(arr.shape, np.nan)
        sel = eq_branch == name
        out[sel] = arr[sel]
    return out


def _draw_s_map(fig, ax, data, key, *, cmap="viridis"):
    """Heat map of an equilibrium overlap against α and the effective readout s (two layers).

    ``key`` is ``overlap_layer_1`` (n_alpha × n_s) or ``overlap_layer_2`` (n_alpha × n_readout ×
    n_s, averaged over the readout law). Returns the mesh or None.
    """
    b0 = next(iter(data["branches"].values()))
    if "s_values" not in b0:
        return None
    q = _equilibrium_field(data, key)
    if q is None:
        return None
    if q.ndim == 3:
        # rows: readout v for the last layer, effective readout s of an inner layer otherwise (L >= 3)
        ell = int(key.rsplit("_", 1)[1])
        last = f"overlap_layer_{ell + 1}" not in b0
        w = np.asarray(b0.get("readout_weights", [1.0]) if last else b0["s_weights"], dtype=float)
        q = np.einsum("avs,v->as", q, w / w.sum())
    alpha = np.asarray(data["equilibrium"]["alpha"], dtype=float)
    s_values = np.asarray(b0["s_values"], dtype=float)
    mesh = _mesh(ax, alpha, s_values, q.T, x_lower=0.0, y_lower=0.0, cmap=cmap, vmin=0.0, vmax=1.0)
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel(r"effective readout $|s|$")
    cb = fig.colorbar(mesh, ax=ax, pad=0.02, fraction=0.06)
    cb.set_label(_s_map_symbol(key, b0))
    _draw_transition_lines(ax, data.get("transitions", {}), color="white", legend=False)
    return mesh


def _s_map_symbol(key, branch) -> str:
    """Colour-bar symbol of an s map: ``Q₁(s)``, ``E_v Q_L(v, s)`` or ``E_s' Q_ℓ(s', s)``."""
    ell = int(key.rsplit("_", 1)[1])
    if ell == 1:
        return r"$Q_1(s)$"
    row = "v" if f"overlap_layer_{ell + 1}" not in branch else "s'"
    return rf"$E_{{{row}}} Q_{ell}({row},s)$"


def _draw_readout_map(fig, ax, data, *, cmap="viridis"):
    """Heat map of the equilibrium product overlap ``Q₂:₁(v)`` against α and the readout group."""
    b0 = next(iter(data["branches"].values()))
    q = _equilibrium_field(data, "overlap_product_2_1")
    if q is None:
        return None
    alpha = np.asarray(data["equilibrium"]["alpha"], dtype=float)
    values = np.asarray(b0.get("readout_values", [1.0]), dtype=float)
    order = np.argsort(values)
    mesh = _mesh(ax, alpha, np.arange(values.size), q[:, order].T, x_lower=0.0, cmap=cmap, vmin=0.0,
                         vmax=1.0)
    ax.set_yticks(np.arange(values.size))
    ax.set_yticklabels([f"{v:.2g}" for v in values[order]])
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel(r"readout $v$")
    cb = fig.colorbar(mesh, ax=ax, pad=0.02, fraction=0.06)
    cb.set_label(r"$Q_{2:1}(v)$")
    _draw_transition_lines(ax, data.get("transitions", {}), color="white", legend=False)
    return mesh


def _draw_layer_map(fig, ax, data, branch_name, *, cmap="viridis"):
    b = data["branches"].get(branch_name)
    if b is None:
        return None
    fields = _layer_fields(data)
    layers = _layer_overlaps(b, b.get("readout_weights", [1.0]), fields)
    if not layers:
        return None
    alpha = np.asarray(b["alpha"], dtype=float)
    ok = np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool)
    grid = np.vstack(layers)
    grid = np.where(ok[None, :], grid, np.nan)
    mesh = _mesh(ax, alpha, np.arange(1, len(layers) + 1), grid, x_lower=0.0, cmap=cmap, vmin=0.0,
                         vmax=1.0)
    ax.set_yticks(np.arange(1, len(layers) + 1))
    ax.set_yticklabels(_layer_labels(b, len(layers), fields))
    ax.set_ylabel(r"layer $\ell$")
    ax.set_xlabel(ALPHA_LABEL)
    cb = fig.colorbar(mesh, ax=ax, pad=0.02, fraction=0.06)
    cb.set_label(r"overlap $q_\ell$")
    _draw_transition_lines(ax, data.get("transitions", {}), color="white", legend=False)
    return mesh


def _equilibrium_layers(data):
    """Per-layer overlaps of the equilibrium state (layer × α)."""
    eq = data["equilibrium"]
    eq_branch = np.asarray(eq["branch"], dtype=object)
    n = eq_branch.size
    rows = None
    for name, b in data["branches"].items():
        layers = _layer_overlaps(b, b.get("readout_weights", [1.0]), _layer_fields(data))
        if not layers:
            continue
        if rows is None:
            rows = np.full((len(layers), n), np.nan)
        sel = eq_branch == name
        rows[:, sel] = np.vstack(layers)[:, sel]
    return rows


#: line styles of the per-layer (and product) overlaps in the overlaps panel of deep networks
#: (solid, dashes, dots, dash-dot, dash-dot-dot, long dashes, long-short dashes, dash-dot-dot-dot: no two alike;
#: tests/figure_checks.py::dash_class)
_LAYER_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (9, 2)), (0, (9, 2, 3, 2)),
                 (0, (3, 1, 1, 1, 1, 1, 1, 1)))


def overlap_fields(data) -> list:
    """The overlap fields of a sweep to draw against α: the entries of its state schema
    (:class:`replica.interface.FieldSpec`, root attribute ``state_schema``; files written before files
    stored it: :func:`replica.interface.default_schema`) with role ``overlap`` that some branch stores."""
    from ..interface import default_schema

    schema = data.get("state_schema")
    schema = default_schema() if schema is None else schema
    present = {k for b in data["branches"].values() for k in b}
    return [f for f in schema if f.role == "overlap" and f.name in present]


def _field_average(branch, field) -> np.ndarray:
    """``field`` of ``branch`` (n_alpha, …) averaged over its axes after α: the readout law's weights on
    ``readout_values``, ``s_weights`` on ``s_values``, plain means on other axes; shape (n_alpha,)."""
    q = np.asarray(branch[field.name], dtype=float)
    weights = {"readout_values": branch.get("readout_weights"), "s_values": branch.get("s_weights")}
    axes = tuple(field.axes) or tuple("" for _ in range(q.ndim - 1))
    for axis in reversed(axes[:max(q.ndim - 1, 0)]):
        w = weights.get(axis)
        if w is not None and np.size(w) == q.shape[-1]:
            w = np.asarray(w, dtype=float)
            q = q @ (w / w.sum())
        else:
            q = q.mean(axis=-1)
    return q


def _draw_overlap_panel(ax, data, *, legend=True):
    """Overlaps: Q(v) profiles at several α (several readout atoms) or the schema's overlaps against α.

    Returns ``"profile"`` (Q(v) of the specialized branch), ``"alpha"`` (overlaps against α) or False (nothing
    to draw); ``legend=False``: the caller places the legend (:func:`plot_sweep`)."""
    branches = data["branches"]
    spec = branches.get("specialized")
    any_b = next(iter(branches.values()))
    values = np.asarray(any_b.get("readout_values", [1.0]), dtype=float)
    deep = _is_deep(data)
    fields = overlap_fields(data)
    profile = next((f.name for f in fields if "readout_values" in f.axes and spec is not None and f.name in spec),
                   None)
    if values.size > 1 and spec is not None and (profile is not None or deep):
        key = profile if profile is not None else max(k for k in spec if k.startswith("overlap_layer_"))
        Q = np.asarray(spec[key], dtype=float)
        ok = np.asarray(spec["exists"], bool) & np.asarray(spec["converged"], bool)
        idx = np.flatnonzero(ok)
        if idx.size and Q.ndim == 2:
            _, plt = _mpl()
            from matplotlib import cm, colors

            pick = idx[np.unique(np.linspace(0, idx.size - 1, min(8, idx.size)).round().astype(int))]
            alphas = np.asarray(spec["alpha"], dtype=float)
            norm = colors.Normalize(vmin=alphas[pick].min(), vmax=max(alphas[pick].max(), alphas[pick].min() + 1e-9))
            cmap = plt.get_cmap("plasma")
            order = np.argsort(values)
            for i in pick:
                ax.plot(values[order], Q[i][order], "-o", ms=2.5, lw=1.2, color=cmap(0.85 * norm(alphas[i])))
            sm = cm.ScalarMappable(norm=colors.Normalize(norm.vmin, norm.vmin + (norm.vmax - norm.vmin) / 0.85),
                                   cmap=cmap)
            cb = ax.figure.colorbar(sm, ax=ax, pad=0.02, fraction=0.06)
            cb.set_label(ALPHA_LABEL)
            ax.set_xlabel(r"readout value $v$")
            ax.set_ylabel(r"overlap $Q(v)$" if not deep else r"last-layer overlap $Q_L(v)$")
            ax.set_ylim(-0.03, 1.03)
            return "profile"
    # one readout atom: overlaps against α, per branch
    drawn = False
    styled = set()  # deep networks: one legend entry per layer (line style); branches are coloured
    fields_drawn = {}  # one hidden layer: {field index: (width, style, label)} of the fields drawn
    gamma = data.get("parameters", {}).get("gamma", 0.5)
    gamma = float(gamma[0] if isinstance(gamma, (list, tuple)) else gamma)
    order = _ordered_branches(branches)
    for name in order:
        b = branches[name]
        ok = np.asarray(b["exists"], bool) & np.asarray(b["converged"], bool)
        if not ok.any() or "mmse" not in b:
            continue
        color, _ = _branch_color(name, order)
        alpha = np.asarray(b["alpha"], dtype=float)
        w = np.asarray(b.get("readout_weights", [1.0]), dtype=float)
        v = np.asarray(b.get("readout_values", [1.0]), dtype=float)
        if deep:
            if name == "universal":
                continue
            layer_q = _layer_overlaps(b, w, _layer_fields(data))
            for ell, (q, lab) in enumerate(zip(layer_q, _layer_labels(b, len(layer_q), _layer_fields(data))),
                                           start=1):
                ls = _LAYER_STYLES[(ell - 1) % len(_LAYER_STYLES)]
                for seg in _segments(ok):
                    ax.plot(alpha[seg], q[seg], color=color, ls=ls, lw=1.4, marker="o" if seg.size == 1 else None,
                            ms=2.5)
                if lab not in styled:
                    styled.add(lab)
                    ax.plot([], [], color="0.35", ls=ls, label=f"$q_{{{lab}}}$")
            drawn = True
            continue
        for k, field in enumerate(fields):
            if field.name not in b:
                continue
            q = _field_average(b, field)
            if field.known_mean:
                q = q - gamma * float(np.dot(w / w.sum(), v)) ** 2  # R_d − 1, the known mean of S
            elif not np.any(np.abs(q[ok]) > 0.0):
                continue  # a specialization overlap that is zero on this branch (the universal one)
            # Q solid, the next field dotted, further fields in the layer styles after the dotted one
            lw, ls = (1.6, "-") if k == 0 else (1.1, (0, (1.5, 1.5)) if k == 1
                                                else _LAYER_STYLES[(k + 1) % len(_LAYER_STYLES)])
            for seg in _segments(ok):
                ax.plot(alpha[seg], q[seg], color=color, lw=lw, ls=ls, marker="o" if seg.size == 1 and k == 0 else None,
                        ms=2.5)
            fields_drawn.setdefault(k, (lw, ls, field.label or field.name))
            drawn = True
    # one legend entry per field (its line style), in the schema's order; the branches have the learning
    # curve's colours
    for k in sorted(fields_drawn):
        lw, ls, text = fields_drawn[k]
        ax.plot([], [], color="0.35", lw=lw, ls=ls, label=text)
    if not drawn:
        logger.warning("overlaps panel: no overlap field to draw (declare the state's fields with role 'overlap' "
                       "in the model's state_schema(), replica.interface.FieldSpec)")
        return False
    _draw_transition_lines(ax, data.get("transitions", {}), legend=False)
    ax.set_xlabel(ALPHA_LABEL)
    ax.set_ylabel(r"overlap $q_\ell$" if deep else r"overlap")
    ax.set_ylim(-0.03, 1.05)
    ax.set_xlim(left=0)
    if legend:
        ax.legend(loc="best")
    return "alpha"


# --------------------------------------------------------------------------- figures
def plot_sweep(data, *, experiments=None, references=None, kind="auto", title=None, logy=False):
    """Figure of a sweep (dict from :func:`replica.workflow.io.read_sweep`, or the sweep itself).

    Parameters
    ----------
    data : dict or replica.continuation.SweepResult
        ``parameters``, ``branches``, ``equilibrium``, ``transitions`` (and ``experiments``); a
        :class:`~replica.continuation.SweepResult` (e.g. of :func:`replica.workflow.run.run_sweep`) is drawn
        as its file would be (:func:`replica.workflow.io.sweep_data`, no title parameters).
    experiments : dict, optional, keyword-only
        ``{(sampler, init): {alpha, mmse_mean, mmse_sem, …}}`` overlaid on the learning curve
        (added to the file's own experiments).
    references : list of dict, optional, keyword-only
        Reference curves from :func:`read_reference`.
    kind : {"auto", "curve", "classification", "overlaps", "layers"}, keyword-only
        ``auto``: learning curve, overlaps and (deep networks) the per-layer maps.
    title : str, optional, keyword-only
    logy : bool, keyword-only
        Logarithmic mmse axis.

    Returns
    -------
    matplotlib.figure.Figure
    """
    if not isinstance(data, dict):
        from .io import sweep_data

        data = sweep_data(data)
    matplotlib, plt = _mpl()
    exps = dict(data.get("experiments") or {})
    exps.update(experiments or {})
    deep = _is_deep(data)
    multi_atom = any(np.size(b.get("readout_values", [1.0])) > 1 for b in data["branches"].values())
    two_layer = any("s_values" in b for b in data["branches"].values())
    layer_panels = ["layers_eq", "layers_spec"]
    if two_layer:
        b0 = next(iter(data["branches"].values()))
        n_layers = 1
        while f"overlap_layer_{n_layers + 1}" in b0:
            n_layers += 1
        layer_panels = (["layers_eq"] + [f"s_map_{ell}" for ell in range(1, n_layers + 1)]
                        + (["readout_map"] if multi_atom and n_layers == 2 else []))
    classify = ["classification"] if any("classification_error" in b for b in data["branches"].values()) else []
    panels = {"auto": ["curve"] + classify + ["overlaps"] + (layer_panels if deep else []),
              "curve": ["curve"], "overlaps": ["overlaps"], "classification": classify,
              "layers": layer_panels}[kind]
    if kind == "layers" and not deep:
        raise PlotError("--kind layers: the file is not a deep-network sweep (no overlap_layer_<ℓ> datasets)")
    if kind == "classification" and not classify:
        raise PlotError("--kind classification: the file has no classification_error (labels of a ±1 output "
                        "channel: replica-sweep --channel probit, sign or logistic)")
    if kind == "auto" and not set(data["branches"]) - {"universal"} and not deep:
        # the universal branch alone has no specialization overlaps to draw; any other branch (``weak`` of a
        # probit channel, ``partial``, …) keeps its overlaps panel next to the classification panel
        panels = ["curve"] + classify
    with figure_style():
        ncols = 2 if len(panels) > 1 else 1
        nrows = math.ceil(len(panels) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.4 * ncols, 2.9 * nrows + 0.5), layout="constrained",
                                 squeeze=False)
        axes = axes.ravel()
        below = []  # (handle, label) of the legend below the panels
        for ax, panel in zip(axes, panels):
            if panel == "curve":
                _draw_curves(ax, data, logy=logy)
                _draw_references(ax, references)
                if exps:
                    _draw_experiments(ax, exps)
                ax.set_xlim(left=0)
                if not logy:
                    ax.set_ylim(bottom=0)
                handles, labels = ax.get_legend_handles_labels()
                if len(labels) > 4:  # long legends go below the panels, never over the curves
                    below += list(zip(handles, labels))
                else:
                    ax.legend(loc="best")
                ax.set_title("learning curve", loc="left")
            elif panel == "classification":
                _draw_curves(ax, data, logy=logy, field="classification_error", ylabel=CLASSIFICATION_LABEL)
                ax.set_xlim(left=0)
                if not logy:
                    ax.set_ylim(bottom=0)
                ax.set_title("classification error", loc="left")
            elif panel == "overlaps":
                drawn = _draw_overlap_panel(ax, data, legend=False)
                if not drawn:
                    ax.set_axis_off()
                ax.set_title("overlaps" + (r" $Q(v)$, specialized branch" if drawn == "profile" else ""), loc="left")
                handles, labels = ax.get_legend_handles_labels()
                if labels and len(panels) < len(axes):  # an empty cell of the grid: the legend goes there
                    spare = axes[len(panels)]
                    spare.legend(handles, labels, loc="upper left", frameon=False, title="overlaps",
                                 alignment="left")
                elif len(labels) > 3:  # below the panels with the learning curve's, never over the curves
                    below += list(zip(handles, labels))
                elif labels:
                    ax.legend(loc="best")
            elif panel == "layers_eq":
                rows = _equilibrium_layers(data)
                if rows is None:
                    ax.set_axis_off()
                    continue
                eq_data = {"branches": {"eq": {"alpha": data["equilibrium"]["alpha"],
                                               "exists": np.ones(rows.shape[1], bool),
                                               "converged": np.ones(rows.shape[1], bool),
                                               **{f"overlap_layer_{i + 1}": r for i, r in enumerate(rows)}}},
                           "transitions": data.get("transitions", {})}
                eq_data["branches"]["eq"]["layer_labels"] = _layer_labels(next(iter(data["branches"].values())),
                                                                          rows.shape[0], _layer_fields(data))
                _draw_layer_map(fig, ax, eq_data, "eq")
                ax.set_title(r"per-layer overlap $q_\ell$, equilibrium", loc="left")
            elif panel.startswith("s_map_"):
                key = "overlap_layer_" + panel.rsplit("_", 1)[1]
                if _draw_s_map(fig, ax, data, key) is None:
                    ax.set_axis_off()
                    continue
                ax.set_title(f"layer {panel.rsplit('_', 1)[1]}: {_s_map_symbol(key, b0)}, equilibrium", loc="left")
            elif panel == "readout_map":
                if _draw_readout_map(fig, ax, data) is None:
                    ax.set_axis_off()
                    continue
                ax.set_title(r"product $W_{2:1}$: $Q_{2:1}(v)$, equilibrium", loc="left")
            elif panel == "layers_spec":
                if _draw_layer_map(fig, ax, data, "specialized") is None:
                    ax.set_axis_off()
                    continue
                ax.set_title(r"per-layer overlap $q_\ell$, specialized branch", loc="left")
                ax.set_facecolor("0.92")
        for ax in axes[len(panels):]:
            ax.set_axis_off()
        if below:
            handles, labels = zip(*below)
            longest = max(_visible_length(lab) for lab in labels)
            ncol = max(1, min(4, math.ceil(len(labels) / 2), int(120 * ncols / 2 // (longest + 6))))
            fig.legend(handles, labels, loc="outside lower center", ncol=ncol, handlelength=2.2, columnspacing=1.2)
        fig.suptitle(title if title is not None else _wrap(describe(data.get("parameters", {})), 60 * ncols),
                     fontsize=9)
    return fig


def plot_experiments(experiments: dict, *, parameters=None, title=None, logy=False):
    """Figure of experiment points alone (mmse and, when stored, per-layer overlaps)."""
    matplotlib, plt = _mpl()
    if not experiments:
        raise PlotError("the file has no experiments/<sampler>/<init> groups")
    has_overlap = any("overlap_mean" in d and np.any(np.isfinite(np.asarray(d["overlap_mean"], float)))
                      for d in experiments.values())  # GAMP-RIE stores no weights: NaN overlaps
    with figure_style():
        ncols = 2 if has_overlap else 1
        fig, axes = plt.subplots(1, ncols, figsize=(3.4 * ncols, 2.75), layout="constrained", squeeze=False)
        ax = axes[0, 0]
        _draw_experiments(ax, experiments)
        ax.set_xlabel(ALPHA_LABEL)
        ax.set_ylabel(MMSE_LABEL)
        if logy:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlim(left=0)
        ax.legend(loc="best")
        ax.set_title("experiments: half Gibbs error", loc="left")
        if has_overlap:
            ax2 = axes[0, 1]
            for k, ((sampler, init), d) in enumerate(sorted(experiments.items())):
                if "overlap_mean" not in d or not np.any(np.isfinite(np.asarray(d["overlap_mean"], float))):
                    continue
                q = np.atleast_2d(np.asarray(d["overlap_mean"], dtype=float))
                if q.shape[0] != np.size(d["alpha"]):
                    q = q.T
                e = d.get("overlap_sem")
                e = None if e is None else np.atleast_2d(np.asarray(e, dtype=float)).reshape(q.shape)
                for ell in range(q.shape[1]):
                    ax2.errorbar(np.asarray(d["alpha"], float), q[:, ell], yerr=None if e is None else e[:, ell],
                                 fmt=_EXPERIMENT_MARKERS[k % len(_EXPERIMENT_MARKERS)] + ("-" if ell == 0 else "--"),
                                 ms=4, mfc="white", lw=0.8, capsize=2,
                                 color=_EXPERIMENT_COLORS[k % len(_EXPERIMENT_COLORS)],
                                 label=experiment_label(sampler, init)
                                 + (f", layer {ell + 1}" if q.shape[1] > 1 else ""))
            ax2.set_xlabel(ALPHA_LABEL)
            ax2.set_ylabel(r"matched overlap $W_i\cdot W^0_{\pi(i)}/d$")
            ax2.set_ylim(-0.03, max(1.03, ax2.get_ylim()[1]))
            ax2.set_xlim(left=0)
            ax2.legend(loc="best")
            ax2.set_title("experiments: overlaps", loc="left")
        fig.suptitle(title if title is not None else _wrap(describe(parameters or {}), 60 * ncols), fontsize=9)
    return fig


def plot_phase_diagram(data: dict, *, title=None, logy=False):
    """Figure of a phase diagram (dict from :func:`replica.workflow.io.read_phase_diagram`).

    The equilibrium mmse is a colour map on α × parameter (logarithmic colours); the
    transition lines ``α_sp`` (spinodal, where the specialized branch appears) and
    ``α_c`` (thermodynamic transition) are drawn against the parameter; the region
    between them, where the specialized branch is metastable, is hatched.
    """
    matplotlib, plt = _mpl()
    from matplotlib import colors

    par = data["parameter"]
    values = np.asarray(data[par], dtype=float)
    alpha = np.asarray(data["alpha"], dtype=float)
    mmse = np.asarray(data["mmse"], dtype=float)
    with figure_style():
        fig, ax = plt.subplots(figsize=(5.0, 3.9), layout="constrained")
        finite = mmse[np.isfinite(mmse) & (mmse > 0)]
        norm = colors.LogNorm(vmin=finite.min(), vmax=finite.max()) if finite.size and finite.min() < finite.max() \
            else None
        # cells clipped at 0: α, Δ, γ and the readout grid size are nonnegative (the axes start at ≥ 0)
        mesh = _mesh(ax, alpha, values, np.ma.masked_invalid(mmse), x_lower=0.0, y_lower=0.0, log_y=logy,
                     cmap="viridis", norm=norm)
        cb = fig.colorbar(mesh, ax=ax, pad=0.02, fraction=0.05)
        cb.set_label("equilibrium mmse")
        sp = np.asarray(data.get("alpha_sp", np.full(values.size, np.nan)), dtype=float)
        ac = np.asarray(data.get("alpha_c", np.full(values.size, np.nan)), dtype=float)
        # rows whose transition lies outside the α grid: arrows at the edge
        branch = np.asarray(data.get("branch", np.full(mmse.shape, "", dtype=object)), dtype=object)
        done = np.asarray(data.get("done", np.ones(values.size, bool)), bool)
        below = done & ~np.isfinite(ac) & (branch[:, 0] != "universal") & (branch[:, 0] != "")
        above = done & ~np.isfinite(ac) & (branch[:, -1] == "universal")
        dx = 0.5 * np.diff(alpha).min(initial=0) if alpha.size > 1 else 0.0
        left, right = max(alpha.min() - dx, 0.0), alpha.max() + dx  # α ≥ 0
        layer_handles = _layer_transition_lines(ax, data, values, left=alpha.min() - 0.6 * (alpha.min() - left))
        # the specialized branch is metastable from α_sp to α_c; where α_c lies above the grid (the row is
        # universal at its last α), to the end of the grid
        upper = np.where(np.isfinite(ac), ac, np.where(above & np.isfinite(sp), right, np.nan))
        ok = np.isfinite(sp) & np.isfinite(upper)
        hatched = bool(ok.any())
        if hatched:
            ax.fill_betweenx(values[ok], sp[ok], upper[ok], facecolor="none", edgecolor="0.2", hatch="////", lw=0,
                             alpha=0.45, label="specialized branch metastable")
        # α_c first, the dashed spinodal on top: both stay visible where they coincide (deep networks:
        # the lines of every layer instead, the last layer's being these)
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch

        handles = list(layer_handles)
        for arr, style, z, text in ((ac, dict(color="#ff5a36", ls="-", marker="s", mfc="#ff5a36", lw=2.4), 3,
                                     r"transition $\alpha_c$"),
                                    (sp, dict(color="black", ls=(0, (3, 2)), marker="o", mfc="white", lw=1.4), 4,
                                     r"spinodal $\alpha_{\rm sp}$")):
            m = np.isfinite(arr)
            if m.any() and not layer_handles:
                ax.plot(arr[m], values[m], ms=4, mec="black", mew=0.6, zorder=z, **style)
                handles.insert(0, Line2D([], [], ms=4, mec="black", mew=0.6, label=text, **style))
        if below.any():
            ax.plot(np.full(below.sum(), alpha.min() - 0.6 * (alpha.min() - left)), values[below], "<",
                    color="#ff5a36", mec="black", mew=0.6, ms=6, zorder=5, clip_on=False)
        if above.any():
            ax.plot(np.full(above.sum(), alpha.max() + 0.6 * dx), values[above], ">", color="#ff5a36", mec="black",
                    mew=0.6, ms=6, zorder=5, clip_on=False)
        ax.set_xlabel(ALPHA_LABEL)
        ax.set_ylabel(PARAMETER_LABELS.get(par, par))
        ax.set_xlim(left if alpha.size > 1 else None, right if alpha.size > 1 else None)
        if logy:
            ax.set_yscale("log")
        edges = _cell_edges(values, lower=0.0, log=logy)
        if edges is not None:  # the rows' cells, not below 0 (the lines and markers add no margin below)
            ax.set_ylim(edges[0], edges[-1])
        # the legend lists what is drawn, nothing else
        if hatched:
            handles.append(Patch(facecolor="none", edgecolor="0.35", hatch="////", lw=0,
                                 label="every layer learned: metastable" if layer_handles
                                 else "specialized branch metastable"))
        if below.any():
            handles.append(Line2D([], [], ls="none", marker="<", color="#ff5a36", mec="black", mew=0.6, ms=6,
                                  label=r"$\alpha_c$ below the grid"))
        if above.any():
            handles.append(Line2D([], [], ls="none", marker=">", color="#ff5a36", mec="black", mew=0.6, ms=6,
                                  label=r"$\alpha_c$ above the grid"))
        if handles:
            fig.legend(handles=handles, loc="outside lower center", ncol=2, handlelength=2.4, columnspacing=1.5)
        if not data.get("complete", True):
            ax.text(0.02, 0.02, "incomplete (resume to finish)", transform=ax.transAxes, color="white", fontsize=7)
        fig.suptitle(title if title is not None else _wrap("phase diagram: " + describe(
            data.get("parameters", {}), skip=(par,)), 75), fontsize=9)
    return fig


def plot_phase_lines(data: dict, *, title=None, logy=False):
    """Figure of traced phase lines (dict from :func:`replica.workflow.io.read_phase_lines`): α against the
    parameter, spinodals (folds) dashed with open circles at the requested values, first-order lines (crossings)
    solid with squares, the universal branch's loss of stability dotted with triangles; a line lost before the
    last requested value ends with a cross; critical points are stars and triple points diamonds; the pieces of
    crossing lines beyond a triple point (between metastable branches) are drawn thin and faded."""
    matplotlib, plt = _mpl()
    from matplotlib.lines import Line2D

    par = data["parameter"]
    requested = np.asarray(data.get("requested", []), dtype=float)
    styles = {"fold": dict(ls=(0, (3, 2)), marker="o", mfc="white", lw=1.4),
              "crossing": dict(ls="-", marker="s", lw=2.0),
              "instability": dict(ls=(0, (1, 1.5)), marker="^", lw=1.6),
              "branch_point": dict(ls=(0, (5, 1.5, 1, 1.5)), marker="v", lw=1.6),
              "bifurcation": dict(ls=(0, (5, 1.5, 1, 1.5)), marker="D", lw=1.6, mfc="white")}
    with figure_style():
        fig, ax = plt.subplots(figsize=(5.0, 3.9), layout="constrained")
        handles = []
        for k, line in enumerate(data["lines"]):
            p, a = np.asarray(line[par], dtype=float), np.asarray(line["alpha"], dtype=float)
            color = f"C{k % 10}"
            style = styles.get(line["kind"], styles["crossing"])
            meta = np.asarray(line.get("metastable", np.zeros(a.shape, bool)), dtype=bool)
            order = np.argsort(p, kind="stable")
            for seg_meta in (False, True):  # a segment is metastable where both its ends are
                both = meta[order][1:] & meta[order][:-1]
                keep = both if seg_meta else ~both
                for j in np.flatnonzero(keep):
                    ax.plot(a[order][j:j + 2], p[order][j:j + 2], color=color, ls=style["ls"],
                            lw=style["lw"] * (0.5 if seg_meta else 1.0), alpha=0.35 if seg_meta else 1.0, zorder=3)
            for faded in (False, True):  # the markers of metastable points faded too
                at = np.isin(p, requested) & (meta == faded)
                ax.plot(a[at], p[at], ls="none", marker=style["marker"], ms=3 if faded else 4, mec="black", mew=0.6,
                        mfc=style.get("mfc", color), alpha=0.35 if faded else 1.0, zorder=4)
            if line["end"] == "lost" and a.size:
                ax.plot(a[-1], p[-1], ls="none", marker="X", ms=7, color=color, mec="black", mew=0.6,
                        alpha=0.35 if meta[-1] else 1.0, zorder=5)
            what = {"fold": f"spinodal: {' '.join(line['branches'][1:2])} of {line['branches'][0]}",
                    "instability": "universal branch unstable",
                    "branch_point": f"branch point of {' '.join(line['branches'][:1])}",
                    "bifurcation": f"continuous {'onset' if line['branches'][1:2] == ('start',) else 'end'} of "
                                   f"{' '.join(line['branches'][:1])}"}.get(
                        line["kind"], "transition " + " → ".join(
                        line["branches"]))
            if p.size and requested.size and p[0] == requested[-1] and p[0] != requested[0]:
                what += f" (names at {par} = {p[0]:g})"  # traced back from the last value
            elif p.size and requested.size and p[0] not in requested:
                what += f" (from the triple point at {par} = {p[0]:.6g}; names as in the lines that meet there)"
            handles.append(Line2D([], [], color=color, ls=style["ls"], lw=style["lw"], marker=style["marker"], ms=4,
                                  mec="black", mew=0.6, mfc=style.get("mfc", color), label=what))
        cps = data.get("critical_points", {})
        if np.size(cps.get("alpha", [])):
            ax.plot(cps["alpha"], cps[par], ls="none", marker="*", ms=12, color="gold", mec="black", mew=0.7, zorder=6)
            handles.append(Line2D([], [], ls="none", marker="*", ms=12, color="gold", mec="black", mew=0.7,
                                  label="critical point (spinodals merge)"))
        tps = data.get("triple_points", {})
        if np.size(tps.get("alpha", [])):
            ax.plot(tps["alpha"], tps[par], ls="none", marker="D", ms=8, color="crimson", mec="black", mew=0.7,
                    zorder=6)
            handles.append(Line2D([], [], ls="none", marker="D", ms=8, color="crimson", mec="black", mew=0.7,
                                  label="triple point (three branches, equal f)"))
        if any(np.any(line.get("metastable", False)) for line in data["lines"]):
            handles.append(Line2D([], [], color="0.5", lw=1.0, alpha=0.35, marker="s", ms=3, mec="black", mew=0.6,
                                  label="metastable (beyond a triple point)"))
        if any(line["end"] == "lost" for line in data["lines"]):
            handles.append(Line2D([], [], ls="none", marker="X", ms=7, color="0.5", mec="black", mew=0.6,
                                  label="line lost (ends or meets another)"))
        ax.set_xlabel(ALPHA_LABEL)
        ax.set_ylabel(PARAMETER_LABELS.get(par, par))
        if logy:
            ax.set_yscale("log")
        if handles:
            fig.legend(handles=handles, loc="outside lower center", ncol=2, handlelength=2.4, columnspacing=1.5)
        fig.suptitle(title if title is not None else _wrap("phase lines: " + describe(
            data.get("parameters", {}), skip=(par,)), 75), fontsize=9)
    return fig


def _equilibrium_neuron_maps(data):
    """The per-neuron maps of the equilibrium at every α: ``(u, Q₁ (n_α, n_q), Q₂ (n_α, n_v, n_q), v)``
    or None when the file has none (``neuron_overlap_layer_*`` of sweeps with linear parts and L ≥ 2)."""
    branches = data["branches"]
    first = next((b for b in branches.values() if "neuron_overlap_layer_1" in b), None)
    if first is None:
        return None
    u = np.asarray(first["neuron_quantiles"], dtype=float)
    v = np.asarray(first["readout_values"], dtype=float)
    eq = data["equilibrium"]
    n_a = np.asarray(eq["alpha"]).size
    q1 = np.full((n_a, u.size), np.nan)
    q2 = np.full((n_a, v.size, u.size), np.nan)
    deep = _hidden_layers(data) >= 3
    for i, name in enumerate(eq["branch"]):
        b = branches.get(str(name))
        if b is not None and "neuron_overlap_layer_1" in b:
            q1[i] = b["neuron_overlap_layer_1"][i]
            if not deep:  # L ≥ 3: layer 2 is a (u₂, u₁) map (_equilibrium_layer_maps)
                q2[i] = np.asarray(b["neuron_overlap_layer_2"][i]).reshape(v.size, u.size)
    return u, q1, q2, v


def _hidden_layers(data):
    """The number of hidden layers of a sweep: the ``layers`` parameter, or 3 when a branch stores a
    third layer's per-neuron map (files whose parameters lack it)."""
    try:
        layers = int(data.get("parameters", {}).get("layers") or 0)
    except (TypeError, ValueError):
        layers = 0
    if any("neuron_overlap_layer_3" in b for b in data["branches"].values()):
        layers = max(layers, 3)
    return layers


def _equilibrium_layer_maps(data):
    """Networks with L ≥ 3 hidden layers: ``{ℓ: per-neuron map of layer ℓ at equilibrium (n_α, n_q)}``, each row
    ordered by the neuron quantile of the layer's own neurons (the first layer: ``Q₁``; an inner layer: the
    overlap of each of its neurons averaged over the previous layer's neurons; the last layer: the weights
    from each neuron of layer L − 1 to the strongest readout), or None for files with two hidden layers."""
    branches = data["branches"]
    if _hidden_layers(data) < 3:
        return None
    first = next((b for b in branches.values() if "neuron_overlap_layer_1" in b), None)
    L = max([_hidden_layers(data)] + [int(k.rsplit("_", 1)[1]) for k in first if k.startswith("neuron_overlap_layer_")])
    n_q = np.asarray(first["neuron_quantiles"]).size
    v = np.asarray(first["readout_values"], dtype=float)
    strongest = int(np.argmax(np.abs(v)))
    eq = data["equilibrium"]
    n_a = np.asarray(eq["alpha"]).size
    out = {ell: np.full((n_a, n_q), np.nan) for ell in range(1, L + 1)}
    for i, name in enumerate(eq["branch"]):
        b = branches.get(str(name))
        if b is None or "neuron_overlap_layer_1" not in b:
            continue
        for ell in range(1, L + 1):
            if f"neuron_overlap_layer_{ell}" not in b:
                raise PlotError(f"--neurons: branch {str(name)!r} lacks neuron_overlap_layer_{ell} (every branch of "
                                f"an L = {L} sweep stores it: the file is damaged)")
            q = np.asarray(b[f"neuron_overlap_layer_{ell}"][i], dtype=float)
            out[ell][i] = q if ell == 1 else (q[strongest] if ell == L else q.mean(axis=1))
    return out


def _finish_neuron_maps(fig, mesh, data, title):
    """The colour bar (overlap, 0 … 1) and the title of a figure of per-neuron maps."""
    cb = fig.colorbar(mesh, ax=fig.axes, pad=0.01, fraction=0.04)
    cb.set_label("teacher–student overlap")
    fig.suptitle(title if title is not None else _wrap("per-neuron overlaps at equilibrium: " + describe(
        data.get("parameters", {})), 90), fontsize=9)


def _plot_deep_neuron_maps(data, alpha, u, maps, title):
    """One panel per layer against α (:func:`_equilibrium_layer_maps`), neurons strongest first."""
    matplotlib, plt = _mpl()
    L = max(maps)
    with figure_style():
        fig, axes = plt.subplots(1, L, figsize=(2.9 * L, 3.2), layout="constrained", sharey=True)
        for ell, ax in zip(range(1, L + 1), axes):
            mesh = _mesh(ax, alpha, u, maps[ell].T, x_lower=0.0, y_lower=0.0, y_upper=1.0, cmap="magma",
                         vmin=0.0, vmax=1.0)
            ax.set_xlabel(ALPHA_LABEL)
            if ell == 1:
                ax.set_title(r"layer 1: $Q_1$ per neuron", loc="left", fontsize=8)
            elif ell < L:
                ax.set_title(rf"layer {ell}: per neuron, mean over layer {ell - 1}", loc="left", fontsize=8)
            else:
                ax.set_title(rf"layer {L}: weights to the strongest readout, per neuron of layer {L - 1}", loc="left",
                             fontsize=8)
        axes[0].invert_yaxis()  # shared: strongest readouts at the top of every panel
        axes[0].set_ylabel(r"neuron quantile $u$ (strongest $|s|$ first)")
        _finish_neuron_maps(fig, mesh, data, title)
    return fig


def plot_neuron_maps(data: dict, *, title=None, max_maps=6):
    """Per-neuron maps of the equilibrium of a sweep with L ≥ 2 hidden layers (``replica-plot --neurons``).

    L ≥ 3 (front-aligned rules): one panel per layer against α (:func:`_equilibrium_layer_maps`). L = 2:

    Left: ``Q₁`` of every first-layer neuron against α, neurons ordered by the strength of their
    effective readout ``|s|`` (the neuron quantile ``u``: the fraction of neurons with a stronger readout,
    strongest at the top). Right: ``Q₂(v, s)`` of the weights between second-layer neurons with readout
    ``v`` and those first-layer neurons — against α for one readout value, otherwise one map (``|v|`` ×
    ``u``) per α for up to ``max_maps`` α values of the grid, stacked as the training set grows.

    Raises
    ------
    PlotError
        The file has no per-neuron maps (not a two-hidden-layer sweep of this version).
    """
    got = _equilibrium_neuron_maps(data)
    if got is None:
        raise PlotError("--neurons: the file has no per-neuron maps (neuron_overlap_layer_1): only sweeps of two or "
                        "more hidden layers with linear parts store them (L >= 3: on front-aligned rules)")
    u, q1, q2, v = got
    alpha = np.asarray(data["equilibrium"]["alpha"], dtype=float)
    deeper = _equilibrium_layer_maps(data)
    if deeper is not None:
        return _plot_deep_neuron_maps(data, alpha, u, deeper, title)
    matplotlib, plt = _mpl()
    # one row per readout strength |v| (the equations depend on v²), strongest first
    strengths, first = np.unique(np.round(np.abs(v), 12), return_index=True)
    order = first[np.argsort(-strengths, kind="stable")]
    multi = order.size > 1
    with figure_style():
        if multi:
            idx = np.unique(np.round(np.linspace(0, alpha.size - 1, min(max_maps, alpha.size))).astype(int))
            fig = plt.figure(figsize=(3.4 + 1.5 * idx.size, 3.4), layout="constrained")
            grid = fig.add_gridspec(1, 1 + idx.size, width_ratios=[2.2] + [1.0] * idx.size)
            ax1 = fig.add_subplot(grid[0])
            axes2 = [fig.add_subplot(grid[1 + k]) for k in range(idx.size)]
        else:
            fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6.8, 3.2), layout="constrained")
        mesh = _mesh(ax1, alpha, u, q1.T, x_lower=0.0, y_lower=0.0, y_upper=1.0, cmap="magma", vmin=0.0, vmax=1.0)
        ax1.invert_yaxis()
        ax1.set_xlabel(ALPHA_LABEL)
        ax1.set_ylabel(r"neuron quantile $u$ (strongest $|s|$ first)")
        ax1.set_title(r"layer 1: $Q_1$ per neuron", loc="left")
        if not multi:
            _mesh(ax2, alpha, u, q2[:, 0, :].T, x_lower=0.0, y_lower=0.0, y_upper=1.0, cmap="magma", vmin=0.0, vmax=1.0)
            ax2.invert_yaxis()
            ax2.set_xlabel(ALPHA_LABEL)
            ax2.set_title(r"layer 2: $Q_2(v, s)$ per first-layer neuron", loc="left")
        else:
            rows = np.arange(order.size)
            for ax, i in zip(axes2, idx):
                _mesh(ax, u, rows, q2[i][order], x_lower=0.0, x_upper=1.0, cmap="magma", vmin=0.0, vmax=1.0)
                ax.invert_yaxis()
                ax.set_title(rf"$\alpha = {alpha[i]:.3g}$", fontsize=8)
                ax.set_xlabel(r"$u$ (layer 1)")
                ax.set_yticks(rows, [f"{abs(x):.2g}" for x in v[order]] if ax is axes2[0] else [])
            axes2[0].set_ylabel(r"$|v|$ (layer 2, strongest first)")
        _finish_neuron_maps(fig, mesh, data, title)
    return fig


def binned_neuron_maps(data: dict, alphas, edges):
    """The theory's equilibrium per-neuron maps at ``alphas``, averaged on the quantile bins ``edges``.

    The measured maps (:func:`replica.simulations.measurements.neuron_quantile_maps`) are means over the neurons
    of a quantile bin; the theory's are on the nodes ``u_k = (k + ½)/n_q`` of equal weight, so the
    comparable number is the mean over the nodes inside each bin. Readout values ``±v`` (the equations
    depend on v²) are one group; groups are ordered strongest first, as in the measured maps.

    Parameters
    ----------
    data : dict
        A two-hidden-layer sweep (:func:`replica.workflow.io.read_sweep`) with per-neuron maps.
    alphas : array_like, shape (n,)
        Sample ratios; each takes the nearest α of the sweep's grid.
    edges : array_like, shape (bins + 1,)
        Increasing bin edges on [0, 1].

    Returns
    -------
    q1 : ndarray, shape (n, bins)
    q2 : ndarray, shape (n, n_groups, bins)
    strengths : ndarray, shape (n_groups,)
        The readout strengths ``|v|`` of the rows of ``q2``, strongest first.

    Raises
    ------
    PlotError
        The sweep has no per-neuron maps.
    """
    got = _equilibrium_neuron_maps(data)
    if got is None:
        raise PlotError("the sweep has no per-neuron maps (neuron_overlap_layer_1): only sweeps of two hidden "
                        "layers with linear parts store them")
    u, q1, q2, v = got
    grid = np.asarray(data["equilibrium"]["alpha"], dtype=float)
    rows = [int(np.argmin(np.abs(grid - a))) for a in np.atleast_1d(np.asarray(alphas, dtype=float))]
    edges = np.asarray(edges, dtype=float)
    which = np.clip(np.searchsorted(edges, u, side="right") - 1, 0, edges.size - 2)
    strengths = np.unique(np.round(np.abs(v), 12))[::-1]
    member = np.argmin(np.abs(np.abs(v)[:, None] - strengths[None, :]), axis=1)

    def binned(values):  # values (..., n_q) -> (..., bins), mean over the nodes of each bin
        out = np.full(values.shape[:-1] + (edges.size - 1,), np.nan)
        for b in range(edges.size - 1):
            if np.any(which == b):
                out[..., b] = np.mean(values[..., which == b], axis=-1)
        return out

    m1 = binned(q1[rows])
    by_group = np.stack([np.mean(q2[rows][:, member == g, :], axis=1) for g in range(strengths.size)], axis=1)
    return m1, binned(by_group), strengths


def plot_neuron_comparison(panels: dict, alphas, strengths, *, title=None):
    """Per-neuron maps side by side: theory and measurements, one row per α (``replica-figures neurons``).

    Each cell is a map over neuron quantiles (columns: first-layer neurons ordered by their effective
    readout ``|s|``, strongest first): its top row is the first layer's ``Q₁`` per neuron, the rows below
    the per-weight overlaps ``Q₂`` between the second-layer neurons of readout strength ``|v|`` and those
    first-layer neurons.

    Parameters
    ----------
    panels : dict
        ``{column title: (q1, q2)}`` with ``q1`` of shape (n_α, bins) and ``q2`` of shape
        (n_α, n_groups, bins), in the order of the columns.
    alphas : array_like, shape (n_α,)
    strengths : array_like, shape (n_groups,)
        ``|v|`` of the rows of ``q2``.
    title : str, optional
    """
    matplotlib, plt = _mpl()
    alphas = np.asarray(alphas, dtype=float)
    strengths = np.asarray(strengths, dtype=float)
    names = list(panels)
    labels = ["layer 1"] + [rf"layer 2, $|v|={x:.2g}$" for x in strengths]
    with figure_style():
        fig, axes = plt.subplots(alphas.size, len(names), figsize=(1.9 * len(names) + 1.6, 0.55 * (1 + strengths.size)
                                                                      * alphas.size + 1.0),
                                 layout="constrained", squeeze=False, sharex=True, sharey=True)
        mesh = None
        for j, name in enumerate(names):
            q1, q2 = (np.asarray(x, dtype=float) for x in panels[name])
            for i in range(alphas.size):
                ax = axes[i, j]
                image = np.vstack([q1[i][None, :], q2[i]])
                bins = image.shape[1]
                mesh = ax.pcolormesh((np.arange(bins + 1)) / bins, np.arange(image.shape[0] + 1) - 0.5, image,
                                     cmap="magma", vmin=0.0, vmax=1.0)
                ax.axhline(0.5, color="white", lw=0.8)
                ax.set_ylim(image.shape[0] - 0.5, -0.5)  # layer 1 on top (the axes share y: no invert_yaxis)
                if i == 0:
                    ax.set_title(name, fontsize=8)
                if j == 0:
                    ax.set_yticks(np.arange(len(labels)), labels, fontsize=7)
                    ax.set_ylabel(rf"$\alpha = {alphas[i]:.3g}$", fontsize=9)
        fig.supxlabel(r"first-layer neuron quantile $u$ (strongest effective readout $|s|$ first)", fontsize=8)
        cb = fig.colorbar(mesh, ax=axes, pad=0.01, fraction=0.03)
        cb.set_label("teacher–student overlap")
        if title:
            fig.suptitle(title, fontsize=9)
    return fig


def escape_alpha(alpha_t, error, level) -> float:
    """First sample ratio at which a training trace falls below ``level`` (NaN if it never does).

    Parameters
    ----------
    alpha_t, error : array_like, shape (m,)
        Samples seen per d² and the test error along one run, in increasing ``alpha_t``.
    level : float or array_like, shape (m,)
        The error that counts as having left the metastable branch (e.g. midway between the
        universal branch and the equilibrium at each ``alpha_t``).

    Returns
    -------
    float
        ``alpha_t`` of the first crossing, linearly interpolated between the two trace points around it.
    """
    a = np.asarray(alpha_t, dtype=float)
    gap = np.asarray(error, dtype=float) - np.broadcast_to(np.asarray(level, dtype=float), a.shape)
    below = np.flatnonzero(gap < 0)
    if below.size == 0:
        return float("nan")
    i = int(below[0])
    if i == 0:
        return float(a[0])
    return float(a[i - 1] + (a[i] - a[i - 1]) * gap[i - 1] / (gap[i - 1] - gap[i]))


def plot_training(theory: dict, *, adam=None, online=None, title=None):
    """Training from a random start against the theory's branches (``replica-figures trapped``).

    Parameters
    ----------
    theory : dict
        A sweep (:func:`replica.workflow.io.read_sweep`): every branch, equilibrium solid,
        metastable dashed.
    adam : dict, optional
        ``{label: experiment group}`` of Adam runs (``mmse_mean`` ± ``mmse_sem`` against ``alpha``).
    online : dict, optional
        ``{label: (alpha_t, error_mean, error_sem)}``: online-SGD traces, the test error against the
        samples seen per d², mean ± s.e.m. over teachers.
    title : str, optional
    """
    matplotlib, plt = _mpl()
    with figure_style():
        fig, ax = plt.subplots(figsize=(7.4, 4.0), layout="constrained")
        _draw_curves(ax, theory)
        # online SGD: thin black lines told apart by open markers (none of the branch colours, none of the
        # marker-less grey styles of the legend: equilibrium, metastable, unstable), so that no trace reads as theory
        highest = []
        for k, (label, (a, y, e)) in enumerate((online or {}).items()):
            a, y, e = (np.asarray(x, dtype=float) for x in (a, y, e))
            ax.plot(a, y, color="black", lw=0.9, marker=TRAINING_MARKERS[k % len(TRAINING_MARKERS)], ms=3.5,
                    markevery=max(1, a.size // 12), mfc="white", mew=0.8, label=label, zorder=4)
            ax.fill_between(a, y - e, y + e, color="0.5", alpha=0.15, lw=0, zorder=4)
            highest.append(np.nanmax(y + np.nan_to_num(e), initial=0.0))
        for k, (label, g) in enumerate((adam or {}).items()):
            ax.errorbar(np.asarray(g["alpha"], float), np.asarray(g["mmse_mean"], float),
                        yerr=np.asarray(g["mmse_sem"], float), fmt=_EXPERIMENT_MARKERS[k + 1], ms=4, mfc="white",
                        mec="black", color="black", elinewidth=0.8, capsize=2, lw=0, label=label, zorder=5)
        ax.set_ylabel("test error (theory: Bayes-optimal mmse)")
        for g in (adam or {}).values():
            highest.append(np.nanmax(np.asarray(g["mmse_mean"], float) + np.asarray(g["mmse_sem"], float),
                                     initial=0.0))
        universal = theory["branches"].get("universal", {}).get("mmse")
        top = np.nanmax(np.asarray(universal if universal is not None else theory["equilibrium"]["mmse"], float))
        # the theory's scale, raised to hold every training curve (a random start begins above the branches)
        ax.set_ylim(0.0, max(2.0 * float(top), 1.05 * max(highest, default=0.0)))
        ax.set_xlim(0.0, float(np.max(theory["equilibrium"]["alpha"])))
        fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize=7)
        if title:
            ax.set_title(title, fontsize=8)
    return fig


#: markers of the online-SGD traces of :func:`plot_training` (the Adam points take _EXPERIMENT_MARKERS[1:])
TRAINING_MARKERS = ("v", "d", "P", "X")

#: colours of the per-layer transition lines of deep phase diagrams (layer 1, 2, …)
LAYER_COLORS = ("#1f77b4", "#ff5a36", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")


def _same_column(a, b) -> bool:
    """Whether two columns of per-row transitions are the same line (NaN where both are NaN)."""
    both = np.isfinite(a) & np.isfinite(b)
    return bool(np.array_equal(np.isfinite(a), np.isfinite(b))
                and np.allclose(a[both], b[both], rtol=1e-9, atol=0.0))


def _layer_groups(columns) -> list:
    """Layers (0-based) grouped by identical columns: [[0, 1], [2]] when layers 1 and 2 share their line."""
    groups = []
    for ell in range(columns.shape[1]):
        for g in groups:
            if _same_column(columns[:, g[0]], columns[:, ell]):
                g.append(ell)
                break
        else:
            groups.append([ell])
    return groups


def _layers_words(group) -> str:
    return ("layer " if len(group) == 1 else "layers ") + _and([str(ell + 1) for ell in group])


def _layer_transition_lines(ax, data, values, *, left=None):
    """Per-layer lines of a deep phase diagram: where layer ℓ is first learned at equilibrium
    (``alpha_c_layer``, solid) and the spinodal of the branch it goes to (``alpha_sp_layer``, dashed),
    one colour per layer; layers with the same line on every row share one line and one legend entry
    ("layers 1 and 2 learned", drawn in the colour of the last of them: a line hidden under another is not
    listed). A layer already learned at the first α of a row (no ``alpha_c_layer`` there) gets a marker at
    the left edge ``left`` of that row. Returns the legend handles ([] without per-layer data): only what is
    drawn."""
    from matplotlib.lines import Line2D

    from ..continuation import learned_layers

    ac = data.get("alpha_c_layer")
    if ac is None:
        return []
    ac = np.asarray(ac, dtype=float)
    sp = np.asarray(data.get("alpha_sp_layer", np.full(ac.shape, np.nan)), dtype=float)
    n_layers = ac.shape[1]
    handles = []
    for group in _layer_groups(ac):
        ell = group[-1]
        color = LAYER_COLORS[ell % len(LAYER_COLORS)]
        m_c = np.isfinite(ac[:, ell])
        if m_c.any():
            ax.plot(ac[m_c, ell], values[m_c], color=color, ls="-", marker="s", ms=4, mec="black", mew=0.6, lw=2.2,
                    zorder=3)
            handles.append(Line2D([], [], color=color, ls="-", marker="s", ms=4, mec="black", mew=0.6, lw=2.2,
                                  label=rf"{_layers_words(group)} learned: $\alpha_c$"))
    for group in _layer_groups(sp):
        ell = group[-1]
        color = LAYER_COLORS[ell % len(LAYER_COLORS)]
        m_s = np.isfinite(sp[:, ell])
        if m_s.any():
            ax.plot(sp[m_s, ell], values[m_s], color=color, ls=(0, (3, 2)), marker="o", mfc="white", ms=4,
                    mec=color, mew=0.8, lw=1.2, zorder=4)
            handles.append(Line2D([], [], color=color, ls=(0, (3, 2)), marker="o", mfc="white", ms=4, mec=color,
                                  mew=0.8, lw=1.2, label=rf"{_layers_words(group)}: spinodal $\alpha_{{\rm sp}}$"))
    # layers learned below the grid: no α_c on the row, and learned by the row's equilibrium at its first α
    # (files without per-row branches: a layer with no line on any row)
    branch = data.get("branch")
    done = np.asarray(data.get("done", np.ones(values.size, bool)), bool)
    if left is None:
        left = float(np.min(data["alpha"]))
    for ell in range(n_layers):
        if branch is not None and np.size(branch):
            first = np.asarray(branch, dtype=object)[:, 0]
            rows = done & ~np.isfinite(ac[:, ell]) & np.array(
                [ell + 1 in learned_layers(str(b), n_layers) for b in first], dtype=bool)
        else:
            rows = done & ~np.isfinite(ac[:, ell]) if not np.isfinite(sp[:, ell]).any() else np.zeros(done.shape, bool)
        if rows.any():
            color = LAYER_COLORS[ell % len(LAYER_COLORS)]
            ax.plot(np.full(rows.sum(), left), values[rows], ls="none", marker="<", ms=5, color=color, mec="black",
                    mew=0.6, zorder=5, clip_on=False)
            handles.append(Line2D([], [], color=color, ls="none", marker="<", ms=5, mec="black", mew=0.6,
                                  label=f"layer {ell + 1} learned below the grid"))
    return handles


def plot_spectrum(data: dict, *, title=None, logy=False):
    """Figure of a ``replica-spectrum`` file: ``m_S``, ``mmse_S``, ``ι`` against λ and the densities.

    Parameters
    ----------
    data : dict
        Output of :func:`replica.workflow.io.read_spectrum` (``lambda``, ``m``, ``mmse``, ``iota``,
        optionally ``x`` and ``density`` of shape (n_lambda, N)).
    title : str, optional, keyword-only
    logy : bool, keyword-only
        Logarithmic axis for ``mmse_S``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _, plt = _mpl()
    with figure_style():
        lam = np.asarray(data["lambda"], dtype=float)
        has_density = "density" in data and "x" in data
        fig, axes = plt.subplots(1, 3 if has_density else 2, figsize=(13.5 if has_density else 9.5, 4.0),
                                 constrained_layout=True)
        pos = lam > 0
        xscale = "log" if np.count_nonzero(pos) > 2 and lam[pos].max() / lam[pos].min() > 50 else "linear"
        ax = axes[0]
        ax.plot(lam[pos], np.asarray(data["m"])[pos], color="C0", label=r"$m_S(\lambda)$")
        ax.plot(lam[pos], np.asarray(data["mmse"])[pos], color="C3", label=r"$\mathrm{mmse}_S(\lambda) = 1 - m_S$")
        ax.set_xscale(xscale)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel(r"SNR $\lambda$")
        ax.set_title("overlap and MMSE")
        ax.legend()
        ax = axes[1]
        ax.plot(lam, np.asarray(data["iota"]), color="C2")
        ax.set_xscale(xscale)
        ax.set_xlabel(r"SNR $\lambda$")
        ax.set_ylabel(r"$\iota(\lambda) = \frac{1}{4}\int_0^\lambda \mathrm{mmse}_S$")
        ax.set_title("mutual information per $d^2$")
        if has_density:
            ax = axes[2]
            x, rho = np.asarray(data["x"]), np.asarray(data["density"])
            rows = np.unique(np.linspace(0, lam.size - 1, min(6, lam.size)).round().astype(int))
            for k, i in enumerate(rows):
                ax.plot(x[i], rho[i], color=f"C{k}", lw=1.2, label=rf"$\lambda = {lam[i]:.3g}$")
            ax.set_xlabel("x")
            ax.set_ylabel(r"$\rho_\lambda(x)$")
            ax.set_title(r"spectral density of $\sqrt{\lambda} S + Z$")
            ax.legend(fontsize=8)
        params = data.get("attrs", {}).get("parameters", {})
        fig.suptitle(title or f"symmetric HCIZ channel, γ = {params.get('gamma')}, readout {params.get('readout')}")
    return fig


def plot_sgd(path, *, title=None, logy=False):
    """Figure of a ``replica-sgd`` file: test error and order parameters against time, and the
    teacher–student overlap histograms at four times (:mod:`replica.workflow.sgd_plots`; the replica
    levels are drawn only when stored in the file — ``replica-sgd --plot`` can compute them).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from replica.workflow.sgd_plots import plot_overlap_histograms, plot_test_error

    _, plt = _mpl()
    with figure_style():
        fig = plt.figure(figsize=(14.0, 6.4), constrained_layout=True)
        outer = fig.add_gridspec(1, 2, width_ratios=[1.1, 1.0])
        left = outer[0].subgridspec(2, 1, height_ratios=[3, 2])
        a0 = fig.add_subplot(left[0])
        a1 = fig.add_subplot(left[1], sharex=a0)
        right = outer[1].subgridspec(2, 2)
        hist_axes = np.array([fig.add_subplot(right[i, j]) for i in range(2) for j in range(2)])
        import warnings

        with warnings.catch_warnings():   # the panels call tight_layout; this figure uses constrained layout
            warnings.simplefilter("ignore", UserWarning)
            plot_test_error(path, theory=False, ax=(a0, a1))
            plot_overlap_histograms(path, ax=hist_axes)
        if title:
            fig.suptitle(title)
    return fig


def plot_file(path, *, experiments=(), references=(), kind="auto", title=None, logy=False):
    """Figure of any file written by the package (dispatch on its kind).

    Parameters
    ----------
    path : str or Path
        Sweep, phase-diagram or experiment HDF5 file.
    experiments : sequence of paths, keyword-only
        Extra experiment files overlaid on a sweep's learning curve.
    references : sequence of dict, keyword-only
        Reference curves (:func:`read_reference`).
    kind : str, keyword-only
        ``auto``, ``curve``, ``overlaps``, ``layers``, ``neurons`` (sweeps: :func:`plot_neuron_maps`) or
        ``phase``.

    Raises
    ------
    PlotError
        Unreadable or incomplete file, or ``kind`` not available for this file.
    """
    from .io import IncompleteFileError, read_experiments, read_phase_diagram, read_phase_lines, read_sweep
    from .safe_write import ResultFileError, file_kind_of, open_h5

    path = Path(path)
    try:
        with open_h5(path, option="FILE.h5",
                     kinds=("sweep", "phase_diagram", "phase_lines", "experiment", "spectrum", "sgd")) as h5:
            fkind = file_kind_of(h5)
            complete = int(h5.attrs.get("complete", 1)) == 1
        if not complete and fkind != "phase_diagram":
            raise PlotError(f"FILE.h5: {path} is the checkpoint of an interrupted run; finish it with the same "
                            "command and --resume")
        extra = {}
        for e in experiments or ():
            got = read_experiments(e, option="--experiment")
            if not got:
                raise PlotError(f"--experiment: {e} has no experiments/<sampler>/<init> groups")
            extra.update(got)
    except ResultFileError as exc:
        raise PlotError(str(exc)) from None
    try:
        if fkind == "phase_diagram":
            if kind not in ("auto", "phase"):
                raise PlotError(f"--kind {kind}: {path} is a phase diagram (use --kind phase or auto)")
            return plot_phase_diagram(read_phase_diagram(path, allow_incomplete=True), title=title, logy=logy)
        if fkind == "phase_lines":
            if kind not in ("auto", "phase"):
                raise PlotError(f"--kind {kind}: {path} holds traced phase lines (use --kind phase or auto)")
            return plot_phase_lines(read_phase_lines(path), title=title, logy=logy)
        if kind == "phase":
            raise PlotError(f"--kind phase: {path} is not a phase-diagram file")
        if fkind in ("spectrum", "sgd", "experiment") and kind != "auto":
            name = {"spectrum": "a spectrum", "sgd": "an SGD", "experiment": "an experiment"}[fkind]
            raise PlotError(f"--kind {kind}: {path} is {name} file, drawn only with --kind auto "
                            "(curve, overlaps and layers are parts of sweep figures)")
        if fkind == "sweep" and kind == "neurons":
            for given, opt in ((extra, "--experiment"), (references, "--reference"), (logy, "--logy")):
                if given:  # the per-neuron maps have no learning curve to draw them on
                    raise PlotError(f"{opt}: not drawn on the per-neuron maps of --kind neurons (use --kind auto "
                                    "or curve)")
            return plot_neuron_maps(read_sweep(path), title=title)
        if fkind == "sweep":
            return plot_sweep(read_sweep(path), experiments=extra, references=references, kind=kind, title=title,
                              logy=logy)
        if fkind == "spectrum":
            from .io import read_spectrum

            return plot_spectrum(read_spectrum(path), title=title, logy=logy)
        if fkind == "sgd":
            return plot_sgd(path, title=title, logy=logy)
        if fkind == "experiment":
            exps = read_experiments(path, option="FILE.h5")
            exps.update(extra)
            import json

            with open_h5(path, option="FILE.h5") as h5:
                try:
                    params = json.loads(h5.attrs.get("parameters", "{}"))
                except (TypeError, ValueError):
                    params = {}
            return plot_experiments(exps, parameters=params, title=title, logy=logy)
    except IncompleteFileError as exc:
        raise PlotError(f"FILE.h5: {exc}") from None
    except ResultFileError as exc:
        raise PlotError(str(exc)) from None
    except KeyError as exc:
        raise PlotError(f"FILE.h5: {path} lacks {exc} (not written by this package?)") from None
    raise PlotError(f"FILE.h5: {path} is not a sweep, phase-diagram, phase-lines, experiment, spectrum or SGD file")


def save_figure(fig, path, *, dpi=200):
    """Save ``fig`` atomically (temporary file, then rename); the format follows the suffix."""
    import os
    import tempfile

    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=directory)
    os.close(fd)
    try:
        with figure_style():  # the style's savefig parameters, and ticks created while drawing
            fig.savefig(tmp, dpi=dpi, format=path.suffix.lstrip(".").lower().replace("jpg", "jpeg"))
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        import matplotlib.pyplot as plt

        plt.close(fig)
    return path
