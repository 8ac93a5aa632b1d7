"""Grade a SWE patch as SWE-bench does, in a fresh container the model never touched, and turn it into rewards.

:func:`evaluate_patch` starts a new container of the task's image and owns the test run there; what
the model controls is its library code, nothing around it (docs/threat-model.md, "SWE env grades"):

1. a patch naming a path in ``.git`` (or a link into it) is refused before any apply command
   (:func:`~agentgym.envs.swe.protect.refusal`), and so is one whose library code names the test
   run's machinery (:func:`~agentgym.envs.swe.machinery.machinery`): 0, not applied;
2. at the base commit, with ``test_patch`` applied, every file that is not library source
   (:func:`~agentgym.envs.swe.protect.is_protected`: tests and their helpers, conftest files,
   pytest's configuration, path hooks, package metadata) is archived, and the image's pytest
   plugins are listed;
3. the model's patch is applied with each of swebench's ``GIT_APPLY_CMDS`` in turn (``git apply``,
   ``--3way``, ``--reject``, then ``patch --fuzz=5``, the tree reset between tries);
4. the archive is put back and every other protected file deleted: edits to tests, their
   configuration or Python's path hooks do not count; no git command runs in the tree after this;
   a new entry on the run's path named like a module it resolves elsewhere (the runner, the
   stdlib, an installed package, a graded test module: :mod:`~agentgym.envs.swe.shadow`) is a 0;
5. the tests run through :func:`~agentgym.envs.swe.guard.guarded_run` (a fixed environment, a
   JUnit report cross-checked with the log, canary tests in a graded file) and the log is graded
   with swebench's grading (:func:`~agentgym.envs.swe.grading.grade`); a tampered run is 0 whatever
   the log says, a run stopped at collection is 0 as the collection error it is, and a FAIL_TO_PASS
   test the run did not see pass fails the row (:func:`~agentgym.envs.swe.grading.skipped_fail_to_pass`);
6. when that resolves the task, steps 1 to 4 again in a second fresh container and the verifier's
   own run of the FAIL_TO_PASS tests there (:mod:`~agentgym.envs.swe.second_run`), which must see
   each pass, or the grade is 0 as tampered; its seconds are in the grade's info.

Each container is destroyed whatever happens.

:class:`SWEVerifier` is the env's verifier: one evaluation per episode, every reward option in its
components, the one asked for as its value.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import secrets
import shlex
import time
from dataclasses import dataclass
from typing import Literal

from agentgym.errors import SandboxError
from agentgym.rewards import Episode
from agentgym.sandboxes import SupervisedSandbox
from agentgym.types import Reward

from . import guard, protect, shadow, testrun
from .grading import (
    Grade,
    collection_error,
    grade,
    not_applied,
    parser_name,
    patch_similarity,
    skipped_fail_to_pass,
    tampered,
)
from .images import image_for
from .kept import GIT, LIMITS, start_fresh
from .machinery import machinery
from .second_run import second_run
from .tasks import REPO_DIR, SWETask

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


def fix_files(task: SWETask) -> set[str]:
    """Protected paths the gold patch itself changes (a ``setup.cfg``, a ``conftest.py`` the fix is in),
    the test files aside: the model may change them too, or the task could not be solved."""
    gold = {path for m in _PATCH_FILES.finditer(task.patch) for path in m.groups()}
    return {p for p in gold if protect.is_protected(p)} - set(graded_test_files(task))


async def evaluate_patch(task: SWETask, patch: str, *, image: str, timeout: float = 600.0) -> Grade:
    """SWE-bench's verdict on ``patch`` for ``task``, from a fresh container of ``image``; when that
    resolves the task, the verifier's second run of its FAIL_TO_PASS tests in another
    (:mod:`~agentgym.envs.swe.second_run`) must agree, or the grade is 0.

    Raises:
        EnvError: No container could be started from ``image``.
        SandboxError: A container died during the evaluation.
    """
    sandbox = await start_fresh(image, LIMITS)
    try:
        graded = await _evaluate(sandbox, task, patch, timeout)
    finally:
        await sandbox.destroy()
    if not graded.resolved or task.eval_script:
        return graded
    started = time.monotonic()
    again = await start_fresh(image, LIMITS)
    try:
        prepared = await _prepare(again, task, patch)
        if isinstance(prepared, Grade):
            why: str | None = f"the verifier's second run could not be prepared as the first was: {prepared.reason}"
        else:
            why = await second_run(again, task.test_cmd or testrun.DEFAULT_TEST_CMD, task.FAIL_TO_PASS,
                                   cwd=REPO_DIR, stage=prepared.stage, plugins=prepared.plugins, timeout=timeout,
                                   parser=parser_name(task))
    finally:
        await again.destroy()
    graded = dataclasses.replace(graded, second_run_seconds=round(time.monotonic() - started, 3))
    return tampered(graded, why) if why is not None else graded


@dataclass(frozen=True)
class Prepared:
    """A sandbox's tree ready for a test run: the patch applied, the protected files put back."""

    stage: str  # the verifier's folder in the sandbox
    plugins: list[str]  # the image's pytest plugins, listed before the patch
    applied: bool | None  # the patch applied (None: it was empty)
    log: list[str]  # swebench's apply marker and output, for the graded log


