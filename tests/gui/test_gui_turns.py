"""A GUI turn is bounded and graded, on both backends: one message of many calls ends inside a 30 s turn
timeout, and quitting before the page's verdict scores MiniWoB's failure value."""

import asyncio
import json
import time

import pytest

from agentgym.envs.gui import GUIEnv
from agentgym.types import Message, ToolCall, assistant

pytestmark = pytest.mark.docker


def calls(*pairs: tuple[str, dict]) -> Message:
    return assistant(tool_calls=[ToolCall(id=f"c{i}", name=name, arguments=json.dumps(arguments))
                                 for i, (name, arguments) in enumerate(pairs)])


async def test_twelve_long_types_in_one_message_end_inside_a_30_s_turn_and_are_graded(backend):
    async with GUIEnv(names="enter-text", observation="dom", sandbox_backend=backend) as env:
        await env.reset(env.tasks()[0], seed=1)
        started = time.monotonic()
        async with asyncio.timeout(30):
            result = await env.step(calls(("click", {"x": 80, "y": 80}), *[("type", {"text": "z" * 500})] * 12))
        seconds = time.monotonic() - started
        assert len(result.observation) == 14  # a tool message per call, and the page
        refused = [m.text for m in result.observation if m.role == "tool" and "not run" in m.text]
        assert refused and result.info["tool_errors"].count("turn_limit") == len(refused)
        ran = 13 - len(refused)
        assert ran <= GUIEnv.max_calls_per_turn and seconds < 30
        print(f"\n{backend}: {ran} of 13 calls ran in {seconds:.1f} s; refused: {refused[0]}")
        end = await env.step(calls(("finish", {})))
        assert end.terminated and env.trajectory.outcome == "terminated"
        assert env.trajectory.outcome_reward == -1.0  # the page never judged it: a failure, not 0


async def test_finish_before_the_verdict_scores_the_failure_value_unless_the_lenient_option_is_set(backend):
    for unjudged, expected in ((None, -1.0), (0.0, 0.0)):
        kwargs = {} if unjudged is None else {"unjudged_reward": unjudged}
        async with GUIEnv(names="click-button", observation="dom", sandbox_backend=backend, **kwargs) as env:
            await env.reset(env.tasks()[0], seed=3)
            result = await env.step(calls(("finish", {})))
            assert result.terminated and env.trajectory.outcome_reward == expected
            assert env.trajectory.reward_components["done"] == 0.0
            assert env.trajectory.info["miniwob_reason"] == "the page never judged the episode"
