"""Scalar Gaussian channels of weight priors and readout laws (docs/theory.md §3).

Public API
----------
WeightPrior, GaussianPrior, RademacherPrior, UniformPrior, get_weight_prior, WEIGHT_PRIORS,
register_weight_prior, unregister_weight_prior, weight_prior_names, describe_weight_priors
ReadoutLaw, get_readout_law, discrete_readout_law, density_readout_law, READOUT_LAWS,
register_readout_law, unregister_readout_law, describe_readout_laws
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
    describe_readout_laws,
    readout_rescaling,
    register_readout_law,
    unregister_readout_law,
)
from .weight_priors import (
    WEIGHT_PRIORS,
    GaussianPrior,
    RademacherPrior,
    UniformPrior,
    WeightPrior,
    describe_weight_priors,
    get_weight_prior,
    register_weight_prior,
    unregister_weight_prior,
    weight_prior_names,
)

__all__ = [
    "WeightPrior",
    "GaussianPrior",
    "RademacherPrior",
    "UniformPrior",
    "get_weight_prior",
    "WEIGHT_PRIORS",
    "register_weight_prior",
    "unregister_weight_prior",
    "weight_prior_names",
    "describe_weight_priors",
    "register_readout_law",
    "unregister_readout_law",
    "describe_readout_laws",
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
