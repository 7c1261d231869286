"""The architecture of the package: the model registry, the import graph and the layer rule.

* A toy architecture registered from outside :mod:`replica.models` is built by the command
  line's option resolver and swept, stored, read back and plotted by the generic machinery
  (continuation, stability, equilibrium, HDF5, figures) without any of it naming the model.
  The toy is the Gaussian spiked-Wigner channel, whose replica-symmetric free entropy
  ``f(m) = ψ(αm) − αm²/4`` with ``ψ(r) = (r − ln(1 + r))/2`` (Gaussian prior, I-MMSE
  ``ψ' = m_P/2``) has the stationary points ``m = 0`` and ``m = 1 − 1/α``: the zero branch is
  linearly unstable beyond ``α = 1`` (``F'(0) = α``), where the informative branch takes over
  continuously, and the equilibrium error is ``1 − m²``. Those closed forms are what the
  machinery must reproduce.
* No import cycle among the modules of the three packages (imports inside functions
  included), and the layer rule of docs/architecture.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from replica import models
from replica.engine import STATUS_MESSAGES, FixedPointResult, solve_fixed_point
from replica.interface import ReplicaModel, ReplicaState

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hciz", "priors", "replica")


# --------------------------------------------------------------------------- a toy architecture
class ToyState:
    def __init__(self, alpha, m):
        self.alpha = float(alpha)
        self.m = float(m)
        r = alpha * m
        self.free_entropy = 0.5 * (r - np.log1p(r)) - alpha * m * m / 4.0
        self.mmse = 1.0 - m * m

    @property
    def overlaps(self):
        return np.array([self.m])

    def record(self):
        return {"mmse": self.mmse, "free_entropy": self.free_entropy, "overlap": self.m}


class ToyModel:
    """Gaussian spiked Wigner: ``F(m) = αm/(1 + αm)``."""

    readout_values = np.array([1.0])
    readout_weights = np.array([1.0])

    def update(self, alpha, x):
        m = np.clip(np.asarray(x, float), 0.0, None)
        return alpha * m / (1.0 + alpha * m)

    def state(self, alpha, x):
        return ToyState(alpha, float(np.asarray(x)[0]))

    def _result(self, alpha, res):
        res.info["state"] = self.state(alpha, res.x)
        return res

    def starts(self):
        return {"informed": (np.array([1.0]), "both"), "uninformed": (np.array([1e-4]), "up")}

    def solve_universal(self, alpha):
        x = np.zeros(1)
        return self._result(alpha, FixedPointResult(x, True, "exact", STATUS_MESSAGES["exact"], 0, 0.0, 0.0,
                                                    "universal"))

    def solve_from(self, alpha, overlaps, warm=None, *, start="", **solver_options):
        x0 = np.asarray(warm if warm is not None else overlaps, dtype=float)
        res = solve_fixed_point(lambda x: self.update(alpha, x), x0, start=start, **solver_options)
        return res if res.status == "nan" else self._result(alpha, res)

    def phase(self, state):
        return "universal" if abs(state.m) < 1e-6 else "specialized"

    def specialization(self, state):
        return state.m ** 2

    def universal_only_reason(self):
        return None

    def universal_indices(self):
        return np.array([], dtype=int)


@pytest.fixture
def toy_registered():
    def build(request):
        if request.delta != 0.0:
            raise ValueError("delta: the toy channel is noiseless")
        return ToyModel()

    models.register(models.Architecture("toy_spiked", build, lambda layers, acts: False, priority=-1,
                                        summary="Gaussian spiked Wigner (test)"))
    yield
    models.unregister("toy_spiked")


def _options(**kw):
    return {"layers": 1, "gamma": [0.5], "activation": "relu", "drop_hermite": [], "unit_variance": False,
            "prior": "gaussian", "readout": "ones", "readout_grid": None, "delta": 0.0, **kw}


def test_toy_architecture_runs_through_the_generic_machinery(toy_registered, tmp_path):
    from replica.branches import sweep
    from replica.workflow.io import read_sweep, write_sweep
    from replica.workflow.model_options import build_model
    from replica.workflow.plotting import plot_file

    model = build_model(_options(architecture="toy_spiked"))
    assert isinstance(model, ToyModel) and isinstance(model, ReplicaModel)
    assert isinstance(model.state(0.5, np.array([0.2])), ReplicaState)
    # without the name the automatic choice is unchanged: one hidden layer
    assert type(build_model(_options(delta=0.1))).__name__ == "ShallowModel"

    alphas = np.linspace(0.2, 3.0, 15)
    res = sweep(model, alphas, progress=False)
    m = np.where(alphas > 1.0, 1.0 - 1.0 / alphas, 0.0)
    np.testing.assert_allclose(res.equilibrium["mmse"], 1.0 - m ** 2, atol=1e-6)
    assert res.branch_transitions["universal"]["alpha_instability"] == pytest.approx(1.0, abs=1e-3)

    path = write_sweep(tmp_path / "toy.h5", res, {"architecture": "toy_spiked"})
    back = read_sweep(path)
    np.testing.assert_allclose(back["equilibrium"]["mmse"], 1.0 - m ** 2, atol=1e-6)
    spec = back["branches"]["specialized"]
    ok = np.asarray(spec["exists"], bool)
    np.testing.assert_allclose(np.asarray(spec["overlap"])[ok], (1.0 - 1.0 / np.asarray(spec["alpha"]))[ok],
                               atol=1e-6)
    fig = plot_file(path)
    drawn = [line.get_data() for line in fig.axes[0].get_lines() if len(line.get_xdata()) > 2]
    assert drawn  # every curve drawn lies on a stationary branch: 1 or 1 − (1 − 1/α)²
    for x, y in drawn:
        x, y = np.asarray(x, float), np.asarray(y, float)
        ok = np.isfinite(y)
        closest = np.minimum(np.abs(y - 1.0), np.abs(y - (1.0 - (1.0 - 1.0 / x) ** 2)))
        assert np.all(closest[ok] < 1e-6)


class ToyWithSchema(ToyModel):
    """The toy declaring what its state records: ``overlap`` (m) is an overlap to draw."""

    def state_schema(self):
        from replica.interface import FieldSpec

        return (FieldSpec("overlap", "$m$", "overlap"),)


def _overlap_lines(fig):
    ax = next(a for a in fig.axes if a.get_title(loc="left").startswith("overlaps"))
    return [(np.asarray(x, float), np.asarray(y, float)) for x, y in (ln.get_data() for ln in ax.get_lines())
            if len(x) > 2]


def test_a_custom_overlap_field_gets_its_overlaps_panel(tmp_path, caplog):
    """The overlaps panel draws the fields the state schema declares, not fields known by name: the toy's
    ``overlap`` is drawn and lies on m = 1 − 1/α; a sweep result is drawn as its file is."""
    from replica.workflow.io import write_sweep
    from replica.workflow.plotting import plot_file, plot_sweep
    from replica.workflow.run import run_sweep

    models.register(models.Architecture("toy_schema", lambda request: ToyWithSchema(), lambda layers, acts: False,
                                        priority=-1))
    try:
        res = run_sweep(_options(architecture="toy_schema"), np.linspace(0.2, 3.0, 15), progress=False)
    finally:
        models.unregister("toy_schema")
    assert res.architecture == "toy_schema"
    path = write_sweep(tmp_path / "toy.h5", res, {})
    for fig in (plot_file(path), plot_sweep(res)):
        lines = _overlap_lines(fig)
        assert lines, "the overlaps panel is empty"
        for x, y in lines:
            np.testing.assert_allclose(y, 1.0 - 1.0 / x, atol=1e-6)
    # a model that declares no overlap: the panel stays empty, with a warning saying why
    from replica.branches import sweep

    with caplog.at_level("WARNING"):
        fig = plot_sweep(sweep(ToyModel(), np.linspace(0.2, 3.0, 15), progress=False))
    assert not _overlap_lines(fig) and "state_schema" in caplog.text


def test_required_members_are_required():
    """A model without ``phase`` is refused by name (branches were silently called ``specialized``)."""
    from replica.interface import missing_members
    from replica.workflow.run import run_sweep

    class NoPhase(ToyModel):
        phase = None

    assert missing_members(ToyModel()) == [] and missing_members(NoPhase()) == ["phase"]
    models.register(models.Architecture("toy_no_phase", lambda request: NoPhase(), None))
    try:
        with pytest.raises(TypeError, match=r"toy_no_phase: the model lacks the required members phase"):
            run_sweep(_options(architecture="toy_no_phase"), [0.5, 2.0], progress=False)
    finally:
        models.unregister("toy_no_phase")


def test_registry_errors_are_one_line_usage_errors(toy_registered):
    from replica.workflow.config import UsageError
    from replica.workflow.model_options import build_model

    with pytest.raises(UsageError, match=r"^--architecture: unknown architecture 'toy_spikd'; valid names: .*toy_spiked"):
        build_model(_options(architecture="toy_spikd"))
    with pytest.raises(UsageError, match=r"^--delta: the toy channel is noiseless$"):
        build_model(_options(architecture="toy_spiked", delta=0.1))
    with pytest.raises(ValueError, match="already registered"):
        models.register(models.Architecture("toy_spiked", ToyModel, lambda layers, acts: False))


def test_a_new_module_in_the_models_folder_is_found_and_imported_only_when_chosen(tmp_path, monkeypatch):
    """A module of the folder is a lazy spec: listed and chosen by name without importing it before it
    builds a model, and never imported by the automatic choice (docs/architecture.md)."""
    (tmp_path / "toy_folder_model.py").write_text(
        "IMPORTED = True\n"
        "def build(request):\n    return 'built'\n")
    monkeypatch.setattr(models, "__path__", [*models.__path__, str(tmp_path)])
    monkeypatch.setattr(models, "_DISCOVERED", False)
    name = "replica.models.toy_folder_model"
    try:
        known = models.architectures()
        assert "toy_folder_model" in known and name not in sys.modules
        assert models.select(1, ()).name == "shallow" and name not in sys.modules
        assert models.get_architecture("toy_folder_model").accepts is None and name not in sys.modules
        request = models.ModelRequest(1, (), (0.5,), 0.1, None, None)
        assert models.build(request, "toy_folder_model") == "built" and name in sys.modules
    finally:
        models.unregister("toy_folder_model")
        sys.modules.pop(name, None)


def test_builtin_architectures_are_chosen_without_importing_their_modules():
    import subprocess

    code = ("import sys; from replica import models; from replica.activations import get_activation;"
            "a = get_activation('relu'); h = get_activation('tanh2', drop_hermite=(0, 1, 2));"
            "print(models.select(1, (a,)).name, models.select(2, (a,)).name, models.select(4, (a,)).name,"
            " models.select(3, (h,)).name);"
            "print(sorted(m for m in sys.modules if m.startswith('replica.models.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0].split() == ["shallow", "two_layer", "deep_linear", "deep"]
    assert out[1] == "[]"


# --------------------------------------------------------------------------- the import graph
def _load_import_graph():
    """scripts/import_graph.py: the one import walker (also the printer ``python -m scripts.import_graph``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


import_graph = _load_import_graph()
_graph = import_graph.graph


def test_graph_sees_known_edges():
    graph = _graph()
    assert "replica.engine" in graph["replica.continuation.correctors"]
    assert "replica.continuation" in graph["replica.branches"]
    assert "replica.workflow.run" in graph["replica.workflow.phase_diagram"]  # a lazy import
    assert "hciz.rectangular" in graph["replica.models.two_layer"]


#: the one import allowed between architecture modules: DeepFrontModel subclasses DeepLinearModel (the same
#: architecture family on front-aligned rules, docs/architecture.md)
ARCHITECTURE_FAMILIES = {"replica.models.deep_fronts": {"replica.models.deep_linear"}}


def test_architecture_modules_import_no_other_architecture():
    """The architecture modules share their common pieces through replica/models/_common.py, not through each
    other (``deep_linear`` imported ``two_layer`` and ``deep``; ``two_layer`` imported ``deep``)."""
    graph = _graph()
    prefix = "replica.models."
    archs = {m for m in graph if m.startswith(prefix) and not m[len(prefix):].startswith("_")}
    assert {prefix + name for name in models._BUILTIN_MODULES} <= archs  # registered: the built-ins
    assert prefix + "_common" in graph
    bad = {m: sorted((graph[m] & archs) - ARCHITECTURE_FAMILIES.get(m, set())) for m in sorted(archs)}
    assert not {m: t for m, t in bad.items() if t}, f"architecture modules importing each other: {bad}"
    for m in archs - {prefix + "shallow"}:  # every multi-layer architecture uses the shared module
        assert prefix + "_common" in graph[m], m


def test_no_import_cycles():
    graph = _graph()
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def connect(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            connect(v)
    assert not cycles, f"import cycles: {cycles}"


# Layer rule of docs/architecture.md: a module may import only the layers listed for it
# (import_graph.LAYERS, import_graph.ALLOWED).
def test_layer_rule():
    bad = import_graph.violations(_graph())  # the front door `replica` re-exports from every layer: exempt
    assert not bad, "layer rule of docs/architecture.md broken:\n" + "\n".join(bad)


def test_import_graph_printer_runs_as_a_script_and_as_a_module():
    """``python scripts/import_graph.py`` and ``python -m scripts.import_graph`` print the layer graph; with
    ``--modules PREFIX`` every module under the prefix and what it imports."""
    import subprocess

    runs = [subprocess.run([sys.executable, *how], cwd=ROOT, capture_output=True, text=True, timeout=120)
            for how in (["scripts/import_graph.py"], ["-m", "scripts.import_graph", "--modules", "replica.models"])]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
        assert "against the layer rule: 0" in proc.stdout
        assert "models       -> numerics" in proc.stdout
    counts = import_graph.layer_edges(_graph())
    assert f"workflow     -> models       {counts[('workflow', 'models')]:4d}" in runs[0].stdout
    listed = [ln for ln in runs[1].stdout.splitlines() if ln.startswith("  replica.models.two_layer [models]: ")]
    assert len(listed) == 1 and "hciz.rectangular" in listed[0]
    assert "replica.branches [" not in runs[1].stdout  # only the modules under the prefix


def test_foundations_know_nothing_of_networks():
    graph = _graph()
    for mod, edges in graph.items():
        if mod.split(".")[0] in ("hciz", "priors"):
            assert not {t for t in edges if t.split(".")[0] == "replica"}, mod


def test_shared_option_keys_are_the_options_of_every_command():
    from replica.workflow.experiment_cli import build_parser as build_experiment_parser
    from replica.workflow.sgd_cli import build_parser as build_sgd_parser

    from replica.workflow import cli, figures, spectrum
    from replica.workflow.config import SHARED_OPTION_KEYS

    keys = {action.dest
            for build in (cli.build_sweep_parser, cli.build_plot_parser, cli.build_phase_diagram_parser,
                          spectrum.build_parser, build_experiment_parser, build_sgd_parser, figures.build_parser)
            for action in build()._actions}
    assert SHARED_OPTION_KEYS == keys


def test_only_the_fixed_top_level_packages():
    """The import names at the top are the fixed layout (``hciz``, ``priors``, ``replica``): no generic
    name such as ``simulations`` that collides with other installed packages."""
    import re

    tops = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert tops == set(PACKAGES) | {"data"}  # data/ is installed as replica_hciz_data
    listed = re.search(r"^packages = \[(.*?)\]", (ROOT / "pyproject.toml").read_text(), re.S | re.M).group(1)
    names = set(re.findall(r'"([\w.]+)"', listed))
    assert {n.split(".")[0] for n in names} == set(PACKAGES) | {"replica_hciz_data"}
    assert "replica.simulations" in names


def test_import_graph_refuses_an_empty_root_or_prefix_in_one_line(tmp_path, capsys):
    # a wrong --root used to print "0 modules", "against the layer rule: 0" and exit 0 (the rule vacuously
    # passed); an unknown --modules prefix printed an empty listing with exit 0
    assert import_graph.main(["--root", str(tmp_path)]) == 2
    assert "--root" in capsys.readouterr().err.strip().splitlines()[0]
    assert import_graph.main(["--modules", "nonsense.x"]) == 2
    captured = capsys.readouterr()
    assert len(captured.err.strip().splitlines()) == 1 and "--modules" in captured.err and captured.out == ""
    assert import_graph.main(["--modules", "replica.models"]) == 0
