"""testrun: a test command run in a real sandbox, its log read by swebench's parser.

The pytest log is made by the host's pytest with the very flags of ``DEFAULT_TEST_CMD``, so the parser is
shown the output it will meet; the sandbox runs print the same kind of lines from a plain ``python3``
(the recipe image has no pytest; the package images that have one are exercised in test_synthesize*).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.envs.swe import testrun
from agentgym.sandboxes.backends import start
from agentgym.sandboxes.contract import Limits
from tests.conftest import docker_or_skip

SUITE = '''
import pytest

def test_ok():
    pass

def test_bad():
    assert 1 == 2

@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x == 1

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

def test_error(no_such_fixture):
    pass

class TestGroup:
    def test_method(self):
        print("noise that is not a status")
'''


def test_parses_a_real_pytest_log(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(SUITE)
    cmd = testrun.DEFAULT_TEST_CMD.replace("python3", shlex.quote(sys.executable))
    done = subprocess.run(cmd, shell=True, cwd=tmp_path, capture_output=True, text=True, check=False)
    statuses = testrun.parse_statuses(done.stdout + done.stderr)
    assert statuses == {
        "tests/test_a.py::test_ok": "PASSED",
        "tests/test_a.py::test_bad": "FAILED",
        "tests/test_a.py::test_param[1]": "PASSED",
        "tests/test_a.py::test_param[2]": "FAILED",
        "tests/test_a.py::test_error": "ERROR",
        "tests/test_a.py::TestGroup::test_method": "PASSED",
    }


def test_unknown_parser_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"no log parser 'parse_log_nope'.*parse_log_pytest"):
        testrun.parse_statuses("", parser="parse_log_nope")


def test_command_quotes_test_ids() -> None:
    cmd = testrun.test_command("pytest -rA", ["t.py::test_x[a b]", "t.py::test_y"])
    assert shlex.split(cmd) == ["pytest", "-rA", "t.py::test_x[a b]", "t.py::test_y"]


# A "suite" printing far more than one exec reply carries (Limits.output_bytes), then its summary.
LONG_SUITE = (
    "import sys\n"
    "print('x' * 200_000)\n"
    "for i in range(3000): print(f'PASSED t.py::test_{i}')\n"
    "print('FAILED t.py::test_last - boom')\n"
    "sys.exit(1)\n"
)


@pytest.mark.docker
async def test_runs_in_a_sandbox_past_the_output_cap_and_times_out() -> None:
    docker_or_skip()
    box = await start("docker", "python", Limits(output_bytes=4096))
    try:
        await box.write_file("/work/repo/suite.py", LONG_SUITE)
        result = await testrun.run_tests(box, "python3 suite.py", cwd="/work/repo", timeout=60)
        assert (result.exit_code, result.timed_out) == (1, False)
        assert len(result.statuses) == 3001
        assert result.statuses["t.py::test_2999"] == "PASSED"
        assert result.failed == {"t.py::test_last"}
        assert "t.py::test_0" in result.passed

        slow = "python3 -c \"print('PASSED t.py::early', flush=True); import time; time.sleep(60)\""
        hung = await testrun.run_tests(box, slow, cwd="/work/repo", timeout=2)
        assert hung.timed_out and hung.exit_code == testrun.TIMEOUT_EXIT
        assert hung.statuses == {"t.py::early": "PASSED"}  # what it printed before the kill survives
        assert (await box.exec("ls /tmp")).stdout == ""  # the run's files are gone
    finally:
        await box.close()


def test_swebench_grading_reads_the_log(tmp_path: Path) -> None:
    from swebench.harness.grading import get_logs_eval
    from swebench.types import TestSpec

    spec = TestSpec(instance_id="x", image="", eval_script_list=[], repo="r", version="1",
                    FAIL_TO_PASS=[], PASS_TO_PASS=[], log_parser=testrun.DEFAULT_PARSER)
    run = testrun.SuiteResult(statuses={}, log="PASSED a.py::t\nFAILED a.py::u - no", exit_code=1, timed_out=False)
    path = tmp_path / "log.txt"
    path.write_text(run.swebench_log)
    assert get_logs_eval(spec, str(path)) == ({"a.py::t": "PASSED", "a.py::u": "FAILED"}, True)
    hung = testrun.SuiteResult(statuses={}, log="PASSED a.py::t", exit_code=124, timed_out=True)
    path.write_text(hung.swebench_log)
    assert get_logs_eval(spec, str(path)) == ({}, False)
