"""Figures of ``replica-sgd`` runs (reads the HDF5 written by :func:`replica.workflow.sgd_results.write_sgd`).

* :func:`plot_overlap_histograms` — histograms of the ``k²`` teacher–student cosines at four
  times (initialization, Gaussian closure, specialization, refinement), logarithmic counts so
  that the outliers stand out from the Gaussian bulk; the bulk's Gaussian fit is overlaid.
* :func:`plot_test_error` — test error against ``t = n/(kd)`` with the replica levels of the
  universal branch and of the Bayes-optimal curve at the same number of samples
  (``α = n/d² = (k/d) t``), and a second panel with the learned linear/quadratic parts, the
  specialized fraction and the fraction of positive matches.  When the file holds the group
  ``closure/`` (``replica-sgd --closure``), the Gaussian-closure prediction
  (:mod:`replica.simulations.closure`) is drawn dashed over the simulated curves and the histograms.

matplotlib is imported inside the functions.  Usage: ``replica-sgd --plot FILE.h5`` or
``python -m replica.workflow.sgd_plots FILE.h5 [PREFIX]``.
"""

from __future__ import annotations

import logging
import math
import sys
from pathlib import Path

import numpy as np

__all__ = ["stage_times", "plot_overlap_histograms", "plot_test_error", "make_figures"]

logger = logging.getLogger(__name__)

STAGES = ("initialization", "Gaussian closure", "specialization", "refinement")


def _styled(function):
    """Run a figure function inside the package style (:func:`replica.workflow.style.figure_style`)."""
    import functools

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        from replica.workflow.style import figure_style

        with figure_style():
            return function(*args, **kwargs)

    return wrapper


def _load(data):
    if isinstance(data, (str, Path)):
        from .sgd_results import read_sgd

        return read_sgd(data)
    return data


def stage_times(data):
    """Four representative recording times, one per stage.

    Parameters
    ----------
    data : dict or path
        Output of :func:`replica.workflow.sgd_results.read_sgd`.

    Returns
    -------
    list of (str, int)
        ``(stage name, index into data["histogram_times"])``.

    Notes
    -----
    ``t_half`` = time at which the specialized fraction reaches half its final value
    (:func:`replica.workflow.sgd_results.specialization_time` with ``relative=True``); ``t_onset`` = the
    same with a tenth of it.  Gaussian closure: ``t_onset/3`` (the quadratic part is being
    learned, no outlier yet); specialization: ``t_half``; refinement: the last record.
    Without specialization the three later times are spread log-uniformly.
    """
    from .sgd_results import specialization_time

    data = _load(data)
    times = np.asarray(data["histogram_times"], dtype=float)
    fraction = np.asarray(data["specialized_fraction"], dtype=float)
    positive = times[times > 0]
    t_half = specialization_time(data["time"], fraction, level=0.5, relative=True)
    t_onset = specialization_time(data["time"], fraction, level=0.1, relative=True)
    if math.isfinite(t_half) and math.isfinite(t_onset) and positive.size:
        targets = [0.0, max(t_onset / 3.0, positive[0]), t_half, times[-1]]
    else:
        lo, hi = (positive[0], positive[-1]) if positive.size else (1.0, 1.0)
        targets = [0.0] + list(np.exp(np.linspace(math.log(lo), math.log(hi), 4))[1:])
    out = []
    for name, target in zip(STAGES, targets):
        if target <= 0:
            index = 0
        else:
            index = int(np.argmin(np.abs(np.log(np.maximum(times, 1e-300)) - math.log(target))))
        out.append((name, index))
    return out


