"""Posterior samplers and Adam training for the teacher–student posterior (docs/theory.md §7).

Posterior (Gaussian label noise of variance Δ, prior ``P_W`` on every layer):

    log p(W | D) = log P_W(W) − Σ_μ (y_μ − λ(x_μ; W))² / (2Δ) + const,

with ``log P_W(W) = −½ Σ W²`` for the Gaussian prior. With an output channel (``make_runner(...,
channel=...)``, HMC/NUTS only) the Gaussian term is replaced by ``Σ_μ ln P_out(y_μ | λ_c(x_μ; W))`` on the
centred output ``λ_c = λ − μ₀ Σv/√k_L`` (:mod:`replica.simulations.channels`, docs/theory.md §10.1).

* :func:`run_hmc` — BlackJAX HMC (fixed number of leapfrog steps) or NUTS, identity mass
  matrix, step size tuned during warm-up by dual averaging (Hoffman & Gelman 2014, §3.2)
  towards a target acceptance rate; the adaptation restarts once half-way through the
  warm-up so that the transient from a random start is forgotten.  Gaussian prior only.
* :func:`run_metropolis` — single-flip Metropolis for the Rademacher prior, vectorized over
  the data points; one *step* is a sweep of ``Σ_ℓ k_ℓ k_{ℓ−1}`` proposals in random order.
  One hidden layer uses an O(n) incremental update per flip; deeper networks re-evaluate
  the forward pass.
* :func:`run_adam` — optax Adam on the squared loss ``½ mean (y − λ)²`` with minibatches.
* ``sgd`` — plain SGD with one sample per update on the loss ``½ (y − λ)²``, every weight
  matrix ``W_ℓ ← W_ℓ − η ∇_{W_ℓ}``; ``steps`` passes over the n samples (1 = online SGD: every
  sample seen once, the trace then gives the error against the samples seen ``n_t``, i.e. against
  ``α_t = n_t/d²``). With the network's normalization every layer's per-sample gradient has a
  squared norm O(1), so ``η = O(1)`` is the stable scale and the overlaps move by O(1) after
  O(k d/η) samples (the time variable of :mod:`replica.simulations.sgd`). A constant η leaves a noise
  floor of the test error of order ηΔ (measured at d = 20, two hidden layers, Δ = 0.1, α = 5, from
  the teacher: 0.14 at η = 0.2, 0.018 at η = 0.05); the default 0.1 trades it against speed.
* ``gamp-rie`` — the message-passing algorithm of :mod:`replica.simulations.gamp_rie` (NumPy, one
  hidden layer): a point estimate of the universal branch, no weights.

All three return a :class:`ChainResult` with the kept weights, the network outputs on the
test inputs at every kept sample (from which :mod:`replica.simulations.measurements` computes
errors and Nishimori statistics), an error trace along the run and diagnostics.

JAX and BlackJAX are imported lazily: they are optional (``pip install 'replica-hciz[experiments]'``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .chains import ChainResult  # noqa: F401 - defined there, part of this module's API
from .teacher_student import network_output

__all__ = ["ChainResult", "HMCSettings", "AdamSettings", "make_runner", "run_hmc",
           "run_metropolis", "run_adam", "SAMPLERS", "POINT_ESTIMATES"]

SAMPLERS = ("hmc", "nuts", "metropolis", "adam", "sgd", "gamp-rie")

#: Methods that return one point estimate (error ``E(λ̂ − λ⁰)²``, not half the Gibbs error).
POINT_ESTIMATES = ("adam", "sgd", "gamp-rie")
#: Methods that train on the squared loss (``--learning-rate``), with their default learning rates
TRAINERS = {"adam": 0.01, "sgd": 0.1}


@dataclass(frozen=True)
class HMCSettings:
    """Settings of HMC/NUTS.

    Attributes
    ----------
    num_integration_steps : int
        Leapfrog steps per HMC transition (reference code: 10).
    target_acceptance : float
        Target of the dual-averaging step-size adaptation.
    initial_step_size : float
        Starting step size of the adaptation.
    max_num_doublings : int
        NUTS trajectory cap (at most ``2^max_num_doublings`` leapfrog steps).
    """

    num_integration_steps: int = 10
    target_acceptance: float = 0.8
    initial_step_size: float = 0.05
    max_num_doublings: int = 8


@dataclass(frozen=True)
class AdamSettings:
    """Settings of Adam training.

    Attributes
    ----------
    learning_rate : float
        Adam learning rate (reference: 0.01).
    batch_fraction : float
        Minibatch size as a fraction of n (reference: 1/4).
    """

    learning_rate: float = 0.01
    batch_fraction: float = 0.25


def _schedule(steps: int, warmup_fraction: float, num_kept: int) -> tuple[int, int, int]:
    """Split ``steps`` into warm-up blocks and kept blocks of ``thin`` steps each.

    Returns ``(thin, warmup_blocks, kept_blocks)``; every block ends with a measurement.
    """
    if steps < 2:
        raise ValueError(f"steps must be >= 2, got {steps}")
    if not 0.0 <= warmup_fraction < 1.0:
        raise ValueError(f"warmup_fraction must be in [0, 1), got {warmup_fraction}")
    measured = max(1, int(round(steps * (1.0 - warmup_fraction))))
    kept = max(1, min(num_kept, measured))
    thin = max(1, measured // kept)
    warmup_blocks = (steps - thin * kept) // thin
    return thin, warmup_blocks, kept


def _log_likelihood(weights, readout, inputs, labels, activation, delta, channel=None):
    """Log-likelihood of the data up to a constant: Gaussian ``−Σ (y − λ)²/(2Δ)`` when ``channel`` is None,
    else ``Σ channel_fn(y, λ − μ₀ Σv/√k_L)`` with ``channel = (channel_fn, μ₀)``
    (:func:`replica.simulations.channels.jax_log_likelihood`, :func:`replica.simulations.channels.output_mean_coefficient`)."""
    import jax.numpy as jnp

    output = network_output(weights, readout, inputs, activation)
    if channel is None:
        residual = labels - output
        return -jnp.sum(residual**2) / (2.0 * delta)
    log_p, mu0 = channel
    centre = mu0 * jnp.sum(readout) / math.sqrt(readout.shape[0])
    return jnp.sum(log_p(labels, output - centre))


def make_runner(sampler: str, *, activation, delta: float, steps: int, warmup_fraction: float = 0.5,
                num_kept: int = 50, hmc: HMCSettings = HMCSettings(), adam: AdamSettings = AdamSettings(),
                readout_law: str | None = None, channel=None, mean_coefficient: float = 0.0):
    """Build a jit-compiled runner for one sampler; data are arguments, so it compiles once per shape.

    Parameters
    ----------
    sampler : {'hmc', 'nuts', 'metropolis', 'adam', 'sgd', 'gamp-rie'}
    activation : callable
        JAX activation.
    delta : float
        Label-noise variance Δ (> 0 for the samplers; Adam accepts 0).
    steps : int
        Total transitions (HMC/NUTS), sweeps (Metropolis), updates (Adam) or passes over the
        samples (SGD).
    warmup_fraction : float
        Fraction of ``steps`` used for warm-up/burn-in (samplers); Adam keeps only its
        last iterate and uses this only for the trace spacing.
    num_kept : int
        Number of samples kept after warm-up (evenly thinned).
    hmc, adam : settings
        (SGD uses ``adam.learning_rate`` as its learning rate η.)
    readout_law : str, optional
        Readout-law specification (GAMP-RIE uses its spectral law).
    channel : priors.output_channels.OutputChannel, optional
        HMC/NUTS only: the output channel whose log-likelihood (:func:`replica.simulations.channels.jax_log_likelihood`)
        replaces the Gaussian one, read on the centred output ``λ − mean_coefficient Σv/√k_L``; ``labels``
        are then the channel's labels. None (default): Gaussian label noise of variance ``delta``, the
        uncentred output (as before channels existed).
    mean_coefficient : float, optional
        ``μ₀`` of the centring (:func:`replica.simulations.channels.output_mean_coefficient`).

    Returns
    -------
    callable
        ``runner(key, start_weights, readout, inputs, labels, test_inputs, test_outputs)``
        returning a :class:`ChainResult`.

    Raises
    ------
    ValueError
        Unknown sampler, Δ ≤ 0 for a sampler, bad schedule, a channel with a sampler other than HMC/NUTS
        or without a JAX log-likelihood (the noiseless sign channel).
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r}; expected one of {', '.join(SAMPLERS)}")
    if channel is not None:
        if sampler not in ("hmc", "nuts"):
            raise ValueError(f"an output channel is sampled with hmc or nuts only, got {sampler!r}")
        from .channels import jax_log_likelihood

        likelihood = (jax_log_likelihood(channel), float(mean_coefficient))
        return _make_hmc_runner(sampler, activation, delta, steps, warmup_fraction, num_kept, hmc, likelihood)
    if sampler not in POINT_ESTIMATES and not delta > 0:
        raise ValueError(f"sampling the posterior needs a label-noise variance Δ > 0, got {delta}")
    if sampler == "gamp-rie":
        from .gamp_rie import make_gamp_rie_runner

        return make_gamp_rie_runner(activation=activation, delta=delta, steps=steps, readout_law=readout_law)
    if sampler in ("hmc", "nuts"):
        return _make_hmc_runner(sampler, activation, delta, steps, warmup_fraction, num_kept, hmc)
    if sampler == "metropolis":
        return _make_metropolis_runner(activation, delta, steps, warmup_fraction, num_kept)
    if sampler == "sgd":
        return _make_sgd_runner(activation, steps, num_kept, adam.learning_rate)
    return _make_adam_runner(activation, steps, num_kept, adam)


