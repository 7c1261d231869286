"""Replica-symmetric free entropies, fixed points, branches, sweeps and I/O.

Main entry points
-----------------
ShallowModel
    One hidden layer (docs/theory.md §5): universal and specialization phases.
DeepModel
    L hidden layers with Hermite degrees ≤ 2 removed (docs/theory.md §6.1).
DeepLinearModel
    L hidden layers with odd activations that keep their linear part (docs/deep_linear.md).
sweep
    Every branch, the equilibrium and the transitions on an α grid.
run_sweep
    The sweep of resolved options, as ``replica-sweep`` computes it (:mod:`replica.workflow.run`).
get_activation
    Activations by name with Hermite coefficients and dual kernels.

Layout (docs/architecture.md)
-----------------------------
``replica/*.py``
    Architecture-free numerics: the solver protocol (:mod:`replica.interface`), continuation
    and phases (:mod:`replica.continuation`), the damped iteration (:mod:`replica.engine`),
    activations, readout profiles, root finding.
``replica/models/``
    One module per architecture and the registry that builds them (:mod:`replica.models`).
``replica/workflow/``
    Command lines, configuration, HDF5 files, the write protocol, plots, phase diagrams,
    spectra, reference figures.
"""

#: the package version, written here only (pyproject.toml reads it: ``[tool.setuptools.dynamic]``)
__version__ = "0.1.0"

__all__ = ["ShallowModel", "DeepModel", "DeepLinearModel", "sweep", "run_sweep", "get_activation", "read_sweep",
           "write_sweep", "__version__", "git_revision"]

_REVISION = None


def git_revision() -> str:
    """Full git revision (40 hex digits) of the package source, or ``"unknown"``; asked once per process. The
    one format of the root attribute ``git_revision`` of every file (whose attribute ``version`` names the
    installed version in every case).

    The revision is the HEAD of the git work tree the package directory lies in only when that work tree is the
    package's own repository: it tracks this directory's ``__init__.py`` as ``replica/__init__.py`` at its top.
    An installed copy (``pip install .``, a wheel) reports the revision recorded when it was built
    (``replica/_build_revision.txt``, written by the build hook of setup.py from the repository the sources were
    built in, or from the sdist they came from), never the HEAD of another work tree it lies in, e.g. a virtual
    environment inside another project; ``"unknown"`` where nothing was recorded (sources copied without git)."""
    global _REVISION
    if _REVISION is None:
        import subprocess
        from pathlib import Path

        here = Path(__file__).resolve().parent

        def git(*args):
            out = subprocess.run(["git", *args], cwd=here, capture_output=True, text=True, timeout=5)
            return out.stdout.strip() if out.returncode == 0 else ""

        try:
            own = git("ls-files", "--full-name", "--error-unmatch", "--", "__init__.py") == f"{here.name}/__init__.py"
            head = git("rev-parse", "HEAD") if own else ""
        except (OSError, subprocess.SubprocessError):  # pragma: no cover - git missing
            head = ""
        if not head:
            recorded = here / "_build_revision.txt"
            text = recorded.read_text().strip() if recorded.is_file() else ""
            head = text if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else ""
        _REVISION = head or "unknown"
    return _REVISION


def __getattr__(name):
    # lazy imports keep `import replica` (and the CLI's --help) fast
    if name == "ShallowModel":
        from .models.shallow import ShallowModel

        return ShallowModel
    if name == "DeepModel":
        from .models.deep import DeepModel

        return DeepModel
    if name == "DeepLinearModel":
        from .models.deep_linear import DeepLinearModel

        return DeepLinearModel
    if name == "sweep":
        from .continuation import sweep

        return sweep
    if name == "get_activation":
        from .activations import get_activation

        return get_activation
    if name == "run_sweep":
        from .workflow.run import run_sweep

        return run_sweep
    if name in ("read_sweep", "write_sweep"):
        from .workflow import io

        return getattr(io, name)
    raise AttributeError(f"module 'replica' has no attribute {name!r}")
