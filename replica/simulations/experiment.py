"""Finite-size experiments: teachers × α × starts, measured and averaged.

:class:`ExperimentConfig` holds every option (the same model options as ``replica-sweep``
plus the simulation ones); :func:`run_experiment` runs one sampler for all starts, α values
and teachers and returns one :class:`InitResult` per start, ready for
:func:`replica.workflow.experiment_io.write_experiment`.

Seeding: teacher ``t`` (and its test set) depends only on ``(seed, t)``, so the same
teachers are used at every α and for every start; the training set depends on
``(seed, t, α)`` and the chain on ``(seed, t, α, start)``.  Runs are reproducible and
informed/uninformed runs see the same data.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .measurements import NEURON_BINS, OVERLAP_BIN_EDGES, classification_measures, measure_chain, mean_and_sem
from .teacher_student import Architecture, make_dataset, sample_teacher, sample_weights, weight_prior

__all__ = ["ExperimentConfig", "InitResult", "run_experiment", "INITS", "DEFAULT_STEPS", "partial_fraction",
           "start_weights"]

logger = logging.getLogger(__name__)

INITS = ("informed", "uninformed")
#: the partially informed start ``partial:F``: the fraction ``F`` of the hidden units with the strongest teacher
#: readouts starts at the teacher, the others from the prior (one hidden layer; the theory's equilibrium with a
#: many-feature target has the strong features learned and the weak ones not: ``learned_mass`` of a sweep)
PARTIAL_PREFIX = "partial:"


def partial_fraction(init: str) -> float | None:
    """``F`` of a start ``partial:F`` (``0 < F < 1``), None for another start name.

    Raises
    ------
    ValueError
        ``partial:`` followed by something that is not a number in (0, 1).
    """
    if not str(init).startswith(PARTIAL_PREFIX):
        return None
    text = str(init)[len(PARTIAL_PREFIX):]
    try:
        f = float(text)
    except ValueError:
        raise ValueError(f"start {init!r}: the fraction after 'partial:' must be a number in (0, 1), got {text!r}") \
            from None
    if not 0.0 < f < 1.0:
        raise ValueError(f"start {init!r}: the fraction after 'partial:' must be in (0, 1), got {text!r}")
    return f


def start_weights(config, teacher, t, alpha, init) -> tuple:
    """The chain's start: the teacher's weights (``informed``), a draw from the prior (``uninformed``), or, for
    ``partial:F``, the teacher's first-layer rows of the ``round(F k)`` hidden units of largest ``|v|`` (ties by
    index) and prior draws for the others (one hidden layer). The draws use the seed of the uninformed start."""
    if init == "informed":
        return teacher.weights
    start_rng = np.random.default_rng([config.seed, t, 3, _alpha_key(alpha)])
    start = tuple(sample_weights(config.prior, w.shape, start_rng) for w in teacher.weights)
    f = partial_fraction(init)
    if f is None:
        return start
    w = np.array(start[0], dtype=float, copy=True)
    teacher_w = np.asarray(teacher.weights[0], dtype=float)
    strength = np.abs(np.asarray(teacher.readout, dtype=float))
    order = np.lexsort((np.arange(strength.size), -strength))
    informed = order[:int(round(f * strength.size))]
    w[informed] = teacher_w[informed]
    return (w,) + tuple(start[1:])

#: Default number of steps per sampler (transitions, sweeps, updates): minutes on 2 cores at d ≈ 40.
DEFAULT_STEPS = {"hmc": 2000, "nuts": 1000, "metropolis": 1000, "adam": 4000, "sgd": 1, "gamp-rie": 500}


@dataclass(frozen=True)
class ExperimentConfig:
    """Every option of an experiment (stored as JSON in the output).

    Attributes
    ----------
    layers : int
        Number of hidden layers L.
    gamma : tuple of float
        Width ratios ``γ_ℓ = k_ℓ/d``, one per layer.
    activation : str
        Activation specification (``replica.activations``).
    drop_hermite : tuple of int
        Hermite components removed from the activation.
    unit_variance : bool
        Rescale the activation to ``E σ² = 1``.
    prior : {'gaussian', 'rademacher', 'uniform'}
        Weight prior of every layer.
    readout : str
        Readout law.
    delta : float
        Label-noise variance Δ (``gaussian`` and ``probit`` channels; 0 for ``sign`` and ``logistic``).
    channel : {'gaussian', 'probit', 'sign', 'logistic'}
        Output channel of the labels (:func:`priors.output_channels.get_output_channel`): the labels are
        drawn with its sampler from the teacher's centred output and HMC/NUTS use its log-likelihood
        (:mod:`replica.simulations.channels`). Non-Gaussian channels are sampled with ``hmc``/``nuts`` only;
        ``sign`` is refused there (step likelihood).
    temperature : float
        ``logistic`` only: T > 0.
    channel_threshold : float
        ``probit``/``sign`` only: threshold θ on the centred output.
    alpha : tuple of float
        Sample ratios ``α = n/d²``.
    dim : int
        Input dimension d.
    teachers : int
        Number of independent teachers averaged over.
    sampler : {'hmc', 'nuts', 'metropolis', 'adam', 'sgd', 'gamp-rie'}
    init : tuple of {'informed', 'uninformed', 'partial:F'}
        Starts: at the teacher or at a prior draw (GAMP-RIE: ``uninformed`` only, i.e. the
        prior mean).
    steps : int
        Transitions (HMC/NUTS), sweeps (Metropolis), updates (Adam), passes over the samples
        with one sample per update (SGD; 1 = online SGD) or at most this many iterations
        (GAMP-RIE).
    warmup_fraction : float
        Fraction of steps for warm-up/burn-in (samplers).
    num_kept : int
        Samples kept after warm-up (and trace points of Adam).
    n_test : int
        Fresh noiseless test inputs (≥ 10⁴ for the published protocol).
    seed : int
    num_integration_steps, target_acceptance, initial_step_size, max_num_doublings
        HMC/NUTS settings.
    learning_rate, batch_fraction
        Adam settings (SGD: ``learning_rate`` only).
    x64 : bool
        Double precision in JAX.
    """

    layers: int = 1
    gamma: tuple = (0.5,)
    activation: str = "relu"
    drop_hermite: tuple = ()
    unit_variance: bool = False
    prior: str = "gaussian"
    readout: str = "ones"
    delta: float = 0.1
    alpha: tuple = (1.0,)
    channel: str = "gaussian"
    temperature: float = 1.0
    channel_threshold: float = 0.0
    dim: int = 40
    teachers: int = 2
    sampler: str = "hmc"
    init: tuple = INITS
    steps: int = DEFAULT_STEPS["hmc"]
    warmup_fraction: float = 0.5
    num_kept: int = 50
    n_test: int = 10_000
    seed: int = 0
    num_integration_steps: int = 10
    target_acceptance: float = 0.8
    initial_step_size: float = 0.05
    max_num_doublings: int = 8
    learning_rate: float = 0.01
    batch_fraction: float = 0.25
    x64: bool = False

    def __post_init__(self):
        object.__setattr__(self, "gamma", tuple(float(g) for g in self.gamma))
        object.__setattr__(self, "alpha", tuple(float(a) for a in self.alpha))
        object.__setattr__(self, "init", tuple(self.init))
        object.__setattr__(self, "drop_hermite", tuple(int(x) for x in self.drop_hermite))
        self.validate()

    def validate(self) -> None:
        """Check consistency; raise ``ValueError`` with a one-line reason."""
        from .samplers import SAMPLERS

        if self.layers < 1:
            raise ValueError(f"layers must be >= 1, got {self.layers}")
        if len(self.gamma) != self.layers:
            raise ValueError(f"gamma needs one value per layer ({self.layers}), got {len(self.gamma)}")
        if any(not (g > 0 and math.isfinite(g)) for g in self.gamma):
            raise ValueError(f"gamma values must be > 0, got {self.gamma}")
        if not self.alpha or any(not (a > 0 and math.isfinite(a)) for a in self.alpha):
            raise ValueError(f"alpha values must be > 0, got {self.alpha}")
        if self.dim < 2:
            raise ValueError(f"dim must be >= 2, got {self.dim}")
        if self.teachers < 1:
            raise ValueError(f"teachers must be >= 1, got {self.teachers}")
        weight_prior(self.prior)  # a registered prior that draws samples (one-line ValueError)
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, got {self.sampler!r}")
        if self.sampler in ("hmc", "nuts") and self.prior != "gaussian":
            raise ValueError(f"{self.sampler} samples Gaussian priors only; use --sampler metropolis "
                             f"for rademacher (got prior {self.prior!r})")
        if self.sampler == "metropolis" and self.prior != "rademacher":
            raise ValueError(f"metropolis samples the rademacher prior only (got {self.prior!r})")
        if not self.init or any(i not in INITS and partial_fraction(i) is None for i in self.init) \
                or len(set(self.init)) != len(self.init):
            raise ValueError(f"init must be distinct values among {', '.join(INITS)} or partial:F, got {self.init}")
        if any(partial_fraction(i) is not None for i in self.init) and self.layers != 1:
            raise ValueError(f"the partially informed start partial:F is for one hidden layer, got layers={self.layers}")
        if not (self.delta >= 0 and math.isfinite(self.delta)):
            raise ValueError(f"delta must be >= 0, got {self.delta}")
        if self.sampler == "gamp-rie":
            from .gamp_rie import check_experiment

            check_experiment(self)
        if self.channel != "gaussian":
            self._validate_channel()
        elif self.sampler not in ("adam", "sgd", "gamp-rie") and self.delta == 0:
            raise ValueError("posterior sampling needs delta > 0 (the noiseless posterior is singular)")
        if self.steps < (1 if self.sampler == "sgd" else 2):
            raise ValueError(f"steps must be >= {1 if self.sampler == 'sgd' else 2}, got {self.steps}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction must be in [0, 1), got {self.warmup_fraction}")
        if self.num_kept < 1 or self.n_test < 1:
            raise ValueError("num_kept and n_test must be >= 1")
        if self.num_integration_steps < 1 or self.max_num_doublings < 1:
            raise ValueError("num_integration_steps and max_num_doublings must be >= 1")
        if not 0 < self.target_acceptance < 1:
            raise ValueError(f"target_acceptance must be in (0, 1), got {self.target_acceptance!r}")
        if not self.initial_step_size > 0:
            raise ValueError(f"initial_step_size must be > 0, got {self.initial_step_size!r}")
        if not self.learning_rate > 0 or not 0 < self.batch_fraction <= 1:
            raise ValueError("learning_rate must be > 0 and batch_fraction in (0, 1]")

    def _validate_channel(self) -> None:
        from priors.output_channels import OUTPUT_CHANNELS

        from .channels import SIGN_REFUSAL, output_mean_coefficient

        if self.channel not in OUTPUT_CHANNELS:
            raise ValueError(f"channel must be one of {', '.join(OUTPUT_CHANNELS)}, got {self.channel!r}")
        if self.sampler not in ("hmc", "nuts"):
            raise ValueError(f"channel {self.channel}: only --sampler hmc or nuts sample a non-Gaussian channel "
                             f"(got {self.sampler}, which uses Gaussian energies or the squared loss)")
        if self.channel == "sign":
            raise ValueError(f"channel sign: {SIGN_REFUSAL}")
        if self.channel == "probit" and not self.delta > 0:
            raise ValueError("channel probit: posterior sampling needs delta > 0 (delta = 0 is the sign channel)")
        self.output_channel()  # invalid parameters (T <= 0, ...) raise here
        try:
            output_mean_coefficient(self.activation, drop_hermite=self.drop_hermite,
                                    unit_variance=self.unit_variance, layers=self.layers)
        except ValueError as exc:
            raise ValueError(f"channel {self.channel}: {exc}") from None

    def output_channel(self):
        """The channel of the labels, from the registry :func:`priors.output_channels.get_output_channel`.

        Raises
        ------
        ValueError
            Invalid channel parameters.
        """
        from priors.output_channels import channel_keywords, get_output_channel

        return get_output_channel(self.channel, **channel_keywords(
            self.channel, delta=self.delta, temperature=self.temperature, threshold=self.channel_threshold))

    @property
    def architecture(self) -> Architecture:
        """Sizes ``d, k_1 … k_L``."""
        return Architecture.from_ratios(self.dim, self.gamma)

    def to_json(self) -> str:
        """Canonical JSON of every option (``channel``, ``temperature`` and ``channel_threshold`` only for a
        non-Gaussian channel, so that Gaussian runs keep the parameters of files written before channels
        existed and can resume their checkpoints)."""
        params = dataclasses.asdict(self)
        if self.channel == "gaussian":
            for name in ("channel", "temperature", "channel_threshold"):
                params.pop(name)
        return json.dumps(params, sort_keys=True)


@dataclass
class InitResult:
    """Results of one start (``informed`` or ``uninformed``) on the α grid.

    Arrays have the α axis first; ``per_teacher`` arrays have shape ``(n_alpha, teachers)``.
    """

    init: str
    alpha: np.ndarray
    num_samples: np.ndarray
    datasets: dict = field(default_factory=dict)


_SCALARS = ("error", "posterior_mean_error", "r2", "replica_error", "replica_r2",
            "acceptance_rate", "step_size", "divergences", "mean_integration_steps", "wall_time",
            "converged", "iterations")
#: per-chain classification measures of ±1 channels (:func:`replica.simulations.measurements.classification_measures`)
_CLASSIFICATION = ("classification_error", "gibbs_classification_error", "sign_disagreement",
                   "teacher_disagreement", "replica_disagreement")


_RUNNERS: dict = {}


def run_experiment(config: ExperimentConfig, *, progress: bool = False, chains: dict | None = None,
                   on_chain=None) -> dict:
    """Run the sampler of ``config`` for every start, α and teacher.

    Parameters
    ----------
    config : ExperimentConfig
    progress : bool
        Show a tqdm progress bar.
    chains : dict, optional, keyword-only
        Finished chains to reuse instead of running them again: ``{(i_alpha, teacher, init):
        record}`` as passed to ``on_chain`` (e.g. read back from a checkpoint by
        :func:`replica.workflow.experiment_io.read_experiment_checkpoint`).
    on_chain : callable, optional, keyword-only
        ``on_chain(key, record)`` after every chain run here, with ``key = (i_alpha, teacher,
        init)`` and ``record`` a dict of arrays (the measurements of the chain); used to write
        each finished chain to a checkpoint.

    Returns
    -------
    dict
        ``{init: InitResult}``. Reused chains enter exactly as if they had been run here, so an
        interrupted and resumed experiment gives the result of an uninterrupted one.

    Notes
    -----
    ``mmse_mean`` is the teacher average of the per-teacher error (half Gibbs error on
    ``n_test`` fresh noiseless inputs averaged over the kept samples; Adam: test error of
    the final iterate), ``mmse_sem`` its standard error over teachers.

    With a non-Gaussian channel (``config.channel``) the training labels are drawn with the channel's
    sampler from the teacher's centred output (``λ − μ₀ Σv/√k_L``, :mod:`replica.simulations.channels`), HMC/NUTS
    sample the posterior with the channel's log-likelihood, and for ±1 channels each chain is also
    measured against ``n_test`` fresh labels drawn from the channel at the test inputs
    (:func:`replica.simulations.measurements.classification_measures`; seeds ``(seed, t, 5)``).
    """
    import jax

    from .activations import get_jax_activation
    from .channels import output_mean_coefficient
    from .samplers import AdamSettings, HMCSettings, make_runner

    if config.x64:
        jax.config.update("jax_enable_x64", True)
    chains = dict(chains or {})
    architecture = config.architecture
    activation = get_jax_activation(config.activation, drop_hermite=config.drop_hermite,
                                    unit_variance=config.unit_variance)
    hmc = HMCSettings(config.num_integration_steps, config.target_acceptance,
                      config.initial_step_size, config.max_num_doublings)
    adam = AdamSettings(config.learning_rate, config.batch_fraction)
    channel = None if config.channel == "gaussian" else config.output_channel()
    mu0 = 0.0 if channel is None else output_mean_coefficient(
        config.activation, drop_hermite=config.drop_hermite, unit_variance=config.unit_variance,
        layers=config.layers)
    cache_key = (config.sampler, config.activation, config.drop_hermite, config.unit_variance,
                 config.delta, config.steps, config.warmup_fraction, config.num_kept, hmc, adam,
                 bool(jax.config.jax_enable_x64), config.readout, channel, mu0)
    if cache_key not in _RUNNERS:  # compiled code is reused by later runs in the same process
        _RUNNERS[cache_key] = make_runner(
            config.sampler, activation=activation, delta=config.delta, steps=config.steps,
            warmup_fraction=config.warmup_fraction, num_kept=config.num_kept, hmc=hmc, adam=adam,
            readout_law=config.readout, channel=channel, mean_coefficient=mu0)
    runner = _RUNNERS[cache_key]

    n_alpha, n_teachers, layers = len(config.alpha), config.teachers, architecture.layers
    bins = len(OVERLAP_BIN_EDGES) - 1
    n_groups = _map_groups(config, architecture)
    store = {init: {"scalars": {name: np.full((n_alpha, n_teachers), np.nan) for name in _SCALARS + _CLASSIFICATION},
                    "neuron_map_layer_1": np.full((n_alpha, n_teachers, NEURON_BINS), np.nan),
                    "neuron_map_layer_2": np.full((n_alpha, n_teachers, n_groups, NEURON_BINS), np.nan),
                    "overlap": np.full((n_alpha, n_teachers, layers), np.nan),
                    "unbiased_overlap": np.full((n_alpha, n_teachers, layers), np.nan),
                    "replica_overlap": np.full((n_alpha, n_teachers, layers), np.nan),
                    "histogram": np.zeros((n_alpha, layers, bins)),
                    "matrix_histogram": np.zeros((n_alpha, layers, bins)),
                    "trace": [[None] * n_teachers for _ in range(n_alpha)],
                    "trace_steps": None}
             for init in config.init}

    teachers = []
    for t in range(n_teachers):
        rng = np.random.default_rng([config.seed, t, 0])
        teacher = sample_teacher(architecture, prior=config.prior, readout=config.readout, rng=rng)
        test = make_dataset(teacher, config.n_test, delta=config.delta, activation=activation,
                            rng=np.random.default_rng([config.seed, t, 1]), noiseless=True)
        centre = mu0 * float(np.sum(teacher.readout)) / math.sqrt(teacher.readout.shape[0])
        classes = None
        if channel is not None and channel.binary:  # fresh ±1 labels at the test inputs
            classes = (np.asarray(channel.sample(test.labels - centre, np.random.default_rng([config.seed, t, 5]))),
                       centre, float(getattr(channel, "threshold", 0.0)))
        teachers.append((teacher, test, centre, classes))

    tasks = [(a, t, i) for a in range(n_alpha) for t in range(n_teachers) for i in range(len(config.init))]
    bar = _progress_bar(len(tasks), progress, config.sampler)
    try:
        for a, alpha in enumerate(config.alpha):
            n = architecture.num_samples(alpha)
            for t, (teacher, test, centre, classes) in enumerate(teachers):
                train = None
                for i, init in enumerate(config.init):
                    record = chains.get((a, t, init))
                    if record is None:
                        if train is None:
                            train = make_dataset(teacher, n, delta=config.delta, activation=activation,
                                                 rng=np.random.default_rng([config.seed, t, 2, _alpha_key(alpha)]),
                                                 channel=channel, centre=centre)
                        record = _run_chain(config, runner, teacher, test, train, alpha, t, i, init, classes)
                        if on_chain is not None:
                            on_chain((a, t, init), record)
                    _add_chain(store[init], a, t, record)
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()

    return {init: _summarize(init, config, architecture, store[init]) for init in config.init}


def _run_chain(config, runner, teacher, test, train, alpha, t, i, init, classes=None) -> dict:
    """Run and measure one chain; returns its record (see :func:`run_experiment`). ``classes``: None, or
    ``(test labels ±1, centre, threshold)`` of a binary channel (classification measures)."""
    import jax

    from .samplers import POINT_ESTIMATES

    start = start_weights(config, teacher, t, alpha, init)
    key = jax.random.key(int(np.random.default_rng(
        [config.seed, t, 4, _alpha_key(alpha), i]).integers(2**31)))
    begin = time.perf_counter()
    with np.errstate(all="ignore"):  # a diverging chain is reported below, not by numpy warnings
        chain = runner(key, start, teacher.readout, train.inputs, train.labels,
                       test.inputs, test.labels)
        elapsed = time.perf_counter() - begin
        m = measure_chain(chain.samples, chain.test_outputs, teacher.weights, test.labels,
                          teacher.readout, point_estimate=config.sampler in POINT_ESTIMATES,
                          matrix_estimate=chain.matrix_estimate, neuron_groups=_readout_groups(config))
    if not np.isfinite(m.error):
        logger.warning("alpha=%g teacher=%d %s: diverged after %d steps (error %s); left out of the teacher "
                       "averages", alpha, t, init, int(chain.steps), m.error)
    logger.info("alpha=%g teacher=%d %s: error %.5f (replica %.5f) overlap %s "
                "acceptance %.3f step %.4g [%.1f s]", alpha, t, init, m.error,
                m.replica_error, np.array2string(m.overlap, precision=3),
                chain.acceptance_rate, chain.step_size, elapsed)
    if config.sampler in ("hmc", "nuts") and (chain.acceptance_rate < 0.5 or chain.divergences):
        logger.warning("alpha=%g teacher=%d %s: acceptance %.2f, %d divergent transitions; "
                       "consider more warm-up steps", alpha, t, init, chain.acceptance_rate,
                       chain.divergences)
    if config.sampler == "metropolis" and chain.acceptance_rate < 0.01:
        logger.warning("alpha=%g teacher=%d %s: Metropolis acceptance %.4f; the chain is "
                       "nearly frozen (single flips at high SNR)", alpha, t, init,
                       chain.acceptance_rate)
    values = dict(error=m.error, posterior_mean_error=m.posterior_mean_error, r2=m.r2,
                  replica_error=m.replica_error, replica_r2=m.replica_r2,
                  acceptance_rate=chain.acceptance_rate, step_size=chain.step_size,
                  divergences=chain.divergences,
                  mean_integration_steps=chain.mean_integration_steps, wall_time=elapsed,
                  converged=chain.converged, iterations=chain.steps)
    if classes is not None:
        labels, centre, threshold = classes
        values.update(classification_measures(chain.test_outputs, test.labels, labels, centre=centre,
                                              threshold=threshold))
        logger.info("alpha=%g teacher=%d %s: classification error %.4f (Gibbs %.4f); sign disagreement "
                    "teacher-sample %.4f, sample-sample %.4f", alpha, t, init, values["classification_error"],
                    values["gibbs_classification_error"], values["teacher_disagreement"],
                    values["replica_disagreement"])
    record = {name: np.asarray(value, dtype=float) for name, value in values.items()}
    record.update(neuron_map_layer_1=np.asarray(m.neuron_map_layer_1, dtype=float),
                  neuron_map_layer_2=np.asarray(m.neuron_map_layer_2, dtype=float),
                  unbiased_overlap=np.asarray(m.unbiased_overlap, dtype=float),
                  overlap=np.asarray(m.overlap), replica_overlap=np.asarray(m.replica_overlap),
                  histogram=np.asarray(m.histogram), matrix_histogram=np.asarray(m.matrix_histogram),
                  trace=np.asarray(chain.trace_errors), trace_steps=np.asarray(chain.trace_steps))
    return record


def _add_chain(entry, a, t, record) -> None:
    """Put the record of chain (α index ``a``, teacher ``t``) into the arrays of its start."""
    for name in _SCALARS + _CLASSIFICATION:  # classification measures: ±1 channels only
        entry["scalars"][name][a, t] = record.get(name, np.nan)
    entry["overlap"][a, t] = record["overlap"]
    entry["replica_overlap"][a, t] = record["replica_overlap"]
    for name in ("neuron_map_layer_1", "neuron_map_layer_2", "unbiased_overlap"):  # absent from older checkpoints
        if name in record and np.shape(record[name]) == entry[name].shape[2:]:
            entry[name][a, t] = record[name]
    entry["histogram"][a] += record["histogram"]
    entry["matrix_histogram"][a] += record["matrix_histogram"]
    entry["trace"][a][t] = record["trace"]
    entry.setdefault("trace_steps_by_alpha", {})[a] = np.asarray(record["trace_steps"])
    entry["trace_steps"] = entry["trace_steps_by_alpha"][max(entry["trace_steps_by_alpha"])]


def _alpha_key(alpha: float) -> int:
    return int(round(alpha * 1_000_000))


def _progress_bar(total, enabled, sampler):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"{sampler} chains", unit="chain")


def _density(counts):
    """Normalize histogram counts to a density on ``OVERLAP_BIN_EDGES`` (per α and layer)."""
    widths = np.diff(OVERLAP_BIN_EDGES)
    total = counts.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, counts / (total * widths), 0.0)


def excluded_chains(scalars) -> np.ndarray:
    """Chains left out of the teacher averages: those whose error is not finite (diverged).

    A GAMP-RIE run that stops at ``--steps`` without passing its convergence test
    (``converged == 0``) but with a finite error is kept (near perfect recovery the scaled
    residual stalls above 1 while the error is already small) and reported by a warning.

    Parameters
    ----------
    scalars : dict
        Per-chain array ``error``, shape ``(n_alpha, teachers)``.

    Returns
    -------
    ndarray of bool, shape (n_alpha, teachers)
    """
    return ~np.isfinite(np.asarray(scalars["error"], float))


def _readout_groups(config):
    """Readout-strength groups of the per-pair maps (``groups`` of :func:`neuron_quantile_maps`).

    A discrete readout law gives its distinct strengths ``|v|``; a continuous one (put on a grid
    by the theory) gives ``NEURON_BINS`` quantile bins of ``|v|``.
    """
    from priors import get_readout_law

    law = get_readout_law(config.readout)
    return np.unique(np.abs(np.asarray(law.values, float))) if law.exact else NEURON_BINS


def _map_groups(config, architecture) -> int:
    """Number of rows of the per-pair maps (two hidden layers; 0 otherwise)."""
    if architecture.layers != 2:
        return 0
    groups = _readout_groups(config)
    return int(groups) if np.ndim(groups) == 0 else int(groups.size)


def _summarize(init, config, architecture, entry) -> InitResult:
    s = entry["scalars"]
    excluded = excluded_chains(s)
    keep = ~excluded
    if np.any(excluded):
        where = ", ".join(f"alpha={config.alpha[a]:g} teacher={t}" for a, t in zip(*np.nonzero(excluded)))
        logger.warning("%s %s: %d of %d chains diverged (%s); left out of the teacher "
                       "averages (*_mean, *_sem; datasets excluded, chains_used)", config.sampler, init,
                       int(excluded.sum()), excluded.size, where)
    mmse_mean, mmse_sem = mean_and_sem(s["error"], axis=1, keep=keep)
    pm_mean, pm_sem = mean_and_sem(s["posterior_mean_error"], axis=1, keep=keep)
    overlap_mean, overlap_sem = mean_and_sem(entry["overlap"], axis=1, keep=keep)
    r2_mean, r2_sem = mean_and_sem(s["r2"], axis=1, keep=keep)
    rep_err_mean, rep_err_sem = mean_and_sem(s["replica_error"], axis=1, keep=keep)
    rep_ov_mean, rep_ov_sem = mean_and_sem(entry["replica_overlap"], axis=1, keep=keep)
    rep_r2_mean, rep_r2_sem = mean_and_sem(s["replica_r2"], axis=1, keep=keep)
    traces = np.array([[np.asarray(tr) for tr in row] for row in entry["trace"]])
    n1_mean, n1_sem = mean_and_sem(entry["neuron_map_layer_1"], axis=1, keep=keep)
    ub_mean, ub_sem = mean_and_sem(entry["unbiased_overlap"], axis=1, keep=keep)
    n2_mean, n2_sem = mean_and_sem(entry["neuron_map_layer_2"], axis=1, keep=keep)
    datasets = {
        "neuron_overlap_layer_1_mean": n1_mean, "neuron_overlap_layer_1_sem": n1_sem,
        "neuron_overlap_layer_2_mean": n2_mean, "neuron_overlap_layer_2_sem": n2_sem,
        "neuron_quantile_edges": np.linspace(0.0, 1.0, NEURON_BINS + 1),
        "unbiased_overlap_mean": ub_mean, "unbiased_overlap_sem": ub_sem, "unbiased_overlap": entry["unbiased_overlap"],
        "mmse_mean": mmse_mean, "mmse_sem": mmse_sem, "mmse": s["error"],
        "posterior_mean_error_mean": pm_mean, "posterior_mean_error_sem": pm_sem,
        "overlap_mean": overlap_mean, "overlap_sem": overlap_sem, "overlap": entry["overlap"],
        "r2_mean": r2_mean, "r2_sem": r2_sem, "r2": s["r2"],
        "overlap_histogram": _density(entry["histogram"]),
        "overlap_matrix_histogram": _density(entry["matrix_histogram"]),
        "overlap_bin_edges": OVERLAP_BIN_EDGES,
        "nishimori_teacher_error_mean": mmse_mean, "nishimori_teacher_error_sem": mmse_sem,
        "nishimori_replica_error_mean": rep_err_mean, "nishimori_replica_error_sem": rep_err_sem,
        "nishimori_teacher_overlap_mean": overlap_mean, "nishimori_replica_overlap_mean": rep_ov_mean,
        "nishimori_replica_overlap_sem": rep_ov_sem,
        "nishimori_teacher_r2_mean": r2_mean, "nishimori_replica_r2_mean": rep_r2_mean,
        "nishimori_replica_r2_sem": rep_r2_sem,
        "nishimori_replica_error": s["replica_error"], "nishimori_replica_r2": s["replica_r2"],
        "nishimori_replica_overlap": entry["replica_overlap"],
        "acceptance_rate": s["acceptance_rate"], "step_size": s["step_size"],
        "divergences": s["divergences"], "mean_integration_steps": s["mean_integration_steps"],
        "wall_time": s["wall_time"], "converged": s["converged"], "iterations": s["iterations"],
        "excluded": excluded.astype(np.int8), "chains_used": keep.sum(axis=1),
        "trace_steps": np.asarray(entry["trace_steps"]), "trace_error": traces,
        "widths": np.asarray(architecture.widths),
    }
    if config.channel != "gaussian" and config.output_channel().binary:
        for name in _CLASSIFICATION:
            key = "nishimori_" + name if name in ("teacher_disagreement", "replica_disagreement") else name
            mean, sem = mean_and_sem(s[name], axis=1, keep=keep)
            datasets.update({f"{key}_mean": mean, f"{key}_sem": sem, key: s[name]})
    if config.sampler == "sgd":  # updates = samples seen, proportional to n: one row per α
        by_alpha = entry.get("trace_steps_by_alpha", {})
        datasets["trace_samples"] = np.array([by_alpha.get(a, np.full(traces.shape[-1], np.nan))
                                              for a in range(len(config.alpha))], dtype=float)
    return InitResult(init=init, alpha=np.asarray(config.alpha),
                      num_samples=np.array([architecture.num_samples(a) for a in config.alpha]),
                      datasets=datasets)
