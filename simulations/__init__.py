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
    :class:`~simulations.chains.ChainResult`, the output of a sampler or GAMP-RIE run.
measurements
    Errors, matched overlaps, ``R₂``, histograms, Nishimori statistics.
experiment
    :class:`~simulations.experiment.ExperimentConfig` and
    :func:`~simulations.experiment.run_experiment`.
io
    HDF5 output.
cli
    ``replica-experiment``.
"""

__version__ = "0.1.0"

__all__ = ["teacher_student", "activations", "samplers", "measurements", "experiment", "io", "cli"]
