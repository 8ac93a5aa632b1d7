"""Grade a SWE patch as SWE-bench does, in a fresh container the model never touched, and turn it into rewards.

:func:`evaluate_patch` starts a new container of the task's image, applies the model's patch (each of
swebench's ``GIT_APPLY_CMDS`` in turn: ``git apply``, ``--3way``, ``--reject``, then ``patch
--fuzz=5``, the tree reset between tries), puts every test file back to the base commit (the files
the task's ``test_patch`` touches and those its test ids name, so edits the model made to tests do
not count), applies ``test_patch``, runs the test command through
:func:`~agentgym.envs.swe.testrun.run_tests` and grades the log with swebench's grading
(:func:`~agentgym.envs.swe.grading.grade`). The container is destroyed whatever happens.

:class:`SWEVerifier` is the env's verifier: one evaluation per episode, every reward option in its
components, the one asked for as its value.
"""

from __future__ import annotations

import re
import shlex
import time
from typing import TYPE_CHECKING, Literal, cast

from agentgym.errors import SandboxError
from agentgym.rewards import Episode
from agentgym.sandboxes.sandbox import AgentSandbox
from agentgym.types import Reward

from . import testrun
from .grading import Grade, grade, parser_name, patch_similarity
from .tasks import REPO_DIR, SWETask
from .warm import GIT, LIMITS, start_fresh

if TYPE_CHECKING:
    from .env import SWEEnv

RewardKind = Literal["resolved", "tests_fraction", "patch_similarity", "gated"]
REWARDS: tuple[RewardKind, ...] = ("resolved", "tests_fraction", "patch_similarity", "gated")
MODEL_PATCH = "/tmp/agentgym-model.patch"
TEST_PATCH = "/tmp/agentgym-test.patch"
EVAL_SCRIPT = "/tmp/agentgym-eval.sh"
_PATCH_FILES = re.compile(r"^diff --git a/(\S+) b/(\S+)", re.MULTILINE)


def git_apply_commands() -> list[str]:
    """swebench's ways to apply a prediction, in its order (``run_evaluation.GIT_APPLY_CMDS``)."""
    from swebench.harness.run_evaluation import GIT_APPLY_CMDS

    return list(GIT_APPLY_CMDS)


def graded_test_files(task: SWETask) -> list[str]:
    """The files the grade's tests live in: those ``test_patch`` touches and those the test ids name."""
    files = {m.group(2) for m in _PATCH_FILES.finditer(task.test_patch)}
    files |= {m.group(1) for m in _PATCH_FILES.finditer(task.test_patch)}
    for test in (*task.FAIL_TO_PASS, *task.PASS_TO_PASS):
        path = test.split("::", 1)[0]
        if "::" in test and path.endswith(".py") and ".." not in path.split("/"):
            files.add(path)
    return sorted(files)


async def evaluate_patch(task: SWETask, patch: str, *, image: str, timeout: float = 600.0) -> Grade:
    """SWE-bench's verdict on ``patch`` for ``task``, from a fresh container of ``image``.

    Raises:
        EnvError: No container could be started from ``image``.
        SandboxError: The container died during the evaluation.
    """
    sandbox = await start_fresh(image, LIMITS)
    try:
        return await _evaluate(sandbox, task, patch, timeout)
    finally:
        await sandbox.destroy()


async def _evaluate(sandbox: AgentSandbox, task: SWETask, patch: str, timeout: float) -> Grade:
    from swebench.harness.constants import APPLY_PATCH_FAIL, APPLY_PATCH_PASS, TESTS_TIMEOUT

    base = shlex.quote(task.base_commit)
    await _sh(sandbox, f"{GIT} -c advice.detachedHead=false checkout -q -f {base} && {GIT} clean -qfd",
              f"checking out the base commit {task.base_commit}")
    applied: bool | None = None
    log = []
    if patch.strip():
        applied, output = await _apply(sandbox, patch)
        if not applied:
            return grade(task, f"{APPLY_PATCH_FAIL}:\n{output}\n", applied=False)
        log.append(f"{APPLY_PATCH_PASS}:\n{output}")
    files = graded_test_files(task)
    if files:
        quoted = " ".join(shlex.quote(f) for f in files)
        # Every test file back to the base (or gone, if the base has none): the model's edits do not count.
        await _sh(sandbox, f"for f in {quoted}; do if {GIT} cat-file -e {base}:\"$f\" 2>/dev/null; "
                  f"then {GIT} checkout -q {base} -- \"$f\"; else rm -rf -- \"$f\"; fi; done",
                  "restoring the test files")
    if task.test_patch.strip():
        await sandbox.write_file(TEST_PATCH, task.test_patch)
        done = await sandbox.exec(f"{GIT} apply -v {TEST_PATCH}", cwd=REPO_DIR, timeout=LIMITS.exec_timeout)
        if done.exit_code != 0:
            raise SandboxError(f"task {task.instance_id}: its test_patch does not apply at the base: "
                               f"{done.output[-800:]}")
    if task.eval_script:
        await sandbox.write_file(EVAL_SCRIPT, task.eval_script)
        result = await testrun.run_tests(sandbox, f"bash {EVAL_SCRIPT}", timeout=timeout, parser=parser_name(task))
        test_log = result.log + (f"\n{TESTS_TIMEOUT}\n" if result.timed_out else "")
    else:
        result = await testrun.run_tests(sandbox, task.test_cmd or testrun.DEFAULT_TEST_CMD,
                                         tests=graded_test_files(task), timeout=timeout, parser=parser_name(task))
        test_log = result.swebench_log
    return grade(task, "\n".join([*log, test_log]), applied=applied)


