"""The package works installed from a wheel, outside any clone (issue 32, item 4).

``python -m build`` (no build isolation: offline) builds the sdist and, from it, the wheel of a
copy of the sources; the wheel goes into a fresh virtual environment without pip whose only
other entry is a ``.pth`` line naming the current environment's site-packages (the
dependencies: numpy, numba, ...; its ``.pth`` files, e.g. an editable install of this clone, are
not executed). From an empty temporary directory it then runs:

* ``replica-sweep`` with its defaults (the main job of the README);
* ``replica-figures --quick --only deep,relu``: the two quickest figures that read the published
  data (``reference/barbier2025_deep`` and ``reference/barbier2025_shallow``; the full ``--quick``
  run takes about 4.5 min on the shared 2-core machine, too long for the default suite);
* every ``<!-- runnable -->`` block of docs/tutorial.md, slow ones included, in order.

It checks that ``replica``, the reference data and the rectangular HCIZ tables are read from the
install and not from the clone. 107–152 s of wall time (41 s of CPU; the first command compiles the numba kernels of the fresh
install) on the shared 2-core machine.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

#: its module fixtures are computed once: one process for the whole file (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("test_wheel_install")

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "hciz", "priors", "replica", "data")
TUTORIAL = ROOT / "docs" / "tutorial.md"



def test_every_package_is_listed_in_pyproject():
    """pyproject.toml lists the packages (so that data/ can be mapped): none may be missing."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    tree = {".".join(p.parent.relative_to(ROOT).parts)
            for top in ("hciz", "priors", "replica") for p in (ROOT / top).rglob("__init__.py")}
    assert set(config["packages"]) == tree | {"replica_hciz_data"}
    assert config["package-dir"] == {"replica_hciz_data": "data"}
    assert (ROOT / "data" / "__init__.py").is_file()


def _dependency_dirs():
    """site-packages directories of the running interpreter (never the clone's root)."""
    dirs = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    dirs |= {p for p in sys.path if p.endswith(("site-packages", "dist-packages"))}
    return sorted(d for d in dirs if Path(d).is_dir())


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    pytest.importorskip("build", reason="the test extra (pip install -e '.[test]') provides build")
    pytest.importorskip("setuptools")
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, src / name)
    dist = base / "dist"
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "-o", str(dist), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels

    env_dir = base / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "replica_hciz_test_dependencies.pth").write_text("\n".join(_dependency_dirs()) + "\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                           "--no-index", "--quiet", str(wheels[0])], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "REPLICA_HCIZ_REFERENCE", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(PATH=f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}", MPLBACKEND="Agg",
               OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    work = base / "work"
    work.mkdir()
    return {"env": env, "cwd": work, "python": python, "site": Path(site)}


def _run(installed, argv, *, timeout=600):
    proc = subprocess.run(argv, cwd=installed["cwd"], env=installed["env"], capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv}\n--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.install
def test_imports_and_data_come_from_the_install(installed):
    out = _run(installed, [str(installed["python"]), "-c",
                           "import replica, hciz.rectangular as r, replica.workflow.reference as ref\n"
                           "print(replica.__file__); print(ref.reference_dir()); print(r._DATA_DIR)\n"
                           "print(len(list(ref.reference_dir().rglob('*.csv'))),"
                           " len(list(r._DATA_DIR.glob('rectangular_table_*.npz'))))"])
    module, reference, tables, counts = out.split("\n")[:4]
    site = installed["site"]
    for p in (module, reference, tables):
        assert Path(p).resolve().is_relative_to(site.resolve()), (p, site)
        assert not Path(p).resolve().is_relative_to(ROOT.resolve()), p
    shipped_csv = len(list((ROOT / "data" / "reference").rglob("*.csv")))
    shipped_npz = len(list((ROOT / "data").glob("rectangular_table_*.npz")))
    assert counts.split() == [str(shipped_csv), str(shipped_npz)]


@pytest.mark.install
def test_main_job_runs(installed):
    out = _run(installed, ["replica-sweep", "--quiet", "-o", "main.h5"])
    assert "main.h5" in out
    assert (installed["cwd"] / "main.h5").stat().st_size > 0


@pytest.mark.install
def test_figures_with_published_data(installed):
    _run(installed, ["replica-figures", "--quick", "--only", "deep,relu", "-o", "figs"])
    figs = installed["cwd"] / "figs"
    assert (figs / "deep.png").is_file() and (figs / "relu.png").is_file()
    rows = (figs / "deviations.csv").read_text()
    assert "deep" in rows and "relu" in rows


@pytest.mark.install
def test_tutorial_runs_outside_the_clone(installed):
    """Every runnable block of the tutorial, in order, in a directory without data/ or docs/."""
    work = installed["cwd"] / "tutorial"
    work.mkdir()
    ran = 0
    for m in re.finditer(r"(?:<!--\s*(runnable[^>]*)-->\s*\n)?```(\w*)\n(.*?)```", TUTORIAL.read_text(), re.S):
        marker, lang, body = m.groups()
        if marker is None:
            continue
        target = next((w.split("=", 1)[1] for w in marker.split() if w.startswith("file=")), None)
        if target:
            (work / target).write_text(body)
            continue
        if lang == "python":
            (work / f"_block{ran}.py").write_text(body)
            argv = [str(installed["python"]), f"_block{ran}.py"]
        else:
            argv = ["bash", "-e", "-c", body]
        proc = subprocess.run(argv, cwd=work, env=installed["env"], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"tutorial block failed:\n{body}\n--- stderr ---\n{proc.stderr[-3000:]}"
        ran += 1
    assert ran >= 4
