"""Results of ``replica-sgd`` runs: HDF5 files, specialization times, power laws, replica levels.

Split from :mod:`replica.simulations.sgd` (the dynamics) along the seam between running SGD and
reading what it produced: :func:`write_sgd`/:func:`read_sgd` (the file layout),
:func:`specialization_time` and :func:`fit_power_law` (the analysis of a run),
:func:`predicted_exponent`/:func:`predicted_scaling` (the closure's scaling law, re-exported from
:mod:`replica.simulations.closure`), :func:`write_closure`/:func:`read_closure` (the ``closure/`` group), and the
Bayes-optimal levels of the replica solver drawn with the runs (:func:`reference_levels`,
:func:`store_reference_levels`, :func:`reference_levels_with_timeout`). Reading a file needs
neither numba nor the dynamics.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path

import numpy as np

from .. import __version__, git_revision
from .config import UsageError
from replica.simulations.closure import predicted_exponent, predicted_scaling  # re-exported: the scaling law

__all__ = [
    "write_sgd",
    "read_sgd",
    "specialization_time",
    "run_to_specialization",
    "fit_power_law",
    "predicted_exponent",
    "predicted_scaling",
    "reference_levels",
    "store_reference_levels",
    "reference_levels_with_timeout",
    "write_closure",
    "read_closure",
]


_DATASETS = ("time", "samples", "alpha", "test_error", "train_error", "linear_overlap",
             "quadratic_overlap", "overlap_histograms", "overlap_bin_edges", "histogram_times",
             "matched_overlap", "matched_teacher", "specialized_fraction",
             "match_sign_positive_fraction", "student_norm", "final_overlap_matrix", "readout")

_DESCRIPTIONS = {
    "time": "t = n/(k d), n = samples seen",
    "samples": "n, samples seen",
    "alpha": "n/d^2 = (k/d) t",
    "test_error": "E_x (lambda(x;W_t) - lambda(x;W0))^2 on fixed noiseless test inputs",
    "train_error": "mean e^2 (noisy labels) over the samples since the previous record",
    "linear_overlap": "cosine of W^T v with W0^T v",
    "quadratic_overlap": "Frobenius cosine of traceless W^T diag(v) W with the teacher's",
    "overlap_histograms": "counts of the k^2 cosines w_i.w0_j/(|w_i||w0_j|) per bin, one row per histogram_times",
    "overlap_bin_edges": "histogram bin edges on [-1, 1]",
    "histogram_times": "times t of the rows of overlap_histograms",
    "matched_overlap": "signed cosine of each student neuron with its best-matched teacher neuron",
    "matched_teacher": "index of that teacher neuron",
    "specialized_fraction": "fraction of student neurons with |matched_overlap| > threshold",
    "match_sign_positive_fraction": "fraction of specialized neurons with a positive match (NaN if none)",
    "student_norm": "mean_i |w_i|^2/d",
    "final_overlap_matrix": "cosines q_ij at the last time",
    "readout": "readout v",
}


def write_sgd(result, path, *, overwrite=False, configuration=None):
    """Write a run to HDF5 atomically (temporary file in the target folder + ``os.replace``).

    Parameters
    ----------
    result : replica.simulations.sgd.SGDResult
    path : str or Path
    overwrite : bool, keyword-only
        Replace an existing file (otherwise ``FileExistsError``).
    configuration : dict, optional, keyword-only
        Resolved command-line options (root attribute ``configuration``, JSON).

    Notes
    -----
    Layout: one dataset per field of :class:`~replica.simulations.sgd.SGDResult` (names in ``_DATASETS``, each with a
    ``description`` attribute); root attributes ``parameters`` (JSON of
    :meth:`~replica.simulations.sgd.SGDConfig.to_dict`), ``version``, ``git_revision``, ``created``, ``wall_time``,
    ``completed``, ``time_convention``.
    """
    from ..simulations.sgd import SGD_TIME_CONVENTION

    from replica.workflow.io import atomic_h5

    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists (use --overwrite to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_h5(path) as f:  # temporary file, fsync, permissions of a normal file (umask), rename
        f.attrs["kind"] = "sgd"
        f.attrs["parameters"] = json.dumps(result.config.to_dict(), sort_keys=True)
        if configuration is not None:
            f.attrs["configuration"] = json.dumps(configuration, sort_keys=True)
        f.attrs["version"] = __version__
        f.attrs["git_revision"] = git_revision()
        f.attrs["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        f.attrs["wall_time"] = float(result.wall_time)
        f.attrs["completed"] = bool(result.completed)
        f.attrs["time_convention"] = SGD_TIME_CONVENTION
        for name in _DATASETS:
            ds = f.create_dataset(name, data=np.asarray(getattr(result, name)))
            ds.attrs["description"] = _DESCRIPTIONS[name]


def read_sgd(path, *, option=""):
    """Read a file written by :func:`write_sgd`.

    Parameters
    ----------
    path : str or Path
    option : str, keyword-only
        Option named in error messages (``--plot``).

    Returns
    -------
    dict
        Every dataset as an array, plus ``parameters`` (dict) and the other root attributes;
        a group (``closure/``, :func:`write_closure`) as a dict of arrays.

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        Locked, unreadable, not HDF5, truncated, or written by another command (one line).
    """
    from replica.workflow.safe_write import open_h5

    out = {}
    with open_h5(path, option=option, kinds=("sgd",)) as f:
        for name in f:
            if not hasattr(f[name], "shape"):               # a group, e.g. closure/ (replica.simulations.closure)
                out[name] = {key: f[name][key][()] for key in f[name]}
                continue
            out[name] = f[name][()]
        for key, value in f.attrs.items():
            out[key] = value
        out["parameters"] = json.loads(f.attrs["parameters"])
        if "configuration" in f.attrs:
            out["configuration"] = json.loads(f.attrs["configuration"])
    return out


# ---------------------------------------------------------------------------------------------
# time-scale estimation
# ---------------------------------------------------------------------------------------------
def specialization_time(time, fraction, *, level=0.5, relative=False, window=3):
    """Time at which the specialized fraction first reaches ``level`` (and stays there).

    Parameters
    ----------
    time : array_like (T,)
        Increasing times (``t = n/(kd)``); ``t = 0`` allowed.
    fraction : array_like (T,)
        Specialized fraction (or any curve rising from ≈0 to a plateau).
    level : float, keyword-only
        Crossing level in ``(0, 1)``.
    relative : bool, keyword-only
        If True the level is ``level ×`` the final plateau (median of the last 10% of the
        points, at least 3 of them); otherwise absolute.
    window : int, keyword-only
        Odd width of the running median applied first (removes isolated spikes of a noisy
        curve); 1 disables it.

    Returns
    -------
    float
        The last upward crossing of ``level`` by the smoothed curve, after which it never
        falls below, interpolated linearly in ``log t`` between the bracketing records;
        NaN if the curve never ends above ``level``.

    Notes
    -----
    Using the *last* upward crossing makes the estimate insensitive to early excursions
    of a noisy curve; for a monotone curve it is the first crossing.
    """
    t = np.asarray(time, dtype=float)
    f = np.asarray(fraction, dtype=float)
    if t.shape != f.shape or t.ndim != 1:
        raise ValueError("time and fraction must be 1-D arrays of the same length")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    ok = np.isfinite(t) & np.isfinite(f) & (t > 0)
    t, f = t[ok], f[ok]
    if t.size < 2:
        return float("nan")
    window = max(1, int(window))
    if window > 1 and t.size >= window:
        half = window // 2
        padded = np.pad(f, half, mode="edge")
        f = np.median(np.lib.stride_tricks.sliding_window_view(padded, window), axis=1)
    target = level
    if relative:
        tail = max(3, int(math.ceil(0.1 * f.size)))
        target = level * float(np.median(f[-tail:]))
        if target <= 0:
            return float("nan")
    above = f >= target
    if not above[-1]:
        return float("nan")
    below = np.nonzero(~above)[0]
    if below.size == 0:
        return float(t[0])
    i = below[-1]                       # last point below; i+1 is above
    lt0, lt1 = math.log(t[i]), math.log(t[i + 1])
    f0, f1 = f[i], f[i + 1]
    w = (target - f0) / (f1 - f0) if f1 != f0 else 1.0
    return float(math.exp(lt0 + w * (lt1 - lt0)))


def run_to_specialization(config, *, level=0.5, **run_options):
    """Run online SGD until most students have specialized; return the run and its ``t_spec``.

    The run stops once the specialized fraction (``|cos| > config.threshold``) has stayed at
    or above ``min(1, level + 0.25)`` for 3 consecutive records, or at ``config.time``.

    Parameters
    ----------
    config : replica.simulations.sgd.SGDConfig
    level : float, keyword-only
        Fraction defining ``t_spec`` (:func:`specialization_time`), in ``(0, 1)``.
    **run_options
        Passed to :func:`replica.simulations.sgd.run_sgd` (``teacher``, ``backend``, ``progress``;
        not ``stop``, which this function sets: passing it raises TypeError).

    Returns
    -------
    result : replica.simulations.sgd.SGDResult
    t_spec : float
        :func:`specialization_time` of the run at ``level``; NaN if not reached (censored).

    Raises
    ------
    ValueError
        ``level`` outside ``(0, 1)``; bad configuration (:func:`replica.simulations.sgd.run_sgd`).
    FloatingPointError
        The weights diverged (:func:`replica.simulations.sgd.run_sgd`).
    """
    from ..simulations.sgd import run_sgd

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    margin = min(1.0, level + 0.25)
    hits = []

    def stop(record):
        hits.append(record["specialized_fraction"] >= margin)
        return len(hits) >= 3 and all(hits[-3:])

    result = run_sgd(config, stop=stop, **run_options)
    return result, specialization_time(result.time, result.specialized_fraction, level=level)


def fit_power_law(k, times, *, log_power=0.0):
    """Fit ``t = C k^b / (log k)^p`` by least squares on ``log t`` (``p`` fixed).

    Parameters
    ----------
    k : array_like (N,)
        Widths (one entry per run; repeated k for several seeds).
    times : array_like (N,)
        Specialization times (NaN entries are dropped).
    log_power : float, keyword-only
        ``p``: the fit is of ``log t + p log log k`` against ``log k``.

    Returns
    -------
    dict
        ``exponent`` b, ``stderr`` (standard error of b from the residual scatter about the
        line, which includes the seed-to-seed scatter; NaN with only two runs), ``intercept``,
        ``n_runs``, ``n_widths``, ``residual_std``.

    Raises
    ------
    ValueError
        Fewer than two distinct widths with finite times.
    """
    k = np.asarray(k, dtype=float)
    t = np.asarray(times, dtype=float)
    ok = np.isfinite(t) & (t > 0) & (k > 1)
    k, t = k[ok], t[ok]
    if np.unique(k).size < 2:
        raise ValueError("need finite times at two or more distinct widths")
    x = np.log(k)
    y = np.log(t) + log_power * np.log(np.log(k))
    design = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    dof = x.size - 2
    sigma2 = float(resid @ resid) / dof if dof > 0 else float("nan")
    cov = sigma2 * np.linalg.inv(design.T @ design)
    return {"exponent": float(coef[1]), "stderr": float(math.sqrt(max(cov[1, 1], 0.0))) if dof > 0 else float("nan"),
            "intercept": float(coef[0]), "n_runs": int(x.size), "n_widths": int(np.unique(k).size),
            "residual_std": float(math.sqrt(sigma2)), "log_power": float(log_power)}


# ---------------------------------------------------------------------------------------------
# replica reference levels (optional)
# ---------------------------------------------------------------------------------------------
def reference_levels(parameters, alphas, *, bayes=True):
    """Replica-theory errors at the given ``α = n/d²`` (universal branch and Bayes-optimal).

    Parameters
    ----------
    parameters : dict
        ``activation``, ``gamma``, ``delta``, ``prior``, ``readout`` (and optionally
        ``drop_hermite``, ``unit_variance``) as in :meth:`~replica.simulations.sgd.SGDConfig.to_dict`.  The width
        ratio used is the realized ``k/d``.
    alphas : array_like
        Positive sample ratios.
    bayes : bool, keyword-only
        Also compute the equilibrium (Bayes-optimal) curve with
        :func:`replica.continuation.sweep` (slower).

    Returns
    -------
    dict
        ``alpha``, ``universal`` (mmse of the universal branch, NaN where it failed) and,
        if requested and available, ``bayes``; plus ``errors`` (list of one-line messages for
        what could not be computed).  Never raises for a missing or failing solver.
    """
    alphas = np.asarray(alphas, dtype=float)
    out = {"alpha": alphas, "errors": []}
    failures = (UsageError, ImportError, ValueError, TypeError, KeyError, ArithmeticError, RuntimeError,
                np.linalg.LinAlgError)
    try:
        from .model_options import resolve_model

        gamma = parameters.get("width", parameters["gamma"] * parameters["dim"]) / parameters["dim"]
        request = {"layers": 1, "gamma": [gamma], "activation": str(parameters["activation"]),
                   "drop_hermite": list(parameters.get("drop_hermite") or ()),
                   "unit_variance": bool(parameters.get("unit_variance", False)), "delta": parameters["delta"],
                   "prior": parameters["prior"], "readout": parameters["readout"]}
        model, _ = resolve_model(request)  # the registry, as replica-sweep
    except failures as exc:  # the options have no replica model (e.g. an activation it refuses)
        out["errors"].append(f"replica model unavailable: {type(exc).__name__}: {exc}")
        return out
    universal = np.full(alphas.shape, np.nan)
    for i, a in enumerate(alphas):
        try:
            universal[i] = float(model.solve_universal(float(a)).info["state"].mmse)
        except failures as exc:
            out["errors"].append(f"universal branch at alpha={a:.3g}: {type(exc).__name__}: {exc}")
    out["universal"] = universal
    if bayes:
        try:
            from .run import run_sweep

            result = run_sweep(request, alphas, progress=False, model=model)  # as replica-sweep computes it
            out["bayes"] = np.asarray(result.equilibrium["mmse"], dtype=float)
            out["bayes_alpha"] = np.sort(alphas)
        except failures as exc:
            out["errors"].append(f"Bayes-optimal curve: {type(exc).__name__}: {exc}")
    return out


def store_reference_levels(path, *, num=24, timeout=None, bayes=True):
    """Compute the replica reference levels of a run and store them in its HDF5 file.

    Parameters
    ----------
    path : str or Path
        File written by :func:`write_sgd`; rewritten atomically (copy, add, ``os.replace``).
    num : int, keyword-only
        Number of log-spaced ``α`` between ``max((k/d) t_1, 0.01)`` and ``(k/d) t_max``.
    timeout : float, optional, keyword-only
        Seconds allowed to the solver (child process); None waits.
    bayes : bool, keyword-only
        Also the Bayes-optimal (equilibrium) curve.

    Returns
    -------
    dict
        The levels (see :func:`reference_levels`).  Datasets written: ``reference_alpha``,
        ``reference_universal_mmse`` and (if available) ``reference_bayes_mmse``; attribute
        ``reference_errors`` (JSON list of messages).  Existing ones are replaced.

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        The file cannot be read (locked, not HDF5, truncated, damaged; one line, exit 2 in the commands).
    """
    from replica.workflow.io import atomic_h5
    from replica.workflow.safe_write import open_h5

    data = read_sgd(path)
    params = data["parameters"]
    t = np.asarray(data["time"], dtype=float)
    t = t[t > 0]
    ratio = params["width"] / params["dim"]
    lo = max(t[0] * ratio, 1e-2)
    hi = max(t[-1] * ratio, lo * 1.01)
    alphas = np.exp(np.linspace(math.log(lo), math.log(hi), int(num)))
    if timeout is None:
        levels = reference_levels(params, alphas, bayes=bayes)
    else:
        levels = reference_levels_with_timeout(params, alphas, timeout=timeout, bayes=bayes)
    path = Path(path)
    with atomic_h5(path) as f:  # copy of the file with the levels added, renamed over it
        with open_h5(path, option="--reference") as src:  # a read error: the input is damaged (exit 2)
            for key, value in src.attrs.items():
                f.attrs[key] = value
            for name in src:
                if name not in ("reference_alpha", "reference_universal_mmse", "reference_bayes_mmse"):
                    src.copy(src[name], f, name=name)
        f.create_dataset("reference_alpha", data=alphas).attrs["description"] = "alpha = n/d^2"
        if "universal" in levels:
            ds = f.create_dataset("reference_universal_mmse", data=levels["universal"])
            ds.attrs["description"] = "replica mmse of the universal branch (docs/theory.md §5.1)"
        if "bayes" in levels:
            order = np.argsort(alphas)
            values = np.empty_like(alphas)
            values[order] = levels["bayes"]
            ds = f.create_dataset("reference_bayes_mmse", data=values)
            ds.attrs["description"] = "replica Bayes-optimal (equilibrium) mmse"
        f.attrs["reference_errors"] = json.dumps(levels["errors"])
    return levels


def _levels_worker(queue, params, alphas, bayes):
    import signal

    # the parent's handlers (SIGTERM → an exception, Ctrl-C → KeyboardInterrupt) are inherited by a forked
    # child: a child that the parent terminates, or that sees the terminal's Ctrl-C, ends quietly instead
    # of printing a traceback; the parent reports what happened
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        queue.put(reference_levels(params, alphas, bayes=bayes))
    except BaseException as exc:  # pragma: no cover - reported to the parent
        queue.put({"alpha": alphas, "errors": [f"{type(exc).__name__}: {exc}"]})


#: seconds a child that has delivered its result may take to exit (flush its queue) before it is terminated
_CHILD_EXIT_GRACE = 5.0


def reference_levels_with_timeout(params, alphas, *, timeout=300.0, bayes=True):
    """:func:`replica.workflow.sgd_results.reference_levels` in a child process, abandoned after ``timeout`` s.

    The replica solvers can take minutes for a new (activation, γ, Δ); a figure should not
    hang on them.  Returns the same dict (with an entry in ``errors`` on timeout).  The child
    ends quietly when it is terminated (timeout, or the parent interrupted): it does not inherit
    the commands' SIGTERM and Ctrl-C handlers.
    """
    import multiprocessing as mp
    import queue as _queue
    import signal

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    q = ctx.Queue()
    proc = ctx.Process(target=_levels_worker, args=(q, params, np.asarray(alphas), bayes),
                       daemon=True)
    # SIGTERM/SIGINT blocked across the fork: the child unblocks them only after resetting its handlers
    # (a signal arriving meanwhile is delivered to the parent when it unblocks them below)
    blocked = {signal.SIGTERM, signal.SIGINT}
    try:
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - no pthread_sigmask
        previous = None
    try:
        proc.start()
    finally:
        if previous is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    delivered = False
    try:
        result = q.get(timeout=timeout)
        delivered = True
    except _queue.Empty:
        result = {"alpha": np.asarray(alphas), "errors": [f"replica levels not ready after {timeout:g} s"]}
    finally:
        if delivered:  # the child is flushing its queue and exiting: let it
            proc.join(_CHILD_EXIT_GRACE)
        if proc.is_alive():
            proc.terminate()
        proc.join(5)
    return result


# ---------------------------------------------------------------------------------------------
# HDF5: group closure/ in a replica-sgd file (the closure of replica.simulations.closure)
# ---------------------------------------------------------------------------------------------
def write_closure(path, result):
    """Add (or replace) the group ``closure/`` of a ``replica-sgd`` file, atomically.

    The file is rebuilt with :class:`replica.workflow.io.atomic_h5` (copy of every other dataset and
    attribute, the new group, rename over the original), so an interrupted write leaves the
    original intact.  Datasets: ``CLOSURE_DATASETS`` (each with a ``description``) and
    ``noise``; attributes ``parameters`` (JSON), ``success``, ``message``, ``reference``.

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        The file cannot be read (locked, not HDF5, truncated, damaged; one line, exit 2 in the commands).
    """
    import json
    from pathlib import Path

    from replica.simulations.closure import CLOSURE_DESCRIPTIONS
    from replica.workflow.io import atomic_h5
    from replica.workflow.safe_write import open_h5

    path = Path(path)
    with atomic_h5(path) as f:
        with open_h5(path, option="--closure") as src:  # a read error: the input is damaged (exit 2)
            for key, value in src.attrs.items():
                f.attrs[key] = value
            for name in src:
                if name != "closure":
                    src.copy(src[name], f, name=name)
        g = f.create_group("closure")
        for name, values in result.as_dict().items():
            g.create_dataset(name, data=values).attrs["description"] = CLOSURE_DESCRIPTIONS[name]
        g.create_dataset("noise", data=np.asarray(result.noise)).attrs["description"] = \
            "epsilon + Delta, mean squared residual setting the SGD noise"
        g.attrs["parameters"] = json.dumps(dict(result.parameters), sort_keys=True, default=str)
        g.attrs["success"] = bool(result.success)
        g.attrs["message"] = str(result.message)
        g.attrs["reference"] = "docs/dynamics.md (Gaussian closure of online SGD)"


def read_closure(path):
    """The ``closure/`` group of a file as a dict of arrays (plus ``parameters``), or None.

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        The file cannot be read (locked, not HDF5, truncated, damaged; one line, exit 2 in the commands).
    """
    import json

    from replica.workflow.safe_write import open_h5

    with open_h5(path, option="--closure") as f:
        if "closure" not in f:
            return None
        g = f["closure"]
        out = {name: g[name][()] for name in g}
        out["parameters"] = json.loads(g.attrs.get("parameters", "{}"))
        out["success"] = bool(g.attrs.get("success", True))
    return out
