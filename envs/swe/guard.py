"""The verifier's own test run: a fixed environment, a report stdout cannot forge, and canary tests.

The model's library code runs inside the test process, so it could rewrite results there or print
lines shaped like them. :func:`guarded_run` makes that visible instead of trusting the log alone:

- the command runs under ``env -i`` with a fixed environment (no ``PYTEST_ADDOPTS``, no
  ``PYTHONPATH`` or ``PYTHONSTARTUP`` but what the task's own command sets, no user site folder),
  pytest's plugin autoload off and the plugins the image installed (listed by :func:`image_plugins`
  before the patch was applied) loaded by name, no cache provider;
- pytest's own JUnit XML report goes to a file of a random name: printed lines do not write it, and
  a process that ends itself early leaves none. Every test the log says passed must have passed there too;
- two canary tests, appended by the verifier to one of the graded test files in that file's own
  style (:mod:`~agentgym.envs.swe.canaries`), the file chosen from the task's id: one must pass,
  one must fail. A hook that turns failures into passes, or stops tests from running, gets one of
  them wrong;
- every process the run left is killed and the run's files made readable by their owner (the run's
  user, who could change their modes) before they are read: a log, exit file or report that still
  cannot be read (a folder in its place) means the run was tampered with;
- a run that pytest stopped at collection (the library does not import) ran nothing, the canaries
  included: it is marked as the collection error it is (``collection_error``), graded 0, not tampering;
- SWE-bench's log markers in the test output mean the output was forged.

Any of these gives a :class:`SuiteResult` with ``tampered`` set to the reason; the grade is then 0.
What it cannot see is code that changes exactly the graded tests' results and nothing else, in the
log and in the report alike (docs/threat-model.md, "Not defended").
"""

from __future__ import annotations

import dataclasses
import json
import random
import secrets
import shlex
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence

from agentgym.errors import SandboxError
from agentgym.sandboxes import Sandbox

from . import testrun
from .canaries import Canaries, beside, hosts, plan
from .testrun import ERROR, FAILED, PASSED, SKIPPED, XFAIL, SuiteResult

REPORT_BYTES = 64 << 20
"""A JUnit report larger than this is not read (and counts as none)."""
TAMPERED = "the test run was tampered with"
_PLUGINS_SCRIPT = (
    "import importlib.metadata as m, json; "
    "print(json.dumps(sorted({e.value.split(':')[0] for e in m.entry_points(group='pytest11')})))"
)


async def image_plugins(sandbox: Sandbox, cwd: str) -> list[str]:
    """The modules of the pytest plugins the image declares (``pytest11`` entry points), read
    before the model's patch is applied; [] when the image's Python cannot say."""
    done = await sandbox.exec(f"python3 -I -c {shlex.quote(_PLUGINS_SCRIPT)}", cwd=cwd, timeout=60)
    try:
        modules = json.loads(done.stdout.strip().splitlines()[-1]) if done.exit_code == 0 else []
    except (ValueError, IndexError):
        return []
    return [m for m in modules if isinstance(m, str) and m.replace(".", "").replace("_", "").isalnum()]


