"""The tabulated ``g``, ``g'`` of the §6.1 solver (:class:`replica.models.deep.KernelTable`) against the exact
methods of the activation.

Tolerances: the table's own measured bound (``error``, taken when it is built at points between its nodes)
must hold on a dense grid of 40 600 points to a factor 3 (what exceeds the bound there is the noise of the
exact methods themselves: ReLU's closed form loses digits next to q = 1, 1e-12 after the ×89 of unit
variance), and must be below :data:`~replica.models.deep.TABLE_TOLERANCE` (1e-11) for the model to use it;
for the quick-start activation (tanh 2x without degrees ≤ 2, unit variance) both are below 1e-13. With the
table the model's kernel equals the exact one to 1e-13 (K, C) and 1e-12 relative (gradients), its map to
1e-11 absolute (overlaps in [0, 1]; the gaussian readout law's largest v² ≈ 14 multiplies the table's
error), its conjugates to 1e-11 (absolute or relative), and its sweep to 1e-9 (mmse, free entropy, α_sp, α_c).
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from replica.branches import sweep
from replica.models import deep as deep_module
from replica.models.deep import TABLE_TOLERANCE, DeepModel, KernelTable

MOD = {"drop_hermite": (0, 1, 2), "unit_variance": True}
DENSE = np.concatenate([np.linspace(-1.0, 1.0, 40001), 1.0 - np.geomspace(1e-14, 1e-2, 200),
                        np.geomspace(1e-300, 0.2, 300), -np.geomspace(1e-300, 0.2, 100)])


def _activation(name):
    return DeepModel(name, [1.0], 0.1, **MOD).activation


@pytest.mark.parametrize("name", ["tanh2", "tanh", "erf", "relu", "elu", "sigmoid", "softplus"])
def test_measured_bound_holds_on_a_dense_grid(name):
    act = _activation(name)
    table = KernelTable(act, cache=False)
    g, gp = table.arrays(DENSE)
    dev_g = np.max(np.abs(g - act.g(DENSE)))
    dev_gp = np.max(np.abs(gp - act.g_prime(DENSE)))
    # plus the rounding of the exact methods themselves, which differs between CPUs (NumPy's SIMD arccos and
    # tanh): 2.7e-14 against a bound of 2.5e-14 for tanh at q = 0.5 on the development machine of 2026-12-05
    floor_g, floor_gp = (64 * np.finfo(float).eps * np.max(np.abs(v)) for v in (act.g(DENSE), act.g_prime(DENSE)))
    assert dev_g <= 3.0 * table.error_g + floor_g, (dev_g, table.error_g)
    assert dev_gp <= 3.0 * table.error_g_prime + floor_gp, (dev_gp, table.error_g_prime)
    if name == "tanh2":  # the quick start
        assert table.error < 1e-13 and max(dev_g, dev_gp) < 1e-13
    if name in ("tanh2", "tanh", "erf", "relu", "elu"):
        assert table.error <= TABLE_TOLERANCE


def test_scalar_and_array_evaluations_are_the_same_operations():
    table = KernelTable(_activation("tanh2"), cache=False)
    q = DENSE[::37]
    g, gp = table.arrays(q)
    scalar = np.array([table.both(float(v)) for v in q])
    # the same operations up to the last bits of arccos (math.acos and NumPy's SIMD arccos differ by an ulp on
    # some CPUs: 3e-15 on g' ≈ 4.8 on the development machine of 2026-12-05); another formula would differ by
    # the table's error, 1e-14 to 1e-13
    ulps = 8 * np.finfo(float).eps
    np.testing.assert_allclose(scalar[:, 0], g, rtol=0, atol=ulps * np.max(np.abs(g)))
    np.testing.assert_allclose(scalar[:, 1], gp, rtol=0, atol=ulps * np.max(np.abs(gp)))


def test_zero_is_exact_and_the_series_keeps_relative_accuracy():
    act = _activation("tanh2")
    table = KernelTable(act, cache=False)
    assert table.both(0.0) == (0.0, 0.0)
    mu3 = act.hermite(3)
    for q in (1e-8, 1e-5, 1e-3):  # g = μ₃² q³/6 + O(q⁵), g' = μ₃² q²/2 + O(q⁴)
        g, gp = table.both(q)
        assert g == pytest.approx(mu3**2 * q**3 / 6, rel=1e-5)
        assert gp == pytest.approx(mu3**2 * q**2 / 2, rel=1e-5)


def test_outside_the_domain_the_exact_methods_answer():
    act = _activation("tanh2")
    table = KernelTable(act, cache=False)
    for bad in (1.5, -1.0 - 1e-9, float("nan")):
        with pytest.raises(ValueError):
            table.both(bad)
        with pytest.raises(ValueError):
            table.arrays(np.array([0.5, bad]))
    g, gp = table.both(1.0 + 1e-13)  # within the exact methods' rounding allowance: clipped to 1
    assert g == pytest.approx(float(act.g(1.0)), abs=1e-13)


def test_cached_table_is_the_built_one(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", str(tmp_path))
    act = _activation("tanh2")
    built = KernelTable(act)
    assert not built.from_cache and any(tmp_path.iterdir())
    loaded = KernelTable(act)
    assert loaded.from_cache
    q = DENSE[::11]
    for a, b in zip(built.arrays(q), loaded.arrays(q)):
        np.testing.assert_array_equal(a, b)
    assert loaded.error == built.error
    # another activation (other Hermite coefficients) or another version of the exact methods: another key
    other = DeepModel("tanh", [1.0], 0.1, **MOD).activation
    key = deep_module._table_key(act, 48, 10, 0.1)
    assert key != deep_module._table_key(other, 48, 10, 0.1)
    assert "source=" in key
    monkeypatch.setenv("REPLICA_HCIZ_CACHE", "off")
    assert not KernelTable(act).from_cache


def test_an_unresolved_activation_keeps_the_exact_methods():
    model = DeepModel("softplus", [1.0], 0.1, **MOD)  # its g deviates from the table by 1e-11 (scale ≈ 40)
    table = KernelTable(model.activation, cache=False)
    if table.error > TABLE_TOLERANCE:
        assert model.kernel_table is None
    x = np.array([0.7])
    np.testing.assert_allclose(model.kernel(x)[0], model.kernel_exact(x)[0], rtol=0, atol=1e-11)


@pytest.mark.parametrize("gammas, readout", [([1.0], "ones"), ([1.0, 1.0], "ones"), ([0.7, 1.3, 0.5], "4point"),
                                             ([1.0, 0.5], "gaussian")])
def test_kernel_and_map_equal_the_exact_ones(gammas, readout):
    model = DeepModel("tanh2", gammas, 0.1, readout_law=readout, **MOD)
    exact = DeepModel("tanh2", gammas, 0.1, readout_law=readout, kernel_table=False, **MOD)
    assert model.kernel_table is not None and exact.kernel_table is None
    rng = np.random.default_rng(3)
    n = len(gammas) - 1 + model.n_readout
    points = [rng.uniform(0.0, 1.0, n) for _ in range(20)] + [np.zeros(n), np.full(n, 1.0 - 1e-6)]
    for x in points:
        K, gi, gl, C = model.kernel(x)
        Ke, gie, gle, Ce = exact.kernel(x)
        assert K == pytest.approx(Ke, abs=1e-13)
        np.testing.assert_allclose(gi, gie, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(gl, gle, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(C, Ce, rtol=0, atol=1e-13)
        for alpha in (2.0, 6.0):
            np.testing.assert_allclose(model.update(alpha, x), exact.update(alpha, x), rtol=0, atol=1e-11)
            got, want = model.conjugates(alpha, x), exact.conjugates(alpha, x)
            for a, b in zip(got, want):
                np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)
    np.testing.assert_array_equal(model.update(3.0, np.zeros(n)), np.zeros(n))


def test_sweep_equals_the_exact_kernel_sweep():
    grid = np.linspace(2.0, 8.0, 13)
    res = sweep(DeepModel("tanh2", [1.0, 1.0], 0.1, **MOD), grid, progress=False)
    ref = sweep(DeepModel("tanh2", [1.0, 1.0], 0.1, kernel_table=False, **MOD), grid, progress=False)
    for key in ("alpha_sp", "alpha_c"):
        assert res.transitions[key] == pytest.approx(ref.transitions[key], rel=0, abs=1e-9)
    assert list(res.equilibrium["branch"]) == list(ref.equilibrium["branch"])
    for key in ("mmse", "free_entropy"):
        np.testing.assert_allclose(res.equilibrium[key], ref.equilibrium[key], rtol=0, atol=1e-9)
    assert set(res.branches) == set(ref.branches)


def test_warm_deep_sweep_loads_no_numba(tmp_path):
    # the quick start's solver needs neither numba nor the activation's compiled evaluator once its table is
    # cached (the first run builds it with the exact methods, which load numba)
    code = ("from replica.workflow.cli import sweep_main\n"
            "sweep_main(['--layers', '2', '--gamma', '1,1', '--activation', 'tanh2', '--drop-hermite', '0,1,2',"
            " '--unit-variance', '--alpha', '3:5:3', '--quiet', '--overwrite', '-o', 'd.h5'])\n"
            "import json, sys\nprint(json.dumps({m: m in sys.modules for m in ('numba', 'dask', 'tqdm')}))")
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert (tmp_path / "d.h5").is_file()
    assert not any(loaded.values()), loaded
