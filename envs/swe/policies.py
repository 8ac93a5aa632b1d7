"""Scripted policies for the SWE env: the gold patch applied through the tools, and an empty patch."""

from __future__ import annotations

from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolSpec

GOLD_PATH = "/tmp/agentgym-gold.patch"


def _turn(messages: list[Message]) -> int:
    return sum(m.role == "assistant" for m in messages)


class GoldPatch:
    """The reference: writes the task's gold patch with ``create``, applies it with ``bash``
    (``git apply``), runs the tests, then submits. Must resolve every task whose gold patch is right."""

    name = "reference"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        steps = [
            ("create", {"path": GOLD_PATH, "file_text": task.data["patch"]}),
            ("bash", {"command": f"git apply -v {GOLD_PATH} && rm {GOLD_PATH}"}),
            ("run_tests", {}),
            ("submit", {}),
        ]
        turn = _turn(messages)
        name, arguments = steps[min(turn, len(steps) - 1)]
        return Reply(message=Message(role="assistant", tool_calls=[native_tool_call(f"call_{turn}", name, arguments)]))


class EmptyPatch:
    """The baseline: submits at once, an empty patch. Must resolve nothing."""

    name = "baseline"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        return Reply(message=Message(role="assistant", tool_calls=[native_tool_call("call_0", "submit", {})]))
