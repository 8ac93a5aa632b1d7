"""An MCP env's episodes carry a stated confidence the calibration reward reads: a tag in the text answer."""

from __future__ import annotations

import pytest

from agentgym.mcp import MCPEnv
from agentgym.rewards import Calibration, Episode, exact_answer, stated_confidence
from agentgym.types import Message
from tests.mcp.test_mcp import CALC, TASK, calls


async def test_the_calc_env_answer_with_a_confidence_tag_is_scored() -> None:
    env = MCPEnv(servers=[CALC], tasks=[TASK], sandbox_backend="local")
    scores = []
    try:
        for answer in ("5 <confidence>0.8</confidence>", "6 <confidence>0.8</confidence>"):
            await env.reset(TASK)
            await env.step(calls(("add", {"a": 2, "b": 3})))
            assert (await env.step(Message(role="assistant", content=answer))).terminated
            assert env.trajectory is not None and stated_confidence(env.trajectory) == 0.8
            # exact_answer reads the answer without its tag, so "5 <confidence>..." is right
            scores.append((await Calibration(correct=exact_answer).score(Episode(TASK, env.trajectory))).value)
    finally:
        await env.close()
    assert scores == [pytest.approx(0.96), pytest.approx(0.36)]
