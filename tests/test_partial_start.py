"""The partially informed start ``partial:F`` of ``replica-experiment`` (issue 40, item 4): the fraction F of the
hidden units with the strongest teacher readouts starts at the teacher, the others from the prior; the start the
theory's equilibrium with a many-feature target needs (its strong features learned, the weak ones not)."""

from __future__ import annotations

import numpy as np
import pytest

from replica.simulations.experiment import ExperimentConfig, partial_fraction, start_weights
from replica.simulations.teacher_student import Teacher


def _config(**kw):
    base = dict(layers=1, gamma=(0.5,), activation="tanh2", drop_hermite=(1,), readout="powerlaw:beta=0.3,k=100",
                delta=0.04, alpha=(1.0,), dim=20, teachers=1, sampler="hmc", init=("partial:0.3",), seed=3)
    base.update(kw)
    return ExperimentConfig(**base)


def test_partial_start_takes_the_strongest_units_from_the_teacher():
    rng = np.random.default_rng(0)
    k, d = 10, 20
    teacher = Teacher(weights=(rng.standard_normal((k, d)),), readout=rng.permutation(np.linspace(0.2, 2.0, k)))
    config = _config()
    w = start_weights(config, teacher, 0, 1.0, "partial:0.3")[0]
    strongest = np.argsort(-np.abs(teacher.readout))[:3]
    same = np.all(w == teacher.weights[0], axis=1)
    assert set(np.flatnonzero(same)) == set(strongest.tolist())
    # the others are the uninformed start's draws (the same seed), not the teacher's
    uninformed = start_weights(config, teacher, 0, 1.0, "uninformed")[0]
    rest = np.setdiff1d(np.arange(k), strongest)
    assert np.array_equal(w[rest], uninformed[rest])
    assert start_weights(config, teacher, 0, 1.0, "informed") is teacher.weights


@pytest.mark.parametrize("name,ok", [("partial:0.25", 0.25), ("informed", None), ("partial:0", "error"),
                                     ("partial:1", "error"), ("partial:x", "error")])
def test_partial_fraction_parsing(name, ok):
    if ok == "error":
        with pytest.raises(ValueError, match="partial:"):
            partial_fraction(name)
    else:
        assert partial_fraction(name) == ok


def test_partial_start_is_refused_beyond_one_hidden_layer():
    with pytest.raises(ValueError, match="one hidden layer"):
        _config(layers=2, gamma=(0.5, 0.5))


@pytest.mark.parametrize("args,message", [
    (["--init", "partial:1.5"], "must be in (0, 1)"),
    (["--init", "partial:abc"], "must be a number in (0, 1)"),
    (["--init", "partial:0.3", "--layers", "2", "--gamma", "0.5,0.5"], "is for one hidden layer"),
])
def test_cli_refuses_bad_partial_starts_in_one_line(tmp_path, capsys, args, message):
    from replica.workflow.experiment_cli import main

    out = tmp_path / "e.h5"
    assert main([*args, "--alpha", "1", "--dim", "8", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not out.exists()


def test_partial_chain_keeps_the_strong_features_learned(tmp_path):
    """A seeded HMC run (d = 20, k = 10, α = 1, 200 transitions): the partially informed chain keeps the overlaps
    of the strongest quarter of the units high, the uninformed chain has not learned them."""
    pytest.importorskip("jax")
    from replica.workflow.experiment_cli import main
    from replica.workflow.io import read_experiments

    out = tmp_path / "e.h5"
    assert main(["--activation", "tanh2", "--drop-hermite", "1", "--gamma", "0.5", "--delta", "0.04", "--readout",
                 "powerlaw:beta=0.3,k=100", "--alpha", "1", "--dim", "20", "--teachers", "1", "--sampler", "hmc",
                 "--init", "partial:0.26,uninformed", "--steps", "200", "--seed", "0", "--quiet", "-o", str(out)]) == 0
    groups = read_experiments(out)
    partial = np.asarray(groups[("hmc", "partial:0.26")]["neuron_overlap_layer_1_mean"])[0]
    uninformed = np.asarray(groups[("hmc", "uninformed")]["neuron_overlap_layer_1_mean"])[0]
    assert np.mean(partial[:2]) > 0.5 and np.mean(partial[:2]) > np.mean(uninformed[:2]) + 0.3
