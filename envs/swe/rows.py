"""A SWE-bench row from a repository's own bug fix: ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` computed by
running the tests before and after the fix (``agentgym swe rows``).

Given the task's image (an ``image`` or a ``dockerfile`` with the repository at ``/testbed``), its base
commit, and the fix with its test change (two diffs, or a later commit of the image's repository,
split into library and test files as the verifier splits them, :func:`~agentgym.envs.swe.protect.is_protected`),
:func:`make_row` runs the Python files the test change touches twice in a fresh container, as the
verifier runs them (:func:`~agentgym.envs.swe.testrun.run_tests`, the row's ``test_cmd``): with the
test change and the fix, then at the base with the test change. A test that passes only after the fix
is ``FAIL_TO_PASS``, one that passes in both runs ``PASS_TO_PASS``. A fix that makes no test pass gives
no row. Before the fix a test may hang or take all the memory (the bug itself): that run is bounded by
the fixed run's time, and when it does not finish, the tests are run in parts until each part does.

The model's container never sees the fix: the image it gets leaves history at the base
(:mod:`~agentgym.envs.swe.images`), while this module reads a ``--fix`` commit from the image as built.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import time
from typing import Any

from agentgym.errors import AgentgymError
from agentgym.sandboxes import Sandbox

from . import protect, testrun
from .images import base_image, image_for, ready_image
from .kept import GIT, LIMITS, start_fresh
from .tasks import REPO_DIR, SWETask

_FILES = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)


class RowError(AgentgymError):
    """The row cannot be made: the fix does not apply, or makes no test pass; the message says which."""


def split_fix(diff: str) -> tuple[str, str]:
    """``diff`` as ``(patch, test_patch)``: the files the verifier treats as tests (and their
    configuration) go to the test patch, the rest is the fix."""
    patch: list[str] = []
    tests: list[str] = []
    for part in _file_diffs(diff):
        match = _FILES.match(part)
        if match is None:
            continue
        (tests if protect.is_protected(match.group(2)) else patch).append(part)
    return "".join(patch), "".join(tests)


def files_to_run(test_patch: str) -> list[str]:
    """The Python files ``test_patch`` leaves in the tree, which the row's test runs are given.

    Only Python files: pytest refuses a named file it has no collector for (a ``PKG-INFO``, a data
    file), and the whole run would then pass nothing. A file the patch deletes cannot be run.
    """
    files = []
    for part in _file_diffs(test_patch):
        match = _FILES.match(part)
        if match is not None and match.group(2).endswith(".py") and not re.search(r"(?m)^deleted file mode ", part):
            files.append(match.group(2))
    return sorted(set(files))


def _file_diffs(diff: str) -> list[str]:
    """``diff`` cut before each ``diff --git`` header."""
    return re.split(r"(?m)^(?=diff --git )", diff)


async def fix_diff(row: dict[str, Any], fix: str) -> str:
    """The diff from the row's base to commit ``fix`` of its image's repository (read before the
    history past the base is stripped)."""
    draft = SWETask.model_validate({**row, "FAIL_TO_PASS": ["-"]})
    image = await asyncio.to_thread(lambda: ready_image(base_image(draft)))
    sandbox = await start_fresh(image, LIMITS)
    try:
        done = await sandbox.exec(f"{GIT} diff --no-ext-diff --no-textconv --binary {shlex.quote(draft.base_commit)} "
                                  f"{shlex.quote(fix)}", cwd=REPO_DIR, timeout=120)
        if done.exit_code != 0 or done.truncated:
            raise RowError(f"no diff from {draft.base_commit} to {fix} in the image: {done.output[-300:]}")
        return done.stdout
    finally:
        await sandbox.destroy()


async def make_row(row: dict[str, Any], *, timeout: float = 600.0) -> dict[str, Any]:
    """``row`` (every SWE-bench field but the two test lists) with ``FAIL_TO_PASS`` and ``PASS_TO_PASS``.

    Raises:
        RowError: The test patch or the fix does not apply at the base, or no test passes only after the fix.
        EnvError: The image cannot be built or started.
    """
    if not row.get("test_patch", "").strip():
        raise RowError("the row has no test_patch: the tests that show the fix are what the row is graded by")
    draft = SWETask.model_validate({**row, "FAIL_TO_PASS": ["-"], "PASS_TO_PASS": []})
    files = files_to_run(draft.test_patch)
    if not files:
        raise RowError("the test_patch leaves no Python file changed: no test of it could tell a fix from no fix")
    image = await asyncio.to_thread(image_for, draft)
    sandbox = await start_fresh(image, LIMITS)
    command = draft.test_cmd or testrun.DEFAULT_TEST_CMD
    try:
        for name, diff in (("test_patch", draft.test_patch), ("patch", draft.patch)):
            await sandbox.write_file(f"/tmp/agentgym-{name}.diff", diff)
            done = await sandbox.exec(f"{GIT} apply /tmp/agentgym-{name}.diff", cwd=REPO_DIR, timeout=120)
            if done.exit_code != 0:
                raise RowError(f"the {name} does not apply at {draft.base_commit}: {done.output[-500:]}")
        started = time.monotonic()
        after = await testrun.run_tests(sandbox, command, tests=files, cwd=REPO_DIR, timeout=timeout)
        # Before the fix a test may hang or eat memory (the bug): its run is given a bound from the fixed one's.
        bound = min(timeout, max(BEFORE_SECONDS, BEFORE_FACTOR * (time.monotonic() - started)))
        await sandbox.exec(f"{GIT} apply -R /tmp/agentgym-patch.diff", cwd=REPO_DIR, timeout=120)
        before = await testrun.run_tests(sandbox, command, tests=files, cwd=REPO_DIR, timeout=bound)
        passed_before = (before.passed if _finished(before) else  # else: it did not finish, so in parts
                         await _passing_in_parts(sandbox, command, sorted(after.passed), timeout=bound))
    finally:
        await sandbox.destroy()
    fail_to_pass = sorted(after.passed - passed_before)
    if not fail_to_pass:
        raise RowError(f"no test of {', '.join(files)} passes only after the fix ({len(after.passed)} pass after, "
                       f"{len(passed_before)} before): nothing would tell a fix from no fix")
    return {**row, "FAIL_TO_PASS": fail_to_pass, "PASS_TO_PASS": sorted(after.passed & passed_before)}


BEFORE_SECONDS = 20.0
BEFORE_FACTOR = 5.0
"""A run before the fix is stopped after BEFORE_FACTOR times the fixed run's seconds, at least BEFORE_SECONDS."""
SPLIT = 8
"""Into how many parts the tests of a run that did not finish are cut: each level costs a bounded run per
part that holds a test that does not finish, so fewer levels (more parts) cost less."""


