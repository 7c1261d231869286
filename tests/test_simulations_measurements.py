"""Measurements of the simulation package (NumPy only: runs without the experiments extra)."""

import numpy as np
import pytest

from replica.simulations.measurements import (OVERLAP_BIN_EDGES, cross_fitted_overlaps, matched_overlaps, mean_and_sem,
                                      measure_chain, neuron_quantile_maps, r2_overlap)
from replica.simulations.teacher_student import Architecture, network_output, sample_readout, sample_weights


def relu(x):
    return np.maximum(x, 0.0)


def test_architecture_sizes():
    arch = Architecture.from_ratios(40, (0.5, 0.25))
    assert arch.widths == (20, 10)
    assert arch.shapes == ((20, 40), (10, 20))
    assert arch.num_samples(6.0) == 9600
    with pytest.raises(ValueError):
        Architecture.from_ratios(40, (0.0,))


@pytest.mark.parametrize("prior", ["gaussian", "rademacher", "uniform"])
def test_weight_priors_have_unit_variance(prior):
    w = sample_weights(prior, (200_000,), np.random.default_rng(0))
    assert abs(w.mean()) < 0.01
    assert w.var() == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("law", ["ones", "rademacher", "uniform", "gaussian", "4point"])
def test_readout_laws_have_unit_second_moment(law):
    v = sample_readout(law, 200_000, np.random.default_rng(1))
    assert np.mean(v**2) == pytest.approx(1.0, abs=0.015)


