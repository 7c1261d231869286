"""Feature transitions of a many-feature target with two hidden layers (issue 40, item 2).

With two hidden layers every set of learned readout groups is a branch of its own (``layers_1_2``,
``layers_1_2-2``, …) and each group's jump is a change of the equilibrium between two of them, located by the
continuation's crossing locator. The sweep stores them in ``/feature_transitions`` (kind
``equilibrium_change``), and every point's ``learned_features``/``learned_mass``. Checked here on a 6-atom
power-law law: the counts recomputed from the stored second-layer overlaps, every group learned once and
strongest first at a located change, and the equilibrium's count at every grid α equal to the number of
located transitions below it."""

from __future__ import annotations

import numpy as np
import pytest

from priors import get_readout_law
from replica.workflow.cli import sweep_main
from replica.workflow.io import read_sweep

LAW = "powerlaw:beta=0.3,k=6"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("features2") / "features2.h5"
    assert sweep_main(["--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2", "--unit-variance",
                       "--delta", "0.1", "--readout", LAW, "--alpha", "0.5:5:10", "--quiet", "-o", str(out)]) == 0
    return read_sweep(out)


def test_learned_counts_are_the_groups_with_learned_second_layer_neurons(sweep):
    law = get_readout_law(LAW)
    v, w = np.abs(np.asarray(law.values, float)), np.asarray(law.weights, float)
    seen = set()
    for name, b in sweep["branches"].items():
        for i in np.flatnonzero(np.asarray(b["exists"], bool)):
            on = np.max(np.asarray(b["overlap_layer_2"][i], float), axis=1) > 0.1
            assert b["learned_features"][i] == np.unique(np.round(v[on], 12)).size, (name, i)
            assert abs(b["learned_mass"][i] - float(np.sum(w[on]))) < 1e-12
            seen.add(int(b["learned_features"][i]))
    assert {0, 1, 2, 3, 6} <= seen


def test_every_group_is_learned_once_strongest_first_at_a_located_change(sweep):
    ft = sweep["feature_transitions"]
    on = np.asarray(ft["equilibrium"], bool)
    assert set(np.asarray(ft["kind"])[on]) == {"equilibrium_change"}
    groups, alpha = np.asarray(ft["group"])[on], np.asarray(ft["alpha"])[on]
    assert sorted(groups.tolist()) == list(range(6))
    assert np.all(np.diff(alpha[np.argsort(groups)]) >= 0.0)
    law = get_readout_law(LAW)
    s = np.sort(np.asarray(law.values, float) ** 2)[::-1]
    np.testing.assert_allclose(np.asarray(ft["s"])[on], s[groups], rtol=1e-12)
    changes = np.asarray(sweep["equilibrium_changes"]["alpha"], float)
    assert all(min(abs(a - c) for c in changes) == 0.0 for a in alpha)
    assert np.all(np.asarray(ft["overlap_before"])[on] == 0.0) and np.all(np.asarray(ft["overlap_after"])[on] > 0.5)
    eq = sweep["equilibrium"]
    for a, k in zip(eq["alpha"], eq["learned_features"]):
        assert int(k) == int(np.sum(alpha <= a)), a
