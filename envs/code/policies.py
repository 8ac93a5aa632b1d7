"""Scripted policies for the code env: the task's canonical solution, and a do-nothing baseline."""

from __future__ import annotations

from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolSpec


def _turn(messages: list[Message]) -> int:
    return sum(m.role == "assistant" for m in messages)


class ReferenceSolution:
    """Replays the task's canonical solution through the tools: run it once, then submit it.

    An end-to-end check of env, sandbox and verifier: it must score 100% on tasks whose canonical
    solution is right.
    """

    name = "reference"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        solution = task.data["prompt"] + (task.data.get("canonical_solution") or "")
        turn = _turn(messages)
        if turn == 0:
            call = native_tool_call("call_0", "python", {"code": solution + f"\nprint({task.data['entry_point']!r})"})
        else:
            call = native_tool_call(f"call_{turn}", "submit", {"code": solution})
        return Reply(message=Message(role="assistant", tool_calls=[call]))


class PromptBaseline:
    """Submits the bare prompt (a signature and docstring, no body): must score 0."""

    name = "baseline"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        call = native_tool_call("call_0", "submit", {"code": task.data["prompt"]})
        return Reply(message=Message(role="assistant", tool_calls=[call]))
