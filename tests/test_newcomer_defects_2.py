"""Defects a newcomer ran into (issue 41): each test failed before its fix, except those of the section
"Raises clauses", which pin the documented errors of the public I/O API at the API level (removing a check
that a command happens to make earlier fails them)."""

import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from commands import experiment_main, figures_main, one_line

ROOT = Path(__file__).resolve().parent.parent
EXPERIMENT_MODULES = ("jax", "blackjax", "optax")
PLAIN_INSTALL = "pip install 'replica-hciz[experiments]'"

#: a sitecustomize that hides the experiments extra (an install without it), for subprocesses
_HIDE_EXTRA = "import sys\nfor _m in {mods!r}:\n    sys.modules[_m] = None\n"


def _without_extra(monkeypatch):
    """Make ``import jax`` (blackjax, optax) fail in this process, as in an install without the extra."""
    for name in EXPERIMENT_MODULES:
        monkeypatch.setitem(sys.modules, name, None)


def _command(name, argv, *, cwd, hide_extra=False, tmp_path=None, timeout=300):
    """Run the console script ``name`` of this environment; (returncode, stdout, stderr)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    if hide_extra:
        site = tmp_path / "hide_extra"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(_HIDE_EXTRA.format(mods=EXPERIMENT_MODULES))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
    exe = Path(sys.executable).parent / name
    proc = subprocess.run([str(exe), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


# =========================================================================== 1. optional extras
def test_missing_extra_is_exit_2_with_the_plain_install_command(tmp_path, capsys, monkeypatch):
    """N2, N3: ``replica-experiment`` without JAX exited with status 3 (bad input is 2 everywhere else) and
    advised ``pip install -e '.[experiments]'`` first, which works only in a checkout."""
    _without_extra(monkeypatch)
    out = tmp_path / "e.h5"
    rc = experiment_main(["--alpha", "1", "--dim", "8", "--steps", "10", "-o", str(out)])
    line = one_line(capsys.readouterr().err)
    assert rc == 2, line
    assert "jax" in line and PLAIN_INSTALL in line and "-e" not in line.split("pip install", 1)[1], line
    assert not out.exists()


@pytest.mark.parametrize("only", ["neurons", "trapped", "neurons,trapped"])
def test_figures_that_all_need_the_extra_are_refused_up_front(tmp_path, capsys, monkeypatch, only):
    """N1: ``replica-figures --only neurons`` without the extra printed a traceback (``RuntimeError:
    replica-experiment … failed with exit code 3``), exit 1, and left ``neurons.h5`` behind."""
    _without_extra(monkeypatch)
    out = tmp_path / "f2"
    rc = figures_main(["--quick", "--only", only, "-o", str(out), "--quiet"])
    line = one_line(capsys.readouterr().err)
    assert rc == 2, line
    for name in only.split(","):
        assert name in line, line
    assert "experiments" in line and PLAIN_INSTALL in line, line
    assert not out.exists() or list(out.iterdir()) == []


def test_figures_draw_the_others_and_name_those_skipped(tmp_path, capsys, monkeypatch):
    """N1: ``--only neurons,deep`` never drew ``deep``: the figures that do not need the extra are drawn, the
    others named in one warning with the install command."""
    from replica.workflow import figures

    _without_extra(monkeypatch)
    drawn = []
    monkeypatch.setitem(figures._BUILDERS, "deep", lambda outdir, quick, report: drawn.append("deep"))
    out = tmp_path / "f"
    assert figures_main(["--quick", "--only", "neurons,deep", "-o", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert drawn == ["deep"]
    warning = [ln for ln in err.splitlines() if "skipping" in ln]
    assert len(warning) == 1 and "neurons" in warning[0] and PLAIN_INSTALL in warning[0], err
    assert "Traceback" not in err and not list(out.glob("neurons*"))


def test_figures_without_the_extra_from_the_console_script(tmp_path):
    """The same as a user runs it: an interpreter where ``import jax`` fails (the modules hidden by a
    sitecustomize), the console script, one line, exit 2, no output directory."""
    rc, out, err = _command("replica-figures", ["--only", "neurons", "--quick", "-o", "f2"], cwd=tmp_path,
                            hide_extra=True, tmp_path=tmp_path)
    line = one_line(err)
    assert rc == 2 and PLAIN_INSTALL in line and "neurons" in line, err
    assert not (tmp_path / "f2").exists()


def test_docs_say_a_missing_extra_is_exit_2():
    """N2: exit status 3 for a missing extra was documented nowhere but a docstring; now it is the bad-input
    status 2, and docs/commands.md says so."""
    from replica.workflow.cli import run_command

    text = (ROOT / "docs" / "commands.md").read_text()
    section = " ".join(text.split("## What every command does", 1)[1].split("\n## ", 1)[0].split())
    assert re.search(r"exit status 2[^.]*missing optional extra|missing optional extra[^.]*exit status 2",
                     section), section
    assert "3 for a missing" not in " ".join(run_command.__doc__.split())


# =========================================================================== 2. figure counts
def test_readme_and_commands_figure_counts_come_from_the_registry():
    """N7: the README said "`experiments` for 2 of 8 figures" (there are 9) and the table of the full run in
    docs/commands.md listed 7 PNGs (no ``two_layer_phase``, ``neurons``, ``trapped``)."""
    from replica.workflow.figures import EXPERIMENT_FIGURES, FIGURES, FIGURE_FILES

    readme = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"`experiments` for (\d+) of (\d+) figures", readme)
    assert m, "README: the replica-figures row names how many figures need the extra"
    assert (int(m.group(1)), int(m.group(2))) == (len(EXPERIMENT_FIGURES), len(FIGURES))
    for name in EXPERIMENT_FIGURES:
        assert f"`{name}`" in readme.split("`experiments` for", 1)[1][:200], name

    assert set(FIGURE_FILES) == set(FIGURES)
    text = (ROOT / "docs" / "commands.md").read_text()
    table = text.split("Result of the full run:", 1)[1].split("\n\n", 2)[1]
    listed = re.findall(r"^\| `([\w.]+\.png)` \|", table, re.M)
    assert sorted(listed) == sorted(p for pngs in FIGURE_FILES.values() for p in pngs)
    extras_row = next(ln for ln in text.splitlines() if ln.startswith("|") and "`experiments` (JAX" in ln)
    for name in EXPERIMENT_FIGURES:
        assert f"`{name}`" in extras_row, extras_row


# =========================================================================== 3. provenance
def _git(*args, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false",
                           *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout.strip()


def _revision_of(package_parent, cwd):
    """``replica.git_revision()`` of the copy of the package in ``package_parent`` (no site-packages, so
    that neither the checkout nor its editable install is imported instead)."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(package_parent)!r})
        import replica
        assert replica.__file__.startswith({str(package_parent)!r}), replica.__file__
        print(replica.git_revision())
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


