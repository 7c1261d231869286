"""The output channel of every architecture: where the labels enter the replica equations.

Every architecture's free entropy is ``f = Ψ_out(K_d, mmse) + G/α`` with ``G`` a function of the order
parameters only, and its conjugates carry ``1/D`` with ``D = 1/(2 ∂Ψ_out/∂K*)``
(:mod:`priors.output_channels`, docs/theory.md §10); for Gaussian label noise ``Ψ_out = −½ ln 2πe(Δ + mmse)``
and ``D = Δ + mmse``. :class:`OutputChannelTerms` gives each model these two functions of its ``mmse``, the
label term of the mutual information and the per-point classification errors of ±1 channels, so that the
architectures differ only in how they compute ``mmse`` from their order parameters.
"""

from __future__ import annotations

import math

from priors.output_channels import OUTPUT_CHANNELS, GaussianChannel, OutputChannel

__all__ = ["OutputChannelTerms", "make_output_channel"]


def make_output_channel(delta, output_channel) -> OutputChannel:
    """The channel of a model: ``output_channel`` if given (its Δ must then agree with ``delta`` unless
    ``delta`` is None; checked for the channels of the command line, :data:`~priors.output_channels.OUTPUT_CHANNELS`),
    else Gaussian label noise of variance ``delta``.

    Raises
    ------
    ValueError
        Δ < 0 or not finite; ``output_channel`` not an :class:`~priors.output_channels.OutputChannel`; ``delta``
        not the Δ of a named channel (``sign`` and ``logistic`` have Δ = 0).
    """
    if output_channel is None:
        return GaussianChannel(0.1 if delta is None else delta)
    if not isinstance(output_channel, OutputChannel):
        raise ValueError(f"output_channel must be a priors.output_channels.OutputChannel, got {output_channel!r}")
    if delta is not None and output_channel.name in OUTPUT_CHANNELS and float(delta) != output_channel.delta:
        # as the command line (--channel sign --delta 0.1 is refused): a Δ the channel does not have
        raise ValueError(f"delta {delta} disagrees with the {output_channel.name} channel's Δ = {output_channel.delta} "
                         f"({'noiseless' if output_channel.name == 'sign' else 'its noise is the channel parameter'})")
    return output_channel


class OutputChannelTerms:
    """Mixin: the channel's terms as functions of the model's ``mmse`` (module docstring).

    The model sets ``output_channel`` (:func:`make_output_channel`) and ``output_variance`` (``K_d``, the
    variance of the centred teacher pre-output). For the Gaussian channel the terms are the closed forms
    with the arithmetic of the Gaussian-only code (``Δ + mmse``), so results do not change with the
    generalization.
    """

    output_channel: OutputChannel
    output_variance: float

    @property
    def _gaussian(self) -> bool:
        return type(self.output_channel) is GaussianChannel

    def _clip(self, mmse) -> float:
        return min(max(float(mmse), 0.0), float(self.output_variance))

    def effective_variance(self, mmse) -> float:
        """``D(mmse) = 1/(2 ∂Ψ/∂K*)`` (Gaussian: ``Δ + mmse``), the scale of every conjugate."""
        if self._gaussian:
            return self.output_channel.delta + mmse
        return self.output_channel.effective_variance(self.output_variance, self._clip(mmse))

    def energetic(self, mmse) -> float:
        """``Ψ_out(K_d, mmse)`` (Gaussian: ``−½ ln 2πe(Δ + mmse)``, ``+inf`` where that vanishes)."""
        if self._gaussian:
            D = self.output_channel.delta + mmse
            return math.inf if not D > 0.0 else -0.5 * math.log(2 * math.pi * math.e * D)
        return self.output_channel.energetic(self.output_variance, self._clip(mmse))

    def label_term(self) -> float:
        """``E ln P_out(y | λ⁰)`` (Gaussian: ``−½ ln 2πeΔ``; ``+inf`` at Δ = 0)."""
        return self.energetic(0.0)

    def mutual_information_from(self, scale, free_entropy) -> float:
        """``scale · (E ln P_out(y | λ⁰) − f)``: the mutual information per parameter when ``scale`` is α over
        the number of weights per d² (infinite where either term is)."""
        label = self.label_term()
        if not (math.isfinite(label) and math.isfinite(free_entropy)):
            return math.inf
        return scale * (label - free_entropy)

    def channel_fields(self, mmse) -> dict:
        """Per-point fields of a ±1 channel: ``classification_error`` (Bayes classifier against the labels)
        and ``sign_disagreement`` (against the teacher's noiseless decision); ``{}`` otherwise."""
        ch = self.output_channel
        if not ch.binary or not math.isfinite(mmse):
            return {}
        m = self._clip(mmse)
        return {"classification_error": ch.classification_error(self.output_variance, m),
                "sign_disagreement": ch.sign_disagreement(self.output_variance, m)}
