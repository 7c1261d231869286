"""HDF5 output of experiments.

Layout
------
Root attributes: ``parameters`` (JSON of every option of :class:`ExperimentConfig`),
``configuration`` (JSON of every resolved command-line option, when written by
``replica-experiment``), ``version`` (package version), ``git_revision`` (if known),
``created`` (UTC, ISO 8601), ``error_convention`` (one line), ``averages`` (one line: which
chains enter the ``*_mean``/``*_sem`` datasets), ``output_channel`` (name) and
``output_channel_parameters`` (JSON of :meth:`priors.output_channels.OutputChannel.parameters`) of the
labels' law, and for a non-Gaussian channel ``output_mean_coefficient`` (μ₀: the channel reads the
centred output ``λ − μ₀ Σv/√k_L``, :mod:`replica.simulations.channels`).

Group ``experiments/<sampler>/<init>`` with datasets (α axis first, ``T`` teachers, ``L``
layers, ``B`` histogram bins):

=================================  ==================  ==========================================
name                               shape               meaning
=================================  ==================  ==========================================
``alpha``                          (A,)                sample ratios α = n/d²
``num_samples``                    (A,)                n
``mmse_mean``, ``mmse_sem``        (A,)                half Gibbs error (Adam, GAMP-RIE: test
                                                       error of the point estimate), mean and
                                                       standard error over the teachers whose
                                                       chain is not ``excluded``
``mmse``                           (A, T)              per teacher
``posterior_mean_error_*``         (A,)                E(⟨λ⟩ − λ⁰)² over kept samples
``overlap_mean``, ``overlap_sem``  (A, L)              matched per-neuron overlap per layer
``overlap``                        (A, T, L)           per teacher
``unbiased_overlap_mean``,         (A, L)              cross-fitted matched overlap per layer
``unbiased_overlap_sem``                               (mean 0 for unlearned networks)
``unbiased_overlap``               (A, T, L)           per teacher
``neuron_overlap_layer_1_mean``,   (A, Q)              cross-fitted overlap of the first-layer
``neuron_overlap_layer_1_sem``                         neurons in Q bins of the neuron quantile
                                                       (strongest effective readout first)
``neuron_overlap_layer_2_mean``,   (A, G, Q)           per-weight overlap between second-layer
``neuron_overlap_layer_2_sem``                         neurons of readout group G (strongest
                                                       first) and first-layer quantile bins
``neuron_quantile_edges``          (Q+1,)              bins of the neuron quantile
``r2_mean``, ``r2_sem``, ``r2``    (A,), (A,), (A, T)  R₂ = 1 − ‖S − S⁰‖²/(2kd²)
``overlap_histogram``              (A, L, B)           density of matched per-neuron overlaps
``overlap_matrix_histogram``       (A, L, B)           density of all entries of W Wᵀ⁰/k_{ℓ−1}
``overlap_bin_edges``              (B+1,)              histogram bins
``nishimori_*``                    (A,), (A, L), (A, T) teacher–sample vs sample–sample statistics
``acceptance_rate``, ``step_size``,
``divergences``,
``mean_integration_steps``,
``wall_time``                      (A, T)              sampler diagnostics
``converged``, ``iterations``      (A, T)              GAMP-RIE: convergence test passed (1/0;
                                                       NaN for samplers) and iterations run
                                                       (samplers: steps run)
``excluded``                       (A, T)              1 for a chain left out of every
                                                       ``*_mean``/``*_sem``: non-finite error
                                                       (diverged); its own per-teacher values
                                                       are kept as measured
``chains_used``                    (A,)                chains entering the averages
``trace_steps``, ``trace_error``   (S,), (A, T, S)     error along the run (steps of the last α)
``trace_samples``                  (A, S)              SGD only: samples seen at each trace point
``widths``                         (L,)                hidden widths k_ℓ
``classification_error_*``         (A,), (A, T)        ±1 channels only: P(ŷ ≠ y) of the Bayes
                                                       classifier ŷ = sign(⟨λ_c⟩ − θ) on n_test
                                                       fresh channel labels (``_mean``, ``_sem``,
                                                       per teacher)
``gibbs_classification_error_*``   (A,), (A, T)        the same for single samples sign(λ_c^a − θ)
``sign_disagreement_*``            (A,), (A, T)        P(ŷ ≠ sign(λ_c⁰ − θ))
``nishimori_teacher_disagreement_*``,                  P(sign(λ_c^a − θ) ≠ sign(λ_c⁰ − θ)) and
``nishimori_replica_disagreement_*`` (A,), (A, T)      the sample–sample version (Nishimori check)
=================================  ==================  ==========================================

The file is written to a temporary file in the target directory and moved into place
with :func:`os.replace`, so a reader never sees a partial file.  Root attributes ``kind =
"experiment"`` and ``complete = 1`` mark a finished file.

Checkpoint (``X.checkpoint.h5`` while ``replica-experiment -o X.h5`` runs, see
:mod:`replica.workflow.safe_write`): root attributes ``kind = "experiment"``, ``complete = 0``,
``parameters``; one group ``chains/<i_alpha>/<teacher>/<init>`` per finished chain holding
its measurements (:func:`replica.simulations.experiment.run_experiment`, ``on_chain``), rewritten
atomically after every chain.  ``replica-experiment --resume`` reuses them.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path

import numpy as np

__all__ = ["write_experiment", "read_experiment", "write_experiment_checkpoint", "read_experiment_checkpoint",
           "ERROR_CONVENTION", "package_version"]

ERROR_CONVENTION = ("mmse = half Gibbs error 1/2 E_x (lambda(x;W^a) - lambda(x;W0))^2 on fresh noiseless test "
                    "inputs averaged over posterior samples (Adam, GAMP-RIE: E_x (lambda_hat - lambda0)^2); label noise "
                    "and the constant mu0 sum(v)/sqrt(k) excluded (docs/theory.md §1)")


def package_version() -> str:
    """The project's version (:data:`replica.__version__`, written in one place)."""
    from .. import __version__

    return __version__


