"""The code-interpreter environment: a persistent Python session in a sandbox, then a submission."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from agentgym.env import Dodge, Env
from agentgym.errors import DataError, EnvError, ToolError
from agentgym.policies.base import Policy
from agentgym.tools import tool
from agentgym.types import Message, Reward, Task

from .dryrun import decide
from .grading import GRADING_MODES, Report, verify
from .policies import PromptBaseline, ReferenceSolution
from .procedural import is_spec
from .tasks import load_tasks
from .verifier import DEFAULT_TIMEOUT, PassesTests

FENCED_CODE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)

ANSWER_MODES = ("tools", "text")
TEXT_INSTRUCTION = "Write this Python function. Answer with the complete function in one ```python code block."
"""The one instruction of the text answer mode, before the task's signature and docstring."""


@cache
def _humaneval() -> tuple[Task, ...]:
    return tuple(load_tasks())


class CodeEnv(Env):
    """Write a Python function: try code in a persistent session, then submit the function.

    Tasks are HumanEval's 164 problems by default, any JSONL file with the same fields
    (``CodeEnv(tasks_path=...)``, ``agentgym eval --tasks``), or procedural tasks made from seeds
    (``tasks_path="procedural:easy:train:0-999"``, :mod:`~agentgym.envs.code.procedural`).

    Two answer modes. ``answer="tools"`` (the default): the ``python`` and ``submit`` tools, up to
    ``max_turns`` turns. ``answer="text"``, for small models: no tools and one turn; the prompt is
    the function's signature and docstring after one instruction (:data:`TEXT_INSTRUCTION`), and
    the reply's last fenced code block is the submission, graded by the same verifier as a
    ``submit`` of that code. The verifier (:class:`PassesTests`, through
    :mod:`~agentgym.envs.code.grading`) runs the submission and the task's tests in two sandboxes of
    their own (never the model's), and only plain values cross between them, so nothing the
    submission does can decide its grade (docs/threat-model.md). The reward is 1 when every test
    passes, else 0, and ``trajectory.info["tests"]`` lists each test with its result.
    """

    max_turns = 8
    sandbox_image = "python"
    verifier = PassesTests()
    release_before_scoring = True  # the tests get sandboxes of their own

    def __init__(self, *, tasks_path: str | Path | None = None, verify_timeout: float = DEFAULT_TIMEOUT,
                 grading: str = "isolated", dry_run: bool | None = None, answer: str = "tools",
                 **kwargs: Any) -> None:
        """
        Args:
            tasks_path: A HumanEval-format JSONL file, or a procedural spec; HumanEval when omitted.
            answer: ``"tools"`` or ``"text"`` (see the class docstring); text mode plays one turn
                unless ``max_turns`` says otherwise.
            verify_timeout: Seconds the submission and its tests may take in all; past it the tests
                left fail (the verifier's, when it is the class's :class:`PassesTests`).
            grading: How the task set is graded, for rows that do not say: ``isolated`` (the
                submission and the tests in two sandboxes) or ``inprocess`` (one interpreter, as plain
                Python, tampering detected); docs/threat-model.md, "Grading modes". Every reward's
                ``info["grading"]`` says which graded it. ``auto``: isolated where the task's dry run
                agrees with plain Python, else in-process.
            dry_run: Before a task's first episode, grade its canonical solution, a broken one and a
                probed one isolated and by plain Python (:mod:`~agentgym.envs.code.dryrun`); a task
                whose grades differ is refused (an episode ``error`` with the statement at fault) or,
                under ``auto``, graded in-process. Default: on for a task file, off for the built-in
                HumanEval and procedural specs.
            **kwargs: ``max_turns``, ``sandbox_backend``... as for :class:`~agentgym.env.Env`.
        """
        if answer not in ANSWER_MODES:
            raise EnvError(f"answer={answer!r}: use one of {', '.join(ANSWER_MODES)}")
        if answer == "text":
            kwargs.setdefault("max_turns", 1)
        super().__init__(**kwargs)
        if grading not in (*GRADING_MODES, "auto"):
            raise DataError(f"grading must be one of {', '.join(GRADING_MODES)}, auto; got {grading!r}")
        self.answer = answer
        if answer == "text":
            self._tools = {}  # type: ignore[misc]  # a tool call is answered "unknown tool"; the reply is the answer
        self.tasks_path = tasks_path
        self.verify_timeout = verify_timeout
        self.grading = grading
        # A task file is dry-run by default; HumanEval and procedural tasks are made with solutions known to grade.
        self.dry_run = (tasks_path is not None and not is_spec(tasks_path)) if dry_run is None else dry_run
        if self._verifier is None and isinstance(type(self).verifier, PassesTests):
            self._verifier = PassesTests(timeout=verify_timeout, grading=grading, dry_run=self.dry_run)

    async def setup(self, task: Task) -> None:
        """Refuse a task whose dry run says it cannot be graded as plain Python would, before its episode."""
        grading = task.data.get("grading") or self.grading
        if (self.dry_run or grading == "auto") and grading != "inprocess" and "test" in task.data:
            decision = await decide(task.data, grading, sandbox=self.sandbox_backend, image=self.sandbox_image,
                                    timeout=self.verify_timeout, runtime=self.sandbox_runtime())
            if decision.grading is None:
                raise DataError(f"task {task.id} is refused: {decision.reason}")

    def tasks(self) -> Sequence[Task]:
        return load_tasks(self.tasks_path, grading=self.grading) if self.tasks_path else _humaneval()

    @classmethod
    def load_tasks(cls, path: str | Path) -> list[Task]:
        """Tasks from a HumanEval-format JSONL file (``task_id``, ``prompt``, ``test``, ``entry_point``)."""
        return load_tasks(path)

    def system_prompt(self, task: Task) -> str | None:
        if self.answer == "text":
            return None  # every token counts for a small model: the chat template's own default stands
        return "You are an expert Python programmer. Use the tools to test your code before submitting."

    def opening_messages(self, task: Task) -> list[Message]:
        """In text mode, the short prompt: the instruction, then the signature and docstring fenced."""
        if self.answer != "text" or "prompt" not in task.data:
            return super().opening_messages(task)
        prompt = f"{TEXT_INSTRUCTION}\n\n```python\n{task.data['prompt']}```"
        return [*([Message(role="system", content=task.system)] if task.system else []),
                Message(role="user", content=prompt)]

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

    def feedback_details(self, reward: Reward) -> dict[str, Any]:
        """Which tests passed, and the kind of error of each that failed; not the tests' sources or messages
        (they hold the hidden inputs and expected values), unless the task says ``"feedback_messages": true``."""
        messages = bool(self.task is not None and self.task.data.get("feedback_messages"))
        tests = []
        for test in reward.info.get("tests", []):
            shown: dict[str, Any] = {"passed": test["passed"]}
            if "error" in test:
                shown["error"] = test["error"] if messages else test["error"].split(":", 1)[0][:80]
            tests.append(shown)
        verifier = str(reward.info.get("verifier", ""))
        return {"tests": tests, "verifier": verifier if verifier in ("ok", "no submission") else "failed"}

    def answer_from_text(self, text: str) -> str:
        blocks = FENCED_CODE.findall(text)
        return blocks[-1] if blocks else text

    async def run_tests(self, task: Task, solution: str) -> Report:
        """Run ``task``'s tests on ``solution``: the submission and the tests each in a sandbox of their own.

        Raises:
            DataError: The task's tests cannot grade anything (no ``check``, no test statement).
        """
        return await verify(task.data, solution, sandbox=self.sandbox_backend, image=self.sandbox_image,
                            timeout=self.verify_timeout, runtime=self.sandbox_runtime(),
                            grading=_mode(task.data.get("grading") or self.grading))

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        return {"reference": ReferenceSolution, "baseline": PromptBaseline}

    @classmethod
    def dodges(cls) -> dict[str, Dodge]:
        """Ways to break the episode through the session and the relay (``check_env``'s "no dodge" check)."""
        task = _humaneval()[0]
        entry = task.data["entry_point"]

        def returns(value: str) -> str:
            return f"def {entry}(*args, **kwargs):\n    return {value}\n"

        return {
            "a return value far over a frame": Dodge.calls(("submit", {"code": returns("'x' * (64 << 20)")}),
                                                           task=task),
            "a return value just under the limit of plain data": Dodge.calls(
                ("submit", {"code": returns("'x' * 1_040_000")}), task=task),
            "a return value that grows in JSON": Dodge.calls(
                ("submit", {"code": returns("['\\u0001'] * 170_000")}), task=task),
            "a return value no frame can carry": Dodge.calls(("submit", {"code": returns("object()")}), task=task),
            "a submission that kills its sandbox": Dodge.calls(
                ("submit", {"code": "import os, signal\nos.kill(1, signal.SIGKILL)\nos._exit(0)\n"}), task=task),
            "output over the session's cap": Dodge.calls(("python", {"code": "print('y' * (256 << 20))"}),
                                                         ("python", {"code": "import os; os._exit(3)"}), task=task),
        }



def _mode(grading: str) -> str:
    """The mode a direct :meth:`CodeEnv.run_tests` call uses: ``auto`` without its dry run is isolated."""
    return "isolated" if grading == "auto" else grading
