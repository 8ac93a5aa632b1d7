"""Feedback after a final answer, for any env: unary "try again" (UFO) and language feedback from an LLM (MINT).

Both are :class:`~agentgym.env.Feedback` objects: give one to any env and a wrong final answer no
longer ends the episode; the model reads the feedback and answers again, up to ``tries`` answers in
all (and within the env's turn limit)::

    env = agentgym.make("agentgym/code-v0", feedback=TryAgain(tries=3))
    env.feedback = LanguageFeedback("openai/gpt-4o-mini", tries=3)     # or on an env you already have

Every answer's score is kept in ``trajectory.attempts``; the episode's outcome reward is the last
one's. They hold no per-episode state, so one object can serve every env of a run.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentgym.policies.base import Policy
from agentgym.types import Message, Reward

if TYPE_CHECKING:
    from agentgym.env import Env


def _wants_another_try(env: Env, reward: Reward, tries: int, threshold: float) -> bool:
    assert env.trajectory is not None
    return reward.value < threshold and len(env.trajectory.attempts) < tries


def _check_tries(tries: int) -> None:
    if tries < 1:
        raise ValueError(f"tries must be at least 1, got {tries}")


class TryAgain:
    """Unary feedback: after a final answer scoring below ``threshold``, say only that it is wrong.

    Args:
        tries: Final answers allowed in all; ``tries=1`` is the plain env.
        message: What the model is told after a wrong answer.
        threshold: The score that counts as right (1.0: success).
    """

    def __init__(self, tries: int = 3, *, message: str = "Your answer is wrong. Try again.",
                 threshold: float = 1.0) -> None:
        _check_tries(tries)
        self.tries = tries
        self.message = message
        self.threshold = threshold

    async def review(self, env: Env, reward: Reward) -> list[Message] | None:
        if not _wants_another_try(env, reward, self.tries, self.threshold):
            return None
        return [Message(role="user", content=self.message)]


FEEDBACK_PROMPT = """You are a teacher watching a student solve a task with tools. The student's final \
answer was graded wrong. In at most three sentences, tell the student what is wrong and how to fix it. \
Be concrete; do not write the solution for them."""


class LanguageFeedback:
    """Language feedback: after a wrong final answer, an LLM (or any policy) writes what to fix.

    The feedback model reads the task, the student's final answer and what the env lets the model know
    of the verifier's report (:meth:`~agentgym.env.Env.feedback_report`: the score, its components and
    the env's summary, such as which tests failed and with which kind of error), as MINT's simulated
    teacher does. It never reads the rest of the verifier's ``info`` (a code task's hidden tests and
    their expected values), which a teacher that quotes what it reads would pass on to the model,
    unless the env's author names those keys in ``revealed_info``. Its tokens, cost and retries are
    recorded under the ``"feedback"`` role (``trajectory.usage_by_role``).

    Args:
        model: A litellm model string (a :class:`~agentgym.policies.LiteLLMPolicy` is made from it
            with ``**options``), or any :class:`~agentgym.policies.Policy`.
        tries: Final answers allowed in all.
        threshold: The score that counts as right.
        prompt: The feedback model's instructions.
        report_chars: How much of the verifier's report the feedback model sees.
        **options: For :class:`~agentgym.policies.LiteLLMPolicy` (``api_base``, ``temperature``...).
    """

    role = "feedback"

    def __init__(self, model: str | Policy, *, tries: int = 3, threshold: float = 1.0, prompt: str = FEEDBACK_PROMPT,
                 report_chars: int = 4000, **options: Any) -> None:
        _check_tries(tries)
        from agentgym.policies.litellm import as_policy

        self.policy: Policy = as_policy(model, **options)
        self.tries = tries
        self.threshold = threshold
        self.prompt = prompt
        self.report_chars = report_chars

    async def review(self, env: Env, reward: Reward) -> list[Message] | None:
        if not _wants_another_try(env, reward, self.tries, self.threshold):
            return None
        assert env.task is not None
        report = json.dumps(env.feedback_report(reward), default=str)[: self.report_chars]
        question = (f"Task:\n{env.task.prompt}\n\nStudent's final answer:\n{env.final_answer}\n\n"
                    f"Grader's report:\n{report}")
        messages = [Message(role="system", content=self.prompt), Message(role="user", content=question)]
        reply = await self.policy.act(messages, [], task=env.task)
        env.record_usage(self.role, reply.usage)
        return [Message(role="user", content=f"Your answer is wrong. Feedback: {reply.message.text.strip()}")]
