"""The write protocol (:class:`replica.workflow.safe_write.SafeOutput`) and the one-line HDF5 open errors."""

import ctypes
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from replica.workflow.config import UsageError
from replica.workflow.io import atomic_h5
from replica.workflow.safe_write import (
    OutputBusy,
    ResultFileError,
    SafeOutput,
    checkpoint_path,
    lock_path,
    open_h5,
)


def _h5(path, *, complete=True, kind="sweep"):
    with atomic_h5(path) as h5:
        h5.attrs["kind"] = kind
        h5.attrs["complete"] = np.int8(1 if complete else 0)
        h5.attrs["version"] = "0.0.1"
        h5["x"] = np.arange(3)
    return path


# ----------------------------------------------------------------------------- decisions
def test_names():
    assert checkpoint_path("dir/relu.h5").as_posix() == "dir/relu.checkpoint.h5"
    assert lock_path("dir/relu.h5").as_posix() == "dir/.relu.h5.lock"


def test_fresh_output(tmp_path):
    out = tmp_path / "a.h5"
    with SafeOutput(out) as target:
        assert lock_path(out).exists() and target.resume_from is None and not target.finished
        _h5(out)
        target.commit()
    assert not lock_path(out).exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"]


@pytest.mark.parametrize("flags,existing,checkpoint,expect", [
    ({}, True, False, "exists; pass --overwrite"),
    ({}, False, True, "interrupted run; pass --resume"),
    ({"overwrite": True}, False, True, "discard"),                  # explicit: the checkpoint goes (warned)
    ({"resume": True}, False, True, "resume"),
    ({"resume": True}, True, True, "add --overwrite"),              # resuming would replace a finished file
    ({"resume": True, "overwrite": True}, True, True, "resume"),    # never discards the checkpoint
    ({"resume": True, "overwrite": True}, True, False, "finished"),
    ({"resume": True}, True, False, "finished"),
    ({"resume": True}, False, False, "new"),
])
def test_decisions(tmp_path, caplog, flags, existing, checkpoint, expect):
    caplog.set_level("INFO", logger="replica.workflow.safe_write")
    out = tmp_path / "a.h5"
    if existing:
        _h5(out)
    if checkpoint:
        _h5(checkpoint_path(out), complete=False)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    if expect.startswith(("exists", "interrupted", "add")):
        with pytest.raises(UsageError, match=expect.split(";")[0]):
            SafeOutput(out, **flags).__enter__()
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing touched, lock released
        return
    with SafeOutput(out, **flags) as target:
        if expect == "discard":
            assert not checkpoint_path(out).exists() and "discarding" in caplog.text
        elif expect == "resume":
            assert target.resume_from == checkpoint_path(out)
        elif expect == "finished":
            assert target.finished and target.resume_from is None
        else:
            assert target.resume_from is None and not target.finished and "starting a new run" in caplog.text


def test_unfinished_target_of_older_versions_is_resumed(tmp_path):
    out = _h5(tmp_path / "a.h5", complete=False)  # checkpoint kept in the target itself (before the protocol)
    with pytest.raises(UsageError, match="--resume"):
        SafeOutput(out).__enter__()
    with SafeOutput(out, resume=True) as target:
        assert target.resume_from == out


def test_second_writer_and_stale_lock(tmp_path, caplog):
    out = tmp_path / "a.h5"
    with SafeOutput(out):
        info = json.loads(lock_path(out).read_text())
        assert info["pid"] == os.getpid() and info["host"] and info["command"]
        with pytest.raises(OutputBusy, match=f"pid {os.getpid()}"):
            SafeOutput(out, overwrite=True).__enter__()
    # a lock file whose holder died (no flock held any more): taken over
    lock_path(out).write_text(json.dumps({"pid": 999999, "host": "elsewhere", "command": "replica-sweep -o a.h5"}))
    caplog.set_level("INFO")
    with SafeOutput(out):
        assert "pid 999999" in caplog.text and "no longer running" in caplog.text
    assert not lock_path(out).exists()


