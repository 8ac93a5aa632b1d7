"""The verifier's second run: the FAIL_TO_PASS tests again, in a fresh container, in a shape of its own.

A forger in library code that keys on what the main run looks like (its options, its JUnit report,
the task's own command and environment, where the canaries are) must also beat this run, which
looks different: only the FAIL_TO_PASS ids, named by path, no canaries and no JUnit report, run by a
script of the verifier's outside the repository under ``python3 -I -B`` (no ``PYTHON*`` variable, no
user site folder, neither the working directory nor the script's on the path), which imports pytest
and its dependencies from the image before it puts the repository's folders on the path, with the
plugin autoload off and only the image's plugins (listed before the patch) and its own recorder
loaded. A task is resolved only when every FAIL_TO_PASS test passes here too, in the log (swebench's
parser) and in what the recorder wrote.

It runs only after a main run that resolved (a run that did not cannot be made resolved by a second),
so a failing patch costs nothing more. It does not stop a forger that keys on the tests themselves
(their ids are in the problem statement) and rewrites outcomes in the process in both runs alike:
the library runs inside every test process (docs/threat-model.md, "Not defended").
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from agentgym.sandboxes import Sandbox

from . import guard, shadow, testrun
from .testrun import PASSED, XFAIL

RUNNER = '''"""The verifier's second run (python3 -I -B RUNNER RECORD FOLDERS ARGS...): pytest from the image first."""
import importlib
import json
import sys

record, folders, args = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
import pytest  # noqa: E402  before any folder of the repository is on the path

for name in ("_pytest.config", "_pytest.main", "_pytest.python", "_pytest.unittest", "_pytest.runner",
             "_pytest.reports", "_pytest.terminal", "_pytest.fixtures", "_pytest.assertion.rewrite",
             "pluggy", "iniconfig", "packaging", "tomllib", "tomli", "exceptiongroup", "pygments"):
    try:
        importlib.import_module(name)
    except ImportError:
        pass
sys.path[:0] = folders
seen = {}


class Recorder:
    def pytest_runtest_logreport(self, report):
        phases = seen.setdefault(report.nodeid, {})
        phases[report.when] = "xfail" if hasattr(report, "wasxfail") and report.skipped else report.outcome


code = pytest.main(args, plugins=[Recorder()])
with open(record, "w") as f:
    json.dump(seen, f)
sys.exit(int(code))
'''
"""The script the second run is, written to the verifier's stage: stdlib and pytest only."""


def selection(fail_to_pass: Sequence[str]) -> list[str]:
    """The ids to give pytest: each FAIL_TO_PASS id, or for one swebench cut at a space inside its
    parameters (``test_x[a``) its test without them, which selects every parameter set."""
    out: list[str] = []
    for test in fail_to_pass:
        if "[" in test and not test.endswith("]"):
            test = test.split("[", 1)[0]
        if test not in out:
            out.append(test)
    return out


def recorded_status(phases: dict[str, str]) -> str:
    """A test's status from the recorder's phases (``setup``, ``call``, ``teardown``)."""
    if "failed" in phases.values():
        return testrun.FAILED
    if phases.get("call") == "xfail" or phases.get("setup") == "xfail":
        return XFAIL
    return PASSED if phases.get("call") == "passed" else testrun.SKIPPED


async def second_run(sandbox: Sandbox, test_cmd: str, fail_to_pass: Sequence[str], *, cwd: str, stage: str,
                     plugins: Sequence[str], timeout: float, parser: str) -> str | None:
    """Run the FAIL_TO_PASS tests as the verifier's own (see the module docstring) in a sandbox whose
    tree is the patched one, its protected files put back; None when every one passes, else why not."""
    await sandbox.write_file(f"{stage}/runner.py", RUNNER)
    record = f"{stage}/second.json"
    folders = [cwd, *(f"{cwd}/{f}" for f in shadow.command_path(test_cmd))]
    options = ["-rA", "--tb=short", f"--rootdir={cwd}", "-p", "no:cacheprovider", "-p", "no:subtests",
               *(a for module in plugins for a in ("-p", module))]
    command = " ".join(shlex.quote(a) for a in ["python3", "-I", "-B", f"{stage}/runner.py", record,
                                                 json.dumps(folders), *options])
    result = await testrun.run_tests(sandbox, command, tests=selection(fail_to_pass), cwd=cwd, timeout=timeout,
                                     parser=parser, env=guard.environment(f"{stage}/home"), reclaim=True)
    await sandbox.exec(f"chmod -R u+rwX {shlex.quote(stage)} 2>/dev/null; true", timeout=60, cwd="/")
    what = f"{guard.TAMPERED}: the verifier's second run of the FAIL_TO_PASS tests"
    if result.lost:
        return f"{what}: {result.lost}"
    if result.timed_out:
        return f"{what} ran past its timeout"
    try:
        seen = json.loads(await sandbox.read_file(record))
    except (OSError, ValueError):
        return f"{what} ended without writing its record (the process was ended early)"
    by_log_id: dict[str, list[str]] = {}
    for nodeid, phases in seen.items() if isinstance(seen, dict) else ():
        key = nodeid.split()[0] if nodeid.split() else nodeid  # as swebench's parser cuts an id
        by_log_id.setdefault(key, []).append(recorded_status(phases) if isinstance(phases, dict) else "")
    for test in fail_to_pass:
        logged, recorded = result.statuses.get(test), by_log_id.get(test, [])
        if logged not in (PASSED, XFAIL) or not recorded or set(recorded) - {PASSED, XFAIL}:
            said = ", ".join(sorted(set(recorded))) or "nothing"
            return f"{what} did not see {test} pass (its log says {logged or 'nothing'}, its record {said})"
    return None
