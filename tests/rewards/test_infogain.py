"""Information gain per turn: the turn that brings the answer gets the credit; repeats earn nothing."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from agentgym.errors import PolicyError
from agentgym.rewards import Episode, GoldScorer, InformationGain, gold_scorer_for
from agentgym.types import Message, Task, Trajectory, Turn

TASK = Task(id="q", prompt="Capital of France?", data={"answer": "Paris"})


class Counting:
    """A farmable belief: 0.1 plus 0.3 for every message that mentions the answer, at most 1."""

    async def probability(self, messages: Sequence[Message], answer: str) -> float:
        return min(1.0, 0.1 + 0.3 * sum(answer in m.text for m in messages))


def turn(action: str, observation: str) -> Turn:
    return Turn(action=Message(role="assistant", content=action),
                observation=[Message(role="tool", content=observation, tool_call_id="c")])


def episode(*turns: Turn) -> Episode:
    opening = [Message(role="user", content=TASK.prompt)]
    return Episode(TASK, Trajectory(task_id="q", env="qa", messages=opening, turns=list(turns)))


async def test_the_decisive_turn_gets_the_gain() -> None:
    gain = InformationGain(Counting())
    assert isinstance(gain.scorer, GoldScorer)
    e = episode(turn("search france", "no results"), turn("open page", "The capital is Paris."),
                turn("answer Paris", "done"))
    assert await gain.gains(e) == pytest.approx([0.0, 0.3, 0.3])
    reward = await gain.score(e)
    assert reward.value == pytest.approx(0.6)
    assert reward.components == pytest.approx({"p_before": 0.1, "p_after": 0.7, "repeated_turns": 0.0})


async def test_repeating_a_turn_farms_nothing() -> None:
    gain = InformationGain(Counting())
    once = episode(turn("open page", "The capital is Paris."))
    farmed = episode(*[turn("open page", "The capital is Paris.")] * 3)
    assert await gain.gains(farmed) == pytest.approx([0.3, 0.0, 0.0])
    assert (await gain.score(farmed)).value == (await gain.score(once)).value
    assert (await gain.score(farmed)).components["repeated_turns"] == 2.0


async def test_no_turns_no_gain() -> None:
    assert (await InformationGain(Counting()).score(episode())).value == 0.0


def test_models_without_log_probs_of_a_given_answer_are_refused_by_name() -> None:
    for model in ("openai/gpt-4o-mini", "local:qwen.gguf"):
        with pytest.raises(PolicyError, match=f"under {model}") as caught:
            gold_scorer_for(model)
        assert caught.value.fatal and "TransformersGoldScorer" in str(caught.value)
