"""Read-only installs (shared clusters, containers): the packages import and run with an
unwritable install directory and ``HOME``; numba's kernel cache falls back to a per-user
temporary directory, or to no cache, with one INFO line (:mod:`priors._numba_cache`).

The packages are copied to a temporary directory made read-only, and imported from there in a
subprocess (``PYTHONPATH``) with ``HOME`` read-only and ``NUMBA_CACHE_DIR``/``XDG_CACHE_HOME``
unset. Run as root, the subprocess drops ``CAP_DAC_OVERRIDE`` so that permissions apply to it.
"""

import ctypes
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("priors", "hciz", "replica")

SCRIPT = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
import numpy as np
import hciz, priors, replica
from replica.activations import get_activation
assert hciz.__file__.startswith(sys.argv[1]), hciz.__file__
# run one kernel of each package: compiled (and cached where possible)
print(float(get_activation("tanh").g(np.array([0.5]))[0]))
print(float(priors.get_weight_prior("rademacher").overlap(np.array([0.3]))[0]))
from hciz.spectral import SpectralEngine
print(len(SpectralEngine(0.5, [1.0], [1.0]).bands([1.0])))
"""


def _drop_dac_capabilities():  # pragma: no cover - runs in the child
    """As root: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH so that file modes apply."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):  # PR_CAPBSET_DROP = 24
            if libc.prctl(24, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _read_only(path):
    for dirpath, dirnames, filenames in os.walk(path):
        for name in filenames:
            p = os.path.join(dirpath, name)
            os.chmod(p, stat.S_IMODE(os.stat(p).st_mode) & ~0o222)
        os.chmod(dirpath, 0o555)


def _writable_again(path):
    for dirpath, dirnames, filenames in os.walk(path):
        os.chmod(dirpath, 0o755)


@pytest.fixture(scope="module")
def install(tmp_path_factory):
    if sys.platform != "linux":
        pytest.skip("needs Linux permissions (and prctl as root)")
    base = tmp_path_factory.mktemp("ro_install")
    site = base / "site"
    site.mkdir()
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, site / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    home = base / "home"
    home.mkdir()
    _read_only(site)
    os.chmod(home, 0o555)
    probe = subprocess.run(["sh", "-c", f"touch {site}/x 2>/dev/null && echo writable || echo denied"],
                           capture_output=True, text=True, preexec_fn=_drop_dac_capabilities)
    if probe.stdout.strip() != "denied":
        pytest.skip("cannot make a directory read-only for this user")
    yield site, home, base
    _writable_again(base)


def _run(site, home, tmpdir):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_CACHE", "XDG_", "PYTHONPATH", "REPLICA_HCIZ_CACHE"))}
    env.update(PYTHONPATH=str(site), HOME=str(home), TMPDIR=str(tmpdir), REPLICA_HCIZ_CACHE="off",
               PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", SCRIPT, str(site)], capture_output=True, text=True, env=env,
                          timeout=600, preexec_fn=_drop_dac_capabilities, cwd=str(tmpdir))


def _info_lines(stderr):
    return [ln for ln in stderr.splitlines() if "priors._numba_cache" in ln]


def test_read_only_install_caches_in_temporary_directory(install):
    site, home, base = install
    tmpdir = base / "tmp"
    tmpdir.mkdir()
    res = _run(site, home, tmpdir)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = _info_lines(res.stderr)
    assert len(lines) == 1 and lines[0].startswith("INFO") and "cached in" in lines[0], res.stderr[-2000:]
    uid = os.getuid()
    cached = list((tmpdir / f"replica-hciz-numba-cache-{uid}").rglob("*.nbi"))
    assert cached, "no kernel was cached in the fallback directory"
    assert not list(site.rglob("*.nbi"))  # nothing written into the install
    again = _run(site, home, tmpdir)  # a second process reuses the cache
    assert again.returncode == 0 and again.stdout == res.stdout, again.stderr[-2000:]


def test_nothing_writable_compiles_without_cache(install):
    site, home, base = install
    tmpdir = base / "tmp_ro"
    tmpdir.mkdir()
    os.chmod(tmpdir, 0o555)
    res = _run(site, home, tmpdir)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = _info_lines(res.stderr)
    assert len(lines) == 1 and "compiled on every run" in lines[0], res.stderr[-2000:]