def test_matching_recovers_a_permutation_within_readout_groups():
    rng = np.random.default_rng(2)
    k, d = 12, 60
    teacher = [rng.standard_normal((k, d))]
    readout = np.repeat([1.0, -1.0], k // 2)
    # permute neurons only inside the readout groups: the posterior symmetry
    perm = np.concatenate([rng.permutation(k // 2), k // 2 + rng.permutation(k // 2)])
    student = [teacher[0][perm] + 0.1 * rng.standard_normal((k, d))]
    q, matrices = matched_overlaps(student, teacher, readout)
    assert np.allclose(q[0], np.sum(teacher[0] ** 2, axis=1) / d, atol=0.05)
    assert np.allclose(np.diag(matrices[0]), q[0])
    # the student is a symmetry image of the teacher: same output
    x = rng.standard_normal((50, d))
    assert np.allclose(network_output(teacher, readout, x, relu),
                       network_output([teacher[0][perm]], readout, x, relu))


def test_matching_respects_readout_groups():
    """Swapping two neurons of different readout is not a symmetry and must not be undone."""
    rng = np.random.default_rng(3)
    teacher = [rng.standard_normal((2, 80))]
    readout = np.array([1.0, -1.0])
    q, _ = matched_overlaps([teacher[0][::-1]], teacher, readout)
    assert np.all(np.abs(q[0]) < 0.5)
    q, _ = matched_overlaps([teacher[0][::-1]], teacher, np.ones(2))
    assert np.allclose(q[0], np.sum(teacher[0] ** 2, axis=1) / 80)


def test_layerwise_matching_of_a_deep_network():
    rng = np.random.default_rng(4)
    teacher = [rng.standard_normal((6, 30)), rng.standard_normal((4, 6))]
    p1, p2 = rng.permutation(6), rng.permutation(4)
    student = [teacher[0][p1], teacher[1][p2][:, p1]]  # the same function
    readout = np.ones(4)
    x = rng.standard_normal((20, 30))
    assert np.allclose(network_output(teacher, readout, x, np.tanh), network_output(student, readout, x, np.tanh))
    q, _ = matched_overlaps(student, teacher, readout)
    assert np.allclose(q[0], np.sum(teacher[0] ** 2, axis=1) / 30)
    assert np.allclose(q[1], np.sum(teacher[1] ** 2, axis=1) / 6)


def test_r2_is_one_for_the_teacher_and_near_zero_for_independent_weights():
    rng = np.random.default_rng(5)
    k, d = 40, 80
    w0 = rng.standard_normal((k, d))
    v = np.ones(k)
    assert r2_overlap([w0], [w0], v) == pytest.approx(1.0)
    r2 = r2_overlap([rng.standard_normal((k, d))], [w0], v)
    # ‖S − S⁰‖²/(2kd²) = 1 + O(1/d) for independent weights (R_d − 1 = γ cancels between S and S⁰)
    assert abs(r2) < 0.1
    assert np.isnan(r2_overlap([w0, w0[:, :k]], [w0, w0[:, :k]], v))


def test_measure_chain_statistics():
    rng = np.random.default_rng(6)
    k, d, n_test, kept = 6, 20, 4000, 10
    w0 = rng.standard_normal((k, d))
    v = np.ones(k)
    target = rng.standard_normal(n_test)
    outputs = target[None, :] + 0.3 * rng.standard_normal((kept, n_test))
    samples = (np.repeat(w0[None], kept, axis=0),)
    m = measure_chain(samples, outputs, [w0], target, v)
    assert m.error == pytest.approx(0.5 * 0.09, rel=0.05)
    assert m.replica_error == pytest.approx(0.5 * 0.18, rel=0.05)  # independent noise: twice
    assert m.posterior_mean_error == pytest.approx(0.09 / kept, rel=0.15)
    assert m.r2 == pytest.approx(1.0)
    assert m.histogram.shape == (1, len(OVERLAP_BIN_EDGES) - 1)
    assert m.histogram.sum() == k * kept
    point = measure_chain(samples[:1], outputs[:1], [w0], target, v, point_estimate=True)
    assert point.error == pytest.approx(0.09, rel=0.05)
    assert np.isnan(point.replica_error)


def test_mean_and_sem():
    mean, sem = mean_and_sem(np.array([[1.0, 3.0], [2.0, 2.0]]), axis=1)
    assert np.allclose(mean, [2.0, 2.0])
    assert np.allclose(sem, [1.0, 0.0])
    _, sem1 = mean_and_sem(np.array([[1.0]]), axis=1)
    assert np.isnan(sem1).all()


def _two_layer(rng, d, k1, k2):
    return [rng.standard_normal((k1, d)), rng.standard_normal((k2, k1))]


def test_cross_fitted_overlaps_are_zero_between_independent_networks():
    # unlearned networks (independent draws of the prior, two hidden layers of 20 neurons, d = 40): the
    # plain matched overlap is biased upwards by the matching, the cross-fitted one has mean 0
    rng = np.random.default_rng(3)
    v = np.ones(20)
    plain, cross, cross_w2 = [], [], []
    for rep in range(40):
        teacher, student = _two_layer(rng, 40, 20, 20), _two_layer(rng, 40, 20, 20)
        plain.append([q.mean() for q in matched_overlaps(student, teacher, v)[0]])
        neurons, weights = cross_fitted_overlaps(student, teacher, v, seed=rep)
        cross.append([q.mean() for q in neurons])
        cross_w2.append(weights[1].mean())
    plain, cross = np.array(plain), np.array(cross)
    assert np.all(plain.mean(axis=0) > 0.2)  # the bias of the plain matching, both layers
    mean, sem = cross.mean(axis=0), cross.std(axis=0, ddof=1) / np.sqrt(cross.shape[0])
    assert np.all(np.abs(mean) < 3.5 * sem) and np.all(sem < 0.02)
    assert abs(np.mean(cross_w2)) < 3.5 * np.std(cross_w2, ddof=1) / np.sqrt(len(cross_w2))


def test_cross_fitted_overlaps_measure_a_learned_overlap():
    # a student whose neurons have overlap 0.6 with their (permuted) teachers in layer 1 and whose second
    # layer is the teacher's (permuted the same way): the cross-fitted estimates are 0.6 and 1 on average
    rng = np.random.default_rng(4)
    d, k = 60, 30
    v = np.ones(k)
    est1, est2 = [], []
    for rep in range(20):
        teacher = _two_layer(rng, d, k, k)
        perm = rng.permutation(k)
        w1 = 0.6 * teacher[0] + np.sqrt(1 - 0.6**2) * rng.standard_normal((k, d))  # unit variance, overlap 0.6
        student = [w1[perm], teacher[1][:, perm]]
        neurons, _ = cross_fitted_overlaps(student, teacher, v, seed=rep)
        est1.append(neurons[0].mean())
        est2.append(neurons[1].mean())
    assert np.mean(est1) == pytest.approx(0.6, abs=0.02)
    # layer 2: the teacher's own rows, columns relabelled by the layer-1 matching: overlap E W² = 1
    assert np.mean(est2) == pytest.approx(1.0, abs=0.05)


def test_neuron_quantile_maps_order_neurons_by_readout_strength():
    # one hidden layer, readout 4point: the student learned (overlap 0.8) exactly the neurons of strong
    # readout |v| = 3/√5, the others are independent draws. Ordered by |v|, the strong neurons are the
    # first half of the quantiles: the map is 0.8 on the first half of the bins and 0 on the second.
    rng = np.random.default_rng(5)
    d, k = 60, 40
    v = np.repeat(np.array([3.0, -3.0, 1.0, -1.0]) / np.sqrt(5.0), k // 4)
    strong = np.abs(v) > 1.0
    maps = []
    for rep in range(20):
        teacher = [rng.standard_normal((k, d))]
        w = rng.standard_normal((k, d))
        w[strong] = 0.8 * teacher[0][strong] + 0.6 * rng.standard_normal((int(strong.sum()), d))
        order = rng.permutation(k)  # relabelling the neurons with their readouts changes nothing
        layer_1, layer_2 = neuron_quantile_maps([w[order]], [teacher[0][order]], v[order], bins=4, seed=rep)
        assert layer_2.shape == (0, 4)
        maps.append(layer_1)
    mean = np.mean(maps, axis=0)
    assert mean[:2] == pytest.approx([0.8, 0.8], abs=0.05)
    assert mean[2:] == pytest.approx([0.0, 0.0], abs=0.05)


def test_neuron_quantile_maps_group_second_layer_by_readout():
    # two hidden layers: the student's second layer is the teacher's for the second-layer neurons of
    # readout +1 and independent for those of readout 1/3 (first layer learned exactly). The per-pair map
    # is 1 in the strong group and 0 in the weak one, in every first-layer quantile bin; an integer
    # ``groups`` splits |v| into quantile bins (strongest first), giving the same rows here.
    rng = np.random.default_rng(6)
    d, k1, k2 = 40, 20, 20
    v = np.repeat([1.0, 1.0 / 3.0], k2 // 2)
    rows = {None: [], 2: [], "law": []}
    for rep in range(20):
        teacher = _two_layer(rng, d, k1, k2)
        w2 = rng.standard_normal((k2, k1))
        w2[: k2 // 2] = teacher[1][: k2 // 2]
        student = [teacher[0] + 0.05 * rng.standard_normal((k1, d)), w2]
        for key, groups in ((None, None), (2, 2), ("law", np.array([-1.0, 1.0 / 3.0, 1.0]))):
            _, layer_2 = neuron_quantile_maps(student, teacher, v, bins=2, groups=groups, seed=rep)
            rows[key].append(layer_2)
    for key in rows:
        mean = np.mean(rows[key], axis=0)
        assert mean.shape == (2, 2)
        assert mean[0] == pytest.approx([1.0, 1.0], abs=0.1)
        assert mean[1] == pytest.approx([0.0, 0.0], abs=0.1)
    with pytest.raises(ValueError, match="groups"):
        neuron_quantile_maps(student, teacher, v, groups=0)
