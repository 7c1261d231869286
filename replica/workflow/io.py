"""HDF5 storage of sweeps (one file per sweep; written atomically).

Layout
------
``/`` attributes
    ``parameters`` (JSON of every resolved option), ``version``, ``git_revision``, ``architecture``
    (registry name of the solver, :mod:`replica.models`), ``state_schema`` (JSON list of what a state
    records, :class:`replica.interface.FieldSpec`: name, label, role, axes), ``s_grid_rule`` (models with
    a rule in s).
``/branches/<name>/``
    datasets on the α grid: ``alpha``, ``mmse``, ``free_entropy``,
    ``mutual_information``, ``converged``, ``exists``, ``iterations``, ``residual``,
    ``R2``, ``R2_hat``, ``tau``, ``start``; ``overlap_W`` and ``overlap_W_hat``
    (n_alpha × n_readout); ``readout_values`` and ``readout_weights`` (n_readout).
    Values are NaN where the branch does not exist. Deep networks (docs/theory.md §6.1) store
    ``overlap_layer_<ℓ>`` and ``overlap_hat_layer_<ℓ>`` instead of the ``overlap_W``/``R2``
    fields. Two hidden layers with linear parts (docs/theory.md §6.2, :mod:`replica.models.two_layer`)
    store ``overlap_layer_1`` (n_alpha × n_s), ``overlap_layer_2`` (n_alpha × n_readout ×
    n_s), ``overlap_product_2_1`` and ``tau_product_2_1`` (n_alpha × n_readout), their
    ``overlap_hat_*`` conjugates, and the effective-readout grid ``s_values``,
    ``s_weights`` (n_s). L ≥ 3 hidden layers with linear parts (docs/deep_linear.md) store
    ``overlap_layer_<ℓ>``, ``overlap_product_<ℓ>_<m>``, their conjugates, ``tau_product_<ℓ>_<m>``
    and ``overlap_mean_*``, with the label axes ``s_values`` (layer 1), ``s_values_<ℓ>`` (inner
    layer ℓ) and ``readout_values`` (layer L) as dimension scales.
    Every branch group has every dataset (NaN, False or "" where the branch does not
    exist), ``stability`` (leading eigenvalue of the Jacobian of the undamped fixed-point
    map at each point, < 1: linearly stable) included, and the attributes
    ``alpha_start``, ``alpha_end`` (where the branch begins and ends, located by root
    finding; NaN at the edge of the grid), ``start_kind``, ``end_kind`` (``fold``,
    ``bifurcation``, ``grid``; empty for the universal branch), ``seed`` (the start that
    found it), ``branch_points`` and ``branch_point_kinds`` (:mod:`replica.continuation.branchpoints`). Branch names and the continuation are described in :mod:`replica.continuation`.
    Deeper networks with linear parts (:mod:`replica.models.deep_linear`,
    docs/deep_linear.md) store ``overlap_layer_<ℓ>`` and ``overlap_product_<ℓ>_<m>``
    (n_alpha × row labels × column labels, the input axis dropped), ``tau_product_<ℓ>_<m>``,
    the conjugates and the label averages ``overlap_mean_layer_<ℓ>``,
    ``overlap_mean_product_<ℓ>_<m>`` (n_alpha).
``/branches`` attribute ``universal_only_reason``
    present when only the universal branch is reported (docs/theory.md §5.4).
``/equilibrium/``
    ``alpha``, ``mmse``, ``free_entropy``, ``branch`` (name of the equilibrium branch); for ±1 output
    channels also ``classification_error`` and ``sign_disagreement`` (root attributes ``output_channel``
    and ``output_channel_parameters``, JSON, name the law of the labels of every file).
``/equilibrium_changes/``
    one entry per change of the equilibrium branch, ordered in α: ``alpha`` (located by
    root finding on the free-entropy difference, or at the end or birth of a branch),
    ``from_branch``, ``to_branch``, ``mmse_before``, ``mmse_after`` (both at ``alpha``)
    and ``kind`` (``crossing``, ``branch_end``, ``branch_start``).
``/feature_transitions/``
    one hidden layer, discrete readout law of more than 16 atoms: every group's own first-order transition
    (columns :data:`FEATURE_DATASETS`, :func:`replica.workflow.run.feature_transitions`); absent otherwise.
``/transitions``
    attributes ``alpha_sp`` and ``alpha_c`` (NaN when absent) of the first specialization:
    ``alpha_c`` is the first change of the equilibrium away from the universal branch (two
    hidden layers: the first change to the ``layers_1_2`` phase), ``alpha_sp`` the first α
    of the branch it goes to; for two or more hidden layers also ``alpha_c_layer_<ℓ>`` and
    ``alpha_sp_layer_<ℓ>``, the same for the first change into a branch with layer ℓ learned
    (NaN when layer ℓ is already learned at the first α or never on the grid).
``/transitions/<branch>``
    per non-universal branch, attributes ``alpha_sp`` (= ``alpha_start``), ``alpha_end``
    and ``alpha_c`` (where it first becomes the equilibrium; NaN if never);
    ``/transitions/universal`` has ``alpha_instability``, the α where the universal
    branch loses linear stability (Brent on ``stability − 1``; NaN if it does not on the
    grid).

Every dataset on the α grid is attached to the dimension scale ``alpha`` of its group
(and ``overlap_W``-like datasets to ``readout_values``), with ``long_name``/``units``
attributes, so the groups open with xarray as labelled arrays::

    import xarray as xr
    spec = xr.open_dataset("relu.h5", engine="h5netcdf", group="branches/specialized")
    spec.mmse.sel(alpha=4.0, method="nearest")

Root attributes added by the command line: ``kind`` (``"sweep"``), ``complete`` (1 for a
finished sweep, 0 for a checkpoint left by an interrupted one), ``configuration`` (JSON of
the full resolved command-line configuration, ``--config`` file included).

Checkpoints (interrupted sweeps)
--------------------------------
While ``replica-sweep -o X.h5`` runs, the checkpoint ``X.checkpoint.h5`` (the write protocol of
:mod:`replica.workflow.safe_write`; ``X.h5`` itself appears only when the sweep has finished) holds the
root attributes above with ``complete = 0`` and a group ``/checkpoint/<k>`` per solve pass
(attribute ``key``: ``universal`` or ``<start>:<down|up>``) with ``done``, ``has_state``,
``converged``, ``iterations``, ``residual``, ``status``, ``start`` (n_alpha) and ``x``
(n_alpha × p, the packed solver point). ``replica-sweep --resume`` reloads it
(:class:`replica.workflow.run.SweepCheckpoint`); files of older versions that kept the checkpoint in ``X.h5`` are
resumed too.

Phase diagrams
--------------
``replica-phase-diagram`` writes one flat group (root) on the grid ``(<parameter>, alpha)``:
coordinates ``alpha`` and ``<parameter>`` (e.g. ``delta``); the equilibrium ``mmse``,
``free_entropy`` and ``branch``; ``mmse_<branch>`` and ``exists_<branch>`` per branch;
the transition lines ``alpha_sp``, ``alpha_c`` and ``alpha_instability`` (one value per
parameter value, from the same continuation and root finding as a sweep), for two or more hidden
layers ``alpha_c_layer`` and ``alpha_sp_layer`` (n_param × L: where each layer is first learned at
equilibrium, and the spinodal of the branch it goes to; coordinate ``layer`` = 1 … L); ``done``.
Root attributes ``kind = "phase_diagram"``, ``parameter``, ``parameters``,
``configuration``, ``version``, ``git_revision``, ``architecture``, ``complete``. Unfinished diagrams
(``complete = 0``, ``done`` false on the missing lines) are the checkpoints
``X.checkpoint.h5`` of ``replica-phase-diagram -o X.h5``.

Why one module of this size: the HDF5 layout of every file kind, each writer next to
its reader so that they cannot drift apart (tests/test_roundtrip.py), with the shared atomic
write and attribute helpers (docs/architecture.md, "Module size").
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from pathlib import Path

import numpy as np

from priors._lazy import lazy_import

from .. import __version__, git_revision
from ..interface import schema_from_json, schema_to_json

h5py = lazy_import("h5py")  # loaded at the first file read or written (start-up: --help, parsing)

__all__ = [
    "write_sweep",
    "read_sweep",
    "sweep_data",
    "atomic_h5",
    "write_error",
    "git_revision",
    "file_kind",
    "read_experiments",
    "write_checkpoint",
    "read_checkpoint",
    "read_checkpoint_lines",
    "empty_checkpoint_record",
    "write_phase_diagram",
    "read_phase_diagram",
    "IncompleteFileError",
    "VARIABLE_ATTRS",
    "S_AXIS_DATASETS",
    "CHANGE_DATASETS",
]

logger = logging.getLogger(__name__)

#: ``long_name`` and ``units`` attributes of the stored variables (docs/theory.md symbols)
VARIABLE_ATTRS = {
    "alpha": ("sample ratio α = n/d²", "1"),
    "mmse": ("Bayes-optimal excess test error (mmse)", "1"),
    "free_entropy": ("replica-symmetric free entropy f per d²", "nats"),
    "mutual_information": ("mutual information per weight parameter", "nats"),
    "classification_error": ("Bayes-optimal classification error P(ŷ ≠ y) of ±1 labels", "1"),
    "sign_disagreement": ("disagreement P(ŷ ≠ sign(λ⁰ − θ)) with the teacher's noiseless decision", "1"),
    "R2": ("overlap R₂ of S = Wᵀdiag(v)W/√(kd)", "1"),
    "R2_hat": ("conjugate R̂₂", "1"),
    "tau": ("tilt τ, m_S(τ) = E_v[v² Q(v)²]", "1"),
    "overlap_W": ("specialization overlap Q(v)", "1"),
    "overlap_W_hat": ("conjugate Q̂(v)", "1"),
    "discretization_error": ("relative change of mmse and free entropy between the last two refinements "
                             "of the readout-law quadrature", "1"),
    "readout_values": ("readout value v", "1"),
    "readout_weights": ("probability of the readout value", "1"),
    "overlap_product_2_1": ("overlap Q₂:₁(v) of the product W₂W₁/√k₁ (two layers)", "1"),
    "overlap_hat_product_2_1": ("conjugate r₂:₁(v) of the product overlap", "1"),
    "tau_product_2_1": ("tilt τ_v, m_rect(τ_v) = E_s[Q₂(v,s)Q₁(s)]", "1"),
    "s_values": ("effective readout s = (vᵀW₂)_j/√k₂ of first-layer neurons", "1"),
    "s_weights": ("quadrature weight of the effective readout", "1"),
    "converged": ("residual test passed", ""),
    "exists": ("branch exists at this α", ""),
    "iterations": ("evaluations of the fixed-point map", ""),
    "residual": ("scaled residual max|F(x)−x|/(atol+rtol|x|)", "1"),
    "start": ("start the point came from", ""),
    "branch": ("equilibrium branch (largest free entropy)", ""),
    "delta": ("label-noise variance Δ", "1"),
    "gamma": ("width ratio γ = k/d", "1"),
    "readout_grid": ("readout-law grid size", ""),
    "stability": ("leading eigenvalue of the Jacobian of the undamped map (< 1: linearly stable)", "1"),
    "from_branch": ("equilibrium branch before the change", ""),
    "to_branch": ("equilibrium branch after the change", ""),
    "mmse_before": ("mmse of the equilibrium branch before the change, at the change", "1"),
    "mmse_after": ("mmse of the equilibrium branch after the change, at the change", "1"),
    "kind": ("how the equilibrium changes: crossing, branch_end or branch_start", ""),
    "alpha_sp": ("spinodal α_sp (specialized branch appears)", "1"),
    "alpha_c": ("thermodynamic transition α_c", "1"),
    "alpha_instability": ("α where the universal branch loses linear stability", "1"),
}


class IncompleteFileError(ValueError):
    """The file is a checkpoint of an interrupted command, not a finished result."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class atomic_h5:
    """Context manager writing an HDF5 file atomically (temporary file, then rename).

    Parameters
    ----------
    path : str or Path
        Final path. The file appears there only when the block exits without error
        (an exception, ``KeyboardInterrupt`` included, leaves any previous file at ``path``
        untouched and no temporary file). The data are flushed to disk before the rename,
        and the file gets the permissions of a normally created file.

    Notes
    -----
    The HDF5 file is built in memory (``driver="core"``, no backing store) and its image is
    written with plain file I/O: a full disk or a file-size limit is then an ordinary
    ``OSError`` (``No space left on device``) raised before anything is renamed, and the
    HDF5 library never holds a half-written file (a failed HDF5 flush can leave the library
    unable to close it, and crash the interpreter at exit).
    """

    def __init__(self, path):
        self.path = Path(path)
        self.tmp = None

    def __enter__(self) -> h5py.File:
        self.file = h5py.File(f"{self.path}.{id(self)}.in-memory", "w", driver="core", backing_store=False)
        return self.file

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            self.file.close()
            if issubclass(exc_type, OSError) and type(exc) in (OSError, BlockingIOError) and exc.strerror is None:
                raise write_error(exc, self.path) from None  # HDF5's long message → one line
            return False
        try:
            self.file.flush()
            image = self.file.id.get_file_image()
        finally:
            self.file.close()
        directory = self.path.parent if str(self.path.parent) else Path(".")
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=directory)
            self.tmp = Path(tmp)
            with os.fdopen(fd, "wb") as fh:
                fh.write(image)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(self.tmp, 0o666 & ~_umask())
            os.replace(self.tmp, self.path)
        except OSError as err:
            raise write_error(err, self.path) from None
        finally:
            if self.tmp is not None and self.tmp.exists():
                self.tmp.unlink(missing_ok=True)
        return False


