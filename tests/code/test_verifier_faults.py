"""Verifier sandboxes that break mid-grading. The grader's breaking (alone, or with the submission's, as
when their engine restarts) is an error to replay, never the submission's failed grade: the episode
raises ``SandboxError``, which the rollout records as an ``error`` outcome that ``--resume`` runs again.
The submission's sandbox breaking alone is graded: where code shares the supervisor's uid it could have
done so itself, to dodge a failing grade."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentgym import Message, StepResult, ToolCall, make
from agentgym.envs.code.tasks import load_tasks
from agentgym.errors import SandboxError
from agentgym.sandboxes import Sandbox, acquire

TASK = next(t for t in load_tasks() if t.id == "HumanEval/0")
# Right, but slow: the first call waits long enough for the test to break a sandbox under it.
SLOW_RIGHT = """import time
calls = []
def has_close_elements(numbers, threshold):
    calls.append(1)
    if len(calls) == 1:
        time.sleep(2)
    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])
"""


class Recording:
    """Hands out sandboxes of the shared pool and keeps them in the order they were asked for, so the
    test knows which is the submission's (asked first) and which the grader's."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.asked: list[asyncio.Future[Sandbox]] = []

    async def acquire(self) -> Sandbox:
        lent: asyncio.Future[Sandbox] = asyncio.get_running_loop().create_future()
        self.asked.append(lent)
        sandbox = await acquire(self.backend)
        lent.set_result(sandbox)
        return sandbox


async def grade_while_breaking(backend: str, broken: list[str], stagger: float = 0.0) -> asyncio.Future[StepResult]:
    """Submit SLOW_RIGHT and destroy the ``broken`` verifier sandboxes during its first call, ``stagger``
    seconds apart; the step."""
    provider = Recording(backend)
    async with make("code", sandbox_backend=provider) as env:
        await env.reset(TASK)
        submit = Message(role="assistant", tool_calls=[ToolCall(
            id="s", name="submit", arguments=json.dumps({"code": SLOW_RIGHT}))])
        step = asyncio.ensure_future(env.step(submit))
        while len(provider.asked) < 3:  # the episode's own sandbox, then the verifier's two
            await asyncio.sleep(0.01)
        victims = [await provider.asked[1 if role == "submission" else 2] for role in broken]
        await asyncio.sleep(1.0)  # inside the submission's slow first call
        if stagger:
            for victim in victims:
                await victim.destroy()
                await asyncio.sleep(stagger)
        else:
            await asyncio.gather(*(victim.destroy() for victim in victims))
        await asyncio.wait([step])
        return step


@pytest.mark.parametrize("broken", [["grader"], ["submission", "grader"]])
async def test_a_grader_sandbox_killed_mid_grading_is_an_error_not_a_grade(backend, broken):
    step = await grade_while_breaking(backend, broken)
    with pytest.raises(SandboxError):
        step.result()


async def test_a_grader_that_goes_just_after_the_submission_is_an_error_not_a_grade(backend):
    # an engine going down stops its containers close together, not at once: the grader may finish
    # grading the submission's failures before it goes
    step = await grade_while_breaking(backend, ["submission", "grader"], stagger=0.5)
    with pytest.raises(SandboxError):
        step.result()


async def test_the_submission_sandbox_killed_alone_is_graded_with_the_reason(backend):
    result = (await grade_while_breaking(backend, ["submission"])).result()
    assert result.terminated and result.reward == 0.0
    # during its slow first call, or while loading on a slow machine: graded either way, with the reason
    assert "the submission's sandbox failed" in json.dumps(result.info)
