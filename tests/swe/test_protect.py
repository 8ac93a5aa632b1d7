"""What the SWE verifier takes as its own (no Docker): protected paths, refused patches, the JUnit cross-check."""

from __future__ import annotations

import pytest

from agentgym.envs.swe import guard, protect
from agentgym.envs.swe.canaries import beside
from agentgym.envs.swe.testrun import SuiteResult


@pytest.mark.parametrize(("path", "protected"), [
    ("tests/test_x.py", True), ("tests/__init__.py", True), ("tests/helpers.py", True),
    ("pkg/tests/data/x.json", True), ("src/pkg/conftest.py", True), ("conftest.py", True),
    ("pytest.ini", True), ("sub/tox.ini", True), ("setup.cfg", True), ("pyproject.toml", True),
    ("pytest.toml", True), ("src/sitecustomize.py", True), ("src/usercustomize.py", True), ("src/zz.pth", True),
    ("src/x.dist-info/entry_points.txt", True), ("x.egg-info/PKG-INFO", True), ("pkg/__pycache__/m.cpython-311.pyc",
                                                                                  True),
    ("pkg/test_utils.py", True), ("pkg/core_test.py", True),
    ("pkg/core.py", False), ("src/pkg/__init__.py", False), ("README.md", False), ("pkg/testament.py", False),
    (".gitignore", False), ("docs/index.rst", False),
])
def test_what_is_the_verifier_s(path: str, protected: bool) -> None:
    assert protect.is_protected(path) is protected


@pytest.mark.parametrize("header", [
    "diff --git a/.git/hooks/x b/.git/hooks/x", "--- a/.git/config", "+++ b/sub/.GIT/config",
    "rename to .git/hooks/post-checkout", "Index: .git/hooks/x", "*** .git/config",
])
def test_a_patch_naming_git_is_refused(header: str) -> None:
    assert "writes into .git/" in (protect.refusal(f"{header}\n@@ -0,0 +1 @@\n+x\n") or "")


@pytest.mark.parametrize(("target", "refused"), [(".git/hooks", True), ("/etc", True), ("../up", True),
                                                 ("docs/readme", False)])
def test_symbolic_links_out_or_into_git_are_refused(target: str, refused: bool) -> None:
    patch = f"diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+{target}\n"
    assert (protect.refusal(patch) is not None) is refused


def test_an_ordinary_patch_is_not_refused() -> None:
    assert protect.refusal("diff --git a/.gitignore b/.gitignore\n--- a/.gitignore\n+++ b/.gitignore\n"
                           "@@ -1 +1 @@\n-a\n+b\n") is None


def test_what_is_removed_before_the_base_is_put_back() -> None:
    listing = [("f", "pkg/core.py"), ("f", "conftest.py"), ("l", "tests"), ("f", "tests/test_x.py"),
               ("d", "pkg/__pycache__"), ("f", "setup.cfg"), ("f", "pkg/new_test.py")]
    removed = protect.to_remove(listing, {"tests/test_x.py", "setup.cfg"})
    assert sorted(removed) == ["conftest.py", "pkg/__pycache__", "pkg/new_test.py", "setup.cfg", "tests",
                               "tests/test_x.py"]
    # a protected file the task's own fix changes stays as the patch left it
    assert "conftest.py" not in protect.to_remove(listing, {"tests/test_x.py"}, allowed={"conftest.py"})


REPORT = b"""<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="tests.test_x" name="test_a" file="tests/test_x.py"/>
<testcase classname="tests.test_x.TestK" name="test_b[1-2]" file="tests/base.py"><failure message="x"/></testcase>
<testcase classname="tests.test_x" name="test_c"><skipped type="pytest.xfail" message="x"/></testcase>
<testcase classname="tests.test_x" name="test_d"/><testcase classname="tests.test_x" name="test_d"><error/></testcase>
<testcase classname="tests.test_x" name="test_e[a b]"/><testcase classname="tests.test_x" name="test_e[a c]"/>
<testcase classname="tests.test_x" name="test_f[a b]"/><testcase classname="tests.test_x" name="test_f[a c]"><failure/>
</testcase></testsuite></testsuites>"""