def write_error(err: OSError, path) -> OSError:
    """``OSError(errno, strerror, path)`` for an error raised while writing ``path``.

    HDF5 reports failed writes as ``OSError`` with a long message and no ``errno``
    (``… errno = 28, error message = 'No space left on device' …``); the errno is recovered
    from the message so that callers print one line (``No space left on device``)."""
    import re

    code = err.errno
    if code is None:
        m = re.search(r"errno = (\d+)", str(err))
        code = int(m.group(1)) if m else None
    if code is None:
        first = (str(err).splitlines() or ["write failed"])[0][:200]
        return OSError(0, first, str(path))
    return OSError(code, os.strerror(code), str(path))


def _write_array(group, name, value):
    arr = np.asarray(value)
    if arr.dtype == object or arr.dtype.kind in "US":
        ds = group.create_dataset(name, data=np.asarray([str(s) for s in arr.ravel()], dtype=h5py.string_dtype()).reshape(arr.shape))
    else:
        ds = group.create_dataset(name, data=arr)
    base = name
    for prefix in ("mmse_", "exists_", "free_entropy_"):
        if name.startswith(prefix) and name[len(prefix):].split("-")[0] in ("universal", "specialized", "partial",
                                                                             "weak"):
            base = prefix[:-1]
    if name.startswith("overlap_layer_") or name.startswith("overlap_hat_layer_"):
        ell = name.rsplit("_", 1)[-1]
        ds.attrs["long_name"] = (f"overlap q_{ell} of layer {ell}" if name.startswith("overlap_layer")
                                 else f"conjugate of the overlap of layer {ell}")
        if arr.ndim >= 2 and name in S_AXIS_DATASETS:
            ds.attrs["long_name"] += (" per effective readout s" if ell == "1" else " per readout v and s")
        ds.attrs["units"] = "1"
    elif base not in VARIABLE_ATTRS and name.startswith(("overlap_product_", "overlap_hat_product_", "tau_product_",
                                                          "overlap_mean_")):
        # replica.models.deep_linear: products W_{ℓ:m} and label-averaged overlaps (docs/deep_linear.md)
        tag = name.split("_product_")[-1].replace("_", ":") if "_product_" in name else name.rsplit("_", 1)[-1]
        kind = ("overlap" if name.startswith("overlap_product") else "conjugate r" if name.startswith("overlap_hat")
                else "tilt τ" if name.startswith("tau") else "label-averaged overlap")
        what = f"the product W_{tag}" if "_product_" in name else f"layer {tag}"
        ds.attrs["long_name"] = f"{kind} of {what}"
        ds.attrs["units"] = "1"
    elif base in VARIABLE_ATTRS:
        long_name, units = VARIABLE_ATTRS[base]
        ds.attrs["long_name"] = long_name + ("" if base == name else f" ({name[len(base) + 1:]} branch)")
        if units:
            ds.attrs["units"] = units
    return ds


