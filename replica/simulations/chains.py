"""The result of one sampler, training or GAMP-RIE run (:class:`ChainResult`).

Kept apart from :mod:`replica.simulations.samplers` so that the algorithms that produce chains
(:mod:`replica.simulations.samplers`, :mod:`replica.simulations.gamp_rie`) share it without importing each
other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ChainResult"]


@dataclass
class ChainResult:
    """Output of one sampler or training run.

    Attributes
    ----------
    samples : tuple of ndarray or None
        Kept weights, one array per layer with shape ``(num_kept, k_ℓ, k_{ℓ−1})``; None for
        GAMP-RIE, which estimates ``S⁰`` and not the weights.
    test_outputs : ndarray, shape (num_kept, n_test)
        Network outputs ``λ(x; W^a)`` on the test inputs at every kept sample.
    trace_steps : ndarray of int
        Steps (transitions, sweeps or updates) at which the trace was recorded.
    trace_errors : ndarray
        Half Gibbs error (samplers) or test error (Adam) on the test inputs along the run.
    acceptance_rate : float
        Mean acceptance probability after warm-up (NaN for Adam).
    step_size : float
        Adapted step size (HMC/NUTS), learning rate (Adam), NaN for Metropolis.
    divergences : int
        Divergent transitions after warm-up (HMC/NUTS).
    mean_integration_steps : float
        Mean leapfrog steps per transition after warm-up (HMC/NUTS).
    warmup : int
        Warm-up (burn-in) steps excluded from the measurements.
    steps : int
        Total steps run.
    matrix_estimate : ndarray or None
        GAMP-RIE: estimate of ``S⁰ = W⁰ᵀdiag(v)W⁰/√(kd)``, shape ``(d, d)``.
    converged : float
        GAMP-RIE: 1.0 if its convergence test passed, else 0.0; NaN for the samplers.
    """

    samples: tuple
    test_outputs: np.ndarray
    trace_steps: np.ndarray
    trace_errors: np.ndarray
    acceptance_rate: float = float("nan")
    step_size: float = float("nan")
    divergences: int = 0
    mean_integration_steps: float = float("nan")
    warmup: int = 0
    steps: int = 0
    matrix_estimate: np.ndarray | None = None
    converged: float = float("nan")
