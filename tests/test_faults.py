"""Fault injection: results are never lost (the write protocol of :mod:`replica.workflow.safe_write`).

Signals (SIGINT, SIGTERM, SIGKILL) at seeded random points of sweep, phase-diagram and
experiment runs, with and without ``--overwrite``; two concurrent writers; a file locked by
another program; a full disk (a failing ``fsync`` and a file-size limit); a corrupted
checkpoint. After each: the previous complete result is byte-identical (sha256), nothing is
left behind but the checkpoint, and ``--resume`` reproduces the uninterrupted result exactly.

Tiny problems: the deep model of docs/theory.md §6.1 (no spectral tables) on a short α grid.
"""

import errno
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from replica.workflow.cli import phase_diagram_main, plot_main, sweep_main
from replica.workflow.io import read_phase_diagram, read_sweep
from replica.workflow.safe_write import checkpoint_path, lock_path

DEEP = ["--layers", "2", "--gamma", "1,1", "--activation", "tanh2", "--drop-hermite", "0,1,2", "--unit-variance",
        "--quiet"]
GRID = ["--alpha", "1:8:40", "--delta", "0.1"]
def rng(request):
    """The random points where signals land: seeded per test (independent of the test order)."""
    return random.Random(f"issue-14:{request.node.name}")


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def leftovers(directory, keep=()):
    """Files other than results, checkpoints and ``keep``: temporary files, lock files."""
    return sorted(p.name for p in Path(directory).iterdir()
                  if p.name not in keep and (p.name.startswith(".") or p.name.endswith((".tmp", ".probe"))))