#: datasets of the two-layer model whose last axis is the effective-readout grid ``s_values``
S_AXIS_DATASETS = ("overlap_layer_1", "overlap_hat_layer_1", "overlap_layer_2", "overlap_hat_layer_2")


def _attach_scales(group, alpha, readout=None, s_scale=None, axes=None, coordinates=()):
    """Attach the datasets of ``group`` to the dimension scales ``alpha`` (axis 0),
    ``readout`` (axis 1, and axis 0 of ``readout_weights``) and, for the datasets of
    :data:`S_AXIS_DATASETS`, ``s_values`` (last axis; axis 0 of ``s_weights``); a dataset named
    in ``axes`` gets the scales listed there on its axes after α instead; the 1-D ``coordinates``
    (the model's grids) get no scale."""
    axes = axes or {}
    for name, ds in group.items():
        if not isinstance(ds, h5py.Dataset) or name in ("alpha", "readout_values") or name.startswith("s_values") \
                or ds.ndim == 0 or (name in coordinates and name != "s_weights"):
            continue
        if name in axes and ds.shape[0] == alpha.shape[0] and len(axes[name]) == ds.ndim - 1:
            ds.dims[0].attach_scale(alpha)
            for k, scale in enumerate(axes[name], start=1):
                ds.dims[k].attach_scale(group[scale])
            continue
        if name == "readout_weights":
            if readout is not None:
                ds.dims[0].attach_scale(readout)
            continue
        if name == "s_weights":
            if s_scale is not None:
                ds.dims[0].attach_scale(s_scale)
            continue
        if ds.shape[0] != alpha.shape[0]:
            continue
        ds.dims[0].attach_scale(alpha)
        on_s = s_scale is not None and name in S_AXIS_DATASETS and ds.ndim >= 2 and ds.shape[-1] == s_scale.shape[0]
        if on_s:
            ds.dims[ds.ndim - 1].attach_scale(s_scale)
        if ds.ndim == (3 if on_s else 2) and readout is not None and ds.shape[1] == readout.shape[0]:
            ds.dims[1].attach_scale(readout)


def channel_parameters(parameters: dict) -> dict:
    """The output channel's parameters in a command's resolved ``parameters`` (``--channel``, ``--delta``,
    ``--temperature``, ``--channel-threshold``): :meth:`priors.output_channels.OutputChannel.parameters` of
    the channel that :func:`priors.output_channels.get_output_channel` builds from them (Gaussian labels
    when ``channel`` is absent). Where ``delta`` is absent or None (the varied axis of a phase diagram, or
    not given) the ``delta`` entry of a Gaussian or probit channel is left out.

    Raises
    ------
    ValueError
        Unknown channel name or invalid parameters (as :func:`~priors.output_channels.get_output_channel`).
    """
    from priors.output_channels import CHANNEL_OPTIONS, channel_keywords, get_output_channel

    name = str(parameters.get("channel", "gaussian"))
    delta = parameters.get("delta")
    varied = delta is None or isinstance(delta, (list, tuple))
    channel = get_output_channel(name, **channel_keywords(
        name, delta=0.0 if varied else float(delta), temperature=parameters.get("temperature"),
        threshold=parameters.get("channel_threshold")))
    out = channel.parameters()
    if varied and "delta" in CHANNEL_OPTIONS.get(channel.name, ()):
        out.pop("delta", None)
    return out


