"""Small envs whose rewards and observations the TRL tests can predict."""

from __future__ import annotations

from agentgym.env import Env, ToolResult
from agentgym.rewards import Episode, Rubric
from agentgym.tools import tool


class Constant(Env):
    """Every episode scores 0.37, whatever the model does: a number to look for in TRL's logs."""

    max_turns = 2
    verifier = Rubric({"constant": lambda episode: 0.37})

    @tool(final=True)
    async def say(self, colour: str) -> str:
        """Say a colour and end the episode.

        Args:
            colour: One of red, green or blue.
        """
        return f"You said {colour}."


class Chatter(Env):
    """Never ends early and always answers, so every completion holds env tokens between turns."""

    max_turns = 3
    text_ends_episode = False

    @tool
    async def say(self, colour: str) -> ToolResult:
        """Say a colour.

        Args:
            colour: One of red, green or blue.
        """
        return ToolResult(f"ENVTEXT {colour} ENVTEXT", reward=0.5 if colour == "blue" else 0.0)


def full_marks(episode: Episode) -> float:
    """Every answer is right."""
    return 1.0


class Crashy(Env):
    """Saying red crashes the env (as a dead sandbox would), failing that episode only."""

    max_turns = 2
    verifier = full_marks

    @tool(final=True)
    async def say(self, colour: str) -> str:
        """Say a colour and end the episode.

        Args:
            colour: One of red, green or blue.
        """
        if colour == "red":
            raise RuntimeError("sandbox died")
        return f"You said {colour}."
