"""The code env's episodes feed the calibration reward (a tag beside ``submit``) and VeRPO-style test credit."""

from __future__ import annotations

import json

import pytest

from agentgym import make
from agentgym.rewards import Calibration, Episode, group_test_credit
from agentgym.types import Message, ToolCall, Trajectory
from tests.code.test_forgery import ROOT

RIGHT = "import math\n\n\ndef root(x: float) -> float:\n    return math.sqrt(x)\n"
FLOAT_ONLY = "def root(x: float) -> float:\n    return 1.4142135623730951\n"  # passes the first two of three
NOTHING = "def root(x: float) -> float:\n    return 0\n"  # passes none


async def play(code: str, text: str) -> Trajectory:
    async with make("code", sandbox_backend="local") as env:
        await env.reset(ROOT)
        call = ToolCall(id="s", name="submit", arguments=json.dumps({"code": code}))
        assert (await env.step(Message(role="assistant", content=text, tool_calls=[call]))).terminated
        assert env.trajectory is not None
        return env.trajectory


def passed(episode: Episode) -> float:
    return float(episode.trajectory.outcome_reward == 1.0)


async def test_calibration_and_test_credit_on_real_code_episodes() -> None:
    right = await play(RIGHT, "<confidence>0.9</confidence>")
    partial = await play(FLOAT_ONLY, "<confidence>0.9</confidence>")
    wrong = await play(NOTHING, "no idea")
    calibration = Calibration(correct=passed)
    scores = [(await calibration.score(Episode(ROOT, t))).value for t in (right, partial, wrong)]
    assert scores == [pytest.approx(0.99), pytest.approx(0.19), 0.0]
    credit = group_test_credit([right, partial, wrong])
    assert credit[0] == pytest.approx(1.0) and credit[2] == 0.0
    # The partial submission passes only the tests the right one passes too, so they weigh less than
    # the one it fails: its credit is under its plain fraction of tests passed.
    fraction = sum(t["passed"] for t in partial.info["tests"]) / len(partial.info["tests"])
    assert 0.0 < credit[1] < fraction
