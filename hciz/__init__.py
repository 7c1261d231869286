"""Rank-extensive spherical (HCIZ) integrals through free probability (docs/theory.md §4).

No knowledge of neural networks lives here: inputs are spectral laws and SNRs.
Tables of the symmetric channel are cached on disk (:mod:`hciz.cache`).
"""
import priors._numba_cache  # noqa: F401 - numba cache fallback for read-only installs, before any kernel

from .spectral import (
    density,
    generalized_wishart_inverse_stieltjes,
    stieltjes,
    support,
)
from .rectangular import RectangularChannel, rectangular_channel
from .rie import RIEResult, empirical_stieltjes, rie_denoise, spectral_divergence
from .symmetric import SymmetricChannel, readout_channel, symmetric_channel

__all__ = [
    "generalized_wishart_inverse_stieltjes",
    "stieltjes",
    "density",
    "support",
    "SymmetricChannel",
    "symmetric_channel",
    "readout_channel",
    "RectangularChannel",
    "rectangular_channel",
    "RIEResult",
    "rie_denoise",
    "empirical_stieltjes",
    "spectral_divergence",
]
