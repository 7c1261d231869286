"""Measurements on samples: errors, matched overlaps, ``R₂``, histograms, Nishimori checks.

Definitions (docs/theory.md §1 and §7)
---------------------------------
* Half Gibbs error of a posterior sample ``W^a``: ``½ E_x (λ(x; W^a) − λ(x; W⁰))²`` on
  fresh noiseless test inputs; by the Nishimori identity its posterior average equals the
  Bayes error ``mmse``.  For a point estimate (Adam) the error is ``E_x (λ̂ − λ⁰)²``.
* Posterior-mean error ``E_x (⟨λ⟩ − λ⁰)²`` with ``⟨λ⟩`` the average over kept samples
  (a second, biased-upwards estimate of ``mmse``: the finite number of samples adds
  ``Var/num_kept``).
* Per-neuron overlaps ``q_j = W_{π(j)} · W⁰_j / k_{ℓ−1}`` after the matching ``π`` that
  maximizes ``Σ_j q_j`` (``scipy.optimize.linear_sum_assignment``), layer by layer: the
  matching of layer ℓ permutes the input columns of layer ℓ+1; in the last layer only
  neurons with the same readout value are exchangeable.
* Cross-fitted overlaps (:func:`cross_fitted_overlaps`): the same matching computed on half of
  the input coordinates and the overlaps measured on the other half, so that an unlearned neuron
  has mean overlap 0 (the plain matched overlap is biased upwards by the choice, 0.3–0.45 at
  k = 15–20).
* ``R₂ = 1 − ‖S − S⁰‖²_F / (2 k d²)`` with ``S = Wᵀ diag(v) W`` (one hidden layer): the
  overlap of the fluctuating part of ``S``, i.e. ``m_S`` of the theory
  (``= R₂^theory − (R_d − 1)``), 0 for an uninformative sample and 1 for the teacher.
* Nishimori check: for Bayes-optimal sampling at equilibrium the teacher is exchangeable
  with a posterior sample, so teacher–sample statistics equal sample–sample statistics
  (two samples far apart in the chain).  Reported: ``½E(λ^a − λ⁰)²`` vs ``½E(λ^a − λ^b)²``,
  matched overlaps and ``R₂`` teacher–sample vs sample–sample.
* Classification (±1 output channels, :func:`classification_measures`): with ``λ_c`` the centred
  output and θ the channel's threshold, the Bayes classifier ``ŷ = sign(⟨λ_c⟩ − θ)`` (the theory's
  ``argmax_y Z(y; ω, V)`` with ω the posterior-mean output, docs/theory.md §10) and the Gibbs
  classifier ``sign(λ_c^a − θ)`` of single samples, both against fresh channel labels; the
  Nishimori check compares the teacher–sample disagreement ``P(sign(λ_c^a − θ) ≠ sign(λ_c⁰ − θ))``
  with the sample–sample one ``P(sign(λ_c^a − θ) ≠ sign(λ_c^b − θ))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "OVERLAP_BIN_EDGES",
    "ChainMeasurement",
    "matched_overlaps",
    "cross_fitted_overlaps",
    "neuron_quantile_maps",
    "NEURON_BINS",
    "overlap_matrices",
    "r2_overlap",
    "measure_chain",
    "classification_measures",
    "mean_and_sem",
]

#: Bin edges of the overlap histograms (entries of ``W Wᵀ⁰ / k_{ℓ−1}``); values outside are
#: counted in the first or last bin.
OVERLAP_BIN_EDGES = np.linspace(-2.0, 2.0, 81)


def matched_overlaps(student, teacher, readout, *, tolerance: float = 1e-9):
    """Per-neuron overlaps after optimal matching, layer by layer.

    Parameters
    ----------
    student, teacher : sequence of ndarray
        Weights ``W_ℓ`` of shapes ``(k_ℓ, k_{ℓ−1})``.
    readout : ndarray, shape (k_L,)
        Readout; in the last layer only neurons with equal readout may be matched.
    tolerance : float
        Readout values closer than this are considered equal.

    Returns
    -------
    overlaps : list of ndarray
        ``q_j`` for every teacher neuron ``j`` of every layer, shape ``(k_ℓ,)``.
    matrices : list of ndarray
        Overlap matrices ``Q_ℓ[i, j] = W̃_ℓ,i · W⁰_ℓ,j / k_{ℓ−1}`` (student rows in
        the matched order, so ``diag Q_ℓ = q``).

    Notes
    -----
    The symmetry group of the posterior is the permutations of hidden neurons that keep
    the readout; sign flips are not symmetries for a fixed readout (and are ignored for
    odd activations of inner layers).
    """
    overlaps, matrices = [], []
    permutation = None  # student index matched to each teacher neuron of the previous layer
    last = len(teacher) - 1
    for layer, (w, w0) in enumerate(zip(student, teacher)):
        w = np.asarray(w, float)
        w0 = np.asarray(w0, float)
        if permutation is not None:
            w = w[:, permutation]
        q = w @ w0.T / w0.shape[1]  # (student i, teacher j)
        gain = q.copy()
        if layer == last:
            v = np.asarray(readout, float)
            forbidden = np.abs(v[:, None] - v[None, :]) > tolerance
            gain[forbidden] = -1e6
        from scipy.optimize import linear_sum_assignment  # lazy: start-up (docs/architecture.md)

        teacher_index, student_index = linear_sum_assignment(-gain.T)
        permutation = student_index[np.argsort(teacher_index)]
        matrix = q[permutation, :]
        matrices.append(matrix)
        overlaps.append(np.diag(matrix).copy())
    return overlaps, matrices


def cross_fitted_overlaps(student, teacher, readout, *, seed: int = 0, tolerance: float = 1e-9):
    """Matched per-neuron and per-weight overlaps without the bias of the matching (cross-fitting).

    The plain matched overlap (:func:`matched_overlaps`) picks, for each teacher neuron, the student
    neuron of largest overlap, so it is positive even between independent networks (0.3–0.45 at
    k = 15–20). Here the input coordinates of each layer are split at random into two halves: the
    matching is computed on one half and the overlaps are measured on the other (and the roles
    swapped, each half measured once), so that for a student neuron unrelated to its teacher the
    measured coordinates are independent of the choice: the estimate has mean 0 there, and mean ``Q``
    for a neuron that learned its teacher with overlap ``Q`` (the coordinates being exchangeable).
    Layer ℓ's columns are first permuted by layer ℓ − 1's matching on all coordinates (the weights of
    layer ℓ do not enter it); in the last layer only neurons with equal readout are matched.

    Parameters
    ----------
    student, teacher : sequence of ndarray
        Weights ``W_ℓ`` of shapes ``(k_ℓ, k_{ℓ−1})``, ``k_{ℓ−1} ≥ 2``.
    readout : ndarray, shape (k_L,)
    seed : int, keyword-only
        Seed of the random split of every layer's coordinates.
    tolerance : float, keyword-only
        Readout values closer than this are considered equal.

    Returns
    -------
    neurons : list of ndarray
        Per layer, shape ``(k_ℓ,)``: the overlap of each teacher neuron with its matched student neuron,
        ``(1/k_{ℓ−1}) Σ_c W_{π(j),c} W⁰_{j,c}`` with every coordinate ``c`` taken from the half the
        matching did not see (``2/k_{ℓ−1}`` times the sum over one half, the two halves averaged).
    weights : list of ndarray
        Per layer, shape ``(k_ℓ, k_{ℓ−1})``: the per-weight products ``W_{π(j),c} W⁰_{j,c}`` (teacher
        row ``j``, column ``c`` in the teacher's order), each measured with the matching of the other
        half; their means over groups of weights estimate the per-weight overlaps ``Q_ℓ(ρ, κ)``.

    Raises
    ------
    ValueError
        Shapes that do not match, or a layer with fewer than two input coordinates.
    """
    from scipy.optimize import linear_sum_assignment  # lazy: start-up (docs/architecture.md)

    rng = np.random.default_rng(seed)
    neurons, weights = [], []
    permutation = None
    last = len(teacher) - 1
    for layer, (w, w0) in enumerate(zip(student, teacher)):
        w = np.asarray(w, float)
        w0 = np.asarray(w0, float)
        if w.shape != w0.shape:
            raise ValueError(f"layer {layer + 1}: student {w.shape} and teacher {w0.shape} differ")
        k_in = w0.shape[1]
        if k_in < 2:
            raise ValueError(f"layer {layer + 1}: cross-fitting needs at least two input coordinates")
        if permutation is not None:
            w = w[:, permutation]
        forbidden = None
        if layer == last:
            v = np.asarray(readout, float)
            forbidden = np.abs(v[:, None] - v[None, :]) > tolerance
        split = rng.permutation(k_in)
        halves = (split[:k_in // 2], split[k_in // 2:])
        products = np.empty_like(w0)
        for fit, measure in (halves, halves[::-1]):
            gain = w[:, fit] @ w0[:, fit].T
            if forbidden is not None:
                gain[forbidden] = -1e300
            teacher_index, student_index = linear_sum_assignment(-gain.T)
            match = student_index[np.argsort(teacher_index)]  # student neuron of each teacher neuron
            products[:, measure] = w[match][:, measure] * w0[:, measure]
        weights.append(products)
        neurons.append(products.mean(axis=1))
        # the next layer's columns: the matching on every coordinate (not an estimate, a labelling)
        gain = w @ w0.T
        if forbidden is not None:
            gain[forbidden] = -1e300
        teacher_index, student_index = linear_sum_assignment(-gain.T)
        permutation = student_index[np.argsort(teacher_index)]
    return neurons, weights


#: equal bins of the neuron quantile u (the fraction of neurons with a stronger readout) of the measured
#: per-neuron maps
NEURON_BINS = 8


def neuron_quantile_maps(student, teacher, readout, *, bins: int = NEURON_BINS, groups=None, seed: int = 0,
                         overlaps=None):
    """Cross-fitted per-neuron overlaps binned on neuron quantiles, as the theory's per-neuron maps.

    Neurons are ordered by the strength of their (teacher's) readout: for two hidden layers the
    first-layer neurons by their effective readout ``|s_j| = |(vᵀW⁰₂)_j|/√k₂`` and the second-layer
    neurons by ``|v_i|``; for one hidden layer the neurons by ``|v_j|``. The quantile of neuron ``j`` is
    ``u_j = (r_j + ½)/k`` with ``r_j`` the number of neurons with a stronger readout (ties broken by
    index), and the overlaps of :func:`cross_fitted_overlaps` (mean 0 for an unlearned neuron) are
    averaged in ``bins`` equal bins of ``u``.

    Parameters
    ----------
    student, teacher : sequence of ndarray
        Weights of one or two hidden layers.
    readout : ndarray, shape (k_L,)
    bins : int, keyword-only
    groups : None, int or array_like, keyword-only
        Readout-strength groups of the second-layer neurons (two hidden layers): ``None`` — the
        distinct ``|v|`` of ``readout``; an array — the strengths ``|v|`` of a discrete readout law,
        each neuron joining the nearest; an int ``m`` — ``m`` equal quantile bins of ``|v|`` (for a
        continuous law). Groups are ordered strongest first.
    seed : int, keyword-only
        Seed of the cross-fitting split.
    overlaps : tuple, keyword-only, optional
        ``(neurons, weights)`` of :func:`cross_fitted_overlaps` already computed for this pair (then
        ``seed`` is not used).

    Returns
    -------
    layer_1 : ndarray, shape (bins,)
        Mean overlap of the first-layer neurons in each quantile bin (NaN in an empty bin).
    layer_2 : ndarray, shape (n_groups, bins)
        Two hidden layers: mean per-weight overlap of the pairs (second-layer neurons of readout
        strength group ``g``, first-layer neurons in bin ``b``; NaN where a group is empty); one
        hidden layer: an empty array of shape (0, bins). Deeper networks: NaN.

    Raises
    ------
    ValueError
        If ``bins`` or an integer ``groups`` is smaller than 1.
    """
    teacher = [np.asarray(w, float) for w in teacher]
    v = np.asarray(readout, float)
    bins = int(bins)
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    strength_v = np.abs(v)
    member, n_groups = _readout_membership(strength_v, groups)
    if len(teacher) > 2:
        return np.full(bins, np.nan), np.full((n_groups, bins), np.nan)
    neurons, weights = overlaps if overlaps is not None else cross_fitted_overlaps(student, teacher, v, seed=seed)
    strength = strength_v if len(teacher) == 1 else np.abs(v @ teacher[1]) / np.sqrt(teacher[1].shape[0])
    which = _quantile_bin(strength, bins)

    def binned(values):
        out = np.full(bins, np.nan)
        for b in range(bins):
            sel = which == b
            if np.any(sel) and values.shape[0]:
                out[b] = float(np.mean(values[..., sel]))
        return out

    layer_1 = binned(neurons[0])
    if len(teacher) == 1:
        return layer_1, np.empty((0, bins))
    layer_2 = np.array([binned(weights[1][member == g]) for g in range(n_groups)])
    return layer_1, layer_2


def _readout_membership(strength, groups):
    """Group index (strongest first) of each second-layer neuron and the number of groups.

    ``groups`` as in :func:`neuron_quantile_maps`; raises ValueError for an integer below 1.
    """
    if groups is not None and np.ndim(groups) == 0:
        n_groups = int(groups)
        if n_groups < 1:
            raise ValueError(f"groups must be >= 1, got {groups}")
        return _quantile_bin(strength, n_groups), n_groups
    values = np.round(strength, 12) if groups is None else np.abs(np.asarray(groups, float))
    values = np.unique(values)[::-1]
    return np.argmin(np.abs(strength[:, None] - values[None, :]), axis=1), values.size


def _quantile_bin(strength, bins):
    """Bin ``0..bins-1`` of each neuron's quantile ``u = (r + ½)/k``, ``r`` = number of stronger neurons."""
    k = strength.size
    rank = np.empty(k, dtype=int)
    rank[np.argsort(-strength, kind="stable")] = np.arange(k)
    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.clip(np.searchsorted(edges, (rank + 0.5) / k, side="right") - 1, 0, bins - 1)



def overlap_matrices(student, teacher):
    """Unmatched overlap matrices ``W_ℓ W⁰_ℓᵀ / k_{ℓ−1}`` (entries are permutation invariant)."""
    return [np.asarray(w, float) @ np.asarray(w0, float).T / np.asarray(w0).shape[1]
            for w, w0 in zip(student, teacher)]


def r2_overlap(student, teacher, readout) -> float:
    """``R₂ = 1 − ‖S − S⁰‖²_F / (2 k d²)`` with ``S = Wᵀ diag(v) W`` (one hidden layer).

    Parameters
    ----------
    student, teacher : sequence of ndarray
        Weights; only one hidden layer is supported.
    readout : ndarray, shape (k,)

    Returns
    -------
    float
        NaN for deeper networks.
    """
    if len(teacher) != 1:
        return float("nan")
    w, w0 = np.asarray(student[0], float), np.asarray(teacher[0], float)
    v = np.asarray(readout, float)
    k, d = w0.shape
    s = w.T @ (v[:, None] * w)
    s0 = w0.T @ (v[:, None] * w0)
    return float(1.0 - np.sum((s - s0) ** 2) / (2.0 * k * d * d))


@dataclass
class ChainMeasurement:
    """Statistics of one chain (one teacher, one α, one start).

    Attributes
    ----------
    error : float
        Half Gibbs error averaged over kept samples (samplers) or test error (Adam).
    posterior_mean_error : float
        ``E(⟨λ⟩ − λ⁰)²`` over kept samples (equals ``error`` for Adam).
    overlap : ndarray, shape (L,)
        Mean matched per-neuron overlap per layer (averaged over neurons and samples).
    r2 : float
        Mean ``R₂`` over kept samples (NaN for L > 1).
    histogram : ndarray, shape (L, bins)
        Counts of matched per-neuron overlaps.
    matrix_histogram : ndarray, shape (L, bins)
        Counts of all entries of the overlap matrices.
    replica_error, replica_overlap, replica_r2 : float / ndarray
        Sample–sample versions of ``error``, ``overlap``, ``r2`` (Nishimori check; NaN if
        fewer than two samples were kept).
    neuron_map_layer_1, neuron_map_layer_2 : ndarray, shapes (bins,) and (n_groups, bins)
        Cross-fitted per-neuron maps on neuron quantiles averaged over the samples
        (:func:`neuron_quantile_maps`; NaN without weights).
    unbiased_overlap : ndarray, shape (L,)
        Mean cross-fitted per-neuron overlap per layer (:func:`cross_fitted_overlaps`: mean 0 for an
        unlearned network, unlike ``overlap``), averaged over the samples; NaN without weights.
    """

    error: float
    posterior_mean_error: float
    overlap: np.ndarray
    r2: float
    histogram: np.ndarray
    matrix_histogram: np.ndarray
    replica_error: float
    replica_overlap: np.ndarray
    replica_r2: float
    neuron_map_layer_1: np.ndarray | None = None
    neuron_map_layer_2: np.ndarray | None = None
    unbiased_overlap: np.ndarray | None = None


def measure_chain(samples, test_outputs, teacher_weights, teacher_test_outputs, readout, *,
                  point_estimate: bool = False, max_overlap_samples: int = 50,
                  bin_edges=OVERLAP_BIN_EDGES, matrix_estimate=None, neuron_groups=None) -> ChainMeasurement:
    """Measure one chain.

    Parameters
    ----------
    samples : sequence of ndarray or None
        Kept weights, one array per layer with a leading sample axis; None for a method
        without weights (GAMP-RIE): overlaps and replica statistics are NaN, histograms 0.
    test_outputs : ndarray, shape (num_kept, n_test)
        ``λ(x; W^a)`` on the test inputs.
    teacher_weights : sequence of ndarray
    teacher_test_outputs : ndarray, shape (n_test,)
    readout : ndarray
    point_estimate : bool
        Adam: error is ``E(λ̂ − λ⁰)²`` instead of half the Gibbs error.
    max_overlap_samples : int
        Overlaps are computed on at most this many evenly spaced kept samples.
    bin_edges : ndarray
        Histogram bins.
    matrix_estimate : ndarray, shape (d, d), optional
        With ``samples=None``: a point estimate ``Ŝ`` of ``S⁰ = W⁰ᵀdiag(v)W⁰/√(kd)``;
        ``r2`` is then ``1 − ‖Ŝ − S⁰‖²_F/d``, the overlap ``m_S`` of a posterior mean
        (the factor ½ of :func:`r2_overlap` is for two independent samples).
    neuron_groups : None, int or array_like
        Readout-strength groups of the per-neuron maps (``groups`` of :func:`neuron_quantile_maps`).

    Returns
    -------
    ChainMeasurement
    """
    outputs = np.asarray(test_outputs, float)
    target = np.asarray(teacher_test_outputs, float)
    num_kept = outputs.shape[0]
    squared = np.mean((outputs - target[None, :]) ** 2, axis=1)
    error = float(np.mean(squared) if point_estimate else 0.5 * np.mean(squared))
    posterior_mean_error = float(np.mean((outputs.mean(axis=0) - target) ** 2))
    if samples is None:
        return _point_measurement(error, posterior_mean_error, teacher_weights, readout, matrix_estimate,
                                  len(bin_edges) - 1, neuron_groups)

    chosen = np.unique(np.linspace(0, num_kept - 1, min(num_kept, max_overlap_samples)).astype(int))
    layers = len(teacher_weights)
    bins = len(bin_edges) - 1
    histogram = np.zeros((layers, bins))
    matrix_histogram = np.zeros((layers, bins))
    overlap_sum = np.zeros(layers)
    r2_values = []
    maps_1, maps_2, unbiased = [], [], []
    for a in chosen:
        student = [s[a] for s in samples]
        crossed = cross_fitted_overlaps(student, teacher_weights, readout, seed=int(a))
        unbiased.append([q.mean() for q in crossed[0]])
        m1, m2 = neuron_quantile_maps(student, teacher_weights, readout, groups=neuron_groups, overlaps=crossed)
        maps_1.append(m1)
        maps_2.append(m2)
        q, _ = matched_overlaps(student, teacher_weights, readout)
        for layer in range(layers):
            overlap_sum[layer] += q[layer].mean()
            histogram[layer] += _histogram(q[layer], bin_edges)
        for layer, m in enumerate(overlap_matrices(student, teacher_weights)):
            matrix_histogram[layer] += _histogram(m.ravel(), bin_edges)
        r2_values.append(r2_overlap(student, teacher_weights, readout))
    overlap = overlap_sum / len(chosen)

    replica_error = float("nan")
    replica_overlap = np.full(layers, np.nan)
    replica_r2 = float("nan")
    if num_kept >= 2:
        half = num_kept // 2
        first, second = np.arange(half), np.arange(half) + (num_kept - half)
        replica_error = float(0.5 * np.mean((outputs[first] - outputs[second]) ** 2))
        pairs = [(a, b) for a, b in zip(first, second)]
        pairs = [pairs[i] for i in np.unique(np.linspace(0, len(pairs) - 1,
                                                         min(len(pairs), max_overlap_samples)).astype(int))]
        rep_sum, rep_r2 = np.zeros(layers), []
        for a, b in pairs:
            q, _ = matched_overlaps([s[a] for s in samples], [s[b] for s in samples], readout)
            rep_sum += np.array([x.mean() for x in q])
            rep_r2.append(r2_overlap([s[a] for s in samples], [s[b] for s in samples], readout))
        replica_overlap = rep_sum / len(pairs)
        replica_r2 = float(np.mean(rep_r2))
    return ChainMeasurement(
        error=error,
        posterior_mean_error=posterior_mean_error,
        overlap=overlap,
        r2=float(np.mean(r2_values)),
        histogram=histogram,
        matrix_histogram=matrix_histogram,
        replica_error=replica_error,
        replica_overlap=replica_overlap,
        replica_r2=replica_r2,
        neuron_map_layer_1=np.mean(maps_1, axis=0),
        neuron_map_layer_2=np.mean(maps_2, axis=0),
        unbiased_overlap=np.mean(unbiased, axis=0),
    )


def classification_measures(test_outputs, teacher_test_outputs, test_labels, *, centre=0.0,
                            threshold=0.0) -> dict:
    """Classification errors and their Nishimori check for labels ±1 (module docstring).

    Parameters
    ----------
    test_outputs : array_like, shape (num_kept, n_test)
        ``λ(x; W^a)`` of the kept samples on the test inputs (uncentred).
    teacher_test_outputs : array_like, shape (n_test,)
        ``λ(x; W⁰)`` (uncentred).
    test_labels : array_like, shape (n_test,)
        Fresh labels ``y ∈ {−1, +1}`` drawn from the channel at the teacher's centred output.
    centre : float, keyword-only
        ``μ₀ Σv/√k_L``, removed from every output.
    threshold : float, keyword-only
        The channel's threshold θ (0 for the logistic channel).

    Returns
    -------
    dict of float
        ``classification_error`` — ``P(ŷ ≠ y)`` of the Bayes classifier ``ŷ = sign(⟨λ_c⟩ − θ)``
        (mean over the kept samples); ``gibbs_classification_error`` — ``P(sign(λ_c^a − θ) ≠ y)``
        averaged over the kept samples; ``sign_disagreement`` — ``P(ŷ ≠ sign(λ_c⁰ − θ))``;
        ``teacher_disagreement`` and ``replica_disagreement`` — ``P(sign(λ_c^a − θ) ≠ sign(λ_c⁰ − θ))``
        over the kept samples and ``P(sign(λ_c^a − θ) ≠ sign(λ_c^b − θ))`` over the pairs (first half,
        second half) of the kept samples (NaN with fewer than two); equal in expectation at equilibrium
        (Nishimori). A decision value exactly at θ counts as +1.

    Raises
    ------
    ValueError
        Shapes that do not match, or labels other than ±1.
    """
    outputs = np.asarray(test_outputs, float) - float(centre)
    teacher = np.asarray(teacher_test_outputs, float) - float(centre)
    y = np.asarray(test_labels, float)
    if outputs.ndim != 2 or outputs.shape[1] != teacher.shape[0] or y.shape != teacher.shape:
        raise ValueError(f"shapes do not match: outputs {outputs.shape}, teacher {teacher.shape}, labels {y.shape}")
    if not np.all(np.abs(y) == 1.0):
        raise ValueError("classification measures need labels in {-1, +1}")
    theta = float(threshold)

    def decide(values):
        return np.where(values >= theta, 1.0, -1.0)

    samples, bayes, truth = decide(outputs), decide(outputs.mean(axis=0)), decide(teacher)
    out = {"classification_error": float(np.mean(bayes != y)),
           "gibbs_classification_error": float(np.mean(samples != y[None, :])),
           "sign_disagreement": float(np.mean(bayes != truth)),
           "teacher_disagreement": float(np.mean(samples != truth[None, :])),
           "replica_disagreement": float("nan")}
    num_kept = outputs.shape[0]
    if num_kept >= 2:
        half = num_kept // 2
        out["replica_disagreement"] = float(np.mean(samples[:half] != samples[num_kept - half:]))
    return out


def _point_measurement(error, posterior_mean_error, teacher_weights, readout, matrix_estimate, bins,
                       neuron_groups=None):
    """:class:`ChainMeasurement` of a method that returns no weights (GAMP-RIE)."""
    layers = len(teacher_weights)
    r2 = float("nan")
    if matrix_estimate is not None and layers == 1:
        w0 = np.asarray(teacher_weights[0], float)
        v = np.asarray(readout, float)
        k, d = w0.shape
        s0 = w0.T @ (v[:, None] * w0) / np.sqrt(k * d)
        r2 = float(1.0 - np.sum((np.asarray(matrix_estimate, float) - s0) ** 2) / d)
    nan = np.full(layers, np.nan)
    groups = _readout_membership(np.abs(np.asarray(readout, float)), neuron_groups)[1] if layers == 2 else 0
    return ChainMeasurement(error=error, posterior_mean_error=posterior_mean_error, overlap=nan, r2=r2,
                            histogram=np.zeros((layers, bins)), matrix_histogram=np.zeros((layers, bins)),
                            replica_error=float("nan"), replica_overlap=nan.copy(), replica_r2=float("nan"),
                            neuron_map_layer_1=np.full(NEURON_BINS, np.nan),
                            neuron_map_layer_2=np.full((groups, NEURON_BINS), np.nan), unbiased_overlap=nan.copy())


def _histogram(values, bin_edges):
    """Counts with out-of-range values clipped into the end bins."""
    clipped = np.clip(values, bin_edges[0], bin_edges[-1])
    return np.histogram(clipped, bins=bin_edges)[0]


def mean_and_sem(values, axis: int = 0, keep=None):
    """Mean and standard error of the mean over teachers.

    Parameters
    ----------
    values : array_like
        Per-teacher values, teachers along ``axis``.
    axis : int
    keep : array_like of bool, optional
        Which entries enter (broadcast against ``values``, trailing axes added); the others
        (diverged or non-converged chains) are left out of both statistics.

    Returns
    -------
    mean, sem : ndarray
        ``sem = std(ddof=1)/√T`` over the ``T`` entries kept; the mean is NaN when none is
        kept, the sem when fewer than two are.
    """
    values = np.asarray(values, float)
    if keep is not None:
        keep = np.asarray(keep, bool)
        keep = keep.reshape(keep.shape + (1,) * (values.ndim - keep.ndim))
        kept = np.broadcast_to(keep, values.shape)
        count = kept.sum(axis=axis)
        with np.errstate(invalid="ignore", divide="ignore"):
            total = np.where(kept, values, 0.0).sum(axis=axis)
            mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
            dev = np.where(kept, values - np.expand_dims(mean, axis), 0.0)
            var = (dev ** 2).sum(axis=axis) / np.maximum(count - 1, 1)
            sem = np.where(count >= 2, np.sqrt(var / np.maximum(count, 1)), np.nan)
        return mean, sem
    count = values.shape[axis]
    mean = np.mean(values, axis=axis)
    if count < 2:
        return mean, np.full_like(mean, np.nan)
    return mean, np.std(values, axis=axis, ddof=1) / np.sqrt(count)