def run_hmc(key, start_weights, readout, train, test, *, activation, delta, steps, kind="hmc",
            warmup_fraction=0.5, num_kept=50, settings=HMCSettings()):
    """Sample the posterior of a Gaussian-prior network with BlackJAX HMC or NUTS.

    Parameters
    ----------
    key : jax.random key
    start_weights : tuple of arrays
        Initial position (the teacher for ``informed``, a prior draw for ``uninformed``).
    readout : array, shape (k_L,)
    train, test : :class:`~replica.simulations.teacher_student.Dataset`
        Training data (noisy labels) and test data (noiseless outputs).
    activation : callable
    delta : float
        Δ > 0.
    steps : int
        Total HMC transitions, the first ``warmup_fraction`` of which tune the step size.
    kind : {'hmc', 'nuts'}
    warmup_fraction, num_kept, settings
        See :func:`make_runner`.

    Returns
    -------
    ChainResult
    """
    runner = make_runner(kind, activation=activation, delta=delta, steps=steps,
                         warmup_fraction=warmup_fraction, num_kept=num_kept, hmc=settings)
    return runner(key, start_weights, readout, train.inputs, train.labels, test.inputs, test.labels)


def run_metropolis(key, start_weights, readout, train, test, *, activation, delta, steps,
                   warmup_fraction=0.5, num_kept=50):
    """Single-flip Metropolis sampling of a Rademacher-prior network (``steps`` sweeps).

    Parameters and return value as in :func:`run_hmc`; ``start_weights`` must be ±1.
    """
    runner = make_runner("metropolis", activation=activation, delta=delta, steps=steps,
                         warmup_fraction=warmup_fraction, num_kept=num_kept)
    return runner(key, start_weights, readout, train.inputs, train.labels, test.inputs, test.labels)


