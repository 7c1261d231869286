"""Properties every figure of the package must have, read from the matplotlib objects (not pixels).

:func:`check_figure` is called on every figure the tests render (``replica-plot`` of every file kind
and ``--kind``, every ``replica-figures`` figure in its quick form, the SGD figures, the depth figure):

* **one style**: every visible text (titles, axis labels, tick labels, legend entries) is set in the
  font family of the package style ``replica/workflow/replica.mplstyle``;
* **legends in words**: no legend entry carries a raw dataset or file name (a ``snake_case`` key
  outside mathtext such as ``barbier2025_shallow``, ``info_mean``, ``layers_1_2``, or ``.csv``);
* **integer axes have integer ticks**: an axis whose label counts something (layers, depth) has
  ticks only at integers;
* **physical limits**: α, the label-noise variance Δ, the width ratio γ and the (linear) test error
  axes start at ≥ 0;
* **no gaps in equilibrium curves**: on learning-curve panels, the equilibrium curve (solid lines of
  width ≥ 2) covers one interval of α without gaps wider than ``gap_tol`` (the curve runs through the
  located changes of the equilibrium, not only through grid points);
* **legend entries told apart**: no two entries of one legend have lines that look alike (the same
  dash class, :func:`dash_class`, and marker, colours within 0.2, widths within a factor 2).

Also here, for the tests of single figures: :func:`undrawn_legend_entries` (a legend entry with nothing of
its look drawn), :func:`legends_over_curves` (a legend box over a line of data), :func:`lines_outside_axes`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

#: axis labels that count (layers, depth): ticks must be integers
INTEGER_AXIS = re.compile(r"number of hidden layers|depth L|^layer \$\\ell\$$|^layer / product$")
#: axis labels of quantities that are ≥ 0 (α, Δ, γ, errors on a linear axis)
NONNEGATIVE_AXIS = re.compile(r"sample ratio|label-noise variance|width ratio|test error|classification error"
                              r"|threshold \$\\alpha\$")
#: raw dataset/file names: snake_case keys outside mathtext, file suffixes, year-suffixed folder names
RAW_NAME = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|\.csv|\.h5|[a-z]+20\d\d")


def style_params():
    """The rc parameters of the package style file (read independently of the plotting code)."""
    from importlib.resources import files

    import matplotlib

    path = files("replica.workflow") / "replica.mplstyle"
    return matplotlib.rc_params_from_file(str(path), use_default_template=False)


def _outside_math(text: str) -> str:
    return re.sub(r"\$[^$]*\$", "", text)


def legend_texts(fig) -> list:
    out = []
    for leg in list(fig.legends) + [ax.get_legend() for ax in fig.axes]:
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    return out


def raw_legend_entries(fig) -> list:
    """Legend entries that carry a raw dataset or file name."""
    return [t for t in legend_texts(fig) if RAW_NAME.search(_outside_math(t))]


def _visible_texts(fig):
    fig.canvas.draw()  # tick labels exist after a draw
    texts = [fig._suptitle] if getattr(fig, "_suptitle", None) is not None else []
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        texts += list(ax.get_xticklabels()) + list(ax.get_yticklabels())
    for leg in list(fig.legends) + [ax.get_legend() for ax in fig.axes]:
        if leg is not None:
            texts += list(leg.get_texts())
    return [t for t in texts if t is not None and t.get_visible() and t.get_text().strip()]


def unstyled_texts(fig, family=None) -> list:
    """Visible texts not set in the style's font family."""
    family = family or style_params()["font.family"]
    want = [f.lower() for f in family]
    return [t.get_text() for t in _visible_texts(fig) if [f.lower() for f in t.get_fontfamily()] != want]


def _axis_ticks(axis, lim):
    lo, hi = sorted(lim)
    ticks = np.asarray(axis.get_majorticklocs(), dtype=float)
    return ticks[(ticks >= lo - 1e-9 * max(1.0, abs(lo))) & (ticks <= hi + 1e-9 * max(1.0, abs(hi)))]


