"""Tool efficiency and cost: right values on known episodes, and doing nothing never pays."""

from __future__ import annotations

import pytest

from agentgym.envs.toy.env import ColourEnv
from agentgym.parsing import format_text_tool_call
from agentgym.rewards import Cost, Episode, Rubric, ToolEfficiency, tool_calls_made
from agentgym.types import Message, Task, Usage

TASK = Task(id="b", prompt="Pick a colour.", data={"colour": "blue"})


def said_blue(episode: Episode) -> float:
    return float(episode.final_answer == "blue")


async def play(*actions: str, usage: Usage | None = None) -> Episode:
    env = ColourEnv()
    await env.reset(TASK)
    for text in actions:
        await env.step(Message(role="assistant", content=text))
    assert env.trajectory is not None
    if usage is not None:
        env.trajectory.turns[0].usage = usage
    return Episode(task=TASK, trajectory=env.trajectory)


HINT, BLUE, RED = (format_text_tool_call("hint", {}), format_text_tool_call("say", {"colour": "blue"}),
                   format_text_tool_call("say", {"colour": "red"}))


async def test_tool_efficiency_values_on_known_episodes() -> None:
    efficiency = ToolEfficiency(correct=said_blue, budget=4)
    direct, hinted = await play(BLUE), await play(HINT, BLUE)
    assert tool_calls_made(direct.trajectory) == 1 and tool_calls_made(hinted.trajectory) == 2
    assert (await efficiency.score(direct)).value == pytest.approx(0.75)
    assert (await efficiency.score(hinted)).value == pytest.approx(0.5)
    assert (await efficiency.score(await play(HINT, HINT, BLUE))).value == pytest.approx(0.25)


async def test_tool_efficiency_pays_nothing_for_doing_nothing_or_being_wrong() -> None:
    efficiency = ToolEfficiency(correct=said_blue, budget=4)
    nothing = await play("I will not call anything.")  # text ends the episode: no calls, no answer
    assert tool_calls_made(nothing.trajectory) == 0
    assert (await efficiency.score(nothing)).value == 0.0
    assert (await efficiency.score(await play(RED))).value == 0.0  # one cheap wrong call
    with pytest.raises(ValueError, match="positive"):
        ToolEfficiency(correct=said_blue, budget=0)


async def test_cost_scales_by_budget_and_is_gated() -> None:
    cost = Cost(correct=said_blue, tokens=1000, usd=0.02)
    cheap = await play(BLUE, usage=Usage(prompt_tokens=150, completion_tokens=50, cost_usd=0.005))
    reward = await cost.score(cheap)
    assert reward.value == pytest.approx((1 - 200 / 1000) * (1 - 0.005 / 0.02))
    assert reward.components["tokens"] == 200
    over = await play(BLUE, usage=Usage(prompt_tokens=2000, cost_usd=0.001))
    assert (await cost.score(over)).value == 0.0
    # The cheapest dodge: spend nothing, answer nothing (or wrongly).
    assert (await cost.score(await play("nothing", usage=Usage()))).value == 0.0
    assert (await cost.score(await play(RED, usage=Usage()))).value == 0.0
    with pytest.raises(ValueError, match="needs a budget"):
        Cost(correct=said_blue)


async def test_they_compose_in_a_rubric_with_named_components() -> None:
    rubric = Rubric({"correct": said_blue, "efficiency": ToolEfficiency(correct=said_blue, budget=2)},
                    weights={"efficiency": 0.5})
    reward = await rubric.score(await play(BLUE))
    assert reward.value == pytest.approx(1.0 + 0.5 * 0.5)
    assert reward.components["efficiency"] == 0.5 and reward.components["efficiency.calls"] == 1.0
