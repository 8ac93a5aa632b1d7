"""A SWE-bench row from a repository's own bug fix: ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` computed by
running the tests before and after the fix (``agentgym swe rows``).

Given the task's image (an ``image`` or a ``dockerfile`` with the repository at ``/testbed``), its base
commit, and the fix with its test change (two diffs, or a later commit of the image's repository,
split into library and test files as the verifier splits them, :func:`~agentgym.envs.swe.protect.is_protected`),
:func:`make_row` runs the test files the test change touches twice in a fresh container, as the
verifier runs them (:func:`~agentgym.envs.swe.testrun.run_tests`, the row's ``test_cmd``): at the base
with the test change, then with the fix too. A test that passes only after the fix is ``FAIL_TO_PASS``,
one that passes in both runs ``PASS_TO_PASS``. A fix that makes no test pass gives no row.

The model's container never sees the fix: the image it gets leaves history at the base
(:mod:`~agentgym.envs.swe.images`), while this module reads a ``--fix`` commit from the image as built.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from typing import Any

from agentgym.errors import AgentgymError

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
    parts = re.split(r"(?m)^(?=diff --git )", diff)
    patch: list[str] = []
    tests: list[str] = []
    for part in parts:
        match = _FILES.match(part)
        if match is None:
            continue
        (tests if protect.is_protected(match.group(2)) else patch).append(part)
    return "".join(patch), "".join(tests)


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
    files = sorted({m.group(2) for m in _FILES.finditer(draft.test_patch)})
    image = await asyncio.to_thread(image_for, draft)
    sandbox = await start_fresh(image, LIMITS)
    command = draft.test_cmd or testrun.DEFAULT_TEST_CMD
    try:
        runs = []
        for name, diff in (("test_patch", draft.test_patch), ("patch", draft.patch)):
            await sandbox.write_file(f"/tmp/agentgym-{name}.diff", diff)
            done = await sandbox.exec(f"{GIT} apply /tmp/agentgym-{name}.diff", cwd=REPO_DIR, timeout=120)
            if done.exit_code != 0:
                raise RowError(f"the {name} does not apply at {draft.base_commit}: {done.output[-500:]}")
            runs.append(await testrun.run_tests(sandbox, command, tests=files, cwd=REPO_DIR, timeout=timeout))
    finally:
        await sandbox.destroy()
    before, after = runs
    fail_to_pass = sorted(after.passed - before.passed)
    if not fail_to_pass:
        raise RowError(f"no test of {', '.join(files)} passes only after the fix ({len(after.passed)} pass after, "
                       f"{len(before.passed)} before): nothing would tell a fix from no fix")
    return {**row, "FAIL_TO_PASS": fail_to_pass, "PASS_TO_PASS": sorted(after.passed & before.passed)}
