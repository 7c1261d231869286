r"""Output channels ``P_out(y | λ)`` of the labels: the energetic term of the free entropy (docs/theory.md §10).

The labels are ``y ~ P_out(· | λ⁰(x))`` with ``λ⁰`` the teacher's *centred* pre-output (the known mean
``μ₀ Σ v/√k`` removed; a threshold, where a channel has one, is a parameter of the channel). The replica
free entropy depends on the channel only through the energetic term of a generalized linear model
(Barbier, Krzakala, Macris, Miolane, Zdeborová, PNAS 116, 5451 (2019), eq. (11)): with the teacher's
and a replica's pre-outputs jointly Gaussian, variances ``K_d``, covariance ``K*``,
``V = K_d − K* = mmse``,

    Z(y; ω, V) = E_z P_out(y | ω + √V z),           z ~ N(0, 1)
    Ψ(K_d, mmse) = E_{ω ~ N(0, K*)} ∫ dy Z(y; ω, V) ln Z(y; ω, V)

and the conjugates of every architecture carry ``2 ∂Ψ/∂K* = E[Z g²]`` (``g = ∂_ω ln Z``) where the
Gaussian channel has ``1/(Δ + mmse)``. Each channel therefore supplies

* :meth:`OutputChannel.energetic`           ``Ψ`` (the Gaussian channel: ``−½ ln 2πe(Δ + mmse)``),
* :meth:`OutputChannel.effective_variance`  ``D = 1/(2 ∂Ψ/∂K*)`` (the Gaussian channel: ``Δ + mmse``),
  the quantity that replaces ``Δ + K_d − K*`` in every conjugate,
* :meth:`OutputChannel.label_term`          ``E ln P_out(y | λ⁰) = Ψ(K_d, 0)`` (minus the conditional
  entropy of the labels; enters the mutual information),
* for labels ±1, :meth:`OutputChannel.classification_error` (the Bayes-optimal classifier
  ``ŷ = argmax_y Z(y; ω, V)``: ``E_ω[1 − max_y Z]``) and :meth:`OutputChannel.sign_disagreement`
  (``P(ŷ ≠ sign(λ⁰ − θ))``, the disagreement with the teacher's noiseless decision),
* :meth:`OutputChannel.sample` (labels for the finite-size experiments) and
  :meth:`OutputChannel.log_likelihood`.

Channels: :class:`GaussianChannel` (closed forms), :class:`ProbitChannel` (``y = sign(λ − θ + √Δ z)``,
``Z = Φ(y(ω − θ)/√(V + Δ))``; ``Δ = 0`` is the noiseless :func:`sign` channel), :class:`LogisticChannel`
(``P(y = 1 | λ) = 1/(1 + e^{−λ/T})``), and any channel given by its log-likelihood:
:class:`BinaryChannel` (``y = ±1``) and :class:`RealChannel` (``y ∈ ℝ``).

Quadrature (fixed rules, no adaptive integration at call time): the outer average over ω is a
composite Gauss–Legendre rule on ``x = (ω − θ)/s`` (``s`` the channel's smoothing width
``√(V + Δ)``, or ``√(V + T²)`` for the logistic) over the interval where both the Gaussian weight
and the integrand are not negligible, 64 panels × 8 nodes with a panel edge at the decision point;
``Z`` of the logistic and of the user channels is a Gauss–Hermite average over z (48 nodes). The
probit quantities are accurate to ~1e-12 for every ``K*/s² ≤ 10¹⁶``; the Gauss–Hermite channels to
~1e-9 when the channel varies on scales above ``0.05 √K_d`` (the tests compare both paths).
"""

from __future__ import annotations

import abc
import math

import numpy as np

from ._lazy import lazy_import

special = lazy_import("scipy.special")

__all__ = [
    "CHANNEL_OPTIONS",
    "channel_keywords",
    "OutputChannel",
    "GaussianChannel",
    "ProbitChannel",
    "LogisticChannel",
    "BinaryChannel",
    "RealChannel",
    "sign_channel",
    "get_output_channel",
    "OUTPUT_CHANNELS",
    "glm_state_evolution",
]

#: names accepted by :func:`get_output_channel` (and ``--channel``)
OUTPUT_CHANNELS = ("gaussian", "probit", "sign", "logistic")
#: the keywords of :func:`get_output_channel` each named channel takes (one source for the API, the command
#: lines and the files)
CHANNEL_OPTIONS = {"gaussian": ("delta",), "probit": ("delta", "threshold"), "sign": ("threshold",),
                   "logistic": ("temperature",)}