def _root_attrs(h5, parameters, *, kind, complete, configuration=None, architecture=""):
    h5.attrs["parameters"] = json.dumps(parameters, sort_keys=True)
    if architecture:  # registry name of the solver (replica.models)
        h5.attrs["architecture"] = str(architecture)
    # the law of the labels (docs/theory.md §10), also for files of Gaussian-only runs
    h5.attrs["output_channel"] = str(parameters.get("channel", "gaussian"))
    h5.attrs["output_channel_parameters"] = json.dumps(channel_parameters(parameters), sort_keys=True)
    h5.attrs["version"] = __version__
    h5.attrs["git_revision"] = git_revision()
    h5.attrs["kind"] = kind
    h5.attrs["complete"] = np.int8(1 if complete else 0)
    if configuration is not None:
        h5.attrs["configuration"] = json.dumps(configuration, sort_keys=True)


def write_sweep(path, result, parameters: dict, *, configuration: dict | None = None,
                grids: dict | None = None, attributes: dict | None = None, axes: dict | None = None) -> Path:
    """Write a :class:`replica.continuation.SweepResult` to ``path`` atomically.

    Parameters
    ----------
    path : str or Path
        Output file (overwritten if present; the caller checks ``--overwrite``).
    result : SweepResult
    parameters : dict
        Every resolved model option; stored as JSON in the root attribute ``parameters``.
    configuration : dict, optional, keyword-only
        Full resolved command-line configuration; stored as JSON in ``configuration``.
    grids : dict, optional, keyword-only
        Extra 1-D coordinates written to every branch group, e.g. the two-layer model's
        ``s_values`` and ``s_weights`` (``s_values`` becomes a dimension scale of the
        datasets of :data:`S_AXIS_DATASETS`). Default: ``result.grids``
        (:func:`replica.workflow.run.run_sweep` fills it from the model).
    attributes : dict, optional, keyword-only
        Extra root attributes (strings or numbers). The result's ``architecture``, ``s_grid_rule`` (the
        rule in ``s`` of models with two or more hidden layers and linear parts) and ``state_schema`` (JSON,
        :func:`replica.interface.schema_to_json`), when set, are written as root attributes of those names;
        entries of ``attributes`` override them.
    axes : dict, optional, keyword-only
        ``{dataset: (scale, …)}``: the dimension scales of the axes after α of those datasets
        (names of ``readout_values`` or of 1-D ``grids`` entries), e.g. the L ≥ 3 model's
        :attr:`~replica.models.deep_linear.DeepLinearModel.dataset_axes`; every axis is then
        labelled and the group opens with xarray. Default: ``result.dataset_axes``.

    Returns
    -------
    Path
        ``path`` (layout in the module docstring: ``/branches/<name>``, ``/equilibrium``,
        ``/equilibrium_changes``, ``/transitions``).

    Raises
    ------
    OSError
        The file cannot be written (permissions, full disk); a previous file at ``path`` is then
        left unchanged (the data go to a temporary file that replaces it only when complete).
    KeyError
        A scale named in ``axes`` is not among ``readout_values`` and the ``grids`` entries.
    """
    path = Path(path)
    readout_values = np.asarray(result.readout_values, dtype=float)
    grids = getattr(result, "grids", None) if grids is None else grids
    axes = getattr(result, "dataset_axes", None) if axes is None else axes
    schema = getattr(result, "state_schema", None)
    own = {"s_grid_rule": getattr(result, "s_grid_rule", None),
           "state_schema": None if schema is None else schema_to_json(schema)}
    attributes = {**{k: v for k, v in own.items() if v}, **(attributes or {})}
    with atomic_h5(path) as h5:
        _root_attrs(h5, parameters, kind="sweep", complete=True, configuration=configuration,
                    architecture=getattr(result, "architecture", ""))
        for key, val in attributes.items():
            h5.attrs[key] = val
        g = h5.create_group("branches")
        for name, b in result.branches.items():
            gb = g.create_group(name)
            alpha = _write_array(gb, "alpha", b.alpha)
            alpha.make_scale("alpha")
            for key, val in b.fields.items():
                _write_array(gb, key, val)
            rv = _write_array(gb, "readout_values", readout_values)
            rv.make_scale("readout_values")
            _write_array(gb, "readout_weights", result.readout_weights)
            sv = None
            named = {scale for names in (axes or {}).values() for scale in names}
            for key, val in (grids or {}).items():
                ds = _write_array(gb, key, np.asarray(val, dtype=float))
                if key.startswith("s_values") or key in named:
                    ds.make_scale(key)
                    sv = ds if key == "s_values" else sv
            _attach_scales(gb, alpha, rv, sv, axes or {}, coordinates=tuple(grids or ()))
            for key, val in (b.attributes() if hasattr(b, "attributes") else {}).items():
                gb.attrs[key] = val
        reason = getattr(result, "universal_only_reason", None)
        if reason:
            g.attrs["universal_only_reason"] = str(reason)
        ge = h5.create_group("equilibrium")
        for key, val in result.equilibrium.items():
            _write_array(ge, key, val)
        ge["alpha"].make_scale("alpha")
        _attach_scales(ge, ge["alpha"])
        _write_changes(h5, getattr(result, "equilibrium_changes", []))
        features = getattr(result, "feature_transitions", None) or {}
        if features:
            gf = h5.create_group("feature_transitions")
            for name in FEATURE_DATASETS:
                _write_array(gf, name, features[name])
        gt = h5.create_group("transitions")
        for key, val in result.transitions.items():
            gt.attrs[key] = float(val)
        for name, per in getattr(result, "branch_transitions", {}).items():
            gbt = gt.create_group(name)
            for key, val in per.items():
                gbt.attrs[key] = float(val)
    logger.info("wrote %s", path)
    return path


#: datasets of the group ``feature_transitions`` (one entry per group and branch, ordered in α): the group's α
#: (located), its index (0 = the strongest |v|), the branch, ``feature`` or ``equilibrium_change``, whether the
#: branch is the equilibrium there, the group's v² and readout mass, its mean Q on both sides, mmse on both sides
FEATURE_DATASETS = ("alpha", "group", "branch", "kind", "equilibrium", "s", "mass", "overlap_before",
                    "overlap_after", "mmse_before", "mmse_after")

#: datasets of the group ``equilibrium_changes`` (one entry per change, ordered in α)
CHANGE_DATASETS = ("alpha", "from_branch", "to_branch", "mmse_before", "mmse_after", "kind")