@pytest.mark.parametrize("commit_the_copy", [False, True])
def test_git_revision_of_a_copy_inside_a_foreign_repository(tmp_path, commit_the_copy):
    """Issue item 3: ``git rev-parse HEAD`` in the package's directory gave the HEAD of whatever work tree the
    install lives in (a virtual environment inside another project): the revision is reported only where the
    package directory is the top-level ``replica/`` of the repository that tracks it, else ``unknown`` (the
    root attribute ``version`` of every file then names the installed version)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    _git("init", "-q", cwd=foreign)
    (foreign / "README").write_text("another project\n")
    _git("add", "README", cwd=foreign)
    _git("commit", "-q", "-m", "init", cwd=foreign)
    site = foreign / ".venv" / "lib" / "python3" / "site-packages"
    shutil.copytree(ROOT / "replica", site / "replica", ignore=shutil.ignore_patterns("__pycache__"))
    if commit_the_copy:  # even a work tree that tracks the copied files is not the package's repository
        _git("add", "-f", ".", cwd=foreign)
        _git("commit", "-q", "-m", "vendored", cwd=foreign)
    head = _git("rev-parse", "HEAD", cwd=foreign)
    revision = _revision_of(site, foreign)
    assert revision != head
    assert revision == "unknown"


def test_a_built_package_reports_the_revision_it_was_built_from(tmp_path):
    """The issue's "for a wheel, the revision recorded at build time": sdist and wheel built (``python -m build``,
    through the sdist) from a git repository of the sources record its HEAD (setup.py's build hook), and the
    installed copy, inside a foreign work tree, reports that revision, not the foreign HEAD."""
    pytest.importorskip("build", reason="the test extra provides build")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    import zipfile

    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc", "_build_revision.txt")
    for name in ("pyproject.toml", "setup.py", "README.md", "hciz", "priors", "replica", "data"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, src / name)
    _git("init", "-q", cwd=src)
    _git("add", "-f", ".", cwd=src)
    _git("commit", "-q", "-m", "sources", cwd=src)
    built = _git("rev-parse", "HEAD", cwd=src)
    dist = tmp_path / "dist"
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "-o", str(dist), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    _git("init", "-q", cwd=foreign)
    _git("commit", "-q", "--allow-empty", "-m", "init", cwd=foreign)
    site = foreign / ".venv" / "site-packages"
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("replica/_build_revision.txt").decode().strip() == built
        zf.extractall(site, [n for n in zf.namelist() if n.startswith("replica/")])
    assert _revision_of(site, foreign) == built != _git("rev-parse", "HEAD", cwd=foreign)


def test_git_revision_of_the_checkout_is_its_head():
    """The other side: run from this checkout, the revision is the checkout's HEAD."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    try:
        head = _git("rev-parse", "HEAD", cwd=ROOT)
        _git("ls-files", "--error-unmatch", "replica/__init__.py", cwd=ROOT)
    except subprocess.CalledProcessError:
        pytest.skip("not a git checkout")
    assert _revision_of(ROOT, ROOT) == head


# =========================================================================== 4. Raises clauses of the I/O API
ERF = {"layers": 1, "gamma": [0.5], "activation": "erf", "drop_hermite": [], "unit_variance": False,
       "prior": "gaussian", "readout": "ones", "readout_grid": None, "delta": 0.1, "branches": "all", "damping": 0.5}


@pytest.fixture(scope="module")
def io_files(tmp_path_factory):
    """A sweep, its checkpoint (α = 1, 2), a phase-diagram checkpoint, a spectrum-less HDF5 file and a text file."""
    import h5py

    from replica.workflow.io import empty_checkpoint_record, write_checkpoint, write_phase_diagram, write_sweep
    from replica.workflow.run import run_sweep

    d = tmp_path_factory.mktemp("io")
    alphas = np.array([1.0, 2.0])
    result = run_sweep(dict(ERF), alphas, progress=False)
    write_sweep(d / "sweep.h5", result, dict(ERF))
    write_checkpoint(d / "sweep.checkpoint.h5", alphas, {"universal": empty_checkpoint_record(2)}, dict(ERF))
    data = {"alpha": alphas, "delta": np.array([0.1, 0.2]), "done": np.array([True, False]),
            "mmse": np.zeros((2, 2)), "alpha_sp": np.full(2, np.nan), "alpha_c": np.full(2, np.nan)}
    write_phase_diagram(d / "phase.h5", data, dict(ERF), parameter="delta", complete=False)
    with h5py.File(d / "plain.h5", "w") as h5:
        h5["x"] = 1.0
    (d / "text.h5").write_text("not an HDF5 file\n")
    return {"dir": d, "alphas": alphas, "result": result, "data": data}


def test_read_checkpoint_refuses_another_grid_of_the_same_shape(io_files):
    """The issue's example: ``read_checkpoint(path, alphas)`` documents a ValueError for a checkpoint of another
    α grid; ``replica-sweep --resume`` refuses the other grid earlier (stored options), so keeping only the shape
    comparison failed no test."""
    from replica.workflow.io import read_checkpoint

    path = io_files["dir"] / "sweep.checkpoint.h5"
    assert set(read_checkpoint(path, io_files["alphas"])) == {"universal"}
    with pytest.raises(ValueError, match="α grid"):
        read_checkpoint(path, [1.0, 3.0])          # same shape, other values
    with pytest.raises(ValueError, match="α grid"):
        read_checkpoint(path, [1.0, 2.0, 3.0])     # other shape


def test_read_checkpoint_other_raises(io_files):
    from replica.workflow.io import read_checkpoint
    from replica.workflow.safe_write import ResultFileError

    with pytest.raises(ValueError, match="holds no checkpoint"):
        read_checkpoint(io_files["dir"] / "sweep.h5", io_files["alphas"])
    with pytest.raises(ResultFileError):
        read_checkpoint(io_files["dir"] / "text.h5", io_files["alphas"])


def test_sweep_checkpoint_load_raises_as_read_checkpoint(io_files):
    from replica.workflow.run import SweepCheckpoint
    from replica.workflow.safe_write import ResultFileError

    path = io_files["dir"] / "sweep.checkpoint.h5"
    with pytest.raises(ValueError, match="α grid"):
        SweepCheckpoint.load(path, None, [1.0, 3.0], dict(ERF))
    with pytest.raises(ValueError, match="α grid"):
        SweepCheckpoint(path, None, [1.5, 2.0], dict(ERF)).load_records(path)
    with pytest.raises(ValueError, match="holds no checkpoint"):
        SweepCheckpoint.load(io_files["dir"] / "sweep.h5", None, io_files["alphas"], dict(ERF))
    with pytest.raises(ResultFileError):
        SweepCheckpoint.load(io_files["dir"] / "text.h5", None, io_files["alphas"], dict(ERF))


def test_read_sweep_and_read_phase_diagram_refuse_checkpoints(io_files):
    from replica.workflow.io import IncompleteFileError, read_phase_diagram, read_sweep
    from replica.workflow.safe_write import ResultFileError

    with pytest.raises(IncompleteFileError, match="--resume"):
        read_sweep(io_files["dir"] / "sweep.checkpoint.h5")
    with pytest.raises(IncompleteFileError, match="--resume"):
        read_phase_diagram(io_files["dir"] / "phase.h5")
    assert read_phase_diagram(io_files["dir"] / "phase.h5", allow_incomplete=True)["complete"] is False
    with pytest.raises(ResultFileError, match="--diagram"):   # not a phase diagram, named by ``option``
        read_phase_diagram(io_files["dir"] / "sweep.h5", option="--diagram")
    with pytest.raises(ResultFileError):
        read_phase_diagram(io_files["dir"] / "text.h5")


def test_file_kind_read_root_attrs_and_read_spectrum_raise_result_file_errors(io_files):
    from replica.workflow.io import file_kind, read_root_attrs, read_spectrum
    from replica.workflow.safe_write import ResultFileError

    d = io_files["dir"]
    assert file_kind(d / "sweep.h5") == "sweep"
    with pytest.raises(ResultFileError):
        file_kind(d / "text.h5")
    with pytest.raises(ResultFileError, match="--resume"):
        read_root_attrs(d / "text.h5", option="--resume")
    with pytest.raises(ResultFileError):
        read_root_attrs(d / "sweep.h5", kinds=("phase_diagram",))
    with pytest.raises(ResultFileError):
        read_spectrum(d / "sweep.h5")         # a file of another kind
    with pytest.raises(ResultFileError):
        read_spectrum(d / "text.h5")


def test_writers_raise_os_error_and_keep_the_previous_file(io_files, tmp_path):
    from replica.workflow.io import empty_checkpoint_record, write_checkpoint, write_phase_diagram, write_sweep

    missing = tmp_path / "no" / "such" / "dir"
    with pytest.raises(OSError):
        write_sweep(missing / "s.h5", io_files["result"], dict(ERF))
    with pytest.raises(OSError):
        write_checkpoint(missing / "c.h5", io_files["alphas"], {"universal": empty_checkpoint_record(2)}, dict(ERF))
    with pytest.raises(OSError):
        write_phase_diagram(missing / "p.h5", io_files["data"], dict(ERF), parameter="delta", complete=False)
    if os.geteuid() == 0:
        return  # root writes anywhere: the "previous file unchanged" part needs a read-only directory
    ro = tmp_path / "ro"
    ro.mkdir()
    old = ro / "s.h5"
    old.write_bytes(b"previous result")
    ro.chmod(0o555)
    try:
        with pytest.raises(OSError):
            write_sweep(old, io_files["result"], dict(ERF))
        assert old.read_bytes() == b"previous result"
    finally:
        ro.chmod(0o755)


def test_phase_lines_writer_and_reader_raise_as_documented(io_files, tmp_path):
    """write_phase_lines: OSError where it cannot write, the previous file kept; read_phase_lines:
    ResultFileError naming ``option`` for a file of another kind or not HDF5; what it reads back is what was
    written (hand-made lines, not a traced run)."""
    from replica.continuation.codim2 import CriticalPoint, LinePoint, PhaseLine
    from replica.workflow.io import read_phase_lines, write_phase_lines
    from replica.workflow.safe_write import ResultFileError

    lines = [PhaseLine("fold", "delta", [LinePoint(0.1, 1.5, ()), LinePoint(0.2, 1.75, ())], "lost",
                       ("specialized", "start")),
             PhaseLine("crossing", "delta", [LinePoint(0.1, 2.0, ())], "range", ("universal", "specialized"))]
    kw = dict(parameter="delta", requested=[0.1, 0.2], critical=[CriticalPoint(0.25, 1.9, (0, 1))])
    with pytest.raises(OSError):
        write_phase_lines(tmp_path / "no" / "dir" / "l.h5", lines, dict(ERF), **kw)
    out = write_phase_lines(tmp_path / "l.h5", lines, dict(ERF), **kw)
    before = out.read_bytes()
    with pytest.raises(Exception):               # a line that cannot be written: the file stays as it was
        write_phase_lines(out, [PhaseLine("fold", "delta", [object()])], dict(ERF), parameter="delta", requested=[0.1])
    assert out.read_bytes() == before
    data = read_phase_lines(out)
    assert data["parameter"] == "delta" and list(data["requested"]) == [0.1, 0.2]
    assert [(ln["kind"], ln["end"], ln["branches"]) for ln in data["lines"]] == \
        [("fold", "lost", ("specialized", "start")), ("crossing", "range", ("universal", "specialized"))]
    assert list(data["lines"][0]["alpha"]) == [1.5, 1.75] and list(data["lines"][0]["delta"]) == [0.1, 0.2]
    assert list(data["critical_points"]["delta"]) == [0.25] and data["critical_points"]["lines"].tolist() == [[0, 1]]
    with pytest.raises(ResultFileError, match="--lines: .*replica-sweep, not by replica-phase-diagram --trace"):
        read_phase_lines(io_files["dir"] / "sweep.h5", option="--lines")      # a sweep, not phase lines
    with pytest.raises(ResultFileError):
        read_phase_lines(io_files["dir"] / "text.h5")


def test_write_sweep_refuses_an_unknown_axis_scale(io_files, tmp_path):
    from replica.workflow.io import write_sweep

    with pytest.raises(KeyError):
        write_sweep(tmp_path / "s.h5", io_files["result"], dict(ERF), axes={"overlap_W": ("no_such_scale",)})
    assert not (tmp_path / "s.h5").exists()


def test_channel_parameters_refuses_an_unknown_channel():
    from replica.workflow.io import channel_parameters

    assert channel_parameters({"delta": 0.1}) == {"name": "gaussian", "delta": 0.1}
    with pytest.raises(ValueError):
        channel_parameters({"channel": "nope", "delta": 0.1})
    with pytest.raises(ValueError, match="threshold"):
        channel_parameters({"channel": "probit", "delta": 0.1, "channel_threshold": float("inf")})
    with pytest.raises(ValueError):
        channel_parameters({"channel": "logistic", "temperature": -1.0})


@pytest.mark.parametrize("alphas", [[], [1.0, float("nan")], [0.0, 1.0], [-1.0], [1.0, 1.0]])
def test_run_sweep_refuses_bad_alpha_grids(alphas):
    from replica.workflow.run import run_sweep

    with pytest.raises(ValueError):
        run_sweep(dict(ERF), alphas, progress=False)


def test_run_sweep_raises_usage_and_type_errors():
    from replica.workflow.config import UsageError
    from replica.workflow.run import run_sweep

    with pytest.raises(UsageError, match="^--activation"):
        run_sweep({**ERF, "activation": "nope"}, [1.0], progress=False)
    with pytest.raises(TypeError, match="lacks the required members"):
        run_sweep(dict(ERF), [1.0], progress=False, model=object())


# =========================================================================== 5. branch log lines
def test_branch_log_lines_print_the_grid_ends(caplog):
    """N4: ``branch specialized: alpha 0.632066824 (bifurcation) to nan (grid)``: an end set by the grid is printed
    as the α of the branch's first or last point on the grid."""
    from types import SimpleNamespace

    from replica.branches import BranchData
    from replica.workflow.cli import _log_result

    alphas = np.array([0.5, 1.0, 2.0, 8.0])
    spec = BranchData("specialized", alphas, alpha_start=0.632066824, start_kind="bifurcation",
                      alpha_end=float("nan"), end_kind="grid")
    spec["exists"][1:] = True
    layer = BranchData("layer_1", alphas, alpha_start=float("nan"), start_kind="grid", alpha_end=float("nan"),
                       end_kind="grid")
    layer["exists"][:] = True
    result = SimpleNamespace(universal_only_reason=None, equilibrium_changes=[], branch_transitions={},
                             branches={"universal": BranchData("universal", alphas), "specialized": spec,
                                       "layer_1": layer})
    with caplog.at_level(logging.INFO, logger="replica.workflow.cli"):
        _log_result(result)
    lines = [r.getMessage() for r in caplog.records]
    assert "branch specialized: alpha 0.632066824 (bifurcation) to 8 (grid)" in lines, lines
    assert "branch layer_1: alpha 0.5 (grid) to 8 (grid)" in lines, lines
    assert not any("nan" in ln for ln in lines), lines


# =========================================================================== 6. extreme channel thresholds
@pytest.mark.parametrize("channel", [["--channel", "probit", "--channel-threshold", "100"],
                                     ["--channel", "sign", "--channel-threshold", "1e4"]])
def test_extreme_channel_thresholds_emit_no_runtime_warning(tmp_path, channel):
    """N5: a raw ``RuntimeWarning: divide by zero`` from priors/output_channels.py, also with --quiet (the
    effective variance of a channel whose labels carry no information is +inf, now without the warning)."""
    rc, out, err = _command("replica-sweep", [*channel, "--alpha", "1,2", "--quiet", "-o", "c.h5"], cwd=tmp_path)
    assert rc == 0, err
    assert "RuntimeWarning" not in err and "divide by zero" not in err, err


def test_probit_effective_variance_of_an_uninformative_channel_is_inf_quietly():
    import warnings

    from priors.output_channels import ProbitChannel, sign_channel

    for channel in (ProbitChannel(0.1, 100.0), sign_channel(1e4)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert channel.effective_variance(1.0, 0.5) == float("inf")
    assert np.isfinite(ProbitChannel(0.1, 0.5).effective_variance(1.0, 0.5))


# =========================================================================== 7. configuration values
@pytest.mark.parametrize("command,toml,argv,option", [
    ("sweep", 'gamma = "abc"\n', ["--alpha", "1"], "--gamma"),
    ("sweep", "channel = 3\n", ["--alpha", "1"], "--channel"),
    ("experiment", 'gamma = "abc"\n', ["--alpha", "1"], "--gamma"),
    ("phase-diagram", "channel = 3\n", ["--alpha", "1", "--delta", "0.1,0.2", "--workers", "1"], "--channel"),
])
def test_config_values_checked_after_parsing_name_the_key_and_the_file(tmp_path, capsys, command, toml, argv,
                                                                       option):
    """N6: ``gamma = "abc"`` or ``channel = 3`` was refused as ``--gamma: …`` without naming the key or the file;
    docs/commands.md promises ``--config: key 'gamma' in 'run.toml' (--gamma): …``."""
    from replica.workflow import cli

    main = {"sweep": cli.sweep_main, "experiment": experiment_main, "phase-diagram": cli.phase_diagram_main}[command]
    cfg = tmp_path / "run.toml"
    cfg.write_text(toml)
    key = toml.split(" =")[0]
    assert main(["--config", str(cfg), *argv, "-o", str(tmp_path / "x.h5")]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"--config: key {key!r} in {str(cfg)!r} ({option}): " in line, line
    assert not (tmp_path / "x.h5").exists()


def test_a_bad_value_on_the_command_line_is_not_blamed_on_the_file(tmp_path, capsys):
    from replica.workflow.cli import sweep_main

    cfg = tmp_path / "run.toml"
    cfg.write_text('gamma = "0.5"\n')
    assert sweep_main(["--config", str(cfg), "--gamma", "abc", "--alpha", "1", "-o", str(tmp_path / "x.h5")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "error: --gamma: " in line and "--config" not in line, line


# =========================================================================== 8. smaller ones
def _quoted_commands(text, command):
    """Every invocation of ``command`` a document shows: inline code in the prose and lines of code blocks."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    inline = [m for m in re.findall(r"`([^`]+)`", prose) if m.split()[:1] == [command]]
    blocks = [ln.split("#")[0].strip() for body in re.findall(r"```\w*\n(.*?)```", text, re.S)
              for ln in re.sub(r"\\\n\s*", " ", body).splitlines() if ln.strip().startswith(command)]
    return inline + blocks


def test_docs_replica_figures_commands_name_the_output_directory():
    """N9: docs/physics.md's ``replica-figures --only depth`` failed as written (``-o/--output: required``)."""
    problems = []
    for doc in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for cmd in _quoted_commands(doc.read_text(), "replica-figures"):
            words = cmd.split()
            if len(words) > 1 and not ({"-o", "--output", "--help", "--version"} & set(words)):
                problems.append(f"{doc.name}: {cmd}")
    assert not problems, problems


@pytest.mark.parametrize("address,needle", [
    ("tcp://127.0.0.1:99999", "port"),
    ("", "empty"),
    ("tcp://127.0.0.1", "port"),
    ("tcp://:8786", "host"),
])
def test_bad_scheduler_addresses_are_refused_at_once(tmp_path, capsys, address, needle):
    """N12: ``--scheduler tcp://127.0.0.1:99999`` waited 20 s for a connection to an impossible port;
    ``--scheduler ''`` said ``cannot connect to  (missing port …)``."""
    from replica.workflow.cli import phase_diagram_main

    t0 = time.perf_counter()
    rc = phase_diagram_main(["--alpha", "1,2", "--delta", "0.1,0.2", "--scheduler", address,
                             "-o", str(tmp_path / "x.h5"), "--quiet"])
    line = one_line(capsys.readouterr().err)
    assert rc == 2 and "--scheduler: " in line and needle in line, line
    assert "cannot connect" not in line, line
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "x.h5").exists()


def test_a_scheduler_port_where_nothing_listens_is_refused_at_once(tmp_path, capsys):
    """A valid address whose port is closed (connection refused) waited dask's 20 s of retries."""
    import socket

    from replica.workflow.cli import phase_diagram_main

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens on it now
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    rc = phase_diagram_main(["--alpha", "1,2", "--delta", "0.1,0.2", "--scheduler", f"tcp://127.0.0.1:{port}",
                             "-o", str(tmp_path / "x.h5"), "--quiet"])
    line = one_line(capsys.readouterr().err)
    assert rc == 2 and "--scheduler: " in line and "connection refused" in line, line
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "x.h5").exists()


def test_sweep_summary_says_none_where_the_grid_has_no_transition(tmp_path, capfd):
    """The closing log line of a sweep printed ``alpha_sp = nan, alpha_c = nan`` for a grid without a transition."""
    from replica.workflow.cli import sweep_main

    assert sweep_main(["--alpha", "0.01,0.02", "-o", str(tmp_path / "x.h5")]) == 0
    summary = [line for line in capfd.readouterr().err.splitlines() if "sweep of 2 α values" in line]
    assert summary and "alpha_sp = none on the grid, alpha_c = none on the grid" in summary[-1], summary
    assert "nan" not in summary[-1]


def test_architecture_refusal_names_the_option(tmp_path, capsys):
    """N12: ``--architecture two_layer`` with one layer said ``architecture: …`` instead of ``--architecture: …``."""
    from replica.workflow.cli import sweep_main

    assert sweep_main(["--architecture", "two_layer", "--alpha", "1", "-o", str(tmp_path / "x.h5")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "error: --architecture: two_layer does not solve --layers 1" in line, line


def test_run_phase_diagram_refuses_an_impossible_scheduler_before_writing(tmp_path):
    """The API level of the same check (``run_phase_diagram`` documents a ValueError for it)."""
    from replica.workflow.phase_diagram import run_phase_diagram

    lines = [{**ERF, "delta": d} for d in (0.1, 0.2)]
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="^scheduler: .*port"):
        run_phase_diagram(tmp_path / "p.h5", "delta", [0.1, 0.2], lines, dict(ERF), [1.0, 2.0],
                          scheduler="tcp://127.0.0.1:99999", progress=False)
    assert time.perf_counter() - t0 < 10 and list(tmp_path.iterdir()) == []