@_styled
def plot_overlap_histograms(data, *, indices=None, threshold=None, ax=None):
    """Histograms of the teacher–student cosines at four times.

    Parameters
    ----------
    data : dict or path
        Output of :func:`replica.workflow.sgd_results.read_sgd`.
    indices : list of (str, int), optional, keyword-only
        Panels as ``(label, row of overlap_histograms)``; default :func:`stage_times`.
    threshold : float, optional, keyword-only
        Specialization threshold drawn as dotted lines (default: the run's).
    ax : array of 4 matplotlib axes, optional, keyword-only

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    data = _load(data)
    params = data["parameters"]
    threshold = params.get("threshold", 0.5) if threshold is None else threshold
    edges = np.asarray(data["overlap_bin_edges"], dtype=float)
    centers = 0.5 * (edges[1:] + edges[:-1])
    widths = np.diff(edges)
    hist = np.asarray(data["overlap_histograms"], dtype=float)
    times = np.asarray(data["histogram_times"], dtype=float)
    matched = np.asarray(data["matched_overlap"], dtype=float)
    indices = stage_times(data) if indices is None else indices
    if ax is None:
        fig, axes = plt.subplots(1, len(indices), figsize=(3.4 * len(indices), 3.5), sharey=True,
                                 layout="constrained")  # two-line titles, suptitle and labels never overlap
    else:
        axes = np.asarray(ax).ravel()
        fig = axes[0].figure
    axes = np.atleast_1d(axes)
    total = hist[0].sum()
    for a, (label, i) in zip(axes, indices):
        density = hist[i] / (total * widths)
        a.stairs(density, edges, fill=True, color="tab:blue", alpha=0.35, label="all $k^2$ pairs")
        a.stairs(density, edges, color="tab:blue", lw=0.8)
        bulk = np.abs(centers) < threshold
        weight = hist[i][bulk].sum() / total
        if weight > 0:
            mean = float(np.sum(hist[i][bulk] * centers[bulk]) / hist[i][bulk].sum())
            std = float(np.sqrt(np.sum(hist[i][bulk] * (centers[bulk] - mean) ** 2) / hist[i][bulk].sum()))
            if std > 0:
                x = np.linspace(-1, 1, 400)
                a.plot(x, weight * np.exp(-0.5 * ((x - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi)),
                       color="k", lw=0.8, ls="--", label=f"Gaussian bulk (sd {std:.2f})")
        closure = data.get("closure") if isinstance(data.get("closure"), dict) else None
        if closure is not None and times[i] > 0:          # Gaussian of the closure's bulk width
            sd = float(np.interp(times[i], closure["time"], closure["bulk_width"]))
            x = np.linspace(-1, 1, 400)
            a.plot(x, np.exp(-0.5 * (x / sd) ** 2) / (sd * math.sqrt(2 * math.pi)), color="C3",
                   lw=0.8, label=f"closure bulk (sd {sd:.2f})")
        spec = np.abs(matched[i]) > threshold
        n_pos, n_neg = int(np.sum(matched[i][spec] > 0)), int(np.sum(matched[i][spec] < 0))
        for sgn in (-1, 1):
            a.axvline(sgn * threshold, color="gray", ls=":", lw=0.8)
        a.set_yscale("log")
        a.set_ylim(0.5 / (total * widths.mean()), None)
        a.set_xlim(-1, 1)
        a.set_xlabel(r"cosine $w_i\cdot w^0_j/(|w_i||w^0_j|)$")
        a.set_title(f"{label}\n$t$ = {times[i]:.3g}: {n_pos} matched +, {n_neg} matched −", fontsize=9)
    axes[0].set_ylabel("density (log)")
    axes[0].legend(fontsize=7, loc="upper left")
    k, d = params.get("width"), params.get("dim")
    fig.suptitle(f"SGD overlap histograms: {params['activation']}, d = {d}, k = {k}, "
                 f"η = {params['lr']}, Δ = {params['delta']}, seed {params['seed']}", fontsize=10)
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    return fig


@_styled
def plot_test_error(data, *, theory=True, theory_timeout=300.0, ax=None):
    """Test error against ``t`` with the replica levels, and the order parameters.

    Parameters
    ----------
    data : dict or path
        Output of :func:`replica.workflow.sgd_results.read_sgd`.
    theory : bool, keyword-only
        Draw the universal-branch and Bayes-optimal ``mmse`` at ``α = (k/d) t``
        (:func:`replica.workflow.sgd_results.reference_levels`); skipped with a warning when the solver
        is unavailable, fails or takes longer than ``theory_timeout`` seconds.
    theory_timeout : float, keyword-only
        Seconds allowed to the replica solver (run in a child process).
    ax : pair of matplotlib axes, optional, keyword-only

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from .sgd_results import specialization_time

    data = _load(data)
    params = data["parameters"]
    t = np.asarray(data["time"], dtype=float)
    pos = t > 0
    if ax is None:
        fig, (a0, a1) = plt.subplots(2, 1, figsize=(6.4, 6.4), sharex=True,
                                     gridspec_kw={"height_ratios": [3, 2]})
    else:
        a0, a1 = ax
        fig = a0.figure
    a0.loglog(t[pos], data["test_error"][pos], color="tab:blue", lw=1.5, label="SGD test error")
    train = np.asarray(data.get("train_error", np.full_like(t, np.nan)), dtype=float)
    excess = train[pos] - params["delta"]
    excess = np.where(excess > 0, excess, np.nan)   # log axis: non-positive values (noise) are not drawn
    if np.any(np.isfinite(excess)):
        a0.loglog(t[pos], excess, color="tab:blue", lw=0.6, alpha=0.4, label="running train error − Δ (> 0)")
    if t.size and not pos[0]:
        a0.axhline(data["test_error"][0], color="tab:blue", lw=0.6, ls=":",
                   label=f"at t = 0: {data['test_error'][0]:.3g}")
    closure = data.get("closure") if isinstance(data.get("closure"), dict) else None
    if closure is not None:                               # replica-sgd --closure
        tc = np.asarray(closure["time"], dtype=float)
        ok = tc > 0
        a0.loglog(tc[ok], closure["test_error"][ok], color="k", ls="--", lw=1.0,
                  label="Gaussian closure (docs/dynamics.md)")
    ratio = params["width"] / params["dim"]
    if theory and "reference_alpha" in data:                       # stored by --reference
        alphas = np.asarray(data["reference_alpha"], dtype=float)
        levels = {"errors": []}
        if "reference_universal_mmse" in data:
            levels["universal"] = data["reference_universal_mmse"]
        if "reference_bayes_mmse" in data:
            levels["bayes"], levels["bayes_alpha"] = data["reference_bayes_mmse"], alphas
    elif theory and np.any(pos):
        lo = max(t[pos][0] * ratio, 1e-2)
        hi = t[pos][-1] * ratio
        alphas = np.exp(np.linspace(math.log(lo), math.log(max(hi, lo * 1.01)), 24))
        from .sgd_results import reference_levels_with_timeout

        levels = reference_levels_with_timeout(params, alphas, timeout=theory_timeout)
    if theory and np.any(pos):
        for message in levels["errors"][:3]:
            logger.warning("reference levels: %s", message)
        if "universal" in levels and np.any(np.isfinite(levels["universal"])):
            a0.loglog(alphas / ratio, levels["universal"], color="tab:orange", ls="--",
                      label="replica: universal branch (mmse)")
            a0.loglog(alphas / ratio, 2 * np.asarray(levels["universal"]), color="tab:orange", ls=":",
                      lw=0.8, label="2 × universal (Gibbs error of one posterior sample)")
        if "bayes" in levels:
            a0.loglog(levels["bayes_alpha"] / ratio, levels["bayes"], color="tab:green", ls="-.",
                      label="replica: Bayes-optimal mmse")
    t_spec = specialization_time(t, data["specialized_fraction"], level=0.5)   # as the CLI, scaling
    for a in (a0, a1):
        if math.isfinite(t_spec):
            a.axvline(t_spec, color="gray", ls=":", lw=1.0)
    hist_times = np.asarray(data["histogram_times"], dtype=float)
    for number, (name, i) in enumerate(stage_times(data), start=1):
        if hist_times[i] > 0:
            a1.annotate(f"{number}", (hist_times[i], 1.0), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7, color="purple")
            a1.axvline(hist_times[i], color="purple", lw=0.5, alpha=0.4)
    _error_limits(a0, skip=("running train error − Δ (> 0)",))
    a0.set_ylabel(r"$E_x(\lambda(x;W_t)-\lambda(x;W^0))^2$")
    a0.legend(fontsize=7, loc="lower left")
    a0.set_title(f"online SGD: {params['activation']}, d = {params['dim']}, k = {params['width']}, "
                 f"η = {params['lr']}, B = {params['batch']}, Δ = {params['delta']}", fontsize=10)
    a1.semilogx(t[pos], data["linear_overlap"][pos], color="C0", label=r"linear part: cos($W^Tv$, $W^{0T}v$)")
    a1.semilogx(t[pos], data["quadratic_overlap"][pos], color="C1", label=r"quadratic part: cos($S$, $S^0$)")
    if closure is not None:
        a1.semilogx(tc[ok], closure["linear_overlap"][ok], color="C0", ls="--", lw=0.8)
        a1.semilogx(tc[ok], closure["quadratic_overlap"][ok], color="C1", ls="--", lw=0.8,
                    label="closure (dashed)")
    a1.semilogx(t[pos], data["specialized_fraction"][pos], color="C2", label="specialized fraction")
    a1.semilogx(t[pos], data["match_sign_positive_fraction"][pos], color="C3", ls="none", marker=".", ms=3,
                label="positive matches / specialized")
    a1.set_ylim(-0.05, 1.12)
    a1.set_xlabel(r"$t = n/(kd)$  ($\alpha = n/d^2 = (k/d)\,t$); purple: times of the histogram panels")
    a1.legend(fontsize=7, loc="upper left")
    if math.isfinite(t_spec):
        a1.text(t_spec, 0.02, f"$t_{{spec}}$ = {t_spec:.3g} (fraction 0.5) ", fontsize=7, color="gray",
                ha="right")
    fig.tight_layout()
    return fig


