"""Colours: say the colour the task wants. Small enough that a 2-layer model can learn it with GRPO."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentgym.env import Env, ToolResult
from agentgym.parsing import native_tool_call
from agentgym.policies.base import Policy, Reply
from agentgym.rewards import Episode
from agentgym.tools import tool
from agentgym.types import Message, Reward, Task, ToolSpec

COLOURS = ("red", "green", "blue")


def said_the_colour(episode: Episode) -> Reward:
    """1 when the colour said (the final answer) is the task's colour."""
    correct = float(episode.final_answer == episode.task.data["colour"])
    return Reward(value=correct, components={"correct": correct})


class ColourEnv(Env):
    """The model must call ``say`` with the colour in ``task.data["colour"]``.

    ``hint`` tells it the colour at a small cost (a turn reward of -0.1), so an episode has a
    per-turn reward to assign credit to. The prompt need not name the colour: a task that keeps it
    secret is learnable only by reward, which is what a training test wants.
    """

    max_turns = 3
    text_ends_episode = True
    verifier = said_the_colour

    def tasks(self) -> Sequence[Task]:
        return [Task(id=c, prompt="Pick a colour.", data={"colour": c}) for c in COLOURS]

    @tool
    async def hint(self) -> ToolResult:
        """Ask which colour is wanted; costs a little reward."""
        return ToolResult(str(self.task.data["colour"]) if self.task else "", reward=-0.1)

    @tool(final=True)
    async def say(self, colour: str) -> str:
        """Say a colour and end the episode.

        Args:
            colour: One of red, green or blue.
        """
        self.final_answer = colour
        return f"You said {colour}."

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        return {"reference": HintThenSay, "baseline": SayRed}


class HintThenSay:
    """Asks for the hint, then says that colour: scores 0.9 on every task (1 minus the hint's cost)."""

    name = "reference"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        if not any(m.role == "tool" for m in messages):
            call = native_tool_call("call_0", "hint", {})
        else:
            call = native_tool_call("call_1", "say", {"colour": messages[-1].text})
        return Reply(message=Message(role="assistant", tool_calls=[call]))


class SayRed:
    """Says red at once: right on one task in three."""

    name = "baseline"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        call = native_tool_call("call_0", "say", {"colour": "red"})
        return Reply(message=Message(role="assistant", tool_calls=[call]))


def say_examples() -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    """(prompt, reply) pairs calling ``say`` with each colour, then closing after its answer.

    They teach the call format and nothing about which colour is wanted, so a model warm-started on
    them picks colours about uniformly and reinforcement learning has something left to learn. The
    closing replies matter when TRL runs the loop: it lets the model speak again after a tool result.
    """
    prompt: list[dict[str, Any]] = [{"role": "user", "content": "Pick a colour."}]
    out: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    for colour in COLOURS:
        fn = {"name": "say", "arguments": {"colour": colour}}
        call = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": fn}]}
        answer = {"role": "tool", "name": "say", "content": f"You said {colour}."}
        out += [(prompt, call), ([*prompt, call, answer], {"role": "assistant", "content": "Done."})]
    return out
