"""Format validity, ToolRL-style tool-call match and exact answers, on real env trajectories."""

from __future__ import annotations

import pytest

from agentgym.envs.toy.env import ColourEnv
from agentgym.parsing import format_text_tool_call
from agentgym.rewards import answer_format, exact_answer, format_valid, score_tool_calls, tool_call_match
from agentgym.types import Message, Task, Trajectory, Turn

GOLD = [{"name": "say", "arguments": {"colour": "blue"}}]
TASK = Task(id="b", prompt="Pick a colour.", data={"colour": "blue", "gold_calls": GOLD, "answer": "Blue"})


async def play(*actions: str) -> Trajectory:
    env = ColourEnv()
    await env.reset(TASK)
    for text in actions:
        await env.step(Message(role="assistant", content=text))
    assert env.trajectory is not None
    return env.trajectory


async def test_format_valid_on_real_episodes() -> None:
    good = await play(format_text_tool_call("say", {"colour": "red"}))
    assert format_valid(TASK, good).value == 1.0
    broken = await play("<tool_call>{not json</tool_call>", format_text_tool_call("say", {"colour": "red"}))
    reward = format_valid(TASK, broken)
    assert reward.value == 0.0 and reward.info["format_errors"] == ["malformed_json"]
    unknown = await play(format_text_tool_call("shout", {}), format_text_tool_call("say", {"colour": "red"}))
    assert format_valid(TASK, unknown).value == 0.0
    assert format_valid(TASK, Trajectory(task_id="b", env="toy")).value == 0.0


async def test_tool_call_match_scores_name_keys_and_values() -> None:
    exact = tool_call_match(TASK, await play(format_text_tool_call("say", {"colour": "blue"})))
    assert exact.value == 1.0
    wrong_value = tool_call_match(TASK, await play(format_text_tool_call("say", {"colour": "red"})))
    assert wrong_value.components == {"name": 1.0, "keys": 1.0, "values": 0.0}
    assert wrong_value.value == pytest.approx(2 / 3)
    wrong_tool = tool_call_match(TASK, await play(format_text_tool_call("hint", {}),
                                                  format_text_tool_call("say", {"colour": "blue"})))
    assert wrong_tool.components["name"] == pytest.approx(0.5)  # {hint, say} vs {say}
    assert wrong_tool.value == pytest.approx((0.5 + 1 + 1) / 3)


def test_score_tool_calls_edge_cases() -> None:
    assert score_tool_calls([], []).value == 1.0
    assert score_tool_calls([{"name": "x", "arguments": {}}], []).value == 0.0
    assert score_tool_calls([], GOLD).value == 0.0
    extra_key = score_tool_calls([{"name": "say", "arguments": {"colour": "blue", "loud": True}}], GOLD)
    assert extra_key.components == {"name": 1.0, "keys": 0.5, "values": 1.0}


def test_exact_answer_and_answer_format() -> None:
    traj = Trajectory(task_id="b", env="toy", turns=[
        Turn(action=Message(role="assistant", content="<think>hmm</think>\nthe blue.")),
    ])
    assert exact_answer(TASK, traj) == 1.0
    assert answer_format(r"the \w+\.")(TASK, traj) == 1.0
    assert answer_format(r"\d+")(TASK, traj) == 0.0
    with pytest.raises(KeyError):
        exact_answer(Task(id="x", prompt="q"), traj)
