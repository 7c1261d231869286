"""Finite-size numerics for the teacher–student problem of docs/theory.md §1 and §7.

Posterior sampling (BlackJAX HMC/NUTS for Gaussian priors, single-flip Metropolis for
Rademacher priors) from the teacher (``informed``) or from a random start
(``uninformed``), Adam training, and the measurements that are compared with the theory:
half the Gibbs error on fresh test inputs, matched per-neuron overlaps, ``R₂``, overlap
histograms and a Nishimori check, averaged over teachers.

The heavy dependencies (``jax``, ``blackjax``, ``optax``) are optional:
``pip install 'replica-hciz[experiments]'``.  They are imported only when a sampler runs.

Modules
-------
teacher_student
    Architectures, teachers, datasets, the network output.
activations
    JAX versions of the activations of :mod:`replica.activations`.
samplers
    HMC/NUTS, Metropolis and Adam runners.
chains
    :class:`~replica.simulations.chains.ChainResult`, the output of a sampler or GAMP-RIE run.
measurements
    Errors, matched overlaps, ``R₂``, histograms, Nishimori statistics.
experiment
    :class:`~replica.simulations.experiment.ExperimentConfig` and
    :func:`~replica.simulations.experiment.run_experiment`.
gamp_rie
    GAMP-RIE message passing and its state evolution.
channels
    JAX log-likelihoods of the output channels.
sgd
    Online SGD of the two-layer student (numba kernels).
closure
    The Gaussian closure of online SGD and its scaling law.

Layer: below :mod:`replica.workflow` (docs/architecture.md); the files, figures and commands of
these numerics (``replica-experiment``, ``replica-sgd``) are in the workflow layer:
:mod:`replica.workflow.experiment_cli`, :mod:`replica.workflow.experiment_io`,
:mod:`replica.workflow.sgd_cli`, :mod:`replica.workflow.sgd_results`, :mod:`replica.workflow.sgd_plots`.
"""

__all__ = ["teacher_student", "activations", "samplers", "chains", "measurements", "experiment", "gamp_rie",
           "channels", "sgd", "closure"]
