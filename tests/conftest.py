"""Test-session settings shared by every test module.

The HCIZ table cache (:mod:`hciz.cache`) of the test session lives in a fresh temporary
directory, so that the tests neither read tables left by earlier runs or other versions
nor write into the user's ``~/.cache/replica-hciz``; subprocesses (command-line tests)
inherit the setting. Tests of the cache itself point it elsewhere with ``monkeypatch``.
"""
import atexit
import os
import shutil
import tempfile

_SESSION_CACHE = tempfile.mkdtemp(prefix="replica-hciz-test-cache-")
os.environ["REPLICA_HCIZ_CACHE"] = _SESSION_CACHE
atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)
