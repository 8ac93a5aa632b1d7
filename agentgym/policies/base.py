"""The policy contract: given the conversation and the tools, produce the next assistant message."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from agentgym.types import Message, Task, ToolSpec, Usage


class Reply(BaseModel):
    """A policy's answer: the assistant message and what producing it cost."""

    message: Message
    usage: Usage = Field(default_factory=Usage)


@runtime_checkable
class Policy(Protocol):
    """Anything that can act in an episode: a hosted LLM, a trainer's model, a script.

    ``task`` is passed so scripted policies (a reference solution, a baseline) can read the task's
    data; model-backed policies ignore it and see only ``messages`` and ``tools``.
    """

    name: str

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        """Return the next assistant message."""
        ...
