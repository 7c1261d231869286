"""Write ``docs/api.md``, the API reference, from the docstrings of the public modules.

Usage (from the repository root, package installed)::

    python docs/make_api.py            # rewrites docs/api.md
    python docs/make_api.py --check    # exit 1 if docs/api.md is out of date

Every module listed in ``MODULES`` contributes its docstring and, for each name of its
``__all__``, the signature and docstring (classes with their public methods). Docstrings
are numpydoc; they are reproduced verbatim in code blocks.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path

MODULES = [
    "replica.models",
    "replica.models.shallow",
    "replica.readout_grid",
    "replica.models.deep",
    "replica.models.two_layer",
    "replica.interface",
    "replica.models.deep_linear",
    "replica.branches",
    "replica.engine",
    "replica.activations",
    "replica.workflow.io",
    "replica.workflow.safe_write",
    "replica.workflow.config",
    "replica.workflow.phase_diagram",
    "replica.workflow.plotting",
    "replica.workflow.cli",
    "replica.workflow.model_options",
    "replica.workflow.spectrum",
    "replica.workflow.reference",
    "replica.workflow.figures",
    "priors",
    "priors.weight_priors",
    "priors.readout_laws",
    "priors.continuous_laws",
    "priors.compiled",
    "priors.output_channels",
    "hciz",
    "hciz.symmetric",
    "hciz.rectangular",
    "hciz.rie",
    "hciz.cache",
    "hciz.compiled",
    "simulations.gamp_rie",
    "simulations.channels",
]

HEADER = """# API reference

Generated from the docstrings by `python docs/make_api.py`; do not edit by hand.
Conventions, symbols and equations: [theory.md](theory.md) (α = n/d², γ = k/d, Δ, Q(v), R₂, mmse, f).

"""


def _signature(obj) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _doc(obj) -> str:
    doc = inspect.getdoc(obj)
    return doc.strip() if doc else "(no docstring)"


def _block(text: str) -> str:
    return "```text\n" + text.replace("```", "'''") + "\n```\n"


def document_module(name: str) -> str:
    try:
        mod = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - a module under construction must not stop the rest
        return f"## `{name}`\n\n(not importable: {type(exc).__name__}: {exc})\n\n"
    out = [f"## `{name}`\n\n", _block(_doc(mod)), "\n"]
    for attr in getattr(mod, "__all__", []):
        obj = getattr(mod, attr, None)
        if obj is None:
            continue
        if inspect.isclass(obj):
            out.append(f"### class `{name}.{attr}{_signature(obj)}`\n\n{_block(_doc(obj))}\n")
            for meth_name, meth in inspect.getmembers(obj):
                if meth_name.startswith("_") and meth_name not in ("__call__",):
                    continue
                if not (inspect.isfunction(meth) or inspect.ismethod(meth) or isinstance(meth, property)):
                    continue
                if meth_name not in obj.__dict__:
                    continue  # inherited: documented on the base class
                if isinstance(meth, property):
                    out.append(f"#### property `{attr}.{meth_name}`\n\n{_block(_doc(meth))}\n")
                else:
                    out.append(f"#### `{attr}.{meth_name}{_signature(meth)}`\n\n{_block(_doc(meth))}\n")
        elif callable(obj):
            out.append(f"### `{name}.{attr}{_signature(obj)}`\n\n{_block(_doc(obj))}\n")
        else:
            text = repr(obj)
            if len(text) > 300:
                text = text[:300] + " …"
            out.append(f"### `{name}.{attr}`\n\n{_block(text)}\n")
    return "".join(out)


def render() -> str:
    toc = "".join(f"* [`{m}`](#{m.replace('.', '')})\n" for m in MODULES)
    return HEADER + toc + "\n" + "".join(document_module(m) for m in MODULES)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if docs/api.md differs from the docstrings")
    p.add_argument("-o", "--output", default=str(Path(__file__).with_name("api.md")))
    args = p.parse_args(argv)
    text = render()
    path = Path(args.output)
    if args.check:
        same = path.exists() and path.read_text() == text
        print("docs/api.md is " + ("up to date" if same else "out of date: run python docs/make_api.py"))
        return 0 if same else 1
    path.write_text(text)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
