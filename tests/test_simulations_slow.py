"""Statistical checks of HMC against the theory (marked ``slow``: several minutes on 2 cores).

Problem: ReLU, γ = 0.5, Δ = 0.1, v ≡ 1, Gaussian weights (docs/theory.md §8), d = 40, three
teachers, 2000 HMC transitions (half of them step-size adaptation), 50 kept samples,
10⁴ test inputs.

Reference numbers (copied here from data/reference/barbier2025_shallow/)
--------------------------------------------------------------
* Theory, universal branch, α = 1: mmse = 0.04050109 — Barbier et al. (arXiv 2501.18530),
  authors' curve ``theory_relu_delta0.1_gamma0.5_readout_ones_universal.csv`` (row α = 1.0);
  the same curve gives docs/theory.md §8's 0.045466804 at α = 0.8 and 0.020484646 at α = 4.
  At α = 1 the universal branch is the equilibrium (informed and uninformed HMC at
  d = 150 agree up to α ≈ 3.5).
* Equilibrium at α = 6 (specialized branch): informed HMC at d = 150, 9 teachers,
  mmse = 0.0105521 ± 0.00015 (std), file ``hmc_relu_delta0.1_gamma0.5_readout_ones_d150.csv``
  of the same authors; docs/theory.md §8 quotes it as the equilibrium value (≈ 0.0106).
  Uninformed HMC at d = 150: 0.0172710 (universal branch, metastable).

Finite-size tolerance
---------------------
The half Gibbs error at finite d differs from d = ∞ by O(1/d) corrections (the spectrum of
the 40×40 matrix S⁰ and the finite number of neurons, k = 20) and fluctuates from teacher
to teacher.  At d = 150 the informed HMC exceeds the theory by 1.6% at α = 1
(0.04115 vs 0.04050); scaled as 1/d this is ≈ 6% at d = 40.  The teacher-to-teacher
spread at d = 40 is ≈ 5% (standard error ≈ 3% with three teachers).  We therefore accept
a relative deviation of 15% (≈ 6% bias + 3 standard errors) at both α.  The Nishimori
check compares two estimates made on the same chains, so only sampling error enters:
3 standard errors of the paired difference plus 5% for the residual correlation between
the two halves of a 1000-transition chain.
"""

import numpy as np
import pytest

from optional import require  # noqa: E402

require("jax", extra="experiments")
require("blackjax", extra="experiments")

from replica.simulations.experiment import ExperimentConfig, run_experiment  # noqa: E402

pytestmark = pytest.mark.slow

PUBLISHED_UNIVERSAL_ALPHA1 = 0.04050109  # authors' universal-branch curve, α = 1.0
HMC_D150_INFORMED_ALPHA6 = 0.0105521055  # authors' HMC, d = 150, informed, α = 6
HMC_D150_UNINFORMED_ALPHA6 = 0.01727097  # same, uninformed
FINITE_SIZE_RTOL = 0.15


@pytest.fixture(scope="module")
def relu_runs():
    config = ExperimentConfig(activation="relu", gamma=(0.5,), delta=0.1, readout="ones", prior="gaussian",
                              alpha=(1.0, 6.0), dim=40, teachers=3, sampler="hmc",
                              init=("informed", "uninformed"), steps=2000, seed=0)
    return run_experiment(config)


def test_informed_error_matches_the_equilibrium_at_alpha_1(relu_runs):
    mmse = relu_runs["informed"].datasets["mmse_mean"]
    assert mmse[0] == pytest.approx(PUBLISHED_UNIVERSAL_ALPHA1, rel=FINITE_SIZE_RTOL)


def test_informed_error_matches_the_equilibrium_at_alpha_6(relu_runs):
    mmse = relu_runs["informed"].datasets["mmse_mean"]
    assert mmse[1] == pytest.approx(HMC_D150_INFORMED_ALPHA6, rel=FINITE_SIZE_RTOL)


def test_informed_and_uninformed_agree_below_the_transition(relu_runs):
    inf = relu_runs["informed"].datasets["mmse"][0]
    unf = relu_runs["uninformed"].datasets["mmse"][0]
    diff = unf - inf
    sem = np.std(diff, ddof=1) / np.sqrt(diff.size)
    assert abs(diff.mean()) <= 3 * sem + 0.05 * inf.mean()


def test_uninformed_error_lies_above_the_informed_one_at_alpha_6(relu_runs):
    inf = relu_runs["informed"].datasets["mmse"][1]
    unf = relu_runs["uninformed"].datasets["mmse"][1]
    assert np.all(unf > inf)  # paired: same teacher, same data
    assert unf.mean() > inf.mean() * 1.1
    # it stays between the equilibrium and the metastable universal branch
    assert unf.mean() < HMC_D150_UNINFORMED_ALPHA6 * (1 + FINITE_SIZE_RTOL)
    # and the informed chain is the specialized one
    d = relu_runs["informed"].datasets
    assert d["overlap_mean"][1, 0] > relu_runs["uninformed"].datasets["overlap_mean"][1, 0]


@pytest.mark.parametrize("alpha_index", [0, 1])
def test_nishimori_identity_holds_for_informed_chains(relu_runs, alpha_index):
    d = relu_runs["informed"].datasets
    teacher = d["mmse"][alpha_index]
    per_teacher_replica = _per_teacher(relu_runs, "replica_error", alpha_index)
    diff = teacher - per_teacher_replica
    sem = np.std(diff, ddof=1) / np.sqrt(diff.size)
    assert abs(diff.mean()) <= 3 * sem + 0.05 * teacher.mean(), (teacher, per_teacher_replica)
    r2_teacher = d["r2"][alpha_index]
    r2_replica = _per_teacher(relu_runs, "replica_r2", alpha_index)
    assert abs(np.mean(r2_teacher - r2_replica)) < 0.05
    assert abs(d["nishimori_teacher_overlap_mean"][alpha_index, 0]
               - d["nishimori_replica_overlap_mean"][alpha_index, 0]) < 0.05


def test_sampler_diagnostics(relu_runs):
    for result in relu_runs.values():
        d = result.datasets
        assert np.all(d["acceptance_rate"] > 0.6)
        assert np.all(d["divergences"] == 0)
        assert np.all(d["step_size"] > 0)


def _per_teacher(runs, name, alpha_index):
    return np.asarray(runs["informed"].datasets[f"nishimori_{name}"][alpha_index])
