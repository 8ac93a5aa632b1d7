"""Ending an episode that the trainer stopped before the env did."""

from __future__ import annotations

from agentgym.env import Env


async def finish(env: Env) -> None:
    """Score an episode that is still running, as it stands, the way ``Env.step`` scores a finished one.

    A trainer can stop before the env ends the episode (the model answered in text that TRL never
    passes on, or the token budget ran out). The outcome reward is then the env's :meth:`~Env.score`
    of its current state, added to the last turn, and the episode is recorded as truncated.
    """
    trajectory = env.trajectory
    if trajectory is None or env._done:
        return
    env._done = True
    outcome = await env.score()
    trajectory.outcome_reward = outcome.value
    trajectory.reward_components = dict(outcome.components)
    trajectory.info.update(outcome.info)
    trajectory.reward += outcome.value
    if trajectory.turns:
        trajectory.turns[-1].reward += outcome.value
    trajectory.outcome = "truncated"