def _write_changes(h5, changes):
    """Group ``equilibrium_changes``: one entry per change of the equilibrium branch."""
    gc = h5.create_group("equilibrium_changes")
    columns = {"alpha": ("alpha", float), "from_branch": ("from", str), "to_branch": ("to", str),
               "mmse_before": ("mmse_before", float), "mmse_after": ("mmse_after", float), "kind": ("kind", str)}
    for name in CHANGE_DATASETS:
        key, kind = columns[name]
        if kind is float:
            data = np.asarray([float(c.get(key, math.nan)) for c in changes], dtype=float)
        else:
            data = np.asarray([str(c.get(key, "")) for c in changes], dtype=object)
        _write_array(gc, name, data)
    gc["alpha"].make_scale("alpha")
    for name in CHANGE_DATASETS[1:]:
        gc[name].dims[0].attach_scale(gc["alpha"])


def file_kind(path) -> str:
    """Kind of a file written by this project.

    Returns
    -------
    str
        ``"sweep"``, ``"phase_diagram"``, ``"experiment"`` (a ``replica-experiment``
        file without theory), ``"spectrum"`` (``replica-spectrum``), ``"sgd"``
        (``replica-sgd``), or ``"unknown"``. Checkpoints of interrupted commands
        report their kind too (see ``complete``).

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        The file cannot be opened as HDF5 (locked, unreadable, not HDF5, truncated; one line).
    """
    from .safe_write import file_kind_of, open_h5

    with open_h5(path, option="FILE.h5") as h5:
        return file_kind_of(h5)


def _is_complete(h5) -> bool:
    return int(h5.attrs.get("complete", 1)) == 1


def read_sweep(path) -> dict:
    """Read a sweep file into nested dicts of numpy arrays.

    Returns
    -------
    dict
        ``parameters`` (dict), ``configuration`` (dict, empty if not recorded),
        ``version``, ``branches`` {name: {dataset: array}}, ``branch_attributes``
        {name: {``alpha_start``, ``alpha_end``, ``start_kind``, ``end_kind``, ``seed``}},
        ``equilibrium`` {dataset: array}, ``equilibrium_changes`` {dataset: array} (see
        :data:`CHANGE_DATASETS`), ``transitions`` {name: float}, ``branch_transitions``
        {branch: {attribute: float}}, ``universal_only_reason`` (str or None),
        ``experiments`` {(sampler, init): {dataset: array}} (empty when the file has none),
        ``architecture`` (str, empty for files of older versions), ``state_schema`` (tuple of
        :class:`replica.interface.FieldSpec`, or None when the file has none).

    Raises
    ------
    IncompleteFileError
        The file is the checkpoint of an interrupted sweep (resume it first).
    """

    def load(group):
        out = {}
        for k, ds in group.items():
            if isinstance(ds, h5py.Dataset):
                v = ds[()]
                if ds.dtype.kind == "O" or h5py.check_string_dtype(ds.dtype):
                    v = np.asarray(ds.asstr()[()], dtype=object)
                out[k] = v
        return out

    from .safe_write import open_h5

    with open_h5(path, option="FILE.h5", kinds=("sweep",)) as h5:
        if not _is_complete(h5):
            raise IncompleteFileError(f"{path} is the checkpoint of an interrupted run; "
                                      "finish it with the same command and --resume")
        data = {
            "parameters": json.loads(h5.attrs["parameters"]),
            "configuration": json.loads(h5.attrs.get("configuration", "{}")),
            "version": h5.attrs.get("version", ""),
            "branches": {name: load(g) for name, g in h5["branches"].items()},
            "equilibrium": load(h5["equilibrium"]),
            "transitions": {k: float(v) for k, v in h5["transitions"].attrs.items()} if "transitions" in h5 else {},
            "branch_transitions": ({name: {k: float(v) for k, v in g.attrs.items()}
                                    for name, g in h5["transitions"].items()} if "transitions" in h5 else {}),
            "branch_attributes": {name: {k: (v.decode() if isinstance(v, bytes) else
                                             (float(v) if np.ndim(v) == 0 and not isinstance(v, str) else v))
                                         for k, v in g.attrs.items()}
                                  for name, g in h5["branches"].items()},
            "universal_only_reason": _decode(h5["branches"].attrs.get("universal_only_reason")),
            "equilibrium_changes": load(h5["equilibrium_changes"]) if "equilibrium_changes" in h5 else {},
            "feature_transitions": load(h5["feature_transitions"]) if "feature_transitions" in h5 else {},
            "architecture": _decode(h5.attrs.get("architecture", "")),
            "state_schema": schema_from_json(_decode(h5.attrs["state_schema"])) if "state_schema" in h5.attrs
            else None,
        }
    data["experiments"] = read_experiments(path, option="FILE.h5")
    return data


def sweep_data(result, parameters: dict | None = None) -> dict:
    """A :class:`replica.continuation.SweepResult` as the dict :func:`read_sweep` returns for its file (without
    writing it), e.g. for :func:`replica.workflow.plotting.plot_sweep` in a notebook.

    Parameters
    ----------
    result : SweepResult
    parameters : dict, optional
        The resolved options (shown in figure titles); default ``{}``.

    Returns
    -------
    dict
        Same keys as :func:`read_sweep` (``configuration``, ``version`` and ``experiments`` empty).
    """
    values = np.asarray(result.readout_values, dtype=float)
    weights = np.asarray(result.readout_weights, dtype=float)
    grids = {k: np.asarray(v, dtype=float) for k, v in (getattr(result, "grids", None) or {}).items()}
    branches = {name: {"alpha": np.asarray(b.alpha), **{k: np.asarray(v) for k, v in b.fields.items()},
                       "readout_values": values, "readout_weights": weights, **grids}
                for name, b in result.branches.items()}
    changes = getattr(result, "equilibrium_changes", [])
    columns = {"alpha": "alpha", "from_branch": "from", "to_branch": "to", "mmse_before": "mmse_before",
               "mmse_after": "mmse_after", "kind": "kind"}
    return {
        "parameters": dict(parameters or {}), "configuration": {}, "version": "",
        "branches": branches,
        "branch_attributes": {name: b.attributes() for name, b in result.branches.items()},
        "equilibrium": {k: np.asarray(v) for k, v in result.equilibrium.items()},
        "equilibrium_changes": {col: np.asarray([c.get(key, "") for c in changes],
                                                dtype=float if col in ("alpha", "mmse_before", "mmse_after") else object)
                                for col, key in columns.items()},
        "feature_transitions": {k: np.asarray(v) for k, v in (getattr(result, "feature_transitions", None) or {}).items()},
        "transitions": {k: float(v) for k, v in result.transitions.items()},
        "branch_transitions": {n: {k: float(v) for k, v in per.items()}
                               for n, per in getattr(result, "branch_transitions", {}).items()},
        "universal_only_reason": getattr(result, "universal_only_reason", None),
        "architecture": getattr(result, "architecture", ""),
        "state_schema": getattr(result, "state_schema", None),
        "experiments": {},
    }


def _decode(value):
    return value.decode() if isinstance(value, bytes) else value