def environment(home: str) -> dict[str, str]:
    """The test run's environment on top of the sandbox's ``PATH``: nothing the model set."""
    return {"HOME": home, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


async def write_canaries(sandbox: Sandbox, tests: Sequence[str], *, graded: Sequence[str], cwd: str, stage: str,
                         seed: str) -> Canaries:
    """Append the canaries to the first graded test file of the run (in ``seed``'s order) that can
    host them, its times kept; or, when none can, write them to a new module beside the first test."""
    given = {t.split("::", 1)[0] for t in tests}
    for path in (p for p in hosts(graded, seed) if p in given):
        try:
            text = (await sandbox.read_file(f"{cwd}/{path}")).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        canaries = plan(path, text, graded, seed)
        if canaries is None:
            continue
        await sandbox.write_file(f"{stage}/canaries", canaries.source)
        host, kept = shlex.quote(path), shlex.quote(f"{stage}/times")
        done = await sandbox.exec(f"touch -r {host} {kept} && cat {shlex.quote(stage)}/canaries >> {host} && "
                                  f"touch -r {kept} {host} && rm -f {kept} {shlex.quote(stage)}/canaries",
                                  cwd=cwd, timeout=60)
        if done.exit_code != 0:
            raise SandboxError(f"writing the canary tests into {path} failed: {done.output[-300:]}")
        return canaries
    first = tests[0].split("::", 1)[0] if tests else ""
    canaries = beside(first.rpartition("/")[0], first, seed)
    attempt = 0
    while (await sandbox.exec(f"test -e {shlex.quote(canaries.path)}", cwd=cwd, timeout=30)).exit_code == 0:
        attempt += 1  # a name the repository has: never overwritten
        canaries = beside(first.rpartition("/")[0], first, f"{seed}:{attempt}")
    await sandbox.write_file(f"{cwd}/{canaries.path}", canaries.source)
    return canaries


async def guarded_run(
    sandbox: Sandbox, test_cmd: str, tests: Sequence[str], *, graded: Sequence[str], cwd: str, stage: str,
    plugins: Sequence[str], timeout: float, parser: str, seed: str,
) -> SuiteResult:
    """Run ``tests`` (files or ids) with ``test_cmd`` as the verifier owns it (see the module docstring).

    ``graded`` are the test ids the grade reads, each checked against the report; ``stage`` is a
    folder of the verifier's in the sandbox; ``seed`` (the task's id) picks where the canaries go.
    """
    canaries = await write_canaries(sandbox, tests, graded=graded, cwd=cwd, stage=stage, seed=seed)
    report = f"{stage}/{secrets.token_hex(12)}.xml"
    # no:subtests: pytest 9's subtests print a test whose subtests failed as PASSED (swebench reads
    # that) while its report holds the failure; without it, both say FAILED and agree.
    options = ["-p", "no:cacheprovider", "-p", "no:subtests", f"--junitxml={report}", "-o", "junit_family=xunit1",
               *(a for module in plugins for a in ("-p", module))]
    command = " ".join([test_cmd, *(shlex.quote(o) for o in options)])
    selection = list(tests)
    if canaries.new_file:  # a module the run is not given otherwise
        selection.insert(random.Random(seed).randrange(len(selection) + 1), canaries.path)
    result = await testrun.run_tests(
        sandbox, command, tests=selection, cwd=cwd, timeout=timeout,
        parser=parser, env=environment(f"{stage}/home"), reclaim=True,
    )
    # The stage is the run's user's too: whatever it did to the folder's modes, its owner undoes.
    await sandbox.exec(f"chmod -R u+rwX {shlex.quote(stage)} 2>/dev/null; true", timeout=60, cwd="/")
    lost = result.lost
    try:
        raw = await sandbox.read_file(report)
    except FileNotFoundError:
        raw = b""
    except OSError as e:  # a folder, a fifo, no permission: the run did that
        raw, lost = b"", lost or f"its report could not be read ({type(e).__name__})"
    if lost and not result.timed_out:
        return dataclasses.replace(result, tampered=f"{TAMPERED}: {lost}")
    collection = collection_failure(result, raw, canaries)
    if collection is not None:
        return dataclasses.replace(result, collection_error=collection)
    why = tampering(result, raw, graded, canaries)
    return dataclasses.replace(result, tampered=why)


def collection_failure(result: SuiteResult, report: bytes, canaries: Canaries) -> str | None:
    """pytest's reason when it stopped at collection (a module of the library that does not import:
    a syntax error, a missing name) and so ran no test, the canaries included; else None.

    Read from the JUnit report's collection errors, with the log free of SWE-bench's markers and no
    test at all reported as run: such a run is a 0 for what it is, not tampering."""
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_EXIT_CODE

    if any(m in result.log for m in (START_TEST_OUTPUT, END_TEST_OUTPUT, TEST_EXIT_CODE)) or not report:
        return None
    if canaries.passing in result.statuses or canaries.failing in result.statuses:
        return None
    try:
        root = ElementTree.fromstring(report)
    except ElementTree.ParseError:
        return None
    errors, ran = [], 0
    for case in root.iter("testcase"):
        error = case.find("error")
        if error is not None and error.get("message") == "collection failure":
            lines = [line for line in (error.text or "").splitlines() if line.strip()]
            errors.append(f"{case.get('classname', '')}: {lines[-1].strip()[:200] if lines else 'error'}")
        else:
            ran += 1
    if not errors or ran:
        return None
    return f"collection error: pytest stopped before any test ran ({errors[0]})"


def tampering(result: SuiteResult, report: bytes, graded: Sequence[str], canaries: Canaries) -> str | None:
    """Why ``result`` cannot be trusted, or None: see the module docstring."""
    from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_EXIT_CODE

    forged = [m for m in (START_TEST_OUTPUT, END_TEST_OUTPUT, TEST_EXIT_CODE) if m in result.log]
    if forged:
        return f"{TAMPERED}: the test output holds SWE-bench's log marker {forged[0]!r}"
    if result.timed_out:
        return None  # graded as a timeout, which is 0 already; a killed run writes no report
    if not report or len(report) > REPORT_BYTES:
        return f"{TAMPERED}: it ended without writing its report (the process was ended early)"
    try:
        outcomes = junit_outcomes(report)
    except ElementTree.ParseError as e:
        return f"{TAMPERED}: its report is not JUnit XML ({e})"
    by_log_id: dict[tuple[str, str], list[str]] = {}
    for (classname, name), status in outcomes.items():
        # swebench's parser keeps an id up to its first whitespace (``test_x[a b]`` is ``test_x[a``):
        # the report's cases are grouped the same way, and every case of a group must agree.
        by_log_id.setdefault((classname, name.split()[0] if name.split() else name), []).append(status)
    for test, expected, what in ((canaries.passing, PASSED, "pass"), (canaries.failing, FAILED, "fail")):
        if result.statuses.get(test) != expected or by_log_id.get(report_key(test)) != [expected]:
            return f"{TAMPERED}: a test the verifier wrote to {what} did not {what}"
    for test in graded:
        reported = by_log_id.get(report_key(test), [])
        if result.statuses.get(test) in (PASSED, XFAIL) and (not reported or set(reported) - {PASSED, XFAIL}):
            shown = ", ".join(sorted(set(reported))) or "nothing"
            return f"{TAMPERED}: the log says {test} passed, the run's report says {shown}"
    return None


def report_key(test: str) -> tuple[str, str]:
    """Where pytest's JUnit report puts test id ``test``: its ``(classname, name)`` (pytest's
    ``mangle_test_address``: the path dotted without ``.py``, then the classes; the name with its parameters)."""
    path, bracket, params = test.partition("[")
    names = path.split("::")
    names[0] = names[0].replace("/", ".").removesuffix(".py")
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def junit_outcomes(report: bytes) -> dict[tuple[str, str], str]:
    """Each test case of a JUnit XML report by its :func:`report_key`, with its status."""
    root = ElementTree.fromstring(report)
    out: dict[tuple[str, str], str] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        kinds = {child.tag: child for child in case}
        if "failure" in kinds:
            status = FAILED
        elif "error" in kinds:
            status = ERROR
        elif "skipped" in kinds:
            status = XFAIL if kinds["skipped"].get("type") == "pytest.xfail" else SKIPPED
        else:
            status = PASSED
        if out.get(key) not in (FAILED, ERROR):  # a teardown error after a pass: the worse stays
            out[key] = status
    return out