_PANELS, _NODES = 64, 8
_GL_X, _GL_W = np.polynomial.legendre.leggauss(_NODES)
_GH_Z, _GH_W = np.polynomial.hermite_e.hermegauss(48)
_GH_W = _GH_W / _GH_W.sum()
#: range of the outer variable x (in units of the smoothing width) beyond which every integrand vanishes
_X_MAX = 40.0
#: the Gaussian weight of ω is negligible beyond this many standard deviations
_SIGMAS = 12.0


def _check(K_d, mmse):
    K_d, mmse = float(K_d), float(mmse)
    if not (math.isfinite(K_d) and K_d > 0):
        raise ValueError(f"K_d (output variance) must be finite and > 0, got {K_d}")
    if not (math.isfinite(mmse) and 0.0 <= mmse <= K_d * (1 + 1e-12)):
        raise ValueError(f"mmse must be in [0, K_d = {K_d}], got {mmse}")
    return K_d, min(mmse, K_d)


def _outer_rule(K_star, scale, shift, extra=()):
    """Nodes ``ω`` and weights (the Gaussian density included) of ``E_{ω ~ N(0, K*)}[·]`` for integrands
    that vary on the scale ``scale`` around ``shift`` and vanish further than ``_X_MAX·scale`` from it
    (composite Gauss–Legendre). The rule may cover only part of the Gaussian mass: its weights are not
    normalized, and integrands that do not vanish away from ``shift`` need ``scale = 0`` (±12 sd)."""
    sd = math.sqrt(max(K_star, 0.0))
    if sd == 0.0:
        return np.zeros(1), np.ones(1)
    lo = max(-_SIGMAS * sd, shift - _X_MAX * scale) if scale > 0 else -_SIGMAS * sd
    hi = min(_SIGMAS * sd, shift + _X_MAX * scale) if scale > 0 else _SIGMAS * sd
    if not hi > lo:  # the integrand lives where the weight is negligible (or the reverse): one panel
        lo, hi = -_SIGMAS * sd, _SIGMAS * sd
    edges = np.linspace(lo, hi, _PANELS + 1)
    cuts = [c for c in (shift, *extra) if lo < c < hi]
    if cuts:
        edges = np.unique(np.concatenate([edges, cuts]))
    mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * np.diff(edges)
    omega = (mid[:, None] + half[:, None] * _GL_X[None, :]).ravel()
    w = (half[:, None] * _GL_W[None, :]).ravel() * np.exp(-0.5 * omega**2 / K_star) / math.sqrt(2 * math.pi * K_star)
    return omega, w


