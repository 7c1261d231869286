"""The import graph of the three packages (``hciz``, ``priors``, ``replica``) and its layers.

Usage, from the root of the repository::

    python scripts/import_graph.py              # the layer-level graph: import edges between layers
    python -m scripts.import_graph              # the same (``scripts`` is a namespace package)
    python scripts/import_graph.py --modules    # also every module and the modules it imports
    python scripts/import_graph.py --modules replica.models   # only the modules under a prefix

The walker reads every module's source with :mod:`ast` (nothing is imported) and collects every
``import``/``from … import`` at any depth of its code, imports inside functions included. An
edge ``A → B`` means that module ``A`` imports module ``B`` of the three packages (``from pkg
import name`` counts as an edge to ``pkg`` unless ``pkg.name`` is a module; a package's
``__init__`` is not an edge from its own submodules). ``tests/test_architecture.py`` imports
:func:`graph`, :data:`LAYERS`, :data:`ALLOWED` and :func:`layer` from here for the cycle test and
the layer rule of docs/architecture.md: one walker for the test and for this printer.

The layer-level graph counts the module-level edges between each pair of layers
(foundations → numerics → models → simulations → workflow; an arrow from a layer to itself
counts the imports inside it). ``replica/__init__.py`` (the lazy front door, re-exporting from
every layer) is listed apart: it is the one module the layer rule exempts.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

__all__ = ["ROOT", "PACKAGES", "LAYERS", "ALLOWED", "LAYER_ORDER", "FRONT_DOOR", "module_name", "imports", "graph",
           "layer", "layer_edges", "violations", "main"]

#: root of the repository (this file is ``scripts/import_graph.py``)
ROOT = Path(__file__).resolve().parents[1]
#: the packages whose modules are walked
PACKAGES = ("hciz", "priors", "replica")

#: layer of a module: ``(prefix, layer)``, the first matching prefix wins (docs/architecture.md)
LAYERS = [
    ("priors", "foundations"),
    ("hciz", "foundations"),
    ("replica.workflow", "workflow"),
    ("replica.__main__", "workflow"),
    ("replica.models", "models"),
    ("replica.simulations", "simulations"),
    ("replica", "numerics"),
]
#: the layers a module of each layer may import (its own and those below it)
ALLOWED = {
    "foundations": {"foundations"},
    "numerics": {"foundations", "numerics"},
    "models": {"foundations", "numerics", "models"},
    "simulations": {"foundations", "numerics", "models", "simulations"},
    "workflow": {"foundations", "numerics", "models", "simulations", "workflow"},
}
#: the layers from the bottom up
LAYER_ORDER = ("foundations", "numerics", "models", "simulations", "workflow")
#: the package's lazy front door, exempt from the layer rule (it re-exports from every layer)
FRONT_DOOR = "replica"


def module_name(path: Path, root: Path = ROOT) -> str:
    """Dotted name of the module in the file ``path`` (``pkg/__init__.py`` → ``pkg``).

    Raises
    ------
    ValueError
        ``path`` is not under ``root``.
    """
    parts = list(Path(path).relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, root: Path = ROOT, packages=PACKAGES) -> set:
    """Every name under ``packages`` that the module in ``path`` imports, at any depth of its code.

    Returns
    -------
    set of str
        Dotted targets: for ``from m import a`` both ``m`` and ``m.a`` (the caller keeps the
        longest one that is a module). Relative imports are resolved against the module's package.

    Raises
    ------
    SyntaxError
        The file does not parse.
    """
    path = Path(path)
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] in packages:
                out.add(t)
    return out


def graph(root: Path = ROOT, packages=PACKAGES) -> dict:
    """The module-level import graph of ``packages`` under ``root``.

    Returns
    -------
    dict
        ``{module: set of modules it imports}`` over every ``*.py`` file of the packages (a
        module's own package ``__init__`` is not an edge of its submodules).
    """
    files = [p for pkg in packages for p in (Path(root) / pkg).rglob("*.py")]
    modules = {module_name(p, root): p for p in files}
    out = {}
    for mod, path in modules.items():
        edges = set()
        for t in imports(path, root, packages):
            while t and t not in modules:  # `from pkg import name` names an attribute, not a module
                t = t.rpartition(".")[0]
            # a package's __init__ is not an edge to its submodules' importers
            if t and t != mod and not mod.startswith(t + "."):
                edges.add(t)
        out[mod] = edges
    return out


def layer(mod: str) -> str:
    """Layer of the module ``mod`` (:data:`LAYERS`).

    Raises
    ------
    ValueError
        ``mod`` is in none of the layers.
    """
    for prefix, name in LAYERS:
        if mod == prefix or mod.startswith(prefix + "."):
            return name
    raise ValueError(f"{mod}: in no layer of LAYERS")


def layer_edges(g: dict) -> Counter:
    """Number of module-level import edges between each pair of layers.

    Parameters
    ----------
    g : dict
        Output of :func:`graph`; the front door (:data:`FRONT_DOOR`) is left out.

    Returns
    -------
    collections.Counter
        ``{(importing layer, imported layer): number of edges}``.
    """
    return Counter((layer(m), layer(t)) for m, edges in g.items() if m != FRONT_DOOR for t in edges)


def violations(g: dict) -> list:
    """Edges against the layer rule (:data:`ALLOWED`), as sorted lines ``"A (layer) imports B (layer)"``."""
    bad = [f"{m} ({layer(m)}) imports {t} ({layer(t)})" for m, edges in g.items() if m != FRONT_DOOR
           for t in edges if layer(t) not in ALLOWED[layer(m)]]
    return sorted(bad)


def _print_layers(g: dict, out) -> None:
    counts = layer_edges(g)
    sizes = Counter(layer(m) for m in g if m != FRONT_DOOR)
    print("layers (bottom up), modules per layer:", file=out)
    for name in LAYER_ORDER:
        print(f"  {name:<12} {sizes[name]:4d} modules", file=out)
    print("import edges between layers (importer -> imported: module-level edges):", file=out)
    for src in reversed(LAYER_ORDER):
        for dst in reversed(LAYER_ORDER):
            if counts[(src, dst)]:
                mark = "" if dst in ALLOWED[src] else "   <- against the layer rule"
                print(f"  {src:<12} -> {dst:<12} {counts[(src, dst)]:4d}{mark}", file=out)
    front = sorted(Counter(layer(t) for t in g.get(FRONT_DOOR, ())).items())
    if front:
        print(f"  front door {FRONT_DOOR} (exempt) -> " + ", ".join(f"{k} {v}" for k, v in front), file=out)
    bad = violations(g)
    print(f"against the layer rule: {len(bad)}", file=out)
    for line in bad:
        print(f"  {line}", file=out)


def _print_modules(g: dict, prefix: str, out) -> None:
    print("modules (module [layer]: the modules it imports):", file=out)
    for mod in sorted(g):
        if prefix and not (mod == prefix or mod.startswith(prefix + ".")):
            continue
        targets = ", ".join(sorted(g[mod])) or "-"
        print(f"  {mod} [{layer(mod)}]: {targets}", file=out)


def main(argv=None) -> int:
    """Print the layer-level graph (and, with ``--modules [PREFIX]``, every module's imports); exit status 0,
    or 1 when an edge breaks the layer rule."""
    parser = argparse.ArgumentParser(prog="import_graph", description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", nargs="?", const="", default=None, metavar="PREFIX",
                        help="also list every module (under PREFIX, e.g. replica.models) and what it imports")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    args = parser.parse_args(argv)
    g = graph(args.root)
    if not g:  # a wrong --root would otherwise pass the layer rule with 0 modules
        print(f"import_graph: error: --root: no module of the package under {str(args.root)!r}", file=sys.stderr)
        return 2
    if args.modules and not any(m == args.modules or m.startswith(args.modules + ".") for m in g):
        print(f"import_graph: error: --modules: no module {args.modules!r} nor under it (e.g. replica.models)",
              file=sys.stderr)
        return 2
    _print_layers(g, sys.stdout)
    if args.modules is not None:
        _print_modules(g, args.modules, sys.stdout)
    return 1 if violations(g) else 0


if __name__ == "__main__":
    sys.exit(main())
