"""Build hooks (the metadata is in pyproject.toml): the git revision of the sources is recorded in the built
package as ``replica/_build_revision.txt``, so that an installed copy (wheel, ``pip install .``) reports the
revision it was built from (:func:`replica.git_revision`) where it no longer lies in its repository.

The revision is that of the repository this directory is the top of (it tracks ``replica/__init__.py`` here),
else the one an sdist recorded (its ``replica/_build_revision.txt``); nothing is recorded otherwise (a copy of
the sources without git) and for editable installs (which read the checkout's HEAD).
"""

import re
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ROOT = Path(__file__).resolve().parent
REVISION_FILE = Path("replica") / "_build_revision.txt"


def source_revision():
    """The 40-hex revision of these sources, or None."""
    def git(*args):
        try:
            out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    if git("ls-files", "--full-name", "--error-unmatch", "--", "replica/__init__.py") == "replica/__init__.py" \
            and Path(git("rev-parse", "--show-toplevel") or "/nonexistent").resolve() == ROOT:
        head = git("rev-parse", "HEAD")
    else:
        recorded = ROOT / REVISION_FILE
        head = recorded.read_text().strip() if recorded.is_file() else ""
    return head if re.fullmatch(r"[0-9a-f]{40}", head) else None


def write_revision(base):
    revision = source_revision()
    if revision is not None:
        target = Path(base) / REVISION_FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(revision + "\n")


class BuildPyWithRevision(build_py):
    def run(self):
        super().run()
        if not getattr(self, "editable_mode", False):
            write_revision(self.build_lib)


class SdistWithRevision(sdist):
    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        write_revision(base_dir)


setup(cmdclass={"build_py": BuildPyWithRevision, "sdist": SdistWithRevision})
