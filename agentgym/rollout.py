"""Running episodes: one with :func:`rollout`, many at once with :func:`run_many`.

Nothing that goes wrong inside an episode escapes it. A policy that fails after its retries, a
sandbox that crashes, a turn or an episode that runs out of time: each ends that episode with an
``outcome`` (``error``, ``timeout``) and a ``failure`` reason in its trajectory, and the batch goes
on. Cancellation (Ctrl-C) ends running episodes as ``cancelled``, still recorded, and their
sandboxes are still released.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from agentgym.env import Env
from agentgym.errors import PolicyError
from agentgym.policies.base import Policy, Reply
from agentgym.types import Message, Outcome, Task, Trajectory, Usage

EnvFactory = Callable[[], Env]


async def rollout(
    env: Env,
    policy: Policy,
    task: Task,
    *,
    seed: int | None = None,
    turn_timeout: float | None = None,
    episode_timeout: float | None = None,
) -> Trajectory:
    """Play one episode of ``policy`` in ``env`` on ``task`` and return its trajectory.

    Args:
        env: An environment; it is reset here but not closed (the caller owns it).
        policy: Acts on each turn.
        task: The task to reset to.
        seed: Passed to ``env.reset``.
        turn_timeout: Seconds for one policy call plus one env step; past it the episode ends
            with outcome ``timeout``.
        episode_timeout: Seconds for the whole episode, reset included.
    """
    started = time.monotonic()

    def record(outcome: Outcome, failure: str) -> Trajectory:
        t = env.trajectory if env.trajectory is not None and env.trajectory.task_id == task.id else None
        t = t or Trajectory(task_id=task.id, env=env.id or type(env).__name__, seed=seed)
        t.outcome, t.failure = outcome, failure
        return t

    async def act(messages: list[Message]) -> Reply:
        """The policy's reply; the wait is counted in ``policy_seconds`` whether it answers, fails or is cut off."""
        asked = time.monotonic()
        try:
            return await policy.act(messages, env.tools, task=task)
        finally:
            if env.trajectory is not None and env.trajectory.task_id == task.id:
                env.trajectory.policy_seconds += time.monotonic() - asked

    async def play() -> Trajectory:
        messages = await env.reset(task, seed=seed)
        while True:
            turn_started = time.monotonic()
            deadline = asyncio.timeout(turn_timeout)
            stepping = False
            try:
                async with deadline:
                    reply = await act(messages)
                    policy_seconds = time.monotonic() - turn_started
                    stepping = True
                    result = await env.step(reply.message)
            except TimeoutError:
                if not deadline.expired():
                    raise
                if stepping:
                    return await _grade_overlong_turn(env, task, turn_timeout or 0.0, record)
                return record("timeout", f"turn {_turns(env) + 1} took longer than {turn_timeout:g}s")
            assert env.trajectory is not None
            turn = env.trajectory.turns[-1]
            turn.policy_seconds = policy_seconds
            turn.usage = turn.usage + reply.usage  # the policy's; env-side calls are in usage_by_role
            messages += [reply.message, *result.observation]
            if result.terminated or result.truncated:
                return env.trajectory

    deadline = asyncio.timeout(episode_timeout)
    try:
        async with deadline:
            trajectory = await play()
    except TimeoutError as e:
        if deadline.expired():
            trajectory = record("timeout", f"episode took longer than {episode_timeout:g}s")
        else:
            trajectory = record("error", f"{type(e).__name__}: {e}"[:2000])
    except asyncio.CancelledError:
        record("cancelled", "cancelled (interrupted or shut down)").seconds = time.monotonic() - started
        raise
    except Exception as e:
        trajectory = record("error", f"{type(e).__name__}: {e}"[:2000])
        if isinstance(e, PolicyError):
            trajectory.failed_usage = trajectory.failed_usage + Usage(retries=e.retries)
    trajectory.policy = policy.name
    trajectory.seconds = time.monotonic() - started
    return trajectory


OVERLONG_TURN_SCORING_SECONDS = 30.0
"""Seconds the env may take to score an episode whose turn ran out of time in its tool calls."""


