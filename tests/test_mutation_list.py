"""The mutation list of ``scripts/mutation_check.py`` follows the code.

Every mutation replaces one exact piece of source text; when a line it names moves or changes,
the full mutation run stops at once (``STALE …``). These tests check the list itself on every
default run, without running any mutation: each old text is found exactly once in its file,
each replacement differs from it, names are unique, and every test a mutation names exists
(the file, and the function or ``Class::method`` in it, read from the file's syntax tree).
"""
import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_mutation_check():
    spec = importlib.util.spec_from_file_location("_mutation_check_under_test", ROOT / "scripts" / "mutation_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MUTATIONS = _load_mutation_check().MUTATIONS


def _defined_tests(path: Path) -> set:
    """Node names (``test_x`` and ``TestY::test_x``) of the test functions defined in ``path``."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names.add(f"{node.name}::{item.name}")
    return names


def test_the_list_is_not_empty_and_names_are_unique():
    names = [m.name for m in MUTATIONS]
    assert len(names) > 50
    assert len(set(names)) == len(names), sorted({n for n in names if names.count(n) > 1})


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_old_text_is_found_exactly_once(mutation):
    path = ROOT / mutation.file
    assert path.is_file(), f"{mutation.name}: no file {mutation.file}"
    count = path.read_text().count(mutation.old)
    assert count == 1, f"{mutation.name}: old text found {count} times in {mutation.file} (expected once)"
    assert mutation.new != mutation.old, f"{mutation.name}: the mutation changes nothing"


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_every_named_test_exists(mutation):
    assert mutation.tests, f"{mutation.name}: names no test"
    for node_id in mutation.tests:
        file, _, name = node_id.partition("::")
        path = ROOT / file
        assert path.is_file(), f"{mutation.name}: no test file {file}"
        if not name:
            continue
        name = name.split("[", 1)[0]  # a parametrized case names its function
        assert name in _defined_tests(path), f"{mutation.name}: {file} defines no test {name}"
