"""Feedback hooks on the code env: success rises with tries for a policy that improves on feedback."""

from __future__ import annotations

import json
from typing import Any

from agentgym import Message, Reply, Task, ToolSpec
from agentgym.envs.code.env import CodeEnv
from agentgym.evaluation import evaluate
from agentgym.feedback import LanguageFeedback, TryAgain
from agentgym.parsing import native_tool_call
from agentgym.rollout import rollout
from agentgym.testing import FakeOpenAI, completion

LIMIT = 4


class LearnsFromFeedback:
    """Submits a stub; once told it is wrong, runs the real solution in the session, then submits it."""

    name = "learner"

    def __init__(self, cue: str = "wrong") -> None:
        self.cue = cue
        self.feedback: list[str] = []

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        turn = sum(m.role == "assistant" for m in messages)
        told = [m.text for m in messages if m.role == "user" and self.cue in m.text]
        solution = task.data["prompt"] + task.data["canonical_solution"]
        if not told:
            call = native_tool_call(f"c{turn}", "submit", {"code": task.data["prompt"] + "    return None\n"})
        elif messages[-1].role == "user":  # just told: try the fix in the session first
            self.feedback.append(told[-1])
            call = native_tool_call(f"c{turn}", "python", {"code": solution + "\nprint('defined')"})
        else:
            call = native_tool_call(f"c{turn}", "submit", {"code": solution})
        return Reply(message=Message(role="assistant", tool_calls=[call]))


async def run(policy: Any, **env_kwargs: Any) -> Any:
    return await evaluate("code", policy, limit=LIMIT, progress=False,
                          env_kwargs={"sandbox_backend": "local", **env_kwargs})


async def test_success_rises_with_tries() -> None:
    once, _ = await run(LearnsFromFeedback(), feedback=TryAgain(tries=1))
    thrice, runs = await run(LearnsFromFeedback(), feedback=TryAgain(tries=3))
    assert (once.successes, thrice.successes) == (0, LIMIT)
    for trajectory in runs:
        assert trajectory.attempts == [0.0, 1.0] and trajectory.outcome == "terminated"
        assert [t.action.tool_calls[0].name for t in trajectory.turns] == ["submit", "python", "submit"]
        assert trajectory.turns[0].observation[-1].text == "Your answer is wrong. Try again."
        assert trajectory.turns[1].observation[0].text.strip() == "defined"  # a live session after the retry


class NeverLearns:
    name = "stubborn"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        call = native_tool_call("c", "submit", {"code": task.data["prompt"] + "    return None\n"})
        return Reply(message=Message(role="assistant", tool_calls=[call]))


async def test_tries_and_the_turn_limit_bound_the_retries() -> None:
    summary, runs = await run(NeverLearns(), feedback=TryAgain(tries=3))
    assert summary.successes == 0 and all(t.attempts == [0.0, 0.0, 0.0] for t in runs)
    _, short = await run(NeverLearns(), feedback=TryAgain(tries=3), max_turns=2)
    assert all(t.attempts == [0.0, 0.0] and t.outcome == "terminated" for t in short)


def teacher(request: dict[str, Any]) -> dict[str, Any]:
    """A feedback model that reads the grader's report and says which test fails first, and how."""
    question = request["messages"][-1]["content"]
    report = json.loads(question.split("Grader's report:\n", 1)[1])
    failing = next(i for i, t in enumerate(report["details"]["tests"]) if not t["passed"])
    error = report["details"]["tests"][failing]["error"]
    return completion(f"The function returns None; test {failing + 1} fails with {error}", prompt_tokens=100,
                      completion_tokens=12)


async def test_language_feedback_from_an_llm_reaches_the_model_and_its_cost_is_counted_apart() -> None:
    learner = LearnsFromFeedback(cue="Feedback:")
    with FakeOpenAI(teacher, faults=["500"]) as server:
        feedback = LanguageFeedback("openai/fake-teacher", tries=2, api_base=server.base_url, api_key="sk-test",
                                    backoff=0.01)
        summary, runs = await run(learner, feedback=feedback)
    assert summary.successes == LIMIT
    assert all(m.startswith("Your answer is wrong. Feedback: The function returns None; test 1 fails with ")
               for m in learner.feedback) and len(learner.feedback) == LIMIT
    asked = server.requests[0]["messages"][-1]["content"]
    assert "Student's final answer:\n" in asked and "    return None\n\n\nGrader's report:" in asked
    assert summary.usage_by_role["feedback"].model_dump() == {
        "prompt_tokens": 100 * LIMIT, "completion_tokens": 12 * LIMIT, "cost_usd": 0.0, "retries": 1,
        "unpriced_calls": LIMIT,  # a fake model litellm has no price for: its cost is unknown, not free
    }
    assert summary.prompt_tokens == 0  # the learner is scripted: the teacher's tokens are not the agent's
    assert all(t.usage_by_role["feedback"].prompt_tokens == 100 for t in runs)


def echo(request: dict[str, Any]) -> dict[str, Any]:
    """A teacher that quotes everything it was given: what it reads, the policy reads."""
    return completion(request["messages"][-1]["content"])


SECRET = "987654321"
HIDDEN = Task(id="hidden", prompt="Write f(x).", data={
    "task_id": "hidden", "prompt": "def f(x):\n    \"\"\"A secret function of x.\"\"\"\n", "entry_point": "f",
    "test": f"def check(candidate):\n    assert candidate(1) == {SECRET}, 'expected {SECRET}'\n",
    "canonical_solution": f"    return {SECRET}\n"})


class Revealing(CodeEnv):
    revealed_info = ("tests",)


async def feedback_seen(env: CodeEnv, task: Task) -> str:
    """What a policy that submits a stub reads after an echoing teacher's feedback on it."""
    learner = LearnsFromFeedback(cue="Feedback:")
    with FakeOpenAI(echo) as server:
        env.feedback = LanguageFeedback("openai/fake-teacher", tries=2, api_base=server.base_url, api_key="sk-test")
        async with env:
            await rollout(env, learner, task)
    assert len(learner.feedback) == 1
    return learner.feedback[0]


async def test_hidden_tests_never_reach_the_policy_through_a_teacher_unless_the_env_reveals_them() -> None:
    seen = await feedback_seen(CodeEnv(sandbox_backend="local"), HIDDEN)
    assert '"passed": false' in seen and '"error": "AssertionError"' in seen  # outcomes, and the kind of failure
    assert SECRET not in seen and "assert candidate" not in seen
    opted_in = await feedback_seen(Revealing(sandbox_backend="local"), HIDDEN)
    assert f"assert candidate(1) == {SECRET}" in opted_in
    messages = await feedback_seen(CodeEnv(sandbox_backend="local"),
                                   HIDDEN.model_copy(update={"data": {**HIDDEN.data, "feedback_messages": True}}))
    assert f"AssertionError: expected {SECRET}" in messages and "assert candidate" not in messages
