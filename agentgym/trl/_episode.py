"""Ending an episode that the trainer stopped before the env did."""

from __future__ import annotations

from agentgym.env import Env


async def finish(env: Env) -> None:
    """Score an episode that is still running, as it stands, the way ``Env.step`` scores a finished one.

    A trainer can stop before the env ends the episode (the model answered in text that TRL never
    passes on, or the token budget ran out). :meth:`Env.end` then scores the env's current state and
    records the episode as truncated.
    """
    if env.trajectory is None or env.done:
        return
    await env.end("truncated")
