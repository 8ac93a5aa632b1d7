"""Small envs whose rewards and observations the TRL tests can predict."""

from __future__ import annotations

import asyncio
import datetime
import itertools
import time
from typing import Any

from pydantic import BaseModel, Field

from agentgym.env import Env, ToolResult
from agentgym.errors import ToolError
from agentgym.rewards import Episode, Rubric
from agentgym.tools import tool
from agentgym.types import Reward, Task


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


class CrashyChatter(Env):
    """:class:`Chatter` whose env crashes on the second call of an episode that began with green.

    Its crashed episodes have two turns (and a span for each), so per-turn credit has something to
    give them unless they are recognised as crashed.
    """

    max_turns = 3
    text_ends_episode = False

    async def setup(self, task: Task) -> None:
        self.first: str | None = None

    @tool
    async def say(self, colour: str) -> ToolResult:
        """Say a colour.

        Args:
            colour: One of red, green or blue.
        """
        if self.first == "green":
            raise RuntimeError("sandbox died")
        self.first = self.first or colour
        return ToolResult(f"ENVTEXT {colour} ENVTEXT", reward=0.5 if colour == "blue" else 0.0)


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


def said_blue(episode: Episode) -> Reward:
    """1 when the env answered "You said blue."; ``answered`` records whether it answered at all."""
    said = [m.text for t in episode.trajectory.turns for m in t.observation]
    blue = float(any(text == "You said blue." for text in said))
    return Reward(value=blue, components={"blue": blue, "answered": float(bool(said))})


class Moody(Env):
    """Blue scores, green is refused (a ``ToolError`` the model reads), red crashes the env.

    A batch of tiny-model episodes therefore holds scored episodes, tool errors and crashes: every
    kind of env metric has something to count.
    """

    max_turns = 2
    verifier = said_blue

    @tool(final=True)
    async def say(self, colour: str) -> str:
        """Say a colour and end the episode.

        Args:
            colour: One of red, green or blue.
        """
        if colour == "red":
            raise RuntimeError("sandbox died")
        if colour == "green":
            raise ToolError("green is not allowed here")
        return f"You said {colour}."


class InFlight:
    """Counts how many coroutines of each kind are running at once, and the most there ever were."""

    def __init__(self) -> None:
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.total: dict[str, int] = {}

    async def hold(self, kind: str, seconds: float) -> None:
        self.now[kind] = self.now.get(kind, 0) + 1
        self.total[kind] = self.total.get(kind, 0) + 1
        self.peak[kind] = max(self.peak.get(kind, 0), self.now[kind])
        try:
            await asyncio.sleep(seconds)
        finally:
            self.now[kind] -= 1


async def slow_full_marks(episode: Episode) -> float:
    """Full marks after 0.5 s of scoring, counted in :attr:`Sleepy.flight`."""
    await Sleepy.flight.hold("score", 0.5)
    return 1.0


class Sleepy(Env):
    """Every reset, tool call and scoring takes 0.5 s and is counted in :attr:`flight` while it runs.

    ``say`` does not end the episode, so every episode is scored when the trainer asks for rewards.
    """

    max_turns = 3
    flight = InFlight()
    verifier = slow_full_marks

    async def setup(self, task: Task) -> None:
        await self.flight.hold("reset", 0.5)

    @tool
    async def say(self, colour: str) -> str:
        """Say a colour.

        Args:
            colour: One of red, green or blue.
        """
        await self.flight.hold("say", 0.5)
        return f"You said {colour}."


class EnvClock:
    """When each timed env call began and ended (``perf_counter`` seconds), and which env made it."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, float, float]] = []  # (env serial, kind, start, end)
        self.serials = itertools.count()

    async def hold(self, serial: int, kind: str, seconds: float) -> None:
        start = time.perf_counter()
        await asyncio.sleep(seconds)
        self.calls.append((serial, kind, start, time.perf_counter()))


class Timed(Env):
    """Every reset and ``say`` takes :attr:`delay` s (a sandbox's work) and is recorded in :attr:`clock`.

    Envs are numbered in the order they are made, so a batch's envs have consecutive numbers.
    """

    max_turns = 2
    delay = 0.4
    clock = EnvClock()
    verifier = said_blue

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.serial = next(self.clock.serials)

    async def setup(self, task: Task) -> None:
        await self.clock.hold(self.serial, "reset", self.delay)

    @tool(final=True)
    async def say(self, colour: str) -> str:
        """Say a colour and end the episode.

        Args:
            colour: One of red, green or blue.
        """
        await self.clock.hold(self.serial, "say", self.delay)
        return f"You said {colour}."


class Passenger(BaseModel):
    """Who flies."""

    name: str = Field(description="Full name.")
    age: int


class Booking(Env):
    """A tool whose parameters are pydantic models (and lists of them)."""

    max_turns = 2

    @tool(final=True)
    async def book(self, passenger: Passenger, companions: list[Passenger] | None = None) -> str:
        """Book a seat.

        Args:
            passenger: The traveller.
            companions: People flying along.
        """
        names = [p.name for p in [passenger, *(companions or [])]]
        return f"Booked {', '.join(names)} (first aged {passenger.age})."


class Dated(Env):
    """A tool whose parameter type transformers cannot describe (a date)."""

    @tool(final=True)
    async def depart(self, day: datetime.date) -> str:
        """Depart.

        Args:
            day: When.
        """
        return str(day)


def _said(episode: Episode) -> str:
    return next((m.text.removeprefix("You said ").rstrip(".") for t in episode.trajectory.turns
                 for m in t.observation if m.text.startswith("You said ")), "")


def blue_said(episode: Episode) -> float:
    """1 when the colour said was blue."""
    return float(_said(episode) == "blue")


def loud(episode: Episode) -> float:
    """A component on a scale 100x larger than ``blue``'s: 300 for red, 100 for green, 0 otherwise."""
    return {"red": 300.0, "green": 100.0}.get(_said(episode), 0.0)


class TwoScales(Env):
    """Two reward components, ``blue`` (0/1) and ``loud`` (0-300), so one would swamp the other if summed."""

    max_turns = 2
    verifier = Rubric({"blue": blue_said, "loud": loud})

    @tool(final=True)
    async def say(self, colour: str) -> str:
        """Say a colour and end the episode.

        Args:
            colour: One of red, green or blue.
        """
        return f"You said {colour}."