async def _grade_overlong_turn(env: Env, task: Task, turn_timeout: float,
                               record: Callable[[Outcome, str], Trajectory]) -> Trajectory:
    """End an episode whose turn ran past the turn timeout inside ``env.step``: graded, as a failure.

    The policy had answered; the model's own message made the step that long (its calls), so the
    episode is the model's failure, not a ``timeout`` with no grade (which a policy under RL would
    learn to prefer to a failure). It is scored as it stands, and no better than 0; the reason is
    ``info["turn_timeout"]``. An env that cannot be scored then leaves the ``timeout`` as it was.
    """
    why = f"turn {_turns(env)} ran past the {turn_timeout:g} s turn timeout in its tool calls"
    trajectory = env.trajectory
    if trajectory is None or trajectory.task_id != task.id:
        return record("timeout", why)
    try:
        async with asyncio.timeout(OVERLONG_TURN_SCORING_SECONDS):
            if not env.done:
                await env.end("truncated")
    except Exception as e:  # the env is wedged by the cut-off call: no grade can be given
        return record("timeout", f"{why}; scoring it then failed: {type(e).__name__}: {e}"[:2000])
    if trajectory.outcome_reward > 0:
        trajectory.reward -= trajectory.outcome_reward
        if trajectory.turns:
            trajectory.turns[-1].reward -= trajectory.outcome_reward
        trajectory.outcome_reward = 0.0
    trajectory.outcome = "truncated"
    trajectory.info["turn_timeout"] = why
    return trajectory


def _turns(env: Env) -> int:
    return len(env.trajectory.turns) if env.trajectory is not None else 0


async def run_episode(
    make_env: EnvFactory, policy: Policy, task: Task, *, seed: int | None = None, **timeouts: Any
) -> Trajectory:
    """Build an env, play one episode, close the env whatever happens; return the trajectory.

    Never raises: a cancelled episode is returned with outcome ``cancelled`` (the caller that
    cancelled it decides what to do next).
    """
    try:
        env = make_env()
    except Exception as e:
        return Trajectory(task_id=task.id, env="?", policy=policy.name, seed=seed, outcome="error",
                          failure=f"could not build the environment: {type(e).__name__}: {e}")
    try:
        trajectory = await rollout(env, policy, task, seed=seed, **timeouts)
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None:
            current.uncancel()
        recorded = env.trajectory if env.trajectory is not None and env.trajectory.task_id == task.id else None
        trajectory = recorded or Trajectory(task_id=task.id, env=env.id, policy=policy.name, seed=seed)
        trajectory.outcome, trajectory.failure = "cancelled", "cancelled (interrupted or shut down)"
    try:
        await env.close()
    except Exception as e:  # a failed cleanup is recorded on the episode, never raised
        trajectory.info["close_error"] = f"{type(e).__name__}: {e}"
    return trajectory


async def run_many(
    make_env: EnvFactory,
    policy: Policy,
    jobs: Iterable[tuple[Task, int | None]],
    *,
    on_result: Callable[[Trajectory], None],
    concurrency: int = 8,
    turn_timeout: float | None = None,
    episode_timeout: float | None = None,
) -> None:
    """Play ``(task, seed)`` jobs, at most ``concurrency`` at once; ``on_result`` gets each as it ends.

    On cancellation (Ctrl-C), running episodes are cancelled and closed, handed to ``on_result`` with
    outcome ``cancelled``, and then the cancellation propagates.
    """
    queue = list(jobs)
    queue.reverse()
    running: set[asyncio.Task[Trajectory]] = set()
    timeouts = {"turn_timeout": turn_timeout, "episode_timeout": episode_timeout}
    try:
        while queue or running:
            while queue and len(running) < concurrency:
                task, seed = queue.pop()
                running.add(asyncio.create_task(run_episode(make_env, policy, task, seed=seed, **timeouts)))
            done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                on_result(finished.result())
    finally:
        for pending in running:
            pending.cancel()
        for trajectory in await asyncio.gather(*running, return_exceptions=True):
            if isinstance(trajectory, Trajectory):
                on_result(trajectory)
