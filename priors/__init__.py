"""Scalar Gaussian channels of weight priors and readout laws (docs/theory.md §3).

Public API
----------
WeightPrior, GaussianPrior, RademacherPrior, UniformPrior, get_weight_prior, WEIGHT_PRIORS
ReadoutLaw, get_readout_law, discrete_readout_law, density_readout_law, READOUT_LAWS
ContinuousLaw, GaussianLaw, UniformLaw, DensityLaw (exact continuous readout laws and their
quadrature rules)
"""

from .continuous_laws import ContinuousLaw, DensityLaw, GaussianLaw, UniformLaw
from .readout_laws import (
    DEFAULT_GRID_SIZE,
    MAX_GRID_SIZE,
    READOUT_LAWS,
    ReadoutLaw,
    density_readout_law,
    discrete_readout_law,
    get_readout_law,
    readout_rescaling,
)
from .weight_priors import (
    WEIGHT_PRIORS,
    GaussianPrior,
    RademacherPrior,
    UniformPrior,
    WeightPrior,
    get_weight_prior,
)

__all__ = [
    "WeightPrior",
    "GaussianPrior",
    "RademacherPrior",
    "UniformPrior",
    "get_weight_prior",
    "WEIGHT_PRIORS",
    "ReadoutLaw",
    "get_readout_law",
    "discrete_readout_law",
    "readout_rescaling",
    "READOUT_LAWS",
    "DEFAULT_GRID_SIZE",
    "MAX_GRID_SIZE",
    "density_readout_law",
    "ContinuousLaw",
    "GaussianLaw",
    "UniformLaw",
    "DensityLaw",
]
