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