class OutputChannel(abc.ABC):
    """An output channel ``P_out(y | λ)`` (module docstring).

    Attributes
    ----------
    name : str
    binary : bool
        Labels in {−1, +1} (classification errors defined).
    delta : float
        The noise parameter that ``--delta`` sets (label-noise variance; 0 where the channel has none).
    """

    name = "channel"
    binary = False
    delta = 0.0

    # -- to implement
    @abc.abstractmethod
    def energetic(self, K_d, mmse) -> float:
        """``Ψ(K_d, mmse) = E_ω ∫ dy Z ln Z`` at ``K* = K_d − mmse`` (module docstring).

        Parameters
        ----------
        K_d : float
            Variance of the centred teacher pre-output, > 0.
        mmse : float
            ``K_d − K*`` in [0, K_d].

        Returns
        -------
        float
            ``Ψ`` per sample (``+inf`` for a noiseless real-valued channel at mmse = 0).

        Raises
        ------
        ValueError
            ``K_d ≤ 0`` or ``mmse`` outside [0, K_d].
        """

    @abc.abstractmethod
    def effective_variance(self, K_d, mmse) -> float:
        """``D = 1/(2 ∂Ψ/∂K*) = 1/E[Z g²]``, > 0 (the Gaussian channel: ``Δ + mmse``); arguments as
        :meth:`energetic`."""

    @abc.abstractmethod
    def log_likelihood(self, y, lam):
        """``ln P_out(y | λ)`` (NumPy, broadcast over ``y`` and ``lam``)."""

    @abc.abstractmethod
    def sample(self, lam, rng):
        """Labels ``y ~ P_out(· | λ)`` for centred pre-outputs ``lam`` (ndarray), with ``rng`` a
        :class:`numpy.random.Generator`."""

    # -- derived
    def label_term(self, K_d) -> float:
        """``E ln P_out(y | λ⁰) = Ψ(K_d, 0)`` (``−∞`` never; ``+inf`` for a noiseless real channel)."""
        return self.energetic(K_d, 0.0)

    def parameters(self) -> dict:
        """Name and parameters (stored with every file)."""
        return {"name": self.name, "delta": float(self.delta)}

    def classification_error(self, K_d, mmse) -> float:
        """Bayes-optimal classification error ``P(ŷ ≠ y) = E_ω[1 − max_y Z(y; ω, mmse)]`` (labels ±1).

        Raises
        ------
        ValueError
            The channel's labels are not ±1; bad arguments (as :meth:`energetic`).
        """
        self._binary_only("classification_error")
        K_d, mmse = _check(K_d, mmse)
        omega, w = self._rule(K_d - mmse, mmse)
        zp = self._z_plus(omega, mmse)
        return float(w @ (1.0 - np.maximum(zp, 1.0 - zp)))

    def sign_disagreement(self, K_d, mmse) -> float:
        """``P(ŷ ≠ sign(λ⁰ − θ))``: the Bayes classifier against the teacher's noiseless decision (labels ±1;
        ``arccos(√(K*/K_d))/π`` for a symmetric channel with θ = 0)."""
        self._binary_only("sign_disagreement")
        K_d, mmse = _check(K_d, mmse)
        theta = float(getattr(self, "threshold", 0.0))
        omega, w = self._rule(K_d - mmse, mmse)
        plus = self._z_plus(omega, mmse) >= 0.5
        if mmse == 0.0:
            wrong = plus != (omega > theta)
        else:  # P(λ⁰ ≶ θ | ω) with λ⁰ | ω ~ N(ω, mmse)
            below = special.ndtr((theta - omega) / math.sqrt(mmse))
            wrong = np.where(plus, below, 1.0 - below)
        return float(w @ wrong)

    def _binary_only(self, what):
        if not self.binary:
            raise ValueError(f"{what}: the {self.name} channel does not have labels ±1")

    # binary channels: Z(+1; ω, V) and the rule of the outer average
    def _z_plus(self, omega, V):  # pragma: no cover - binary subclasses
        raise NotImplementedError

    def _rule(self, K_star, V):  # pragma: no cover - binary subclasses
        raise NotImplementedError

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.parameters().items() if k != "name")
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self.parameters() == other.parameters()

    def __hash__(self):
        return hash((type(self).__name__, tuple(sorted(self.parameters().items()))))


class GaussianChannel(OutputChannel):
    """``y = λ + √Δ z``: ``Ψ = −½ ln 2πe(Δ + mmse)``, ``D = Δ + mmse`` (closed forms, exact).

    Parameters
    ----------
    delta : float
        Label-noise variance Δ ≥ 0.
    """

    name = "gaussian"

    def __init__(self, delta=0.1):
        delta = float(delta)
        if not (math.isfinite(delta) and delta >= 0):
            raise ValueError(f"delta must be a finite number >= 0, got {delta}")
        self.delta = delta

    def energetic(self, K_d, mmse):
        D = self.delta + float(mmse)
        return math.inf if D <= 0.0 else -0.5 * math.log(2 * math.pi * math.e * D)

    def effective_variance(self, K_d, mmse):
        return self.delta + float(mmse)

    def log_likelihood(self, y, lam):
        r = np.asarray(y, float) - np.asarray(lam, float)
        return -0.5 * r**2 / self.delta - 0.5 * math.log(2 * math.pi * self.delta)

    def sample(self, lam, rng):
        lam = np.asarray(lam, float)
        return lam + math.sqrt(self.delta) * rng.standard_normal(lam.shape)


