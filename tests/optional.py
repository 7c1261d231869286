"""Optional dependencies of the tests: a skip with a reason, or a failure where they are required.

``require("jax", extra="experiments")`` imports and returns the module, or skips the calling
test (or module, when called at import time) with a reason naming the package and the extra
that installs it. Where the environment variable ``REPLICA_HCIZ_REQUIRE_EXTRAS`` lists the
extra (comma-separated, or ``all``), a missing package is a test failure instead: the CI
entry point ``.ci/run`` sets ``REPLICA_HCIZ_REQUIRE_EXTRAS=experiments`` so that the
experiment tests cannot vanish silently.
"""

from __future__ import annotations

import importlib
import os

import pytest

ENV = "REPLICA_HCIZ_REQUIRE_EXTRAS"


def required_extras() -> set:
    """Extras that must be installed (from ``REPLICA_HCIZ_REQUIRE_EXTRAS``)."""
    return {s.strip() for s in os.environ.get(ENV, "").split(",") if s.strip()}


def require(name: str, *, extra: str):
    """Import ``name`` or skip (fail where ``extra`` is required) with a one-line reason."""
    __tracebackhide__ = True  # report the caller's line, not this one
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        reason = (f"optional dependency {name!r} missing ({exc.__class__.__name__}: {exc}); "
                  f"install it with pip install -e '.[{extra}]'")
        if extra in required_extras() or "all" in required_extras():
            pytest.fail(f"{reason} — required here by {ENV}", pytrace=False)
        pytest.skip(reason, allow_module_level=True)
