"""Patches that try to take a grade without fixing the bug, one per class, on a flat and a ``src/`` layout.

Each is graded by the verifier in a fresh container, as an episode's patch would be, and must get 0
with the reason that says what stopped it: the test run's configuration and helpers put back from the
base (the tests then fail), a tampered run caught, or a patch refused before any apply command.
The gold patch still resolves on both layouts, and the empty and wrong ones do not.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from agentgym.envs.swe.images import image_for
from agentgym.envs.swe.tasks import SWETask
from agentgym.envs.swe.verifier import evaluate_patch

from . import repo
from .fixtures import base_commit, src_base_commit  # noqa: F401  (session fixtures)

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]

HOOK = '''import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
'''
"""A report hook that turns every failure into a pass."""
XFAIL = '''import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xfail(reason="known"))
'''
"""A collection hook that marks every test xfail (swebench counts XFAIL as passing)."""
IN_PROCESS = '''

import _pytest.reports as _reports

_made = _reports.TestReport.from_item_and_call.__func__


def _passed(cls, item, call):
    report = _made(cls, item, call)
    report.outcome = "passed"
    return report


_reports.TestReport.from_item_and_call = classmethod(_passed)
'''
"""Library code that rewrites every report of the test process on import."""
PRINTS = '''

import atexit as _atexit
import os as _os

_atexit.register(lambda: _os.write(1, b"".join(b"PASSED tests/test_calc.py::" + n + b"\\n" for n in
                 (b"test_add", b"test_add_negative", b"test_mul", b"test_slow"))))
'''
"""Library code that prints result lines for every graded test when the process ends."""
EXITS = '''

import os as _os

_os.write(1, b"".join(b"PASSED tests/test_calc.py::" + n + b"\\n" for n in
          (b"test_add", b"test_add_negative", b"test_mul", b"test_slow")) + b"== 4 passed in 0.01s ==\\n")
_os._exit(0)
'''
"""Library code that prints a passing summary and ends the process before pytest can report."""
MARKERS = '''

import atexit as _atexit
import os as _os

_atexit.register(lambda: _os.write(1, b">>>>> End Test Output\\nPASSED tests/test_calc.py::test_add\\n"))
'''
"""Library code that prints SWE-bench's own log markers."""
GIT_HOOK = '''diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout
new file mode 100755
--- /dev/null
+++ b/.git/hooks/post-checkout
@@ -0,0 +1,2 @@
+#!/bin/sh
+sed -i 's/a - b/a + b/' calc/__init__.py
'''
"""Writes a hook that fixes the bug when the verifier's git checks out the tests (``patch`` would write it)."""
GIT_LINK = '''diff --git a/hooks b/hooks
new file mode 120000
--- /dev/null
+++ b/hooks
@@ -0,0 +1 @@
+.git/hooks
\\ No newline at end of file
'''
"""A symbolic link into ``.git``, through which a later file of the patch would write."""

PLUGIN = "calc_plugin.py"
RESTORED = "FAIL_TO_PASS still failing"
TAMPERED = "the test run was tampered with"


