"""One source of truth per weight prior, readout law and activation.

* Every registered weight prior and readout law draws from itself (``sample(rng, shape)``) with the
  documented normalization (mean 0 and unit variance; ``E v² = 1``).
* Every registered activation works in the simulations (the SGD kernels, NumPy and numba, and the
  JAX samplers) or is refused with a one-line message; a name added to the registry only
  (``replica.activations._BUILTINS``) runs with ``--backend numpy`` and is refused, with the way
  out named, where no compiled form exists.
* A weight prior defined and registered in one place (here, a three-point prior registered through
  :func:`priors.register_weight_prior` in a fresh interpreter) runs in the three commands that take
  ``--prior``: ``replica-sweep``, ``replica-experiment`` and ``replica-sgd`` (before the registry was
  shared, the two simulation commands answered "invalid choice").
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from commands import one_line
from priors import READOUT_LAWS, WEIGHT_PRIORS, WeightPrior, get_readout_law, get_weight_prior

# --------------------------------------------------------------------------- a three-point prior
THREE_POINT = '''
import math

import numpy as np

from priors import WeightPrior, register_weight_prior


@register_weight_prior
class ThreePointPrior(WeightPrior):
    """W = 0 with probability 2/3, ±√3 with probability 1/6 each (mean 0, variance 1)."""

    name = "threepoint"
    summary = "0, ±√3 with probabilities 2/3, 1/6, 1/6"
    atoms = np.array([-math.sqrt(3.0), 0.0, math.sqrt(3.0)])
    probs = np.array([1.0, 4.0, 1.0]) / 6.0
    _z, _wz = np.polynomial.hermite_e.hermegauss(120)
    _wz = _wz / math.sqrt(2.0 * math.pi)

    def _channel(self, r):
        """(overlap m, free entropy psi) of Y = sqrt(r) W + Z, by Gauss-Hermite quadrature in Z."""
        r = np.asarray(r, dtype=float)
        if np.any(r < 0) or not np.all(np.isfinite(r)):
            raise ValueError("signal-to-noise ratio r must be finite and >= 0")
        s = np.sqrt(r.ravel())[:, None, None]                              # (n, 1, 1)
        y = s * self.atoms[None, :, None] + self._z[None, None, :]          # (n, teacher, z)
        logits = (s[..., None] * self.atoms * y[..., None] - 0.5 * s[..., None] ** 2 * self.atoms ** 2
                  + np.log(self.probs))                                     # (n, teacher, z, atom)
        top = logits.max(axis=-1, keepdims=True)
        weights = np.exp(logits - top)
        norm = weights.sum(axis=-1)
        mean = (weights * self.atoms).sum(axis=-1) / norm                   # E[W | Y]
        log_z = np.log(norm) + top[..., 0]
        average = lambda f: ((f @ self._wz) @ self.probs)                    # noqa: E731
        m = average(self.atoms[None, :, None] * mean)
        return m.reshape(r.shape), average(log_z).reshape(r.shape)

    def mmse(self, r):
        return np.clip(1.0 - self._channel(r)[0], 1e-300, 1.0)

    def free_entropy(self, r):
        return self._channel(r)[1]

    def overlap_derivative(self, r):
        r = np.asarray(r, dtype=float)
        h = 1e-5 * (1.0 + r)
        return (self._channel(r + h)[0] - self._channel(np.maximum(r - h, 0.0))[0]) / (r + h - np.maximum(r - h, 0.0))

    def sample(self, rng, shape):
        """iid draws from {0, ±√3} (probabilities 2/3, 1/6, 1/6), float64 array of ``shape``."""
        return rng.choice(self.atoms, size=shape, p=self.probs)
'''


def test_the_three_point_prior_is_a_valid_prior():
    namespace = {}
    exec(compile(THREE_POINT, "three_point", "exec"), namespace)
    try:
        prior = get_weight_prior("threepoint")
        r = np.array([0.0, 0.3, 2.0, 9.0])
        np.testing.assert_allclose(prior.overlap(r)[0], 0.0, atol=1e-12)
        assert np.all(np.diff(prior.overlap(r)) > 0)
        # I-MMSE: psi' = m/2
        h = 1e-4
        np.testing.assert_allclose((prior.free_entropy(r[1:] + h) - prior.free_entropy(r[1:] - h)) / (2 * h),
                                   prior.overlap(r[1:]) / 2, rtol=1e-5)
    finally:
        from priors import unregister_weight_prior

        unregister_weight_prior("threepoint")
    assert "threepoint" not in WEIGHT_PRIORS


# --------------------------------------------------------------------------- samplers
@pytest.mark.parametrize("name", sorted(WEIGHT_PRIORS))
def test_every_weight_prior_draws_from_itself(name):
    prior = get_weight_prior(name)
    w = prior.sample(np.random.default_rng(0), (400, 500))
    assert w.shape == (400, 500) and w.dtype == np.float64
    assert abs(w.mean()) < 0.01 and abs(w.var() - 1.0) < 0.01


def test_the_samples_are_the_laws_of_the_built_in_priors():
    rng = np.random.default_rng(1)
    assert set(np.unique(get_weight_prior("rademacher").sample(rng, 1000))) == {-1.0, 1.0}
    u = get_weight_prior("uniform").sample(rng, 100_000)
    assert u.min() >= -math.sqrt(3) and u.max() <= math.sqrt(3) and abs(np.mean(u ** 4) - 9 / 5) < 0.03
    g = get_weight_prior("gaussian").sample(rng, 100_000)
    assert abs(np.mean(g ** 4) - 3.0) < 0.1


def test_a_prior_without_a_sampler_is_refused_in_one_line(capsys, tmp_path):
    from commands import experiment_main, sgd_main
    from priors import register_weight_prior, unregister_weight_prior

    @register_weight_prior
    class NoSampler(WeightPrior):
        name = "nosampler"

        def mmse(self, r):
            return 1.0 / (1.0 + np.asarray(r, float))

        def free_entropy(self, r):
            r = np.asarray(r, float)
            return 0.5 * r - 0.5 * np.log1p(r)

        def overlap_derivative(self, r):
            return 1.0 / (1.0 + np.asarray(r, float)) ** 2

    try:
        with pytest.raises(NotImplementedError, match="cannot draw samples"):
            get_weight_prior("nosampler").sample(np.random.default_rng(0), 3)
        assert sgd_main(["--prior", "nosampler", "--dim", "8", "--time", "1", "-o", str(tmp_path / "s.h5"),
                         "--quiet"]) == 2
        assert one_line(capsys.readouterr().err).startswith("replica-sgd: error: --prior: weight prior 'nosampler' "
                                                            "cannot draw samples")
        assert experiment_main(["--prior", "nosampler", "--sampler", "adam", "--dim", "6", "--alpha", "0.5",
                                "-o", str(tmp_path / "e.h5"), "--quiet"]) == 2
        assert "--prior: weight prior 'nosampler' cannot draw samples" in one_line(capsys.readouterr().err)
    finally:
        unregister_weight_prior("nosampler")


@pytest.mark.parametrize("name", list(READOUT_LAWS))
def test_every_readout_law_draws_from_itself(name):
    law = get_readout_law(name)
    v = law.sample(np.random.default_rng(2), 200_000)
    assert v.shape == (200_000,) and v.dtype == np.float64
    assert abs(np.mean(v ** 2) - 1.0) < 0.02
    if law.law is None:  # discrete: its atoms, with their probabilities
        atoms, counts = np.unique(v, return_counts=True)
        assert set(atoms) <= set(law.values)
        np.testing.assert_allclose(counts / v.size, law.weights[np.searchsorted(np.sort(law.values), atoms)],
                                   atol=0.01)


def test_help_texts_and_choices_come_from_the_registries():
    from replica.activations import ACTIVATIONS
    from replica.workflow import cli, experiment_cli, sgd_cli

    for build in (cli.build_sweep_parser, experiment_cli.build_parser, sgd_cli.build_parser):
        actions = {a.dest: a for a in build()._actions}
        for name in WEIGHT_PRIORS:
            assert name in actions["prior"].help
            assert actions["prior"].choices is None or tuple(actions["prior"].choices) == tuple(WEIGHT_PRIORS)
        for name in READOUT_LAWS:
            assert name in actions["readout"].help
        for name in ACTIVATIONS:
            assert name in actions["activation"].help


# --------------------------------------------------------------------------- activations
def _sgd_step(spec, backend):
    from replica.simulations.sgd import sgd_steps

    rng = np.random.default_rng(3)
    w = rng.standard_normal((3, 5))
    x = rng.standard_normal((2, 4, 5))  # two steps of a batch of four
    return sgd_steps(w, np.ones(3), x, rng.standard_normal((2, 4)), 0.1, spec, backend=backend), w


def test_the_simulations_read_the_one_activation_registry():
    from replica.activations import ACTIVATIONS
    from replica.simulations import activations, sgd

    assert activations.ACTIVATION_NAMES is ACTIVATIONS
    assert set(sgd._ACTIVATION_CODES) | set(sgd._POLYNOMIALS) <= set(ACTIVATIONS)


@pytest.mark.parametrize("spec", ["relu", "elu", "tanh", "tanh2", "erf", "sigmoid", "softplus", "quadratic",
                                  "hermite:2=1.4142,3=1"])
def test_every_registered_activation_runs_in_the_sgd_kernels(spec):
    from replica.activations import ACTIVATIONS

    assert spec in ACTIVATIONS or spec.startswith("hermite:")
    loss_numpy, w_numpy = _sgd_step(spec, "numpy")
    loss_numba, w_numba = _sgd_step(spec, "numba")
    assert np.isfinite(loss_numpy) and loss_numba == pytest.approx(loss_numpy, rel=1e-10)
    np.testing.assert_allclose(w_numba, w_numpy, rtol=1e-10, atol=1e-12)


def test_the_registry_lists_exactly_the_tested_activations():
    from replica.activations import ACTIVATIONS

    assert set(ACTIVATIONS) == {"relu", "elu", "tanh", "tanh2", "erf", "sigmoid", "softplus", "quadratic"}, \
        "a new activation: add it to the parametrization above (and to test_simulations.py's SPECS via ACTIVATION_NAMES)"


def test_an_activation_added_to_the_registry_only_runs_or_is_refused_clearly(monkeypatch):
    from replica import activations
    import replica.simulations.activations  # noqa: F401 - imported before the patch: it binds the registry's tuple

    def softsign(x):
        return x / (1.0 + np.abs(x))

    def softsign_d(x):
        return 1.0 / (1.0 + np.abs(x)) ** 2

    monkeypatch.setitem(activations._BUILTINS, "softsign", (softsign, softsign_d, None, None, None, None))
    monkeypatch.setattr(activations, "ACTIVATIONS", (*activations.ACTIVATIONS, "softsign"))
    loss, w = _sgd_step("softsign", "numpy")
    assert np.isfinite(loss) and np.all(np.isfinite(w))
    with pytest.raises(ValueError, match=r"no compiled form for the numba backend .*; use --backend numpy$"):
        _sgd_step("softsign", "numba")
    from optional import require

    require("jax", extra="experiments")
    from replica.simulations.activations import get_jax_activation

    with pytest.raises(ValueError, match="has no JAX form"):
        get_jax_activation("softsign")


# --------------------------------------------------------------------------- one prior, every command
def test_a_new_weight_prior_registered_in_one_place_runs_in_every_command(tmp_path):
    """The prior is registered in a fresh interpreter (the commands' registry is per process) that then
    runs the three commands with tiny sizes."""
    from optional import require

    require("jax", extra="experiments")
    require("optax", extra="experiments")
    script = THREE_POINT + textwrap.dedent(f'''
        import sys

        import h5py

        from replica.workflow.cli import sweep_main
        from replica.workflow.experiment_cli import main as experiment_main
        from replica.workflow.sgd_cli import main as sgd_main

        out = {str(tmp_path)!r}
        codes = [
            sweep_main(["--prior", "threepoint", "--alpha", "0.2:0.6:3", "--delta", "0.5", "--quiet",
                        "-o", out + "/sweep.h5"]),
            experiment_main(["--prior", "threepoint", "--sampler", "adam", "--dim", "8", "--alpha", "0.5",
                             "--teachers", "1", "--steps", "20", "--n-test", "32", "--device", "cpu", "--quiet",
                             "-o", out + "/experiment.h5"]),
            sgd_main(["--prior", "threepoint", "--dim", "12", "--time", "1", "--record-every", "log:2",
                      "--n-test", "50", "--quiet", "-o", out + "/sgd.h5"]),
        ]
        print("codes", *codes)
        for name in ("sweep", "experiment", "sgd"):
            with h5py.File(out + "/" + name + ".h5", "r") as f:
                print(name, "threepoint" in str(dict(f.attrs)))
        ''')
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    assert "codes 0 0 0" in lines, run.stdout + run.stderr[-3000:]
    assert {"sweep True", "experiment True", "sgd True"} <= set(lines), run.stdout


def test_extending_says_how_to_run_the_commands_with_a_prior_of_ones_own():
    """docs/extending.md: a prior registered from one's own module is not seen by the console commands;
    the page shows the script that imports it and calls the commands' entry functions, which exist."""
    import importlib
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "extending.md").read_text(encoding="utf-8")
    imports = re.findall(r"^from (replica\.workflow\.\w+) import (\w+)", text, flags=re.M)
    assert {name for _, name in imports} >= {"sweep_main", "main"}
    assert {mod for mod, _ in imports} >= {"replica.workflow.cli", "replica.workflow.experiment_cli",
                                           "replica.workflow.sgd_cli"}
    for mod, name in imports:
        assert callable(getattr(importlib.import_module(mod), name))
