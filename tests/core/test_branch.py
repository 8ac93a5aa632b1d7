"""Branch rollouts measure each turn's value with forked sandboxes; envs without one are refused by name."""

from __future__ import annotations

import pytest

from agentgym.branch import branch, branch_rollout
from agentgym.envs.toy.env import ColourEnv, HintThenSay
from agentgym.envs.toy.lock import LockEnv, RandomLockPolicy
from agentgym.errors import EnvError
from agentgym.types import Task

TASK = Task(id="lock-1", prompt="Set the dial, then open the lock.", data={"code": 1})


async def test_the_decisive_turn_gets_the_value_and_the_others_none() -> None:
    async with LockEnv(sandbox_backend="local") as env:
        result = await branch_rollout(env, RandomLockPolicy(p_right=0.5, seed=3), TASK, n=4)
    turns = len(result.trajectory.turns)
    assert turns >= 2 and len(result.values) == turns + 1 and len(result.advantages) == turns
    # After the dial is set, every branch ends the same way: later turns are worth exactly 0.
    outcome = result.trajectory.reward
    assert all(v == outcome for v in result.values[1:])
    assert result.advantages[1:] == [0.0] * (turns - 1)
    assert result.advantages[0] == pytest.approx(outcome - result.values[0])
    assert 0.0 <= result.values[0] <= 1.0 and len(result.branch_outcomes[0]) == 4
    assert result.forks == 4 * turns and result.sandbox_seconds > 0


async def test_forks_do_not_share_the_sandbox() -> None:
    async with LockEnv(sandbox_backend="local") as env:
        await env.reset(TASK)
        # Branch before the dial is set: each fork sets its own dial, and the parent's stays unset.
        outcomes, _ = await branch(env, RandomLockPolicy(p_right=0.5, seed=1), TASK, n=6)
        assert set(outcomes) == {0.0, 1.0}
        with pytest.raises(Exception):  # noqa: B017 (the file is absent: whichever error the backend raises)
            await env.sandbox.read_file("dial.txt")
        assert env.trajectory is not None and env.trajectory.turns == []


async def test_an_env_without_a_sandbox_is_refused_by_name() -> None:
    async with ColourEnv() as env:
        await env.reset(ColourEnv().tasks()[0])
        with pytest.raises(EnvError, match="ColourEnv cannot branch: it holds no sandbox to fork"):
            await branch(env, HintThenSay(), env.tasks()[0], n=2)
        with pytest.raises(EnvError, match="ColourEnv cannot branch"):
            await branch_rollout(env, HintThenSay(), env.tasks()[0], n=2)


async def test_branching_with_docker_sandboxes() -> None:
    pytest.importorskip("docker")
    async with LockEnv(sandbox_backend="docker") as env:
        result = await branch_rollout(env, RandomLockPolicy(p_right=0.5, seed=5), TASK, n=2)
    assert all(v == result.trajectory.reward for v in result.values[1:])
    assert result.forks == 2 * len(result.trajectory.turns)


async def test_the_code_env_branches() -> None:
    import json
    import random

    from agentgym import make
    from agentgym.parsing import native_tool_call
    from agentgym.policies.base import Reply
    from agentgym.types import Message
    from tests.code.test_forgery import ROOT
    from tests.code.test_rewards import NOTHING, RIGHT

    class Coin:
        """Writes a draft to a file on turn 1 (right or wrong at random), then submits whatever the file holds."""

        name = "coin"
        rng = random.Random(2)

        async def act(self, messages: list[Message], tools: list, *, task: object) -> Reply:
            if not any(m.role == "assistant" for m in messages):
                code = RIGHT if self.rng.random() < 0.5 else NOTHING
                call = native_tool_call("w", "python", {"code": f"open('draft.py', 'w').write({code!r})"})
            else:
                call = native_tool_call("r", "python", {"code": "print(open('draft.py').read())"})
                if any(m.role == "tool" and "def root" in m.text for m in messages):
                    draft = next(m.text for m in reversed(messages) if m.role == "tool" and "def root" in m.text)
                    call = native_tool_call("s", "submit", {"code": draft})
            return Reply(message=Message(role="assistant", tool_calls=[call]))

    async with make("code", sandbox_backend="local") as env:
        tools = {t.name for t in env.tools}
        assert {"python", "submit"} <= tools, tools
        result = await branch_rollout(env, Coin(), ROOT, n=3)
    # The draft written on turn 1 decides the outcome: the forks after it (which copy the file) all
    # end as the episode did, and turn 1 gets the whole advantage.
    assert result.values[1:] == [result.trajectory.reward] * (len(result.values) - 1)
    assert result.advantages[1:] == [0.0] * (len(result.advantages) - 1)
    assert json.dumps(result.branch_outcomes)  # plain numbers


async def test_envs_whose_state_is_in_processes_are_refused_by_name() -> None:
    from agentgym.mcp import MCPEnv
    from tests.mcp.test_mcp import CALC
    from tests.mcp.test_mcp import TASK as SUM

    env = MCPEnv(servers=[CALC], tasks=[SUM], sandbox_backend="local")
    try:
        await env.reset(SUM)
        with pytest.raises(EnvError, match="MCPEnv cannot branch: its state lives in processes"):
            await branch(env, HintThenSay(), SUM, n=2)
    finally:
        await env.close()
