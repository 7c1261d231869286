"""The built-in models declare the protocol, and the protocol declares every hook the package reads.

* Every registered built-in architecture builds a model (one per kind of model it returns: the
  ``deep_linear`` architecture builds :class:`~replica.models.deep_fronts.DeepFrontModel` by default and
  :class:`~replica.models.deep_linear.DeepLinearModel` on a fixed s grid) that inherits
  :class:`replica.interface.ModelDefaults` and has every required member (:func:`replica.interface.missing_members`).
* Every class of :mod:`replica.models` that has the required methods of a model inherits ``ModelDefaults``.
* Every name the package passes to :func:`replica.interface.hook` (read from the syntax tree of
  ``replica/**/*.py``) is declared in ``ModelDefaults`` and documented there, and every declared hook is read
  somewhere: a new hook cannot be used without being declared, and a declared one does not outlive its use.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import types
from pathlib import Path

import pytest

from replica import models
from replica.interface import HOOKS, REQUIRED, ModelDefaults, ReplicaModel, hook, missing_members

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "replica"

_ONE = {"layers": 1, "gamma": [0.5], "activation": "relu", "drop_hermite": [], "unit_variance": False,
        "prior": "gaussian", "readout": "ones", "readout_grid": None, "delta": 0.1}
_TWO = {"layers": 2, "gamma": [0.7, 1.3], "activation": "tanh2", "unit_variance": True, "prior": "gaussian",
        "readout": "ones", "readout_grid": None, "delta": 0.1}
_THREE = {**_TWO, "layers": 3, "gamma": [0.5] * 3}

#: (architecture, options, class of the model it builds): small, fast settings, at least one per architecture
CASES = [
    ("shallow", _ONE, "ShallowModel"),
    ("shallow", {**_ONE, "readout": "gaussian"}, "ShallowModel"),  # profile solver
    ("two_layer", _TWO, "TwoLayerModel"),  # profile solver
    ("two_layer", {**_TWO, "s_grid": 3}, "TwoLayerModel"),  # Gauss–Hermite rule in s
    ("deep_linear", _THREE, "DeepFrontModel"),  # front-aligned rules (the default)
    ("deep_linear", {**_THREE, "s_grid": 2}, "DeepLinearModel"),
    ("deep", {**_TWO, "drop_hermite": [0, 1, 2]}, "DeepModel"),
]


def _build(architecture, options):
    from replica.workflow.model_options import build_model

    return build_model({**options, "architecture": architecture})


def test_every_built_in_architecture_is_covered():
    built_in = {name for name, arch in models.architectures().items()
                if getattr(arch.build, "__module__", None) == models.__name__}  # not a module found in the folder
    assert built_in == {name for name, _, _ in CASES}


@pytest.mark.parametrize("architecture, options, cls", CASES,
                         ids=[f"{name}-{cls}-{i}" for i, (name, _, cls) in enumerate(CASES)])
def test_built_in_models_inherit_the_defaults_and_are_complete(architecture, options, cls):
    model = _build(architecture, options)
    assert type(model).__name__ == cls
    assert isinstance(model, ModelDefaults), f"{cls} does not inherit replica.interface.ModelDefaults"
    assert isinstance(model, ReplicaModel)
    assert missing_members(model) == []
    for name in HOOKS:  # every hook reads without error, and the channel terms are not shadowed by the defaults
        hook(model, name)
    assert hook(model, "energetic") is not None and hook(model, "channel_fields") is not None


def _model_classes():
    """Every class defined in a module of :mod:`replica.models` that has the required methods of a model."""
    found = []
    for info in pkgutil.iter_modules(models.__path__):
        module = importlib.import_module(f"{models.__name__}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and all(callable(getattr(obj, name, None)) for name in REQUIRED
                                                         if name not in ("readout_values", "readout_weights")):
                found.append(obj)
    return found


def test_every_model_class_of_the_package_inherits_the_defaults():
    classes = _model_classes()
    assert {c.__name__ for c in classes} >= {"ShallowModel", "TwoLayerModel", "DeepModel", "DeepLinearModel",
                                             "DeepFrontModel"}
    assert [c.__name__ for c in classes if not issubclass(c, ModelDefaults)] == []


def _hook_names():
    """``{name: [file:line, …]}`` of every ``hook(model, "name")`` call in ``replica/**/*.py``, and the calls whose
    name is not a string literal (which this test cannot check)."""
    names, dynamic = {}, []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called != "hook" or len(node.args) < 2:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            arg = node.args[1]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.setdefault(arg.value, []).append(where)
            else:
                dynamic.append(where)
    return names, dynamic


def test_every_hook_the_package_reads_is_declared():
    names, dynamic = _hook_names()
    assert {"update_many", "universal_only_reason", "refined", "interpolate_to"} <= set(names)  # the scan works
    assert dynamic == [], "hook() called with a name that is not a string literal"
    undeclared = {name: where for name, where in names.items() if name not in vars(ModelDefaults)}
    assert undeclared == {}, "hooks read but not declared in replica.interface.ModelDefaults"


def test_every_declared_hook_is_documented_and_read():
    names, _ = _hook_names()
    assert sorted(set(HOOKS) - set(names)) == [], "hooks declared in ModelDefaults that nothing reads"
    doc = inspect.getdoc(ModelDefaults)
    for name in HOOKS:
        value = vars(ModelDefaults)[name]
        if isinstance(value, types.FunctionType):
            assert inspect.getdoc(value), f"ModelDefaults.{name} has no docstring"
        else:
            assert f"\n{name} :" in doc, f"ModelDefaults.{name} is not described in the class docstring"


def test_an_undeclared_hook_is_an_error():
    model = _build("shallow", _ONE)
    with pytest.raises(AttributeError, match="not an optional hook"):
        hook(model, "update_manny")
