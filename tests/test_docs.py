"""The documentation tells the truth: README.md, CONTRIBUTING.md and every page of docs/ (docs/*.md, the pages of
the documentation site; tests/test_docs_site.py builds the site).

* README.md stays short (at most 150 lines) and links every page of docs/;

* every repository path quoted (in backticks or as a Markdown link) exists;
* every console script quoted exists and parses ``--help``; every ``--option`` written after
  a command in a code block is an option of that command, and every ``--option`` quoted in
  the prose is an option of some command;
* every code block preceded by ``<!-- runnable -->`` runs (``<!-- runnable slow -->``: only
  with ``-m slow``; ``<!-- runnable file=NAME -->`` writes the block to NAME for the next
  blocks). The blocks of one document run in order in one scratch directory that links to
  the repository's ``data/``, ``docs/`` and ``scripts/``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 150


def _parsers():
    from replica.workflow.cli import build_phase_diagram_parser, build_plot_parser, build_sweep_parser
    from replica.workflow.figures import build_parser as figures
    from replica.workflow.spectrum import build_parser as spectrum
    from replica.workflow.experiment_cli import build_parser as experiment
    from replica.workflow.sgd_cli import build_parser as sgd

    return {"replica-sweep": build_sweep_parser, "replica-plot": build_plot_parser,
            "replica-phase-diagram": build_phase_diagram_parser, "replica-spectrum": spectrum,
            "replica-figures": figures, "replica-experiment": experiment, "replica-sgd": sgd}


SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def _options(command):
    return set(_parsers()[command]()._option_string_actions)


def _blocks(text):
    """(marker, language, body) of every fenced code block; marker is the preceding comment."""
    out = []
    for m in re.finditer(r"(?:<!--\s*(runnable[^>]*)-->\s*\n)?```(\w*)\n(.*?)```", text, re.S):
        out.append((m.group(1), m.group(2), m.group(3)))
    return out


def _commands(body):
    """Shell commands of a bash block: continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", body)
    for line in joined.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        for part in re.split(r"&&|;|\|", line):
            if part.strip():
                try:
                    yield shlex.split(part)
                except ValueError:
                    yield part.split()


def _doc_ids():
    return [p.name for p in DOCS]


def test_every_console_script_is_covered_and_parses_help(capsys):
    assert set(SCRIPTS) == set(_parsers()), "update _parsers() for new console scripts"
    import importlib

    for name, target in SCRIPTS.items():
        module, func = target.split(":")
        main = getattr(importlib.import_module(module), func)
        try:
            status = main(["--help"])
        except SystemExit as exc:
            status = exc.code
        assert status in (0, None), name
        assert "usage:" in capsys.readouterr().out, name


@pytest.mark.parametrize("doc", DOCS, ids=_doc_ids())
def test_quoted_paths_exist(doc):
    text = doc.read_text()
    missing = []
    prefixes = r"(?:docs|data|scripts|replica|hciz|priors|tests|\.ci)/"
    candidates = set(re.findall(rf"`({prefixes}[^`\s:]*)", text))
    candidates |= {p for p in re.findall(r"\]\(([^)#\s]+)\)", text) if not re.match(r"https?:|mailto:", p)}
    for raw in candidates:
        path = raw.rstrip(".,")
        base = doc.parent if not re.match(prefixes, path) else ROOT
        pattern = re.sub(r"<[^>]+>", "*", path)
        if "*" in pattern:
            if not list(base.glob(pattern)):
                missing.append(raw)
        elif not (base / path).exists():
            missing.append(raw)
    assert not missing, f"{doc.name}: quoted paths that do not exist: {sorted(missing)}"


def test_readme_is_short_and_links_every_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_MAX_LINES
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", text))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= linked, f"pages not linked from README.md: {sorted(pages - linked)}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_commands_and_options_exist(doc):
    text = doc.read_text()
    problems = []
    all_options = set().union(*(_options(c) for c in SCRIPTS))
    for _, lang, body in _blocks(text):
        if lang not in ("bash", "sh", "console", ""):
            continue
        for argv in _commands(body):
            if not argv:
                continue
            cmd = argv[0]
            if cmd.startswith("replica-"):
                if cmd not in SCRIPTS:
                    problems.append(f"unknown command {cmd}")
                    continue
                known = _options(cmd)
                for tok in argv[1:]:
                    if tok.startswith("--") and tok.split("=")[0] not in known:
                        problems.append(f"{cmd} has no option {tok}")
            elif cmd in ("python", "python3") and len(argv) > 1 and argv[1].endswith(".py"):
                if not (ROOT / argv[1]).exists():
                    problems.append(f"missing script {argv[1]}")
    # options quoted in the prose (outside code blocks)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for opt in set(re.findall(r"`(--[a-z][a-z0-9-]*)", prose)):
        if opt not in all_options:
            problems.append(f"prose mentions {opt}, an option of no command")
    assert not problems, f"{doc.name}: " + "; ".join(sorted(set(problems)))


def _run_blocks(doc, tmp_path, *, slow):
    for name in ("data", "docs", "scripts"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", MPLBACKEND="Agg")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    ran = 0
    for marker, lang, body in _blocks(doc.read_text()):
        if marker is None:
            continue
        words = marker.split()
        target = next((w.split("=", 1)[1] for w in words if w.startswith("file=")), None)
        if "slow" in words and not slow:
            if target:
                (tmp_path / target).write_text(body)
            continue
        if target:
            (tmp_path / target).write_text(body)
            continue
        if lang == "python":
            script = tmp_path / f"_block{ran}.py"
            script.write_text(body)
            argv = [sys.executable, str(script)]
        else:
            argv = ["bash", "-e", "-c", body]
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=3000)
        assert proc.returncode == 0, f"{doc.name}: block failed:\n{body}\n--- stderr ---\n{proc.stderr[-3000:]}"
        ran += 1
    return ran


RUNNABLE = [d for d in DOCS if "<!-- runnable" in d.read_text()]


@pytest.mark.parametrize("doc", RUNNABLE, ids=lambda d: d.name)
def test_runnable_blocks_run(doc, tmp_path):
    _run_blocks(doc, tmp_path, slow=False)


@pytest.mark.slow
@pytest.mark.parametrize("doc", RUNNABLE, ids=lambda d: d.name)
def test_runnable_blocks_run_including_slow(doc, tmp_path):
    _run_blocks(doc, tmp_path, slow=True)


def test_runnable_markers_are_used():
    assert RUNNABLE, "no code block is marked <!-- runnable -->"