def _error_limits(ax, *, skip=()):
    """Log-axis limits from the drawn curves except ``skip`` (labels; the noisy running train error):
    a factor 3 around them, at most 8 decades below the largest value."""
    values = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines() if line.get_label() not in skip]
    ok = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in values]) if values else np.array([])
    if ok.size == 0:
        return
    hi = float(ok.max()) * 3.0
    lo = max(float(ok.min()) / 3.0, hi * 1e-8)
    ax.set_ylim(lo, hi)


def make_figures(path, prefix, *, theory=True, theory_timeout=300.0, dpi=150, overwrite=True, suffix=".png"):
    """Write ``PREFIX_histograms.png`` and ``PREFIX_error.png`` for one run.

    Parameters
    ----------
    path : str, Path or dict
        File written by :func:`replica.workflow.sgd_results.write_sgd`, or its contents (:func:`~replica.workflow.sgd_results.read_sgd`).
    prefix : str or Path
        Figure names are ``PREFIX_histograms`` and ``PREFIX_error``.
    suffix : str, keyword-only
        Figure format (``.png``, ``.pdf``, ``.svg``; default ``.png``).

    Returns
    -------
    list of Path
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    data = _load(path)
    prefix = Path(prefix)
    outputs = [Path(f"{prefix}_histograms{suffix}"), Path(f"{prefix}_error{suffix}")]
    for out in outputs:
        if out.exists() and not overwrite:
            raise FileExistsError(f"-o/--output: {out} exists; pass --overwrite to replace it, or -o PREFIX "
                                  "for other names")
    from replica.workflow.style import figure_style

    fig = plot_overlap_histograms(data)
    with figure_style():
        fig.savefig(outputs[0], dpi=dpi)
    plt.close(fig)
    fig = plot_test_error(data, theory=theory, theory_timeout=theory_timeout)
    with figure_style():
        fig.savefig(outputs[1], dpi=dpi)
    plt.close(fig)
    return outputs


def main(argv=None):  # pragma: no cover - thin wrapper
    """``python -m replica.workflow.sgd_plots FILE.h5 [PREFIX] [--no-theory]``."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", force=True)
    args = list(sys.argv[1:] if argv is None else argv)
    theory = "--no-theory" not in args
    args = [a for a in args if a != "--no-theory"]
    if not args:
        print("usage: python -m replica.workflow.sgd_plots FILE.h5 [PREFIX] [--no-theory]", file=sys.stderr)
        return 2
    prefix = args[1] if len(args) > 1 else Path(args[0]).with_suffix("")
    from .config import UsageError

    try:
        outputs = make_figures(args[0], prefix, theory=theory)
    except UsageError as exc:  # an unreadable input: one line, exit 2
        print(f"sgd_plots: error: {exc}", file=sys.stderr)
        return 2
    for out in outputs:
        logger.info("wrote %s", out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
