"""Defects a newcomer ran into (issue 32): each test failed before its fix."""

import os
import shutil
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


# --------------------------------------------------------------------------- defect 1
def test_two_layer_sweep_emits_no_runtime_warning(tmp_path):
    """The issue's two-layer sweep printed ``RuntimeWarning: invalid value encountered in log10`` (numpy's
    ``geomspace``): :func:`replica.readout_grid.equal_potential_threshold` scanned the bistable window
    between a negative extremum of the curve ``s = T(r)`` and the next one geometrically, i.e. took the
    logarithm of a negative bound; windows reaching below ``s = 0`` are now scanned linearly from 0 and
    windows entirely below it skipped (commit 052e266, test added here)."""
    import warnings

    from replica.workflow.cli import sweep_main

    argv = ["--layers", "2", "--gamma", "0.5,0.5", "--activation", "tanh2", "--unit-variance", "--delta", "0.1",
            "--alpha", "0.5:8:16", "-o", str(tmp_path / "two.h5"), "--quiet"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sweep_main(argv) == 0
    runtime = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught if issubclass(w.category, RuntimeWarning)]
    assert runtime == []


def test_equal_potential_front_scan_with_a_negative_extremum_is_quiet():
    """The source of the warning: a curve ``s = T(r)`` with a negative minimum (the issue's sweep had
    ``min T = −0.158``) made the scan call ``np.geomspace(−0.158, 72.25)``. The front is still found in the
    window above ``s = 0``, without any numpy warning."""
    import warnings
    from types import SimpleNamespace

    import numpy as np

    from replica.readout_grid import SELECT_LARGEST, SELECT_LOW, equal_potential_threshold

    cut = 3.0  # the low root wins below s = 3, the largest one above

    def snr(s, selection):
        s = np.asarray(s, dtype=float)
        return s + 1.0 if selection == SELECT_LARGEST else np.zeros_like(s)

    profile = SimpleNamespace(minima=np.array([-0.15784653643062094]), maxima=np.array([0.5]), onset=20.0,
                              snr=snr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        front = equal_potential_threshold(profile, lambda s, r: (np.asarray(s) - cut) * np.asarray(r))
    assert front not in (SELECT_LARGEST, SELECT_LOW)
    assert abs(front - cut) < 1e-9


# --------------------------------------------------------------------------- defect 2
def test_reference_level_child_ends_quietly_when_terminated():
    """``replica-sgd --plot``: the child computing the reference levels, still flushing its queue (here: still
    running a thread) when the parent is done with it, is terminated; it used to inherit the commands'
    SIGTERM handler and print ``Process ForkProcess-1: Traceback … _Terminated``."""
    code = """
        import signal, threading, time
        import numpy as np
        import replica.workflow.sgd_results as r
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


# --------------------------------------------------------------------------- defect 3
def _damage(path, offset=4096, size=8192, seed=0):
    """Overwrite ``size`` bytes at ``offset`` with random bytes (the header still opens); returns the bytes."""
    import numpy as np

    data = bytearray(Path(path).read_bytes())
    assert len(data) >= offset + size, len(data)
    data[offset:offset + size] = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()
    Path(path).write_bytes(bytes(data))
    return bytes(data)


@pytest.fixture(scope="module")
def small_sweep(tmp_path_factory):
    from replica.workflow.cli import sweep_main

    path = tmp_path_factory.mktemp("sweep") / "c.h5"
    assert sweep_main(["--activation", "erf", "--alpha", "1,2", "-o", str(path), "--quiet"]) == 0
    return path


@pytest.fixture(scope="module")
def small_sgd(tmp_path_factory):
    from commands import sgd_main

    path = tmp_path_factory.mktemp("sgd") / "s.h5"
    assert sgd_main(["--dim", "16", "--time", "10", "-o", str(path), "--quiet"]) == 0
    return path


def _assert_damaged_input(err, path):
    line = one_line(err)
    assert "damaged" in line and Path(path).name in line and "cannot write" not in line, line


def test_damaged_sweep_is_an_input_error_for_plot_and_resume(tmp_path, capsys, small_sweep):
    """8 KiB of random bytes at offset 4096: was ``error: cannot write p.png: Can't synchronously read data``,
    exit 1; now exit 2 and a line about the damaged input, and the file is left as it is."""
    from replica.workflow.cli import plot_main, sweep_main

    bad = tmp_path / "c.h5"
    shutil.copy(small_sweep, bad)
    damaged = _damage(bad)
    capsys.readouterr()
    assert plot_main([str(bad), "-o", str(tmp_path / "p.png")]) == 2
    _assert_damaged_input(capsys.readouterr().err, bad)
    assert not (tmp_path / "p.png").exists()
    assert sweep_main(["--activation", "erf", "--alpha", "1,2", "-o", str(bad), "--resume", "--quiet"]) == 2
    _assert_damaged_input(capsys.readouterr().err, bad)
    assert bad.read_bytes() == damaged


def test_damaged_sgd_file_is_an_input_error_for_plot(tmp_path, capsys, small_sgd):
    from commands import sgd_main

    bad = tmp_path / "s.h5"
    shutil.copy(small_sgd, bad)
    damaged = _damage(bad)
    capsys.readouterr()
    assert sgd_main(["--plot", str(bad), "-o", str(tmp_path / "x.png"), "--no-theory"]) == 2
    _assert_damaged_input(capsys.readouterr().err, bad)
    assert bad.read_bytes() == damaged and not list(tmp_path.glob("x_*.png"))


def test_damaged_experiment_checkpoint_is_an_input_error_for_resume(tmp_path, capsys, monkeypatch):
    """Was a ``RuntimeError: Unable to synchronously check link existence`` traceback, exit 1."""
    pytest.importorskip("jax")
    pytest.importorskip("blackjax")
    import replica.workflow.experiment_io as sio
    from commands import experiment_main
    from replica.workflow.safe_write import checkpoint_path

    argv = ["--dim", "8", "--alpha", "1,2", "--teachers", "1", "--sampler", "hmc", "--steps", "50",
            "-o", str(tmp_path / "e.h5"), "--quiet"]
    original = sio.write_experiment_checkpoint

    def interrupted_after_the_first_chain(*args, **kwargs):
        original(*args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(sio, "write_experiment_checkpoint", interrupted_after_the_first_chain)
    assert experiment_main(argv) == 130
    monkeypatch.undo()
    ckpt = checkpoint_path(tmp_path / "e.h5")
    damaged = _damage(ckpt)
    capsys.readouterr()
    assert experiment_main(argv + ["--resume"]) == 2
    _assert_damaged_input(capsys.readouterr().err, ckpt)
    assert ckpt.read_bytes() == damaged and not (tmp_path / "e.h5").exists()


def test_open_h5_keeps_missing_names_apart_from_damage(tmp_path):
    """A name that is absent is another version's file (``other_version``), not a damaged one."""
    import h5py

    from replica.workflow.safe_write import ResultFileError, open_h5

    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as h5:
        h5["x"] = 1.0
    with pytest.raises(ResultFileError) as info:
        with open_h5(path, option="FILE.h5") as h5:
            h5["y"][()]
    assert info.value.reason == "other_version"
    with pytest.raises(ResultFileError) as info:
        with open_h5(path, option="FILE.h5") as h5:
            h5.attrs["y"]
    assert info.value.reason == "other_version"
    with pytest.raises(OSError):  # an error of the code in the block, not of the file, is not reclassified
        with open_h5(path, option="FILE.h5"):
            raise OSError("elsewhere")


# --------------------------------------------------------------------------- defect 4
def test_resume_overwrite_without_checkpoint_starts_anew_over_other_options(tmp_path, capsys, small_sweep):
    """``cp other.h5 z.h5; replica-sweep … -o z.h5 --resume --overwrite`` was refused ("computed with different
    options") although there is no checkpoint of this run — the state a SIGKILL before the first checkpoint
    leaves. It now starts anew and replaces z.h5 when it finishes; the copied-from file is untouched."""
    from replica.workflow.cli import sweep_main
    from replica.workflow.io import read_sweep
    from replica.workflow.safe_write import checkpoint_path

    z = tmp_path / "z.h5"
    shutil.copy(small_sweep, z)             # alpha 1,2
    other = small_sweep.read_bytes()
    argv = ["--activation", "erf", "--alpha", "1,3", "-o", str(z), "--quiet"]
    capsys.readouterr()
    assert sweep_main(argv + ["--resume"]) == 2                     # without --overwrite: refused, untouched
    assert "different options" in one_line(capsys.readouterr().err) and z.read_bytes() == other
    assert sweep_main(argv + ["--resume", "--overwrite"]) == 0
    assert read_sweep(z)["parameters"]["alpha"] == [1.0, 3.0]
    assert small_sweep.read_bytes() == other and not checkpoint_path(z).exists()
    finished = z.read_bytes()
    assert sweep_main(argv + ["--resume", "--overwrite"]) == 0     # same options, finished: left as it is
    assert z.read_bytes() == finished


def test_resume_overwrite_over_an_unusable_finished_file_starts_anew(tmp_path):
    """The same protocol decision for any command: a target of another command (or damaged), no checkpoint,
    ``--resume --overwrite`` → a new run; without ``--overwrite`` the one-line error stays."""
    from replica.workflow.safe_write import ResultFileError, SafeOutput

    target = tmp_path / "x.h5"
    target.write_bytes(b"x")

    def unreadable():
        raise ResultFileError(f"--resume: {target} was written by replica-sgd, not by replica-sweep", "other_kind")

    with SafeOutput(target, resume=True, overwrite=True) as out:
        assert out.finished
        assert out.same_finished_run(unreadable, {}) is False and not out.finished
        assert out.same_finished_run(lambda: {"a": 1}, {"a": 2}) is False
    with SafeOutput(target, resume=True, overwrite=False) as out:
        with pytest.raises(ResultFileError):
            out.same_finished_run(unreadable, {})
        assert out.same_finished_run(lambda: {"a": 1}, {"a": 1}) is True
    assert target.read_bytes() == b"x"


# --------------------------------------------------------------------------- defect 5
def test_phase_diagram_workers_are_bounded(tmp_path, capsys):
    """``--workers 100000`` was accepted: 1.4 GB of starting workers, Ctrl-C ignored, an atexit traceback."""
    from replica.workflow.cli import phase_diagram_main
    from replica.workflow.phase_diagram import max_workers, run_phase_diagram

    out = tmp_path / "ph.h5"
    argv = ["--activation", "erf", "--alpha", "1,2", "--delta", "0.1,0.2", "-o", str(out)]
    for n in ("100000", str(max_workers() + 1)):
        assert phase_diagram_main(argv + ["--workers", n]) == 2
        line = one_line(capsys.readouterr().err)
        assert "--workers" in line and f"1 to {max_workers()}" in line, line
    with pytest.raises(ValueError, match="workers"):       # the API refuses it too, before any cluster or file
        run_phase_diagram(out, "delta", [0.1, 0.2], [{}, {}], {}, [1.0, 2.0], workers=100000)
    assert not out.exists() and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- defect 6
def test_phase_diagram_size_guard(tmp_path, capsys, monkeypatch):
    """``--alpha 0.01:8:100000 --delta 0.01:1:100000`` started 10¹⁰ solves; the grids are now checked against
    the memory with the helper of replica-spectrum, replica-sgd and replica-experiment, before any model is
    built, any cluster started or any file written."""
    from replica.workflow import config, phase_diagram
    from replica.workflow.cli import phase_diagram_main

    def never(*args, **kwargs):
        raise AssertionError("the phase diagram was started")

    monkeypatch.setattr(phase_diagram, "run_phase_diagram", never)
    out = tmp_path / "ph.h5"
    argv = ["--activation", "erf", "--alpha", "0.01:8:100000", "--delta", "0.01:1:100", "-o", str(out)]
    with monkeypatch.context() as small:
        small.setattr(config, "physical_memory", lambda: 2.0**30)  # a 1 GiB machine: 10⁷ cells are too many
        assert phase_diagram_main(argv) == 2
        assert "memory" in one_line(capsys.readouterr().err)
        with pytest.raises(config.UsageError, match="memory"):      # the API checks it as well
            phase_diagram.check_size(100, 100000)
    argv[argv.index("0.01:1:100")] = "0.01:1:100000"
    assert phase_diagram_main(argv) == 2                            # the grids: 1.8 TiB
    line = one_line(capsys.readouterr().err)
    assert line.startswith("replica-phase-diagram: error: --alpha/--delta:") and "memory" in line, line
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- smaller: progress bars
def _last_counts(err):
    """The ``N/M`` pairs of the last drawing of each bar in ``err`` (tqdm's carriage-return updates)."""
    import re

    return [tuple(int(x) for x in m) for m in re.findall(r"\|\s*(\d+)/(\d+) \[", err)]


def test_sweep_progress_bar_is_drawn_at_its_total(tmp_path, capsys):
    """``replica-sweep … --alpha 0.01:8:101`` left its bar drawn at 246/404 (a pass that follows a traced
    branch is quick, so its last updates fell within tqdm's refresh interval); it ends at 404/404."""
    from replica.workflow.cli import sweep_main

    capsys.readouterr()
    assert sweep_main(["--activation", "relu", "--gamma", "0.5", "--delta", "0.1", "--alpha", "0.01:8:101",
                       "-o", str(tmp_path / "r.h5")]) == 0
    counts = _last_counts(capsys.readouterr().err)
    assert counts and counts[-1] == (404, 404), counts[-3:]


def test_sgd_progress_bar_ends_at_the_samples_seen():
    """replica-sgd's bar (refreshed once a second) ended below its total; stopped early it ends at what it saw."""
    import io

    import tqdm

    from replica.simulations.sgd import SGDConfig, run_sgd

    stream = io.StringIO()
    original = tqdm.tqdm.__init__

    def to_stream(self, *args, **kwargs):
        kwargs["file"] = stream
        original(self, *args, **kwargs)

    tqdm.tqdm.__init__ = to_stream
    try:
        config = SGDConfig(activation="relu", dim=16, time=20.0, seed=0)
        run_sgd(config, progress=True)
    finally:
        tqdm.tqdm.__init__ = original
    text = stream.getvalue()
    import re

    last = re.findall(r"(\d[\d.]*k?)/(\d[\d.]*k?) \[", text)
    assert last and last[-1][0] == last[-1][1], last[-3:]


# --------------------------------------------------------------------------- smaller: constant activation
CONSTANT = [("quadratic", ["2"], True), ("quadratic", ["0", "2"], False), ("hermite:0=1", [], False)]


@pytest.mark.parametrize("spec, drop, unit", CONSTANT)
def test_constant_activation_is_refused_by_the_api(spec, drop, unit):
    """``--activation quadratic --drop-hermite 2 --unit-variance`` (σ ≡ 1) was accepted: a learning curve of
    labels that do not depend on the weights."""
    from replica.activations import get_activation

    with pytest.raises(ValueError, match="constant"):
        get_activation(spec, drop_hermite=tuple(int(d) for d in drop), unit_variance=unit)
    get_activation("quadratic", drop_hermite=(0,), unit_variance=True)   # x²-1 is not constant


@pytest.mark.parametrize("command", ["sweep", "phase", "sgd", "experiment"])
def test_constant_activation_is_refused_by_every_command(tmp_path, capsys, command):
    from commands import experiment_main, sgd_main
    from replica.workflow.cli import phase_diagram_main, sweep_main

    run, argv = {"sweep": (sweep_main, ["--alpha", "1,2"]),
                 "phase": (phase_diagram_main, ["--alpha", "1,2", "--delta", "0.1,0.2"]),
                 "sgd": (sgd_main, []), "experiment": (experiment_main, [])}[command]
    if command == "experiment":
        pytest.importorskip("jax")
    argv = argv + ["--activation", "quadratic", "--drop-hermite", "2", "--unit-variance", "-o", str(tmp_path / "x.h5")]
    capsys.readouterr()
    assert run(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert "--activation" in line and "constant" in line, line
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- smaller: replica-figures advice
class _Branch(dict):
    def __init__(self, err):
        import numpy as np

        super().__init__(exists=np.ones(len(err), bool))
        self.fields = {"discretization_error": np.asarray(err, float)}


def test_figures_warnings_do_not_advise_options_it_does_not_take(tmp_path, monkeypatch, caplog):
    """replica-figures logged "discretization error of the s grid above … ; use a finer --s-grid", an option
    it does not take; replica-sweep itself still advises it."""
    from types import SimpleNamespace

    from replica.workflow import cli, figures, io

    result = SimpleNamespace(branches={"specialized": _Branch([1e-2, 1e-6])})

    def sweep_main(argv):
        cli._warn_discretization(result, "s grid")
        return 0

    monkeypatch.setattr(cli, "sweep_main", sweep_main)
    monkeypatch.setattr(io, "read_sweep", lambda path: {})
    with caplog.at_level("WARNING", logger="replica.workflow.cli"):
        figures._sweep(tmp_path / "x.h5", ["--layers", "2"])
        in_figures = caplog.text
        caplog.clear()
        cli._warn_discretization(result, "s grid")
    assert "discretization error of the s grid" in in_figures and "--" not in in_figures, in_figures
    assert "--s-grid" in caplog.text


# --------------------------------------------------------------------------- smaller: --quick caveat
def test_quick_two_layer_thresholds_carry_a_coarse_grid_caveat(tmp_path, capsys):
    """``replica-figures --quick`` printed the two-layer thresholds of a 6-point α grid (2.127/2.147 against
    1.996/2.102 of the full run) like reference numbers."""
    from commands import figures_main

    assert figures_main(["--quick", "--only", "two_layer", "-o", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("--quick: coarse grids"), out
    row = next(line for line in out.splitlines() if line.startswith("two_layer "))
    assert "alpha_sp =" in row and "--quick: coarse grids, thresholds approximate" in row, row
    import csv

    with open(tmp_path / "deviations.csv") as fh:
        assert "coarse grids" in next(csv.DictReader(fh))["note"]


# --------------------------------------------------------------------------- smaller: replica-sgd --closure
def test_sgd_closure_says_what_it_computes_before_it_starts(tmp_path, monkeypatch, capsys, small_sgd):
    """``replica-sgd --closure`` was silent for the 50 s of the integration."""
    import replica.simulations.closure as closure
    from commands import sgd_main

    path = tmp_path / "s.h5"
    shutil.copy(small_sgd, path)
    original, seen = closure.closure_for_run, []

    def recorded(*args, **kwargs):
        seen.append(capsys.readouterr().err)   # what the user has been told when the integration starts
        return original(*args, **kwargs)

    monkeypatch.setattr(closure, "closure_for_run", recorded)
    capsys.readouterr()
    assert sgd_main(["--closure", str(path)]) == 0
    assert seen and "computing the Gaussian-closure prediction" in seen[0], seen
    assert "stored in" in capsys.readouterr().err


# --------------------------------------------------------------------------- smaller: dask scheduler advice
def _dask_scheduler_commands(text):
    """Every ``dask scheduler …`` a document tells the reader to run: quoted in the prose or a code line."""
    import re

    quoted = re.findall(r"`(dask[ -]scheduler[^`]*)`", re.sub(r"```.*?```", "", text, flags=re.S))
    lines = [ln.strip() for block in re.findall(r"```\w*\n(.*?)```", text, re.S) for ln in block.splitlines()
             if re.match(r"\s*dask[ -]scheduler\b", ln)]
    return quoted + lines


def test_docs_bind_the_dask_scheduler_to_an_address_only_the_user_reaches():
    """docs/tutorial.md said "start a scheduler and workers (`dask scheduler`, `dask worker ADDRESS`)": a scheduler
    without authentication and a dashboard on every interface."""
    import re

    problems = []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        if doc.name == "api.md":
            continue
        for command in _dask_scheduler_commands(doc.read_text()):
            host = re.search(r"--host[ =](\S+)", command)
            dashboard = re.search(r"--dashboard-address[ =](\S+)", command)
            if (host is None or host.group(1) in ("0.0.0.0", "::", "''", '""') or dashboard is None
                    or not dashboard.group(1).startswith(("127.0.0.1", "localhost", "[::1]"))):
                problems.append(f"{doc.name}: {command}")
    assert not problems, problems
