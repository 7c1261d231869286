"""The theory side of the finite-size panel of ``replica-figures scaling``: per-atom overlaps of a discrete readout
law averaged on neuron-quantile bins (:func:`replica.workflow.figures.atom_quantile_bins`) are the limit of the
measured bins of :func:`replica.simulations.measurements.neuron_quantile_maps` when the teacher's readouts are
drawn from the law (checked here with many neurons drawn iid, each carrying its atom's overlap)."""

from __future__ import annotations

import numpy as np

from priors import get_readout_law
from replica.simulations.measurements import _quantile_bin
from replica.workflow.figures import atom_quantile_bins


def test_two_atoms_split_at_their_weight():
    edges = np.linspace(0.0, 1.0, 5)
    # the strong atom (|v| = 2, weight 0.375) fills bin 0 and half of bin 1
    got = atom_quantile_bins([1.0, -2.0], [0.625, 0.375], [0.1, 0.9], edges)
    np.testing.assert_allclose(got, [0.9, 0.5 * (0.9 + 0.1), 0.1, 0.1], rtol=1e-14)


def test_limit_of_the_measured_bins_for_a_power_law():
    law = get_readout_law("powerlaw:beta=0.3,k=100")
    values, weights = np.asarray(law.values, float), np.asarray(law.weights, float)
    rank = np.argsort(np.argsort(-np.abs(values)))  # 0 = the strongest atom
    overlaps = np.clip(1.2 - rank / 40.0, 0.0, 1.0)  # learned strongest first, falling to 0 at rank 48
    edges = np.linspace(0.0, 1.0, 9)
    rng = np.random.default_rng(3)
    k = 200_000
    atom = rng.choice(values.size, size=k, p=weights / weights.sum())
    which = _quantile_bin(np.abs(values[atom]), edges.size - 1)  # ties within an atom broken by index
    measured = np.array([overlaps[atom][which == b].mean() for b in range(edges.size - 1)])
    np.testing.assert_allclose(atom_quantile_bins(values, weights, overlaps, edges), measured, atol=5e-3)
