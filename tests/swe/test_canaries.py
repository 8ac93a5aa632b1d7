"""Canaries written into a graded test file: run by this host's real pytest, they pass and fail as meant,
leave the file's own tests as they were, read like the file's tests, and are placed the same way for a task
every time; a file where appending could change how it runs hosts none."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.envs.swe import testrun
from agentgym.envs.swe.canaries import WORDS, beside, hosts, plan

PATH = "tests/test_a.py"
KINDS = {
    "functions": ("import pytest\n\n\ndef test_add():\n    assert 1 + 1 == 2\n\n\n"
                  "@pytest.mark.parametrize('x', [1, 0])\ndef test_param(x):\n    assert x\n",
                  ["test_add", "test_param[1]"]),
    "unittest classes": ("import unittest\n\n\nclass ChunkedTests(unittest.TestCase):\n    def test_even(self):\n"
                         "        self.assertEqual(2, 2)\n\n    def test_odd(self):\n        self.assertEqual(1, 2)\n",
                         ["ChunkedTests::test_even", "ChunkedTests::test_odd"]),
    "TestCase by another name and a mixin": (
        "from unittest import TestCase as Case\n\n\nclass Mixin:\n    def test_mixed(self):\n        pass\n\n\n"
        "class CacheTest(Case, Mixin):\n    def test_x(self):\n        self.assertTrue(True)\n",
        ["CacheTest::test_x"]),
    "plain pytest classes": ("class TestGroup:\n    def test_a(self):\n        assert True\n", ["TestGroup::test_a"]),
    "no newline at the end": ("def test_a():\n    assert True", ["test_a"]),
    "a class pytest finds by its base only, with a helper base": (
        "import unittest\n\n\nclass Base(unittest.TestCase):\n    pass\n\n\nclass ThingTests(Base):\n"
        "    def test_b(self):\n        pass\n", ["ThingTests::test_b"]),
}
UNSAFE = {
    "an if __name__ block": "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n        pass\n"
                            "\n\nif __name__ == '__main__':\n    unittest.main()\n",
    "pytestmark": "import pytest\n\npytestmark = pytest.mark.skip('no')\n\n\ndef test_a():\n    pass\n",
    "a module-level skip": "import pytest\n\nnp = pytest.importorskip('numpy')\n\n\ndef test_a():\n    pass\n",
    "a guarded raise": "import sys\nimport unittest\n\nif sys.version_info < (3,):\n    raise unittest.SkipTest('x')\n"
                       "\n\ndef test_a():\n    pass\n",
    "__test__": "__test__ = False\n\n\ndef test_a():\n    pass\n",
    "a syntax error": "def test_a(:\n    pass\n",
}


def run_pytest(folder: Path) -> dict[str, str]:
    cmd = testrun.DEFAULT_TEST_CMD.replace("python3", shlex.quote(sys.executable)) + f" {PATH}"
    done = subprocess.run(cmd, shell=True, cwd=folder, capture_output=True, text=True, check=False)
    return testrun.parse_statuses(done.stdout + done.stderr)


@pytest.mark.parametrize("kind", KINDS)
def test_canaries_pass_and_fail_and_leave_the_file_s_tests_as_they_were(kind: str, tmp_path: Path) -> None:
    text, own = KINDS[kind]
    graded = [f"{PATH}::{t}" for t in own]
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / PATH).write_text(text)
    before = run_pytest(tmp_path)
    canaries = plan(PATH, text, graded, "calc__calc-1")
    assert canaries is not None and canaries.path == PATH and not canaries.new_file
    (tmp_path / PATH).write_text(text + canaries.source)
    after = run_pytest(tmp_path)
    assert after.pop(canaries.passing) == "PASSED" and after.pop(canaries.failing) == "FAILED", after
    assert after == before
    names = canaries.passing.split("::")[1:]
    if kind in ("unittest classes", "TestCase by another name and a mixin", "a class pytest finds by its base only, "
                "with a helper base", "plain pytest classes"):
        assert len(names) == 2 and names[0] != own[0].split("::")[0]  # a class of its own, named like the file's
        assert names[0].startswith(own[0].split("::")[0][:4])
    else:
        assert len(names) == 1 and names[0].rsplit("_", 1)[-1] in WORDS
        assert any(names[0].startswith(t.split("[")[0] + "_") for t in own)
    assert "Mixin" not in canaries.source  # no test of a mixin inherited (after == before: none ran)


@pytest.mark.parametrize("why", UNSAFE)
def test_a_file_appending_could_change_hosts_none(why: str) -> None:
    assert plan(PATH, UNSAFE[why], [f"{PATH}::test_a", f"{PATH}::T::test_a"], "calc__calc-1") is None


def test_placement_is_the_task_s_values_are_each_grading_s() -> None:
    text, own = KINDS["functions"]
    graded = [f"{PATH}::{t}" for t in own]
    first, again = plan(PATH, text, graded, "t-1"), plan(PATH, text, graded, "t-1")
    assert first is not None and again is not None
    assert (first.passing, first.failing) == (again.passing, again.failing) and first.source != again.source
    files = [f"tests/test_{n}.py::test_x" for n in "abcdef"] + ["tests/test_g.py"]
    assert hosts(files, "t-1") == hosts(files, "t-1")
    assert "tests/test_g.py" not in hosts(files, "t-1")  # no graded id in it: the run may not collect it
    assert len({tuple(hosts(files, f"t-{i}")) for i in range(20)}) > 1
    apart, same = beside("tests", "tests/test_calc.py", "t-1"), beside("tests", "tests/test_calc.py", "t-1")
    assert apart.new_file and apart.path.startswith("tests/test_calc_") and apart.path.endswith(".py")
    assert (apart.path, apart.passing, apart.failing) == (same.path, same.passing, same.failing)
