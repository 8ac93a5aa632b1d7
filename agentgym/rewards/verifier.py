"""The verifier contract: score a finished episode. Plain functions are verifiers too.

A verifier is anything with ``async score(task, trajectory) -> Reward``. Most are simpler than that:
a function ``(task, trajectory) -> float | bool | Reward``, sync or async, which :func:`as_verifier`
wraps. Keeping the contract this small is what lets a rubric, an LLM judge and a one-line exact-match
check be mixed freely and nested inside each other.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

from agentgym.types import Reward, Task, Trajectory

Score = float | bool | Reward
ScoreFn = Callable[[Task, Trajectory], Score | Awaitable[Score]]


@runtime_checkable
class Verifier(Protocol):
    """Scores a finished episode; deterministic checks, rubrics and LLM judges all fit."""

    async def score(self, task: Task, trajectory: Trajectory) -> Reward:
        """The outcome reward of ``trajectory`` on ``task``."""
        ...


VerifierLike = Verifier | ScoreFn


def to_reward(value: Score) -> Reward:
    """Turn what a scoring function returned into a :class:`Reward` (``True`` is 1.0)."""
    if isinstance(value, Reward):
        return value
    if isinstance(value, bool | int | float):
        return Reward(value=float(value))
    raise TypeError(f"a verifier must return a float, a bool or a Reward, not {type(value).__name__}")


def verifier_name(obj: Any) -> str:
    """The name a verifier's score is recorded under: its ``name`` attribute, else its function name."""
    name = getattr(obj, "name", None) or getattr(obj, "__name__", None) or type(obj).__name__
    return str(name)


class FunctionVerifier:
    """A plain scoring function, sync or async, seen as a :class:`Verifier`."""

    def __init__(self, fn: ScoreFn, *, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or verifier_name(fn)

    async def score(self, task: Task, trajectory: Trajectory) -> Reward:
        value = self.fn(task, trajectory)
        if inspect.isawaitable(value):
            value = await value
        return to_reward(value)


def as_verifier(obj: VerifierLike, *, name: str | None = None) -> Verifier:
    """``obj`` itself when it already has an async ``score``; a :class:`FunctionVerifier` otherwise."""
    score = getattr(obj, "score", None)
    if score is not None and inspect.iscoroutinefunction(score):
        return obj  # type: ignore[return-value]
    if callable(obj):
        return FunctionVerifier(obj, name=name)
    raise TypeError(f"{obj!r} is neither a Verifier nor a scoring function")


_THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)


def final_text(trajectory: Trajectory) -> str:
    """The model's final answer in words: the last assistant text, with any ``<think>`` block removed.

    A final tool's argument is not text the model wrote to a reader, so envs whose answer is a tool
    argument score it in their own verifier instead.
    """
    for turn in reversed(trajectory.turns):
        if turn.action.role == "assistant":
            return _THINK.sub("", turn.action.text).strip()
    return ""
