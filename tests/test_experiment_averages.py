"""Teacher averages of experiments leave out diverged and non-converged chains, say so, and keep the
per-chain values as measured (review of issues 14/15, item 2); experiment files carry the resolved
``configuration``."""

import json
import warnings

import numpy as np
import pytest

from replica.simulations.measurements import mean_and_sem


def test_mean_and_sem_over_kept_entries_matches_numpy():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(4, 5))
    values[1, 2] = np.inf
    values[3, :] = np.nan
    keep = np.isfinite(values)
    keep[0, 0] = False                      # a finite value left out too
    keep[2, 1:] = False                     # a single chain left: no sem
    mean, sem = mean_and_sem(values, axis=1, keep=keep)
    for a in range(4):
        kept = values[a][keep[a]]
        if kept.size == 0:
            assert np.isnan(mean[a]) and np.isnan(sem[a])
            continue
        assert mean[a] == pytest.approx(np.mean(kept), rel=1e-14)
        if kept.size < 2:
            assert np.isnan(sem[a])
        else:
            assert sem[a] == pytest.approx(np.std(kept, ddof=1) / np.sqrt(kept.size), rel=1e-12)
    # trailing axes (per-layer overlaps) follow the per-chain mask
    layered = np.stack([values, 2 * values], axis=-1)
    m2, _ = mean_and_sem(layered, axis=1, keep=keep)
    np.testing.assert_allclose(m2[:, 1], 2 * mean, equal_nan=True)


def test_excluded_chains_rule():
    from replica.simulations.experiment import excluded_chains

    scalars = {"error": np.array([[0.1, np.inf], [np.nan, 0.3]]),
               "converged": np.array([[1.0, 0.0], [0.0, 0.0]])}
    # a finite error is kept even when the convergence test failed (stalled residual near recovery)
    assert excluded_chains(scalars).tolist() == [[False, True], [True, False]]


def test_diverging_gamp_rie_chain_is_excluded_and_reported(tmp_path, capsys):
    """d = 40, α = 0.1: the second teacher's GAMP-RIE run diverges (error inf) — measured before the fix:
    mmse_mean = inf, r2_mean = −inf, ~20 numpy RuntimeWarnings through --quiet."""
    pytest.importorskip("jax")
    from replica.workflow import experiment_cli as cli
    from replica.workflow.experiment_io import read_experiment

    path = tmp_path / "g.h5"
    argv = ["--sampler", "gamp-rie", "--activation", "quadratic", "--alpha", "0.1", "--dim", "40",
            "--teachers", "2", "--n-test", "1000", "--seed", "0", "--quiet", "-o", str(path)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)   # a leaking numpy warning fails the test
        assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "RuntimeWarning" not in err
    assert "1 of 2 chains diverged" in err
    data = read_experiment(path)
    group = data["groups"][("gamp-rie", "uninformed")]
    excluded = group["excluded"].astype(bool)
    assert excluded.tolist() == [[False, True]]
    assert not np.isfinite(group["mmse"][0, 1])              # kept as measured
    assert group["chains_used"].tolist() == [1]
    assert group["mmse_mean"][0] == group["mmse"][0, 0]      # the mean of the chain that converged
    assert np.isfinite(group["r2_mean"][0])
    import h5py

    with h5py.File(path, "r") as h5:
        assert "excluded" in h5.attrs["averages"]
        configuration = json.loads(h5.attrs["configuration"])
    assert configuration["dim"] == 40 and configuration["sampler"] == "gamp-rie"
