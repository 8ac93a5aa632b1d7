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


async def test_a_server_that_echoes_prompt_log_probs_scores_the_gain() -> None:
    import math
    import re

    from aiohttp import web

    from agentgym.rewards import CompletionsGoldScorer

    seen: list[dict[str, object]] = []

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        prompt = str(body["prompt"])
        if "nologprobs" in prompt:
            return web.json_response({"choices": [{"text": prompt, "logprobs": None}]})
        tokens = [(m.start(), m.group()) for m in re.finditer(r"\S+\s*", prompt)]
        # A model that believes "Paris" (the final token) once the conversation mentions it.
        believes = "Paris" in prompt[: tokens[-1][0]]
        values = [None] + [math.log(0.8 if believes else 0.2)] * (len(tokens) - 1)
        return web.json_response({"choices": [{"text": prompt, "logprobs": {
            "tokens": [t for _, t in tokens], "text_offset": [o for o, _ in tokens], "token_logprobs": values}}]})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        scorer = CompletionsGoldScorer("m", api_base=f"http://127.0.0.1:{port}/v1")
        e = episode(turn("search", "nothing"), turn("open page", "The capital is Paris."))
        assert await InformationGain(scorer).gains(e) == pytest.approx([0.0, 0.6])
        assert seen[0]["echo"] is True and seen[0]["max_tokens"] == 0
        assert str(seen[0]["prompt"]).endswith("assistant: Paris")
        with pytest.raises(PolicyError, match="returned no log-probs"):
            await scorer.probability([Message(role="user", content="nologprobs")], "Paris")
    finally:
        await runner.cleanup()