def test_junit_outcomes_by_pytest_id() -> None:
    outcomes = guard.junit_outcomes(REPORT)
    status = {t: outcomes.get(guard.report_key(t)) for t in (
        "tests/test_x.py::test_a", "tests/test_x.py::TestK::test_b[1-2]", "tests/test_x.py::test_c",
        "tests/test_x.py::test_d", "tests/test_x.py::test_g")}
    assert status == {"tests/test_x.py::test_a": "PASSED", "tests/test_x.py::TestK::test_b[1-2]": "FAILED",
                      "tests/test_x.py::test_c": "XFAIL", "tests/test_x.py::test_d": "ERROR",
                      "tests/test_x.py::test_g": None}


def test_a_log_that_disagrees_with_the_report_is_tampered_with() -> None:
    canaries = beside("tests")
    (good_class, good), (bad_class, bad) = guard.report_key(canaries.passing), guard.report_key(canaries.failing)
    report = REPORT.replace(b"</testsuite>", (
        f'<testcase classname="{good_class}" name="{good}"/>'
        f'<testcase classname="{bad_class}" name="{bad}"><failure/></testcase></testsuite>').encode())
    statuses = {canaries.passing: "PASSED", canaries.failing: "FAILED", "tests/test_x.py::test_a": "PASSED",
                "tests/test_x.py::TestK::test_b[1-2]": "PASSED"}
    result = SuiteResult(statuses=statuses, log="", exit_code=0, timed_out=False)
    assert guard.tampering(result, report, ["tests/test_x.py::test_a"], canaries) is None
    # swebench's parser cuts an id at its first space: every case it stands for must have passed
    cut = {"tests/test_x.py::test_e[a": "PASSED", "tests/test_x.py::test_f[a": "PASSED"}
    spaced = SuiteResult(statuses={**statuses, **cut}, log="", exit_code=0, timed_out=False)
    assert guard.tampering(spaced, report, ["tests/test_x.py::test_e[a"], canaries) is None
    assert "test_f[a passed, the run's report says FAILED, PASSED" in (
        guard.tampering(spaced, report, ["tests/test_x.py::test_f[a"], canaries) or "")
    why = guard.tampering(result, report, ["tests/test_x.py::TestK::test_b[1-2]"], canaries)
    assert why == ("the test run was tampered with: the log says tests/test_x.py::TestK::test_b[1-2] passed, "
                   "the run's report says FAILED")
    assert "ended without writing its report" in (guard.tampering(result, b"", [], canaries) or "")
    flipped = {**statuses, canaries.failing: "PASSED"}
    assert "wrote to fail did not fail" in (guard.tampering(
        SuiteResult(statuses=flipped, log="", exit_code=0, timed_out=False), report, [], canaries) or "")
    marked = SuiteResult(statuses=statuses, log=">>>>> End Test Output\n", exit_code=0, timed_out=False)
    assert "log marker" in (guard.tampering(marked, report, [], canaries) or "")


@pytest.mark.parametrize("content", ["-- see .git/config", "++ see .git/hooks/x", "-- a/.git/x b/.git/x"])
def test_hunk_lines_that_mention_git_are_content_not_headers(content: str) -> None:
    """A removed ``-- `` SQL comment reads ``--- ...`` and an added ``++ `` one ``+++ ...``: git and
    ``patch`` count them as the hunk's lines, and so does the check."""
    line = ("-" if content.startswith("-") else "+") + content
    other = "+x" if line.startswith("-") else "-x"
    patch = f"diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n{line}\n{other}\n ctx\n"
    assert protect.refusal(patch) is None
    # past the hunk's counted lines, the same line is a header again
    assert "writes into .git/" in (protect.refusal(patch + "--- a/.git/config\n") or "")


