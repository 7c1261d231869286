"""Scalar Gaussian channels of weight priors and readout laws (THEORY.md §3).

Public API
----------
WeightPrior, GaussianPrior, RademacherPrior, UniformPrior, get_weight_prior, WEIGHT_PRIORS
ReadoutLaw, get_readout_law, discrete_readout_law, READOUT_LAWS
"""