def non_integer_ticks(fig) -> list:
    """(axis label, tick) of every non-integer tick on an axis that counts."""
    bad = []
    for ax in fig.axes:
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            label = axis.label.get_text()
            if INTEGER_AXIS.search(label):
                bad += [(label, float(t)) for t in _axis_ticks(axis, lim) if abs(t - round(t)) > 1e-9]
    return bad


def negative_limits(fig) -> list:
    """(axis label, lower limit) of every axis of a nonnegative quantity that starts below 0."""
    bad = []
    for ax in fig.axes:
        for axis, lim, scale in ((ax.xaxis, ax.get_xlim(), ax.get_xscale()),
                                 (ax.yaxis, ax.get_ylim(), ax.get_yscale())):
            label = axis.label.get_text()
            if scale == "linear" and NONNEGATIVE_AXIS.search(label) and min(lim) < 0:
                bad.append((label, float(min(lim))))
    return bad


def equilibrium_lines(ax) -> list:
    """The solid equilibrium lines of a learning-curve panel (width ≥ 2, solid, with data)."""
    return [ln for ln in ax.get_lines() if len(ln.get_xdata()) and ln.get_linewidth() >= 2.0
            and ln.get_linestyle() == "-" and ln.get_zorder() == 3]


def equilibrium_gaps(ax, tol) -> list:
    """Intervals of α, inside the range of the equilibrium lines of ``ax``, covered by none of them."""
    spans = sorted((float(np.min(ln.get_xdata())), float(np.max(ln.get_xdata()))) for ln in equilibrium_lines(ax))
    gaps, reach = [], None
    for lo, hi in spans:
        if reach is not None and lo - reach > tol:
            gaps.append((reach, lo))
        reach = hi if reach is None else max(reach, hi)
    return gaps


def curve_panels(fig) -> list:
    return [ax for ax in fig.axes if ax.get_title(loc="left") in ("learning curve", "classification error")
            or ax.get_gid() == "learning-curve"]


def check_figure(fig, name="", *, gap_tol=1e-6, alpha_range=None):
    """Assert every property of the module docstring on ``fig``; ``alpha_range`` (lo, hi): the α range the
    equilibrium curve of the learning-curve panels must span (default: not checked)."""
    assert not (bad := unstyled_texts(fig)), f"{name}: texts not in the package style: {bad[:5]}"
    assert not (bad := raw_legend_entries(fig)), f"{name}: legend entries with raw names: {bad}"
    assert not (bad := non_integer_ticks(fig)), f"{name}: non-integer ticks on counting axes: {bad}"
    assert not (bad := negative_limits(fig)), f"{name}: axes of nonnegative quantities below 0: {bad}"
    assert not (bad := look_alike_entries(fig)), f"{name}: legend entries that look alike: {bad}"
    for ax in curve_panels(fig):
        lines = equilibrium_lines(ax)
        assert lines, f"{name}: no equilibrium curve on the panel {ax.get_title(loc='left')!r}"
        gaps = equilibrium_gaps(ax, gap_tol)
        assert not gaps, f"{name}: the equilibrium curve has gaps in alpha: {gaps}"
        if alpha_range is not None:
            xs = np.concatenate([np.asarray(ln.get_xdata(), float) for ln in lines])
            assert xs.min() <= alpha_range[0] + gap_tol and xs.max() >= alpha_range[1] - gap_tol, \
                f"{name}: the equilibrium curve spans {xs.min():.4g}..{xs.max():.4g}, not {alpha_range}"


def theory_and_published_ranges(fig):
    """For a figure with theory lines (legend "this package…") and published points or curves (legend
    naming a paper, "… et al. …", or "published"): ((lo, hi) of the theory, (lo, hi) of the published data) in α."""
    theory, published = [], []
    for ax in fig.axes:
        if not ax.xaxis.label.get_text().startswith("sample ratio"):
            continue
        for ln in ax.get_lines():
            label = ln.get_label()
            if label.startswith("this package") and len(ln.get_xdata()):
                theory.append(np.asarray(ln.get_xdata(), float))
        handles, labels = ax.get_legend_handles_labels()
        for h, label in zip(handles, labels):
            if "et al." in label or "published" in label:
                line = h if hasattr(h, "get_xdata") else getattr(h, "lines", (None,))[0]  # errorbar: its data line
                if line is not None and len(line.get_xdata()):
                    published.append(np.asarray(line.get_xdata(), float))
    if not theory or not published:
        return None

    def span(xs):
        x = np.concatenate(xs)
        return float(np.nanmin(x)), float(np.nanmax(x))
    return span(theory), span(published)