class _Binary(OutputChannel):
    """Labels ±1; subclasses give ``Z(+1; ω, V)``, ``∂_ω Z(+1)`` and the smoothing width."""

    binary = True
    threshold = 0.0

    def _width(self, V):  # the scale on which Z varies in ω
        raise NotImplementedError

    def _dz_plus(self, omega, V):  # ∂_ω Z(+1; ω, V) (= −∂_ω Z(−1))
        raise NotImplementedError

    def _rule(self, K_star, V):
        return _outer_rule(K_star, self._width(V), float(self.threshold))

    def energetic(self, K_d, mmse):
        K_d, mmse = _check(K_d, mmse)
        omega, w = self._rule(K_d - mmse, mmse)
        zp = np.clip(self._z_plus(omega, mmse), 0.0, 1.0)
        zm = 1.0 - zp
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(zp > 0, zp * np.log(zp), 0.0) + np.where(zm > 0, zm * np.log(zm), 0.0)
        return float(w @ terms)

    def effective_variance(self, K_d, mmse):
        K_d, mmse = _check(K_d, mmse)
        omega, w = self._rule(K_d - mmse, mmse)
        zp = self._z_plus(omega, mmse)
        dz = self._dz_plus(omega, mmse)
        with np.errstate(divide="ignore", invalid="ignore"):
            fisher = np.where((zp > 0) & (zp < 1), dz**2 / (zp * (1.0 - zp)), 0.0)  # Σ_y Z g² = Z'²/(Z(1−Z))
        fisher = float(w @ fisher)
        return 1.0 / fisher if fisher != 0 else math.inf

    def sample(self, lam, rng):
        lam = np.asarray(lam, float)
        p = np.exp(self.log_likelihood(1.0, lam))
        return np.where(rng.random(lam.shape) < p, 1.0, -1.0)


class ProbitChannel(_Binary):
    """``y = sign(λ − θ + √Δ z)``: ``Z(y; ω, V) = Φ(y(ω − θ)/√(V + Δ))``.

    Parameters
    ----------
    delta : float
        Variance Δ ≥ 0 of the noise before the sign (Δ = 0: the noiseless sign channel).
    threshold : float
        Decision threshold θ on the centred pre-output (default 0).
    """

    name = "probit"

    def __init__(self, delta=0.1, threshold=0.0):
        delta, threshold = float(delta), float(threshold)
        if not (math.isfinite(delta) and delta >= 0):
            raise ValueError(f"delta must be a finite number >= 0, got {delta}")
        if not math.isfinite(threshold):
            raise ValueError(f"threshold must be finite, got {threshold}")
        self.delta, self.threshold = delta, threshold

    def parameters(self):
        return {"name": self.name, "delta": self.delta, "threshold": self.threshold}

    def _width(self, V):
        return math.sqrt(V + self.delta)

    def _z_plus(self, omega, V):
        s = self._width(V)
        if s == 0.0:
            return (np.asarray(omega) > self.threshold).astype(float)
        return special.ndtr((np.asarray(omega) - self.threshold) / s)

    def _dz_plus(self, omega, V):
        s = self._width(V)
        u = (np.asarray(omega) - self.threshold) / s
        return np.exp(-0.5 * u**2) / (math.sqrt(2 * math.pi) * s)

    def energetic(self, K_d, mmse):
        K_d, mmse = _check(K_d, mmse)
        if self._width(mmse) == 0.0:
            return 0.0  # noiseless and learned: the labels are known
        omega, w = self._rule(K_d - mmse, mmse)
        u = (omega - self.threshold) / self._width(mmse)
        lp, lm = special.log_ndtr(u), special.log_ndtr(-u)
        return float(w @ (np.exp(lp) * lp + np.exp(lm) * lm))

    def effective_variance(self, K_d, mmse):
        K_d, mmse = _check(K_d, mmse)
        s = self._width(mmse)
        if s == 0.0:
            return 0.0
        omega, w = self._rule(K_d - mmse, mmse)
        u = (omega - self.threshold) / s
        # Z'²/(Z(1 − Z)) = φ(u)²/(s² Φ(u) Φ(−u)), in logs for large |u|
        log_f = -u**2 - math.log(2 * math.pi) - special.log_ndtr(u) - special.log_ndtr(-u)
        fisher = float(w @ np.exp(log_f))
        return s**2 / fisher if fisher != 0 else math.inf  # every label certain (|θ| ≫ s): no information

    def log_likelihood(self, y, lam):
        y = np.asarray(y, float)
        u = y * (np.asarray(lam, float) - self.threshold)
        if self.delta == 0.0:
            return np.where(u > 0, 0.0, -np.inf)
        return special.log_ndtr(u / math.sqrt(self.delta))

    def sample(self, lam, rng):
        lam = np.asarray(lam, float)
        return np.where(lam - self.threshold + math.sqrt(self.delta) * rng.standard_normal(lam.shape) > 0, 1.0, -1.0)


