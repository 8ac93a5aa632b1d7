"""An LLM judge through litellm: a rubric prompt in, a structured JSON verdict out, with retries.

    judge = LLMJudge("openai/gpt-4o-mini", rubric="The answer must state the correct number.")
    reward = await judge.score(episode)   # Reward(value=1.0, components={"judge": 1.0}, ...)

The judge sees the task prompt, the reference answer when ``task.data["answer"]`` holds one (a
value or a list), and the model's final answer, and must reply with ``{"reasoning": ..., "score": <0..1>}``.
A reply that is not that JSON is asked again (``max_retries``); API errors are retried by litellm. A judge that still
fails scores 0 with ``judge_error`` set in the components, so a broken judge shows up in the run's
metrics instead of crashing the batch. Judges are easy to fool: run
:func:`~agentgym.rewards.probes.probe_judge` before trusting one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agentgym.llm import litellm_module
from agentgym.rewards.verifier import Episode, final_text
from agentgym.types import Reward, Task, Trajectory

SYSTEM_PROMPT = """You are a strict grader. You read a question, a reference answer if one is given, \
and a response. You grade only the final answer in the response against the rubric. Responses that \
restate the question, announce a method without carrying it out, or give no answer earn 0.
Reply with only a JSON object: {"reasoning": "<one or two sentences>", "score": <a number from 0 to 1>}"""

DEFAULT_RUBRIC = "Score 1 if the response's final answer is correct and complete, 0 if wrong or missing."

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_verdict(text: str) -> tuple[float, str]:
    """Read ``{"score": ..., "reasoning": ...}`` from a judge's reply (a JSON object, possibly fenced).

    Raises:
        ValueError: no JSON object, or no numeric score in [0, 1].
    """
    match = _JSON_OBJECT.search(text or "")
    if match is None:
        raise ValueError("the judge's reply holds no JSON object")
    data = json.loads(match.group(0))
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= float(score) <= 1.0:
        raise ValueError(f"the judge's score must be a number in [0, 1], got {score!r}")
    return float(score), str(data.get("reasoning", ""))


class LLMJudge:
    """A verifier that asks an LLM to grade the final answer against a rubric.

    Args:
        model: A litellm model name, e.g. ``"openai/gpt-4o-mini"``.
        rubric: What earns credit, in words; it goes into the prompt.
        api_base: An OpenAI-compatible endpoint (a local server, a proxy).
        api_key: Passed to litellm; by default litellm reads the provider's environment variable.
        max_retries: Extra attempts after a reply that is not a valid verdict; litellm also retries
            API errors (429, 5xx) this many times.
        timeout: Seconds per request.
        answer: Extracts the answer to grade from a trajectory; :func:`final_text` by default.
        name: The component name the score is recorded under.
    """

    def __init__(
        self,
        model: str,
        *,
        rubric: str = DEFAULT_RUBRIC,
        api_base: str | None = None,
        api_key: str | None = None,
        max_retries: int = 2,
        timeout: float = 60.0,
        answer: Callable[[Trajectory], str] = final_text,
        name: str = "judge",
    ) -> None:
        self.model = model
        self.rubric = rubric
        self.api_base = api_base
        self.api_key = api_key
        self.max_retries = max_retries
        self.timeout = timeout
        self.answer = answer
        self.name = name

    def messages(self, task: Task, answer: str) -> list[dict[str, str]]:
        """The grading conversation for one answer."""
        parts = [f"Rubric: {self.rubric}", f"Question:\n{task.prompt}"]
        reference = task.data.get("answer")
        if reference is not None:
            accepted = "; ".join(map(str, reference)) if isinstance(reference, list) else reference
            parts.append(f"Reference answer:\n{accepted}")
        parts.append(f"Response:\n<response>\n{answer}\n</response>")
        return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n\n".join(parts)}]

    async def score(self, episode: Episode) -> Reward:
        return await self.grade(episode.task, self.answer(episode.trajectory))

    async def grade(self, task: Task, answer: str) -> Reward:
        """Grade one answer to ``task`` directly (what :meth:`score` does after extracting the answer)."""
        litellm = litellm_module()
        kwargs: dict[str, Any] = {"api_base": self.api_base, "api_key": self.api_key}
        messages = self.messages(task, answer)
        problem = ""
        for attempt in range(self.max_retries + 1):
            try:
                response = await litellm.acompletion(
                    model=self.model, messages=messages, temperature=0.0, timeout=self.timeout,
                    num_retries=self.max_retries, response_format={"type": "json_object"},
                    **{k: v for k, v in kwargs.items() if v is not None},
                )
            except Exception as e:  # litellm raises many provider-specific types; all mean "no verdict"
                problem = f"{type(e).__name__}: {e}"
                break  # litellm has already retried the request itself
            text = response.choices[0].message.content or ""
            try:
                value, reasoning = parse_verdict(text)
            except ValueError as e:
                problem = f"{e}: {text[:200]!r}"
                continue
            return Reward(value=value, components={self.name: value},
                          info={"reasoning": reasoning, "attempts": attempt + 1})
        return Reward(value=0.0, components={self.name: 0.0, f"{self.name}_error": 1.0},
                      info={"error": problem, "attempts": attempt + 1})
