"""The LLM endpoint misbehaves (429, 500, a body that is not JSON, a body cut off, a hang), under each
executor: every episode is written exactly once, each retry is counted, each failure has its reason.

429, 500 and hangs on their own are covered in tests/evaluation/test_hosted_model.py (local executor);
this adds the malformed and truncated answers, and all five under the Ray executor.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentgym.evaluation import evaluate
from agentgym.evaluation.executors import Executor, LocalExecutor
from agentgym.testing import FakeOpenAI
from agentgym.types import Task, read_jsonl

from ..core.toy import Counter
from ..evaluation.counter_model import counter_model
from ..evaluation.helpers import COUNTER, policy_for

ALL_FAULTS = ["429", "500", "bad_json", "truncated", "hang"]


@pytest.fixture(params=["local", "ray"])
def executor(request: pytest.FixtureRequest) -> Executor:
    if request.param == "local":
        return LocalExecutor()
    from agentgym.evaluation.ray_executor import RayExecutor

    return RayExecutor(request.getfixturevalue("ray_cluster"))


def counter_tasks(n: int) -> list[Task]:
    return [Task(id=f"count-{i}", prompt=f"Reach {2 + i % 3}.", data={"target": 2 + i % 3}) for i in range(n)]


def keys(out: Path) -> list[tuple[str, int | None]]:
    return [(t.task_id, t.seed) for t in read_jsonl(out)]


@pytest.mark.parametrize("fault", ["bad_json", "truncated"])
async def test_a_malformed_or_cut_off_answer_is_retried_and_counted(fault):
    env = Counter()
    await env.reset(env.tasks()[0])
    with FakeOpenAI(counter_model, faults=[fault]) as server:
        reply = await policy_for(server).act(env.trajectory.messages, env.tools, task=env.task)
    # The fault once, then an answer; on a loaded machine an answer that came after the client's timeout
    # is asked again too, so every request but the one answer used is a retry.
    assert server.served[fault] == 1 and set(server.served) == {fault, "ok"}
    assert reply.usage.retries == len(server.requests) - 1 >= 1 and reply.message.tool_calls[0].name == "add"


async def test_every_endpoint_fault_loses_no_episode(tmp_path, executor):
    tasks, out = counter_tasks(10), tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model, fault_every=3, fault_cycle=ALL_FAULTS, hang_seconds=30) as server:
        summary, trajectories = await evaluate(COUNTER, policy_for(server), tasks=tasks, concurrency=3,
                                               executor=executor, out=out, progress=False)
    assert set(server.served) == {*ALL_FAULTS, "ok"}  # each fault was served
    faults = sum(n for kind, n in server.served.items() if kind != "ok")
    assert summary.outcomes == {"terminated": 10} and summary.successes == 10
    # Every fault cost a retry and each was counted: every request is the answer a turn used or a retry
    # (on a loaded machine, also of an answer that came after the client's timeout).
    answers = sum(len(t.turns) for t in trajectories)
    assert summary.retries == len(server.requests) - answers >= faults
    assert sorted(keys(out)) == sorted((t.id, 0) for t in tasks)  # each episode written once


async def test_an_endpoint_that_keeps_failing_is_a_recorded_error(tmp_path, executor):
    tasks, out = counter_tasks(3), tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model, faults=["500"] * 4) as server:
        # No hang here: a long timeout, so that a slow answer on a busy machine is not one more failure.
        policy = policy_for(server, max_attempts=2, timeout=30.0)
        summary, _ = await evaluate(COUNTER, policy, tasks=tasks, concurrency=1, executor=executor, out=out,
                                    progress=False)
    rows = {t.task_id: t for t in read_jsonl(out)}
    assert sorted(rows) == [t.id for t in tasks]
    failed = [t for t in rows.values() if t.outcome == "error"]
    # One at a time, the faults fail the first two episodes; Ray's two workers may share them out
    # differently, but every fault is accounted for: two per failed episode, one per retried success.
    assert failed and summary.outcomes == {"error": len(failed), "terminated": 3 - len(failed)}
    assert sum(2 if t.outcome == "error" else t.usage.retries for t in rows.values()) == 4
    for t in failed:  # the reason named, after its two attempts
        assert (t.failure or "").startswith("PolicyError: openai/fake-model: InternalServerError: ")
        assert "after 2 attempt(s)" in (t.failure or "") and t.failed_usage.retries == 1
    assert summary.failures and sum(summary.failures.values()) == len(failed)
