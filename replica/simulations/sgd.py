"""Online SGD on the one-hidden-layer teacher–student problem (docs/theory.md §1), in NumPy.

The student ``λ(x; W) = vᵀ σ(W x/√d)/√k`` trains its first-layer weights ``W ∈ R^{k×d}``
(the readout ``v`` is fixed and known, as in the Bayes setting) on the squared loss
``ℓ = ½ (y − λ(x; W))²`` with labels ``y = λ(x; W⁰) + √Δ z`` from a teacher of the same
architecture.  Every step uses ``B`` fresh samples (online SGD; no sample is reused).

Normalisations
--------------
* **Learning rate.**  With ``h = W x/√d`` and ``e = y − λ`` the per-sample gradient is
  ``∇_W ℓ = −e (v ⊙ σ'(h)) xᵀ / √(d k)``, and one step reads

      W ← W + η Σ_{b=1}^{B} e_b (v ⊙ σ'(h_b)) x_bᵀ / √(d k)          (``lr`` = η)

  i.e. the gradients of the ``B`` samples are **summed** (``η`` is a learning rate per
  sample; ``mean``-gradient SGD with step ``η B`` is the same thing).  For ``B ≪ d`` the
  dynamics in the time variable below does not depend on ``B``.
* **Time.**  ``t = n/(k d)`` with ``n`` the number of samples seen, i.e. samples per
  trained parameter; equivalently ``α = n/d² = (k/d) t = γ t``.  Why this variable: with
  ``η = O(1)`` (the largest stable scale: one sample changes its own prediction by about
  ``η E[σ'(z)²] e``) the drift of every teacher–student overlap ``w_i·w⁰_j/d`` and of every
  student norm ``|w_i|²/d`` is ``O(η/(dk))`` per sample, and the SGD-noise contribution to
  the norms is ``O(η²/(dk))`` per sample; both are ``O(1)`` per unit of ``t`` and
  independent of ``d`` at fixed ``γ``.  The quadratic part of the target (a ``d×d`` matrix)
  is therefore learned at ``t = O(1)``, which is the d-independent early ("Gaussian
  closure") dynamics.  The linear part (one ``d``-vector) is learned even faster, at
  ``n = O(d/η)``, i.e. ``t = O(1/k)``.  Specialization times are reported in ``t``; in
  samples ``n = k d t`` and in the replica variable ``α = γ t``.
* **Initialization.**  Rows of ``W`` drawn iid from the weight prior (unit-variance
  entries, ``|w_i|² ≈ d``, pre-activations of unit variance; ``init_scale`` multiplies
  them), independent of the teacher: every overlap starts at ``O(d^{-1/2})``.

Measurements (at the recording times)
-------------------------------------
* ``test_error`` ``E_x (λ(x; W_t) − λ(x; W⁰))²`` on a fixed set of fresh noiseless test
  inputs (label noise excluded).  Any estimator built from ``n`` samples has an error at
  least the Bayes ``mmse`` at ``α = n/d²``, which is why the replica levels are drawn next
  to it.
* ``linear_overlap``: cosine between ``Wᵀv`` and ``W⁰ᵀv`` (the linear part of λ is
  ``μ₁ vᵀWx/(√(dk))``).
* ``quadratic_overlap``: Frobenius cosine between the traceless parts of
  ``S = Wᵀ diag(v) W`` and ``S⁰`` (the quadratic part is ``(μ₂/2)(xᵀSx − tr S)/(d√k)``;
  the trace is removed because it is a constant and would give a spurious positive
  cosine ``≈ γ/(1+γ)`` at random initialization).
* the ``k×k`` cosine matrix ``q_ij = w_i·w⁰_j/(|w_i||w⁰_j|)``, summarized by its
  histogram ``overlap_histograms`` (all ``k²`` entries, fixed bins on ``[−1, 1]``), by the
  signed cosine of each student neuron with its best-matched teacher neuron
  (``matched_overlap``, argmax of ``|q_ij|`` over ``j``), by ``specialized_fraction``
  (fraction of student neurons with ``|matched| > threshold``) and by
  ``match_sign_positive_fraction`` (fraction of specialized neurons whose match is
  positive; NaN while none is specialized).

References
----------
D. Saad, S. A. Solla, "On-line learning in soft committee machines", Phys. Rev. E 52 (1995)
(online SGD, order-parameter dynamics, plateaus).  G. Ben Arous, R. Gheissari, A. Jagannath,
"Online stochastic gradient descent on non-convex losses from high-dimensional inference",
JMLR 22 (2021) (information exponent).  docs/theory.md §1–§2, §5.

Files, analysis and replica levels of the runs are :mod:`replica.workflow.sgd_results`. Why this
module is still about 900 lines: the numba and NumPy kernels of the online dynamics, the
configuration they take and the recording of one run share the private activation codes and
Hermite tables; they are one algorithm (docs/architecture.md, "Module size").
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass, field

import numba
import numpy as np
import priors._numba_cache  # noqa: F401 - numba cache fallback for read-only installs, before any kernel

from .teacher_student import sample_readout, sample_weights

__all__ = [
    "SGDConfig",
    "SGDResult",
    "SGD_TIME_CONVENTION",
    "activation_functions",
    "check_backend",
    "model_output",
    "loss_and_gradient",
    "sgd_steps",
    "record_schedule",
    "overlap_statistics",
    "run_sgd",
]

logger = logging.getLogger(__name__)

SGD_TIME_CONVENTION = ("t = n/(k d), n = samples seen (alpha = n/d^2 = (k/d) t); update "
                       "W += lr * sum_b e_b (v*sigma'(h_b)) x_b^T / sqrt(d k)")



# ---------------------------------------------------------------------------------------------
# activations and their derivatives
# ---------------------------------------------------------------------------------------------
def activation_functions(spec, *, drop_hermite=(), unit_variance=False):
    """σ and σ' of an activation of :mod:`replica.activations`, as NumPy functions.

    Parameters
    ----------
    spec : str
        A name of :data:`replica.activations.ACTIVATIONS` or ``'hermite:L=C,...'`` (σ = Σ C He_L/L!).
    drop_hermite : iterable of int, keyword-only
        Hermite degrees removed from σ (as :func:`replica.activations.get_activation`).
    unit_variance : bool, keyword-only
        Rescale to ``E σ(z)² = 1`` after dropping.

    Returns
    -------
    activation : replica.activations.Activation
        The activation object (``__call__`` is σ; Hermite coefficients, ``g``).
    derivative : callable
        ``σ'(x)`` elementwise on float arrays (:meth:`replica.activations.Activation.derivative`).

    Raises
    ------
    ValueError
        Unknown activation or bad modifiers (message from ``get_activation``).
    """
    from replica.activations import get_activation

    act = get_activation(spec, drop_hermite=drop_hermite, unit_variance=unit_variance)
    return act, act.derivative


# ---------------------------------------------------------------------------------------------
# compiled inner loop (profiling: per-step NumPy call overhead dominated at B ≲ 16)
# ---------------------------------------------------------------------------------------------
#: compiled forms of names of :data:`replica.activations.ACTIVATIONS` (codes of :func:`_activation_scalar`);
#: polynomial activations (``quadratic``, ``hermite:``) use the Hermite code; a registered name
#: without a code runs with ``backend="numpy"`` only (:func:`check_backend`)
_ACTIVATION_CODES = {"relu": 0, "elu": 1, "tanh": 2, "tanh2": 3, "erf": 4, "sigmoid": 5,
                     "softplus": 6}
_POLYNOMIAL_CODE = 7
_POLYNOMIALS = ("quadratic",)


def check_backend(spec, backend):
    """Refuse an activation that the chosen backend cannot run.

    Parameters
    ----------
    spec : str
        Activation specification (:func:`replica.activations.get_activation`).
    backend : {'numba', 'numpy'}

    Raises
    ------
    ValueError
        Unknown backend, or ``backend='numba'`` with an activation of the registry that has no
        compiled form (one line naming ``--backend numpy``, which runs every activation).
    """
    if backend not in ("numba", "numpy"):
        raise ValueError(f"backend must be 'numba' or 'numpy', got {backend!r}")
    key = str(spec).strip().lower().replace(" ", "")
    if backend == "numba" and not (key in _ACTIVATION_CODES or key in _POLYNOMIALS or key.startswith("hermite:")):
        raise ValueError(f"activation {spec!r} has no compiled form for the numba backend "
                         "(replica.simulations.sgd._ACTIVATION_CODES); use --backend numpy")


def _kernel_parameters(spec, *, drop_hermite=(), unit_variance=False):
    """``(code, poly, corr, scale)`` describing σ for :func:`_sgd_block`.

    ``σ = scale · (base − Σ_l corr_l He_l)`` with ``base`` a built-in activation (``code``
    0–6) or the Hermite polynomial ``Σ_l poly_l He_l`` (``code`` 7).
    """
    from replica.activations import get_activation

    act = get_activation(spec, drop_hermite=drop_hermite, unit_variance=unit_variance)
    check_backend(spec, "numba")
    key = spec.strip().lower().replace(" ", "")
    base = get_activation(key)
    if key in _ACTIVATION_CODES:
        code, poly = _ACTIVATION_CODES[key], np.zeros(1)
    else:
        mu = np.array([base.hermite(ell) for ell in range(61)])
        degree = int(np.max(np.nonzero(mu)[0])) if np.any(mu) else 0
        poly = np.array([mu[ell] / math.factorial(ell) for ell in range(degree + 1)])
        code = _POLYNOMIAL_CODE
    drop = tuple(act.drop_hermite)
    corr = np.zeros(max(drop, default=0) + 1)
    for ell in drop:
        corr[ell] = base.hermite(ell) / math.factorial(ell)
    return code, poly, corr, float(act.scale)


@numba.njit(cache=True)
def _hermite_sum(x, coef):
    """(Σ c_l He_l(x), Σ c_l l He_{l−1}(x))."""
    value = coef[0]
    slope = 0.0
    h_prev, h = 1.0, x
    for ell in range(1, coef.shape[0]):
        value += coef[ell] * h
        slope += coef[ell] * ell * h_prev
        h_prev, h = h, x * h - ell * h_prev
    return value, slope


@numba.njit(cache=True)
def _activation_scalar(x, code, poly, corr, scale):
    if code == 0:
        f, fp = (x, 1.0) if x > 0 else (0.0, 0.0)
    elif code == 1:
        if x > 0:
            f, fp = x, 1.0
        else:
            ex = math.exp(x)
            f, fp = ex - 1.0, ex
    elif code == 2:
        f = math.tanh(x)
        fp = 1.0 - f * f
    elif code == 3:
        f = math.tanh(2.0 * x)
        fp = 2.0 * (1.0 - f * f)
    elif code == 4:
        f = math.erf(x)
        fp = 2.0 / math.sqrt(math.pi) * math.exp(-x * x)
    elif code == 5:
        if x >= 0:
            f = 1.0 / (1.0 + math.exp(-x))
        else:
            ex = math.exp(x)
            f = ex / (1.0 + ex)
        fp = f * (1.0 - f)
    elif code == 6:
        f = max(x, 0.0) + math.log1p(math.exp(-abs(x)))
        if x >= 0:
            fp = 1.0 / (1.0 + math.exp(-x))
        else:
            ex = math.exp(x)
            fp = ex / (1.0 + ex)
    else:
        f, fp = _hermite_sum(x, poly)
    if corr.shape[0] > 1 or corr[0] != 0.0:
        c, cp = _hermite_sum(x, corr)
        f -= c
        fp -= cp
    return scale * f, scale * fp


@numba.njit(cache=True, fastmath=True, error_model="numpy")
def _sgd_block(weights, readout, inputs, labels, step_scale, code, poly, corr, scale):
    """In-place SGD over ``inputs`` (m, B, d); returns Σ e² over the m·B samples."""
    k, d = weights.shape
    m, batch = labels.shape
    inv_sd = 1.0 / math.sqrt(d)
    inv_sk = 1.0 / math.sqrt(k)
    coef = np.empty((batch, k))
    total = 0.0
    for s in range(m):
        for b in range(batch):
            out = 0.0
            for i in range(k):
                h = 0.0
                for j in range(d):
                    h += weights[i, j] * inputs[s, b, j]
                f, fp = _activation_scalar(h * inv_sd, code, poly, corr, scale)
                out += readout[i] * f
                coef[b, i] = fp * readout[i]
            e = labels[s, b] - out * inv_sk
            total += e * e
            for i in range(k):
                coef[b, i] *= e * step_scale
        for i in range(k):
            for b in range(batch):
                c = coef[b, i]
                for j in range(d):
                    weights[i, j] += c * inputs[s, b, j]
    return total


def _sgd_kernel():
    return _sgd_block


def sgd_steps(weights, readout, inputs, labels, lr, activation_spec, *, drop_hermite=(),
              unit_variance=False, backend="numba"):
    """Apply ``m`` SGD steps in place (the update of the module docstring).

    Parameters
    ----------
    weights : ndarray (k, d), float64, C-contiguous
        Updated in place.
    readout : ndarray (k,)
    inputs : ndarray (m, B, d)
    labels : ndarray (m, B)
    lr : float
    activation_spec : str
    drop_hermite, unit_variance : keyword-only
        Activation modifiers.
    backend : {"numba", "numpy"}, keyword-only
        Compiled loop, or the NumPy reference (one :func:`loss_and_gradient` call per step).

    Returns
    -------
    float
        ``Σ e²`` over the ``m B`` samples (residuals before each update).
    """
    k, d = weights.shape
    if backend == "numpy":
        act, der = activation_functions(activation_spec, drop_hermite=drop_hermite,
                                        unit_variance=unit_variance)
        total = 0.0
        for x, y in zip(inputs, labels):
            loss, grad = loss_and_gradient(weights, readout, x, y, act, der)
            weights -= lr * grad
            total += 2.0 * loss
        return total
    if backend != "numba":
        raise ValueError(f"backend must be 'numba' or 'numpy', got {backend!r}")
    code, poly, corr, scale = _kernel_parameters(activation_spec, drop_hermite=drop_hermite,
                                                 unit_variance=unit_variance)
    return float(_sgd_kernel()(weights, np.ascontiguousarray(readout, dtype=np.float64),
                               np.ascontiguousarray(inputs, dtype=np.float64),
                               np.ascontiguousarray(labels, dtype=np.float64),
                               lr / math.sqrt(d * k), code, poly, corr, scale))


# ---------------------------------------------------------------------------------------------
# model, loss, gradient
# ---------------------------------------------------------------------------------------------
def model_output(weights, readout, inputs, activation):
    """``λ(x; W) = vᵀ σ(W x/√d)/√k`` for a batch.

    Parameters
    ----------
    weights : ndarray, shape (k, d)
    readout : ndarray, shape (k,)
    inputs : ndarray, shape (n, d)
    activation : callable
        Elementwise σ.

    Returns
    -------
    ndarray, shape (n,)
    """
    k, d = weights.shape
    return activation(inputs @ weights.T / math.sqrt(d)) @ readout / math.sqrt(k)


def loss_and_gradient(weights, readout, inputs, labels, activation, derivative):
    """Summed squared loss ``Σ_b ½ (y_b − λ(x_b; W))²`` and its gradient in ``W``.

    Parameters
    ----------
    weights : ndarray, shape (k, d)
    readout : ndarray, shape (k,)
    inputs : ndarray, shape (B, d)
    labels : ndarray, shape (B,)
    activation, derivative : callable
        σ and σ'.

    Returns
    -------
    loss : float
    gradient : ndarray, shape (k, d)
        ``−Σ_b e_b (v ⊙ σ'(h_b)) x_bᵀ/√(dk)`` with ``h_b = W x_b/√d``, ``e_b = y_b − λ_b``.
        SGD moves ``W`` by ``−lr · gradient``.
    """
    k, d = weights.shape
    pre = inputs @ weights.T / math.sqrt(d)
    residual = labels - activation(pre) @ readout / math.sqrt(k)
    grad = -((residual[:, None] * derivative(pre)) * readout).T @ inputs / math.sqrt(d * k)
    return 0.5 * float(residual @ residual), grad


# ---------------------------------------------------------------------------------------------
# configuration and results
# ---------------------------------------------------------------------------------------------
@dataclass
class SGDConfig:
    """Parameters of one SGD run (all keyword; units in the module docstring).

    Attributes
    ----------
    activation : str
        Activation name (``relu``, ``elu``, ``tanh``, … or ``hermite:...``).
    gamma : float
        ``k/d > 0``; ``k = max(1, round(γ d))``.
    delta : float
        Label-noise variance ``Δ ≥ 0``.
    prior : str
        Weight prior of teacher and initial student: a registered name of :data:`priors.WEIGHT_PRIORS`
        that draws samples (built in: ``gaussian``, ``rademacher``, ``uniform``).
    readout : str
        Readout law of ``v`` (``ones``, ``rademacher``, ``4point``, ``uniform``, ``gaussian``,
        ``discrete:...``).
    dim : int
        Input dimension ``d``.
    lr : float
        Learning rate ``η`` per sample (see module docstring).
    batch : int
        Fresh samples per step ``B``.
    steps : int or None
        Number of SGD steps; ``None``: ``ceil(time · k d / B)``.
    time : float
        Final time ``t = n/(kd)`` used when ``steps`` is None.
    record : str
        Recording times: ``'log:N'`` (N log-spaced times per decade from the first step, plus
        ``t = 0``) or a number ``Δt`` (every ``Δt`` in units of ``t``).
    seed : int
        Seed of the teacher, the initialization, the data and the test set.
    n_test : int
        Test inputs for ``test_error``.
    init_scale : float
        Initial rows are ``init_scale`` × a draw from the prior.
    bins : int
        Histogram bins on ``[−1, 1]``.
    threshold : float
        ``|matched cosine|`` above which a student neuron counts as specialized.
    drop_hermite : tuple of int
        Hermite degrees removed from σ.
    unit_variance : bool
        Rescale σ to unit variance.
    """

    activation: str = "relu"
    gamma: float = 0.5
    delta: float = 0.1
    prior: str = "gaussian"
    readout: str = "ones"
    dim: int = 64
    lr: float = 0.5
    batch: int = 4
    steps: int | None = None
    time: float = 100.0
    record: str = "log:20"
    seed: int = 0
    n_test: int = 4000
    init_scale: float = 1.0
    bins: int = 100
    threshold: float = 0.7
    drop_hermite: tuple = ()
    unit_variance: bool = False

    def __post_init__(self):
        self.drop_hermite = tuple(int(d) for d in self.drop_hermite)
        checks = [
            (isinstance(self.dim, (int, np.integer)) and self.dim >= 1, f"dim must be an integer >= 1, got {self.dim!r}"),
            (math.isfinite(self.gamma) and self.gamma > 0, f"gamma must be > 0, got {self.gamma!r}"),
            (math.isfinite(self.delta) and self.delta >= 0, f"delta must be >= 0, got {self.delta!r}"),
            (math.isfinite(self.lr) and self.lr >= 0, f"lr must be >= 0, got {self.lr!r}"),
            (int(self.batch) >= 1, f"batch must be >= 1, got {self.batch!r}"),
            (self.steps is None or int(self.steps) >= 1, f"steps must be >= 1, got {self.steps!r}"),
            (math.isfinite(self.time) and self.time > 0, f"time must be > 0, got {self.time!r}"),
            (int(self.n_test) >= 1, f"n_test must be >= 1, got {self.n_test!r}"),
            (math.isfinite(self.init_scale) and self.init_scale > 0,
             f"init_scale must be > 0, got {self.init_scale!r}"),
            (int(self.bins) >= 2, f"bins must be >= 2, got {self.bins!r}"),
            (0 < self.threshold < 1, f"threshold must be in (0, 1), got {self.threshold!r}"),
            (int(self.seed) >= 0, f"seed must be >= 0, got {self.seed!r}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        _parse_record(self.record)

    @property
    def width(self) -> int:
        """``k = max(1, round(γ d))``."""
        return max(1, int(round(self.gamma * self.dim)))

    @property
    def num_steps(self) -> int:
        """Number of SGD steps."""
        if self.steps is not None:
            return int(self.steps)
        return max(1, int(math.ceil(self.time * self.width * self.dim / self.batch)))

    def to_dict(self) -> dict:
        """Canonical parameters (JSON-serializable), with derived ``width`` and ``num_steps``."""
        out = dataclasses.asdict(self)
        out["drop_hermite"] = list(self.drop_hermite)
        out["width"] = self.width
        out["num_steps"] = self.num_steps
        out["time_convention"] = SGD_TIME_CONVENTION
        return out


@dataclass
class SGDResult:
    """Recorded trajectory of one run (shapes: ``T`` times, ``k`` neurons, ``B`` bins).

    Attributes
    ----------
    config : SGDConfig
    time : ndarray (T,)
        ``t = n/(kd)``.
    samples : ndarray (T,)
        ``n``.
    alpha : ndarray (T,)
        ``n/d²``.
    test_error, train_error : ndarray (T,)
        Test error (noiseless, fixed test set) and the mean of ``e²`` (noisy labels) over the
        samples since the previous record (NaN at ``t = 0``).
    linear_overlap, quadratic_overlap : ndarray (T,)
        Cosines of ``Wᵀv`` and of traceless ``Wᵀdiag(v)W`` with the teacher's.
    overlap_histograms : ndarray (T, B)
        Counts of the ``k²`` cosines ``q_ij`` per bin.
    overlap_bin_edges : ndarray (B+1,)
    histogram_times : ndarray (T,)
    matched_overlap : ndarray (T, k)
        Signed cosine of each student neuron with its best-matched teacher neuron.
    matched_teacher : ndarray (T, k)
        Index of that teacher neuron.
    specialized_fraction, match_sign_positive_fraction, student_norm : ndarray (T,)
        Fraction with ``|matched| > threshold``, positive fraction among those, and
        ``mean_i |w_i|²/d``.
    final_overlap_matrix : ndarray (k, k)
        ``q_ij`` at the end.
    readout : ndarray (k,)
    wall_time : float
        Seconds spent.
    completed : bool
        False when a stop rule ended the run before ``num_steps``.
    """

    config: SGDConfig
    time: np.ndarray
    samples: np.ndarray
    alpha: np.ndarray
    test_error: np.ndarray
    train_error: np.ndarray
    linear_overlap: np.ndarray
    quadratic_overlap: np.ndarray
    overlap_histograms: np.ndarray
    overlap_bin_edges: np.ndarray
    histogram_times: np.ndarray
    matched_overlap: np.ndarray
    matched_teacher: np.ndarray
    specialized_fraction: np.ndarray
    match_sign_positive_fraction: np.ndarray
    student_norm: np.ndarray
    final_overlap_matrix: np.ndarray
    readout: np.ndarray
    wall_time: float = 0.0
    completed: bool = True
    extra: dict = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# recording schedule
# ---------------------------------------------------------------------------------------------
def _parse_record(record):
    text = str(record).strip().lower()
    if text.startswith("log:"):
        try:
            per_decade = int(text[4:])
        except ValueError:
            raise ValueError(f"record must be 'log:N' with an integer N >= 1 or a positive number, "
                             f"got {record!r}") from None
        if per_decade < 1:
            raise ValueError(f"record 'log:N' needs N >= 1, got {record!r}")
        return "log", per_decade
    try:
        dt = float(text)
    except ValueError:
        raise ValueError(f"record must be 'log:N' or a positive time interval, got {record!r}") from None
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"record interval must be > 0, got {record!r}")
    return "linear", dt


def record_schedule(record, num_steps, samples_per_time_unit, batch):
    """Step indices (0 = before training) at which measurements are taken.

    Parameters
    ----------
    record : str
        ``'log:N'`` or a time interval ``Δt`` (see :class:`SGDConfig`).
    num_steps : int
    samples_per_time_unit : float
        ``k d``.
    batch : int

    Returns
    -------
    ndarray of int
        Sorted unique steps in ``[0, num_steps]``, always containing 0 and ``num_steps``.
    """
    kind, value = _parse_record(record)
    if kind == "log":
        last = math.log10(num_steps)
        grid = np.unique(np.round(10.0 ** np.arange(0.0, last + 1e-12, 1.0 / value)).astype(np.int64))
    else:
        every = max(1, int(round(value * samples_per_time_unit / batch)))
        grid = np.arange(every, num_steps + 1, every, dtype=np.int64)
    grid = np.unique(np.concatenate([[0], grid[grid <= num_steps], [num_steps]]))
    return grid


# ---------------------------------------------------------------------------------------------
# measurements
# ---------------------------------------------------------------------------------------------
def overlap_statistics(weights, teacher_weights, readout, *, threshold=0.5, bin_edges=None):
    """Overlap summaries of a student ``W`` against the teacher ``W⁰`` (same readout).

    Parameters
    ----------
    weights, teacher_weights : ndarray, shape (k, d)
    readout : ndarray, shape (k,)
    threshold : float, keyword-only
        Specialization threshold on ``|matched cosine|``.
    bin_edges : ndarray, optional, keyword-only
        Histogram edges (default 100 bins on ``[−1, 1]``).

    Returns
    -------
    dict
        ``cosines`` (k, k), ``histogram`` (B,), ``matched_overlap`` (k,), ``matched_teacher``
        (k,), ``specialized_fraction``, ``match_sign_positive_fraction`` (NaN if none is
        specialized), ``linear_overlap``, ``quadratic_overlap``, ``student_norm``.
    """
    if bin_edges is None:
        bin_edges = np.linspace(-1.0, 1.0, 101)
    d = weights.shape[1]
    norms = np.sqrt(np.sum(weights ** 2, axis=1))
    teacher_norms = np.sqrt(np.sum(teacher_weights ** 2, axis=1))
    raw = weights @ teacher_weights.T                                  # w_i·w⁰_j
    cosines = raw / np.maximum(norms[:, None] * teacher_norms[None, :], 1e-300)
    histogram, _ = np.histogram(np.clip(cosines, -1.0, 1.0), bins=bin_edges)
    best = np.argmax(np.abs(cosines), axis=1)
    matched = cosines[np.arange(cosines.shape[0]), best]
    specialized = np.abs(matched) > threshold
    positive = float(np.mean(matched[specialized] > 0)) if np.any(specialized) else float("nan")

    beta = weights.T @ readout
    beta0 = teacher_weights.T @ readout
    linear = float(beta @ beta0 / max(np.linalg.norm(beta) * np.linalg.norm(beta0), 1e-300))
    # traceless Frobenius products of S = Wᵀ diag(v) W through the k×k Gram matrices
    gram = weights @ weights.T
    gram0 = teacher_weights @ teacher_weights.T
    trace = np.float64(readout @ norms ** 2)
    trace0 = np.float64(readout @ teacher_norms ** 2)
    cross = float(readout @ (raw ** 2) @ readout) - trace * trace0 / d
    self_ = float(readout @ (gram ** 2) @ readout) - trace ** 2 / d
    self0 = float(readout @ (gram0 ** 2) @ readout) - trace0 ** 2 / d
    quadratic = cross / max(math.sqrt(max(self_, 0.0) * max(self0, 0.0)), 1e-300)
    return {
        "cosines": cosines,
        "histogram": histogram,
        "matched_overlap": matched,
        "matched_teacher": best,
        "specialized_fraction": float(np.mean(specialized)),
        "match_sign_positive_fraction": positive,
        "linear_overlap": linear,
        "quadratic_overlap": quadratic,
        "student_norm": float(np.mean(norms ** 2) / d),
    }


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------
def run_sgd(config: SGDConfig, *, progress=False, stop=None, teacher=None,
            backend="numba") -> SGDResult:
    """Run online SGD and record the measurements of the module docstring.

    Parameters
    ----------
    config : SGDConfig
    progress : bool, keyword-only
        Show a tqdm progress bar (in units of samples).
    stop : callable, optional, keyword-only
        ``stop(record) -> bool`` called after each measurement with a dict of the latest
        values (``time``, ``test_error``, ``specialized_fraction``, …); returning True ends
        the run early (``completed = False``).
    teacher : tuple (W⁰, v), optional, keyword-only
        Use this teacher instead of drawing one (shapes ``(k, d)``, ``(k,)``).
    backend : {"numba", "numpy"}, keyword-only
        Compiled inner loop (default) or the plain NumPy reference; both apply the same
        update to the same data (equal up to rounding).

    Returns
    -------
    SGDResult

    Raises
    ------
    ValueError
        Bad activation, prior or readout law; teacher of the wrong shape.
    FloatingPointError
        The weights diverged (non-finite, or ``mean |w_i|²/d`` above ``10⁸ init_scale²``;
        learning rate too large).

    Notes
    -----
    Random streams (all from ``numpy.random.default_rng(seed)`` spawned children): teacher,
    student initialization, test set, training data.  Training inputs are drawn in blocks
    and the teacher labels of a block are computed with one matrix product; the student
    update is sequential.
    """
    import time as _time

    start = _time.perf_counter()
    activation, derivative = activation_functions(
        config.activation, drop_hermite=config.drop_hermite, unit_variance=config.unit_variance)
    d, k, batch, lr = config.dim, config.width, int(config.batch), float(config.lr)
    streams = np.random.default_rng(config.seed).spawn(4)
    if teacher is None:
        teacher_weights = sample_weights(config.prior, (k, d), streams[0])
        readout = sample_readout(config.readout, k, streams[0])
    else:
        teacher_weights, readout = (np.asarray(a, dtype=np.float64) for a in teacher)
        if teacher_weights.shape != (k, d) or readout.shape != (k,):
            raise ValueError(f"teacher must have shapes ({k}, {d}) and ({k},)")
    weights = config.init_scale * sample_weights(config.prior, (k, d), streams[1])
    test_inputs = streams[2].standard_normal((int(config.n_test), d))
    test_labels = model_output(teacher_weights, readout, test_inputs, activation)
    data_rng = streams[3]

    num_steps = config.num_steps
    kd = float(k * d)
    schedule = record_schedule(config.record, num_steps, kd, batch)
    bin_edges = np.linspace(-1.0, 1.0, int(config.bins) + 1)
    records = []
    sqrt_d, sqrt_k = math.sqrt(d), math.sqrt(k)
    step_scale = lr / math.sqrt(d * k)
    noise_std = math.sqrt(config.delta)
    teacher_scaled = teacher_weights.T / sqrt_d                   # (d, k)
    block_steps = max(1, min(4096, (1 << 20) // max(1, batch * d)))
    if backend == "numba":
        kernel = _sgd_kernel()
        kernel_args = _kernel_parameters(config.activation, drop_hermite=config.drop_hermite,
                                         unit_variance=config.unit_variance)
    elif backend != "numpy":
        raise ValueError(f"backend must be 'numba' or 'numpy', got {backend!r}")
    weights = np.ascontiguousarray(weights)
    readout = np.ascontiguousarray(readout, dtype=np.float64)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=num_steps * batch, unit="sample", unit_scale=True, desc="SGD", leave=False,
                   mininterval=1.0)

    def measure(step, train_error):
        stats = overlap_statistics(weights, teacher_weights, readout, threshold=config.threshold,
                                   bin_edges=bin_edges)
        test = float(np.mean((model_output(weights, readout, test_inputs, activation) - test_labels) ** 2))
        n = step * batch
        rec = {"step": step, "samples": n, "time": n / kd, "alpha": n / d ** 2, "test_error": test,
               "train_error": train_error}
        rec.update(stats)
        records.append(rec)
        return rec

    measure(0, float("nan"))
    completed = True
    step = 0
    for target in schedule[1:]:
        sq_sum, count = 0.0, 0
        while step < target:
            m = int(min(block_steps, target - step))
            inputs = data_rng.standard_normal((m * batch, d))
            labels = activation(inputs @ teacher_scaled) @ readout / sqrt_k
            if noise_std:
                labels = labels + noise_std * data_rng.standard_normal(m * batch)
            inputs = inputs.reshape(m, batch, d)
            labels = labels.reshape(m, batch)
            if backend == "numba":
                sq_sum += kernel(weights, readout, inputs, labels, step_scale, *kernel_args)
            else:
                for s in range(m):
                    x = inputs[s]
                    pre = x @ weights.T / sqrt_d                    # (B, k)
                    residual = labels[s] - activation(pre) @ readout / sqrt_k
                    weights += step_scale * (((residual[:, None] * derivative(pre)) * readout).T @ x)
                    sq_sum += float(residual @ residual)
            count += m * batch
            step += m
            if bar is not None:
                bar.update(m * batch)
        mean_square = float(np.mean(weights * weights)) if np.all(np.isfinite(weights)) else math.inf
        if not mean_square < 1e8 * config.init_scale ** 2:        # |w_i|²/d grew by 10⁸: diverged
            if bar is not None:
                bar.close()
            raise FloatingPointError(f"SGD diverged (|w|²/d = {mean_square:.3g}) at t = {step * batch / kd:.4g}; "
                                     f"reduce the learning rate (lr = {lr})")
        rec = measure(step, sq_sum / max(count, 1))
        logger.debug("t=%.4g test_error=%.4g specialized=%.3f", rec["time"], rec["test_error"],
                     rec["specialized_fraction"])
        if stop is not None and stop(rec):
            completed = step >= num_steps
            break
    if bar is not None:
        bar.total = bar.n  # a run stopped early ends at the samples it saw, not at the planned number
        bar.refresh()      # mininterval = 1 s: the last update may not have been drawn
        bar.close()

    def col(name, dtype=float):
        return np.array([r[name] for r in records], dtype=dtype)

    times = col("time")
    return SGDResult(
        config=config,
        time=times,
        samples=col("samples", np.int64),
        alpha=col("alpha"),
        test_error=col("test_error"),
        train_error=col("train_error"),
        linear_overlap=col("linear_overlap"),
        quadratic_overlap=col("quadratic_overlap"),
        overlap_histograms=np.stack([r["histogram"] for r in records]).astype(np.int64),
        overlap_bin_edges=bin_edges,
        histogram_times=times.copy(),
        matched_overlap=np.stack([r["matched_overlap"] for r in records]),
        matched_teacher=np.stack([r["matched_teacher"] for r in records]).astype(np.int64),
        specialized_fraction=col("specialized_fraction"),
        match_sign_positive_fraction=col("match_sign_positive_fraction"),
        student_norm=col("student_norm"),
        final_overlap_matrix=records[-1]["cosines"],
        readout=readout,
        wall_time=_time.perf_counter() - start,
        completed=completed,
    )


# ---------------------------------------------------------------------------------------------
# HDF5
# ---------------------------------------------------------------------------------------------
