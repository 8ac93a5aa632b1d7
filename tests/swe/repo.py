"""A tiny repository image for the SWE tests, built through the Dockerfile path, and tasks on it.

The image is the local python sandbox image plus git, pytest and patch from Debian (``docker build``
has the network; the sandboxes that run from it have none), with a package ``calc`` whose ``add`` is
wrong, committed at ``/testbed``. Commit dates and names are fixed, so the base commit's hash is too.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from agentgym.sandboxes import build_image

SOURCE = '''def add(a, b):
    return a - b


def mul(a, b):
    return a * b


def slow():
    return 1
'''
TESTS = '''from calc import add, mul, slow


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(2, 3) == 6


def test_slow():
    assert slow() == 1
'''
GOLD = '''diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
~
~
 def mul(a, b):
'''.replace("~", " ")
TEST_PATCH = '''diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -13,3 +13,7 @@ def test_mul():
~
 def test_slow():
     assert slow() == 1
+
+
+def test_add_negative():
+    assert add(-1, 1) == 0
'''.replace("~", " ")
WRONG = GOLD.replace("+    return a + b", "+    return a * b")
"""Applies, and breaks nothing, but fixes nothing either (2 * 3 is not 5)."""
HANGS = '''diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -8,4 +8,6 @@ def mul(a, b):
~
~
 def slow():
+    while True:
+        pass
     return 1
'''.replace("~", " ")
BAD = GOLD.replace("-    return a - b", "-    return a - c")
"""Its context matches nothing: neither git apply nor patch --fuzz applies it."""


def dockerfile() -> str:
    """The Dockerfile's text (the python sandbox image is built first if it is missing)."""
    files = {"calc/__init__.py": SOURCE, "tests/test_calc.py": TESTS, "tests/__init__.py": "", "setup.cfg": "",
             ".gitignore": "__pycache__/\n"}
    writes = " && ".join(f"echo '{base64.b64encode(text.encode()).decode()}' | base64 -d > {path}"
                         for path, text in files.items())
    python = build_image("python")
    return f"""FROM {python}
RUN mkdir -p /var/log/apt /var/cache/apt/archives/partial /var/lib/apt/lists/partial \\
 && apt-get update -o Acquire::Retries=3 \\
 && apt-get install -y --no-install-recommends git python3-pytest patch \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
RUN mkdir -p /testbed/calc /testbed/tests && cd /testbed && {writes} \\
 && git init -q && git add -A \\
 && GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_AUTHOR_DATE=2020-01-01T00:00:00Z \\
    GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t GIT_COMMITTER_DATE=2020-01-01T00:00:00Z \\
    git commit -qm base
"""


def task_row(base_commit: str, *, instance_id: str = "calc__calc-1", **extra) -> dict:
    """A SWE-bench-format row for the ``add`` bug."""
    return {
        "instance_id": instance_id, "repo": "calc/calc", "base_commit": base_commit, "version": "0.1",
        "problem_statement": "add(2, 3) returns -1; it should return 5.",
        "patch": GOLD, "test_patch": TEST_PATCH,
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add", "tests/test_calc.py::test_add_negative"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_mul", "tests/test_calc.py::test_slow"]),
        "dockerfile": dockerfile(), **extra,
    }


def write_tasks(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