async def _apply(sandbox: AgentSandbox, patch: str) -> tuple[bool, str]:
    """Apply ``patch`` as swebench's harness does; (applied, the last command's output)."""
    await sandbox.write_file(MODEL_PATCH, patch if patch.endswith("\n") else patch + "\n")
    output = ""
    for attempt, command in enumerate(git_apply_commands()):
        if attempt:  # a failed try (--reject above all) leaves partial changes: start again from the base
            await sandbox.exec(f"{GIT} checkout -- . ; {GIT} clean -fdq", cwd=REPO_DIR, timeout=LIMITS.exec_timeout)
        done = await sandbox.exec(f"{command} {MODEL_PATCH}", cwd=REPO_DIR, timeout=LIMITS.exec_timeout)
        output = done.output
        if done.exit_code == 0:
            return True, output
    check = await sandbox.exec(f"{GIT} apply --check --reverse {MODEL_PATCH}", cwd=REPO_DIR,
                               timeout=LIMITS.exec_timeout)
    return check.exit_code == 0, output


async def _sh(sandbox: AgentSandbox, cmd: str, what: str) -> None:
    done = await sandbox.exec(cmd, cwd=REPO_DIR, timeout=LIMITS.exec_timeout)
    if done.exit_code != 0:
        raise SandboxError(f"{what} failed ({done.exit_code}): {done.output[-800:]}")


class SWEVerifier:
    """Scores a SWE episode from a fresh container's run of the task's tests on the submitted patch.

    Every option is computed and recorded in ``components``; ``reward`` picks the value:

    - ``resolved``: 1 if every FAIL_TO_PASS and PASS_TO_PASS test passes, else 0 (SWE-bench);
    - ``tests_fraction``: the share of those tests that pass (VeRPO-style partial credit);
    - ``patch_similarity``: SWE-RL's similarity of the patch to the gold patch, -1 when the patch
      is not a diff or does not apply (needs no test run, but the apply result comes from one);
    - ``gated``: G-RA's gated partial credit: the share of FAIL_TO_PASS tests that pass, counted only
      when the patch applies and no PASS_TO_PASS test breaks, else 0 (so a resolved patch gets 1).

    ``info`` gets the verdict, its reason and every test's status (:meth:`Grade.info`), the patch
    and how long verification took.
    """

    name = "swe"

    def __init__(self, reward: RewardKind = "resolved") -> None:
        if reward not in REWARDS:
            raise ValueError(f"unknown SWE reward {reward!r}; choose one of {', '.join(REWARDS)}")
        self.reward = reward

    async def score(self, episode: Episode) -> Reward:
        env = cast("SWEEnv", episode.env)
        if env is None:
            raise ValueError("SWEVerifier runs the tests in a fresh container of the env: it scores live episodes only")
        task = SWETask.of(episode.task)
        patch = episode.state if isinstance(episode.state, str) else episode.final_answer or ""
        started = time.monotonic()
        result = await env.evaluate(task, patch)
        return to_reward(result, task, patch, self.reward, seconds=time.monotonic() - started)


def to_reward(result: Grade, task: SWETask, patch: str, kind: RewardKind, *, seconds: float = 0.0) -> Reward:
    """The reward of kind ``kind`` for a graded patch, with every kind in the components."""
    similarity = patch_similarity(patch, task.patch) if result.applied is not False else -1.0
    gated = result.fail_to_pass_fraction if result.applied and result.nothing_broke else 0.0
    components = {
        "resolved": float(result.resolved),
        "tests_fraction": result.tests_passed_fraction,
        "patch_similarity": similarity,
        "gated": 1.0 if result.resolved else gated,
    }
    info = {**result.info(), "patch": patch, "verify_seconds": round(seconds, 3)}
    return Reward(value=components[kind], components=components, info={"swe": info})
