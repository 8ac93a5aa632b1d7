"""The Ray executor on a real two-node cluster on this machine: same results as the local executor,
``--resume`` across executors, bounded episodes in flight per worker, clear errors before any episode."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentgym.errors import AgentgymError, PolicyError
from agentgym.evaluation import evaluate
from agentgym.evaluation.ray_executor import RayExecutor
from agentgym.types import Task, read_jsonl

from ..evaluation.helpers import COUNTER, run_cli
from .policies import Counting

HUMANEVAL_TASKS = 164


def counter_tasks(n: int) -> list[Task]:
    return [Task(id=f"count-{i}", prompt=f"Reach {2 + i % 3}.", data={"target": 2 + i % 3}) for i in range(n)]


def rows(out: Path) -> list[tuple[str, int | None]]:
    return [(t.task_id, t.seed) for t in read_jsonl(out)]


def test_import_agentgym_does_not_import_ray() -> None:
    code = ("import sys, agentgym, agentgym.evaluation, agentgym.cli; agentgym.cli.build_parser(); "
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "[]"


def test_two_nodes_play_humaneval_as_the_local_executor_does(tmp_path, capsys, ray_cluster):
    local_out, ray_out = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    code, _, err = run_cli(capsys, "eval", "code", "--model", "reference", "--sandbox", "local", "--out",
                           str(local_out))
    assert code == 0, err
    from agentgym.envs.code.policies import ReferenceSolution

    executor = RayExecutor(ray_cluster)
    summary, _ = asyncio.run(evaluate("code", ReferenceSolution(), env_kwargs={"sandbox_backend": "local"},
                                      out=ray_out, executor=executor, progress=False))
    local = {(t.task_id, t.seed): (t.outcome, t.reward, t.success, t.final_answer) for t in read_jsonl(local_out)}
    remote = {(t.task_id, t.seed): (t.outcome, t.reward, t.success, t.final_answer) for t in read_jsonl(ray_out)}
    assert len(local) == len(rows(local_out)) == HUMANEVAL_TASKS
    assert len(remote) == len(rows(ray_out)) == HUMANEVAL_TASKS  # every episode once
    assert remote == local
    assert summary.successes == HUMANEVAL_TASKS
    assert json.loads(ray_out.with_suffix(".summary.json").read_text())["successes"] == HUMANEVAL_TASKS
    workers = executor.pool
    assert len({w.node for w in workers}) == 2 and len({w.pid for w in workers}) == 2  # one on each node
    assert all(w.played > 0 for w in workers) and sum(w.played for w in workers) == HUMANEVAL_TASKS


def test_resume_switches_executors_both_ways(tmp_path, capsys, ray_cluster):
    """The executor is not part of a run's identity: local, then Ray, then local again, one file."""
    out = tmp_path / "run.jsonl"
    base = ["eval", "code", "--model", "reference", "--sandbox", "local", "--out", str(out)]
    ray = ["--executor", "ray", "--ray-address", ray_cluster]
    for limit, extra in ((2, []), (4, [*ray, "--resume"]), (5, ["--resume"])):
        before = len(rows(out)) if out.exists() else 0
        code, _, err = run_cli(capsys, *base, "--limit", str(limit), *extra)
        assert code == 0, err
        assert len(rows(out)) == limit  # only the new episodes were played and written
        assert sorted(rows(out)[:before]) == [(f"HumanEval/{i}", 0) for i in range(before)]  # kept as written
    assert sorted(rows(out)) == sorted((f"HumanEval/{i}", 0) for i in range(5))
    assert json.loads(out.with_suffix(".summary.json").read_text())["successes"] == 5


async def test_each_worker_has_at_most_concurrency_episodes_in_flight(tmp_path, ray_cluster):
    executor = RayExecutor(ray_cluster)
    policy = Counting(delay=0.2, log_dir=str(tmp_path))
    summary, _ = await evaluate(COUNTER, policy, tasks=counter_tasks(12), concurrency=2, executor=executor,
                                out=tmp_path / "run.jsonl", progress=False)
    assert summary.successes == 12 and len(set(rows(tmp_path / "run.jsonl"))) == 12
    pids = {w.pid for w in executor.pool}
    peaks = {int(p.stem): int(p.read_text()) for p in tmp_path.glob("*.max")}
    assert set(peaks) == pids  # both workers played
    assert max(peaks.values()) == 2  # full, and never more than --concurrency on one worker


class Unpicklable(Counting):
    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


async def test_a_policy_that_cannot_travel_is_refused_before_anything_runs(tmp_path):
    out = tmp_path / "run.jsonl"
    with pytest.raises(AgentgymError, match=r"cannot be pickled: TypeError: cannot pickle '_thread\.lock'"):
        await evaluate(COUNTER, Unpicklable(), tasks=counter_tasks(1), executor="ray", out=out, progress=False)
    assert not out.exists()


class NoKeyOnWorkers(Counting):
    """A policy whose credentials are in the driver's environment only."""

    def __init__(self) -> None:
        super().__init__()
        self.driver = os.getpid()

    def check(self) -> None:
        if os.getpid() != self.driver:
            raise PolicyError("counting: no credentials for provider 'x': set X_API_KEY", fatal=True)


async def test_a_worker_that_cannot_play_the_run_stops_it_before_the_first_episode(tmp_path, ray_cluster):
    out = tmp_path / "run.jsonl"
    executor = RayExecutor(ray_cluster)
    with pytest.raises(AgentgymError, match=r"^Ray worker on node \w+ cannot play this run: PolicyError: counting: "
                                            r"no credentials for provider 'x': set X_API_KEY$"):
        await evaluate(COUNTER, NoKeyOnWorkers(), tasks=counter_tasks(2), executor=executor, out=out,
                       progress=False)
    assert not out.exists() and executor.pool and not any(w.alive for w in executor.pool)


def test_ray_options_need_the_ray_executor(tmp_path, capsys):
    code, _, err = run_cli(capsys, "eval", "toy", "--model", "reference", "--ray-address", "127.0.0.1:1",
                           "--out", str(tmp_path / "x.jsonl"))
    assert code == 2 and err.strip() == "agentgym: error: --ray-address and --ray-workers need --executor ray"
