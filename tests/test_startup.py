"""Start-up: what a command imports (docs/architecture.md, "Start-up"), and the lazy kernels.

No timings here (they live in scripts/benchmarks/bench_startup.py): these tests check which
heavy modules a short command loads, and that a kernel run as Python and the same kernel
compiled by numba give the same numbers.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

HEAVY = ("numba", "scipy.optimize", "scipy.special", "matplotlib", "dask", "jax", "h5py", "tqdm",
         "numpy.ma")  # numpy.ma: 7 ms, imported by np.unique (the α grid checks use a sorted difference)


def _loaded_after(code, tmp_path):
    script = code + "\nimport json, sys\nprint(json.dumps({m: m in sys.modules and " \
        "type(sys.modules[m]).__name__ == 'module' for m in %r}))" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_help_loads_no_heavy_module(tmp_path):
    loaded = _loaded_after("from replica.workflow.cli import sweep_main\n"
                           "try:\n    sweep_main(['--help'])\nexcept SystemExit:\n    pass", tmp_path)
    assert not any(loaded.values()), loaded


def test_short_universal_sweep_loads_only_h5py(tmp_path):
    code = ("from replica.workflow.cli import sweep_main\n"
            "sweep_main(['--branches', 'universal', '--alpha', '0.02:0.4:50', '--quiet', '--overwrite', '-o', 'u.h5'])")
    _loaded_after(code, tmp_path)  # warm caches: the HCIZ table (built with numba once) and numba's
    loaded = _loaded_after(code, tmp_path)
    assert (tmp_path / "u.h5").is_file()
    # the universal fixed point is found by the engine (replica.engine): no scipy.optimize, numba, ...
    assert {m for m, v in loaded.items() if v} == {"h5py"}, loaded


def _compiled(kernel):
    from priors._kernels import LazyKernel

    return kernel.compile() if isinstance(kernel, LazyKernel) else kernel  # after compile: the dispatcher


def test_python_mode_and_compiled_kernels_agree():
    from hciz import readout_channel, symmetric
    from priors import get_readout_law

    br, C, D, K, ktot = readout_channel(0.5, get_readout_law("4point")).table
    A = 0.7
    lam = np.concatenate([[0.0, np.inf], np.geomspace(1e-6, 1e6, 41)])
    m = np.linspace(0.0, 0.999, 23)
    cases = [(symmetric._mmse_s, [(x, br, C) for x in lam]),
             (symmetric._dmmse_s, [(x, br, C, D) for x in lam]),
             (symmetric._iota_s, [(x, br, K, ktot, A) for x in lam]),
             (symmetric._inverse_s, [(x, br, C, D, A) for x in m])]  # calls the others: callees compiled first
    for kernel, args in cases:
        python = np.array([kernel.py_func(*a) for a in args])
        compiled = np.array([_compiled(kernel)(*a) for a in args])
        np.testing.assert_allclose(python, compiled, rtol=1e-13, atol=1e-300, err_msg=kernel.__name__)
    from priors._kernels import LazyKernel

    assert not isinstance(symmetric._eval, LazyKernel)  # replaced by its dispatcher in the module