def checked_figures(monkeypatch, **kwargs):
    """Check every figure that :func:`replica.workflow.plotting.save_figure` writes (``replica-figures``
    draws through it) with :func:`check_figure`, and, where the figure has theory lines and published data,
    that the theory covers the published α range. Returns ``{figure name: problem or ""}``; the caller
    asserts that every value is empty (errors inside a figure builder would be turned into exit codes)."""
    from replica.workflow import plotting

    original = plotting.save_figure
    seen = {}

    def save_figure(fig, path, **kw):
        name = Path(str(path)).stem
        try:
            check_figure(fig, name, **kwargs)
            ranges = theory_and_published_ranges(fig)
            if ranges is not None:
                (t_lo, t_hi), (p_lo, p_hi) = ranges
                assert t_lo <= p_lo + 1e-9 and t_hi >= p_hi - 1e-9, \
                    f"{name}: theory drawn over alpha {t_lo:.4g}..{t_hi:.4g}, published data over {p_lo:.4g}..{p_hi:.4g}"
            seen[name] = ""
        except AssertionError as exc:
            seen[name] = str(exc)
        return original(fig, path, **kw)

    monkeypatch.setattr(plotting, "save_figure", save_figure)
    return seen


# --------------------------------------------------------------------------- styles, legends (issue 41, N14)
def _no_line(line) -> bool:
    return str(line.get_linestyle()) in ("None", "none", " ", "")