def read_experiments(path, *, option="--experiment") -> dict:
    """Experiment groups ``experiments/<sampler>/<init>`` of a file (written by ``replica-experiment``).

    ``option`` names the file in the one-line error of an unreadable file
    (:class:`replica.workflow.safe_write.ResultFileError`).

    Returns
    -------
    dict
        ``{(sampler, init): {dataset: ndarray}}`` with at least ``alpha``, ``mmse_mean``,
        ``mmse_sem`` and, when stored, ``overlap_mean`` (n_alpha × L); empty if the file
        has no experiments.
    """
    from .safe_write import open_h5

    out = {}
    with open_h5(path, option=option) as h5:
        if "experiments" not in h5:
            return out
        for sampler, group in h5["experiments"].items():
            if not isinstance(group, h5py.Group):
                continue
            for init, sub in group.items():
                if isinstance(sub, h5py.Group) and "alpha" in sub:
                    out[(sampler, init)] = {name: sub[name][()] for name in sub
                                            if isinstance(sub[name], h5py.Dataset)}
    return out


# --------------------------------------------------------------------------- checkpoints
#: datasets of one solve pass of a sweep checkpoint (``/checkpoint/pass_<k>``), all of shape (n_alpha,) but ``x``
CHECKPOINT_DATASETS = ("done", "has_state", "converged", "iterations", "residual", "status", "start", "damping", "x")


def empty_checkpoint_record(n_alpha: int) -> dict:
    """The record of one solve pass before any solve: the arrays of :data:`CHECKPOINT_DATASETS` on ``n_alpha``
    points (``x``, n_alpha × p, is None until the first solve gives ``p``)."""
    n = int(n_alpha)
    return {"done": np.zeros(n, bool), "has_state": np.zeros(n, bool), "converged": np.zeros(n, bool),
            "iterations": np.zeros(n, np.int64), "residual": np.full(n, np.nan),
            "status": np.array([""] * n, dtype=object), "start": np.array([""] * n, dtype=object),
            "damping": np.full(n, np.nan), "x": None}


def write_checkpoint(path, alphas, records: dict, parameters: dict, configuration: dict | None = None, *,
                     architecture: str = "", lines=None) -> Path:
    """Write the solves of an unfinished sweep atomically to ``path`` (a valid HDF5 file, ``complete = 0``).

    Parameters
    ----------
    path : str or Path
    alphas : ndarray, shape (n_alpha,)
        The sorted α grid of the sweep.
    records : dict
        ``{key: record}`` with the arrays of :func:`empty_checkpoint_record` (``key``: ``universal`` or
        ``<start>:<down|up>``), as :class:`replica.workflow.run.SweepCheckpoint` keeps them.
    parameters, configuration : dict
        Root attributes, as for :func:`write_sweep`.
    architecture : str, keyword-only
        Registry name of the solver (root attribute ``architecture``; empty: not written).
    lines : list, keyword-only
        ``replica-phase-diagram --trace``: the tasks of
        :func:`replica.continuation.codim2.phase_line_tasks` done so far, one
        :class:`~replica.continuation.codim2.PhaseLine` (or None: not traced) each, in the group
        ``traced_lines/<k>`` (:func:`read_checkpoint_lines`).

    Raises
    ------
    OSError
        As :func:`write_phase_diagram`.
    """
    with atomic_h5(Path(path)) as h5:
        _root_attrs(h5, parameters, kind="sweep", complete=False, configuration=configuration, architecture=architecture)
        g = h5.create_group("checkpoint")
        g.create_dataset("alpha", data=np.asarray(alphas, dtype=float))
        for k, (key, rec) in enumerate(sorted(records.items())):
            gk = g.create_group(f"pass_{k}")
            gk.attrs["key"] = key
            for name, val in rec.items():
                if val is not None:
                    _write_array(gk, name, val)
        if lines is not None:
            _write_checkpoint_lines(h5.create_group("traced_lines"), lines)
    return Path(path)


def _write_checkpoint_lines(g, lines):
    """Each task's line (``traced = 0``: not traced): its kind, branches, end, every point's parameter and α and
    branch points (``points_x_<j>``, one row per point, NaN where a slot is empty), and the fold direction of
    its last step (``last_fold_direction_<j>``): what :func:`replica.continuation.codim2.critical_points` and
    :func:`replica.continuation.triples.triple_points` start from."""
    for k, line in enumerate(lines):
        gl = g.create_group(str(k))
        gl.attrs["traced"] = line is not None
        if line is None:
            continue
        gl.attrs["kind"], gl.attrs["end"], gl.attrs["parameter"] = line.kind, line.end, line.parameter
        gl.attrs["branches"] = ",".join(line.branches)
        _write_array(gl, "parameter_values", np.array([pt.parameter for pt in line.points], dtype=float))
        _write_array(gl, "alpha", np.array([pt.alpha for pt in line.points], dtype=float))
        gl.attrs["last_results"] = len(line.points[-1].results)
        for j, r in enumerate(line.points[-1].results):
            if r is None:
                continue
            fold = r.info.get("fold")
            if fold and "direction" in fold:
                _write_array(gl, f"last_fold_direction_{j}", np.asarray(fold["direction"], dtype=float))
        for j in range(len(line.points[-1].results)):  # every point's branch points (triple points start there)
            rows = [None if len(pt.results) <= j or pt.results[j] is None else np.asarray(pt.results[j].x, float)
                    for pt in line.points]
            size = max((r.size for r in rows if r is not None), default=0)
            if size:
                _write_array(gl, f"points_x_{j}", np.stack([np.full(size, np.nan) if r is None or r.size != size
                                                            else r for r in rows]))