def sign_channel(threshold=0.0) -> ProbitChannel:
    """The noiseless sign channel ``y = sign(λ − θ)`` (:class:`ProbitChannel` with Δ = 0)."""
    ch = ProbitChannel(0.0, threshold)
    ch.name = "sign"
    return ch


class BinaryChannel(_Binary):
    """A ±1 channel given by ``P(y = +1 | λ)`` (as its log).

    ``Z(+1; ω, V) = E_z P(+1 | ω + √V z)`` and ``∂_ω Z`` (the average of ``∂_λ P``, by central
    differences of ``P`` with step ``1e-5·width``) are Gauss–Hermite averages over z (48 nodes)
    where ``√V`` is below the channel's width, and otherwise composite Gauss–Legendre integrals over
    λ on ``±40·width`` (32 panels × 8 nodes) with ``P`` taken constant beyond (its limits 0 and 1).

    Parameters
    ----------
    log_p_plus : callable
        ``λ ↦ ln P(y = +1 | λ)`` (NumPy, vectorized), smooth; ``P(y = −1 | λ) = 1 − P(y = +1 | λ)``.
    width : float
        The scale on which ``P(+1 | λ)`` changes (e.g. the temperature of a logistic), > 0.
    name : str
    """

    def __init__(self, log_p_plus, width=1.0, *, name="binary"):
        if not callable(log_p_plus):
            raise ValueError("log_p_plus must be callable")
        width = float(width)
        if not (math.isfinite(width) and width > 0):
            raise ValueError(f"width must be finite and > 0, got {width}")
        self._log_p_plus, self._intrinsic, self.name = log_p_plus, width, name

    def parameters(self):
        return {"name": self.name, "width": self._intrinsic}

    def _p_plus(self, lam):
        return np.exp(self._log_p_plus(np.asarray(lam, float)))

    def _width(self, V):
        return math.sqrt(V + self._intrinsic**2)

    def _average(self, f, omega, V, *, tails):
        """``E_z f(ω + √V z)`` for each ω (module docstring of the class); ``tails``: the limits of ``f``
        at ∓∞ (taken beyond ±40·width)."""
        omega = np.asarray(omega, float)
        sd = math.sqrt(V)
        if sd <= self._intrinsic:
            return f(omega[..., None] + sd * _GH_Z) @ _GH_W
        edge = 40.0 * self._intrinsic
        edges = np.linspace(-edge, edge, 33)
        mid, half = 0.5 * (edges[1:] + edges[:-1]), 0.5 * np.diff(edges)
        lam = (mid[:, None] + half[:, None] * _GL_X[None, :]).ravel()
        wl = (half[:, None] * _GL_W[None, :]).ravel()
        dens = np.exp(-0.5 * ((lam - omega[..., None]) / sd) ** 2) / (math.sqrt(2 * math.pi) * sd)
        inside = (dens * f(lam)) @ wl
        lo, hi = special.ndtr((-edge - omega) / sd), special.ndtr((omega - edge) / sd)
        return inside + tails[0] * lo + tails[1] * hi

    def _z_plus(self, omega, V):
        edge = 40.0 * self._intrinsic
        return self._average(self._p_plus, omega, V, tails=(float(self._p_plus(-edge)), float(self._p_plus(edge))))

    def _dz_plus(self, omega, V):
        h = 1e-5 * self._intrinsic
        return self._average(lambda lam: (self._p_plus(lam + h) - self._p_plus(lam - h)) / (2 * h), omega, V,
                             tails=(0.0, 0.0))

    def log_likelihood(self, y, lam):
        y = np.asarray(y, float)
        lp = self._log_p_plus(np.asarray(lam, float))
        return np.where(y > 0, lp, np.log1p(-np.exp(lp)))


class LogisticChannel(BinaryChannel):
    """``P(y | λ) = 1/(1 + e^{−yλ/T})`` (logistic regression's likelihood at temperature T).

    Parameters
    ----------
    temperature : float
        ``T > 0``.
    """

    def __init__(self, temperature=1.0):
        temperature = float(temperature)
        if not (math.isfinite(temperature) and temperature > 0):
            raise ValueError(f"temperature must be finite and > 0, got {temperature}")
        self.temperature = temperature
        super().__init__(lambda lam: -np.logaddexp(0.0, -lam / temperature), temperature, name="logistic")

    def parameters(self):
        return {"name": self.name, "temperature": self.temperature}

    def log_likelihood(self, y, lam):
        return -np.logaddexp(0.0, -np.asarray(y, float) * np.asarray(lam, float) / self.temperature)