def dash_class(line) -> str:
    """The pattern of a line in words a reader tells apart: ``solid``, ``none`` (markers only), else the
    on-segments of one period of its dashes in units of its width, ``.`` a dot (≤ 1.5), ``-`` a dash (≤ 5),
    ``=`` a long dash, reduced to its shortest period and rotated to the smallest string ("-.-." → "-.",
    ":" → ".", "--" → "-", "-." → "=.")."""
    if _no_line(line):
        return "none"
    _, seq = line._unscaled_dash_pattern
    if not seq:
        return "solid"
    tokens = "".join("." if s <= 1.5 else "-" if s <= 5.0 else "=" for s in list(seq)[0::2])
    n = len(tokens)
    for p in range(1, n + 1):
        if n % p == 0 and tokens[:p] * (n // p) == tokens:
            tokens = tokens[:p]
            break
    return min(tokens[i:] + tokens[:i] for i in range(len(tokens)))


def _marker(line) -> str:
    m = line.get_marker()
    return "none" if m in (None, "None", "none", "", " ") else str(m)


def _rgb(color):
    from matplotlib.colors import to_rgb

    return np.asarray(to_rgb(color), dtype=float)


def _legend_lines(legend):
    """(label, Line2D) of the line handles of a legend (errorbar containers: their data line)."""
    out = []
    for handle, text in zip(legend.legend_handles, legend.get_texts()):
        line = handle if hasattr(handle, "get_linestyle") and hasattr(handle, "get_xdata") else None
        if line is not None:
            out.append((text.get_text(), line))
    return out


def _legends(fig):
    return [leg for leg in list(fig.legends) + [ax.get_legend() for ax in fig.axes] if leg is not None]


def look_alike(a, b) -> bool:
    """Whether two lines look the same to a reader: the same dash class and marker, colours within 0.2
    (RGB distance) and widths within a factor 2."""
    if dash_class(a) != dash_class(b) or _marker(a) != _marker(b):
        return False
    if float(np.linalg.norm(_rgb(a.get_color()) - _rgb(b.get_color()))) >= 0.2:
        return False
    wa, wb = float(a.get_linewidth()), float(b.get_linewidth())
    return dash_class(a) == "none" or max(wa, wb) < 2.0 * max(min(wa, wb), 1e-9)


def look_alike_entries(fig) -> list:
    """Pairs of labels of one legend whose line handles look alike (:func:`look_alike`)."""
    bad = []
    for leg in _legends(fig):
        lines = _legend_lines(leg)
        for i, (la, a) in enumerate(lines):
            for lb, b in lines[i + 1:]:
                if la != lb and look_alike(a, b):
                    bad.append((la, lb))
    return bad


def _drawn_lines(fig):
    return [ln for ax in fig.axes for ln in ax.get_lines() if ln.get_visible() and len(ln.get_xdata())]


def undrawn_legend_entries(fig) -> list:
    """Legend entries with nothing of their look drawn: a line entry with no line of data of the same dash
    class, marker and colour (0.2) in the figure's axes; a hatched entry with no hatched collection or patch
    of data."""
    from matplotlib.collections import Collection
    from matplotlib.patches import Patch

    lines = _drawn_lines(fig)
    hatched = [a for ax in fig.axes for a in list(ax.collections) + list(ax.patches)
               if a.get_visible() and a.get_hatch()
               and (not isinstance(a, Collection) or any(len(p.vertices) for p in a.get_paths()))]
    bad = []
    for leg in _legends(fig):
        for handle, text in zip(leg.legend_handles, leg.get_texts()):
            label = text.get_text()
            if hasattr(handle, "get_xdata"):
                if not any(dash_class(ln) == dash_class(handle) and _marker(ln) == _marker(handle)
                           and float(np.linalg.norm(_rgb(ln.get_color()) - _rgb(handle.get_color()))) < 0.2
                           for ln in lines):
                    bad.append(label)
            elif isinstance(handle, Patch) and handle.get_hatch():
                if not any(a.get_hatch() == handle.get_hatch() for a in hatched):
                    bad.append(label)
    return bad


def legends_over_curves(fig, samples=24) -> list:
    """(legend's first entry, axes title) of every legend drawn over a line of data of an axes: a vertex of
    the line, or a point of one of its segments, inside the legend's box (display coordinates, after a draw)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    bad = []
    for leg in _legends(fig):
        box = leg.get_window_extent(renderer)
        first = leg.get_texts()[0].get_text() if leg.get_texts() else ""
        for ax in fig.axes:
            if not ax.get_visible() or not ax.axison:
                continue
            clip = ax.get_window_extent(renderer)
            for ln in ax.get_lines():
                if not ln.get_visible() or len(ln.get_xdata()) == 0:
                    continue
                xy = ln.get_transform().transform(np.column_stack([np.asarray(ln.get_xdata(), float),
                                                                   np.asarray(ln.get_ydata(), float)]))
                xy = xy[np.all(np.isfinite(xy), axis=1)]
                if len(xy) > 1 and not _no_line(ln):
                    t = np.linspace(0.0, 1.0, samples)[:, None, None]
                    xy = (xy[:-1][None] * (1 - t) + xy[1:][None] * t).reshape(-1, 2)
                inside_axes = ((xy[:, 0] >= clip.x0) & (xy[:, 0] <= clip.x1) & (xy[:, 1] >= clip.y0)
                               & (xy[:, 1] <= clip.y1))
                inside = ((xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1))
                if np.any(inside & inside_axes):
                    bad.append((first, ax.get_title(loc="left")))
                    break
    return bad


def lines_outside_axes(ax, gids=None) -> list:
    """Labels (or gids) of the lines of data of ``ax`` with points outside its limits."""
    x0, x1 = sorted(ax.get_xlim())
    y0, y1 = sorted(ax.get_ylim())
    bad = []
    for ln in ax.get_lines():
        x, y = np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)
        ok = np.isfinite(x) & np.isfinite(y)
        if ok.any() and (np.any(x[ok] < x0) or np.any(x[ok] > x1) or np.any(y[ok] < y0) or np.any(y[ok] > y1)):
            bad.append(ln.get_label())
    return bad
