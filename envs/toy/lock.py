"""Lock: a toy env whose decisive turn is known, for measuring per-turn credit.

The first turn sets a dial (``set_dial``), written to a file in the sandbox; later turns may only
``wait`` (they change nothing) until ``open`` ends the episode, which succeeds when the dial file
holds the task's code. So turn 1 alone decides the outcome, and every other turn's true value is
0: exactly what a credit method should recover. The state lives in the sandbox, so an episode can
be branched (:mod:`agentgym.branch`) with a forked sandbox at any turn.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from agentgym.env import Env
from agentgym.errors import ToolError
from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.rewards import Episode
from agentgym.tools import tool
from agentgym.types import Message, Task, ToolSpec

DIAL = "dial.txt"


def opened(episode: Episode) -> float:
    """1 when ``open`` found the dial at the code."""
    return float(episode.final_answer == "open")


class LockEnv(Env):
    """Set the dial to ``task.data["code"]`` (0 or 1) on turn 1, wait, then open."""

    max_turns = 6
    sandbox_image = "python"
    verifier = opened

    def tasks(self) -> Sequence[Task]:
        return [Task(id=f"lock-{c}", prompt="Set the dial, then open the lock.", data={"code": c}) for c in (0, 1)]

    @tool
    async def set_dial(self, position: int) -> str:
        """Set the dial; only the first setting counts.

        Args:
            position: 0 or 1.
        """
        try:
            await self.sandbox.read_file(DIAL)
        except Exception:
            await self.sandbox.write_file(DIAL, str(position))
            return f"The dial is at {position}."
        raise ToolError("the dial is already set")

    @tool
    async def wait(self) -> str:
        """Do nothing for a turn."""
        return "Time passes."

    @tool(final=True)
    async def open(self) -> str:
        """Try to open the lock and end the episode."""
        try:
            position = (await self.sandbox.read_file(DIAL)).decode().strip()
        except Exception:
            position = ""
        code = str(self.task.data["code"]) if self.task else ""
        self.final_answer = "open" if position == code else "locked"
        return f"The lock is {self.final_answer}."


class RandomLockPolicy:
    """Sets the dial right with probability ``p_right``, waits 1-3 turns at random, then opens.

    Seeded, so a benchmark run is repeatable; each branch draws its own continuation.
    """

    name = "random-lock"

    def __init__(self, *, p_right: float = 0.5, seed: int = 0) -> None:
        self.p_right, self.rng = p_right, random.Random(seed)

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        turns = sum(m.role == "assistant" for m in messages)
        if turns == 0:
            right = self.rng.random() < self.p_right
            position = task.data["code"] if right else 1 - task.data["code"]
            call = native_tool_call("c0", "set_dial", {"position": position})
        elif turns < 4 and self.rng.random() < 0.6:
            call = native_tool_call(f"c{turns}", "wait", {})
        else:
            call = native_tool_call(f"c{turns}", "open", {})
        return Reply(message=Message(role="assistant", tool_calls=[call]))