class RealChannel(OutputChannel):
    """A real-valued channel given by its log-likelihood ``ln P_out(y | λ)``.

    ``Z(y; ω, V)`` is the density of ``y`` given ω, so ``Ψ = E_ω ∫ dy Z ln Z`` and
    ``2∂Ψ/∂K* = E_ω ∫ dy (∂_ω Z)²/Z``: the y-integral is a Gauss–Legendre rule (96 nodes) on
    ``ω ± 12 √(V + scale²)``, ``Z`` a Gauss–Hermite average over z (48 nodes) for ``√V ≤ scale`` and a
    Gauss–Legendre integral over λ within ``12·scale`` of y (96 nodes) otherwise, the ω-average a
    Gauss–Hermite rule (40 nodes), ``∂_ω Z`` by central differences (step ``1e-5·scale``). Accurate
    to ~1e-7 for densities negligible beyond ``12·scale`` and smooth on ``scale/20``.

    Parameters
    ----------
    log_likelihood : callable
        ``(y, λ) ↦ ln P_out(y | λ)`` (NumPy, broadcast).
    scale : float
        Width of ``P_out(· | λ)``, > 0.
    sampler : callable, optional
        ``(λ, rng) ↦ y`` for the experiments.
    name : str
    """

    _OMEGA = np.polynomial.hermite_e.hermegauss(40)
    _Y = np.polynomial.legendre.leggauss(96)
    _LAM = np.polynomial.legendre.leggauss(96)

    def __init__(self, log_likelihood, scale=1.0, *, sampler=None, name="real"):
        if not callable(log_likelihood):
            raise ValueError("log_likelihood must be callable")
        scale = float(scale)
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be finite and > 0, got {scale}")
        self._loglik, self.scale, self._sampler, self.name = log_likelihood, scale, sampler, name

    def parameters(self):
        return {"name": self.name, "scale": self.scale}

    def log_likelihood(self, y, lam):
        return self._loglik(np.asarray(y, float), np.asarray(lam, float))

    def sample(self, lam, rng):
        if self._sampler is None:
            raise ValueError(f"the {self.name} channel has no sampler")
        return self._sampler(np.asarray(lam, float), rng)

    def _terms(self, K_d, mmse):
        """Weights of (ω, y) and ``Z``, ``∂_ω Z`` on those nodes."""
        xi, w_xi = self._OMEGA
        omega = math.sqrt(K_d - mmse) * xi
        half = 12.0 * math.sqrt(mmse + self.scale**2)
        y = omega[:, None] + half * self._Y[0][None, :]                    # (n_ω, n_y)
        w = (w_xi / w_xi.sum())[:, None] * (half * self._Y[1])[None, :]
        h = 1e-5 * self.scale
        sd = math.sqrt(mmse)
        if sd <= self.scale:  # Z = E_z P(y | ω + √V z): smooth in z on scales ≥ 1
            lam = omega[:, None, None] + sd * _GH_Z[None, None, :]  # (n_ω, 1, n_z)
            weights = _GH_W
        else:  # Z = ∫ dλ N(λ; ω, V) P(y | λ) over λ within 12·scale of y (Legendre)
            x, wx = self._LAM
            lam = y[..., None] + 12.0 * self.scale * x
            weights = None
            dens = np.exp(-0.5 * ((lam - omega[:, None, None]) / sd) ** 2) / (math.sqrt(2 * math.pi) * sd)
            dens = dens * (12.0 * self.scale * wx)

        def p(shift):
            vals = np.exp(self.log_likelihood(y[..., None], lam + shift))
            return vals @ weights if weights is not None else np.sum(vals * dens, axis=-1)

        # ∂_ω Z: with λ = ω + √V z the shift of ω shifts λ (GH); on the λ rule it moves the Gaussian, the
        # same as shifting P by −h: ∂_ω ∫ N(λ; ω, V) P(λ) dλ = ∫ N(λ; ω, V) ∂_λ P(λ) dλ
        return w, p(0.0), (p(h) - p(-h)) / (2 * h)

    def energetic(self, K_d, mmse):
        K_d, mmse = _check(K_d, mmse)
        w, Z, _ = self._terms(K_d, mmse)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(Z > 0, Z * np.log(Z), 0.0)
        return float(np.sum(w * terms))

    def effective_variance(self, K_d, mmse):
        K_d, mmse = _check(K_d, mmse)
        w, Z, dZ = self._terms(K_d, mmse)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(Z > 0, dZ**2 / Z, 0.0)
        return float(1.0 / np.sum(w * terms))


