"""The documentation site (MkDocs + mkdocstrings, ``mkdocs.yml``) builds in strict mode.

Strict mode turns every warning into a failure: a link to a missing page or anchor, a page of
``docs/`` missing from ``nav`` (``validation.omitted_files: warn``), a ``nav`` entry without its
page, a module of docs/api.md that cannot be collected. The site goes to a temporary directory.
The build takes about 10 s (the API pages most of it); the broken-link checks build a copy of
the pages without the API, about 4 s each.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("mkdocs", reason="the test extra (pip install -e '.[test]') provides mkdocs")
pytest.importorskip("mkdocstrings", reason="the test extra provides mkdocstrings[python]")


def _build(config, site):
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                           "-d", str(site)], capture_output=True, text=True, timeout=300)


def test_site_builds_strict_with_api_pages(tmp_path):
    proc = _build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-4000:]
    site = tmp_path / "site"
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    for page in pages - {"index"}:
        assert (site / page / "index.html").is_file(), page
    # every module of the API page rendered from its docstrings, with its public names
    api = (site / "api" / "index.html").read_text()
    modules = re.findall(r"^::: ([\w.]+)$", (ROOT / "docs" / "api.md").read_text(), re.M)
    assert len(modules) >= 30
    for module in modules:
        assert f'id="{module}"' in api, module
    for name in ("replica.workflow.reference.reference_dir", "replica.models.shallow.ShallowModel",
                 "hciz.package_data.data_dir"):
        assert f'id="{name}"' in api, name


def _pages_copy(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "docs" / "api.md").write_text("# API reference\n")   # no docstrings: fast
    return copy


def test_copy_without_api_builds(tmp_path):
    """The copy used below builds: its failures come from the defect alone."""
    proc = _build(_pages_copy(tmp_path) / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.parametrize("defect", ["missing page", "missing anchor", "page not in nav"])
def test_site_build_fails_on_a_broken_link(tmp_path, defect):
    copy = _pages_copy(tmp_path)
    page = copy / "docs" / "files.md"
    if defect == "missing page":
        page.write_text(page.read_text() + "\nSee [nothing](no_such_page.md).\n")
        culprit = "no_such_page.md"
    elif defect == "missing anchor":
        page.write_text(page.read_text() + "\nSee [nothing](physics.md#no-such-section).\n")
        culprit = "#no-such-section"
    else:
        (copy / "docs" / "orphan.md").write_text("# Orphan\n")
        culprit = "orphan.md"
    proc = _build(copy / "mkdocs.yml", tmp_path / "broken")
    assert proc.returncode != 0, defect
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("WARNING")]
    assert warnings and culprit in proc.stderr, proc.stderr[-2000:]
