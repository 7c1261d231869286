"""Rank-extensive spherical (HCIZ) integrals through free probability (docs/theory.md §4).

No knowledge of neural networks lives here: inputs are spectral laws and SNRs.
Tables of the symmetric channel are cached on disk (:mod:`hciz.cache`).
"""

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

_WHERE = {
    "generalized_wishart_inverse_stieltjes": "spectral", "stieltjes": "spectral", "density": "spectral",
    "support": "spectral",
    "RectangularChannel": "rectangular", "rectangular_channel": "rectangular",
    "RIEResult": "rie", "empirical_stieltjes": "rie", "rie_denoise": "rie", "spectral_divergence": "rie",
    "SymmetricChannel": "symmetric", "readout_channel": "symmetric", "symmetric_channel": "symmetric",
}


def __getattr__(name):
    # lazy: `from hciz import readout_channel` loads the symmetric channel only (start-up)
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'hciz' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
