"""Evaluation against a real HTTP server speaking OpenAI's wire format, with injected failures."""

import asyncio

import pytest

from agentgym.evaluation import evaluate
from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl

from ..core.toy import Counter
from .counter_model import counter_model
from .helpers import policy_for


async def test_retries_through_429_500_and_a_hang():
    with FakeOpenAI(counter_model, faults=["429", "500", "hang"], hang_seconds=30) as server:
        policy = policy_for(server)
        env = Counter()
        await env.reset(env.tasks()[0])
        reply = await policy.act(env.trajectory.messages, env.tools, task=env.task)
    # Each fault once, then an answer. On a loaded machine an answer may come after the client's
    # timeout too and be asked again, so "ok" may be more than 1; every request but the one answer
    # used is a retry, whatever made it one.
    assert {k: server.served[k] for k in ("429", "500", "hang")} == {"429": 1, "500": 1, "hang": 1}
    assert server.served["ok"] >= 1 and set(server.served) == {"429", "500", "hang", "ok"}
    assert reply.usage.retries == len(server.requests) - 1 >= 3
    assert reply.usage.prompt_tokens == 20 and reply.usage.completion_tokens == 7
    assert reply.message.tool_calls[0].name == "add"


async def test_batch_finishes_with_faults_and_loses_no_episode(tmp_path):
    out = tmp_path / "run.jsonl"
    tasks = [t for _ in range(4) for t in Counter().tasks()]
    tasks = [t.model_copy(update={"id": f"{t.id}-{i}"}) for i, t in enumerate(tasks)]
    with FakeOpenAI(counter_model, fault_every=4, fault_cycle=["429", "500", "hang"], hang_seconds=30) as server:
        summary, trajectories = await evaluate("test/Counter-v0", policy_for(server), tasks=tasks, concurrency=6,
                                               out=out, progress=False)
    assert summary.episodes == len(tasks) == 12
    assert summary.outcomes == {"terminated": 12}
    assert summary.successes == 12 and summary.success_ci95[0] > 0.7
    faults = sum(v for k, v in server.served.items() if k != "ok")
    answers = sum(len(t.turns) for t in trajectories)  # one model call answered per turn
    # Every request is either the answer a turn used or a retry (of a fault, or, on a loaded machine,
    # of an answer that came after the client's timeout): exact whatever the machine's speed.
    assert faults >= 5 and summary.retries == len(server.requests) - answers >= faults
    assert summary.prompt_tokens > 0 and summary.tool_errors == {}
    assert len(read_jsonl(out)) == 12
    assert out.with_suffix(".summary.json").exists()


async def test_api_failure_is_a_recorded_episode_not_a_crash(tmp_path):
    with FakeOpenAI(counter_model, faults=["500"] * 4) as server:
        summary, trajectories = await evaluate(
            "test/Counter-v0", policy_for(server, max_attempts=2), concurrency=1, progress=False,
            tasks=Counter().tasks()[:3])
    outcomes = [t.outcome for t in trajectories]
    assert outcomes[0] == "error" and outcomes.count("error") >= 1 and outcomes[-1] == "terminated"
    failed = trajectories[0]
    assert "InternalServerError" in failed.failure and "after 2 attempt(s)" in failed.failure
    assert summary.failures and summary.outcomes["error"] == outcomes.count("error")


async def test_turn_timeout_ends_the_episode_as_timeout():
    with FakeOpenAI(counter_model, faults=["hang"] * 10, hang_seconds=30) as server:
        _, (trajectory,) = await evaluate(
            "test/Counter-v0", policy_for(server, timeout=5.0), tasks=Counter().tasks()[:1],
            turn_timeout=0.5, progress=False)
    assert trajectory.outcome == "timeout" and "turn 1 took longer than 0.5s" in trajectory.failure


async def test_resume_plays_only_unfinished_episodes(tmp_path):
    out = tmp_path / "run.jsonl"
    tasks = Counter().tasks()
    with FakeOpenAI(counter_model) as server:
        await evaluate("test/Counter-v0", policy_for(server), tasks=tasks[:2], out=out, progress=False)
        first = len(server.requests)
        summary, _ = await evaluate("test/Counter-v0", policy_for(server), tasks=tasks, out=out,
                                    resume=True, progress=False)
        resumed = len(server.requests) - first
    assert summary.episodes == 3 and summary.successes == 3
    assert resumed == int(tasks[2].data["target"]) + 1  # only the third task was played
    assert [t.task_id for t in read_jsonl(out)] == [t.id for t in tasks]


async def test_cancelled_run_records_running_episodes(tmp_path):
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model, faults=["hang"] * 50, hang_seconds=30) as server:
        run = asyncio.create_task(evaluate("test/Counter-v0", policy_for(server, timeout=20.0),
                                           tasks=Counter().tasks(), out=out, progress=False))
        while len(server.requests) < 3:
            await asyncio.sleep(0.05)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    recorded = read_jsonl(out)
    assert len(recorded) == 3 and {t.outcome for t in recorded} == {"cancelled"}
    assert all("cancelled" in t.failure for t in recorded)
