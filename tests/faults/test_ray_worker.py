"""A Ray worker that dies mid-episode: its episodes are played elsewhere, at most ``max_retries`` more
times, each loss recorded; no finished episode is lost or written twice. Real processes, really killed."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from agentgym.evaluation import evaluate
from agentgym.evaluation.ray_executor import RayExecutor
from agentgym.types import Task, Trajectory, read_jsonl

from ..evaluation.helpers import COUNTER
from ..scaleout.policies import Counting


def counter_tasks(n: int) -> list[Task]:
    return [Task(id=f"count-{i}", prompt=f"Reach {3 + i % 2}.", data={"target": 3 + i % 2}) for i in range(n)]


def once_each(out: Path, tasks: list[Task]) -> dict[str, Trajectory]:
    """The run's rows by task, checking that every task is there exactly once."""
    rows = read_jsonl(out)
    assert sorted(t.task_id for t in rows) == sorted(t.id for t in tasks)
    return {t.task_id: t for t in rows}


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_a_killed_worker_s_episodes_are_played_elsewhere(tmp_path, ray_cluster):
    tasks, out = counter_tasks(10), tmp_path / "run.jsonl"
    executor = RayExecutor(ray_cluster)
    killed: list[int] = []

    async def kill_a_busy_worker() -> None:
        while True:  # the first worker's process, as soon as it is playing an episode
            victim = next((w for w in executor.pool if (tmp_path / f"{w.pid}.tasks").exists()), None)
            if victim is not None:
                os.kill(victim.pid, signal.SIGKILL)
                killed.append(victim.pid)
                return
            await asyncio.sleep(0.05)

    killer = asyncio.create_task(kill_a_busy_worker())
    summary, _ = await evaluate(COUNTER, Counting(delay=0.3, log_dir=str(tmp_path)), tasks=tasks, concurrency=2,
                                executor=executor, out=out, progress=False)
    await killer
    (pid,) = killed
    assert gone(pid)
    rows = once_each(out, tasks)
    assert summary.successes == 10 and summary.outcomes == {"terminated": 10}
    retried = [t for t in rows.values() if "lost_workers" in t.info]
    assert 1 <= len(retried) <= 2  # what it was playing (--concurrency 2), played again to the end
    for t in retried:
        assert t.info["attempts"] == 2 and t.success
        (reason,) = t.info["lost_workers"]
        assert reason.startswith(f"pid {pid} on ") and "ActorDiedError" in reason
    dead = [w for w in executor.pool if w.pid == pid]
    assert len(executor.pool) == 3 and dead and dead[0].played == 0  # a replacement joined; the dead one
    # never reported an episode: those it had finished were written when they ended, the rest went elsewhere


async def test_an_episode_that_kills_its_worker_every_time_is_an_error_after_its_retries(tmp_path, ray_cluster):
    tasks, out = counter_tasks(6), tmp_path / "run.jsonl"
    policy = Counting(log_dir=str(tmp_path), die_on=("count-1",), die_once_on=("count-2",))
    # One episode at a time on each worker, so that a death takes no other episode with it.
    summary, _ = await evaluate(COUNTER, policy, tasks=tasks, concurrency=1, out=out, progress=False,
                                executor=RayExecutor(ray_cluster, max_retries=1))
    rows = once_each(out, tasks)
    doomed, unlucky = rows["count-1"], rows["count-2"]
    assert doomed.outcome == "error" and doomed.failure is not None
    assert doomed.failure.startswith("the Ray worker playing it died 2 times; last: pid ")
    assert len(doomed.info["lost_workers"]) == 2 and doomed.info["attempts"] == 2
    assert unlucky.success and unlucky.info["attempts"] == 2 and len(unlucky.info["lost_workers"]) == 1
    assert summary.outcomes == {"terminated": 5, "error": 1} and summary.successes == 5
    assert all("lost_workers" not in rows[f"count-{i}"].info for i in (0, 3, 4, 5))