def _finished(run: testrun.SuiteResult) -> bool:
    """Whether pytest ran to its end: every test passed (0) or some failed (1); not stopped, killed or lost."""
    return run.exit_code in (0, 1) and not run.timed_out and run.lost is None


async def _passing(sandbox: Sandbox, command: str, ids: list[str], *, timeout: float) -> frozenset[str]:
    """Which of the test ``ids`` pass: one run, or when it does not finish (a test hangs, or takes all the
    memory, as a bug may), :func:`_passing_in_parts`."""
    run = await testrun.run_tests(sandbox, command, tests=ids, cwd=REPO_DIR, timeout=timeout)
    if _finished(run):
        return run.passed & set(ids)
    if len(ids) <= 1:
        return frozenset()  # a single test that does not finish counts as failing
    return await _passing_in_parts(sandbox, command, ids, timeout=timeout)


async def _passing_in_parts(sandbox: Sandbox, command: str, ids: list[str], *, timeout: float) -> frozenset[str]:
    """Which of the test ``ids`` pass, for ids whose run together did not finish: each of :data:`SPLIT`
    parts run by :func:`_passing`, cut again until it finishes."""
    size = -(-len(ids) // SPLIT)
    passed: frozenset[str] = frozenset()
    for start in range(0, len(ids), size):
        passed |= await _passing(sandbox, command, ids[start:start + size], timeout=timeout)
    return passed
