"""``--dist loadgroup`` keeps every ``xdist_group`` on one worker (tests/conftest.py).

The files that share module fixtures, HCIZ tables or compiled kernels between their tests mark them with
``pytest.mark.xdist_group``; pytest-xdist names the group in each node id (``…@group``), which pytest 9.1
stopped honouring, and every group was then split over the workers, each one computing the shared pieces
again. Here a small suite of one group of eight tests and eight ungrouped tests runs on two workers with the
session's conftest: each grouped test must run on the same worker, and its node id carries the group.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

SUITE = '''
import os
import pytest


def _record(kind, i):
    with open(os.path.join(os.environ["XDIST_GROUP_OUT"], f"{kind}{i}"), "w") as fh:
        fh.write(os.environ.get("PYTEST_XDIST_WORKER", "none"))


@pytest.mark.xdist_group("shared")
@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    _record("grouped", i)


@pytest.mark.parametrize("i", range(8))
def test_free(i):
    _record("free", i)
'''


def test_a_group_runs_on_one_worker(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST.read_text())
    (suite / "test_suite.py").write_text(SUITE)
    (suite / "pytest.ini").write_text("[pytest]\n")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "XDIST_GROUP_OUT": str(out)}
    env.pop("PYTEST_XDIST_WORKER", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-p", "no:randomly",
                           "-p", "no:cacheprovider", "-v", "test_suite.py"], cwd=suite, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    workers = {p.name: p.read_text() for p in out.iterdir()}
    assert len(workers) == 16, sorted(workers)
    grouped = {workers[f"grouped{i}"] for i in range(8)}
    assert len(grouped) == 1 and grouped <= {"gw0", "gw1"}, workers
    assert "test_grouped[0]@shared" in proc.stdout
    assert "test_free[0]@" not in proc.stdout
