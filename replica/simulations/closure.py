r"""Gaussian-closure theory of online SGD before specialization (``docs/dynamics.md``).

Predicts, for the one-hidden-layer teacher–student SGD of :mod:`replica.simulations.sgd` (same
normalizations: update ``W += η Σ_b e_b (v ⊙ σ'(h_b)) x_bᵀ/√(dk)``, time ``t = n/(kd)``,
test error ``E_x(λ(x;W_t) − λ(x;W⁰))²`` without label noise), the curves recorded by
``replica-sgd`` while every teacher–student overlap is ``O(d^{-1/2})`` and their histogram is
Gaussian:

* ``test_error``, ``linear_overlap`` (cosine of ``Wᵀv`` with ``W⁰ᵀv``),
  ``quadratic_overlap`` (Frobenius cosine of the traceless parts of
  ``S = Wᵀdiag(v)W/√(kd)`` and ``S⁰``), ``bulk_width`` (root mean square of the ``k²``
  cosines ``w_i·w⁰_j/(|w_i||w⁰_j|)``), ``student_norm`` (``|w_i|²/d``);
* the specialization time from the escape of single overlaps out of the Gaussian bulk
  (:func:`escape_time`) and the refinement fixed points of a matched pair
  (:func:`refinement_fixed_points`).

Collective variables (derivation in ``docs/dynamics.md``; readout ``v ≡ 1``):

``ε_L``
    linear error ``|μ₁ b⁰ − c̄₁ b|²`` (``b = Wᵀv/√(kd)``), an LMS problem at rate ``O(k)``
    whose SGD noise leaves a misadjustment ``≈ η c̄₁² (ε + Δ)/2``;
``ρ``
    the mean linear residual along ``b⁰`` (relative to its initial value);
``c(λ)``, ``u(μ)``
    the quadratic state: on the spectrum ``λ`` of ``S⁰`` (Marchenko–Pastur), the Gram
    integral of the exact solution of the matrix Riccati flow ``Ẇ = η μ₂² √γ W(S⁰ − S) + τW``
    (activation with ``μ₂ ≠ 0``: norms pinned at ``|w_i|² = d`` by the ``O(√k)`` constant
    mode, ``τ`` its Lagrange multiplier), and on the pairs ``μ = λ_a + λ_b`` the SGD-noise
    variance of ``S − S⁰`` in linear response around ``S = S⁰``;
``e₀``
    the constant-mode residual when ``μ₂ ≠ 0``: it relaxes at rate ``ηkμ₂²`` towards the value
    that balances the radial forces on the pinned norms, and leaves the ``O(1/k)`` error ``e₀²``;
``q``
    the student norm when ``μ₂ = 0`` (odd activations), which then moves freely.

References
----------
D. Saad, S. A. Solla, Phys. Rev. E 52 (1995) (order-parameter dynamics of online SGD);
B. Widrow, M. Hoff (1960) and S. Haykin, *Adaptive filter theory* (LMS misadjustment);
R. Couillet, Z. Liao, *Random matrix methods for machine learning*, CUP 2022, §2.2
(deterministic equivalent of ``Xᵀ(I + XFXᵀ)^{-1}X``); docs/theory.md §1–§2, §4.1 (``S⁰``),
``docs/dynamics.md`` (all equations of this module).

Why one module of this size: the closure is one ODE system with its moments, integrator
and stored predictions, sharing the private Gaussian-moment helpers (docs/architecture.md,
"Module size").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "ClosureResult",
    "closure_coefficients",
    "spectral_nodes",
    "deterministic_equivalent",
    "riccati_moments",
    "noise_pair_nodes",
    "riccati_flow",
    "solve_closure",
    "closure_for_run",
    "escape_time",
    "specialization_time_prediction",
    "refinement_fixed_points",
    "predicted_exponent",
    "predicted_scaling",
    "CLOSURE_DATASETS",
    "CLOSURE_DESCRIPTIONS",
]

CLOSURE_DATASETS = ("time", "test_error", "linear_overlap", "quadratic_overlap", "bulk_width",
                    "student_norm", "linear_error", "quadratic_error", "constant_error")

CLOSURE_DESCRIPTIONS = {
    "time": "t = n/(k d) (same time variable as the simulated datasets)",
    "test_error": "Gaussian-closure prediction of E_x (lambda(x;W_t) - lambda(x;W0))^2 (noiseless)",
    "linear_overlap": "predicted cosine of W^T v with W0^T v",
    "quadratic_overlap": "predicted Frobenius cosine of traceless W^T diag(v) W with the teacher's",
    "bulk_width": "predicted rms of the k^2 cosines w_i.w0_j/(|w_i||w0_j|) (Gaussian bulk)",
    "student_norm": "predicted |w_i|^2/d",
    "linear_error": "linear part of the test error, |mu1 b0 - c1 b|^2",
    "quadratic_error": "quadratic part of the test error, (mu2^2/2) tr(S - S0)^2/d",
    "constant_error": "finite-k constant-mode part of the test error, e0^2 = O(1/k)",
}


# ---------------------------------------------------------------------------------------------
# activation coefficients
# ---------------------------------------------------------------------------------------------
def closure_coefficients(activation, *, drop_hermite=(), unit_variance=False, nodes=200):
    """Gaussian averages of the activation used by the closure.

    Parameters
    ----------
    activation : str
        Name accepted by :func:`replica.simulations.sgd.activation_functions`.
    drop_hermite, unit_variance : keyword-only
        Activation modifiers.
    nodes : int, keyword-only
        Gauss–Hermite nodes for the averages that have no closed form.

    Returns
    -------
    dict
        ``mu0, mu1, mu2, mu3, mu4`` (Hermite coefficients), ``g1 = g(1)``, ``nu = E σ(z)²``,
        ``nu1 = E σ'(z)²``, ``h3 = E[σ_{≥3}(z) z σ'(z)]`` (radial self-force of the part
        above degree two), ``r`` (lowest Hermite degree above two with ``μ_r ≠ 0``, or
        None), and callables ``sigma``, ``derivative``, ``g``, ``g_prime``.

    Raises
    ------
    ValueError
        Unknown activation (message of :func:`replica.simulations.sgd.activation_functions`).
    """
    from .sgd import activation_functions

    act, der = activation_functions(activation, drop_hermite=drop_hermite,
                                    unit_variance=unit_variance)
    z, wz = np.polynomial.hermite_e.hermegauss(int(nodes))
    wz = wz / wz.sum()
    mu0, mu1, mu2 = (float(act.hermite(ell)) for ell in range(3))
    s = act(z)
    sp = der(z)
    above = s - mu0 - mu1 * z - 0.5 * mu2 * (z * z - 1.0)
    return {
        "mu0": mu0, "mu1": mu1, "mu2": mu2, "mu3": float(act.hermite(3)), "mu4": float(act.hermite(4)),
        "g1": float(act.g(1.0)), "nu": float(act.nu),
        "nu1": float(wz @ sp ** 2), "h3": float(wz @ (above * z * sp)),
        "r": predicted_exponent(activation, drop_hermite=drop_hermite, unit_variance=unit_variance),
        "sigma": act, "derivative": der, "g": act.g, "g_prime": act.g_prime,
        "gauss_nodes": z, "gauss_weights": wz,
    }


# ---------------------------------------------------------------------------------------------
# spectrum of S⁰ and the deterministic equivalent
# ---------------------------------------------------------------------------------------------
def spectral_nodes(gamma, *, nodes=40):
    """Quadrature of the spectral law of ``S⁰ = W⁰ᵀW⁰/√(kd)`` (readout ``v ≡ 1``).

    Parameters
    ----------
    gamma : float
        ``k/d > 0``.
    nodes : int, keyword-only
        Nodes on the continuous (Marchenko–Pastur) part.

    Returns
    -------
    lam, weight : ndarray
        Eigenvalues and probabilities (summing to 1); for ``γ < 1`` the first node is the
        atom ``λ = 0`` of mass ``1 − γ``.  ``Σ weight·lam = √γ``, ``Σ weight·lam² = 1 + γ``
        (docs/theory.md §4.1, ``R_d``) up to quadrature error (exact for polynomials of degree
        ``≤ 2·nodes − 1`` times ``1/x``-smooth functions).

    Notes
    -----
    ``W⁰W⁰ᵀ/d`` (k×k) has the Marchenko–Pastur law of ratio γ on
    ``[(1 − √γ)², (1 + √γ)²]``; the non-zero eigenvalues of ``S⁰`` are those divided by
    ``√γ``.  For ``γ ≥ 1`` the d×d matrix ``W⁰ᵀW⁰/k`` has ratio ``1/γ`` and ``S⁰`` is it
    times ``√γ``.  Gauss–Chebyshev (second kind) nodes on the band.
    """
    gamma = float(gamma)
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    if gamma == 1.0:
        gamma = 1.0 - 1e-9      # hard edge at 0: the quadrature below needs a > 0
    c = gamma if gamma < 1 else 1.0 / gamma
    a, b = (1 - math.sqrt(c)) ** 2, (1 + math.sqrt(c)) ** 2
    j = np.arange(1, int(nodes) + 1)
    theta = j * np.pi / (nodes + 1)
    mid, half = (a + b) / 2, (b - a) / 2
    x = mid + half * np.cos(theta)
    weight = half * half * np.pi / (nodes + 1) * np.sin(theta) ** 2 / (2 * np.pi * c * x)
    weight = weight / weight.sum()
    if gamma < 1:
        lam = np.concatenate([[0.0], x / math.sqrt(gamma)])
        weight = np.concatenate([[1.0 - gamma], gamma * weight])
    else:
        lam, weight = x * math.sqrt(gamma), weight
    return lam, weight


def deterministic_equivalent(f, weight, gamma):
    r"""``δ`` of the deterministic equivalent ``X̃ᵀ(I_k + X̃FX̃ᵀ)⁻¹X̃ ≈ δ (I + δF)⁻¹``.

    ``X̃ = X/(kd)^{1/4}`` with ``X`` (k×d) iid standard Gaussian and ``F ⪰ 0`` a d×d matrix
    with eigenvalues ``f`` of probabilities ``weight``.  ``δ ∈ (0, √γ]`` solves

    .. math::  δ\,(1 + γ^{-1/2} Σ_a w_a f_a/(1 + δ f_a)) = √γ .

    Parameters
    ----------
    f : ndarray (n,), ≥ 0
    weight : ndarray (n,)
    gamma : float

    Returns
    -------
    float
        ``δ`` (``√γ`` when ``F = 0``); also ``(1/k) tr (I + X̃FX̃ᵀ)⁻¹ → δ/√γ``.

    References
    ----------
    Couillet & Liao (2022), Theorem 2.6 (sample-covariance resolvent), with the
    push-through identity ``Xᵀ(I + XFXᵀ)⁻¹X = (I + XᵀXF)⁻¹XᵀX``.
    """
    from scipy.optimize import brentq

    sg = math.sqrt(gamma)
    f = np.asarray(f, dtype=float)

    def residual(delta):
        return delta * (1.0 + (weight @ (f / (1.0 + delta * f))) / sg) - sg

    if not np.any(f > 0):
        return sg
    return float(brentq(residual, 0.0, sg, xtol=1e-15, rtol=1e-13))


def riccati_moments(lam, weight, gamma, gram, signal):
    r"""Traces of ``S = E X̃ᵀ(I + X̃ G X̃ᵀ)⁻¹ X̃ E`` against ``S⁰`` (d → ∞).

    Parameters
    ----------
    lam, weight : ndarray (n,)
        Spectral quadrature of ``S⁰`` (:func:`spectral_nodes`).
    gamma : float
    gram : ndarray (n,), ≥ 0
        Eigenvalues ``f(λ)`` of ``G`` (a function of ``S⁰``).
    signal : ndarray (n,), ≥ 0
        Eigenvalues ``h(λ)`` of ``E²`` (a function of ``S⁰``).

    Returns
    -------
    dict
        ``delta``; ``phi`` (n,) = ``δh/(1 + δf)``, the eigenvalues of the deterministic
        equivalent of ``S`` (so ``tr S/d = Σ w φ``, ``tr SS⁰/d = Σ w λφ``); ``fluctuation``
        = ``tr S²/d − Σ w φ²`` (second-order deterministic equivalent, ``≥ 0``).

    Notes
    -----
    ``tr S²/d = −∂_ε tr(E² X̃ᵀ(I + X̃(G + εE²)X̃ᵀ)⁻¹X̃)/d`` at ``ε = 0``; differentiating the
    first-order equivalent (``δ`` depends on ε) gives
    ``Σ w φ² + δ A²/(√γ + I − δB)`` with ``A = Σ w h/(1+δf)²``, ``I = Σ w f/(1+δf)``,
    ``B = Σ w f²/(1+δf)²`` (``docs/dynamics.md`` §3).
    """
    delta = deterministic_equivalent(gram, weight, gamma)
    denom = 1.0 + delta * gram
    phi = delta * signal / denom
    a = weight @ (signal / denom ** 2)
    i = weight @ (gram / denom)
    b = weight @ (gram ** 2 / denom ** 2)
    return {"delta": delta, "phi": phi,
            "fluctuation": float(delta * a * a / (math.sqrt(gamma) + i - delta * b))}


# ---------------------------------------------------------------------------------------------
# the closure ODE
# ---------------------------------------------------------------------------------------------
@dataclass
class ClosureResult:
    """Predicted curves on the time grid ``time`` (``t = n/(kd)``).

    Attributes
    ----------
    time, test_error, linear_overlap, quadratic_overlap, bulk_width, student_norm,
    linear_error, quadratic_error, constant_error : ndarray (T,)
        See ``CLOSURE_DATASETS`` descriptions.
    noise : ndarray (T,)
        ``ε + Δ``, the mean squared residual that sets the SGD noise.
    parameters : dict
        Inputs (activation, gamma, delta, lr, dim, width, regime, coefficients).
    success : bool
    message : str
    """

    time: np.ndarray
    test_error: np.ndarray
    linear_overlap: np.ndarray
    quadratic_overlap: np.ndarray
    bulk_width: np.ndarray
    student_norm: np.ndarray
    linear_error: np.ndarray
    quadratic_error: np.ndarray
    constant_error: np.ndarray
    noise: np.ndarray
    parameters: dict = field(default_factory=dict)
    success: bool = True
    message: str = ""

    def as_dict(self):
        """Datasets of the ``closure/`` group (name → array)."""
        return {name: np.asarray(getattr(self, name)) for name in CLOSURE_DATASETS}


def _linear_overlap(rho, eps_l, mu1):
    if mu1 == 0:
        return 0.0
    return (1.0 - rho) / math.sqrt(max(1.0 - 2.0 * rho + eps_l / mu1 ** 2, 1e-300))


def solve_closure(activation="relu", *, gamma=0.5, delta=0.1, lr=0.5, dim=64, times=None,
                  t_max=100.0, readout="ones", drop_hermite=(), unit_variance=False,
                  nodes=40, noise=True, finite_k=True, rtol=1e-6):
    r"""Integrate the Gaussian-closure equations of ``docs/dynamics.md``.

    Parameters
    ----------
    activation : str
        As :class:`replica.simulations.sgd.SGDConfig`.
    gamma : float, keyword-only
        ``k/d``; the closure uses the realized ``k = max(1, round(γd))``.
    delta : float, keyword-only
        Label-noise variance ``Δ ≥ 0``.
    lr : float, keyword-only
        ``η`` per sample (update of :mod:`replica.simulations.sgd`).
    dim : int, keyword-only
        ``d``; enters through ``k`` (the linear mode relaxes at rate ``∝ k``, the
        constant mode and the mean row leave ``O(1/k)`` errors), the ``O(1/d)`` terms
        ``ε₄``, ``ε₃`` and ``bulk_width ∝ d^{-1/2}``.
    times : array_like, optional, keyword-only
        Output times (``≥ 0``, increasing); default 200 log-spaced points up to ``t_max``
        plus ``t = 0``.
    t_max : float, keyword-only
        Last time when ``times`` is None.
    readout : str, keyword-only
        Only ``"ones"`` (``v ≡ 1``) is implemented.
    drop_hermite, unit_variance : keyword-only
        Activation modifiers.
    nodes : int, keyword-only
        Quadrature nodes on the spectrum of ``S⁰``.
    noise : bool, keyword-only
        Include the SGD-noise terms (``O(η²)``); False gives gradient flow in ``t``.
    finite_k : bool, keyword-only
        Include the ``O(1/k)`` terms: constant-mode error, mean-row part ``ε_{Q,1}`` of the
        quadratic error, degree-4 bulk term ``ε₄`` and the degree-3 cosine-mean term ``ε₃``
        (False: the d → ∞ limit).
    rtol : float, keyword-only
        Relative tolerance of ``scipy.integrate.solve_ivp`` (RK45).

    Returns
    -------
    ClosureResult

    Raises
    ------
    ValueError
        Non-positive γ, d or negative Δ, η; a readout other than ``ones``; unknown activation;
        ``times`` not a non-empty increasing 1-D array of ``t ≥ 0``; ``nodes < 2``.

    References
    ----------
    docs/dynamics.md §1–§3 (all equations); Saad & Solla (1995) for the order-parameter
    approach; Couillet & Liao (2022), Theorem 2.6 (deterministic equivalent).

    Notes
    -----
    The constant-mode residual (``finite_k``) relaxes towards ``τ_e/(η√k μ₂)``, which needs
    ``dθ/dt``; that is evaluated by a forward difference along the flow.

    Regime ``pinned`` (``μ₂ ≠ 0``): ``|w_i|² = d`` and the state is ``(ε_L, ρ, e₀, log c(λ),
    u(μ))``; the noiseless quadratic part follows the Riccati solution with Gram integral
    ``c(λ) = ∫ e²(λ,s) ds`` and ``e²(λ,t) = exp(2βλt + 2θ(t))``, ``θ`` fixed by
    ``tr S/d = √γ``; the noise adds ``γ^{-1/2} Σ w_a w_b u`` to ``tr(S − S⁰)²/d``
    (:class:`_QuadraticFlow`).  Regime ``free-norm`` (``μ₂ = 0``): the state is
    ``(ε_L, ρ, q)``.
    """
    gamma, delta, lr = float(gamma), float(delta), float(lr)
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    if not (math.isfinite(delta) and delta >= 0):
        raise ValueError(f"delta must be >= 0, got {delta!r}")
    if not (math.isfinite(lr) and lr >= 0):
        raise ValueError(f"lr must be >= 0, got {lr!r}")
    if int(dim) < 1:
        raise ValueError(f"dim must be >= 1, got {dim!r}")
    if str(readout).strip().lower() != "ones":
        raise ValueError(f"the closure is implemented for readout 'ones' only, got {readout!r}")
    coef = closure_coefficients(activation, drop_hermite=drop_hermite, unit_variance=unit_variance)
    dim = int(dim)
    k = max(1, int(round(gamma * dim)))
    gam = k / dim
    if times is None:
        times = np.concatenate([[0.0], np.geomspace(min(1e-3, t_max / 10), t_max, 200)])
    times = _check_times(times)
    nodes = _check_nodes(nodes)
    params = {"activation": activation, "gamma": gam, "delta": delta, "lr": lr, "dim": dim,
              "width": k, "readout": "ones", "drop_hermite": list(drop_hermite),
              "unit_variance": bool(unit_variance), "noise": bool(noise),
              "finite_k": bool(finite_k), "nodes": int(nodes),
              **{key: coef[key] for key in ("mu0", "mu1", "mu2", "mu3", "mu4", "g1", "nu", "nu1", "h3",
                                           "r")}}
    if abs(coef["mu2"]) > 1e-12:
        params["regime"] = "pinned"
        return _solve_pinned(coef, gam, k, dim, delta, lr, times, nodes, noise, finite_k, rtol, params)
    params["regime"] = "free-norm"
    return _solve_free(coef, gam, k, dim, delta, lr, times, noise, finite_k, rtol, params)


def _check_times(times):
    times = np.asarray(times, dtype=float)
    if (times.ndim != 1 or times.size == 0 or not np.all(np.isfinite(times)) or np.any(times < 0)
            or np.any(np.diff(times) < 0)):
        raise ValueError("times must be a non-empty increasing 1-D array of finite t >= 0")
    return times


def _check_nodes(nodes):
    if int(nodes) != nodes or int(nodes) < 2:
        raise ValueError(f"nodes must be an integer >= 2, got {nodes!r}")
    return int(nodes)


def _linear_rhs(k, lr, c1, nu1, eps_l, rho, e2, noise):
    """``dε_L/dt`` and ``dρ/dt`` (LMS of the linear part, docs/dynamics.md §2)."""
    d_eps = k * (-2 * lr * c1 ** 2 * eps_l)
    if noise:
        d_eps += k * lr ** 2 * c1 ** 4 * e2 + c1 ** 2 * lr ** 2 * e2 * (nu1 - c1 ** 2)
    return d_eps, -k * lr * c1 ** 2 * rho


def noise_pair_nodes(lam, weight):
    """Pairs ``(a ≤ b)`` of spectral nodes: decay rates ``μ = λ_a + λ_b`` and pair weights.

    The linear-response variance ``u(μ)`` of the SGD noise (``docs/dynamics.md`` §3) depends on
    a pair of eigenvalues of ``S⁰`` only through ``μ``; off-diagonal pairs count twice.  Pairs
    with ``μ = 0`` (both in the kernel of ``S⁰``, ``γ < 1``) receive no noise at this order and
    are dropped.

    Parameters
    ----------
    lam, weight : ndarray (n,)
        Spectral quadrature of ``S⁰`` (:func:`spectral_nodes`).

    Returns
    -------
    mu, pair_weight : ndarray (m,)
        ``Σ pair_weight = 1 − (1 − γ)²`` for ``γ < 1`` and 1 for ``γ ≥ 1``.

    Raises
    ------
    ValueError
        ``lam`` and ``weight`` not 1-D arrays of one length.
    """
    lam, weight = np.asarray(lam, dtype=float), np.asarray(weight, dtype=float)
    if lam.ndim != 1 or lam.shape != weight.shape:
        raise ValueError(f"lam and weight must be 1-D of one length, got shapes {lam.shape} "
                         f"and {weight.shape}")
    a, b = np.triu_indices(lam.size)
    mu = lam[a] + lam[b]
    pw = weight[a] * weight[b] * np.where(a == b, 1.0, 2.0)
    keep = mu > 0
    return mu[keep], pw[keep]


class _QuadraticFlow:
    """Quadratic part of the pinned regime: Riccati flow plus linear-response noise.

    State: ``log c(λ)`` (Gram integral of the noiseless Riccati solution, ``n`` nodes) and
    ``u(μ)`` (noise variances on the pairs of :func:`noise_pair_nodes`).  docs/dynamics.md §3.
    """

    def __init__(self, gamma, beta, nodes):
        self.gamma, self.beta = float(gamma), float(beta)
        self.sg = math.sqrt(self.gamma)
        self.lam, self.w = spectral_nodes(self.gamma, nodes=nodes)
        self.mu, self.w_pair = noise_pair_nodes(self.lam, self.w)
        self.n, self.m = self.lam.size, self.mu.size
        self.lam1 = float(self.w @ self.lam)
        self.lam2 = float(self.w @ self.lam ** 2)

    def initial(self, t0):
        return np.concatenate([np.full(self.n, math.log(t0)), np.zeros(self.m)])

    def state(self, t, y):
        """``log e²(λ)``, ``2θ``, moments and ``(tr SS⁰/d, tr S²/d)`` of the noiseless part."""
        lam, w, beta = self.lam, self.w, self.beta
        gram = 2.0 * beta * np.exp(y[:self.n])
        delta_ = deterministic_equivalent(gram, w, self.gamma)
        log_phi0 = np.log(delta_) + 2 * beta * lam * t - np.log1p(delta_ * gram)
        two_theta = math.log(self.sg) - logsumexp(log_phi0, b=w)
        log_e2 = 2 * beta * lam * t + two_theta
        mom = riccati_moments(lam, w, self.gamma, gram, np.exp(log_e2))
        phi = mom["phi"]
        traces = (float(w @ (lam * phi)), float(w @ phi ** 2 + mom["fluctuation"]))
        return log_e2, two_theta, traces

    def noise_error(self, y):
        """Noise part ``E = γ^{-1/2} Σ w_pair u`` of ``tr(S − S⁰)²/d``."""
        return float(self.w_pair @ y[self.n:]) / self.sg

    def totals(self, y, traces):
        """``(tr SS⁰/d, tr S²/d)`` with the noise: the overlap drops by ``E/2``.

        To first order around ``S⁰`` the pinned norms hold ``tr S²/d`` (its mean drift
        ``2D'(1 + γ − tr S²/d)`` vanishes there) and ``tr SS⁰/d`` loses ``E/2``.
        """
        return traces[0] - 0.5 * self.noise_error(y), traces[1]

    def error(self, y, traces):
        """``tr(S − S⁰)²/d``."""
        cross, self_ = self.totals(y, traces)
        return self_ - 2 * cross + self.lam2

    def rates(self, t, y, noise, structured=0.0, state=None):
        """``dy/dt`` for the noise levels ``noise`` and ``structured``, and the traces.

        ``state``: the result of :meth:`state` at ``(t, y)`` when the caller has it already.

        A pair ``μ = λ_a + λ_b`` receives ``(D₀ + κ√γ μ)·μ`` per unit time: ``D₀`` the
        isotropic part of the row covariance of the noise, ``κ√γ G`` (``G = WWᵀ/√(kd)``) its
        part along the student Gram together with the matching fourth-moment term
        (docs/dynamics.md §3). It is scaled by ``1 + tr SS⁰/d − tr S²/d``, the exact Itô
        drift of the error for isotropic noise with pinned norms relative to its value at
        ``S = S⁰`` (0 at a random ``S``); the variance of each pair relaxes at the rate
        ``2βμ`` (the mode itself at ``βμ``) of the flow linearized around ``S = S⁰``.
        """
        log_e2, _, traces = self.state(t, y) if state is None else state
        factor = max(1.0 + traces[0] - traces[1], 0.0)
        source = (noise + structured * self.sg * self.mu) * factor
        d_log_c = np.exp(log_e2 - y[:self.n])
        d_u = self.mu * (source - 2.0 * self.beta * y[self.n:])
        return np.concatenate([d_log_c, d_u]), traces


def _bulk_fourth(mu4, k, dim, overlap, self_):
    """Degree-4 part ``ε₄ = (μ₄²/8) k (v_T⁴ + v_S⁴ − 2w⁴)`` of the Gaussian cosines (O(γ/d)).

    ``v_T² = 1/d``, ``v_S² = (tr S²/d − 1)/k``, ``w² = tr SS⁰/(dk)``: variances of the
    teacher–teacher, student–student and teacher–student cosines (docs/dynamics.md §1).
    """
    v_s = (self_ - 1.0) / k
    w2 = overlap / k
    return mu4 ** 2 / 8 * k * (1.0 / dim ** 2 + v_s ** 2 - 2 * w2 ** 2)


def _residual_along_b(rho, eps_l, mu1, c1):
    """``r·b`` for the linear residual ``r = μ₁b⁰ − c̄₁b`` (``|b⁰| = 1``, ``b·b⁰`` from ``ρ``):
    ``[ρ(1 − ρ)μ₁² − (ε_L − ρ²μ₁²)]/c̄₁`` (the LMS fluctuation of ``b`` makes it negative at
    the steady state; docs/dynamics.md §1)."""
    return (rho * (1 - rho) * mu1 ** 2 - (eps_l - (rho * mu1) ** 2)) / c1


def _mean_row_quadratic(quad, mu2, linear_overlap, k):
    """Rank-one mean-row term ``ε_{Q,1}`` of the quadratic error (O(1/k), ``≤ 0``).

    ``S = k w̄w̄ᵀ/√(kd) + S̃`` (``w̄`` the mean row, ``S̃`` from the centred rows): the mean row
    carries a rank-one part of ``S − S⁰`` worth ``1/k`` of ``ε_Q`` at ``t = 0``
    (``(μ₂²/2k)|b̂b̂ᵀ − b̂⁰b̂⁰ᵀ|²_F = μ₂²(1 − L²)/k``, ``|w̄|² ≈ d/k``, ``L`` the cosine of ``b``
    with ``b⁰``).  The linear mode aligns it at rate ``O(k)`` (``L² → 1``),
    long before the Riccati flow, whose ``d → ∞`` solution gives that direction only the
    average progress ``P = 1 − ε_Q/μ₂²``.  The error of that direction is therefore
    ``μ₂²(1 − max(L², P))/k`` instead of ``μ₂²(1 − P)/k``: returns
    ``−(μ₂²/k)·max(0, L² − P) = −max(0, ε_Q − μ₂²(1 − L²))/k`` (docs/dynamics.md §1).

    Parameters
    ----------
    quad : float
        Closure value of ``ε_Q`` (``μ₂²`` at ``t = 0``).
    mu2 : float
        Degree-2 Hermite coefficient.
    linear_overlap : float
        ``L`` (the solver does not call this when ``μ₁ = 0``).
    k : int
        Width.
    """
    return -max(0.0, float(quad) - mu2 ** 2 * (1.0 - float(linear_overlap) ** 2)) / k


def _cosine_mean_cubic(a3_mu3, mean_k, width2):
    """Degree-3 term ``ε₃`` of the error from the mean of the teacher–student cosines (O(1/d)).

    The learned linear part fixes ``Σ_ip cos_ip = k·m̄`` (``k·m̄ = b·b⁰/√q`` for student rows
    of norm ``q``, teacher rows of norm 1).  With the cosines Gaussian around ``m̄`` with
    variance ``width2``, the cross term ``−(2/k) Σ_ip (a₃μ₃/6) cos_ip³`` of the error gains
    ``−(2/k)·k²·(a₃μ₃/6)·3 m̄ width2 = −a₃μ₃ (k m̄) width2`` (the ``m̄³`` part, ``O(1/k²)``, is
    left out); the student–student and teacher–teacher cosines have mean ``O(ε_L/k)`` and
    ``0`` (docs/dynamics.md §1).

    Parameters
    ----------
    a3_mu3 : float
        Product of the degree-3 Hermite coefficients of student (at its norm) and teacher.
    mean_k : float
        ``k·m̄``.
    width2 : float
        Variance of the teacher–student cosines.
    """
    return -float(a3_mu3) * float(mean_k) * float(width2)


def riccati_flow(gamma, beta, times, *, noise=0.0, nodes=40, rtol=1e-6):
    r"""Pinned matrix Riccati flow with isotropic noise, ``d → ∞`` (docs/dynamics.md §3).

    Predicts the d×d matrix SDE ``dW = βW(S⁰ − S)dt + τW dt + √D' dB`` (``W`` k×d from an iid
    Gaussian start, ``S = WᵀW/√(kd)``, ``S⁰`` the same for an independent ``W⁰``, ``τ`` keeping
    the mean of ``|w_i|²/d`` at 1): exact in the noiseless part, first order in ``D'`` for the
    noise.

    Parameters
    ----------
    gamma : float
        ``k/d > 0``.
    beta : float
        Rate ``β > 0`` (``η μ₂² √γ`` for SGD).
    times : array_like
        Output times ``t > 0``, increasing, with ``2βλ_max t < 700`` (``λ_max`` the upper
        spectral edge of ``S⁰``, ``(1 + √γ)²/√γ``).
    noise : float, keyword-only
        ``D' ≥ 0``, variance per coordinate and unit time.
    nodes : int, keyword-only
        Nodes on the spectrum of ``S⁰``.
    rtol : float, keyword-only

    Returns
    -------
    dict of ndarray
        ``time``, ``overlap`` (``tr SS⁰/d``), ``self`` (``tr S²/d``), ``error``
        (``tr(S − S⁰)²/d``), ``noise_error`` (its noise part; stationary value
        ``D'√γ(1 − γ/2)/β`` for ``γ < 1``, ``D'/(2β√γ)`` for ``γ ≥ 1``).

    Raises
    ------
    ValueError
        ``γ ≤ 0``, ``β ≤ 0``, ``D' < 0``, ``nodes < 2`` or ``times`` not a non-empty increasing
        1-D array of ``t ≥ 0``.
    RuntimeError
        The integration failed (overflow at too large ``βt``).

    References
    ----------
    Exact noiseless solution: docs/dynamics.md §3 with the deterministic equivalent of
    Couillet & Liao (2022), Theorem 2.6; the noise: linear response around ``S = S⁰``
    (Ornstein–Uhlenbeck modes), docs/dynamics.md §3.
    """
    from scipy.integrate import solve_ivp

    gamma, beta, noise = float(gamma), float(beta), float(noise)
    if not (math.isfinite(gamma) and gamma > 0):
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    if not (math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta must be > 0, got {beta!r}")
    if not (math.isfinite(noise) and noise >= 0):
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    times = _check_times(times)
    flow = _QuadraticFlow(gamma, beta, _check_nodes(nodes))
    t0 = 1e-6
    sol = solve_ivp(lambda t, y: flow.rates(t, y, noise)[0], (t0, max(times[-1], 2 * t0)),
                    flow.initial(t0), t_eval=np.clip(times, t0, None), rtol=rtol, atol=1e-10)
    if not sol.success:
        raise RuntimeError(f"riccati_flow: integration failed ({sol.message}); the exponential "
                           "representation overflows once 2·β·λ_max·t approaches 700")
    out = {"time": sol.t, "overlap": [], "self": [], "error": [], "noise_error": []}
    for t, y in zip(sol.t, sol.y.T):
        _, _, traces = flow.state(t, y)
        overlap, self_ = flow.totals(y, traces)
        out["overlap"].append(overlap)
        out["self"].append(self_)
        out["error"].append(flow.error(y, traces))
        out["noise_error"].append(flow.noise_error(y))
    return {key: np.asarray(val, dtype=float) for key, val in out.items()}


def _solve_pinned(coef, gam, k, dim, delta, lr, times, nodes, noise, finite_k, rtol, params):
    from scipy.integrate import solve_ivp

    mu1, mu2, mu3, mu4 = coef["mu1"], coef["mu2"], coef["mu3"], coef["mu4"]
    g1, nu1 = coef["g1"], coef["nu1"]
    flow = _QuadraticFlow(gam, lr * mu2 ** 2 * math.sqrt(gam), nodes)
    t0 = 1e-6
    # state: ε_L, ρ, e₀ (constant-mode residual), then the quadratic state of the flow
    quad_state = slice(3, None)

    def errors(y, traces):
        """``ε_L``, ``ε_Q`` (with ``ε_{Q,1}``), ``ε`` and ``ε_{Q,1}``."""
        quad = 0.5 * mu2 ** 2 * flow.error(y[quad_state], traces)
        mean_row = 0.0
        if finite_k and mu1:
            mean_row = _mean_row_quadratic(quad, mu2, _linear_overlap(y[1], y[0], mu1), k)
        quad += mean_row
        eps = y[0] + quad + 2 * g1 + bulk_finite_k(y, traces) + y[2] ** 2
        return float(y[0]), float(quad), float(eps), mean_row

    def bulk_finite_k(y, traces):
        """``ε₄`` (:func:`_bulk_fourth`) and ``ε₃`` (:func:`_cosine_mean_cubic`, ``k m̄ = 1 − ρ``,
        cosine variance ``tr SS⁰/(dk)``); both 0 at t = 0."""
        if not finite_k:
            return 0.0
        overlap, self_ = flow.totals(y[quad_state], traces)
        return (_bulk_fourth(mu4, k, dim, overlap, self_)
                + _cosine_mean_cubic(mu3 ** 2, 1.0 - y[1], overlap / k))

    # the quadratic residual also pulls each row radially through σ''': its force on w_i is
    # 2μ₂A u_i + μ₄(u_iᵀAu_i)u_i (Stein), so the multiplier is θ'(1 + μ₄/(2μ₂)) (docs §1)
    radial = 1.0 + mu4 / (2.0 * mu2)

    def theta_rate(t, y, f, two_theta):
        """dθ/dt by a forward difference along the flow (θ is algebraic in the state)."""
        h = 1e-6 * max(1.0, t)
        _, shifted, _ = flow.state(t + h, y[quad_state] + h * f[quad_state])
        return 0.5 * (shifted - two_theta) / h

    def const_target(theta_dot, y, e2):
        """Residual ``e₀* = τ_e/(η√k μ₂)`` that balances the radial forces (docs §1).

        ``τ_e = θ'(1 + μ₄/2μ₂) + ηh₃ − η(μ₁ + μ₃)(r·b) − η²(ε + Δ)ν₁/2``: the Riccati drift,
        the self-force above degree two, the radial pull of the linear residual
        ``r = μ₁b⁰ − μ₁b`` (Stein: ``E[(r·x)σ'(h_i)x] = μ₁r + μ₃(r·u_i)u_i``) and the Itô
        growth of the norms by the SGD noise; at the LMS steady state the ``μ₁`` parts of the
        last two cancel (docs §1, free-norm regime).
        """
        r_b = _residual_along_b(y[1], y[0], mu1, mu1) if mu1 else 0.0
        tau = theta_dot * radial + lr * coef["h3"] - lr * (mu1 + mu3) * r_b
        if noise:
            tau -= 0.5 * lr ** 2 * e2 * nu1
        return tau / (lr * math.sqrt(k) * mu2)

    def rhs_core(t, y):
        """Right-hand side (``de₀/dt`` left 0), ``ε + Δ``, ``2θ`` and the traces."""
        state = flow.state(t, y[quad_state])
        traces = state[2]
        eps = errors(y, traces)[2]
        e2 = eps + delta
        d_eps, d_rho = _linear_rhs(k, lr, mu1, nu1, y[0], y[1], e2, noise)
        iid = lr ** 2 * e2 * (nu1 - mu1 ** 2) if noise else 0.0
        kappa = lr ** 2 * e2 * mu2 ** 2 if noise else 0.0
        d_quad, _ = flow.rates(t, y[quad_state], iid - kappa, kappa, state=state)
        return np.concatenate([[d_eps, d_rho, 0.0], d_quad]), e2, state[1], traces

    def rhs(t, y):
        f, e2, two_theta, _ = rhs_core(t, y)
        if finite_k and lr > 0:
            # the mean norm relaxes at rate ηkμ₂² towards the balance of the radial forces
            target = const_target(theta_rate(t, y, f, two_theta), y, e2)
            f[2] = -lr * k * mu2 ** 2 * (y[2] - target)
        return f

    y0 = np.concatenate([[2 * mu1 ** 2, 1.0, 0.0], flow.initial(t0)])
    t_eval = np.clip(times, t0, None)
    sol = solve_ivp(rhs, (t0, max(t_eval[-1], 2 * t0)), y0, t_eval=t_eval, method="RK45",
                    rtol=rtol, atol=1e-10)
    out = {name: [] for name in CLOSURE_DATASETS}
    noise_out = []
    s0 = flow.lam2 - flow.lam1 ** 2
    for t, y in zip(sol.t, sol.y.T):
        traces = flow.state(t, y[quad_state])[2]
        eps_l, quad, eps, mean_row = errors(y, traces)
        e2 = eps + delta
        overlap, self_total = flow.totals(y[quad_state], traces)
        # the aligned mean row raises tr SS⁰/d by −ε_{Q,1}/μ₂² (ε_Q = μ₂²(… − tr SS⁰/d))
        cross = overlap - mean_row / mu2 ** 2 - flow.lam1 * flow.sg
        self_ = self_total - gam
        out["linear_error"].append(eps_l)
        out["quadratic_error"].append(quad)
        out["constant_error"].append(float(y[2]) ** 2)
        out["test_error"].append(eps)
        out["linear_overlap"].append(_linear_overlap(y[1], eps_l, mu1))
        out["quadratic_overlap"].append(cross / math.sqrt(max(self_ * s0, 1e-300)))
        out["bulk_width"].append(math.sqrt(max(overlap, 0.0) / k))
        out["student_norm"].append(1.0)
        noise_out.append(e2)
    m = len(sol.t)
    arrays = {name: np.asarray(out[name], dtype=float) for name in CLOSURE_DATASETS if name != "time"}
    return ClosureResult(time=times[:m].copy(), noise=np.asarray(noise_out), parameters=params,
                         success=bool(sol.success), message=str(sol.message), **arrays)


def _norm_averages(coef, q):
    """Averages over ``h ~ N(0, q)``: c0, c1 = E σ', variance beyond linear, ν₁(q), F(q),
    ``a3`` = E[σ(√q z) He₃(z)] (degree-3 coefficient in the unit variable) and ``radial`` =
    E[(σ'(h)h)'] = E[σ'(h)h²]/q."""
    z, wz = coef["gauss_nodes"], coef["gauss_weights"]
    h = math.sqrt(max(q, 1e-12)) * z
    s = coef["sigma"](h)
    sp = coef["derivative"](h)
    c0 = float(wz @ s)
    c1 = float(wz @ sp)
    nl = s - c0 - c1 * h
    return {"c0": c0, "c1": c1, "var_nl": float(wz @ nl ** 2), "nu1": float(wz @ sp ** 2),
            "force": float(wz @ (nl * sp * h)), "a3": float(wz @ (s * (z ** 3 - 3 * z))),
            "radial": float(wz @ (sp * h * h)) / max(q, 1e-12)}     # E[(σ'(h)h)'] (Stein)


def _solve_free(coef, gam, k, dim, delta, lr, times, noise, finite_k, rtol, params):
    from scipy.integrate import solve_ivp

    mu0, mu1 = coef["mu0"], coef["mu1"]
    teacher_nl = coef["nu"] - mu0 ** 2 - mu1 ** 2
    t0 = 1e-9

    def errors(y):
        av = _norm_averages(coef, y[2])
        const = k * (av["c0"] - mu0) ** 2
        eps = y[0] + teacher_nl + av["var_nl"] + const
        if finite_k and mu1 != 0:
            # ε₃: c̄₁ b·b⁰ = μ₁(1 − ρ) sets the mean cosine, k m̄ = b·b⁰/√q; cosine variance 1/d
            mean_k = mu1 * (1.0 - y[1]) / (av["c1"] * math.sqrt(max(y[2], 1e-12)))
            eps += _cosine_mean_cubic(av["a3"] * coef["mu3"], mean_k, 1.0 / dim)
        return av, eps, const

    def rhs(t, y):
        av, eps, _ = errors(y)
        e2 = eps + delta
        d_eps, d_rho = _linear_rhs(k, lr, av["c1"], av["nu1"], y[0], y[1], e2, noise)
        # radial pull of the linear residual r = μ₁b⁰ − c̄₁b on the rows: 2η E[(σ'(h)h)'] (r·b)
        r_b = _residual_along_b(y[1], y[0], mu1, av["c1"])
        d_q = 2 * lr * (av["radial"] * r_b - av["force"])
        if noise:
            d_q += lr ** 2 * e2 * av["nu1"]
        return [d_eps, d_rho, d_q]

    sol = solve_ivp(rhs, (t0, max(times[-1], 2 * t0)), [2 * mu1 ** 2, 1.0, 1.0],
                    t_eval=np.clip(times, t0, None), method="RK45", rtol=rtol, atol=1e-10)
    out = {name: [] for name in CLOSURE_DATASETS}
    noise_out = []
    for y in sol.y.T:
        av, eps, const = errors(y)
        out["linear_error"].append(y[0])
        out["quadratic_error"].append(0.0)
        out["constant_error"].append(const)
        out["test_error"].append(eps)
        out["linear_overlap"].append(_linear_overlap(y[1], y[0], mu1))
        out["quadratic_overlap"].append(0.0)
        out["bulk_width"].append(1.0 / math.sqrt(dim))
        out["student_norm"].append(y[2])
        noise_out.append(eps + delta)
    m = len(sol.t)
    arrays = {name: np.asarray(out[name], dtype=float) for name in CLOSURE_DATASETS if name != "time"}
    return ClosureResult(time=times[:m].copy(), noise=np.asarray(noise_out), parameters=params,
                         success=bool(sol.success), message=str(sol.message), **arrays)


def closure_for_run(parameters, times=None, **options):
    """:func:`solve_closure` for the parameters of a ``replica-sgd`` file.

    Parameters
    ----------
    parameters : dict
        ``parameters`` attribute of the file (:meth:`replica.simulations.sgd.SGDConfig.to_dict`).
    times : array_like, optional
        Output times (default: the run's final time on 200 log-spaced points plus 0).
    **options
        Passed to :func:`solve_closure`.
    """
    p = parameters
    t_max = float(p.get("num_steps", 1) * p.get("batch", 1) / (p["width"] * p["dim"]))
    return solve_closure(p["activation"], gamma=p["width"] / p["dim"], delta=p["delta"],
                         lr=p["lr"], dim=p["dim"], times=times, t_max=max(t_max, 1e-6),
                         readout=p.get("readout", "ones"),
                         drop_hermite=tuple(p.get("drop_hermite", ())),
                         unit_variance=bool(p.get("unit_variance", False)), **options)


# ---------------------------------------------------------------------------------------------
# specialization: escape of single overlaps from the Gaussian bulk
# ---------------------------------------------------------------------------------------------
def _sphere_drift(m, pull):
    """Pull ``Σ_p pull_p w⁰_p`` on a unit student row, projected on its sphere, in cosines.

    ``m``, ``pull``: arrays (..., k) of the cosines with the k teacher rows and ``g'(m)``;
    returns ``pull_j − m_j Σ_p m_p pull_p`` (teacher rows taken orthonormal).
    """
    return pull - m * np.sum(m * pull, axis=-1, keepdims=True)


def escape_time(closure, *, threshold=0.8, level=0.5, students=400, seed=0, shielding=True,
                dt_max=0.5, t_max=None):
    r"""Specialization time of the escape model on top of a closure.

    Each student neuron carries ``k`` cosines ``m_j`` with the teacher neurons (pinned norms;
    for the free-norm regime cosines at ``q = 1``); students are independent, and a student's
    cosines evolve by

    .. math::  dm_j = \Big[\Big(\frac{\dot w}{w} - \frac{D}{2w^2}\Big) m_j
                      + η \Big(g'(m_j) - m_j \sum_p m_p\, g'(m_p)\Big)\Big] dt + \sqrt{D}\, dB_j,
               \qquad D = η^2 (ε + Δ)\,(ν_1 - c̄_1^2) / d,

    where ``w(t)`` is the closure's bulk width, ``ε + Δ`` its noise level and ``g'`` the
    derivative of the part of the dual kernel above degree two (drift ``∝ m^{r−1}``); the
    pull ``Σ_p g'(m_p) w⁰_p`` of all teachers is projected on the tangent of the student's
    sphere, hence the collective term ``−m_j Σ_p m_p g'(m_p)`` (``−m_j² g'(m_j)`` alone when the
    other cosines are negligible).
    Without ``g'`` the cosines stay Gaussian with variance ``w(t)²`` (the closure).  A student
    is specialized once ``max_j |m_j| > threshold``; the returned time is when the fraction
    of specialized students reaches ``level`` (Monte Carlo over ``students`` students).

    Parameters
    ----------
    closure : ClosureResult
        From :func:`solve_closure`; its last state is held constant beyond its last time.
    threshold, level : float, keyword-only
        As ``scripts/sgd_scaling.py`` (defaults 0.8 and 0.5).
    students : int, keyword-only
        Monte Carlo sample of student neurons.
    seed : int, keyword-only
    shielding : bool, keyword-only
        Use the closure's decreasing noise ``ε(t) + Δ``; False freezes it at its ``t = 0``
        value (the noise without the learned linear and quadratic parts).
    dt_max : float, keyword-only
        Largest Euler–Maruyama step (the step is also limited by the drift).
    t_max : float, optional, keyword-only
        Give up after this time (default ``10⁴ ×`` the closure's last time).

    Returns
    -------
    dict
        ``t_spec`` (NaN if not reached), ``negative_fraction`` (fraction of the specialized
        students whose escaping cosine is negative), ``time`` and ``fraction`` (ndarrays of
        one length, the Euler–Maruyama times and the predicted specialized fraction).

    Raises
    ------
    KeyError
        ``closure.parameters`` lacks the keys set by :func:`solve_closure`.

    Notes
    -----
    ``D``, ``ν₁`` and ``c̄₁`` are taken at ``q = 1`` also in the free-norm regime (the cosine
    noise of a row of norm ``q`` would carry ``1/q``), and the degree-≥3 repulsion between
    student rows, ``−η Σ_l g'(c_il) w_l``, is left out.
    """
    p = closure.parameters
    coef = closure_coefficients(p["activation"], drop_hermite=tuple(p.get("drop_hermite", ())),
                                unit_variance=p.get("unit_variance", False))
    g_prime = coef["g_prime"]
    eta, dim, k = p["lr"], p["dim"], p["width"]
    nu_rot = coef["nu1"] - coef["mu1"] ** 2      # the common mode (μ₁²) is undone by the linear mode
    t_grid = np.asarray(closure.time, dtype=float)
    width = np.asarray(closure.bulk_width, dtype=float)
    noise = np.asarray(closure.noise, dtype=float)
    if not shielding:
        noise = np.full_like(noise, noise[0])
    log_w = np.log(width)
    rate_w = np.gradient(log_w, t_grid) if t_grid.size > 1 else np.zeros_like(width)
    t_max = float(t_max if t_max is not None else 1e4 * max(t_grid[-1], 1.0))
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((int(students), k)) * width[0]
    done = np.zeros(int(students), bool)
    sign = np.zeros(int(students))
    t, times, fractions = 0.0, [0.0], [0.0]
    grid_q = np.linspace(-1.0, 1.0, 2001)
    gp_table = np.broadcast_to(np.asarray(g_prime(grid_q), dtype=float), grid_q.shape)
    while t < t_max:
        i = min(np.searchsorted(t_grid, t), t_grid.size - 1)
        w2 = width[i] ** 2
        diff = eta ** 2 * noise[i] * nu_rot / dim
        lin = (rate_w[i] if t <= t_grid[-1] else 0.0) - diff / (2 * w2)
        drift_nl = eta * _sphere_drift(m, np.interp(m, grid_q, gp_table))
        scale = max(np.max(np.abs(drift_nl)), abs(lin), 1e-12)
        dt = min(dt_max, 0.02 / scale, max(t, 1e-3) * 0.05 + 1e-3)
        m = m + (lin * m + drift_nl) * dt + math.sqrt(diff * dt) * rng.standard_normal(m.shape)
        np.clip(m, -1.0, 1.0, out=m)
        t += dt
        absm = np.abs(m)
        best = np.argmax(absm, axis=1)
        new = (~done) & (absm[np.arange(m.shape[0]), best] > threshold)
        sign[new] = np.sign(m[np.arange(m.shape[0]), best][new])
        done |= new
        times.append(t)
        fractions.append(float(np.mean(done)))
        if fractions[-1] >= level:
            break
    times, fractions = np.asarray(times), np.asarray(fractions)
    hit = np.nonzero(fractions >= level)[0]
    t_spec = float(times[hit[0]]) if hit.size else float("nan")
    negative = float(np.mean(sign[done] < 0)) if np.any(done) else float("nan")
    return {"t_spec": t_spec, "negative_fraction": negative, "time": times, "fraction": fractions}


def specialization_time_prediction(activation, widths, *, gamma=0.5, delta=0.1, lr=0.5,
                                   threshold=0.8, level=0.5, students=400, seed=0,
                                   shielding=True, closure_time=200.0, **modifiers):
    """Predicted ``t_spec(k)`` (:func:`escape_time`) for widths ``k`` at ``d = round(k/γ)``.

    Returns
    -------
    list of dict
        One per width: ``k``, ``d``, ``t_spec``, ``negative_fraction``.
    """
    out = []
    for k in widths:
        d = max(1, int(round(k / gamma)))
        res = solve_closure(activation, gamma=k / d, delta=delta, lr=lr, dim=d,
                            t_max=closure_time, **modifiers)
        esc = escape_time(res, threshold=threshold, level=level, students=students, seed=seed,
                          shielding=shielding)
        out.append({"k": int(k), "d": d, "t_spec": esc["t_spec"],
                    "negative_fraction": esc["negative_fraction"]})
    return out


def refinement_fixed_points(activation, *, lr=0.5, noise=0.1, drop_hermite=(),
                            unit_variance=False, grid=4001):
    r"""Fixed points of the matched-pair dynamics after specialization.

    A specialized pair with cosine ``m`` (pinned norms, linear and quadratic parts held by
    the collective variables) moves by

    .. math::  \dot m = η (1 - m^2)\, g'(m) - \tfrac12 η^2 (ε + Δ)\,(ν_1 - μ_1^2 - μ_2^2)\, m ,

    the second term being the pull of the isotropic SGD noise ``D₀`` on the sphere.  A model
    (``docs/dynamics.md`` §5): of the row covariance ``η²(ε + Δ)μ₁² 11ᵀ + D₀ I + κ√γ G`` of the
    noise (§3, with its fourth-moment term) the common mode is taken to be undone by the linear
    mode and the part along the student Gram by the quadratic part.  Checked against SGD run to
    full specialization: median aligned matches 0.981, 0.983, 0.983 (ReLU, ELU, tanh; k = 16)
    and 0.977, 0.982, 0.982 (k = 32) against 0.979, 0.985, 0.985 at ``ε + Δ = 0.12``.

    Parameters
    ----------
    activation : str
    lr : float, keyword-only
    noise : float, keyword-only
        ``ε + Δ`` at refinement (≥ Δ).
    grid : int, keyword-only
        Points on ``[−1, 1]`` where sign changes of ``ṁ`` are bracketed.

    Returns
    -------
    list of dict
        ``m`` (fixed point), ``stable`` (bool); includes ``m = 0``.
    """
    from scipy.optimize import brentq

    coef = closure_coefficients(activation, drop_hermite=drop_hermite, unit_variance=unit_variance)
    g_prime, nu_rot = coef["g_prime"], coef["nu1"] - coef["mu1"] ** 2 - coef["mu2"] ** 2

    def rate(m):
        return lr * (1 - m * m) * g_prime(m) - 0.5 * lr ** 2 * noise * nu_rot * m

    xs = np.linspace(-0.999999, 0.999999, int(grid))
    vals = np.broadcast_to(np.asarray(rate(xs), dtype=float), xs.shape)     # one array call
    roots = []
    for a, b, fa, fb in zip(xs[:-1], xs[1:], vals[:-1], vals[1:]):
        if fa == 0:
            roots.append(float(a))
        elif fa * fb < 0:
            roots.append(float(brentq(rate, a, b, xtol=1e-12)))
    out = []
    for r in roots:
        h = 1e-6
        slope = (rate(r + h) - rate(r - h)) / (2 * h)
        out.append({"m": r, "stable": bool(slope < 0)})
    return out


def predicted_exponent(activation, **modifiers):
    """``r``: the lowest Hermite degree above two present in the activation.

    Returns
    -------
    int or None
        ``r`` (``|μ_r| > 1e-10``, searched up to degree 60), None for a polynomial of degree ≤ 2.
    """
    from replica.activations import get_activation

    act = get_activation(activation, **modifiers)
    scale = max(math.sqrt(max(act.nu, 0.0)), 1e-300)
    for ell in range(3, 61):
        if abs(act.hermite(ell)) > 1e-10 * scale:
            return ell
    return None


def predicted_scaling(k, r):
    """Shape of the predicted specialization time ``k^r/(log k)^(r−2)`` (arbitrary units)."""
    k = np.asarray(k, dtype=float)
    return k ** r / np.log(k) ** (r - 2)
