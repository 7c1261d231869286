"""Rank-extensive spherical (HCIZ) integrals through free probability (THEORY.md §4).

No knowledge of neural networks lives here: inputs are spectral laws and SNRs.
"""