def spawn(args, *, module="replica", code=None, launcher=()):
    """Start a command in its own process group (SIGINT has its default action there)."""
    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", module]
    return subprocess.Popen(list(launcher) + cmd + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def wait_for(path, proc, timeout=300.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if Path(path).exists() or proc.poll() is not None:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} did not appear")


def interrupt(proc, sig, *, group=False, delay=0.0):
    """Send ``sig`` after ``delay`` s (to the process group for ``group``: Ctrl-C in a terminal)."""
    time.sleep(delay)
    if proc.poll() is None:
        try:
            (os.killpg if group else os.kill)(proc.pid, sig)
        except ProcessLookupError:  # pragma: no cover - finished in between
            pass
    out, err = proc.communicate(timeout=600)
    return proc.returncode, err



def finished_first(rc, sig) -> bool:
    """Whether the command finished before ``sig`` could interrupt it: exit 0, or killed by the signal's default
    action in the interpreter's shutdown. After the command has returned, Python restores the default handlers
    (``_PySignal_Fini``), so a Ctrl-C or a kill that lands then ends the process with ``-sig``, its result already
    written and its checkpoint removed (the callers check both). A SIGKILL proves nothing of the kind."""
    return rc == 0 or (rc == -sig and sig != signal.SIGKILL)

def assert_same_sweep(path, reference):
    got = read_sweep(path)
    for group in ("branches",):
        assert set(got[group]) == set(reference[group])
        for name, fields in reference[group].items():
            for key, value in fields.items():
                np.testing.assert_array_equal(got[group][name][key], value, err_msg=f"{name}/{key}")
    for key, value in reference["equilibrium"].items():
        np.testing.assert_array_equal(got["equilibrium"][key], value, err_msg=key)
    assert got["transitions"] == reference["transitions"]
    assert got["parameters"] == reference["parameters"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted sweep (in-process)."""
    out = tmp_path_factory.mktemp("ref") / "ref.h5"
    assert sweep_main(DEEP + GRID + ["-o", str(out)]) == 0
    return read_sweep(out)


@pytest.fixture(scope="module")
def previous(tmp_path_factory):
    """A complete result of an earlier run (other options), to be kept intact."""
    out = tmp_path_factory.mktemp("prev") / "previous.h5"
    assert sweep_main(DEEP + ["--alpha", "2,4", "--delta", "0.3", "-o", str(out)]) == 0
    return out


# ----------------------------------------------------------------------------- signals: sweep
@pytest.mark.parametrize("sig,overwrite", [(signal.SIGINT, True), (signal.SIGTERM, False), (signal.SIGKILL, True)],
                         ids=["SIGINT-overwrite", "SIGTERM", "SIGKILL-overwrite"])
def test_sweep_signal_keeps_previous_and_resumes_exactly(request, tmp_path, capsys, reference, previous, sig,
                                                       overwrite):
    out = tmp_path / "x.h5"
    if overwrite:
        shutil.copy(previous, out)
    before = sha256(out) if overwrite else None
    argv = DEEP + GRID + ["-o", str(out)] + (["--overwrite"] if overwrite else [])
    proc = spawn(argv + ["--checkpoint-every", "0"])
    wait_for(checkpoint_path(out), proc)
    rc, err = interrupt(proc, sig, delay=rng(request).uniform(0.0, 0.3))
    if finished_first(rc, sig):  # finished before the signal: the new result replaced the old one, complete
        assert_same_sweep(out, reference)
        assert not checkpoint_path(out).exists()
        return
    assert rc in (130, 143, -signal.SIGKILL), err
    if sig != signal.SIGKILL:
        assert "Traceback" not in err and "--resume" in err and str(checkpoint_path(out)) in err, err
    assert (sha256(out) == before) if overwrite else not out.exists()  # previous result untouched
    if overwrite:  # plain --resume would replace the previous file: refused, nothing changes
        assert sweep_main(DEEP + GRID + ["-o", str(out), "--resume"]) == 2
        assert "--overwrite" in capsys.readouterr().err and sha256(out) == before
    assert sweep_main(argv + ["--resume"]) == 0, capsys.readouterr().err  # a stale lock (SIGKILL) is taken over
    assert_same_sweep(out, reference)
    assert not checkpoint_path(out).exists() and leftovers(tmp_path) == []



@pytest.mark.parametrize("where", ["write", "release"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_the_final_write_completes_the_run(tmp_path, capsys, reference, previous, monkeypatch, sig,
                                                        where):
    """A signal that lands while the finished result replaces the target (the window that a seeded delay of the
    phase-diagram test hit in CI: exit 130, a note saying the target was unchanged, the target replaced), or
    while the output's lock is released after it: the result is complete, so the run ends normally — exit 0, the
    new result, no checkpoint or lock left."""
    from replica.workflow import io, safe_write

    owner, name = (io, "write_sweep") if where == "write" else (safe_write._Lock, "release")
    original = getattr(owner, name)

    def then_signal(*args, **kwargs):
        if where == "write":
            original(*args, **kwargs)
        os.kill(os.getpid(), sig)  # the signal's handler runs before the commit, or before the lock is released
        time.sleep(0.01)
        if where == "release":
            original(*args, **kwargs)

    monkeypatch.setattr(owner, name, then_signal)
    out = tmp_path / "x.h5"
    shutil.copy(previous, out)
    handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]
    assert sweep_main(DEEP + GRID + ["-o", str(out), "--overwrite"]) == 0, capsys.readouterr().err
    assert_same_sweep(out, reference)
    assert not checkpoint_path(out).exists() and leftovers(tmp_path) == []
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers  # the holds are undone


def test_sgd_interrupted_after_its_result_is_written_says_so(tmp_path, capsys, monkeypatch):
    """``replica-sgd`` writes its run, then adds reference levels under the same lock (a minute): a Ctrl-C there
    (here a SIGTERM during the write, held to its end; the commands handle SIGTERM in every process, while
    Ctrl-C is ignored in pytest-xdist's workers) exits 143 with a note that the run is written and how to add what
    is missing — before, the note said the replaced file was unchanged."""
    pytest.importorskip("jax")
    from replica.workflow import sgd_results
    from replica.workflow.sgd_cli import main as sgd_main

    out = tmp_path / "s.h5"
    out.write_bytes(b"an older file")
    original = sgd_results.write_sgd

    def write_then_signal(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # held until the write is done
        original(*args, **kwargs)

    monkeypatch.setattr(sgd_results, "write_sgd", write_then_signal)
    rc = sgd_main(["--dim", "20", "--steps", "200", "--quiet", "--reference", "-o", str(out), "--overwrite"])
    err = capsys.readouterr().err
    assert rc == 143, err
    assert f"{out} written with the finished run; --reference not added" in err and "unchanged" not in err, err
    assert h5py.is_hdf5(out) and leftovers(tmp_path) == []

def test_resume_overwrite_never_discards_a_checkpoint(tmp_path, capsys, reference, previous, monkeypatch):
    """``--resume --overwrite`` on a real checkpoint resumes it (the issue: it started anew)."""
    from replica.workflow.run import SweepCheckpoint

    out = tmp_path / "x.h5"
    shutil.copy(previous, out)
    before = sha256(out)
    calls = {"n": 0}
    original = SweepCheckpoint.__call__

    def interrupted_after_20(self, key, i, alpha, compute):
        calls["n"] += 1
        if calls["n"] > 20:
            raise KeyboardInterrupt
        return original(self, key, i, alpha, compute)

    monkeypatch.setattr(SweepCheckpoint, "__call__", interrupted_after_20)
    assert sweep_main(DEEP + GRID + ["-o", str(out), "--overwrite"]) == 130
    monkeypatch.setattr(SweepCheckpoint, "__call__", original)
    assert sha256(out) == before and checkpoint_path(out).exists()
    with h5py.File(checkpoint_path(out)) as h5:
        stored = sum(int(g["done"][()].sum()) for g in h5["checkpoint"].values() if isinstance(g, h5py.Group))
    assert stored == 20
    capsys.readouterr()
    assert sweep_main(DEEP + GRID + ["-o", str(out), "--overwrite", "--resume"]) == 0
    assert_same_sweep(out, reference)


# ----------------------------------------------------------------------------- concurrency and locks
def test_second_writer_fails_at_once_naming_the_first(tmp_path, capsys, previous):
    out = tmp_path / "race.h5"
    first = spawn(DEEP + ["--alpha", "1:8:400", "--checkpoint-every", "0", "-o", str(out)])
    try:
        wait_for(checkpoint_path(out), first)
        assert first.poll() is None
        for extra in ([], ["--overwrite"], ["--resume"], ["--resume", "--overwrite"]):
            rc = sweep_main(DEEP + ["--alpha", "1,2", "--delta", "0.2", "-o", str(out)] + extra)
            err = capsys.readouterr().err
            assert rc == 2 and f"pid {first.pid}" in err and "being written by another process" in err, err
            assert "1:8:400" in err  # the other command line
    finally:
        first.kill()
        first.communicate()
    assert lock_path(out).exists()  # left by the killed process: stale, taken over
    assert sweep_main(DEEP + ["--alpha", "1,2", "--delta", "0.2", "-o", str(out), "--overwrite"]) == 0
    assert read_sweep(out)["parameters"]["delta"] == 0.2 and leftovers(tmp_path) == []


def test_file_locked_by_another_program(tmp_path, capsys, previous):
    """A result held open for writing elsewhere (a notebook's ``h5py.File(..., 'a')``)."""
    base = tmp_path / "base.h5"
    shutil.copy(previous, base)
    holder = spawn([], code=f"import h5py, time; f = h5py.File({str(base)!r}, 'a'); print('open', flush=True); "
                             "time.sleep(300)")
    try:
        assert holder.stdout.readline().strip() == "open"
        before = sha256(base)  # (opening for writing may update the superblock: hash what the holder sees)
        for argv in ([str(base), "-o", str(tmp_path / "b.png")],):
            assert plot_main(argv) == 2
            err = capsys.readouterr().err
            assert "is locked" in err and "not an HDF5 file" not in err and len(err.strip().splitlines()) == 1
        for extra in (["--resume"], ["--overwrite"]):
            assert sweep_main(DEEP + ["--alpha", "2,4", "--delta", "0.3", "-o", str(base)] + extra) == 2
            err = capsys.readouterr().err
            assert "is locked" in err and len(err.strip().splitlines()) == 1, err
        assert sha256(base) == before
    finally:
        holder.kill()
        holder.communicate()


# ----------------------------------------------------------------------------- full disk
def _fail_target_fsync(target):
    """``os.fsync`` failing with ENOSPC for the temporary file of ``target`` (not its checkpoint)."""
    real = os.fsync

    def fsync(fd):
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name
        if name.startswith(f".{target.name}."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    return fsync


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_disk_full_when_the_result_is_written(tmp_path, capsys, reference, previous, monkeypatch):
    out = tmp_path / "x.h5"
    shutil.copy(previous, out)
    before = sha256(out)
    monkeypatch.setattr(os, "fsync", _fail_target_fsync(out))
    assert sweep_main(DEEP + GRID + ["-o", str(out), "--overwrite"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and len(err.strip().splitlines()) == 1, err
    monkeypatch.undo()
    assert sha256(out) == before and checkpoint_path(out).exists()  # every solve kept
    assert leftovers(tmp_path) == []
    capsys.readouterr()
    loud = [a for a in DEEP if a != "--quiet"]  # --quiet and --verbose exclude each other
    assert sweep_main(loud + GRID + ["-o", str(out), "--overwrite", "--resume", "--verbose"]) == 0  # space freed
    reused, computed = map(int, re.search(r"(\d+) solves reused, (\d+) computed", capsys.readouterr().err).groups())
    assert reused > 0 and computed == 40  # only the (cheap) universal branch is solved again
    assert_same_sweep(out, reference)


#: runs the rest of its command line with a 16 kB file-size limit (Python ignores SIGXFSZ, so a
#: write past the limit fails with EFBIG, as a write to a full disk fails with ENOSPC)
SIZE_LIMIT = [sys.executable, "-c", "import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, "
              "(16000, 16000)); os.execv(sys.argv[1], sys.argv[1:])"]


def test_disk_full_file_size_limit(tmp_path, previous):
    """A real failing ``write`` (RLIMIT_FSIZE, the unprivileged stand-in for a full disk)."""
    out = tmp_path / "x.h5"
    shutil.copy(previous, out)
    before = sha256(out)
    proc = spawn(DEEP + GRID + ["-o", str(out), "--overwrite", "--checkpoint-every", "0"], launcher=SIZE_LIMIT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err
    assert "File too large" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert sha256(out) == before and leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- corrupted checkpoint
@pytest.mark.parametrize("damage,reason", [("truncate", "truncated"), ("text", "not an HDF5 file")])
def test_corrupted_checkpoint(tmp_path, capsys, reference, previous, monkeypatch, damage, reason):
    from replica.workflow.run import SweepCheckpoint

    out = tmp_path / "x.h5"
    shutil.copy(previous, out)
    before = sha256(out)
    original = SweepCheckpoint.__call__
    calls = {"n": 0}

    def interrupted_after_10(self, *args):
        calls["n"] += 1
        if calls["n"] > 10:
            raise KeyboardInterrupt
        return original(self, *args)

    monkeypatch.setattr(SweepCheckpoint, "__call__", interrupted_after_10)
    assert sweep_main(DEEP + GRID + ["-o", str(out), "--overwrite"]) == 130
    monkeypatch.undo()
    ckpt = checkpoint_path(out)
    data = ckpt.read_bytes()
    ckpt.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"not a checkpoint\n")
    damaged = sha256(ckpt)
    capsys.readouterr()
    assert sweep_main(DEEP + GRID + ["-o", str(out), "--overwrite", "--resume"]) == 2
    err = capsys.readouterr().err
    assert reason in err and "--resume" in err and len(err.strip().splitlines()) == 1, err
    assert sha256(out) == before and sha256(ckpt) == damaged  # neither is touched
    assert sweep_main(DEEP + GRID + ["-o", str(out), "--overwrite"]) == 0  # starting again discards it
    assert_same_sweep(out, reference)
    assert not ckpt.exists()


# ----------------------------------------------------------------------------- phase diagram
PHASE = DEEP + ["--alpha", "1:8:12", "--delta", "0.05,0.1,0.2,0.3", "--workers", "1"]
PHASE_CODE = "import sys; from replica.workflow.cli import phase_diagram_main; sys.exit(phase_diagram_main())"


def test_phase_diagram_interrupt_is_quiet_keeps_lines_and_resumes(request, tmp_path, capsys):
    from replica.workflow.cli import _line_options, build_phase_diagram_parser, phase_diagram_options
    from replica.workflow.io import write_phase_diagram
    from replica.workflow.phase_diagram import assemble, solve_line

    args = build_phase_diagram_parser().parse_args(PHASE + ["-o", "x.h5"])
    vary, values, base, alphas = phase_diagram_options(args)
    lines = {j: solve_line(_line_options(base, vary, v), alphas) for j, v in enumerate(values)}
    expected = assemble(vary, values, alphas, lines)  # the uninterrupted diagram, without a cluster

    out = tmp_path / "p.h5"
    write_phase_diagram(out, assemble(vary, values[:1], alphas, {0: lines[0]}), {"old": True},
                        parameter=vary, complete=True)  # a previous result, other options
    before = sha256(out)
    proc = spawn(PHASE + ["-o", str(out), "--overwrite"], code=PHASE_CODE)
    wait_for(checkpoint_path(out), proc)
    rc, err = interrupt(proc, signal.SIGINT, group=True, delay=rng(request).uniform(0.0, 0.2))  # Ctrl-C: every process
    if not finished_first(rc, signal.SIGINT):
        assert rc == 130, err
        assert sha256(out) == before
        for noise in ("Traceback", "leaked", "still alive", "KeyboardInterrupt"):
            assert noise not in err, err
        assert "lines kept in" in err and str(checkpoint_path(out)) in err, err
        kept = int(read_phase_diagram(checkpoint_path(out), allow_incomplete=True)["done"].sum())
        assert f"{kept} of {values.size} lines" in err
        assert phase_diagram_main(PHASE + ["-o", str(out), "--overwrite", "--resume"]) == 0, capsys.readouterr().err
    got = read_phase_diagram(out)
    for key, value in expected.items():
        if key != "seconds":
            np.testing.assert_array_equal(got[key], value, err_msg=key)
    assert not checkpoint_path(out).exists() and leftovers(tmp_path) == []


TRACED = ["--trace", "--activation", "tanh2", "--delta", "0.1:0.6:26", "--alpha", "0.05:8:30", "--quiet"]


def _phase_lines(path):
    from replica.workflow.io import read_phase_lines

    d = read_phase_lines(path)
    return [(line["kind"], line["branches"], line["end"], line["delta"].tolist(), line["alpha"].tolist())
            for line in d["lines"]], {k: v.tolist() for k, v in d["critical_points"].items()}, d["parameters"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_traced_diagram_signal_resumes_exactly(request, tmp_path, capsys, sig):
    """``replica-phase-diagram --trace`` killed after its first line: the checkpoint holds the sweep's solves and
    the finished lines, and ``--resume`` writes the uninterrupted file's lines bit for bit."""
    ref = tmp_path / "ref.h5"
    assert phase_diagram_main(TRACED + ["-o", str(ref)]) == 0
    out = tmp_path / "x.h5"
    proc = spawn(TRACED + ["-o", str(out)], code=PHASE_CODE)
    wait_for(checkpoint_path(out), proc)
    rc, err = interrupt(proc, sig, delay=rng(request).uniform(0.0, 0.1))  # the lines take ~0.3 s
    if not finished_first(rc, sig):
        assert rc in (143, -signal.SIGKILL), err
        if sig != signal.SIGKILL and not out.exists():
            assert "Traceback" not in err and "--resume" in err and "lines kept" in err, err
    if checkpoint_path(out).exists():  # (if the file was written before the signal: --overwrite to take it up)
        again = TRACED + ["-o", str(out), "--resume"] + (["--overwrite"] if out.exists() else [])
        assert phase_diagram_main(again) == 0, capsys.readouterr().err
    assert _phase_lines(out) == _phase_lines(ref)
    assert not checkpoint_path(out).exists() and leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- experiment
EXPERIMENT = ["--dim", "6", "--alpha", "0.5,1", "--teachers", "2", "--steps", "16", "--kept", "4", "--n-test", "64",
              "--sampler", "hmc", "--seed", "3", "--quiet", "--device", "cpu"]
EXPERIMENT_CODE = "import sys; from replica.workflow.experiment_cli import main; sys.exit(main())"


def _experiment_datasets(path):
    out = {}
    with h5py.File(path) as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        out["parameters"] = json.loads(f.attrs["parameters"])
    return out


def test_experiment_interrupt_keeps_finished_chains_and_resumes(request, tmp_path, capsys, previous):
    pytest.importorskip("jax")
    pytest.importorskip("blackjax")
    from replica.workflow.experiment_cli import main as experiment_main

    out = tmp_path / "e.h5"
    shutil.copy(previous, out)
    before = sha256(out)
    random_point = rng(request)
    sig = random_point.choice([signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
    proc = spawn(EXPERIMENT + ["-o", str(out), "--overwrite"], code=EXPERIMENT_CODE)
    wait_for(checkpoint_path(out), proc)
    rc, err = interrupt(proc, sig, delay=random_point.uniform(0.0, 0.3))
    if not finished_first(rc, sig):
        assert sha256(out) == before
        if sig != signal.SIGKILL:
            assert rc in (130, 143) and "chains kept in" in err and "Traceback" not in err, err
        with h5py.File(checkpoint_path(out)) as f:
            assert int(f.attrs["complete"]) == 0 and len(f["chains"]) >= 1
        assert experiment_main(EXPERIMENT + ["-o", str(out), "--overwrite", "--resume"]) == 0
    assert experiment_main(EXPERIMENT + ["-o", str(tmp_path / "ref.h5")]) == 0  # uninterrupted
    got, ref = _experiment_datasets(out), _experiment_datasets(tmp_path / "ref.h5")
    assert set(got) == set(ref)
    for key, value in ref.items():
        if not key.endswith("wall_time"):  # seconds per chain: the only thing that may differ
            np.testing.assert_array_equal(got[key], value, err_msg=key) if key != "parameters" else None
    assert got["parameters"] == ref["parameters"]
    assert not checkpoint_path(out).exists() and leftovers(tmp_path) == []