def read_checkpoint_lines(path) -> list:
    """The traced lines stored by :func:`write_checkpoint` (``lines``), one per task done: a
    :class:`~replica.continuation.codim2.PhaseLine` or None. Every point keeps its parameter, α and its
    results' packed points; the last one also its fold directions (``info["fold"]["direction"]``): as much as
    :func:`~replica.continuation.codim2.critical_points`, :func:`~replica.continuation.triples.triple_points`
    and :func:`write_phase_lines` read. An empty list
    where the file holds no lines.

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        The file cannot be opened.
    """
    from ..continuation.codim2 import LinePoint, PhaseLine
    from ..engine import FixedPointResult
    from .safe_write import open_h5

    out = []
    with open_h5(path, option="--resume") as h5:
        g = h5.get("traced_lines")
        if g is None:
            return out
        for k in sorted(g, key=int):
            gl = g[k]
            if not bool(gl.attrs["traced"]):
                out.append(None)
                continue
            pvals, alphas = gl["parameter_values"][()], gl["alpha"][()]
            slots = int(gl.attrs["last_results"])
            if pvals.ndim != 1 or pvals.size == 0 or alphas.shape != pvals.shape or slots < 1:
                raise ValueError(f"traced line {k}: its points are damaged")
            xs = [gl[f"points_x_{j}"][()] if f"points_x_{j}" in gl else None for j in range(slots)]
            points = []
            for i, (p, a) in enumerate(zip(pvals, alphas)):
                results = []
                for j in range(slots):
                    x = None if xs[j] is None else xs[j][i]
                    if x is None or not np.any(np.isfinite(x)):
                        results.append(None)
                        continue
                    info = {"resumed": True}
                    if i == len(pvals) - 1 and f"last_fold_direction_{j}" in gl:
                        info["fold"] = {"direction": gl[f"last_fold_direction_{j}"][()]}
                    results.append(FixedPointResult(np.array(x), True, "converged", "resumed", 0, 0.0, 0.0,
                                                    "resumed", info))
                points.append(LinePoint(float(p), float(a), tuple(results)))
            if points[-1].results[-1] is None:  # a fold's, an instability's or the crossing's upper branch
                raise ValueError(f"traced line {k}: the branch point of its last step is missing")
            out.append(PhaseLine(str(gl.attrs["kind"]), str(gl.attrs["parameter"]), points, str(gl.attrs["end"]),
                                 tuple(b for b in str(gl.attrs["branches"]).split(",") if b)))
    return out


def read_checkpoint(path, alphas) -> dict:
    """The solve records stored by :func:`write_checkpoint`, ``{key: {dataset: array}}``.

    Raises
    ------
    ValueError
        The file holds no checkpoint or its α grid differs from ``alphas``.
    replica.workflow.safe_write.ResultFileError
        The file cannot be opened (locked, truncated, not HDF5, …).
    """
    from .safe_write import open_h5

    alphas = np.asarray(alphas, dtype=float)
    out = {}
    with open_h5(path, option="--resume") as h5:
        if "checkpoint" not in h5:
            raise ValueError(f"{path} holds no checkpoint")
        g = h5["checkpoint"]
        if g["alpha"].shape != alphas.shape or not np.array_equal(g["alpha"][()], alphas):
            raise ValueError(f"{path}: the α grid of the checkpoint differs from --alpha")
        for sub in g.values():
            if not isinstance(sub, h5py.Group):
                continue
            key = sub.attrs["key"]
            key = key.decode() if isinstance(key, bytes) else str(key)
            rec = out.setdefault(key, {})
            for name in CHECKPOINT_DATASETS:
                if name in sub:
                    ds = sub[name]
                    rec[name] = (np.asarray(ds.asstr()[()], dtype=object)
                                 if h5py.check_string_dtype(ds.dtype) else ds[()])
    return out


def read_root_attrs(path, *, kinds=None, option="") -> dict:
    """Root attributes of a file: ``parameters``/``configuration`` decoded, ``complete`` as bool.

    Parameters
    ----------
    path : str or Path
    kinds : iterable of str, optional, keyword-only
        Accepted file kinds (``sweep``, ``phase_diagram``, …); see :func:`replica.workflow.safe_write.open_h5`.
    option : str, keyword-only
        Option named in error messages.

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        Locked, unreadable, not HDF5, truncated, or of another kind (one-line message).
    """
    from .safe_write import open_h5

    with open_h5(path, option=option, kinds=kinds) as h5:
        out = {}
        for k, v in h5.attrs.items():
            if isinstance(v, bytes):
                v = v.decode()
            if k in ("parameters", "configuration"):
                v = json.loads(v)
            out[k] = v
        out["complete"] = bool(int(h5.attrs.get("complete", 1)))
    return out


__all__.append("read_root_attrs")
__all__ += ["write_phase_lines", "read_phase_lines"]


# --------------------------------------------------------------------------- phase diagrams
def write_phase_diagram(path, data: dict, parameters: dict, *, parameter: str, complete: bool,
                        configuration: dict | None = None, architecture: str = "") -> Path:
    """Write a phase diagram atomically (layout in the module docstring).

    Parameters
    ----------
    path : str or Path
    data : dict
        ``alpha`` (n_alpha,), ``<parameter>`` (n_param,), ``done`` (n_param,), and arrays of
        shape (n_param, n_alpha) (``mmse``, ``free_entropy``, ``branch``, ``mmse_<b>``,
        ``exists_<b>``, …) or (n_param,) (``alpha_sp``, ``alpha_c``).
    parameters : dict
        Model options common to the whole grid.
    parameter : str, keyword-only
        Name of the second axis (``delta``, ``gamma``, ``readout_grid``).
    complete : bool, keyword-only
        False for a checkpoint (some lines not done yet).
    configuration : dict, optional, keyword-only
    architecture : str, keyword-only
        Registry name of the solver of every line (root attribute ``architecture``; empty: not written).

    Raises
    ------
    OSError
        The file cannot be written (a previous file at ``path`` is left unchanged).
    """
    path = Path(path)
    with atomic_h5(path) as h5:
        _root_attrs(h5, parameters, kind="phase_diagram", complete=complete, configuration=configuration,
                    architecture=architecture)
        h5.attrs["parameter"] = parameter
        alpha = _write_array(h5, "alpha", data["alpha"])
        alpha.make_scale("alpha")
        par = _write_array(h5, parameter, data[parameter])
        par.make_scale(parameter)
        for key, val in data.items():
            if key in ("alpha", parameter, "layer"):
                continue
            _write_array(h5, key, val)
        n_par, n_alpha = par.shape[0], alpha.shape[0]
        n_layers = next((v.shape[1] for k, v in data.items() if k.endswith("_layer")), 0)
        layer = None
        if n_layers:  # per-layer transition lines (n_param, L): their own coordinate, the layer ℓ = 1 … L
            layer = _write_array(h5, "layer", np.arange(1, n_layers + 1))
            layer.make_scale("layer")
        for name, ds in h5.items():
            if name in ("alpha", parameter, "layer") or not isinstance(ds, h5py.Dataset):
                continue
            if ds.ndim >= 1 and ds.shape[0] == n_par:
                ds.dims[0].attach_scale(par)
                if ds.ndim >= 2 and name.endswith("_layer"):
                    ds.dims[1].attach_scale(layer)
                elif ds.ndim >= 2 and ds.shape[1] == n_alpha:
                    ds.dims[1].attach_scale(alpha)
    logger.info("wrote %s", path)
    return path


