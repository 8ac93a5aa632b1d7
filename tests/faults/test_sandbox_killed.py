"""A sandbox container killed mid-episode (``docker kill``): that episode ends as an ``error`` naming the
sandbox, the others are untouched, ``--resume`` plays it again, and the killed containers are gone."""

from __future__ import annotations

import asyncio
import os
import subprocess

import pytest

from agentgym.envs.code.policies import ReferenceSolution
from agentgym.evaluation import evaluate
from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.sandboxes import list_sandboxes, shutdown_pools
from agentgym.types import Message, Task, ToolSpec, read_jsonl
from tests.conftest import docker_or_skip

pytestmark = pytest.mark.docker

TASKS = 6


class Sleepy(ReferenceSolution):
    """The reference solution, after a first turn that sleeps in the sandbox's Python session."""

    name = "sleepy-reference"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        if not any(m.role == "assistant" for m in messages):
            call = native_tool_call("call_sleep", "python", {"code": "import time; time.sleep(3); print('awake')"})
            return Reply(message=Message(role="assistant", tool_calls=[call]))
        return await super().act(messages[:1] + messages[3:], tools, task=task)


def mine() -> list[str]:
    return [c.id for c in list_sandboxes({"agentgym.owner_pid": str(os.getpid())})]


async def test_a_container_killed_mid_episode_is_a_recorded_error_and_resume_replays_it(tmp_path):
    docker_or_skip()
    out = tmp_path / "run.jsonl"
    run = dict(env_kwargs={"sandbox_backend": "docker"}, limit=TASKS, concurrency=2, out=out, progress=False)

    async def kill_while_sleeping() -> list[str]:
        while not any("call_sleep" in line for line in _lines(out)) or len(mine()) < 2:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # inside the 3 s sleep of the episodes in flight
        victims = mine()
        killing = await asyncio.create_subprocess_exec("docker", "kill", *victims, stdout=subprocess.DEVNULL)
        assert await killing.wait() == 0
        return victims

    try:
        killer = asyncio.create_task(kill_while_sleeping())
        summary, _ = await evaluate("code", Sleepy(), **run)
        victims = await killer
        rows = {t.task_id: t for t in read_jsonl(out)}
        assert sorted(rows) == sorted(f"HumanEval/{i}" for i in range(TASKS)) and len(read_jsonl(out)) == TASKS
        failed = [t for t in rows.values() if t.outcome == "error"]
        # The episodes in flight, and any that was handed a killed spare before its pool saw it die;
        # every other episode finished.
        assert victims and 1 <= len(failed) < TASKS
        for t in failed:
            assert t.failure is not None and t.failure.startswith("SandboxError: ")
        assert summary.successes == TASKS - len(failed)

        again, _ = await evaluate("code", Sleepy(), **{**run, "resume": True})
        assert again.successes == TASKS and len(read_jsonl(out)) == TASKS + len(failed)
        assert {t.task_id for t in read_jsonl(out)[TASKS:]} == {t.task_id for t in failed}  # only those replayed
    finally:
        await shutdown_pools()
    assert not set(victims) & set(mine())  # the killed containers are gone (the run's own go when it exits:
    # tests/faults/test_driver_killed.py checks that across processes)


def _lines(path) -> list[str]:
    """What the run has written so far: a first turn is in a row only once its episode ended, so this
    waits for one whole episode (its sleep included) before the kill."""
    return path.read_text().splitlines() if path.exists() else []
