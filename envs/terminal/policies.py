"""Scripted policies for the terminal env: the task's own solution run through the tools, and giving up."""

from __future__ import annotations

import shlex
from pathlib import PurePosixPath

from agentgym.errors import EnvError
from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolSpec

SOLUTION_DIR = "/tmp/solution"
"""Where the oracle puts ``solution/`` (harbor's ``/solution``, which the agent's uid cannot make)."""


def _turn(messages: list[Message]) -> int:
    return sum(m.role == "assistant" for m in messages)


def _call(turn: int, *calls: tuple[str, dict[str, object]]) -> Reply:
    return Reply(message=Message(role="assistant", tool_calls=[
        native_tool_call(f"call_{turn}_{i}", name, arguments) for i, (name, arguments) in enumerate(calls)]))


class Oracle:
    """Harbor's oracle: writes the task's ``solution/`` with ``write``, runs ``solve.sh`` with ``bash`` (its
    ``[solution].env`` exported, for the agent's whole time), then submits.

    A task that ships no ``solution/solve.sh`` is refused: :meth:`act` raises, and the episode is recorded
    as an error naming the task, not graded as a failure it did not earn.
    """

    name = "oracle"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        from .env import DEFAULT_AGENT_TIMEOUT, harbor_task

        harbor = harbor_task(task)
        if harbor.solution is None:
            raise EnvError(f"task {harbor.name} ships no solution/solve.sh: the oracle cannot play it")
        turn = _turn(messages)
        if turn == 0:
            folder = harbor.solution.parent
            writes: list[tuple[str, dict[str, object]]] = []
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                try:
                    content = path.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    raise EnvError(f"task {harbor.name}: the oracle writes text files only; "
                                   f"solution/{path.relative_to(folder)} is not UTF-8") from None
                target = PurePosixPath(SOLUTION_DIR) / path.relative_to(folder).as_posix()
                writes.append(("write", {"path": str(target), "content": content}))
            return _call(turn, *writes)
        if turn == 1:
            exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in harbor.config.solution.env.items())
            command = f"{'env ' + exports + ' ' if exports else ''}bash {SOLUTION_DIR}/solve.sh"
            timeout = harbor.config.agent.timeout_sec or DEFAULT_AGENT_TIMEOUT
            return _call(turn, ("bash", {"command": command, "timeout": timeout}))
        return _call(turn, ("submit", {}))


class SubmitAtOnce:
    """The baseline: submits the container as it started. Must solve nothing."""

    name = "baseline"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        return _call(_turn(messages), ("submit", {}))