AVERAGES = ("*_mean and *_sem average the chains with excluded = 0; chains that diverged (non-finite error) are "
            "excluded, their per-teacher values kept as measured; chains with converged = 0 and a finite error "
            "are kept")


def write_experiment(path, config, results: dict, *, overwrite: bool = False, configuration=None) -> Path:
    """Write the results of :func:`replica.simulations.experiment.run_experiment` atomically.

    Parameters
    ----------
    path : str or Path
        Output HDF5 file.
    config : ExperimentConfig
    results : dict
        ``{init: InitResult}``.
    overwrite : bool
        Replace an existing file.
    configuration : dict, optional, keyword-only
        Resolved command-line options (root attribute ``configuration``, JSON).

    Returns
    -------
    Path

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    """
    from replica.workflow.io import atomic_h5, git_revision

    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True (--overwrite) to replace it")
    # shared atomic writer: temporary file, fsync, normal permissions, rename
    with atomic_h5(path) as f:
        f.attrs["parameters"] = config.to_json()
        f.attrs["version"] = package_version()
        f.attrs["git_revision"] = git_revision()
        f.attrs["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        f.attrs["error_convention"] = ERROR_CONVENTION
        f.attrs["averages"] = AVERAGES
        channel = config.output_channel()
        f.attrs["output_channel"] = channel.name
        f.attrs["output_channel_parameters"] = json.dumps(channel.parameters(), sort_keys=True)
        if config.channel != "gaussian":
            from ..simulations.channels import output_mean_coefficient

            f.attrs["output_mean_coefficient"] = output_mean_coefficient(
                config.activation, drop_hermite=config.drop_hermite, unit_variance=config.unit_variance,
                layers=config.layers)
        if configuration is not None:
            f.attrs["configuration"] = json.dumps(configuration, sort_keys=True)
        f.attrs["kind"] = "experiment"
        f.attrs["complete"] = np.int8(1)
        for init, result in results.items():
            group = f.require_group(f"experiments/{config.sampler}/{init}")
            group.attrs["sampler"] = config.sampler
            group.attrs["init"] = init
            group.create_dataset("alpha", data=np.asarray(result.alpha, float))
            group.create_dataset("num_samples", data=np.asarray(result.num_samples))
            for name, value in result.datasets.items():
                group.create_dataset(name, data=np.asarray(value))
    return path


def read_experiment(path) -> dict:
    """Read an experiment file back.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict
        ``{'parameters': dict, 'version': str, 'output_channel': dict, 'groups': {(sampler, init):
        {name: ndarray}}}``; ``output_channel`` is the stored ``output_channel_parameters`` (files written
        before channels existed: Gaussian with the stored Δ).

    Raises
    ------
    replica.workflow.safe_write.ResultFileError
        The file cannot be read (locked, not HDF5, truncated, damaged; one line, exit 2 in the commands).
    """
    from replica.workflow.safe_write import open_h5

    out = {"groups": {}}
    with open_h5(path, option="FILE.h5") as f:
        out["parameters"] = json.loads(f.attrs["parameters"])
        out["version"] = str(f.attrs["version"])
        stored = f.attrs.get("output_channel_parameters")
        out["output_channel"] = (json.loads(stored) if stored is not None
                                 else {"name": "gaussian", "delta": float(out["parameters"].get("delta", 0.1))})
        for sampler, group in f["experiments"].items():
            for init, sub in group.items():
                out["groups"][(sampler, init)] = {name: sub[name][()] for name in sub}
    return out


def write_experiment_checkpoint(path, config, chains: dict) -> Path:
    """Write the finished chains of an unfinished experiment atomically (layout in the module docstring).

    Parameters
    ----------
    path : str or Path
        Checkpoint file.
    config : ExperimentConfig
    chains : dict
        ``{(i_alpha, teacher, init): record}`` (records of
        :func:`replica.simulations.experiment.run_experiment`'s ``on_chain``).

    Returns
    -------
    Path
    """
    from replica.workflow.io import atomic_h5, git_revision

    path = Path(path)
    with atomic_h5(path) as f:
        f.attrs["parameters"] = config.to_json()
        f.attrs["version"] = package_version()
        f.attrs["git_revision"] = git_revision()
        f.attrs["kind"] = "experiment"
        f.attrs["complete"] = np.int8(0)
        for (a, t, init), record in sorted(chains.items()):
            group = f.require_group(f"chains/{a}/{t}/{init}")
            for name, value in record.items():
                group.create_dataset(name, data=np.asarray(value))
    return path


def read_experiment_checkpoint(path, config) -> dict:
    """Finished chains stored by :func:`write_experiment_checkpoint`.

    Parameters
    ----------
    path : str or Path
    config : ExperimentConfig
        The options of the run to resume; they must equal the stored ones.

    Returns
    -------
    dict
        ``{(i_alpha, teacher, init): record}``.

    Raises
    ------
    replica.workflow.config.UsageError
        The checkpoint was computed with other options (``--resume`` names them).
    replica.workflow.safe_write.ResultFileError
        Unreadable file (locked, truncated, not HDF5, another command's, another version's).
    """
    from replica.workflow.config import UsageError
    from replica.workflow.safe_write import open_h5

    chains = {}
    with open_h5(path, option="--resume", kinds=("experiment",)) as f:
        stored = json.loads(f.attrs["parameters"])
        wanted = json.loads(config.to_json())
        diff = sorted(k for k in set(stored) | set(wanted) if stored.get(k) != wanted.get(k))
        if diff:
            raise UsageError(f"--resume: {path} was computed with different options ({', '.join(diff)}); "
                             "use the same options or another --output")
        if "chains" not in f:
            return chains
        for a, by_teacher in f["chains"].items():
            for t, by_init in by_teacher.items():
                for init, group in by_init.items():
                    chains[(int(a), int(t), str(init))] = {name: group[name][()] for name in group}
    return chains