def channel_keywords(name, *, delta=None, temperature=None, threshold=None) -> dict:
    """The keywords of :func:`get_output_channel` that the channel ``name`` takes, from values that may
    include options of other channels (resolved parameters of a command, an experiment's configuration):
    the others are left out, and so are values that are None.

    Raises
    ------
    ValueError
        Unknown channel name.
    """
    key = str(name).strip().lower()
    if key not in CHANNEL_OPTIONS:
        raise ValueError(f"unknown output channel {name!r}; choose from {', '.join(OUTPUT_CHANNELS)}")
    given = {"delta": delta, "temperature": temperature, "threshold": threshold}
    return {k: given[k] for k in CHANNEL_OPTIONS[key] if given[k] is not None}


def get_output_channel(name="gaussian", *, delta=None, temperature=None, threshold=None) -> OutputChannel:
    """The channel called ``name`` (one of :data:`OUTPUT_CHANNELS`).

    Parameters
    ----------
    name : str
    delta : float, optional
        Noise variance of ``gaussian`` and ``probit`` (default 0.1); ``sign`` and ``logistic`` have none (only
        ``None`` or 0 are accepted for them).
    temperature : float, optional
        ``logistic`` only (default 1).
    threshold : float, optional
        ``probit`` and ``sign`` only (default 0).

    Raises
    ------
    ValueError
        Unknown name, invalid parameters, or a parameter the channel does not have (as ``replica-sweep`` refuses
        ``--channel sign --delta 0.1`` or ``--temperature`` without ``--channel logistic``).
    """
    key = str(name).strip().lower()
    if key not in OUTPUT_CHANNELS:
        raise ValueError(f"unknown output channel {name!r}; choose from {', '.join(OUTPUT_CHANNELS)}")
    takes = CHANNEL_OPTIONS[key]
    if temperature is not None and "temperature" not in takes:
        raise ValueError(f"temperature: only for the logistic channel (got channel {key})")
    if threshold is not None and "threshold" not in takes:
        raise ValueError(f"threshold: only for the probit and sign channels (got channel {key})")
    if "delta" not in takes and delta not in (None, 0, 0.0):
        raise ValueError(f"delta: the {key} channel has no label-noise variance, got delta={delta}"
                         + ("; use the probit channel for noise before the sign" if key == "sign" else
                            "; its noise is the temperature"))
    delta = 0.1 if delta is None else delta
    threshold = 0.0 if threshold is None else threshold
    if key == "gaussian":
        return GaussianChannel(delta)
    if key == "probit":
        return ProbitChannel(delta, threshold)
    if key == "sign":
        return sign_channel(threshold)
    return LogisticChannel(1.0 if temperature is None else temperature)


def glm_state_evolution(channel: OutputChannel, alpha, *, tol=1e-13, max_iter=100_000):
    """Bayes-optimal generalized linear model ``y ~ P_out(· | w·x/√d)``, ``w ~ N(0, I_d)``, ``n = αd``.

    The fixed point of ``q̂ = α/D(1, 1 − q)``, ``q = q̂/(1 + q̂)`` (the replica-symmetric equations of
    Barbier et al., PNAS 2019, with a Gaussian prior), started at ``q = 0`` and damped; a check of the
    channel part against the classical perceptron learning curves.

    Parameters
    ----------
    channel : OutputChannel
    alpha : float
        Samples per dimension, > 0.

    Returns
    -------
    float
        The overlap ``q = K*`` (``K_d = 1``): for the noiseless sign channel the Bayes classification error
        is ``arccos(√q)/π`` and the Gibbs error ``arccos(q)/π``.
    """
    alpha = float(alpha)
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    q = 0.0
    for _ in range(max_iter):
        D = channel.effective_variance(1.0, 1.0 - q)
        qhat = alpha / D if D > 0 else math.inf
        new = 1.0 if math.isinf(qhat) else qhat / (1.0 + qhat)
        if abs(new - q) < tol:
            return new
        q = 0.5 * q + 0.5 * new
    raise RuntimeError(f"glm_state_evolution: no convergence at alpha = {alpha}")
