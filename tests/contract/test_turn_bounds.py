"""One message of many calls: bounded in every env (calls, characters, seconds), and a turn timeout the
model's calls caused is graded, not lost; check_env's no-dodge check catches an env that runs them all."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from agentgym import Env, Episode, Message, Reply, Task, ToolSpec, tool
from agentgym.rollout import rollout
from agentgym.testing import EnvCheckError, check_env
from agentgym.types import ToolCall


def two_ticks(episode: Episode) -> float:
    """The task: tick exactly twice."""
    return float(episode.state == 2)


def any_tick(episode: Episode) -> float:
    """1 when the model ticked at all (a grade a cut-off turn must not keep)."""
    return float(episode.state >= 1)


class Ticks(Env):
    """A tool that takes a moment, counted; a final answer in text."""

    verifier = two_ticks
    tick_seconds = 0.01

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ticks = 0

    def tasks(self) -> list[Task]:
        return [Task(id="t", prompt="Tick.")]

    async def setup(self, task: Task) -> None:
        self.ticks = 0

    async def final_state(self) -> int:
        return self.ticks

    @tool
    async def tick(self, note: str = "") -> str:
        """Tick once.

        Args:
            note: Anything.
        """
        await asyncio.sleep(self.tick_seconds)
        self.ticks += 1
        return "ticked"

    @classmethod
    def scripted_policies(cls) -> dict[str, Any]:
        return {"reference": lambda: Calls(2), "baseline": lambda: Says()}


class Unbounded(Ticks):
    """The same env with nothing bounding a turn: what every env was before the bounds."""

    max_calls_per_turn = 10**6
    max_turn_chars = 10**9
    max_turn_seconds = 10.0**9


class Says:
    name = "says"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        return Reply(message=Message(role="assistant", content="done"))


class Calls:
    """Ticks ``count`` times in its first message, then answers in text."""

    def __init__(self, count: int, note: str = "") -> None:
        self.name, self.count, self.note = f"calls-{count}", count, note

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        if any(m.role == "tool" for m in messages):
            return Reply(message=Message(role="assistant", content="done"))
        arguments = json.dumps({"note": self.note})
        return Reply(message=Message(role="assistant", tool_calls=[
            ToolCall(id=f"c{i}", name="tick", arguments=arguments) for i in range(self.count)]))


def message(count: int, note: str = "") -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=f"c{i}", name="tick",
                                                          arguments=json.dumps({"note": note}))
                                                 for i in range(count)])


async def test_a_message_runs_at_most_max_calls_per_turn_and_every_call_is_answered() -> None:
    env = Ticks()
    await env.reset()
    result = await env.step(message(100))
    assert env.ticks == Ticks.max_calls_per_turn == 32
    assert len(result.observation) == 100  # one tool message per call id, as the API requires
    refused = [m for m in result.observation if m.text.startswith("Error: not run")]
    assert len(refused) == 68 and "at most 32 tool calls" in refused[0].text
    assert result.info["tool_errors"].count("turn_limit") == 68


async def test_a_message_runs_at_most_max_turn_chars_of_arguments() -> None:
    env = Ticks()
    await env.reset()
    note = "x" * 200_000  # each call carries about 200 000 characters: five fit in a megabyte
    await env.step(message(20, note))
    assert env.ticks == 5


async def test_a_message_starts_no_call_past_max_turn_seconds() -> None:
    class Slow(Ticks):
        tick_seconds = 0.2
        max_turn_seconds = 0.5

    env = Slow()
    await env.reset()
    started = time.monotonic()
    result = await env.step(message(30))
    assert time.monotonic() - started < 1.5
    assert 2 <= env.ticks <= 4, env.ticks
    assert "used up a turn's 0.5 s" in result.observation[-1].text


async def test_check_env_fails_an_env_that_runs_every_call_of_one_message_and_passes_a_bounded_one() -> None:
    with pytest.raises(EnvCheckError, match="dodge '100 calls of tick in one message': turn 1 ran 100 tool calls "
                                            r"of one message \(at most 64\)"):
        await check_env(Unbounded)
    report = await check_env(Ticks)
    assert "100 calls of tick in one message" in report.dodges


async def test_a_turn_timeout_the_models_calls_caused_is_graded_a_failure_with_the_reason() -> None:
    class SlowUnbounded(Unbounded):
        tick_seconds = 0.05
        verifier = any_tick

    env = SlowUnbounded()
    trajectory = await rollout(env, Calls(200), env.tasks()[0], turn_timeout=1.0)
    assert env.ticks >= 1  # the verifier would have said 1: the cut-off turn keeps no better than 0
    assert trajectory.outcome == "truncated" and trajectory.failure is None
    assert trajectory.outcome_reward == 0.0 and trajectory.reward == 0.0
    assert trajectory.info["turn_timeout"] == "turn 1 ran past the 1 s turn timeout in its tool calls"


async def test_a_turn_timeout_in_the_policy_stays_a_timeout() -> None:
    class Stalls(Says):
        async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
            await asyncio.sleep(5)
            raise AssertionError("not reached")

    env = Ticks()
    trajectory = await rollout(env, Stalls(), env.tasks()[0], turn_timeout=0.2)
    assert trajectory.outcome == "timeout" and "took longer than 0.2s" in (trajectory.failure or "")
