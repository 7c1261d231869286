"""Test-session settings shared by every test module.

The HCIZ table cache (:mod:`hciz.cache`) of the test session lives in a fresh temporary
directory, so that the tests neither read tables left by earlier runs or other versions
nor write into the user's ``~/.cache/replica-hciz``; subprocesses (command-line tests)
inherit the setting. Tests of the cache itself point it elsewhere with ``monkeypatch``.

In a parallel run (``pytest -n …``, pytest-xdist) the workers share the directory of the
controlling process (passed to them in ``REPLICA_HCIZ_TEST_SESSION_CACHE``), so that a table is
built once per run, not once per worker: writes to the cache are atomic (:mod:`hciz.cache`), and
only the process that made the directory removes it, at its exit (after the workers').

BLAS runs on one thread in the test session and its subprocesses (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` = 1 unless set; threadpoolctl for this process, whose
numpy is loaded by plugins before this file): the tests' matrices are small, and a multithreaded
BLAS beside a second test process (or other jobs) on a 2-core machine ran them 8–30 times slower
(tests/test_closure.py's matrix SDE: 2.3 s on one thread, 17–69 s on two; the same measurement as
replica/simulations/gamp_rie.py's, scripts/benchmarks/bench_gamp_rie_threads.py).

Compilations are cached for the session: ``PYTHONDONTWRITEBYTECODE`` (set on some machines) is removed, so that
the test processes and their subprocesses write and reuse the package's byte code (a fresh clone otherwise compiles
every imported module in each of the suite's command-line subprocesses, about 0.1 s each), and JAX's persistent
compilation cache (``JAX_COMPILATION_CACHE_DIR``, in the session directory above, shared by the workers) keeps the
samplers compiled once per shape (the quick per-neuron figure: 13.6 s of CPU with an empty cache, 7.8 s warm).
Measured from a fresh clone with the README's test command, idle 2-core machine, 2026-12-06: 10.0 min of CPU
(5.5 min of wall time) before these two settings and the lighter first numba compilation (hciz.compiled), 8.7 min
of CPU (5.1 min of wall time) after.

``--dist loadgroup`` (the README's command) sends every test of one ``xdist_group`` to one worker, so that
module fixtures, HCIZ tables and compiled kernels shared by those tests are computed once per run. pytest-xdist
names the group by appending ``@group`` to each node id; from pytest 9.1 on its assignment to ``item._nodeid``
no longer changes the node id (now ``str(item._id)``), and every group was silently split over the workers
(each worker then built the group's fixtures, tables and kernels again, at the same time as the other).
:func:`pytest_collection_modifyitems` below sets the suffix where pytest-xdist could not
(``tests/test_xdist_groups.py`` checks it).
"""
import atexit
import dataclasses
import os
import shutil
import sys
import tempfile

import pytest

_SHARED = "REPLICA_HCIZ_TEST_SESSION_CACHE"
_inherited = os.environ.get(_SHARED)
if os.environ.get("PYTEST_XDIST_WORKER") and _inherited and os.path.isdir(_inherited):
    _SESSION_CACHE = _inherited  # a worker: the controller's directory
else:
    _SESSION_CACHE = tempfile.mkdtemp(prefix="replica-hciz-test-cache-")
    os.environ[_SHARED] = _SESSION_CACHE
    atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)
os.environ["REPLICA_HCIZ_CACHE"] = _SESSION_CACHE

# Byte-code and JAX compilations are cached for the session (module docstring): a fresh clone otherwise
# compiles every module of the package again in each of the suite's subprocesses, and every JAX sampler again
# in each test that runs it with the same shapes.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.join(_SESSION_CACHE, "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
try:
    from threadpoolctl import threadpool_limits

    _BLAS_LIMIT = threadpool_limits(limits=int(os.environ["OPENBLAS_NUM_THREADS"]), user_api="blas")
except Exception:  # noqa: BLE001 - threadpoolctl is a dependency; a failure only costs time
    _BLAS_LIMIT = None


def pytest_configure(config):
    """Under ``-n N`` (N ≥ 2), in the controlling process: compile the numba kernels once, one family per process
    in parallel (tests/_warm_numba.py), before the workers start, instead of in every worker that reaches them
    first. A failure only costs time: the workers then compile as before."""
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(__file__), "_warm_numba.py")
    jobs = [subprocess.Popen([sys.executable, script, family], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for family in ("deep", "two_layer")]
    for job in jobs:
        try:
            job.wait(timeout=900)
        except subprocess.TimeoutExpired:
            job.kill()


def _xdist_group_suffix(item):
    """``@name`` of the item's ``xdist_group`` marks, as pytest-xdist writes it ("" without a mark)."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "@" + "_".join(sorted(names)) if names else ""


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """On a ``--dist loadgroup`` worker: the ``@group`` suffix of the node ids, where pytest-xdist's was lost."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        suffix = _xdist_group_suffix(item)
        node_id = getattr(item, "_id", None)  # pytest >= 9.1: the node id is str(item._id)
        if not suffix or item.nodeid.endswith(suffix) or node_id is None:
            continue
        named = dataclasses.replace(node_id)
        object.__setattr__(named, "_str_cache", item.nodeid + suffix)  # frozen: the cached string form
        item._id = named
