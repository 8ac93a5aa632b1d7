"""Format validity, ToolRL-style tool-call match and exact answers, on real env trajectories."""

from __future__ import annotations

import pytest

from agentgym.envs.toy.env import ColourEnv
from agentgym.errors import DataError
from agentgym.parsing import format_text_tool_call
from agentgym.rewards import (
    Episode,
    answer_format,
    exact_answer,
    format_valid,
    gold_answers,
    score_tool_calls,
    tool_call_match,
)
from agentgym.types import Message, Task, Trajectory, Turn

GOLD = [{"name": "say", "arguments": {"colour": "blue"}}]
TASK = Task(id="b", prompt="Pick a colour.", data={"colour": "blue", "gold_calls": GOLD, "answer": "Blue"})


async def play(*actions: str) -> Episode:
    env = ColourEnv()
    await env.reset(TASK)
    for text in actions:
        await env.step(Message(role="assistant", content=text))
    assert env.trajectory is not None
    return Episode(task=TASK, trajectory=env.trajectory)


async def test_format_valid_on_real_episodes() -> None:
    good = await play(format_text_tool_call("say", {"colour": "red"}))
    assert format_valid(good).value == 1.0
    broken = await play("<tool_call>{not json</tool_call>", format_text_tool_call("say", {"colour": "red"}))
    reward = format_valid(broken)
    assert reward.value == 0.0 and reward.info["format_errors"] == ["malformed_json"]
    unknown = await play(format_text_tool_call("shout", {}), format_text_tool_call("say", {"colour": "red"}))
    assert format_valid(unknown).value == 0.0
    assert format_valid(Episode(TASK, Trajectory(task_id="b", env="toy"))).value == 0.0


async def test_tool_call_match_scores_name_keys_and_values() -> None:
    exact = tool_call_match(await play(format_text_tool_call("say", {"colour": "blue"})))
    assert exact.value == 1.0
    wrong_value = tool_call_match(await play(format_text_tool_call("say", {"colour": "red"})))
    assert wrong_value.components == {"name": 1.0, "keys": 1.0, "values": 0.0}
    assert wrong_value.value == pytest.approx(2 / 3)
    wrong_tool = tool_call_match(await play(format_text_tool_call("hint", {}),
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
    assert exact_answer(Episode(TASK, traj)) == 1.0
    assert answer_format(r"the \w+\.")(Episode(TASK, traj)) == 1.0
    assert answer_format(r"\d+")(Episode(TASK, traj)) == 0.0
    recorded = traj.model_copy(update={"final_answer": "Blue!"})  # the env's final answer wins over the last text
    assert exact_answer(Episode(TASK, recorded)) == 1.0
    assert answer_format(r"the \w+\.")(Episode(TASK, recorded)) == 0.0


def test_one_gold_answer_field_and_a_clear_error_without_it() -> None:
    assert gold_answers(TASK) == ["Blue"]
    assert gold_answers(Task(id="l", prompt="q", data={"answer": ["Denver Broncos", 50]})) == ["Denver Broncos", "50"]
    with pytest.raises(DataError, match="no gold answer"):
        exact_answer(Episode(Task(id="x", prompt="q"), Trajectory(task_id="x", env="toy")))
    with pytest.raises(DataError, match="it has data\\['answers'\\]"):
        gold_answers(Task(id="y", prompt="q", data={"answers": ["Blue"]}))
