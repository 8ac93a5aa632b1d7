"""Tiny repository images for the SWE tests, built through the Dockerfile path, and tasks on them.

The image is the local python sandbox image plus git, pytest and patch from Debian (``docker build``
has the network; the sandboxes that run from it have none), with a package ``calc`` whose ``add`` is
wrong, committed at ``/testbed``. Commit dates and names are fixed, so the base commit's hash is too.

Two layouts: ``flat`` (``calc/`` at the top, tests in a package ``tests``) and ``src`` (``src/calc``,
run with ``PYTHONPATH=src``, whose tests assert through a shared helper module, ``tests/helpers.py``,
and which has an ignored folder, ``build/``, from the start).
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


SRC_TESTS = (TESTS.replace("from calc import add, mul, slow\n",
                           "from calc import add, mul, slow\nfrom tests.helpers import same\n")
             .replace("assert add(2, 3) == 5", "same(add(2, 3), 5)")
             .replace("assert mul(2, 3) == 6", "same(mul(2, 3), 6)"))
HELPERS = "def same(got, want):\n    assert got == want, f'{got} != {want}'\n"
LAYOUTS = {
    "flat": {"calc/__init__.py": SOURCE, "tests/test_calc.py": TESTS, "tests/__init__.py": "", "setup.cfg": "",
             ".gitignore": "__pycache__/\n"},
    "src": {"src/calc/__init__.py": SOURCE, "tests/test_calc.py": SRC_TESTS, "tests/__init__.py": "",
            "tests/helpers.py": HELPERS, "pyproject.toml": "[tool.pytest.ini_options]\nxfail_strict = true\n",
            ".gitignore": "__pycache__/\nbuild/\n", "build/cache.txt": "built\n"},
}
"""Each layout's files."""
SOURCE_PATH = {"flat": "calc/__init__.py", "src": "src/calc/__init__.py"}


def layout_patch(patch: str, layout: str) -> str:
    """A patch of the flat layout's ``calc/__init__.py`` (or its tests) made for ``layout``."""
    if layout == "flat":
        return patch
    return (patch.replace(" a/calc/", " a/src/calc/").replace(" b/calc/", " b/src/calc/")
            .replace("--- a/calc/", "--- a/src/calc/").replace("+++ b/calc/", "+++ b/src/calc/")
            .replace("@@ -13,3 +13,7 @@", "@@ -14,3 +14,7 @@"))


def dockerfile(layout: str = "flat") -> str:
    """The Dockerfile's text (the python sandbox image is built first if it is missing)."""
    python = build_image("python")
    return f"""FROM {python}
RUN mkdir -p /var/log/apt /var/cache/apt/archives/partial /var/lib/apt/lists/partial \\
 && apt-get update -o Acquire::Retries=3 \\
 && apt-get install -y --no-install-recommends git python3-pytest patch \\
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
""" + repository_step(layout)


def repository_step(layout: str = "flat") -> str:
    """The Dockerfile step that writes the tiny repository of ``layout`` at /testbed and commits it (needs git)."""
    files = LAYOUTS[layout]
    writes = " && ".join(f"echo '{base64.b64encode(text.encode()).decode()}' | base64 -d > {path}"
                         for path, text in files.items())
    folders = " ".join(sorted({"/testbed/" + p.rpartition("/")[0] for p in files if "/" in p}))
    return f"""RUN mkdir -p {folders} && cd /testbed && {writes} \\
 && git init -q && git add -A \\
 && GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_AUTHOR_DATE=2020-01-01T00:00:00Z \\
    GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t GIT_COMMITTER_DATE=2020-01-01T00:00:00Z \\
    git commit -qm base
"""


def task_row(base_commit: str, *, instance_id: str = "calc__calc-1", layout: str = "flat", **extra) -> dict:
    """A SWE-bench-format row for the ``add`` bug, in the repository of ``layout``."""
    if layout == "src":
        extra = {"test_cmd": "PYTHONPATH=src python3 -m pytest -rA -p no:cacheprovider --tb=short", **extra}
    return {
        "instance_id": instance_id if layout == "flat" else f"{instance_id}-{layout}", "repo": "calc/calc",
        "base_commit": base_commit, "version": "0.1",
        "problem_statement": "add(2, 3) returns -1; it should return 5.",
        "patch": layout_patch(GOLD, layout), "test_patch": layout_patch(TEST_PATCH, layout),
        "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add", "tests/test_calc.py::test_add_negative"]),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_mul", "tests/test_calc.py::test_slow"]),
        "dockerfile": dockerfile(layout), **extra,
    }


def write_tasks(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