async def _prepare(sandbox: SupervisedSandbox, task: SWETask, patch: str) -> Prepared | Grade:
    """Steps 1 to 4 of the module docstring in ``sandbox``: the tree ready to run, or the grade of a
    patch refused, not applied or shadowing a module."""
    from swebench.harness.constants import APPLY_PATCH_FAIL, APPLY_PATCH_PASS

    why = protect.refusal(patch) or machinery(patch, task.patch)
    if why is not None:
        return not_applied(task, why)
    base = shlex.quote(task.base_commit)
    stage = f"/tmp/agentgym-verifier-{secrets.token_hex(8)}"
    reset = f"{GIT} -c advice.detachedHead=false checkout -q -f {base} && {GIT} clean -qfd"
    await _sh(sandbox, f"mkdir -p {stage}/home && {reset}", f"checking out the base commit {task.base_commit}")
    plugins = await guard.image_plugins(sandbox, REPO_DIR)  # the image's, before any patch
    resolved = await shadow.probe(sandbox, REPO_DIR)
    if task.test_patch.strip():
        await sandbox.write_file(TEST_PATCH, task.test_patch)
        done = await sandbox.exec(f"{GIT} apply -v {TEST_PATCH}", cwd=REPO_DIR, timeout=LIMITS.exec_timeout)
        if done.exit_code != 0:
            raise SandboxError(f"task {task.instance_id}: its test_patch does not apply at the base: "
                               f"{done.output[-800:]}")
    kept, base_paths = await _keep_protected(sandbox, task, stage)
    if task.test_patch.strip():
        await _sh(sandbox, reset, "resetting to the base commit")
    applied: bool | None = None
    log = []
    if patch.strip():
        applied, output = await _apply(sandbox, patch)
        if not applied:
            return grade(task, f"{APPLY_PATCH_FAIL}:\n{output}\n", applied=False)
        log.append(f"{APPLY_PATCH_PASS}:\n{output}")
    listing = await _restore_protected(sandbox, task, stage, kept)
    files = graded_test_files(task)
    shadows = shadow.shadowing(
        listing, base_paths, shadow.path_folders(task.test_cmd or testrun.DEFAULT_TEST_CMD, files, resolved,
                                                 base_paths),
        resolved.names | shadow.test_names(files), allowed=_gold_paths(task))
    if shadows is not None:
        return tampered(grade(task, "\n".join(log), applied=applied), shadows)
    return Prepared(stage=stage, plugins=plugins, applied=applied, log=log)


async def _evaluate(sandbox: SupervisedSandbox, task: SWETask, patch: str, timeout: float) -> Grade:
    from swebench.harness.constants import TESTS_TIMEOUT

    prepared = await _prepare(sandbox, task, patch)
    if isinstance(prepared, Grade):
        return prepared
    if task.eval_script:
        await sandbox.write_file(EVAL_SCRIPT, task.eval_script)
        result = await testrun.run_tests(sandbox, f"bash {EVAL_SCRIPT}", timeout=timeout, parser=parser_name(task))
        test_log = result.log + (f"\n{TESTS_TIMEOUT}\n" if result.timed_out else "")
    else:
        result = await guard.guarded_run(
            sandbox, task.test_cmd or testrun.DEFAULT_TEST_CMD, graded_test_files(task),
            graded=[*task.FAIL_TO_PASS, *task.PASS_TO_PASS], cwd=REPO_DIR, stage=prepared.stage,
            plugins=prepared.plugins, timeout=timeout, parser=parser_name(task), seed=task.instance_id)
        test_log = result.swebench_log
    graded = grade(task, "\n".join([*prepared.log, test_log]), applied=prepared.applied)
    if result.tampered:
        return tampered(graded, result.tampered)
    if result.collection_error:
        return collection_error(graded, result.collection_error)
    return skipped_fail_to_pass(graded, task)


def _gold_paths(task: SWETask) -> set[str]:
    return {path for m in _PATCH_FILES.finditer(task.patch) for path in m.groups()}


async def _keep_protected(sandbox: SupervisedSandbox, task: SWETask, stage: str) -> tuple[set[str], set[str]]:
    """Archive the base's protected files (:mod:`~agentgym.envs.swe.protect`, the test patch's and the
    graded tests' files among them) in ``stage``, before the model's patch; the set archived, and
    every path of the base."""
    listing = await _listing(sandbox, stage)
    present = {path for kind, path in listing if kind in ("f", "l")}
    named = set(graded_test_files(task))
    kept = {p for p in present if (protect.is_protected(p) and not _bytecode(p) and p not in fix_files(task))
            or p in named}
    await sandbox.write_file(f"{stage}/keep", _names(sorted(kept)))
    await _sh(sandbox, f"tar -cf {stage}/protected.tar --null --no-recursion -T {stage}/keep",
              "archiving the test files")
    return kept, {path for _, path in listing}