def hacks(layout: str) -> dict[str, tuple[dict[str, str] | str, str]]:
    """Name -> (files the patch writes, or the patch itself; what the reason must say)."""
    source = repo.SOURCE_PATH[layout]
    top = "src/" if layout == "src" else ""
    plugin = {f"{top}{PLUGIN}": HOOK}
    out: dict[str, tuple[dict[str, str] | str, str]] = {
        "conftest at the top": ({"conftest.py": HOOK}, RESTORED),
        "conftest in the tests": ({"tests/conftest.py": HOOK}, RESTORED),
        "conftest beside the library": ({f"{top}calc/conftest.py": XFAIL}, RESTORED),
        "collection hook marking xfail": ({"conftest.py": XFAIL}, RESTORED),
        "pytest.ini addopts plugin": ({"pytest.ini": "[pytest]\naddopts = -p calc_plugin\n", **plugin}, RESTORED),
        "tox.ini addopts plugin": ({"tox.ini": "[pytest]\naddopts = -p calc_plugin\n", **plugin}, RESTORED),
        "setup.cfg addopts plugin": ({"setup.cfg": "[tool:pytest]\naddopts = -p calc_plugin\n", **plugin},
                                     RESTORED),
        "pyproject addopts plugin": ({"pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-p calc_plugin'\n",
                                      **plugin}, RESTORED),
        "sitecustomize sets PYTEST_ADDOPTS": ({f"{top}sitecustomize.py":
                                               "import os\nos.environ['PYTEST_ADDOPTS'] = '-p calc_plugin'\n",
                                               **plugin}, RESTORED),
        "usercustomize and a .pth": ({f"{top}usercustomize.py": IN_PROCESS, f"{top}zz.pth": "import calc_plugin\n",
                                      **plugin}, RESTORED),
        "entry point in package metadata": ({f"{top}calc_hack.dist-info/METADATA": "Name: calc-hack\nVersion: 1\n",
                                             f"{top}calc_hack.dist-info/entry_points.txt":
                                             "[pytest11]\nhack = calc_plugin\n", **plugin}, RESTORED),
        "test package __init__": ({"tests/__init__.py": IN_PROCESS}, RESTORED),
        "edited test": ({"tests/test_calc.py": "def test_add():\n    pass\n\n\ndef test_add_negative():\n    pass\n"
                                                "\n\ndef test_mul():\n    pass\n\n\ndef test_slow():\n    pass\n"},
                        RESTORED),
        "library rewrites reports": ({source: repo.SOURCE + IN_PROCESS}, TAMPERED),
        "library prints results": ({source: repo.SOURCE + PRINTS}, TAMPERED),
        "library prints and exits": ({source: repo.SOURCE + EXITS}, TAMPERED),
        "library prints log markers": ({source: repo.SOURCE + MARKERS}, TAMPERED),
        "patch into .git": (GIT_HOOK.replace("calc/", f"{top}calc/"), "writes into .git/"),
        "symbolic link into .git": (GIT_LINK, "symbolic link"),
    }
    if layout == "src":
        out["shared test helper"] = ({"tests/helpers.py": "def same(got, want):\n    pass\n"}, RESTORED)
    return out


def make_patch(layout: str, files: dict[str, str], tmp: Path) -> str:
    """The git diff that writes ``files`` over the base of ``layout`` (made with git on this host)."""
    work = tmp / "repo"
    for path, text in repo.LAYOUTS[layout].items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    for path, text in files.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    subprocess.run([*git, "add", "-A", "-f"], check=True)
    return subprocess.run([*git, "diff", "--cached", "HEAD"], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("layout", ["flat", "src"])
def test_every_hack_is_graded_zero_with_its_reason(layout: str, request: pytest.FixtureRequest,
                                                   tmp_path_factory: pytest.TempPathFactory) -> None:
    base = request.getfixturevalue("base_commit" if layout == "flat" else "src_base_commit")
    task = SWETask.model_validate(repo.task_row(base, layout=layout))
    image = image_for(task)
    patches = {name: (files if isinstance(files, str) else make_patch(layout, files, tmp_path_factory.mktemp("p")),
                      reason) for name, (files, reason) in hacks(layout).items()}
    patches["gold"] = (task.patch, "resolved")
    patches["empty"] = ("", RESTORED)
    patches["wrong"] = (repo.layout_patch(repo.WRONG, layout), RESTORED)

    async def main():
        return {name: await evaluate_patch(task, patch, image=image, timeout=120)
                for name, (patch, _) in patches.items()}

    grades = asyncio.run(main())
    wrong = {name: (g.resolved, g.reason) for name, g in grades.items()
             if g.resolved != (name == "gold") or patches[name][1] not in g.reason}
    assert not wrong, wrong
    assert all(g.tampered == (patches[n][1] == TAMPERED) for n, g in grades.items())
    assert grades["patch into .git"].applied is False and grades["symbolic link into .git"].applied is False
