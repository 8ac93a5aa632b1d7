"""The verifier contract: score a finished episode. Plain functions are verifiers too.

A verifier is anything with ``async score(episode) -> Reward``. Most are simpler than that: a
function ``(episode) -> float | bool | Reward``, sync or async, which :func:`as_verifier` wraps.
The :class:`Episode` it receives is everything a verifier may read: the task, the trajectory (with
its final answer), and the final state the env chose to expose (a database, a repository diff, a
page). Keeping the contract this small is what lets a rubric, an LLM judge and a one-line check be
mixed freely, nested inside each other, and declared as an env's ``verifier``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentgym.types import Reward, Task, Trajectory

if TYPE_CHECKING:
    from agentgym.sandboxes.pool import SandboxSupply


@dataclass(frozen=True)
class Episode:
    """What a verifier sees of an episode: read it, do not change it.

    Attributes:
        task: The task the episode played.
        trajectory: The episode as recorded (the same record the JSONL file gets).
        state: What the env's :meth:`~agentgym.env.Env.final_state` returned when the episode ended:
            a snapshot of the world the model acted on, e.g. a database to compare with the expected
            one. ``None`` when the env exposes none, or when a saved trajectory is scored offline.
        sandboxes: Where the live episode's sandboxes come from, for a verifier that runs something
            in sandboxes of its own (the code env's tests): the env's backend, image and runtime,
            not the env. ``None`` when a saved trajectory is scored offline.
    """

    task: Task
    trajectory: Trajectory
    state: Any = None
    sandboxes: SandboxSupply | None = None

    @property
    def final_answer(self) -> str | None:
        """The answer the model gave (``trajectory.final_answer``): a final tool's, or its last text's."""
        return self.trajectory.final_answer


Score = float | bool | Reward
ScoreFn = Callable[[Episode], Score | Awaitable[Score]]


@runtime_checkable
class Verifier(Protocol):
    """Scores a finished episode; deterministic checks, rubrics and LLM judges all fit."""

    async def score(self, episode: Episode) -> Reward:
        """The outcome reward of ``episode``."""
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
    """A plain scoring function ``(episode) -> float | bool | Reward``, sync or async, seen as a :class:`Verifier`."""

    def __init__(self, fn: ScoreFn, *, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or verifier_name(fn)

    async def score(self, episode: Episode) -> Reward:
        value = self.fn(episode)
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


THINK = re.compile(r"<think>.*?</think>\s*", re.DOTALL)
"""A reasoning model's ``<think>`` block: not its answer (:func:`final_text`), nor a turn's text (TRL rollouts)."""
_CONFIDENCE = re.compile(r"\s*<confidence>[^<]*</confidence>", re.IGNORECASE)


def final_text(trajectory: Trajectory) -> str:
    """The model's final answer as text, with any ``<think>`` block and ``<confidence>`` tag removed.

    The confidence tag is for :class:`~agentgym.rewards.Calibration`; removed here, it never makes a
    right answer fail an exact match.

    ``trajectory.final_answer`` when the env recorded one (a final tool's answer, or the reply that
    ended the episode); otherwise the last assistant text, for a trajectory cut off before it answered.
    """
    text = trajectory.final_answer
    if text is None:
        text = next((t.action.text for t in reversed(trajectory.turns) if t.action.role == "assistant"), "")
    return _CONFIDENCE.sub("", THINK.sub("", text)).strip()
