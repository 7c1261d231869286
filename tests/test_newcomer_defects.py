"""Defects a newcomer ran into (issue 32): each test failed before its fix."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from commands import one_line

ROOT = Path(__file__).resolve().parent.parent


def _python(code, *, cwd=None, timeout=120, env=None):
    """Run ``code`` in a fresh interpreter with the repository on the path; (returncode, stdout, stderr)."""
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
                    OMP_NUM_THREADS="1", **(env or {}))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=full_env)
    return proc.returncode, proc.stdout, proc.stderr


# --------------------------------------------------------------------------- defect 2
def test_reference_level_child_ends_quietly_when_terminated():
    """``replica-sgd --plot``: the child computing the reference levels, still flushing its queue (here: still
    running a thread) when the parent is done with it, is terminated; it used to inherit the commands'
    SIGTERM handler and print ``Process ForkProcess-1: Traceback … _Terminated``."""
    code = """
        import signal, threading, time
        import numpy as np
        import simulations.sgd_results as r
        from replica.workflow import cli

        def levels(params, alphas, bayes=True):   # result first, then the child lingers (as a queue flush)
            threading.Thread(target=time.sleep, args=(60,)).start()
            return {"alpha": np.asarray(alphas), "universal": np.asarray(alphas), "errors": []}

        r.reference_levels = levels
        r._CHILD_EXIT_GRACE = 0.5
        signal.signal(signal.SIGTERM, cli._raise_terminated)   # as every command installs it
        out = r.reference_levels_with_timeout({}, [1.0, 2.0], timeout=60)
        print("levels", out["universal"].tolist(), out["errors"])
    """
    rc, out, err = _python(code)
    assert rc == 0, err
    assert "levels [1.0, 2.0] []" in out
    assert "Traceback" not in err and "_Terminated" not in err, err
