"""Mutation check: does the test suite catch plausible mistakes in the science and the I/O?

Each mutation below replaces one exact piece of source text by a plausible wrong version
(a coefficient of the wrong layer, a missing factor, the wrong branch written to the file, …)
and names the physics or the contract it breaks and the tests that should catch it. The
mutations are applied one at a time to a temporary copy of the repository, and only the
named tests run there (with the copy first on ``PYTHONPATH``, a fresh table cache, and
``-x``). A mutation is *killed* when those tests fail (or time out).

Usage::

    python scripts/mutation_check.py              # all mutations, 2 in parallel
    python scripts/mutation_check.py --list       # names, files and what each breaks
    python scripts/mutation_check.py --only engine-first-component-only --jobs 1

Before mutating, the union of the named tests runs once on the unmutated copy: every one
must pass, or the check stops. The script prints ``killed K of M`` and the survivors, and
exits with status 1 if any mutation survives or if the old text of a mutation is no longer
found exactly once in its file (the list must follow the code: update it when a line moves).
Run it before resolving any issue that touches a formula.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    old: str
    new: str
    breaks: str
    tests: tuple


M = Mutation
MUTATIONS = [
    # ---------------------------------------------------------------- output channels (docs/theory.md §10)
    M("channel-effective-variance-at-zero-mmse", "replica/models/_output.py",
      "return self.output_channel.effective_variance(self.output_variance, self._clip(mmse))",
      "return self.output_channel.effective_variance(self.output_variance, 0.0)",
      "the conjugates of a generic channel use D at mmse = 0 instead of the stationary mmse",
      ("tests/test_channel_models.py::test_generic_channel_code_reproduces_the_gaussian_solvers",)),
    M("channel-classification-is-disagreement", "replica/models/_output.py",
      '"classification_error": ch.classification_error(self.output_variance, m)',
      '"classification_error": ch.sign_disagreement(self.output_variance, m)',
      "the stored classification error is the disagreement with the noiseless teacher, not with the labels",
      ("tests/test_channel_cli.py::test_sweep_solves_with_the_channel_and_records_it",)),
    M("equilibrium-classification-misaligned", "replica/continuation/equilibrium.py",
      "                values[k][better] = b[k][better]",
      "                values[k][better] = b[k][::-1][better]",
      "the equilibrium's classification error is taken at the wrong α",
      ("tests/test_channel_cli.py::test_sweep_solves_with_the_channel_and_records_it",)),
    # ---------------------------------------------------------------- channels in the experiments (docs/theory.md §10.1)
    M("experiment-probit-threshold-sign", "replica/simulations/channels.py",
      "return log_ndtr(y * (lam - theta) * scale)",
      "return log_ndtr(y * (lam + theta) * scale)",
      "the JAX probit likelihood puts the threshold on the wrong side (HMC samples another posterior)",
      ("tests/test_channel_experiment.py::test_jax_log_likelihood_equals_the_numpy_one",)),
    M("experiment-logistic-without-temperature", "replica/simulations/channels.py",
      "return -jnp.logaddexp(0.0, -y * lam * inv_t)",
      "return -jnp.logaddexp(0.0, -y * lam)",
      "the JAX logistic likelihood ignores the temperature",
      ("tests/test_channel_experiment.py::test_jax_log_likelihood_equals_the_numpy_one",)),
    M("experiment-likelihood-uncentred", "replica/simulations/samplers.py",
      "return jnp.sum(log_p(labels, output - centre))",
      "return jnp.sum(log_p(labels, output))",
      "HMC reads the channel on the uncentred output (the known mean μ₀Σv/√k is not removed)",
      ("tests/test_channel_experiment.py::test_hmc_with_probit_likelihood_matches_the_grid_posterior",)),
    M("experiment-labels-uncentred", "replica/simulations/teacher_student.py",
      "outputs = np.asarray(channel.sample(outputs - centre, rng), dtype=float)",
      "outputs = np.asarray(channel.sample(outputs, rng), dtype=float)",
      "the channel's labels are drawn from the uncentred output (ReLU: nearly all +1)",
      ("tests/test_channel_experiment.py::test_probit_labels_are_balanced_and_follow_the_probit_law",)),
    M("experiment-bayes-classifier-one-sample", "replica/simulations/measurements.py",
      "samples, bayes, truth = decide(outputs), decide(outputs.mean(axis=0)), decide(teacher)",
      "samples, bayes, truth = decide(outputs), decide(outputs[0]), decide(teacher)",
      "the Bayes classifier is the decision of one sample, not of the posterior-mean output",
      ("tests/test_channel_experiment.py::test_classification_measures_on_a_hand_made_case",)),
    M("experiment-nishimori-same-samples", "replica/simulations/measurements.py",
      'out["replica_disagreement"] = float(np.mean(samples[:half] != samples[num_kept - half:]))',
      'out["replica_disagreement"] = float(np.mean(samples[:half] != samples[:half]))',
      "the sample–sample disagreement of the Nishimori check compares a sample with itself",
      ("tests/test_channel_experiment.py::test_classification_measures_on_a_hand_made_case",
       "tests/test_channel_experiment.py::test_classification_measures_follow_the_gaussian_orthant_law")),
    M("experiment-classification-sem-ddof0", "replica/simulations/experiment.py",
      "            mean, sem = mean_and_sem(s[name], axis=1, keep=keep)",
      "            mean, _ = mean_and_sem(s[name], axis=1, keep=keep)\n"
      "            sem = np.std(s[name], axis=1) / np.sqrt(np.shape(s[name])[1])",
      "the stored standard errors of the classification errors use std(ddof=0) (too small by √(T/(T − 1)))",
      ("tests/test_channel_experiment.py::test_probit_run_stores_the_channel_and_the_classification_errors",)),
    # ---------------------------------------------------------------- I/O and stored numbers
    M("io-equilibrium-universal-mmse", "replica/workflow/io.py",
      "        for key, val in result.equilibrium.items():\n            _write_array(ge, key, val)",
      "        for key, val in result.equilibrium.items():\n"
      "            _write_array(ge, key, result.branches[\"universal\"][\"mmse\"] if key == \"mmse\" else val)",
      "the file's /equilibrium/mmse is the universal branch's error, not the equilibrium's",
      ("tests/test_roundtrip.py::test_deep_sweep_roundtrip", "tests/test_roundtrip.py::test_shallow_sweep_roundtrip",
       "tests/test_plotting_values.py")),
    M("plot-metastable-as-equilibrium", "replica/workflow/plotting.py",
      "is_eq = np.isin(alpha, eq_alpha[eq_branch == name]) & ok",
      "is_eq = ok",
      "replica-plot draws metastable parts of branches as the equilibrium curve",
      ("tests/test_plotting_values.py",)),
    M("io-readout-weights", "replica/workflow/io.py",
      '_write_array(gb, "readout_weights", result.readout_weights)',
      '_write_array(gb, "readout_weights", result.readout_values)',
      "stored readout weights are the readout values (invisible for v ≡ 1)",
      ("tests/test_roundtrip.py::test_deep_sweep_roundtrip",)),
    M("io-phase-lines-reader-any-kind", "replica/workflow/io.py",
      'with open_h5(path, option=option, kinds=("phase_lines",)) as h5:',
      "with open_h5(path, option=option) as h5:",
      "read_phase_lines reads any result file and fails on a missing key instead of naming the file's kind",
      ("tests/test_newcomer_defects_2.py::test_phase_lines_writer_and_reader_raise_as_documented",)),
    M("provenance-build-revision-ignored", "replica/__init__.py",
      'recorded = here / "_build_revision.txt"',
      'recorded = here / "_revision.txt"',
      "an installed copy ignores the revision its build recorded and reports unknown",
      ("tests/test_newcomer_defects_2.py::test_a_built_package_reports_the_revision_it_was_built_from",)),
    M("labelled-end-points-dropped", "replica/continuation/curves.py",
      "curve.trail.append((mid, got))  # later solves near the end start from here",
      "pass",
      "a profile-solver curve forgets the points of the bisection that located its end: its free entropy "
      "between the fold and the next grid point is lost and the equilibrium change located on the grid",
      ("tests/test_readout_families.py::test_located_equilibrium_change_of_a_many_atom_law_does_not_depend_on_the_grid",)),
    M("spectral-engine-eager", "hciz/symmetric.py",
      "        self._table = None\n",
      "        self._table = self._engine and None\n",
      "the symmetric channel builds its spectral engine of S⁰ at construction, also where μ₂ = 0 never uses it",
      ("tests/test_no_idle_tables.py::test_odd_activation_sweep_builds_no_hciz_table",)),
    M("phase-diagram-branch-column", "replica/workflow/phase_diagram.py",
      'data[f"mmse_{b}"][j] = rec["mmse"]',
      'data[f"mmse_{b}"][j] = ln["mmse"]',
      "the per-branch mmse columns of a phase diagram hold the equilibrium error",
      ("tests/test_roundtrip.py::test_phase_diagram_roundtrip",)),
    M("spectrum-iota-convention", "replica/workflow/spectrum.py",
      '"iota": result.mutual_information}',
      '"iota": 2.0 * result.mutual_information}',
      "replica-spectrum stores ι = ½∫mmse (rectangular convention) instead of ¼∫mmse_S (I-MMSE of §4.1)",
      ("tests/test_spectrum.py::test_i_mmse_by_finite_differences",
       "tests/test_roundtrip.py::test_spectrum_roundtrip_and_command_line")),
    M("experiment-alpha-column", "replica/workflow/experiment_io.py",
      'group.create_dataset("alpha", data=np.asarray(result.alpha, float))',
      'group.create_dataset("alpha", data=np.asarray(result.num_samples, float))',
      "experiment files store n instead of α = n/d² on the α axis",
      ("tests/test_roundtrip.py::test_experiment_roundtrip",)),
    M("sgd-alpha-normalization", "replica/simulations/sgd.py",
      '"alpha": n / d ** 2,',
      '"alpha": n / d,',
      "SGD runs record α = n/d instead of n/d² (time conventions of the SGD closure)",
      ("tests/test_roundtrip.py::test_sgd_roundtrip",)),
    M("measurement-full-gibbs-error", "replica/simulations/measurements.py",
      "error = float(np.mean(squared) if point_estimate else 0.5 * np.mean(squared))",
      "error = float(np.mean(squared))",
      "samplers report the full Gibbs error instead of half of it (mmse convention of docs/theory.md §1)",
      ("tests/test_simulations_measurements.py::test_measure_chain_statistics",)),
    # ---------------------------------------------------------------- equilibrium and transitions
    M("branches-equilibrium-universal-mmse", "replica/continuation/equilibrium.py",
      "                values[k][better] = b[k][better]",
      "                values[k][better] = (branches[\"universal\"][k] if k == \"mmse\" else b[k])[better]",
      "the equilibrium error is taken from the universal branch whatever branch is chosen",
      ("tests/test_roundtrip.py::test_shallow_sweep_roundtrip",)),
    M("branches-equilibrium-smallest-free-entropy", "replica/continuation/equilibrium.py",
      "better = ok & (f > best)",
      "better = ok & ((f > best) if bname == \"universal\" else (f < best))",
      "the equilibrium is not the branch of largest free entropy",
      ("tests/test_shallow_specialization.py::test_equilibrium_is_the_branch_of_largest_free_entropy",
       "tests/test_roundtrip.py::test_shallow_sweep_roundtrip")),
    M("branches-crossing-stale-universal", "replica/continuation/equilibrium.py",
      "                return float(sq.free_entropy) - float(sp.free_entropy), slope\n",
      "                return float(sq.free_entropy) - fe(cp, a_left), slope\n",
      "α_c solves f_new(α) = f_old(α_grid) with a stale free entropy of the old branch: not the crossing",
      ("tests/test_transitions_contract.py::test_thermodynamic_transition_is_the_free_entropy_crossing",)),
    M("branches-spinodal-loose-bisection", "replica/continuation/stepper.py",
      "            if h < active().min_step * max(1.0, abs(a)):\n",
      "            if h < 1e7 * active().min_step * max(1.0, abs(a)):\n",
      "a branch end (fold, α_sp) is located only to ~1e-2 (not where the branch appears)",
      ("tests/test_transitions_contract.py::test_spinodal_is_where_the_branch_appears",)),
    M("branches-stability-smallest-eigenvalue", "replica/continuation/operators.py",
      "    return float(np.max(ev.real))\n",
      "    return float(np.min(ev.real))\n",
      "the stored stability is the smallest, not the leading, eigenvalue of the Jacobian",
      ("tests/test_branches.py::test_relu_universal_instability_matches_the_linear_criterion",
       "tests/test_branches.py::test_universal_stability_is_the_linearized_map")),
    M("ruling-universal-only-ignored", "replica/models/shallow.py",
      '        if g_zero and getattr(self.weight_prior, "name", "") == "gaussian":\n',
      '        if False and g_zero and getattr(self.weight_prior, "name", "") == "gaussian":\n',
      "g ≡ 0 with Gaussian weights offers Q > 0 branches below the Bayes-optimal (Maillard) error",
      ("tests/test_branches.py::test_quadratic_activation_with_gaussian_weights_is_universal_only",)),
    # ---------------------------------------------------------------- engine
    M("engine-first-component-only", "replica/engine.py",
      "        scaled = residual(x, fx)\n",
      "        scaled = residual(x[:1], fx[:1])\n",
      "convergence declared when only the first order parameter has converged",
      ("tests/test_engine_contract.py",)),
    M("engine-damping-swapped", "replica/engine.py",
      "x = damping * x + (1.0 - damping) * fx",
      "x = (1.0 - damping) * x + damping * fx",
      "the damping weight multiplies the new iterate instead of the old one",
      ("tests/test_engine_contract.py",)),
    M("engine-nan-first-component", "replica/engine.py",
      "        if not np.all(np.isfinite(fx)):\n            return FixedPointResult(x, False, \"nan\"",
      "        if not np.isfinite(fx[0]):\n            return FixedPointResult(x, False, \"nan\"",
      "a NaN in a later order parameter is not reported as a failure",
      ("tests/test_engine_contract.py",)),
    # ---------------------------------------------------------------- two hidden layers (§6.2)
    M("two-layer-product-coefficient", "replica/models/two_layer.py",
      "r21 = np.maximum(alpha * self.a * self.v2 * g2p / (gam2 * D), 0.0)",
      "r21 = np.maximum(alpha * self.b * self.v2 * g2p / (gam2 * D), 0.0)",
      "second layer's linear coefficient b in the product-overlap equation (stationarity needs a)",
      ("tests/test_two_layer_activations.py::test_free_entropy_is_stationary_in_every_order_parameter",
       "tests/test_two_layer_activations.py::test_linear_first_layer_reduces_to_the_product_channel")),
    M("two-layer-inner-coefficient", "replica/models/two_layer.py",
      "inner = self.a * q21 + q2 @ (self.s_weights * g1q)",
      "inner = self.b * q21 + q2 @ (self.s_weights * g1q)",
      "the product is seen through the second layer's linear part in the kernel",
      ("tests/test_two_layer_activations.py::test_free_entropy_is_stationary_in_every_order_parameter",
       "tests/test_two_layer_activations.py::test_linear_first_layer_reduces_to_the_product_channel")),
    M("two-layer-first-layer-gap", "replica/models/two_layer.py",
      "gap1 = self.b * float(self.s_weights @ (self.s2 * (self.g1_one - g1q)))",
      "gap1 = self.a * float(self.s_weights @ (self.s2 * (self.g1_one - g1q)))",
      "first layer's non-linear part is scaled by its own μ₁² instead of the second layer's",
      ("tests/test_two_layer_activations.py::test_universal_branch_learns_only_the_linear_parts",)),
    M("two-layer-q1hat-gamma2", "replica/models/two_layer.py",
      "q1_hat = alpha / gam1 * g1p * (self.b * self.s2 + vg @ q2) / D",
      "q1_hat = alpha / gam2 * g1p * (self.b * self.s2 + vg @ q2) / D",
      "first-layer kernel derivative divided by γ₂ instead of the γ₁d² entries of W₁",
      ("tests/test_two_layer_activations.py::test_linear_second_layer_reduces_to_one_hidden_layer_on_s",
       "tests/test_two_layer_activations.py::test_free_entropy_is_stationary_in_every_order_parameter")),
    M("two-layer-q2hat-gain", "replica/models/two_layer.py",
      "+ np.outer(gain, q1) / gam1",
      "+ np.outer(gain, q1) / gam2",
      "rectangular-channel term of Q̂₂ divided by the wrong width",
      ("tests/test_two_layer_activations.py::test_free_entropy_is_stationary_in_every_order_parameter",)),
    M("cli-second-activation-ignored", "replica/models/__init__.py",
      "acts = list(r.activations) if len(r.activations) == 2 else r.activations[0]",
      "acts = r.activations[0]",
      "--activation tanh2,erf silently uses tanh2 in both layers",
      ("tests/test_two_layer_activations.py::test_build_model_takes_one_activation_per_layer",)),
    # ---------------------------------------------------------------- one hidden layer (§5)
    M("shallow-R2hat-factor", "replica/models/shallow.py",
      "R2_hat_new = alpha * self.mu2**2 / D",
      "R2_hat_new = alpha * self.mu2**2 / (2.0 * D)",
      "conjugate of R₂ off by ½ in the iteration (the universal branch is solved apart)",
      ("tests/test_shallow_specialization.py::test_specialized_solution_is_stationary",)),
    M("shallow-qhat-without-readout", "replica/models/shallow.py",
      "Qh = (alpha / self.gamma) * self.v2 * g_prime / D",
      "Qh = (alpha / self.gamma) * g_prime / D",
      "Q̂(v) loses its v² factor (invisible for v ≡ 1)",
      ("tests/test_shallow_specialization.py::test_specialized_solution_is_stationary",)),
    M("shallow-tilt-gain-gamma", "replica/models/shallow.py",
      "Qh = Qh + self.tilt_gain(tau, R2_hat) / self.gamma * self.v2 * Q",
      "Qh = Qh + self.tilt_gain(tau, R2_hat) * self.v2 * Q",
      "HCIZ term of Q̂(v) without its 1/γ",
      ("tests/test_shallow_specialization.py::test_specialized_solution_is_stationary",)),
    M("shallow-free-entropy-R2-term", "replica/models/shallow.py",
      "+ (self.R_d - R2) * R2_hat / (4 * alpha)",
      "+ (self.R_d - R2) * R2_hat / (2 * alpha)",
      "R₂ R̂₂ term of f off by 2",
      ("tests/test_shallow_universal.py::test_universal_branch_is_stationary",)),
    # ---------------------------------------------------------------- deep (§6.1)
    M("deep-chain-rule", "replica/models/deep.py",
      "B = B * gpe * q",
      "B = B * gpe",
      "kernel derivative of inner layers misses a factor of the chain rule (L ≥ 3)",
      ("tests/test_deep.py::test_free_entropy_is_stationary",)),
    M("s-panels-no-moment-matching", "replica/models/two_layer.py",
      "    return s, p * (c0 + c1 * s * s)\n",
      "    return s, p / p.sum()\n",
      "the composite rule in s loses E s² = 1 (5e-3 at one panel): the universal branch depends on the rule",
      ("tests/test_two_layer.py::test_universal_branch_is_the_same_on_every_s_rule",)),
    M("one-layer-potential-gain-factor", "replica/readout_grid.py",
      "                + gain * s * q * q / (4.0 * alpha))",
      "                + gain * s * q * q / (2.0 * alpha))",
      "per-neuron free entropy with the wrong factor of the τ-channel term: the front is not at equal potential",
      ("tests/test_readout_grid.py::test_equal_potential_front_is_the_stationary_point_of_largest_f",)),
    M("two-layer-profile-c-without-gain", "replica/models/_two_layer_kernels.py",
      "        c += (gp * cA[v] + cW[v]) * h",
      "        c += (gp * cA[v]) * h",
      "the profile curve s² = T(r) misses the product channel's feedback (γ₂/γ₁) E_v[w Q₂] in Q̂₁",
      ("tests/test_two_layer_profile.py::test_every_neuron_solves_its_conjugate_equations",)),
    M("two-layer-profile-spinodal-front", "replica/models/_two_layer_kernels.py",
      "        threshold = front(r, T, minima, maxima, rmin, lmax, onset, scan_base, curve, pot, act1, p1, p2)",
      "        threshold = 0.0",
      "the layer-1 front at the spinodal (largest roots) instead of the equal-potential point: a metastable state",
      ("tests/test_two_layer_profile.py::test_envelope_identity_in_alpha",)),
    M("s-grid-auto-stops-early", "replica/models/_common.py",
      "        if worst <= target:\n            break\n",
      "        if worst <= 10 * target:\n            break\n",
      "--s-grid auto accepts a rule whose doubled grid changes mmse/f by up to 1e-2 (target 1e-3)",
      ("tests/test_two_layer.py::test_converged_s_grid_agrees_with_a_4x_finer_grid",)),
    M("fold-by-bisection-only", "replica/continuation/stepper.py",
      "                    got = refine_fold(model, accepted, direction, solve_kw)",
      "                    got = None",
      "folds located by bisection of the step only: the end is the last point the corrector reached",
      ("tests/test_branches.py::test_a_located_fold_is_a_saddle_node_of_the_map",)),
    M("crossing-envelope-slope-sign", "replica/continuation/events.py",
      "    return -(f - psi) / float(alpha)",
      "    return (f - psi) / float(alpha)",
      "the envelope slope df/dα of the crossing's Newton steps has the wrong sign",
      ("tests/test_two_layer_profile.py::test_envelope_identity_in_alpha",)),
    M("same-sheet-two-levels", "replica/continuation/curves.py",
      "    if relabel is None or alpha is None or not d < active().relabel_distance:",
      "    if True:",
      "one sheet solved on two rule levels becomes two branches (or the longer one is dropped)",
      ("tests/test_two_layer_profile.py::test_one_sheet_solved_on_two_rule_levels_is_one_branch",)),
    M("fold-not-checked-singular", "replica/continuation/folds.py",
      "    return best if best is not None and is_singular(model, best[0], best[1].x) else None",
      "    return best",
      "a turn of the parabola fit accepted as a fold: a branch ends where the curve goes on",
      ("tests/test_fold_refinement.py",
       "tests/test_two_layer_profile.py::test_one_sheet_solved_on_two_rule_levels_is_one_branch")),
    M("sheet-between-grid-points-dropped", "replica/continuation/curves.py",
      "    if not curve.results and not all(e.kind in (\"fold\", \"bifurcation\") for e in curve.ends.values()):",
      "    if not curve.results:",
      "a branch that lives between two grid points is dropped: the equilibrium change into it is lost",
      ("tests/test_two_layer_profile.py::test_a_sheet_between_two_grid_points_still_sets_the_equilibrium",)),
    M("neuron-maps-at-s-not-s2", "replica/models/_two_layer_profile.py",
      "        _, n1, _, _, n2 = self._roots(e[\"profile\"], m.neuron_s**2, e[\"threshold\"])",
      "        _, n1, _, _, n2 = self._roots(e[\"profile\"], m.neuron_s, e[\"threshold\"])",
      "the per-neuron maps read each neuron's root at |s| instead of s²: not the neuron at that quantile",
      ("tests/test_two_layer_profile.py::test_per_neuron_maps_are_each_neurons_own_fixed_point",)),
    M("neuron-quantiles-wrong-tail", "replica/models/_common.py",
      "    return u, math.sqrt(2.0) * special.erfcinv(u)",
      "    return u, math.sqrt(2.0) * special.erfcinv(1.0 - u)",
      "neuron quantiles counted from the weakest readout: the maps' axis is not the fraction of stronger neurons",
      ("tests/test_two_layer_profile.py::test_per_neuron_maps_are_each_neurons_own_fixed_point",)),
    M("cross-fit-measured-on-the-fitted-half", "replica/simulations/measurements.py",
      "            products[:, measure] = w[match][:, measure] * w0[:, measure]",
      "            products[:, fit] = w[match][:, fit] * w0[:, fit]",
      "the matched overlap measured on the coordinates that chose the matching: biased upwards again",
      ("tests/test_simulations_measurements.py::test_cross_fitted_overlaps_are_zero_between_independent_networks",)),
    M("transitions-spinodal-below-grid", "replica/continuation/equilibrium.py",
      "alpha_sp = float(min(starts_)) if starts_ and not target(first) else math.nan",
      "alpha_sp = float(min(starts_)) if starts_ else math.nan",
      "a grid that starts past the transition reports the birth of a later branch as the spinodal",
      ("tests/test_transitions_contract.py::test_no_spinodal_reported_when_the_grid_starts_past_the_transition",)),
    M("io-matrix-axes-ignored", "replica/workflow/io.py",
      "            _attach_scales(gb, alpha, rv, sv, axes or {}, coordinates=tuple(grids or ()))",
      "            _attach_scales(gb, alpha, rv, sv, coordinates=tuple(grids or ()))",
      "L ≥ 3 matrices stored with unlabelled axes: the branch groups no longer open with xarray",
      ("tests/test_deep_linear.py::test_every_branch_group_opens_with_xarray",)),
    M("deep-linear-tilt-weight", "replica/models/deep_linear.py",
      "            ratio = self.entries[P] / self.entries[X]\n",
      "            ratio = 1.0\n",
      "L ≥ 3: the tilt of a product feeds back into its factors' conjugates without the ratio of "
      "their numbers of entries (γ's)",
      ("tests/test_deep_linear.py::test_free_entropy_is_stationary_in_every_order_parameter",)),
    # ---------------------------------------------------------------- spectral integrals (§4)
    M("symmetric-mmse-constant", "hciz/symmetric.py",
      "_FOUR_PI2_3 = 4.0 * np.pi ** 2 / 3.0",
      "_FOUR_PI2_3 = np.pi ** 2 / 3.0",
      "mmse_S(λ) = (1 − (4π²/3)∫ρ³)/λ with the wrong constant",
      ("tests/test_hciz_symmetric.py::test_reference_tables_direct",)),
    M("rectangular-inverse-moment-term", "hciz/rectangular.py",
      "k = 0.5 * (self.r1 - 1.0)",
      "k = (self.r1 - 1.0)",
      "the ((R1 − 1)²/4) E_ν[1/t] term of the rectangular MMSE off by 4",
      ("tests/test_hciz_rectangular.py::test_mmse_equivalent_forms",
       "tests/test_hciz_rectangular.py::test_against_published_analytic_curves")),
    M("rectangular-high-snr-rank", "hciz/rectangular.py",
      "    r = min(1.0, min(_inner_tuple(r2)))\n    return r * (1.0 + r1 - r) / r1",
      "    r = min(_inner_tuple(r2))\n    return r * (1.0 + r1 - r) / r1",
      "large-λ coefficient ignores that the rank of S is min(M, N, P)",
      ("tests/test_hciz_rectangular.py::test_small_noise_limit",)),
    M("product-channel-one-inner-factor", "hciz/rectangular.py",
      "        inner = vals[..., 3:]\n",
      "        inner = vals[..., 3:4]\n",
      "a product of p ≥ 3 Gaussian factors keeps only its first inner factor in the root polish "
      "(S-transform not the product of the factors' S-transforms)",
      ("tests/test_hciz_product.py",)),
    M("rectangular-iota-factor", "hciz/rectangular.py",
      'tab["iota_one"] = 0.5 * (1.0 - tab["int_small"] - tab["ia"].scalar(0.0))',
      'tab["iota_one"] = 0.25 * (1.0 - tab["int_small"] - tab["ia"].scalar(0.0))',
      "ι_rect is not ½∫mmse above λ = 1 (I-MMSE)",
      ("tests/test_hciz_rectangular.py::test_i_mmse_relation",)),
    M("rectangular-transitions-lazy", "hciz/rectangular.py",
      "        self.tables  # noqa: B018 - builds or loads the tables, which set the transitions\n",
      "",
      "channel.transitions is None until another call builds the tables",
      ("tests/test_hciz_rectangular.py::test_transitions_are_built_on_first_access",)),
    # ---------------------------------------------------------------- priors and activations
    M("gaussian-prior-free-entropy", "priors/weight_priors.py",
      "return 0.5 * r - 0.5 * np.log1p(r)",
      "return 0.5 * r - np.log1p(r)",
      "ψ of the Gaussian prior breaks ψ'(r) = m(r)/2",
      ("tests/test_priors.py::test_i_mmse_free_entropy_derivative_is_half_overlap",)),
    M("activation-g-keeps-quadratic", "replica/activations.py",
      "return set(self.drop_hermite) | {0, 1, 2}",
      "return set(self.drop_hermite) | {0, 1}",
      "g(q) keeps the degree-2 Hermite term (it belongs to the HCIZ part)",
      ("tests/test_activations.py::test_g_matches_hermite_series_for_small_q",)),
    # ---------------------------------------------------------------- SGD closure
    M("closure-noise-pair-rate", "replica/simulations/closure.py",
      "d_u = self.mu * (source - 2.0 * self.beta * y[self.n:])",
      "d_u = self.mu * (source - self.beta * y[self.n:])",
      "the SGD-noise part of tr(S − S⁰)² relaxes at βμ instead of 2βμ (noise floor doubled)",
      ("tests/test_closure.py::test_noise_floor_of_the_riccati_flow_has_its_closed_form",
       "tests/test_closure.py::test_noisy_riccati_flow_matches_the_matrix_sde")),
    M("closure-no-radial-pull", "replica/simulations/closure.py",
      "d_q = 2 * lr * (av[\"radial\"] * r_b - av[\"force\"])",
      "d_q = -2 * lr * av[\"force\"]",
      "free-norm closure: the Itô growth of the common-mode noise is not undone by the linear residual",
      ("tests/test_closure.py::test_linear_activation_keeps_its_norm",
       "tests/test_closure.py::test_tanh_norm_decay_follows_sgd")),
    M("closure-escape-one-pair-drift", "replica/simulations/closure.py",
      "drift_nl = eta * _sphere_drift(m, np.interp(m, grid_q, gp_table))",
      "drift_nl = eta * (1 - m ** 2) * np.interp(m, grid_q, gp_table)",
      "escape model: only the escaping cosine's own pull is projected on the student's sphere",
      ("tests/test_closure.py::test_escape_model_specialization_time_against_sgd",)),
    M("closure-isotropic-noise", "replica/simulations/closure.py",
      "source = (noise + structured * self.sg * self.mu) * factor",
      "source = (noise + structured) * factor",
      "the SGD noise of the quadratic part treated as isotropic (no row covariance along G)",
      ("tests/test_closure.py::test_quadratic_activation_noise_floor_at_large_lr",)),
    M("closure-bulk-fourth-factor", "replica/simulations/closure.py",
      "return mu4 ** 2 / 8 * k * (1.0 / dim ** 2 + v_s ** 2 - 2 * w2 ** 2)",
      "return mu4 ** 2 / 24 * k * (1.0 / dim ** 2 + v_s ** 2 - 2 * w2 ** 2)",
      "ε₄ without the Gaussian fourth moment 3w⁴ (μ₄²/24 instead of μ₄²·3/24)",
      ("tests/test_closure.py::test_degree_four_bulk_term_matches_the_dual_kernel_sums",)),
    M("closure-no-mu4-radial-force", "replica/simulations/closure.py",
      "radial = 1.0 + mu4 / (2.0 * mu2)",
      "radial = 1.0",
      "the radial force μ₄(uᵀAu)u of the quadratic residual is dropped (constant-mode error 5 × too large for ReLU)",
      ("tests/test_closure.py::test_constant_mode_residual_matches_the_student_norm_offset_in_sgd",)),
    M("closure-refinement-noise-keeps-mu2", "replica/simulations/closure.py",
      'g_prime, nu_rot = coef["g_prime"], coef["nu1"] - coef["mu1"] ** 2 - coef["mu2"] ** 2',
      'g_prime, nu_rot = coef["g_prime"], coef["nu1"] - coef["mu1"] ** 2',
      "refinement: the μ₂² part of the SGD noise (restored by the quadratic part) still rotates a matched pair",
      ("tests/test_closure.py::test_refinement_fixed_point_matches_specialized_sgd",)),
    M("closure-no-cosine-mean-cubic", "replica/simulations/closure.py",
      "return -float(a3_mu3) * float(mean_k) * float(width2)",
      "return 0.0",
      "the degree-3 term of the mean teacher–student cosine (fixed by the linear part) is dropped",
      ("tests/test_closure.py::test_cosine_mean_cubic_term_matches_the_dual_kernel_sums",)),
    M("closure-no-mean-row-quadratic", "replica/simulations/closure.py",
      "return -max(0.0, float(quad) - mu2 ** 2 * (1.0 - float(linear_overlap) ** 2)) / k",
      "return 0.0",
      "the rank-one mean-row part of S − S⁰, aligned by the linear mode at rate O(k), is dropped",
      ("tests/test_closure.py::test_early_drop_of_the_quadratic_error_follows_sgd",)),
    M("closure-quasi-static-constant-mode", "replica/simulations/closure.py",
      "f[2] = -lr * k * mu2 ** 2 * (y[2] - target)",
      "f[2] = -100 * lr * k * mu2 ** 2 * (y[2] - target)",
      "the constant-mode residual relaxes 100 × faster than ηkμ₂², i.e. sits at the balance of the radial forces",
      ("tests/test_closure.py::test_constant_mode_builds_up_at_its_relaxation_rate_in_sgd",)),
    M("closure-constant-mode-steady-lms", "replica/simulations/closure.py",
      "tau = theta_dot * radial + lr * coef[\"h3\"] - lr * (mu1 + mu3) * r_b\n"
      "        if noise:\n            tau -= 0.5 * lr ** 2 * e2 * nu1",
      "tau = theta_dot * radial + lr * coef[\"h3\"]\n"
      "        if noise:\n            tau -= 0.5 * lr ** 2 * e2 * (nu1 - mu1 ** 2)",
      "constant mode: the linear residual's radial pull replaced by its LMS steady state (μ₃ part and transient lost)",
      ("tests/test_closure.py::test_constant_mode_builds_up_at_its_relaxation_rate_in_sgd",)),
    M("closure-noise-in-self-trace", "replica/simulations/closure.py",
      "return traces[0] - 0.5 * self.noise_error(y), traces[1]",
      "return traces[0], traces[1] + self.noise_error(y)",
      "the SGD noise raises tr S²/d instead of lowering tr SS⁰/d (pinned norms)",
      ("tests/test_closure.py::test_noisy_riccati_flow_matches_the_matrix_sde",)),
    # ---------------------------------------------------------------- figures (tests/figure_checks.py)
    M("plot-legend-raw-reference-name", "replica/workflow/plotting.py",
      '"label": reference_label(column, table_.meta, f"{path.stem}: {column}")}',
      '"label": f"{path.parent.name}: {column}"}',
      "published curves are labelled with the raw folder and column names (barbier2025_shallow: info_mean)",
      ("tests/test_figure_properties.py::test_published_curves_are_named_in_words",)),
    M("plot-equilibrium-on-grid-points-only", "replica/workflow/plotting.py",
      "        pieces = _equilibrium_pieces(name, alpha, mmse, ok, is_eq, located)",
      "        pieces = [(alpha[s], mmse[s]) for s in _segments(is_eq)]",
      "the equilibrium curve is drawn through grid points only: gaps in α around every change of branch",
      ("tests/test_figure_properties.py::test_replica_plot_figures_have_the_figure_properties",)),
    M("plot-phase-diagram-below-zero", "replica/workflow/plotting.py",
      "        edges = _cell_edges(values, lower=0.0, log=logy)",
      "        edges = _cell_edges(values, lower=None, log=logy)",
      "the phase diagram's Δ axis runs below 0 (the first row's cell)",
      ("tests/test_figure_properties.py::test_replica_plot_figures_have_the_figure_properties",)),
    M("plot-style-not-applied", "replica/workflow/style.py",
      "    with as_file(style_path()) as path, matplotlib.style.context(str(path)):",
      "    with as_file(style_path()) as path:",
      "the figures are drawn in matplotlib's default style, not the package style file",
      ("tests/test_figure_properties.py::test_replica_plot_figures_have_the_figure_properties",
       "tests/test_figure_properties.py::test_sgd_figures_have_the_figure_properties")),
    # ---------------------------------------------------------------- every stored number (issue 32, item 5)
    M("mi-one-layer-per-gamma", "replica/models/shallow.py",
      "return self.mutual_information_from(alpha / self.gamma, free_entropy)",
      "return self.mutual_information_from(alpha * self.gamma, free_entropy)",
      "mutual information per weight scaled by αγ instead of α/γ (positive, infinite at Δ = 0: only its sign was checked)",
      ("tests/test_stored_datasets.py::test_mutual_information_obeys_the_i_mmse_relation_in_alpha[one-layer-relu]",)),
    M("mi-two-layer-weight-count", "replica/models/two_layer.py",
      "alpha / (gam1 + gam1 * gam2)",
      "alpha / (gam1 + gam2)",
      "two hidden layers: W₂ counted as γ₂d² weights instead of γ₁γ₂d² in the mutual information per weight",
      ("tests/test_stored_datasets.py::test_mutual_information_obeys_the_i_mmse_relation_in_alpha[two-layer]",)),
    M("mi-deep-first-layer-only", "replica/models/deep.py",
      "mi = self.mutual_information_from(alpha / self.layer_sizes.sum(), f)",
      "mi = self.mutual_information_from(alpha / self.layer_sizes[0], f)",
      "deep networks: mutual information per first-layer weight instead of per weight",
      ("tests/test_stored_datasets.py::test_mutual_information_obeys_the_i_mmse_relation_in_alpha[deep-L2]",)),
    M("mi-deep-linear-sum-of-gammas", "replica/models/deep_linear.py",
      "return self.mutual_information_from(alpha / self.weights_per_d2, free_entropy)",
      "return self.mutual_information_from(alpha / sum(self.gammas), free_entropy)",
      "L ≥ 3: weights per d² counted as Σγ_ℓ instead of Σγ_ℓγ_{ℓ−1} in the mutual information",
      ("tests/test_stored_datasets.py::test_mutual_information_obeys_the_i_mmse_relation_in_alpha[deep-linear-L3]",)),
    M("equilibrium-drops-infinite-free-entropy", "replica/continuation/equilibrium.py",
      'ok = b["exists"] & b["converged"] & (np.isfinite(f) | np.isposinf(f))',
      'ok = b["exists"] & b["converged"] & np.isfinite(f)',
      "a branch with f = +∞ (perfect recovery at Δ = 0) is never the equilibrium: NaN error, f = −∞ stored",
      ("tests/test_stored_datasets.py::test_equilibrium_takes_an_infinite_free_entropy",)),
    M("one-layer-stored-conjugate-without-v2", "replica/models/shallow.py",
      'overlap_W_hat=c["overlap_W_hat"],',
      'overlap_W_hat=c["overlap_W_hat"] / self.v2,',
      "the stored Q̂(v) loses its v² factor (the map is right, the file is not; invisible for v ≡ 1)",
      ("tests/test_stored_datasets.py::test_one_hidden_layer_branch_points_are_fixed_points_with_their_stored_fields",)),
    M("deep-stored-conjugate-is-overlap", "replica/models/deep.py",
      'rec[f"overlap_hat_layer_{ell}"] = qh',
      'rec[f"overlap_hat_layer_{ell}"] = q',
      "deep networks store the overlap Q_ℓ as its conjugate Q̂_ℓ",
      ("tests/test_stored_datasets.py::test_deep_branch_points_are_fixed_points_with_their_stored_fields",)),
    M("deep-linear-stored-conjugate-is-overlap", "replica/models/deep_linear.py",
      'rec[f"overlap_hat_{tag}"] = self._stored(self.overlap_hats[(ell, m)])',
      'rec[f"overlap_hat_{tag}"] = self._stored(self.overlaps_by_matrix[(ell, m)])',
      "L ≥ 3 stores the overlaps of every matrix as their conjugates",
      ("tests/test_stored_datasets.py::test_deep_linear_branch_points_are_fixed_points_with_their_stored_fields[starts]",)),
    M("two-layer-stored-conjugate-is-overlap", "replica/models/two_layer.py",
      '"overlap_layer_1": self.overlap_layer_1, "overlap_hat_layer_1": self.overlap_hat_layer_1,',
      '"overlap_layer_1": self.overlap_layer_1, "overlap_hat_layer_1": self.overlap_layer_1,',
      "two hidden layers store Q₁(s) as its conjugate Q̂₁(s)",
      ("tests/test_stored_datasets.py::test_two_layer_branch_points_are_fixed_points_with_their_stored_fields[starts]",)),
    M("change-error-before-from-the-new-branch", "replica/continuation/equilibrium.py",
      "before, after = state(by_name[frm], alpha), state(by_name[to], alpha)",
      "before, after = state(by_name[to], alpha), state(by_name[to], alpha)",
      "equilibrium_changes/mmse_before is the error of the branch the equilibrium goes to",
      ("tests/test_stored_datasets.py::test_equilibrium_change_errors_are_the_branches_solved_again_at_the_change",)),
    M("phase-diagram-alpha-c-is-spinodal", "replica/workflow/phase_diagram.py",
      '"alpha_c": float(res.transitions.get("alpha_c", math.nan)),',
      '"alpha_c": float(res.transitions.get("alpha_sp", math.nan)),',
      "the α_c line of a phase diagram holds the spinodal α_sp (the file is self-consistent, the physics is not)",
      ("tests/test_stored_datasets.py::test_phase_diagram_transition_lines_and_columns_are_recomputed",)),
    M("phase-diagram-instability-line-lost", "replica/workflow/phase_diagram.py",
      '"alpha_instability": float(res.branch_transitions.get("universal", {}).get("alpha_instability", math.nan)),',
      '"alpha_instability": float(res.branch_transitions.get("universal", {}).get("alpha_end", math.nan)),',
      "the α_instability line of a phase diagram is read under the wrong key: NaN on every line",
      ("tests/test_stored_datasets.py::test_phase_diagram_instability_line_is_the_linear_criterion",)),
    M("api-model-accepts-sign-with-noise", "replica/models/_output.py",
      "    if delta is not None and output_channel.name in OUTPUT_CHANNELS and float(delta) != output_channel.delta:",
      "    if False:",
      "ShallowModel(…, delta=0.1, output_channel=sign_channel()) solves at Δ = 0 where replica-sweep refuses",
      ("tests/test_stored_datasets.py::test_the_api_refuses_what_the_command_line_refuses[sign-with-delta-model]",)),
    M("api-channel-ignores-delta", "priors/output_channels.py",
      'if "delta" not in takes and delta not in (None, 0, 0.0):',
      'if False:',
      "get_output_channel('sign', delta=0.1) returns a noiseless channel where replica-sweep refuses",
      ("tests/test_stored_datasets.py::test_the_api_refuses_what_the_command_line_refuses[sign-with-delta-channel]",)),
    M("sgd-quadratic-overlap-not-traceless", "replica/simulations/sgd.py",
      "cross = float(readout @ (raw ** 2) @ readout) - trace * trace0 / d",
      "cross = float(readout @ (raw ** 2) @ readout)",
      "the quadratic overlap of an SGD run keeps the trace part of S = Wᵀdiag(v)W in the cross term",
      ("tests/test_stored_datasets.py::test_sgd_measurements_are_recomputed_from_the_measured_students",)),
    M("sgd-train-error-halved", "replica/simulations/sgd.py",
      "rec = measure(step, sq_sum / max(count, 1))",
      "rec = measure(step, 0.5 * sq_sum / max(count, 1))",
      "the train error of an SGD run is ½ mean e² (the loss) instead of mean e²",
      ("tests/test_stored_datasets.py::test_train_error_of_a_frozen_student_is_its_test_error_plus_delta",)),
    M("closure-noise-without-delta", "replica/simulations/closure.py",
      "        noise_out.append(e2)",
      "        noise_out.append(eps)",
      "closure/noise stores ε instead of ε + Δ (the label noise left out of the SGD noise)",
      ("tests/test_stored_datasets.py::test_closure_group_is_on_the_run_grid_and_its_noise_is_error_plus_delta",)),
    M("sgd-reference-alpha-in-time-units", "replica/workflow/sgd_results.py",
      "lo = max(t[0] * ratio, 1e-2)",
      "lo = max(t[0], 1e-2)",
      "the reference levels of an SGD file start at α = t₁ instead of (k/d) t₁",
      ("tests/test_stored_datasets.py::test_reference_levels_are_the_replica_solutions_at_their_alpha",)),
    M("experiment-r2-mean-of-replicas", "replica/simulations/experiment.py",
      'r2_mean, r2_sem = mean_and_sem(s["r2"], axis=1, keep=keep)',
      'r2_mean, r2_sem = mean_and_sem(s["replica_r2"], axis=1, keep=keep)',
      "an experiment's r2_mean averages the replica–replica R₂ (the Nishimori twin), not the teacher–sample one",
      ("tests/test_stored_datasets.py::test_experiment_averages_and_axes_are_recomputed_from_the_per_teacher_values",)),
    # ---------------------------------------------------------------- L >= 3 front-aligned rules (deep_fronts)
    M("fronts-newton-step-sign", "replica/models/deep_fronts.py",
      "step = np.clip(-dphi / np.where(steep, slope, 1.0), -(1.0 + u), 1.0 + u)",
      "step = np.clip(dphi / np.where(steep, slope, 1.0), -(1.0 + u), 1.0 + u)",
      "the front moves away from equal potential (towards the root of smaller φ)",
      ("tests/test_deep_fronts.py::test_two_layers_equal_the_profile_solver",
       "tests/test_deep_fronts.py::test_free_entropy_is_stationary_in_the_front",
       "tests/test_deep_kernels_map.py::test_compiled_map_equals_the_numpy_map")),
    M("fronts-potential-without-tilt-term", "replica/models/deep_fronts.py",
      'phi = phi + core.entries[P] / (2.0 * alpha) * np.einsum("...rk,...rj,...jk->...j", weighted,',
      'phi = phi + 0.0 * np.einsum("...rk,...rj,...jk->...j", weighted,',
      "the neuron potential forgets the products whose tilt runs through the layer",
      ("tests/test_deep_fronts.py::test_neuron_potential_is_the_weight_derivative_of_f",)),
    M("fronts-readout-grid-not-refined", "replica/models/deep_fronts.py",
      "                kw[\"readout_law\"] = continuous_readout_law(self.readout_law.law, n, default_size=n)",
      "                pass",
      "the error estimate of a continuous readout law doubles only the rules in s, not the law's grid",
      ("tests/test_deep_fronts.py::test_the_error_estimate_of_a_continuous_readout_law_doubles_its_grid",)),
    M("fronts-fold-drops-pair-weight", "replica/models/deep_fronts.py",
      "weights = np.where(vs[keep] > tol, 2.0, 1.0) * ws[keep]",
      "weights = ws[keep]",
      "a folded readout grid keeps half the weight of each pair (renormalized: the law changes)",
      ("tests/test_deep_fronts.py::test_a_symmetric_readout_grid_is_folded_onto_abs_v_exactly",)),
    M("fronts-stored-front-squared", "replica/models/deep_fronts.py",
      'rec[f"front_layer_{ell}"] = float(f)',
      'rec[f"front_layer_{ell}"] = float(f) ** 2',
      "front_layer_<l> written as s² instead of s",
      ("tests/test_deep_fronts.py::test_three_layer_sweep_defaults_to_front_rules",
       "tests/test_deep_fronts.py::test_stored_profiles_and_fronts")),
    M("file-without-architecture", "replica/workflow/io.py",
      '        h5.attrs["architecture"] = str(architecture)',
      '        pass',
      "sweep and phase-diagram files no longer name the architecture that solved them",
      ("tests/test_run.py::test_the_file_names_its_architecture_and_rule_without_a_model",
       "tests/test_run.py::test_architecture_option")),
    M("file-without-state-schema", "replica/workflow/io.py",
      '           "state_schema": None if schema is None else schema_to_json(schema)}',
      '           "state_schema": None}',
      "a sweep file does not store what its states record: plots of a new architecture lose their overlaps",
      ("tests/test_architecture.py::test_a_custom_overlap_field_gets_its_overlaps_panel",)),
    M("fronts-host-keeps-the-front", "replica/models/deep_fronts.py",
      "                fronts[ell - 1] = FRONT_MAX",
      "                pass",
      "the host point at a bifurcation keeps the front of a layer that has no learned neuron left",
      ("tests/test_matrix_free.py::test_host_of_a_partial_point_is_the_point_with_those_layers_unlearned",)),
    M("fronts-neuron-maps-ignore-the-side", "replica/models/deep_fronts.py",
      "q = _map_axis(q, axis, target, (target >= fronts[layer - 1]).astype(int), nodes, side)",
      "q = _map_axis(q, axis, target, np.zeros(target.size, int), nodes, side)",
      "the per-neuron maps read every neuron from the small-root side of the front",
      ("tests/test_deep_fronts.py::test_neuron_maps_average_to_the_label_averages_and_jump_at_the_front",)),
    M("bordered-krylov-without-border", "replica/continuation/folds.py",
      "matvec=lambda w: np.concatenate([top.matvec(w), [float(u @ np.ravel(w)[:idx.size])]]))",
      "matvec=lambda w: np.concatenate([top.matvec(w), [0.0]]))",
      "the bordered system at a fold loses its arclength row",
      ("tests/test_matrix_free.py::test_bordered_krylov_step_equals_the_dense_bordered_step",)),
    M("batched-reseed-every-row", "replica/models/deep_fronts.py",
      "                q[rows, probe, :] = q[rows, source, :]",
      "                q[:, probe, :] = q[:, source, :]",
      "a probe re-seeded in one point of a batch is re-seeded in every point",
      ("tests/test_batched_map.py::test_probe_reseeding_is_per_row",)),
    M("batched-jacobian-transposed", "replica/continuation/jacobians.py",
      "    return np.ascontiguousarray(d.T)",
      "    return np.ascontiguousarray(d)",
      "the Jacobian from one vectorized call comes out transposed",
      ("tests/test_batched_map.py::test_jacobian_from_one_call_equals_the_columns",)),
    # ---------------------------------------------------------------- compiled map of L >= 2 layers on front rules
    M("kernel-front-step-sign", "replica/models/_deep_kernels.py",
      "                step = -dphi / slope",
      "                step = dphi / slope",
      "the compiled map moves the front away from equal potential",
      ("tests/test_deep_fronts.py::test_two_layers_equal_the_profile_solver",
       "tests/test_deep_kernels_map.py::test_compiled_map_equals_the_numpy_map")),
    M("kernel-potential-without-tilt-term", "replica/models/_deep_kernels.py",
      "        phi += kfloat[P, 0] / (2.0 * alpha) * s",
      "        phi += 0.0 * s",
      "the compiled probe potential forgets the products whose tilt runs through the layer",
      ("tests/test_deep_kernels_map.py::test_compiled_map_equals_the_numpy_map",)),
    M("kernel-feedback-of-top-factor-dropped", "replica/models/_deep_kernels.py",
      "                        hat[offX + i * ncX + r] += ratio * s",
      "                        hat[offX + i * ncX + r] += 0.0 * s",
      "the compiled conjugate of a product's top factor loses the product's feedback",
      ("tests/test_deep_fronts.py::test_two_layers_equal_the_profile_solver",)),
    M("kernel-ghosts-kept", "replica/models/_deep_kernels.py",
      "                        if lside[o + row] == 1:",
      "                        if lside[o + row] == 2:",
      "the compiled map keeps neurons on the large root of a layer whose front is at its end",
      ("tests/test_deep_kernels_map.py::test_compiled_map_equals_the_numpy_map",)),
    M("kernel-tau-memo-stale", "replica/models/_deep_kernels.py",
      "                elif s == t_seen[e]:",
      "                elif t_seen[e] == t_seen[e]:",
      "the compiled map reuses the tilt inverse of another row whatever its tilt",
      ("tests/test_batched_map.py::test_rows_equal_the_map_alone",
       "tests/test_deep_kernels_map.py::test_compiled_map_equals_the_numpy_map")),
    M("kernel-near-tau-slope-dropped", "replica/models/_deep_kernels.py",
      "tau[e] = max(base[_B_TAU, e] + (s - base[_B_T, e]) * base[_B_DTAU, e], 0.0)",
      "tau[e] = base[_B_TAU, e]",
      "the rows next to a base point keep its tilt inverse when their tilt moved (dτ/dt = 1/m'(τ) dropped)",
      ("tests/test_deep_kernels_map.py::test_near_map_differs_from_the_map_by_the_square_of_the_distance",)),
    M("kernel-near-gain-tau-term-dropped", "replica/models/_deep_kernels.py",
      "                               + base[_B_DGAIN_TAU, e] * (tau[e] - base[_B_TAU, e]))",
      "                               + 0.0 * (tau[e] - base[_B_TAU, e]))",
      "the gain of a product entry next to the base point is linear in its conjugate only, not in its tilt",
      ("tests/test_deep_kernels_map.py::test_near_map_differs_from_the_map_by_the_square_of_the_distance",)),
    M("kernel-near-iota-slope-dropped", "replica/models/_deep_kernels.py",
      "i_sum = base[_B_IOTA_SUM, e] + base[_B_DIOTA_SUM, e] * (dt + (h - base[_B_HAT, e]))",
      "i_sum = base[_B_IOTA_SUM, e]",
      "the probes' potentials next to a base point keep its ι(τ + r) (2ι' = mmse dropped): the fronts move wrong",
      ("tests/test_deep_kernels_map.py::test_near_map_differs_from_the_map_by_the_square_of_the_distance",)),
    M("broyden-inverse-not-transposed", "replica/continuation/jacobians.py",
      "            self.vs.append(self._apply(np.asarray(dx, dtype=float), 1))",
      "            self.vs.append(self._apply(np.asarray(dx, dtype=float), 0))",
      "the rank-one update of the chord corrector's inverse uses H dx for dxᵀH (not the good-Broyden update)",
      ("tests/test_correctors.py::test_inverse_jacobian_follows_good_broyden_updates",)),
    M("newton-lu-no-step-halving", "replica/engine.py",
      "                    t *= 0.5",
      "                    t *= 1.0",
      "the dense Newton corrector retries the same overshooting step instead of halving it",
      ("tests/test_correctors.py::test_newton_lu_halves_a_step_that_does_not_reduce_the_residual",)),
    M("jacobian-memo-key-without-point", "replica/continuation/jacobians.py",
      "               x.tobytes())",
      "               b'')",
      "a sweep's Jacobian memo is keyed without the point: the stability of one point takes another's Jacobian",
      ("tests/test_correctors.py::test_the_memo_is_keyed_by_model_alpha_order_and_point",
       "tests/test_correctors.py::test_the_jacobian_memo_of_a_sweep_changes_no_number")),
    M("rect-table-name-rounded", "hciz/rectangular.py",
      'return f"rectangular_table_R1_{self.aspect_ratio_p!r}_{inner}_res{self.resolution}.npz"',
      'return f"rectangular_table_R1_{self.aspect_ratio_p:g}_{inner}_res{self.resolution}.npz"',
      "the shipped table of a shape is looked up under a rounded aspect ratio: never found, rebuilt at every first use",
      ("tests/test_hciz_rectangular.py::test_every_shipped_table_is_found_and_read",)),
    M("state-row-entropic-without-row-weight", "replica/models/_deep_kernels.py",
      "                               base) * lw[orow + i]",
      "                               base)",
      "the compiled free entropy of a state sums the entropic terms of every row without its label weight",
      ("tests/test_deep_kernels_map.py::test_compiled_state_equals_the_numpy_state",)),
    M("no-quadratic-part-R2-without-Rd", "replica/models/shallow.py",
      "            return (0.0 if M <= 0.0 else math.nan), M + (self.R_d - 1.0)",
      "            return (0.0 if M <= 0.0 else math.nan), M",
      "one hidden layer without a quadratic part stores R₂ = E v²Q² instead of E v²Q² + R_d − 1",
      ("tests/test_no_idle_tables.py",)),
    M("sweep-stays-on-the-saddle", "replica/continuation/seeds.py",
      "            res = escape_saddle(model, float(alphas[i]), res, start, solve_kw)",
      "            res = None",
      "a damped pass held on an unstable invariant set (exact g'(0) = 0) drops the branch behind it",
      ("tests/test_deep_kernels_map.py::test_a_sweep_finds_the_branch_behind_the_saddle",)),
    M("batched-kernel-drops-batch", "replica/models/deep_linear.py",
      "    return (M @ v[..., None])[..., 0]",
      "    return (M @ v[..., None])[0, ..., 0] if M.ndim > 2 else (M @ v[..., None])[..., 0]",
      "the forward pass of a batch uses its first point for every point",
      ("tests/test_batched_map.py::test_rows_equal_the_map_alone",
       "tests/test_batched_map.py::test_fixed_grid_model_rows")),
    # ---------------------------------------------------------------- the continuation package (issue 39)
    M("sweep-ignores-its-settings", "replica/continuation/sweep.py",
      "    with using(active() if settings is None else settings), remembered_jacobians():",
      "    with using(active()), remembered_jacobians():",
      "a sweep given other continuation settings runs with the defaults",
      ("tests/test_continuation_package.py::test_a_sweep_reads_its_settings",)),
    M("corrector-returns-none", "replica/continuation/correctors.py",
      "    if not np.all(np.isfinite(x_pred[idx])):\n        return Correction(\"not_finite\")",
      "    if not np.all(np.isfinite(x_pred[idx])):\n        return None",
      "a corrector failure comes back as None instead of a status",
      ("tests/test_continuation_package.py::test_correctors_never_return_none",)),
    M("branch-point-loose-root", "replica/continuation/branchpoints.py",
      "root = float(optimize.brentq(g, lo, hi, xtol=1e-14, rtol=active().root_rtol))",
      "root = float(optimize.brentq(g, lo, hi, xtol=1e-3, rtol=1e-3))",
      "branch points located to 1e-3 instead of by a root to 1e-12",
      ("tests/test_branch_points.py::test_branch_point_is_located_to_1e_9",)),
    M("branch-switch-without-null-vector", "replica/continuation/branchpoints.py",
      "                x[idx] += sign * scale * s.switch_offset * bp.direction",
      "                x[idx] += sign * scale * s.switch_offset * 0.0 * bp.direction",
      "branch switching does not leave the curve along its null vector: Newton returns to the curve",
      ("tests/test_branch_points.py::test_switching_lands_on_the_crossing_curve",)),
    M("branch-point-multiplicity-ignored", "replica/continuation/branchpoints.py",
      '            kind = "branch_point" if multiplicity == 1 else "degenerate_branch_point"',
      '            kind = "branch_point"',
      "a branch point where several eigenvalues cross 1 is switched along one arbitrary null vector",
      ("tests/test_branch_points.py::test_a_degenerate_branch_point_is_located_and_not_switched",)),
    M("bifurcation-end-not-snapped", "replica/continuation/branchpoints.py",
      "            if near:\n                e.alpha = min(near, key=lambda a: abs(a - e.alpha))",
      "            if near:\n                pass",
      "a large model's bifurcation end stays where the step control stopped, not at the host's branch point",
      ("tests/test_branch_points.py::test_three_layers_branch_point_is_where_the_bifurcating_branch_starts",)),
    M("phase-line-stale-model", "replica/continuation/codim2.py",
      "        got = fold_at(model_at(model, name, p), a, xs[0], side, w, solve_kw, geometry[0])",
      "        got = fold_at(model, a, xs[0], side, w, solve_kw, geometry[0])",
      "the traced spinodal line re-locates the fold on the model at the first Δ instead of at each Δ",
      ("tests/test_phase_lines.py::test_traced_spinodal_and_transition_lines_equal_the_sweeps",)),
    M("phase-line-point-at-the-wrong-value", "replica/continuation/linepoints.py",
      "        line.points.append(LinePoint(float(p), got[0], got[1]))",
      "        line.points.append(LinePoint(float(target), got[0], got[1]))",
      "a point of a traced line located at an intermediate step is recorded at the next requested value",
      ("tests/test_phase_lines.py::test_traced_spinodal_and_transition_lines_equal_the_sweeps",)),
    M("cusp-discriminant-wrong-sign", "replica/continuation/linepoints.py",
      "    return float(a2 * a2 - 3.0 * a1 * a3), (a3, a2, a1, a0)",
      "    return float(a2 * a2 + 3.0 * a1 * a3), (a3, a2, a1, a0)",
      "the cusp test of two merging folds uses the wrong discriminant of dα/dξ",
      ("tests/test_phase_lines.py::test_a_cusp_known_in_closed_form_is_located_to_1e_6",)),
    M("branch-points-not-stored", "replica/continuation/records.py",
      '                "branch_points": np.asarray(self.branch_points, dtype=float),',
      '                "branch_points": np.asarray(self.branch_points[:0], dtype=float),',
      "sweep files lose the located branch points of their branches",
      ("tests/test_branch_points.py::test_stored_branch_points_are_roots_of_the_leading_eigenvalue",)),
    M("critical-point-stored-at-its-parameter", "replica/workflow/io.py",
      '        _write_array(gc, "alpha", np.array([c.alpha for c in critical], dtype=float))',
      '        _write_array(gc, "alpha", np.array([c.parameter for c in critical], dtype=float))',
      "a phase-lines file stores the critical point's Δ as its α",
      ("tests/test_phase_lines.py::test_the_stored_critical_point_is_where_the_sweeps_lose_the_second_branch",)),
    M("front-slope-wrong-gain-term", "replica/readout_grid.py",
      "        return _g_inside(m.activation)(q) / (2.0 * D) + gain * q * q / (4.0 * alpha)\n",
      "        return _g_inside(m.activation)(q) / (2.0 * D) + gain * q * q / (2.0 * alpha)\n",
      "the slope of the equal-potential front is not the derivative of the potential difference along the roots",
      ("tests/test_small_solvers_and_fronts.py::test_profile_solver_slope_is_the_derivative_of_its_potential_along_the_roots",)),
    M("dense-factors-transpose-ignored", "replica/continuation/jacobians.py",
      "            return (self.inverse.T if transposed else self.inverse) @ rhs\n",
      "            return self.inverse @ rhs\n",
      "the small dense factors solve with the matrix where the transposed solve is asked for (Broyden updates)",
      ("tests/test_small_solvers_and_fronts.py::test_dense_factors_solve_and_transposed_solve",)),
    M("compiled-profile-curve-sign", "replica/_profile_kernels.py",
      "    k = A * spec_g_prime(act, q) + B * q\n",
      "    k = A * spec_g_prime(act, q) - B * q\n",
      "the compiled curve T of the readout profiles is not the NumPy one",
      ("tests/test_small_solvers_and_fronts.py::test_compiled_profile_curve_equals_the_numpy_curve",)),
    M("feature-family-shifted", "replica/readout_grid.py",
      "        return float(0.5 * (g[k - 1] + g[k]))\n",
      "        return float(0.5 * (g[k] + g[k + 1])) if k + 1 < g.size else SELECT_LARGEST\n",
      "the stationary point 'with k groups learned' has k + 1, and the located transitions are off by one group",
      ("tests/test_feature_transitions.py::test_located_transitions_are_free_entropy_crossings_of_the_reduced_equations",)),
    M("feature-equilibrium-flag-inverted", "replica/workflow/run.py",
      'equilibrium_at(r["alpha"]) == r["branch"]',
      'equilibrium_at(r["alpha"]) != r["branch"]',
      "the feature transitions on the equilibrium are those of the other branches",
      ("tests/test_feature_transitions.py::test_every_group_is_learned_once_strongest_first",)),
    M("powerlaw-continuum-rule-weights", "priors/continuous_laws.py",
      "        weights = jac * np.power(t, 2.0 * b / e) / e\n",
      "        weights = jac * np.power(t, b / e) / e\n",
      "the rule of the continuum power-law law integrates the wrong density",
      ("tests/test_powerlaw_continuum.py::test_density_is_normalized_with_unit_second_moment_and_the_powerlaw_quantiles",)),
    M("partial-start-weakest-units", "replica/simulations/experiment.py",
      "    informed = order[:int(round(f * strength.size))]\n",
      "    informed = order[strength.size - int(round(f * strength.size)):]\n",
      "the partially informed start puts the weakest hidden units at the teacher instead of the strongest",
      ("tests/test_partial_start.py::test_partial_start_takes_the_strongest_units_from_the_teacher",)),
    M("learned-mass-of-the-unlearned", "replica/readout_grid.py",
      "        return float(np.sum(np.asarray(weights, dtype=float)[self._on_specialized_root(s, snr, threshold)]))\n",
      "        return float(np.sum(np.asarray(weights, dtype=float)[~self._on_specialized_root(s, snr, threshold)]))\n",
      "learned_mass counts the readout mass of the groups not learned",
      ("tests/test_feature_transitions.py::test_located_counts_are_the_reduced_family_of_largest_free_entropy",)),
    M("feature-entry-wrong-group-strength", "replica/readout_grid.py",
      '            out.append({"alpha": float(a_k), "group": k, "s": float(self.groups[k]),\n',
      '            out.append({"alpha": float(a_k), "group": k, "s": float(self.groups[max(k - 1, 0)]),\n',
      "a located feature transition names the v² of the group before it",
      ("tests/test_feature_transitions.py::test_every_group_is_learned_once_strongest_first",)),
    M("learned-features-off-by-one", "replica/readout_grid.py",
      "        return int(np.argmin(complete)) if not np.all(complete) else int(self.groups.size)\n",
      "        return int(np.argmin(complete)) + 1 if not np.all(complete) else int(self.groups.size)\n",
      "learned_features counts one group more than have learned",
      ("tests/test_feature_transitions.py::test_located_counts_are_the_reduced_family_of_largest_free_entropy",)),
    M("atom-bins-weakest-first", "replica/workflow/figures.py",
      "    order = np.argsort(-np.abs(np.asarray(values, float)), kind=\"stable\")\n",
      "    order = np.argsort(np.abs(np.asarray(values, float)), kind=\"stable\")\n",
      "the theory's quantile bins of the scaling figure's experiment panel order the atoms weakest first",
      ("tests/test_atom_quantile_bins.py",)),
    M("two-layer-groups-all-learned", "replica/models/two_layer.py",
      "        on = np.max(np.asarray(state.overlap_layer_2, dtype=float), axis=1) > PHASE_THRESHOLD\n",
      "        on = np.max(np.asarray(state.overlap_layer_2, dtype=float), axis=1) >= 0.0\n",
      "every readout group of a two-layer state counts as learned",
      ("tests/test_feature_transitions_two_layers.py",)),
    M("fold-line-start-newton-only", "replica/continuation/linepoints.py",
      "    for i in ok[np.argsort(np.abs(alphas[ok] - alpha), kind=\"stable\")][:3]:\n"
      "        x = np.asarray(branch.points[int(i)], dtype=float)\n"
      "        idx = unknowns(model, x)\n"
      "        for kw in ({\"method\": \"newton\"}, {}):\n",
      "    for i in ok[np.argsort(np.abs(alphas[ok] - alpha), kind=\"stable\")][:1]:\n"
      "        x = np.asarray(branch.points[int(i)], dtype=float)\n"
      "        idx = unknowns(model, x)\n"
      "        for kw in ({\"method\": \"newton\"},):\n"
      "            same_point = lambda *args: False  # noqa: E731 - the mutation: the strict test alone\n",
      "a phase line whose nearest grid point Newton cannot polish (next to a fold) is silently not traced",
      ("tests/test_phase_lines.py::test_traced_lines_in_gamma_are_alpha_over_gamma_lines_and_equal_the_sweeps",)),
    M("interrupt-chain-not-searched", "replica/workflow/cli.py",
      "            return exc\n        seen.add(id(exc))\n",
      "            return None\n        seen.add(id(exc))\n",
      "an interrupt that a numba kernel wrapped in a SystemError ends the command with a traceback (exit 1)",
      ("tests/test_interrupt_unwrap.py",)),
    M("feature-correction-skipped", "replica/workflow/run.py",
      "            if exact == int(k[i]):\n",
      "            if True:\n",
      "grid points whose selection learned a group before its located transition are kept as they are",
      ("tests/test_feature_transitions.py::test_located_counts_are_the_reduced_family_of_largest_free_entropy",)),
    M("trace-resume-retraces", "replica/continuation/triples.py",
      "    for k in range(len(out), len(tasks)):\n",
      "    for k in range(0, len(tasks)):\n",
      "a resumed traced diagram traces its finished lines again (and writes them twice)",
      ("tests/test_phase_lines.py::test_interrupted_traced_diagram_resumes_to_the_same_file",)),
    M("lost-interrupt-not-recalled", "replica/workflow/cli.py",
      "        if interrupt is None and len(_SIGNALLED) > before:\n",
      "        if interrupt is None and False:\n",
      "SIGTERM during a lazy import of scipy ends the command with an ImportError traceback (exit 1, no checkpoint)",
      ("tests/test_interrupt_unwrap.py",)),
    M("alpha-grid-check-imports-numpy-ma", "replica/continuation/sweep.py",
      "    if np.any(np.diff(np.sort(alphas)) == 0):",
      "    if np.unique(alphas).size != alphas.size:",
      "every sweep imports numpy.ma (7 ms of start-up) through np.unique",
      ("tests/test_startup.py::test_short_universal_sweep_loads_only_h5py",)),
    M("triple-point-sign-change-ignored", "replica/continuation/triples.py",
      "                if not d[j] * d[j + 1] < 0.0:\n",
      "                if True:\n",
      "two first-order lines that meet are not located: no triple point",
      ("tests/test_triple_points.py",)),
    M("lines-from-both-ends-kept-twice", "replica/continuation/triples.py",
      "        if not any(same_line(kept, line) for kept in out):\n",
      "        if True:\n",
      "a line traced from both ends of the range is written twice",
      ("tests/test_triple_points.py::test_lines_traced_from_both_ends_are_kept_once",)),
    M("line-window-never-narrows", "replica/continuation/linepoints.py",
      "    return (width if width is not None else search_window(alpha, move)) * 0.5 ** min(fails[0], 6)\n",
      "    return (width if width is not None else search_window(alpha, move))\n",
      "a fold line of a short branch is lost at its first step (the window reaches past the branch)",
      ("tests/test_triple_points.py::test_lines_traced_from_both_ends_are_kept_once",)),
    M("grid-point-refined-rejected", "replica/continuation/linepoints.py",
      "            if same_point(model, float(alphas[i]), stored, r):\n",
      "            if False:\n",
      "a branch point that the solver re-solves on a finer rule is not a line's start (the line is not traced)",
      ("tests/test_triple_points.py::test_every_fold_of_the_first_sweep_has_a_start",)),
    M("corrector-refuses-nan-labels", "replica/continuation/correctors.py",
      "    if not np.all(np.isfinite(x_pred[idx])):\n",
      "    if not np.all(np.isfinite(x_pred)):\n",
      "a crossing line from layer_1 of two hidden layers (a NaN label: no error estimate) is lost at its first step",
      ("tests/test_triple_points.py::test_lines_traced_from_both_ends_are_kept_once",)),
    M("trace-resume-drops-kept-lines", "replica/workflow/cli.py",
      "            checkpoint.lines = list(done)  # kept in every checkpoint written from now on (the sweeps' too)\n",
      "",
      "a resumed traced diagram rewrites its checkpoint without the kept lines (a second interrupt loses them)",
      ("tests/test_phase_lines.py::test_interrupted_traced_diagram_resumes_to_the_same_file",)),
    M("swallowed-interrupt-forgotten", "replica/workflow/cli.py",
      "    pending()  # swallowed without a later error (a Cython module's import that the signal cut short)\n",
      "",
      "SIGTERM during a lazy scipy import is ignored: the command finishes and exits 0",
      ("tests/test_interrupt_unwrap.py",)),
    M("third-line-both-sides", "replica/continuation/triples.py",
      "            if side.size == 0 or _beaten(model, name, t, side[0], ra, rb, rc, solve_kw):\n",
      "            if side.size == 0:\n",
      "the first-order line born at a triple point is also traced on its metastable side",
      ("tests/test_triple_points.py::test_the_third_line_starts_at_the_triple_point",)),
    M("third-line-traced-twice", "replica/continuation/triples.py",
      "        if len(_through(model, name, lines, t, solve_kw)) >= 3:\n",
      "        if False:\n",
      "a first-order line that a sweep already gave is traced again from the triple point (twice in the file)",
      ("tests/test_triple_points.py::test_the_third_line_starts_at_the_triple_point",)),
    M("unraisable-interrupt-printed", "replica/workflow/cli.py",
      "    if isinstance(info.exc_value, KeyboardInterrupt):\n        return\n",
      "    if False:\n        return\n",
      "SIGTERM in a weakref callback prints 'Exception ignored' and a traceback before the one-line note",
      ("tests/test_interrupt_unwrap.py::test_an_interrupt_in_a_weakref_callback_is_quiet_and_raised_later",)),
    M("lone-spinodal-no-cusp", "replica/continuation/cusps.py",
      "        if k not in paired:\n",
      "        if False:\n",
      "a cusp whose second spinodal no sweep saw is not located",
      ("tests/test_phase_lines.py::test_a_cusp_is_located_from_one_of_its_two_spinodals",)),
    M("cusp-bracket-last-points-skipped", "replica/continuation/cusps.py",
      "            if got is not None:\n                break\n            got = locate_cusp(",
      "            if True:\n                break\n            got = locate_cusp(",
      "a cusp just behind a lost spinodal's last point (its cubic already without an S) is not located",
      ("tests/test_phase_lines.py::test_a_cusp_behind_the_last_point_of_a_lone_spinodal_is_located",)),
    M("triple-bracket-shared-values-only", "replica/continuation/triples.py",
      "            rows = _overlap(l1, l2)\n",
      "            rows = _common(l1, l2)\n",
      "two crossing lines traced from opposite ends that share no requested value inside the bracket never meet",
      ("tests/test_triple_points.py::test_the_command_writes_and_draws_the_triple_point",)),
    M("crossing-line-sheet-jump-accepted", "replica/continuation/codim2.py",
      "        if got is not None and move is not None and any(jumped(m, a, x, r) for x, r in zip(xs, got[1:])):\n",
      "        if False:\n",
      "a traced crossing line falls onto a neighbouring sheet's crossing and follows it",
      ("tests/test_triple_points.py::test_the_command_writes_and_draws_the_triple_point",)),
    M("chord-iterates-not-projected", "replica/continuation/correctors.py",
      "    y = np.array(x_pred if project is None else project(x_pred), dtype=float)\n",
      "    project = None\n    y = np.array(x_pred, dtype=float)\n",
      "a rounding residue below an unlearned overlap grows at every chord step next to a branch point: a false fold",
      ("tests/test_phase_lines.py::test_relu_4point_branch_point_line_is_where_the_weak_readouts_specialize",)),
    M("branch-point-line-not-traced", "replica/continuation/codim2.py",
      "            if kind in (\"branch_point\", \"degenerate_branch_point\"):  # not a complex pair (no curve branches off)\n",
      "            if kind == \"branch_point\":\n",
      "the branch points of 4point readouts (two eigenvalues cross 1 together) are not traced",
      ("tests/test_phase_lines.py::test_relu_4point_branch_point_line_is_where_the_weak_readouts_specialize",)),
    M("branch-point-line-leading-eigenvalue-off", "replica/continuation/eigenlines.py",
      "            value = math.nan if r is None else stability(m, al, r.x, order=2) - 1.0\n            if not math.isfinite(value):\n                raise _Lost\n",
      "            value = math.nan if r is None else stability(m, al, r.x, order=2) - 1.001\n            if not math.isfinite(value):\n                raise _Lost\n",
      "the branch point is located where the eigenvalue is 1.001",
      ("tests/test_phase_lines.py::test_a_branch_point_line_known_in_closed_form_is_followed_to_1e_9",)),
    M("cusps-of-one-s-kept-twice", "replica/continuation/cusps.py",
      "    return _merged(out)\n",
      "    return [cp for cp, _ in out]\n",
      "the cusp of one S, located from each of its two spinodals traced alone, is stored twice",
      ("tests/test_phase_lines.py::test_one_cusp_from_two_spinodals_lost_at_different_values_is_one_critical_point",)),
    M("bifurcation-onset-window-floor", "replica/continuation/linepoints.py",
      "    target = max(alpha - inside, 0.5 * alpha) if side > 0 else alpha + inside\n",
      "    target = max(alpha - inside, 0.5 * (alpha + side * inside)) if side > 0 else alpha + inside\n",
      "the continuation towards an onset stops at half its start, above the onset when the start lies far inside",
      ("tests/test_phase_lines.py::test_two_layer_onset_of_layer_1_is_traced_and_equals_the_sweeps",)),
    M("bifurcation-onsets-not-traced", "replica/continuation/codim2.py",
      "        if b.start_kind == \"bifurcation\" and not any(",
      "        if False and not any(",
      "the onsets of continuous transitions whose host eigenvalue is not followed get no line",
      ("tests/test_phase_lines.py::test_two_layer_onset_of_layer_1_is_traced_and_equals_the_sweeps",)),
    M("line-secant-through-one-value", "replica/continuation/linepoints.py",
      "        if len(line.points) >= 2 and abs(last.parameter - line.points[-2].parameter) >= \\\n",
      "        if len(line.points) >= 2 and abs(last.parameter - line.points[-2].parameter) >= 0.0 * \\\n",
      "a line's secant through two points at one value of the parameter (a division by zero in the triple-point "
      "search)",
      ("tests/test_phase_lines.py::test_a_line_through_values_closer_than_their_rounding_is_traced",)),
    M("channel-parameters-by-name", "replica/interface.py",
      "    if (type(channel) is ProbitChannel and key in (\"probit\", \"sign\")) or (type(channel) is LogisticChannel\n",
      "    if (key in (\"probit\", \"sign\")) or (key == \"logistic\" or type(channel) is LogisticChannel\n",
      "a channel given by its likelihood under a built-in's name is rebuilt as that built-in (a TypeError)",
      ("tests/test_channel_lines.py::test_a_channel_parameter_the_channel_does_not_have_is_refused",)),
    M("custom-channel-delta-ignored", "replica/interface.py",
      "        if channel is not None and name == \"delta\" and not _channel_parameters(channel) and \\\n",
      "        if False and \\\n",
      "the copy of a model with a channel given by its likelihood at another Δ is the same model",
      ("tests/test_channel_lines.py::test_a_channel_parameter_the_channel_does_not_have_is_refused",)),
    M("untraced-lines-reached-from-the-other-end", "replica/continuation/triples.py",
      "        if k < len(entries) and entries[k] is None and not reached(lines, kind, value, a):\n",
      "        if k < len(entries) and entries[k] is None:\n",
      "a line one end cannot start, traced from the other, is reported as missing from the diagram",
      ("tests/test_phase_lines.py::test_a_line_one_end_cannot_start_is_traced_from_the_other_without_a_warning",)),
    M("workers-keep-dask-malloc-trim", "replica/workflow/phase_diagram.py",
      "    with _workers_ignore_interrupts(), dask.config.set({_TRIM_KEY: None if str(trim) == _DASK_TRIM else trim}):\n",
      "    with _workers_ignore_interrupts():\n",
      "the local workers run with dask's MALLOC_TRIM_THRESHOLD_ (every large array mapped and unmapped again)",
      ("tests/test_phase_diagram.py::test_local_workers_keep_the_default_malloc_trim",)),
    M("onset-line-jump-floor-ten-times-wider", "replica/continuation/codim2.py",
      "        if got is None or (move is not None and abs(got[0] - a) > max(0.5 * move, active().jump_offset * max(1.0, abs(a)))):\n",
      "        if got is None or (move is not None and abs(got[0] - a) > max(0.5 * move, search_window(a, 0.0))):\n",
      "an onset line accepts, after a short step, a point on another curve's onset (0.037 away in alpha)",
      ("tests/test_phase_lines.py::test_an_onset_line_does_not_jump_onto_another_onset_after_a_short_step",)),
    M("workers-drop-the-users-malloc-trim", "replica/workflow/phase_diagram.py",
      "    with _workers_ignore_interrupts(), dask.config.set({_TRIM_KEY: None if str(trim) == _DASK_TRIM else trim}):\n",
      "    with _workers_ignore_interrupts(), dask.config.set({_TRIM_KEY: None}):\n",
      "a MALLOC_TRIM_THRESHOLD_ the user sets in the dask configuration does not reach the local workers",
      ("tests/test_phase_diagram.py::test_a_malloc_trim_set_in_the_dask_configuration_reaches_the_workers",)),
    M("channel-copy-keeps-old-value", "replica/interface.py",
      "            params[name] = float(value)\n",
      "            pass\n",
      "the copy of a model at another channel parameter keeps the old channel",
      ("tests/test_channel_lines.py::test_a_copy_at_another_channel_parameter_is_the_model_built_with_that_channel",)),
    M("channel-copy-keeps-model-delta", "replica/interface.py",
      "                changed[\"delta\"] = new.delta  # the model's Δ is the channel's (make_output_channel checks it)\n",
      "                pass\n",
      "the probit model copied at another Δ keeps its old Δ beside the new channel (refused: a traceback)",
      ("tests/test_channel_lines.py::test_probit_delta_lines_equal_the_sweeps",)),
    M("channel-grid-not-popped", "replica/workflow/cli.py",
      "    elif vary in _CHANNEL_GRIDS:\n        channel.pop(vary)\n",
      "    elif vary in _CHANNEL_GRIDS:\n        pass\n",
      "the first value of a channel grid is kept in the common parameters, which then override every line's value",
      ("tests/test_channel_lines.py::test_a_grid_diagram_over_the_threshold_equals_the_traced_lines",)),
]


# --------------------------------------------------------------------------- machinery
def _copy_repository(dest: Path) -> None:
    """Copy the files git knows (tracked and untracked-not-ignored) to ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if not src.is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def _check_texts(mutations) -> list:
    """Mutations whose old text is not found exactly once (the list is out of date)."""
    stale = []
    for m in mutations:
        path = ROOT / m.file
        count = path.read_text().count(m.old) if path.exists() else 0
        if count != 1:
            stale.append((m, count))
    return stale


