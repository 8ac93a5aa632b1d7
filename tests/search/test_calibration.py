"""The search env's episodes carry a stated confidence the calibration reward reads, with no change to the env."""

from __future__ import annotations

import json

import pytest

from agentgym import Message, ToolCall, make
from agentgym.envs.search.data import Corpus
from agentgym.rewards import Calibration, Episode, exact_answer
from tests.search.test_env import SUPER_BOWL, task_for


async def test_a_tag_beside_the_final_call_is_scored(corpus: Corpus) -> None:
    scores = []
    for answer, confidence in (("Denver Broncos", "0.8"), ("Carolina Panthers", "0.8"), ("Denver Broncos", None)):
        env = make("search")
        task = task_for(corpus, SUPER_BOWL)
        await env.reset(task)
        text = f"<confidence>{confidence}</confidence>" if confidence else "I think so."
        call = ToolCall(id="c", name="answer", arguments=json.dumps({"answer": answer}))
        await env.step(Message(role="assistant", content=text, tool_calls=[call]))
        assert env.trajectory is not None
        scores.append((await Calibration(correct=exact_answer).score(Episode(task, env.trajectory))).value)
        await env.close()
    assert scores == [pytest.approx(0.96), pytest.approx(0.36), 0.0]