def read_phase_diagram(path, *, allow_incomplete=False, option="FILE.h5") -> dict:
    """Read a phase-diagram file.

    Returns
    -------
    dict
        ``parameter`` (name of the second axis), ``parameters``, ``configuration``,
        ``complete`` and every dataset as a numpy array (strings as object arrays).

    Raises
    ------
    IncompleteFileError
        Unfinished file and ``allow_incomplete`` is False.
    replica.workflow.safe_write.ResultFileError
        Unreadable file or not a phase diagram (one-line message naming ``option``).
    """
    from .safe_write import open_h5

    with open_h5(path, option=option, kinds=("phase_diagram",)) as h5:
        complete = _is_complete(h5)
        if not complete and not allow_incomplete:
            raise IncompleteFileError(f"{path} is the checkpoint of an interrupted run; "
                                      "finish it with the same command and --resume")
        out = {
            "parameter": str(h5.attrs["parameter"]),
            "parameters": json.loads(h5.attrs["parameters"]),
            "configuration": json.loads(h5.attrs.get("configuration", "{}")),
            "complete": complete,
        }
        for k, ds in h5.items():
            if isinstance(ds, h5py.Dataset):
                out[k] = (np.asarray(ds.asstr()[()], dtype=object) if h5py.check_string_dtype(ds.dtype)
                          else ds[()])
    return out


# --------------------------------------------------------------------------- traced phase lines
def write_phase_lines(path, lines, parameters: dict, *, parameter: str, requested, critical=(), triples=(),
                      configuration: dict | None = None, architecture: str = "") -> Path:
    """Write traced phase lines (:func:`replica.continuation.codim2.trace_phase_lines`) atomically.

    Layout: root attributes as every file (``kind = "phase_lines"``), ``parameter`` and ``requested`` (the
    requested values of the parameter, which every line hits exactly where it exists); one group
    ``lines/<k>`` per line (k = 0, 1, … in the order given) with the datasets ``<parameter>`` and ``alpha``
    (every accepted continuation step, in the order traced), ``metastable`` (1 where a crossing line lies beyond
    a triple point, between metastable branches: ``line.metastable``, 0 when absent) and the attributes ``kind`` (``fold``,
    ``crossing`` or ``instability``), ``branches`` (comma-separated names at the first value) and ``end``
    (``range`` or ``lost``); the group ``critical_points`` with ``<parameter>``, ``alpha`` (n,) and ``lines``
    (n × 2, the indices k of the two fold lines that meet) for the cusps ``critical``
    (:class:`replica.continuation.codim2.CriticalPoint`); the group ``triple_points`` with the same datasets
    (the two crossing lines that meet) for ``triples`` (:class:`replica.continuation.triples.TriplePoint`).

    Raises
    ------
    OSError
        The file cannot be written (a previous file at ``path`` is left unchanged).
    """
    path = Path(path)
    with atomic_h5(path) as h5:
        _root_attrs(h5, parameters, kind="phase_lines", complete=True, configuration=configuration,
                    architecture=architecture)
        h5.attrs["parameter"] = parameter
        h5.attrs["requested"] = np.asarray(requested, dtype=float)
        g = h5.create_group("lines")
        for k, line in enumerate(lines):
            gl = g.create_group(str(k))
            _write_array(gl, parameter, np.array([pt.parameter for pt in line.points], dtype=float))
            _write_array(gl, "alpha", np.array([pt.alpha for pt in line.points], dtype=float))
            _write_array(gl, "metastable", np.array(getattr(line, "metastable", None) or [False] * len(line.points),
                                                    dtype=np.uint8))
            gl.attrs["kind"] = line.kind
            gl.attrs["branches"] = ",".join(line.branches)
            gl.attrs["end"] = line.end
        gc = h5.create_group("critical_points")
        _write_array(gc, parameter, np.array([c.parameter for c in critical], dtype=float))
        _write_array(gc, "alpha", np.array([c.alpha for c in critical], dtype=float))
        _write_array(gc, "lines", np.array([c.lines for c in critical], dtype=np.int64).reshape(-1, 2))
        gt = h5.create_group("triple_points")
        _write_array(gt, parameter, np.array([t.parameter for t in triples], dtype=float))
        _write_array(gt, "alpha", np.array([t.alpha for t in triples], dtype=float))
        _write_array(gt, "lines", np.array([t.lines for t in triples], dtype=np.int64).reshape(-1, 2))
    return path


def read_phase_lines(path, *, option="FILE.h5") -> dict:
    """Read a file of :func:`write_phase_lines`.

    Returns
    -------
    dict
        ``parameter``, ``parameters``, ``configuration``, ``requested`` (array), ``lines``: a list of dicts
        with ``kind``, ``branches`` (tuple), ``end``, ``<parameter>``, ``alpha`` and ``metastable`` (arrays), and
        ``critical_points`` and ``triple_points``: ``{<parameter>, alpha, lines}`` arrays (empty in files
        without them).

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        Unreadable file or not a file of traced phase lines (one-line message naming ``option``).
    """
    from .safe_write import open_h5

    with open_h5(path, option=option, kinds=("phase_lines",)) as h5:
        parameter = str(h5.attrs["parameter"])
        out = {"parameter": parameter, "parameters": json.loads(h5.attrs["parameters"]),
               "configuration": json.loads(h5.attrs.get("configuration", "{}")),
               "requested": np.asarray(h5.attrs["requested"], dtype=float), "lines": []}
        for k in sorted(h5["lines"], key=int):
            gl = h5["lines"][k]
            branches = gl.attrs["branches"]
            alpha = gl["alpha"][()]
            out["lines"].append({"kind": str(gl.attrs["kind"]), "end": str(gl.attrs["end"]),
                                 "branches": tuple(b for b in str(branches).split(",") if b),
                                 parameter: gl[parameter][()], "alpha": alpha,
                                 "metastable": (gl["metastable"][()].astype(bool) if "metastable" in gl
                                                else np.zeros(alpha.shape, bool))})
        for group in ("critical_points", "triple_points"):
            g = h5.get(group)
            out[group] = {parameter: np.zeros(0), "alpha": np.zeros(0), "lines": np.zeros((0, 2), int)} \
                if g is None else {k: g[k][()] for k in (parameter, "alpha", "lines")}
    return out


def read_spectrum(path) -> dict:
    """Read a ``replica-spectrum`` file.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict
        Datasets by name (``lambda``, ``m``, ``mmse``, ``iota`` and, when present, ``x``,
        ``density``) and ``attrs`` (root attributes; ``parameters`` and ``configuration``
        decoded from JSON).

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        Unreadable file (locked, not HDF5, truncated, …) or not a ``replica-spectrum`` file
        (one-line message; a ``ValueError``-like usage error).
    """
    import h5py

    from .safe_write import open_h5

    with open_h5(path, kinds=("spectrum",)) as h5:
        out = {name: h5[name][()] for name in h5 if isinstance(h5[name], h5py.Dataset)}
        attrs = dict(h5.attrs)
    for key in ("parameters", "configuration"):
        if key in attrs:
            attrs[key] = json.loads(attrs[key])
    out["attrs"] = attrs
    return out