async def _restore_protected(sandbox: SupervisedSandbox, task: SWETask, stage: str,
                             kept: set[str]) -> list[tuple[str, str]]:
    """Put the archived files back over the patched tree and remove every other protected file, so the
    test run reads the base's tests, configuration and path hooks whatever the patch did; the
    listing of the patched tree, before that."""
    listing = await _listing(sandbox, stage)
    remove = protect.to_remove(listing, kept, allowed=fix_files(task))
    named = set(graded_test_files(task)) - kept  # graded files the base lacks (the test patch adds none)
    remove += [path for _, path in listing if path in named]
    await sandbox.write_file(f"{stage}/remove", _names(remove))
    # The archive goes once it is put back: the run could otherwise read the base's copy of the file the
    # canaries are appended to, and find them by the difference.
    await _sh(sandbox, f"xargs -0 -r rm -rf -- < {stage}/remove && tar -xf {stage}/protected.tar "
                       f"&& rm -f {stage}/protected.tar", "restoring the test files")
    return listing


def _names(paths: list[str]) -> bytes:
    """NUL-separated names as the tree has them: a name that is not UTF-8 is back to its own bytes."""
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


async def _listing(sandbox: SupervisedSandbox, stage: str) -> list[tuple[str, str]]:
    """``(type, path)`` of every entry of the work tree outside ``.git`` (``find``'s ``%y``)."""
    await _sh(sandbox, f"find . -path ./.git -prune -o -printf '%y %P\\0' > {stage}/listing", "listing the tree")
    raw = (await sandbox.read_file(f"{stage}/listing")).decode("utf-8", errors="surrogateescape")
    return [(entry[0], entry[2:]) for entry in raw.split("\0") if len(entry) > 2]


def _bytecode(path: str) -> bool:
    return "__pycache__/" in f"/{path}" or path.endswith((".pyc", ".pyo"))


async def _apply(sandbox: SupervisedSandbox, patch: str) -> tuple[bool, str]:
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


async def _sh(sandbox: SupervisedSandbox, cmd: str, what: str) -> None:
    done = await sandbox.exec(cmd, cwd=REPO_DIR, timeout=LIMITS.exec_timeout)
    if done.exit_code != 0:
        raise SandboxError(f"{what} failed ({done.exit_code}): {done.output[-800:]}")


@dataclass(frozen=True)
class Submitted:
    """What a SWE episode ends with (the env's final state): its patch, and why the patch could not be
    taken from the sandbox if it could not (graded as not applied)."""

    patch: str
    refused: str | None = None


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
    and how long verification took. It needs nothing of the env: the patch comes from the episode's
    state (:class:`Submitted`), or from a saved trajectory's final answer, so it scores saved
    trajectories too (on a machine with Docker and the task's image, built if need be).
    """

    name = "swe"

    def __init__(self, reward: RewardKind = "resolved", test_timeout: float = 600.0) -> None:
        """
        Args:
            reward: Which reward is the outcome (every one is recorded in the components).
            test_timeout: Seconds the test run in the fresh container may take.
        """
        if reward not in REWARDS:
            raise ValueError(f"unknown SWE reward {reward!r}; choose one of {', '.join(REWARDS)}")
        self.reward = reward
        self.test_timeout = test_timeout

    async def score(self, episode: Episode) -> Reward:
        task = SWETask.of(episode.task)
        state = episode.state if isinstance(episode.state, Submitted) else Submitted(episode.final_answer or "")
        started = time.monotonic()
        if state.refused:
            result = not_applied(task, state.refused)
        else:
            image = await asyncio.to_thread(image_for, task)
            result = await evaluate_patch(task, state.patch, image=image, timeout=self.test_timeout)
        return to_reward(result, task, state.patch, self.reward, seconds=time.monotonic() - started)


def to_reward(result: Grade, task: SWETask, patch: str, kind: RewardKind, *, seconds: float = 0.0) -> Reward:
    """The reward of kind ``kind`` for a graded patch, with every kind in the components."""
    similarity = patch_similarity(patch, task.patch) if result.applied is not False and not result.tampered else -1.0
    gated = result.fail_to_pass_fraction if result.applied and result.nothing_broke else 0.0
    components = {
        "resolved": float(result.resolved),
        "tests_fraction": result.tests_passed_fraction,
        "patch_similarity": similarity,
        "gated": 1.0 if result.resolved else gated,
    }
    info = {**result.info(), "patch": patch, "verify_seconds": round(seconds, 3)}
    return Reward(value=components[kind], components=components, info={"swe": info})
