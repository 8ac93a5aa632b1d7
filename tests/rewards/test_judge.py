"""LLM judges over real HTTP: verdict parsing, retries, failures, and the probe suite telling a naive
judge from a strict one. The judges are responders behind FakeOpenAI that read the grading prompt the
way a model would and answer with a JSON verdict."""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

import pytest

from agentgym.rewards import HACKS, Episode, LLMJudge, parse_verdict, probe_judge
from agentgym.rewards.cli import add_commands
from agentgym.testing.fake_openai import FakeOpenAI, completion
from agentgym.types import Message, Task, Trajectory, Turn

pytest.importorskip("litellm")

TASK = Task(id="arith", prompt="What is 17 multiplied by 23?", data={"answer": "391"})


def _graded(request: dict[str, Any]) -> tuple[str, str]:
    """The reference answer and the response, read back out of the judge's prompt."""
    prompt = request["messages"][-1]["content"]
    reference = re.search(r"Reference answer:\n(.*?)\n\n", prompt, re.DOTALL)
    response = re.search(r"<response>\n(.*)\n</response>", prompt, re.DOTALL)
    assert reference and response
    return reference.group(1), response.group(1)


def verdict(score: float, reasoning: str) -> dict[str, Any]:
    return completion(json.dumps({"reasoning": reasoning, "score": score}))


def naive_judge(request: dict[str, Any]) -> dict[str, Any]:
    """Gives credit to anything that looks like the start of an answer: the judge the hacks fool."""
    _, response = _graded(request)
    return verdict(1.0 if response.strip() else 0.0, "The response engages with the question.")


def strict_judge(request: dict[str, Any]) -> dict[str, Any]:
    """Credits a response only if it states the reference answer."""
    reference, response = _graded(request)
    correct = re.search(rf"\b{re.escape(reference.lower())}\b", response.lower()) is not None
    reasoning = "States the reference answer." if correct else "No correct answer."
    return verdict(1.0 if correct else 0.0, reasoning)


def judge(server: FakeOpenAI, **kwargs: Any) -> LLMJudge:
    return LLMJudge("openai/fake-judge", api_base=server.base_url, api_key="test-key", **kwargs)


def answered(text: str) -> Trajectory:
    return Trajectory(task_id="arith", env="qa", turns=[Turn(action=Message(role="assistant", content=text))])


def test_parse_verdict() -> None:
    assert parse_verdict('```json\n{"score": 0.5, "reasoning": "half"}\n```') == (0.5, "half")
    for bad in ["no json here", '{"score": 2}', '{"score": "yes"}', '{"score": true}', "{not json}"]:
        with pytest.raises(ValueError):
            parse_verdict(bad)


async def test_judge_scores_from_a_real_verdict() -> None:
    with FakeOpenAI(strict_judge) as server:
        j = judge(server)
        right = await j.score(Episode(TASK, answered("<think>17*23</think>The answer is 391.")))
        wrong = await j.score(Episode(TASK, answered("The answer is 401.")))
    assert right.value == 1.0 and right.components == {"judge": 1.0}
    assert right.info["reasoning"] == "States the reference answer."
    assert wrong.value == 0.0
    sent = server.requests[0]
    assert sent["response_format"] == {"type": "json_object"} and sent["temperature"] == 0.0
    assert "<think>" not in sent["messages"][-1]["content"]


async def test_judge_asks_again_after_a_reply_that_is_not_a_verdict() -> None:
    replies = iter([completion("I think it's fine."), verdict(0.8, "ok")])
    with FakeOpenAI(lambda request: next(replies)) as server:
        reward = await judge(server, max_retries=2).score(Episode(TASK, answered("391")))
    assert reward.value == 0.8 and reward.info["attempts"] == 2


async def test_a_judge_that_never_answers_properly_scores_zero_and_says_so() -> None:
    with FakeOpenAI(lambda request: completion("no verdict")) as server:
        reward = await judge(server, max_retries=1).score(Episode(TASK, answered("391")))
    assert reward.value == 0.0
    assert reward.components == {"judge": 0.0, "judge_error": 1.0}
    assert "JSON" in reward.info["error"] and len(server.requests) == 2


async def test_judge_retries_rate_limits_and_server_errors() -> None:
    with FakeOpenAI(strict_judge, faults=["429", "500"]) as server:
        reward = await judge(server, max_retries=3).score(Episode(TASK, answered("391")))
    assert reward.value == 1.0
    assert server.served.get("429") == 1 and server.served.get("500") == 1


async def test_probes_measure_the_difference_between_naive_and_strict_judges() -> None:
    with FakeOpenAI(naive_judge) as naive_server, FakeOpenAI(strict_judge) as strict_server:
        naive = await probe_judge(judge(naive_server))
        strict = await probe_judge(judge(strict_server))
    # The naive judge accepts every hack but the empty answer: 5 of 6.
    assert naive.false_positive_rate == pytest.approx(5 / 6)
    assert naive.by_hack["empty"] == 0.0 and naive.by_hack["colon"] == 1.0
    assert strict.false_positive_rate == 0.0
    assert strict.control_pass_rate == 1.0 and naive.control_pass_rate == 1.0
    assert naive.n == strict.n == len(HACKS) * 4 and naive.errors == strict.errors == 0


def test_cli_judge_probe(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="agentgym")
    add_commands(parser.add_subparsers(dest="command"))
    with FakeOpenAI(naive_judge) as server:
        base = ["judge", "probe", "--model", "openai/fake-judge", "--api-base", server.base_url,
                "--api-key", "k"]
        args = parser.parse_args(base)
        assert args.func(args) == 0
        table = capsys.readouterr().out
        args = parser.parse_args([*base, "--json", "--max-fpr", "0.1"])
        assert args.func(args) == 1
        report = json.loads(capsys.readouterr().out)
    assert "false-positive rate 83%" in table and "thought_process" in table
    assert report["false_positive_rate"] == pytest.approx(5 / 6)


def test_agentgym_judge_probe_command(capsys: pytest.CaptureFixture[str]) -> None:
    from agentgym.cli import main

    with FakeOpenAI(strict_judge) as server:
        code = main(["judge", "probe", "--model", "openai/fake-judge", "--api-base", server.base_url,
                     "--api-key", "k", "--max-fpr", "0"])
    assert code == 0
    assert "false-positive rate 0% on 24 probes" in capsys.readouterr().out