def test_lock_held_by_another_process(tmp_path):
    out = tmp_path / "a.h5"
    code = ("import sys, time; from replica.workflow.safe_write import SafeOutput\n"
            f"with SafeOutput({str(out)!r}):\n    print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(OutputBusy) as info:
            SafeOutput(out).__enter__()
        assert f"pid {holder.pid}" in str(info.value) and "python -c" not in str(info.value).split(":")[0]
    finally:
        holder.kill()
        holder.wait()
    with SafeOutput(out):  # the kernel released the dead holder's lock
        pass


def test_stale_temporary_files_are_removed(tmp_path):
    out = tmp_path / "a.h5"
    for name in (".a.h5.abc123.tmp", ".a.checkpoint.h5.xyz.tmp", ".other.h5.q.tmp"):
        (tmp_path / name).write_bytes(b"partial")
    with SafeOutput(out):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.h5.q.tmp"]


def test_atomic_write_failure_is_one_line_and_keeps_previous(tmp_path, monkeypatch):
    import errno

    out = _h5(tmp_path / "a.h5")
    before = out.read_bytes()

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        with atomic_h5(out) as h5:
            h5["y"] = np.zeros(1000)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(out)
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["a.h5"]


# ----------------------------------------------------------------------------- open errors
def test_open_errors_are_classified(tmp_path):
    good = _h5(tmp_path / "good.h5")
    (tmp_path / "text.h5").write_text("hello\n")
    (tmp_path / "cut.h5").write_bytes(good.read_bytes()[:800])
    damaged = bytearray(good.read_bytes())
    damaged[8:200] = b"\xff" * 192  # signature kept, superblock destroyed
    (tmp_path / "damaged.h5").write_bytes(bytes(damaged))
    cases = {"text.h5": "not_hdf5", "cut.h5": "truncated", "damaged.h5": "damaged", "none.h5": "missing",
             ".": "directory"}
    for name, reason in cases.items():
        with pytest.raises(ResultFileError) as info:
            with open_h5(tmp_path / name, option="--resume"):
                pass
        assert info.value.reason == reason, (name, str(info.value))
        assert str(info.value).startswith("--resume: ") and "\n" not in str(info.value)
    with open_h5(good, kinds=("sweep",)) as h5:
        assert h5["x"].shape == (3,)
    with pytest.raises(ResultFileError, match="written by replica-spectrum, not by replica-sweep") as info:
        with open_h5(_h5(tmp_path / "s.h5", kind="spectrum"), kinds=("sweep",)):
            pass
    assert info.value.reason == "other_kind"
    with pytest.raises(ResultFileError, match="lacks 'branches'.*version 0.0.1") as info:
        with open_h5(good) as h5:
            h5["branches"]
    assert info.value.reason == "other_version"


def test_locked_file_is_not_called_invalid(tmp_path):
    good = _h5(tmp_path / "good.h5")
    code = f"import h5py, time; f = h5py.File({str(good)!r}, 'a'); print('open', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(ResultFileError) as info:
            with open_h5(good):
                pass
        assert info.value.reason == "locked" and "not an HDF5" not in str(info.value)
    finally:
        holder.kill()
        holder.wait()


def _drop_dac_capabilities():  # pragma: no cover - runs in the child
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):  # PR_CAPBSET_DROP: file permissions apply to root too
            libc.prctl(24, cap, 0, 0, 0)


@pytest.mark.skipif(sys.platform != "linux", reason="Linux permissions")
def test_permission_denied(tmp_path):
    good = _h5(tmp_path / "good.h5")
    good.chmod(0)
    code = ("from replica.workflow.safe_write import open_h5, ResultFileError\n"
            f"try:\n    open_h5({str(good)!r}).__enter__()\nexcept ResultFileError as e:\n    print(e.reason, e)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         preexec_fn=_drop_dac_capabilities)
    good.chmod(0o644)
    assert res.stdout.startswith("permission cannot read"), res.stdout + res.stderr
