r"""GAMP-RIE for the one-hidden-layer teacher–student problem (universal branch).

Generalized approximate message passing with a rotationally invariant matrix denoiser
(Maillard, Troiani, Martin, Krzakala, Zdeborová, arXiv 2408.03733, Algorithm 1), generalized
here to any activation with ``μ₂ ≠ 0`` and any readout law through the Hermite decomposition
of docs/theory.md §5.1.  Derivation and state evolution: ``docs/gamp_rie.md``.

Model (docs/theory.md §1): ``y = vᵀσ(Wx/√d)/√k + √Δ z``.  With ``σ = μ₀ + μ₁He₁ + μ₂He₂/2 + σ_{≥3}``,

    y = β + μ₁ bᵀx/√d + (μ₂/2)[c q(x) + ⟨Z(x), S̃⟩] + ξ,

* ``b = Wᵀv/√k`` (linear part, prior ``N(0, ‖v‖²/k)`` per component),
* ``S⁰ = Wᵀdiag(v)W/√(kd) = cI + S̃`` with the known ``c = Σv/√(kd)`` and the
  fluctuating part ``S̃`` (``‖S̃‖²_F/d ≈ 1``),
* ``q(x) = (‖x‖² − d)/√d`` (known feature), ``Z(x) = (xxᵀ − I)/√d``,
* ``β`` a constant (``μ₀Σv/√k`` plus ``O(d^{-1/2})`` terms), estimated by the mean label,
* ``ξ`` the degree-≥3 part plus label noise, treated as Gaussian noise of variance
  ``Δ_eff = Δ + g(1)``.

GAMP on the unknowns ``(b, S̃)`` with the Gaussian output channel: at every iteration the
matrix part is an effective observation ``R = S̃ + Z_GOE/√λ`` with
``λ = μ₂² (n/d²) / (Δ_eff + V)``, denoised by the RIE of :func:`hciz.rie_denoise`; the
linear part is a Gaussian denoising problem of SNR ``μ₁² (n/d)/(Δ_eff + V)``.  Its state
evolution is ``λ_t = μ₂² α / (Δ + g(1) + (μ₂²/2) mmse_S(λ_{t−1}))``, whose fixed point is
the universal branch ``R̂₂ = 2α/(Δ₂ + mmse_S(R̂₂))`` of docs/theory.md §5.1.

Damping follows :mod:`replica.engine`: ``x ← η x + (1 − η) F(x)`` on the estimates and
their variances; convergence is tested on the scaled residual of the map, and the returned
point is the one whose residual was tested.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["GampRieResult", "gamp_rie", "state_evolution", "hermite_parts", "make_gamp_rie_runner",
           "check_experiment",
           "SPECTRA", "VARIANCES", "STATUS_MESSAGES"]

logger = logging.getLogger(__name__)

#: Ways to obtain the Stieltjes transform used by the RIE.
SPECTRA = ("analytic", "empirical")

#: Variances of the matrix estimate fed back into the Onsager term.
VARIANCES = ("theory", "divergence")

STATUS_MESSAGES = {
    "converged": "scaled residual of the GAMP map below 1 (atol + rtol·|x| per block)",
    "max_iter": "maximum number of iterations reached before the residual test passed",
    "nan": "an iterate became non-finite or the error estimate exceeded the prior variance 100-fold",
}

_CHUNK = 8192  # rows of the design processed at once (bounds the memory of X @ S)
_MAX_EMPIRICAL_ATOMS = 16


@dataclass
class GampRieResult:
    """Outcome of :func:`gamp_rie`.

    Attributes
    ----------
    matrix_estimate : ndarray, shape (d, d)
        Estimate of ``S⁰ = W⁰ᵀdiag(v)W⁰/√(kd)`` (the known mean ``cI`` included).
    linear_estimate : ndarray, shape (d,)
        Estimate of ``b = W⁰ᵀv/√k``.
    intercept : float
        Estimated constant ``β`` of the labels.
    matrix_mse, linear_mse : float
        The algorithm's own error estimates (posterior variances): ``‖S⁰ − Ŝ‖²_F/d`` and
        ``‖b − b̂‖²/d``.
    snr : float
        Effective SNR ``λ`` of the last matrix denoising step.
    converged : bool
    status : str
        A key of :data:`STATUS_MESSAGES`.
    message : str
    iterations : int
    residual : float
        Largest scaled residual at the returned point (≤ 1 when converged).
    damping : float
    coefficients : dict
        ``mu1``, ``mu2``, ``g1``, ``delta_eff``, ``mean_shift`` (``c``) used.
    trace : dict of ndarray
        Per iteration: ``matrix_mse``, ``linear_mse``, ``snr``, ``residual`` and, if test
        data were given, ``test_error``.
    """

    matrix_estimate: np.ndarray
    linear_estimate: np.ndarray
    intercept: float
    matrix_mse: float
    linear_mse: float
    snr: float
    converged: bool
    status: str
    message: str
    iterations: int
    residual: float
    damping: float
    coefficients: dict = field(default_factory=dict)
    trace: dict = field(default_factory=dict)

    def predict(self, inputs) -> np.ndarray:
        """Predicted output ``λ̂(x) = β + μ₁ b̂ᵀx/√d + (μ₂/2)(xᵀŜx − Σv/√k)/√d``.

        Parameters
        ----------
        inputs : array_like, shape (m, d)

        Returns
        -------
        ndarray, shape (m,)
        """
        c = self.coefficients
        x = np.asarray(inputs, dtype=float)
        d = self.linear_estimate.size
        if x.ndim != 2 or x.shape[1] != d:
            raise ValueError(f"inputs must have shape (m, {d}), got {x.shape}")
        S_tilde = self.matrix_estimate - c["mean_shift"] * np.eye(d)
        a = 0.5 * c["mu2"]
        q = (np.einsum("ij,ij->i", x, x) - d) / math.sqrt(d)
        return (self.intercept + a * c["mean_shift"] * q + c["mu1"] * (x @ self.linear_estimate) / math.sqrt(d)
                + a * _trace_products(x, S_tilde))


def hermite_parts(activation, *, drop_hermite=(), unit_variance=False) -> dict:
    """``μ₀, μ₁, μ₂, g(1)`` of an activation (docs/theory.md §2).

    Parameters
    ----------
    activation : str or replica.activations.Activation or simulations JaxActivation
        Specification (e.g. ``"relu"``), or an object carrying it.
    drop_hermite, unit_variance
        Modifiers, as :func:`replica.activations.get_activation` (taken from a
        ``JaxActivation`` when one is passed).

    Returns
    -------
    dict with keys ``mu0, mu1, mu2, g1``.

    Raises
    ------
    ValueError
        Unknown activation.
    """
    from replica.activations import Activation, get_activation

    if isinstance(activation, Activation):
        act = activation
    else:
        if hasattr(activation, "fn") and hasattr(activation, "name"):  # JaxActivation
            drop_hermite, unit_variance = activation.drop_hermite, activation.unit_variance
            activation = activation.name
        act = get_activation(str(activation), drop_hermite=drop_hermite, unit_variance=unit_variance)
    mu2 = float(act.mu2)
    return {"mu0": float(act.mu0), "mu1": float(act.mu1), "mu2": mu2 if abs(mu2) > 1e-12 else 0.0,
            "g1": max(float(act.g1), 0.0)}


def gamp_rie(inputs, labels, readout, *, activation, delta, spectrum="analytic", readout_law=None,
             variance="theory", damping=0.3, max_iter=200, atol=1e-6, rtol=1e-5, offset=None,
             bandwidth=None, test_inputs=None, test_outputs=None) -> GampRieResult:
    r"""Run GAMP-RIE on one training set.

    Parameters
    ----------
    inputs : array_like, shape (n, d)
        Training inputs ``x_μ ~ N(0, I_d)``, ``d ≥ 2``.
    labels : array_like, shape (n,)
        Labels ``y_μ``.
    readout : array_like, shape (k,)
        The readout ``v`` of the teacher (known to the student).
    activation : str or Activation or JaxActivation
        Activation; only ``μ₁, μ₂, g(1)`` are used (:func:`hermite_parts`).  ``μ₂ = 0``
        disables the matrix part (the algorithm then learns the linear part only).
    delta : float
        Label-noise variance ``Δ ≥ 0``.
    spectrum : {'analytic', 'empirical'}
        Stieltjes transform used by the RIE: the limiting one of the effective observation
        (:meth:`hciz.SymmetricChannel.stieltjes` evaluated at ``y + i·offset``; the
        Bayes-optimal RIE of Maillard et al.), or the one estimated from the observed
        eigenvalues (:func:`hciz.empirical_stieltjes`; needs no spectral law but is hurt at
        small ``n/d`` by the non-semicircular part of the effective noise, see
        ``docs/gamp_rie.md``).
    readout_law : str or priors.ReadoutLaw, optional
        Law of ``v`` that fixes the limiting spectrum of ``S⁰`` (``spectrum='analytic'``,
        ``variance='theory'``).  Default: the empirical law of ``readout``, allowed when it
        has at most 16 distinct values (an atom of the law stands for a macroscopic group of
        neurons, which single draws of a continuous law are not).
    variance : {'theory', 'divergence'}
        Variance ``v_S`` of the matrix estimate fed back into the Onsager term: the
        asymptotic ``mmse_S(λ)`` of :class:`hciz.SymmetricChannel` (as Maillard et al.'s
        ``F_RIE``), or
        the Stein (divergence) estimate of the denoiser actually used (no table needed, but
        it overestimates the error by 5–10 % at d = 100 and converges less often).
    damping : float
        ``η ∈ [0, 1)``: ``x ← η x + (1 − η) F(x)`` on ``Ŝ, b̂, v_S, v_b`` (as
        :mod:`replica.engine`); it does not move fixed points.
    max_iter : int
        Maximum number of iterations (≥ 1).
    atol, rtol : float
        Convergence when, for every block (``Ŝ`` and ``b̂`` in ``‖·‖/√d``, and the two
        variances), ``|F(x) − x| ≤ atol + rtol |x|``.
    offset : float, optional
        Imaginary part ``ε`` at which the analytic Stieltjes transform is evaluated
        (default ``d^{-2/3}``, the scale of the eigenvalue fluctuations at a square-root
        band edge): it smooths the band edges, where the real-axis RIE has an infinite slope
        that keeps the edge eigen-directions on a limit cycle at finite d (measured: quadratic,
        γ = 0.5, Δ = 0, d = 100, α = 0.2: 0/4 teachers converge with ``ε = 1/d``, 4/4 with
        ``d^{-2/3}``; the errors differ by < 0.5 %).
    bandwidth : float, optional
        Width of the empirical Stieltjes transform (default ``d^{-1/3}``).
    test_inputs, test_outputs : array_like, optional
        Noiseless test data; with them ``trace['test_error']`` records
        ``mean (λ̂ − λ⁰)²`` at every iteration.

    Returns
    -------
    GampRieResult

    Raises
    ------
    ValueError
        Inconsistent shapes, non-finite data, ``Δ < 0``, damping outside ``[0, 1)``,
        unknown ``spectrum`` or ``variance``, or no ``readout_law`` for a readout with more
        than 16 distinct values.

    Notes
    -----
    Iteration ``t`` (``a = μ₂/2``, ``ỹ`` the labels minus ``β̂ + a c q``,
    ``w_μ = ‖Z_μ‖²_F/d``, ``u_μ = ‖x_μ‖²/d``; derivation in ``docs/gamp_rie.md``)::

        V_μ   = 2a² v_S w_μ + μ₁² v_b u_μ
        ω_μ   = a⟨Z_μ, Ŝ⟩ + μ₁ x_μ·b̂/√d − V_μ g_prev,μ
        g_μ   = (ỹ_μ − ω_μ)/(Δ_eff + V_μ)
        A     = Σ_μ w_μ/(Δ_eff + V_μ),   λ = 4a² A/d²
        R     = Ŝ + (d/(2aA)) Σ_μ g_μ Z_μ                    (≈ S̃ + GOE/√λ)
        Ŝ, v_S ← RIE of √λ R at SNR λ, and its variance
        A_b   = (μ₁²/d) Σ_μ u_μ/(Δ_eff + V_μ),   R_b = b̂ + μ₁ Xᵀg/(√d A_b)
        b̂, v_b ← ρ_b A_b R_b/(1 + ρ_b A_b), ρ_b/(1 + ρ_b A_b)

    started at the prior mean (``Ŝ = 0``, ``b̂ = 0``, ``v_S = 1``, ``v_b = ρ_b``,
    ``g = 0``).  The per-sample weights ``w_μ, u_μ`` are the row norms of the GAMP sensing
    operator; they average to 1 but spread by ``2√(2/d)``, and using their mean instead
    makes the iteration unstable at ``n/d ≈ 10``.

    References
    ----------
    Maillard, Troiani, Martin, Krzakala, Zdeborová, arXiv 2408.03733, Algorithm 1 (GAMP-RIE,
    quadratic activation); Rangan, ISIT 2011 (GAMP with per-row variances); Barbier, Camilli,
    Nguyen, Pastore, Skerk, arXiv 2501.18530 (Hermite decomposition, universal branch).
    """
    X = np.asarray(inputs, dtype=float)
    y = np.asarray(labels, dtype=float).ravel()
    v = np.asarray(readout, dtype=float).ravel()
    if X.ndim != 2 or X.shape[0] != y.size or X.shape[0] < 1 or X.shape[1] < 2:
        raise ValueError(f"inputs must have shape (n, d) with d >= 2 and n = len(labels), got {X.shape} "
                         f"and {y.size} labels")
    if v.size < 1 or not (np.all(np.isfinite(X)) and np.all(np.isfinite(y)) and np.all(np.isfinite(v))):
        raise ValueError("inputs, labels and readout must be finite and the readout non-empty")
    if not (delta >= 0 and math.isfinite(delta)):
        raise ValueError(f"delta must be a finite number >= 0, got {delta}")
    if not 0 <= damping < 1:
        raise ValueError(f"damping must be in [0, 1), got {damping}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter}")
    if spectrum not in SPECTRA:
        raise ValueError(f"spectrum must be one of {', '.join(SPECTRA)}, got {spectrum!r}")
    if variance not in VARIANCES:
        raise ValueError(f"variance must be one of {', '.join(VARIANCES)}, got {variance!r}")
    n, d = X.shape
    k = v.size
    parts = hermite_parts(activation)
    mu1, mu2, g1 = parts["mu1"], parts["mu2"], parts["g1"]
    a = 0.5 * mu2
    delta_eff = float(delta) + g1
    c = float(np.sum(v)) / math.sqrt(k * d)
    rho_b = float(np.dot(v, v)) / k
    eps = d ** (-2.0 / 3.0) if offset is None else float(offset)
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"offset must be a finite number >= 0, got {offset}")
    channel = None
    if (spectrum == "analytic" or variance == "theory") and a != 0.0:
        channel = _channel(v, d, readout_law)
    denoise = _matrix_denoiser(spectrum, channel, eps, bandwidth, d) if a != 0.0 else None

    sqrt_d = math.sqrt(d)
    norm2 = np.einsum("ij,ij->i", X, X)
    q = (norm2 - d) / sqrt_d
    intercept = float(np.mean(y - a * c * q))
    y_tilde = y - intercept - a * c * q
    # row norms of the sensing operator: ‖Z_μ‖²_F/d = (‖x‖⁴ − 2‖x‖² + d)/d² and ‖x_μ‖²/d
    weight_S = (norm2 * norm2 - 2.0 * norm2 + d) / (d * d)
    weight_b = norm2 / d
    record_test = test_inputs is not None
    if record_test:
        Xt = np.asarray(test_inputs, dtype=float)
        yt = np.asarray(test_outputs, dtype=float).ravel()
        if Xt.ndim != 2 or Xt.shape[1] != d or Xt.shape[0] != yt.size:
            raise ValueError("test_inputs must have shape (m, d) and test_outputs shape (m,)")
        base_t = intercept + a * c * (np.einsum("ij,ij->i", Xt, Xt) - d) / sqrt_d
    eye = np.eye(d)

    S_hat = np.zeros((d, d))
    b_hat = np.zeros(d)
    v_S = 1.0 if a != 0.0 else 0.0
    v_b = rho_b if mu1 != 0.0 else 0.0
    g_prev = np.zeros(n)
    trace = {name: [] for name in ("matrix_mse", "linear_mse", "snr", "residual")}
    if record_test:
        trace["test_error"] = []
    status, residual, lam, iterations = "max_iter", math.inf, math.nan, 0

    for it in range(1, int(max_iter) + 1):
        iterations = it
        V = 2.0 * a * a * v_S * weight_S + mu1 * mu1 * v_b * weight_b
        noise = delta_eff + V
        if not np.all(noise > 0):  # Δ_eff = 0 and a vanishing variance: nothing left to learn
            noise = np.maximum(noise, 1e-12)
        omega = -V * g_prev
        if a != 0.0:
            omega += a * _trace_products(X, S_hat)
        if mu1 != 0.0:
            omega += mu1 * (X @ b_hat) / sqrt_d
        g = (y_tilde - omega) / noise
        S_new, v_S_new, b_new, v_b_new = S_hat, 0.0, b_hat, 0.0
        if a != 0.0:
            precision = float(np.sum(weight_S / noise))
            lam = 4.0 * a * a * precision / (d * d)
            gram = (_weighted_gram(X, g) - np.sum(g) * eye) / sqrt_d
            R = S_hat + (d / (2.0 * a * precision)) * gram
            if np.all(np.isfinite(R)):
                S_new, v_S_new = denoise(R, lam)
                if variance == "theory":
                    v_S_new = _theory_mmse(channel, lam)
            else:
                S_new = R
        if mu1 != 0.0:
            A_b = mu1 * mu1 * float(np.sum(weight_b / noise)) / d
            R_b = b_hat + mu1 * (X.T @ g) / (sqrt_d * A_b)
            b_new = rho_b * A_b * R_b / (1.0 + rho_b * A_b)
            v_b_new = rho_b / (1.0 + rho_b * A_b)
        g_prev = g
        if not (np.all(np.isfinite(S_new)) and np.all(np.isfinite(b_new)) and math.isfinite(v_S_new)
                and -1e-3 < v_S_new < 100.0):
            status = "nan"
            break
        v_S_new = max(v_S_new, 0.0)
        residual = max(
            _block_residual(S_new - S_hat, S_hat, d, atol, rtol),
            _block_residual(b_new - b_hat, b_hat, d, atol, rtol),
            abs(v_S_new - v_S) / (atol + rtol * abs(v_S)),
            abs(v_b_new - v_b) / (atol + rtol * abs(v_b)),
        )
        trace["matrix_mse"].append(v_S)
        trace["linear_mse"].append(v_b)
        trace["snr"].append(lam)
        trace["residual"].append(residual)
        if record_test:
            pred = base_t + a * _trace_products(Xt, S_hat) + mu1 * (Xt @ b_hat) / sqrt_d
            trace["test_error"].append(float(np.mean((pred - yt) ** 2)))
        if residual <= 1.0:
            status = "converged"
            break
        if it == int(max_iter):  # return the point whose residual was tested
            break
        S_hat = damping * S_hat + (1.0 - damping) * S_new
        b_hat = damping * b_hat + (1.0 - damping) * b_new
        v_S = damping * v_S + (1.0 - damping) * v_S_new
        v_b = damping * v_b + (1.0 - damping) * v_b_new

    if status == "max_iter":
        logger.warning("GAMP-RIE stopped after %d iterations with scaled residual %.3g", iterations, residual)
    elif status == "nan":
        logger.warning("GAMP-RIE diverged at iteration %d", iterations)
    return GampRieResult(
        matrix_estimate=S_hat + c * eye, linear_estimate=b_hat, intercept=intercept, matrix_mse=float(v_S),
        linear_mse=float(v_b), snr=float(lam), converged=status == "converged", status=status,
        message=STATUS_MESSAGES[status], iterations=iterations, residual=float(residual), damping=float(damping),
        coefficients={"mu1": mu1, "mu2": mu2, "g1": g1, "delta_eff": delta_eff, "mean_shift": c},
        trace={name: np.asarray(values, dtype=float) for name, values in trace.items()})


def state_evolution(alpha, *, activation, gamma, delta, readout_law="ones", dim=None, damping=0.0,
                    max_iter=10_000, tol=1e-13) -> dict:
    r"""State evolution of :func:`gamp_rie` from the uninformed start.

    Parameters
    ----------
    alpha : float
        ``α = n/d² > 0``.
    activation : str or Activation
    gamma : float
        ``γ = k/d > 0``.
    delta : float
        ``Δ ≥ 0``.
    readout_law : str or priors.ReadoutLaw
        Law of ``v`` (enters through ``mmse_S`` of :func:`hciz.readout_channel` and ``E v²``).
    dim : int, optional
        Finite ``d``: keeps the error of the linear part, ``v_b = 1/(1 + μ₁² α d/(Δ_eff + V))``
        (``E v² = 1``), which vanishes as ``d → ∞``.  Default: ``d = ∞`` (``v_b = 0``).
    damping : float
        Same convention as :func:`gamp_rie` (applied to ``v_S`` and ``v_b``).
    max_iter : int
    tol : float
        Stop when ``|Δv_S| + |Δv_b| ≤ tol``.

    Returns
    -------
    dict
        ``matrix_mse`` (``v_S`` per iteration, starting at 1), ``linear_mse``, ``snr`` and
        ``mmse`` (``g(1) + (μ₂²/2) v_S + μ₁² v_b``) as ndarrays, and ``converged`` (bool).

    Notes
    -----
    ``λ_t = μ₂² α/(Δ + g(1) + (μ₂²/2) v_S + μ₁² v_b)``, ``v_S ← mmse_S(λ_t)``: at ``d = ∞`` the
    fixed point is ``R̂₂ = α μ₂²/(Δ + K_d − K*)`` with ``K_d − K* = g(1) + μ₂² mmse_S/2``,
    the universal branch of docs/theory.md §5.1 (``docs/gamp_rie.md``).
    """
    from hciz import readout_channel
    from priors import get_readout_law

    law = get_readout_law(readout_law) if isinstance(readout_law, str) else readout_law
    channel = readout_channel(gamma, law)
    parts = hermite_parts(activation)
    mu1, mu2, g1 = parts["mu1"], parts["mu2"], parts["g1"]
    delta_eff = float(delta) + g1
    v_S, v_b = (1.0 if mu2 else 0.0), (1.0 if (dim and mu1) else 0.0)
    out = {"matrix_mse": [v_S], "linear_mse": [v_b], "snr": []}
    converged = False
    for _ in range(int(max_iter)):
        noise = delta_eff + 0.5 * mu2 * mu2 * v_S + mu1 * mu1 * v_b
        lam = mu2 * mu2 * alpha / noise if noise > 0 else math.inf
        new_S = float(channel.mmse(lam)) if mu2 else 0.0
        new_b = 1.0 / (1.0 + mu1 * mu1 * alpha * dim / noise) if (dim and mu1) else 0.0
        new_S = damping * v_S + (1.0 - damping) * new_S
        new_b = damping * v_b + (1.0 - damping) * new_b
        change = abs(new_S - v_S) + abs(new_b - v_b)
        v_S, v_b = new_S, new_b
        out["snr"].append(lam)
        out["matrix_mse"].append(v_S)
        out["linear_mse"].append(v_b)
        if change <= tol:
            converged = True
            break
    result = {name: np.asarray(values, dtype=float) for name, values in out.items()}
    result["mmse"] = g1 + 0.5 * mu2 * mu2 * result["matrix_mse"] + mu1 * mu1 * result["linear_mse"]
    result["converged"] = converged
    return result


# ----------------------------------------------------------------------------------------
# runner for replica-experiment (replica.simulations.experiment)
# ----------------------------------------------------------------------------------------

def check_experiment(config) -> None:
    """Raise ``ValueError`` (one line) if an experiment configuration does not suit GAMP-RIE.

    Parameters
    ----------
    config : replica.simulations.experiment.ExperimentConfig
        Needs ``layers == 1`` and ``init == ('uninformed',)`` (the algorithm starts at the
        prior mean; it has no informed start).
    """
    if config.layers != 1:
        raise ValueError(f"gamp-rie handles one hidden layer only, got layers={config.layers}")
    if tuple(config.init) != ("uninformed",):
        raise ValueError("gamp-rie starts at the prior mean: use --init uninformed "
                         f"(got {','.join(config.init)})")


def make_gamp_rie_runner(*, activation, delta, steps, readout_law=None, spectrum="analytic", variance="theory",
                         damping=0.3):
    """Runner with the signature of :func:`replica.simulations.samplers.make_runner`'s runners.

    Parameters
    ----------
    activation : JaxActivation or str
    delta : float
    steps : int
        Maximum number of GAMP iterations.
    readout_law : str, optional
        Readout-law specification (its limiting spectrum is used).
    spectrum, variance, damping
        As :func:`gamp_rie`.

    Returns
    -------
    callable
        ``runner(key, start_weights, readout, inputs, labels, test_inputs, test_outputs)``
        returning a :class:`replica.simulations.samplers.ChainResult` with ``samples=None``, one
        test-output row (the point estimate), ``matrix_estimate`` and the per-iteration
        test error as the trace (padded with its last value up to ``steps``: a converged
        iterate no longer moves).  ``key`` and ``start_weights`` are unused: the algorithm
        starts at the prior mean.
    """
    from .chains import ChainResult

    parts = hermite_parts(activation)
    if parts["mu2"] == 0.0:
        logger.warning("GAMP-RIE: mu2 = 0, only the linear part is learned (error >= g(1))")

    def runner(key, start_weights, readout, inputs, labels, test_inputs, test_outputs):
        from threadpoolctl import threadpool_limits

        # one BLAS thread: beside JAX's thread pool a multithreaded BLAS runs the d × d
        # eigendecompositions 10-20x slower (measured at d = 30-400 on 2 cores), see
        # scripts/benchmarks/bench_gamp_rie_threads.py
        with threadpool_limits(limits=1, user_api="blas"):
            result = gamp_rie(inputs, labels, readout, activation=activation, delta=delta, spectrum=spectrum,
                              readout_law=readout_law, variance=variance, damping=damping, max_iter=steps,
                              test_inputs=test_inputs, test_outputs=test_outputs)
        errors = result.trace["test_error"]
        padded = np.full(steps, errors[-1] if errors.size else np.nan)
        padded[:errors.size] = errors
        return ChainResult(
            samples=None, test_outputs=result.predict(test_inputs)[None, :],
            trace_steps=np.arange(1, steps + 1), trace_errors=padded, step_size=float(result.snr),
            warmup=0, steps=result.iterations, matrix_estimate=result.matrix_estimate,
            converged=float(result.converged))

    return runner


# ----------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------

def _trace_products(X, S):
    """``⟨Z(x_μ), S⟩ = (x_μᵀ S x_μ − tr S)/√d`` for every row (chunked)."""
    n, d = X.shape
    out = np.empty(n)
    for start in range(0, n, _CHUNK):
        block = X[start:start + _CHUNK]
        out[start:start + _CHUNK] = np.einsum("ij,ij->i", block @ S, block)
    return (out - np.trace(S)) / math.sqrt(d)


def _weighted_gram(X, weights):
    """``Σ_μ w_μ x_μ x_μᵀ`` (chunked, symmetric)."""
    d = X.shape[1]
    out = np.zeros((d, d))
    for start in range(0, X.shape[0], _CHUNK):
        block = X[start:start + _CHUNK]
        out += block.T @ (weights[start:start + _CHUNK, None] * block)
    return 0.5 * (out + out.T)


def _block_residual(change, current, d, atol, rtol):
    return float(np.linalg.norm(change) / math.sqrt(d) / (atol + rtol * np.linalg.norm(current) / math.sqrt(d)))


def _channel(readout, d, readout_law=None):
    """Symmetric channel of ``S⁰ = Wᵀdiag(v)W/√(kd)``: γ = k/d and the readout law (or the
    empirical law of a readout with few distinct values)."""
    if readout_law is not None:
        from hciz import readout_channel
        from priors import get_readout_law

        law = get_readout_law(readout_law) if isinstance(readout_law, str) else readout_law
        return readout_channel(readout.size / d, law)
    from hciz import symmetric_channel

    values, counts = np.unique(readout, return_counts=True)
    if values.size > _MAX_EMPIRICAL_ATOMS:
        raise ValueError(f"the readout has {values.size} distinct values: pass readout_law (e.g. 'gaussian') "
                         "for the analytic spectrum or use spectrum='empirical', variance='divergence'")
    return symmetric_channel(readout.size / d, values, counts / readout.size)


def _theory_mmse(channel, lam):
    """``mmse_S(λ)``: direct quadrature for discrete readout laws (milliseconds, no table
    build, which takes minutes for e.g. ``4point``), the cached table for continuous ones."""
    if channel.law is None:
        return float(channel.direct_mmse(lam))
    return float(channel.mmse(lam))


def _matrix_denoiser(spectrum, channel, offset, bandwidth, d):
    """``(R, λ) ↦ (estimate of S̃, its variance)`` for ``R = S̃ + GOE/√λ``."""
    from hciz import rie_denoise

    if spectrum == "empirical":
        def denoise(R, lam):
            result = rie_denoise(math.sqrt(lam) * R, lam, bandwidth=bandwidth)
            return result.estimate, result.mse
        return denoise
    # the analytic law is that of S⁰ = S̃ + (its mean) I: shift in and out
    shift = math.sqrt(channel.gamma) * float(np.dot(channel.weights, channel.values))
    eye = np.eye(d)

    def denoise(R, lam):
        result = rie_denoise(math.sqrt(lam) * (R + shift * eye), lam,
                             stieltjes=lambda x: channel.stieltjes(x + 1j * offset, lam), shift=shift)
        return result.estimate, result.mse
    return denoise