def run_adam(key, start_weights, readout, train, test, *, activation, steps, num_records=50,
             settings=AdamSettings()):
    """Train with Adam on the squared loss, recording the test error ``E(λ − λ⁰)²``.

    Parameters and return value as in :func:`run_hmc`; ``steps`` counts minibatch updates.
    The kept sample is the final iterate.
    """
    runner = make_runner("adam", activation=activation, delta=0.0, steps=steps,
                         num_kept=num_records, adam=settings)
    return runner(key, start_weights, readout, train.inputs, train.labels, test.inputs, test.labels)


# --------------------------------------------------------------------------------------
# HMC / NUTS
# --------------------------------------------------------------------------------------

def _make_hmc_runner(kind, activation, delta, steps, warmup_fraction, num_kept, settings, channel=None):
    import jax
    import jax.numpy as jnp
    import blackjax
    from blackjax.adaptation.step_size import dual_averaging_adaptation

    thin, warmup_blocks, kept_blocks = _schedule(steps, warmup_fraction, num_kept)
    total_blocks = warmup_blocks + kept_blocks
    block_index = np.arange(total_blocks)
    adapt = block_index < warmup_blocks
    reset = (block_index == warmup_blocks // 2) & (warmup_blocks >= 2)
    freeze = (block_index == warmup_blocks) & (warmup_blocks >= 1)
    da_init, da_update, _ = dual_averaging_adaptation(settings.target_acceptance)

    @jax.jit
    def run(key, position, readout, inputs, labels, test_inputs, test_outputs):
        def logdensity(weights):
            prior = -0.5 * sum(jnp.sum(w**2) for w in weights)
            return prior + _log_likelihood(weights, readout, inputs, labels, activation, delta, channel)

        num_params = sum(w.size for w in position)
        inverse_mass = jnp.ones(num_params, dtype=inputs.dtype)
        if kind == "hmc":
            kernel = blackjax.hmc.build_kernel()

            def transition(k, state, step_size):
                return kernel(k, state, logdensity, step_size, inverse_mass,
                              settings.num_integration_steps)
        else:
            kernel = blackjax.nuts.build_kernel()

            def transition(k, state, step_size):
                return kernel(k, state, logdensity, step_size, inverse_mass,
                              settings.max_num_doublings)

        def tree_where(condition, new, old):
            return jax.tree.map(lambda a, b: jnp.where(condition, a, b), new, old)

        def block(carry, schedule):
            state, da_state, fixed_step = carry
            k, adapt, reset, freeze = schedule
            da_state = tree_where(reset, da_init(jnp.exp(da_state.log_step_size_avg)), da_state)
            fixed_step = jnp.where(freeze, jnp.exp(da_state.log_step_size_avg), fixed_step)

            def one(c, kk):
                st, da = c
                step_size = jnp.where(adapt, jnp.exp(da.log_step_size), fixed_step)
                st, info = transition(kk, st, step_size)
                rate = jnp.nan_to_num(info.acceptance_rate, nan=0.0)
                da = tree_where(adapt, da_update(da, rate), da)
                return (st, da), (rate, info.is_divergent, info.num_integration_steps)

            (state, da_state), (rate, divergent, leapfrogs) = jax.lax.scan(
                one, (state, da_state), jax.random.split(k, thin))
            out = network_output(state.position, readout, test_inputs, activation)
            stats = (jnp.mean(rate), jnp.sum(divergent), jnp.mean(leapfrogs))
            return (state, da_state, fixed_step), (state.position, out,
                                                   0.5 * jnp.mean((out - test_outputs) ** 2), stats)

        state = blackjax.hmc.init(position, logdensity)
        initial = jnp.asarray(settings.initial_step_size, inputs.dtype)
        (state, da_state, step_size), (samples, outputs, trace, stats) = jax.lax.scan(
            block, (state, da_init(initial), initial),
            (jax.random.split(key, total_blocks), adapt, reset, freeze))
        return samples, outputs, trace, step_size, stats

    def runner(key, start_weights, readout, inputs, labels, test_inputs, test_outputs):
        samples, outputs, trace, step_size, (rate, divergent, leapfrogs) = _call_on_device(
            run, key, start_weights, readout, inputs, labels, test_inputs, test_outputs)
        keep = slice(warmup_blocks, None)
        return _kept_chain(
            samples, outputs, trace, rate, thin=thin, warmup_blocks=warmup_blocks,
            total_blocks=total_blocks, step_size=float(step_size),
            divergences=int(np.sum(np.asarray(divergent)[keep])),
            mean_integration_steps=float(np.mean(np.asarray(leapfrogs)[keep])))

    return runner


def _call_on_device(run, key, start_weights, readout, inputs, labels, test_inputs, test_outputs):
    """Call a jitted ``run`` with every array converted to the working float dtype."""
    import jax.numpy as jnp

    dtype = _float_dtype()
    return run(key, tuple(jnp.asarray(w, dtype) for w in start_weights), jnp.asarray(readout, dtype),
               jnp.asarray(inputs, dtype), jnp.asarray(labels, dtype),
               jnp.asarray(test_inputs, dtype), jnp.asarray(test_outputs, dtype))


def _kept_chain(samples, outputs, trace, rate, *, thin, warmup_blocks, total_blocks, **extra):
    """:class:`ChainResult` of a sampler run: the blocks after warm-up are kept."""
    keep = slice(warmup_blocks, None)
    return ChainResult(
        samples=tuple(np.asarray(s)[keep] for s in samples),
        test_outputs=np.asarray(outputs)[keep],
        trace_steps=thin * np.arange(1, total_blocks + 1),
        trace_errors=np.asarray(trace, dtype=float),
        acceptance_rate=float(np.mean(np.asarray(rate)[keep])),
        warmup=thin * warmup_blocks,
        steps=thin * total_blocks,
        **extra,
    )


def _float_dtype():
    import jax
    import jax.numpy as jnp

    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


# --------------------------------------------------------------------------------------
# Metropolis (Rademacher prior)
# --------------------------------------------------------------------------------------

def _make_metropolis_runner(activation, delta, steps, warmup_fraction, num_kept):
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree

    thin, warmup_blocks, kept_blocks = _schedule(steps, warmup_fraction, num_kept)
    total_blocks = warmup_blocks + kept_blocks

    def shallow_sweeps(key, weights, readout, inputs, labels):
        """``thin`` sweeps of single flips with O(n) incremental updates (one hidden layer)."""
        (w,) = weights
        k, d = w.shape
        inputs_t = inputs.T  # (d, n): row access per input coordinate
        pre = w @ inputs_t / math.sqrt(d)  # (k, n)
        post = activation(pre)
        residual = labels - readout @ post / math.sqrt(k)
        sqrt_d, sqrt_k = math.sqrt(d), math.sqrt(k)

        def flip(carry, proposal):
            w, pre, post, residual, accepted = carry
            site, log_u = proposal
            i, j = site // d, site % d
            wij = w[i, j]
            new_pre = pre[i] - 2.0 * wij * inputs_t[j] / sqrt_d
            new_post = activation(new_pre)
            change = readout[i] * (new_post - post[i]) / sqrt_k
            energy_change = jnp.sum(change * (change - 2.0 * residual)) / (2.0 * delta)
            accept = log_u < -energy_change
            w = w.at[i, j].set(jnp.where(accept, -wij, wij))
            pre = pre.at[i].set(jnp.where(accept, new_pre, pre[i]))
            post = post.at[i].set(jnp.where(accept, new_post, post[i]))
            residual = jnp.where(accept, residual - change, residual)
            return (w, pre, post, residual, accepted + accept), None

        def sweep(carry, kk):
            k_perm, k_u = jax.random.split(kk)
            sites = jax.random.permutation(k_perm, k * d)
            log_u = jnp.log(jax.random.uniform(k_u, (k * d,), dtype=inputs.dtype))
            carry, _ = jax.lax.scan(flip, carry, (sites, log_u))
            return carry, None

        carry = (w, pre, post, residual, jnp.asarray(0, jnp.int32))
        (w, _, _, _, accepted), _ = jax.lax.scan(sweep, carry, jax.random.split(key, thin))
        return (w,), accepted / (thin * k * d)

    def generic_sweeps(key, weights, readout, inputs, labels):
        """``thin`` sweeps re-evaluating the full forward pass per flip (any depth)."""
        flat, unravel = ravel_pytree(weights)
        size = flat.size

        def energy(theta):
            return -_log_likelihood(unravel(theta), readout, inputs, labels, activation, delta)

        def flip(carry, proposal):
            theta, current, accepted = carry
            site, log_u = proposal
            candidate = theta.at[site].multiply(-1.0)
            new = energy(candidate)
            accept = log_u < current - new
            return (jnp.where(accept, candidate, theta), jnp.where(accept, new, current),
                    accepted + accept), None

        def sweep(carry, kk):
            k_perm, k_u = jax.random.split(kk)
            sites = jax.random.permutation(k_perm, size)
            log_u = jnp.log(jax.random.uniform(k_u, (size,), dtype=inputs.dtype))
            carry, _ = jax.lax.scan(flip, carry, (sites, log_u))
            return carry, None

        carry = (flat, energy(flat), jnp.asarray(0, jnp.int32))
        (flat, _, accepted), _ = jax.lax.scan(sweep, carry, jax.random.split(key, thin))
        return unravel(flat), accepted / (thin * size)

    @jax.jit
    def run(key, weights, readout, inputs, labels, test_inputs, test_outputs):
        sweeps = shallow_sweeps if len(weights) == 1 else generic_sweeps

        def block(weights, kk):
            weights, rate = sweeps(kk, weights, readout, inputs, labels)
            out = network_output(weights, readout, test_inputs, activation)
            return weights, (weights, out, 0.5 * jnp.mean((out - test_outputs) ** 2), rate)

        _, (samples, outputs, trace, rate) = jax.lax.scan(
            block, weights, jax.random.split(key, total_blocks))
        return samples, outputs, trace, rate

    def runner(key, start_weights, readout, inputs, labels, test_inputs, test_outputs):
        for w in start_weights:
            if not np.all(np.abs(np.asarray(w)) == 1.0):
                raise ValueError("the Metropolis sampler needs ±1 (Rademacher) weights")
        samples, outputs, trace, rate = _call_on_device(
            run, key, start_weights, readout, inputs, labels, test_inputs, test_outputs)
        return _kept_chain(samples, outputs, trace, rate, thin=thin, warmup_blocks=warmup_blocks,
                           total_blocks=total_blocks)

    return runner


# --------------------------------------------------------------------------------------
# Adam
# --------------------------------------------------------------------------------------

def _make_adam_runner(activation, steps, num_records, settings):
    import jax
    import jax.numpy as jnp
    import optax

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if not 0 < settings.batch_fraction <= 1:
        raise ValueError(f"batch_fraction must be in (0, 1], got {settings.batch_fraction}")
    records = max(1, min(num_records, steps))
    every = max(1, steps // records)
    blocks = steps // every
    optimizer = optax.adam(settings.learning_rate)

    @jax.jit
    def run(key, weights, readout, inputs, labels, test_inputs, test_outputs):
        n = inputs.shape[0]
        batch = max(1, int(round(settings.batch_fraction * n)))
        batches_per_epoch = max(1, n // batch)

        def loss(w, x, y):
            return 0.5 * jnp.mean((y - network_output(w, readout, x, activation)) ** 2)

        def update(carry, step):
            w, opt_state = carry
            epoch, position = step // batches_per_epoch, step % batches_per_epoch
            order = jax.random.permutation(jax.random.fold_in(key, epoch), n)
            index = jax.lax.dynamic_slice(order, (position * batch,), (batch,))
            grads = jax.grad(loss)(w, inputs[index], labels[index])
            updates, opt_state = optimizer.update(grads, opt_state, w)
            return (optax.apply_updates(w, updates), opt_state), None

        def block(carry, first):
            carry, _ = jax.lax.scan(update, carry, first + jnp.arange(every))
            out = network_output(carry[0], readout, test_inputs, activation)
            return carry, jnp.mean((out - test_outputs) ** 2)

        carry = (weights, optimizer.init(weights))
        (weights, _), trace = jax.lax.scan(block, carry, every * jnp.arange(blocks))
        out = network_output(weights, readout, test_inputs, activation)
        return weights, out, trace

    def runner(key, start_weights, readout, inputs, labels, test_inputs, test_outputs):
        weights, out, trace = _call_on_device(
            run, key, start_weights, readout, inputs, labels, test_inputs, test_outputs)
        return ChainResult(
            samples=tuple(np.asarray(w)[None] for w in weights),
            test_outputs=np.asarray(out)[None],
            trace_steps=every * np.arange(1, blocks + 1),
            trace_errors=np.asarray(trace, dtype=float),
            step_size=settings.learning_rate,
            warmup=0,
            steps=every * blocks,
        )

    return runner


# --------------------------------------------------------------------------------------
# SGD, one sample per update
# --------------------------------------------------------------------------------------

def _make_sgd_runner(activation, passes, num_records, learning_rate):
    import jax
    import jax.numpy as jnp

    if passes < 1:
        raise ValueError(f"steps (passes over the samples) must be >= 1, got {passes}")
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be > 0, got {learning_rate}")

    def spacing(n):  # trace points, updates between two of them (the last block takes the remainder)
        records = max(1, min(num_records, passes * n))
        return records, (passes * n) // records

    @jax.jit
    def run(key, weights, readout, inputs, labels, test_inputs, test_outputs):
        n = inputs.shape[0]  # static under jit: one compilation per data shape
        records, every = spacing(n)

        def loss(w, x, y):
            return 0.5 * jnp.sum((y - network_output(w, readout, x[None, :], activation)) ** 2)

        def update(w, step):
            epoch, position = step // n, step % n
            order = jax.random.permutation(jax.random.fold_in(key, epoch), n)
            i = jnp.where(epoch == 0, position, order[position])  # the first pass in the order drawn
            grads = jax.grad(loss)(w, inputs[i], labels[i])
            return jax.tree_util.tree_map(lambda a, g: a - learning_rate * g, w, grads), None

        def error(w):
            return jnp.mean((network_output(w, readout, test_inputs, activation) - test_outputs) ** 2)

        def block(w, first):
            w, _ = jax.lax.scan(update, w, first + jnp.arange(every))
            return w, error(w)

        weights, trace = jax.lax.scan(block, weights, every * jnp.arange(records - 1))
        # the last block runs to the end of the last pass: every sample of every pass is used
        weights, _ = jax.lax.scan(update, weights, jnp.arange(every * (records - 1), passes * n))
        trace = jnp.concatenate([trace, error(weights)[None]])
        return weights, network_output(weights, readout, test_inputs, activation), trace

    def runner(key, start_weights, readout, inputs, labels, test_inputs, test_outputs):
        n = int(np.shape(inputs)[0])
        records, every = spacing(n)
        weights, out, trace = _call_on_device(
            run, key, start_weights, readout, inputs, labels, test_inputs, test_outputs)
        steps = np.append(every * np.arange(1, records), passes * n)
        return ChainResult(
            samples=tuple(np.asarray(w)[None] for w in weights),
            test_outputs=np.asarray(out)[None],
            trace_steps=steps,
            trace_errors=np.asarray(trace, dtype=float),
            step_size=float(learning_rate),
            warmup=0,
            steps=passes * n,
        )

    return runner
