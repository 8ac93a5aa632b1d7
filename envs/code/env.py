"""The code-interpreter environment: a persistent Python session in a sandbox, then a submission."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from agentgym.env import Env
from agentgym.errors import ToolError
from agentgym.policies.base import Policy
from agentgym.tools import tool
from agentgym.types import Reward, Task

from .policies import PromptBaseline, ReferenceSolution
from .tasks import load_tasks
from .verifier import Report, verify

FENCED_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


@cache
def _humaneval() -> tuple[Task, ...]:
    return tuple(load_tasks())


class CodeEnv(Env):
    """Write a Python function: try code in a persistent session, then submit the function.

    Tasks are HumanEval's 164 problems by default, or any JSONL file with the same fields
    (``CodeEnv(tasks_path=...)``). The verifier (:mod:`~agentgym.envs.code.verifier`) runs the
    submission and the task's tests in two sandboxes of their own (never the model's), and only plain
    values cross between them, so nothing the submission does can decide its grade
    (docs/threat-model.md). The reward is 1 when
    every test passes, else 0, and ``trajectory.info["tests"]`` lists each test with its result.
    """

    max_turns = 8
    sandbox_image = "python"
    verify_timeout = 20.0
    """Seconds the submission and its tests may take in all; past it the tests left fail."""

    def __init__(self, *, tasks_path: str | Path | None = None, **kwargs: Any) -> None:
        """
        Args:
            tasks_path: A HumanEval-format JSONL file; HumanEval when omitted.
            **kwargs: ``max_turns`` and ``sandbox``, as for :class:`~agentgym.env.Env`.
        """
        super().__init__(**kwargs)
        self.tasks_path = tasks_path

    def tasks(self) -> Sequence[Task]:
        return load_tasks(self.tasks_path) if self.tasks_path else _humaneval()

    def system_prompt(self, task: Task) -> str:
        return "You are an expert Python programmer. Use the tools to test your code before submitting."

    @tool
    async def python(self, code: str) -> str:
        """Run Python code in a persistent session and return what it printed.

        Variables, functions and imports stay defined between calls.

        Args:
            code: The Python source to run.
        """
        result = await self.sandbox.run_python(code)
        parts = [result.output]
        if result.error:
            parts.append(result.error)
        if result.truncated:
            parts.append("[output truncated]")
        if result.timed_out:
            parts.append("[timed out: the session was restarted and earlier variables are gone]")
        elif result.restarted:
            parts.append("[the session crashed and was restarted; earlier variables are gone]")
        return "\n".join(p for p in parts if p) or "(no output)"

    @tool(final=True)
    async def submit(self, code: str) -> str:
        """Submit your solution and end the episode.

        Args:
            code: The complete function definition, with its signature and any imports it needs.
        """
        if not code.strip():
            raise ToolError("the submission is empty")
        self.final_answer = code
        return "Submitted."

    def answer_from_text(self, text: str) -> str:
        blocks = FENCED_CODE.findall(text)
        return blocks[-1] if blocks else text

    async def score(self) -> Reward:
        assert self.task is not None
        await self.release_sandbox()  # the session is done with; the tests get sandboxes of their own
        if not self.final_answer:
            return Reward(value=0.0, info={"tests": [], "verifier": "no submission"})
        report = await self.run_tests(self.task, self.final_answer)
        return Reward(
            value=1.0 if report.all_passed else 0.0,
            components={"tests_passed_fraction": report.passed / report.total if report.total else 0.0},
            info={"tests": report.tests, "verifier": report.error or "ok"},
        )

    async def run_tests(self, task: Task, solution: str) -> Report:
        """Run ``task``'s tests on ``solution``: the submission and the tests each in a sandbox of their own.

        Raises:
            DataError: The task's tests cannot grade anything (no ``check``, no test statement).
        """
        return await verify(task.data, solution, sandbox=self.sandbox_backend, image=self.sandbox_image,
                            timeout=self.verify_timeout)

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        return {"reference": ReferenceSolution, "baseline": PromptBaseline}

