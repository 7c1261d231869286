"""The scaling law of many-feature targets (issue 40, item 3; docs/theory.md §5.5).

For an activation without a degree-2 part and power-law readouts ``v_p ∝ p^−β``, β > 1/2, the derivation gives
``k_c ∝ (α/D)^{1/(2β)}`` learned groups and ``mmse ∝ (α/D)^{−(2β−1)/(2β)}`` while ``1 ≪ k_c ≪ K``. The package's
own sweeps of K = 10,000 atoms must show both exponents within 2 % over that range, for three values of β: the
exponents are derived by hand, not fitted to the package."""

from __future__ import annotations

import numpy as np
import pytest

from replica.activations import get_activation
from replica.continuation.sweep import sweep
from replica.models.shallow import ShallowModel

DELTA, K = 0.04, 10_000


def scaling_fit(beta, k=K, delta=DELTA, alphas=None):
    """``(slope of log mmse, slope of log k_c)`` against ``log(α/D)`` over ``10 ≤ k_c ≤ k/10`` of the equilibrium,
    and the number of points fitted."""
    alphas = np.geomspace(0.05, 50.0, 25) if alphas is None else alphas
    model = ShallowModel(get_activation("tanh2", drop_hermite=(1,)), 0.5, delta,
                         readout_law=f"powerlaw:beta={beta},k={k}")
    eq = sweep(model, alphas, progress=False).equilibrium
    mmse, kc = np.asarray(eq["mmse"]), np.asarray(eq["learned_features"])
    x = alphas / (delta + mmse)
    sel = (kc >= 10) & (kc <= k / 10)
    return (np.polyfit(np.log(x[sel]), np.log(mmse[sel]), 1)[0], np.polyfit(np.log(x[sel]), np.log(kc[sel]), 1)[0],
            int(sel.sum()))


@pytest.mark.parametrize("beta", [1.0, 1.5, 2.0])
def test_error_and_learned_width_follow_the_derived_exponents(beta):
    slope, width, points = scaling_fit(beta)
    assert points >= 10  # at least a decade in α/D
    assert abs(slope / (-(2 * beta - 1) / (2 * beta)) - 1.0) < 0.02, slope
    assert abs(width / (1 / (2 * beta)) - 1.0) < 0.03, width