@pytest.mark.parametrize("name", ['"b/\\056git/hooks/x"', '"b/\\056GIT/config"', '"b/sub/\\056git/x"'])
def test_an_octal_escaped_git_path_is_refused(name: str) -> None:
    patch = f"diff --git {name.replace('b/', 'a/')} {name}\nnew file mode 100644\n--- /dev/null\n+++ {name}\n" \
            "@@ -0,0 +1 @@\n+x\n"
    assert "writes into .git/" in (protect.refusal(patch) or "")


def test_quoted_names_are_decoded_as_git_writes_them() -> None:
    assert protect.unquote('"a/\\303\\251t\\"x\\t"') == 'a/ét"x\t'
    assert protect.unquote('"a/\\377"') == "a/\udcff"  # not UTF-8: kept as its byte


def test_library_code_naming_test_machinery_is_refused() -> None:
    from agentgym.envs.swe.machinery import machinery

    def patch(path: str, line: str) -> str:
        return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n x\n+{line}\n"

    for line in ("import _pytest.reports", "def pytest_runtest_makereport(item): pass", "if len(sys.argv) > 9:",
                 "f = sys._getframe(2)", "glob.glob('/tmp/agentgym-*')", "inspect.stack()", "x = f.f_back"):
        assert "names the test run's machinery" in (machinery(patch("calc/core.py", line), "") or ""), line
    assert machinery(patch("calc/core.py", "return a + b"), "") is None
    assert machinery(patch("tests/test_core.py", "import pytest"), "") is None  # tests are put back anyway
    assert machinery(patch("README.md", "run pytest"), "") is None
    gold = patch("plugin/core.py", "import pytest")
    assert machinery(patch("plugin/core.py", "pytest.fail('x')"), gold) is None  # the fix names pytest too
    assert "as a binary" in (machinery("diff --git a/c.py b/c.py\nGIT binary patch\nliteral 1\nzz\n", "") or "")


def test_new_entries_on_the_run_s_path_that_shadow_a_name_are_found() -> None:
    from agentgym.envs.swe import shadow

    resolved = shadow.Resolved(frozenset({"pytest", "argparse", "iniconfig", "calc"}), ())
    base = {"src", "src/calc", "src/calc/__init__.py", "tests", "tests/test_calc.py"}
    folders = shadow.path_folders("PYTHONPATH=src python3 -m pytest", ["tests/test_calc.py"], resolved, base)
    assert folders == {"", "src", "tests"}
    # a test module inside packages: pytest inserts the folder above the top package, not the packages
    packaged = base | {"src/calc/tests/__init__.py", "src/calc/tests/test_x.py"}
    assert shadow.path_folders("pytest", ["src/calc/tests/test_x.py"], resolved, packaged) == {"", "src"}
    names = resolved.names | shadow.test_names(["tests/test_calc.py"])
    for kind, path in (("f", "pytest.py"), ("f", "src/argparse.py"), ("f", "iniconfig.cpython-311-x86_64.so"),
                       ("l", "src/pytest.py"), ("f", "test_calc.py"), ("d", "calc")):
        listing = [("d", "src"), ("f", "src/calc/__init__.py"), (kind, path)]
        if kind == "d":
            listing.append(("f", f"{path}/__init__.py"))
        assert "would be imported as the module" in (shadow.shadowing(listing, base, folders, names) or ""), path
    for kind, path in (("f", "src/calc/argparse.py"), ("f", "docs/pytest.py"), ("d", "calc"), ("f", "notes.txt")):
        assert shadow.shadowing([(kind, path)], base, folders, names) is None, path  # a namespace folder: no shadow
    assert shadow.shadowing([("f", "argparse.py")], base, folders, names, allowed={"argparse.py"}) is None