def _environment(copy: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("NUMBA_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    env.pop("REPLICA_HCIZ_REQUIRE_EXTRAS", None)
    return env


def _pytest(copy: Path, tests, timeout: float, *, stop_first=True):
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
           "--no-header", "-rfE", *(["-x"] if stop_first else []), *tests]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, cwd=copy, env=_environment(copy), capture_output=True, text=True,
                             timeout=timeout)
        rc, text = out.returncode, (out.stdout + out.stderr)
    except subprocess.TimeoutExpired:
        rc, text = None, "timeout"
    return rc, text, time.perf_counter() - t0


def _summary_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def _killer(text: str) -> str:
    """Node id of the first failing test in a pytest summary ("" if none)."""
    for line in text.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line.split(" ", 1)[1].split(" - ", 1)[0].strip()
    return ""


def _run_one(m: Mutation, copy: Path, timeout: float):
    path = copy / m.file
    original = path.read_text()
    path.write_text(original.replace(m.old, m.new, 1))
    try:
        rc, text, seconds = _pytest(copy, m.tests, timeout)
    finally:
        path.write_text(original)
    if rc is None:
        verdict = "killed (timeout)"
    elif rc == 1:
        verdict = "killed"
    elif rc == 2:  # collection error: the mutated module no longer imports
        verdict = "killed (collection)"
    elif rc == 0:
        verdict = "SURVIVED"
    else:  # 3 internal error, 4 usage error, 5 nothing collected, < 0 a signal
        verdict = f"ERROR (pytest exit {rc})"
    killer = _killer(text)
    return m, verdict, seconds, f"{_summary_line(text)}{'  by ' + killer if killer else ''}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--list", action="store_true", help="list the mutations and exit")
    p.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this mutation (repeatable)")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="mutations run in parallel, each in its own copy (default: min(2, CPU cores))")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per test run (default 600)")
    p.add_argument("--skip-baseline", action="store_true",
                   help="do not first check that the named tests pass on the unmutated code")
    args = p.parse_args(argv)

    mutations = MUTATIONS
    if args.only:
        unknown = sorted(set(args.only) - {m.name for m in MUTATIONS})
        if unknown:
            p.error(f"unknown mutation(s): {', '.join(unknown)}")
        mutations = [m for m in MUTATIONS if m.name in args.only]
    if args.list:
        for m in mutations:
            print(f"{m.name:44s} {m.file:30s} {m.breaks}")
            print(f"{'':44s} tests: {' '.join(m.tests)}")
        return 0
    names = [m.name for m in MUTATIONS]
    if len(set(names)) != len(names):
        print("duplicate mutation names", file=sys.stderr)
        return 2
    stale = _check_texts(mutations)
    if stale:
        for m, count in stale:
            print(f"STALE {m.name}: old text found {count} times in {m.file} (expected once); update the list",
                  file=sys.stderr)
        return 1

    t_start = time.perf_counter()
    jobs = max(1, min(args.jobs, len(mutations)))
    with tempfile.TemporaryDirectory(prefix="mutation-check-") as tmp:
        copies = []
        for j in range(jobs):
            copy = Path(tmp) / f"copy{j}"
            _copy_repository(copy)
            copies.append(copy)
        if not args.skip_baseline:
            tests = sorted({t for m in mutations for t in m.tests})
            rc, text, seconds = _pytest(copies[0], tests, args.timeout * 2, stop_first=False)
            print(f"baseline: {len(tests)} test selections on the unmutated copy: {_summary_line(text)} "
                  f"({seconds:.0f} s)", flush=True)
            if rc != 0:
                print(text[-4000:], file=sys.stderr)
                print("the named tests fail without any mutation; fix them first", file=sys.stderr)
                return 1
        results = []

        def work(index):
            m = mutations[index]
            copy = copies[index % jobs]
            return _run_one(m, copy, args.timeout)

        # mutation i runs in copy i mod jobs; one worker per copy so a copy is never shared
        def worker(j):
            out = []
            for i in range(j, len(mutations), jobs):
                res = work(i)
                m, verdict, seconds, summary = res
                print(f"{verdict:18s} {m.name:44s} {seconds:6.1f} s  {summary}", flush=True)
                out.append(res)
            return out

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            for chunk in pool.map(worker, range(jobs)):
                results.extend(chunk)

    survivors = [m for m, verdict, _, _ in results if not verdict.startswith("killed")]
    killed = len(results) - len(survivors)
    print(f"killed {killed} of {len(results)} ({time.perf_counter() - t_start:.0f} s, {jobs} in parallel)")
    for m in survivors:
        verdict = next(v for mm, v, _, _ in results if mm is m)
        print(f"  {verdict}: {m.name} ({m.file}): {m.breaks}; tests {' '.join(m.tests)}")
    return 0 if not survivors else 1


if __name__ == "__main__":
    sys.exit(main())
