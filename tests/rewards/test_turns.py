"""Turn-level utilities, on hand-made numbers and on a real env trajectory."""

from __future__ import annotations

import pytest

from agentgym.envs.toy.env import ColourEnv
from agentgym.parsing import format_text_tool_call
from agentgym.rewards import (
    discounted_returns,
    gated_return,
    gated_turn_rewards,
    leave_one_out_advantages,
    process_rewards,
    turn_rewards,
)
from agentgym.types import Message, Task


def test_discounted_returns() -> None:
    assert discounted_returns([1.0, 0.0, 2.0]) == [3.0, 2.0, 2.0]
    assert discounted_returns([1.0, 0.0, 2.0], gamma=0.5) == pytest.approx([1.5, 1.0, 2.0])
    assert discounted_returns([]) == []
    with pytest.raises(ValueError):
        discounted_returns([1.0], gamma=1.5)


def test_gated_accumulation_counts_process_rewards_only_on_success() -> None:
    assert gated_return([0.2, 0.3], 1.0) == pytest.approx(1.5)
    assert gated_return([0.2, 0.3], 0.0) == 0.0
    assert gated_return([0.2, 0.3], 0.6, threshold=0.5) == pytest.approx(1.1)
    assert gated_turn_rewards([0.2, 0.3], 1.0) == pytest.approx([0.2, 1.3])
    assert gated_turn_rewards([0.2, 0.3], 0.0) == [0.0, 0.0]
    assert gated_turn_rewards([], 1.0) == [1.0]


def test_leave_one_out_baselines_per_turn() -> None:
    group = [[0.0, 1.0], [1.0, 0.0], [0.0, 0.0, 1.0]]
    # returns-to-go: (1, 1), (1, 0), (1, 1, 1)
    out = leave_one_out_advantages(group)
    assert out[0] == pytest.approx([0.0, 1 - 0.5])
    assert out[1] == pytest.approx([0.0, 0 - 1.0])
    # turn 2 exists only in rollout 2: it inherits that rollout's turn-0 advantage
    assert out[2] == pytest.approx([0.0, 1 - 0.5, 0.0])
    assert leave_one_out_advantages([[2.0]]) == [[0.0]]


async def test_turn_rewards_from_a_real_episode() -> None:
    env = ColourEnv()
    await env.reset(Task(id="b", prompt="Pick a colour.", data={"colour": "blue"}))
    await env.step(Message(role="assistant", content=format_text_tool_call("hint", {})))
    await env.step(Message(role="assistant", content=format_text_tool_call("say", {"colour": "blue"})))
    assert env.trajectory is not None
    assert turn_rewards(env.trajectory) == pytest.approx([-0.1, 1.0])
    assert process_rewards(env.trajectory) == pytest.approx([-0.1, 0.0])
    assert gated_return(process_rewards(env.trajectory), env.trajectory.outcome_reward) == pytest.approx(0.9)
