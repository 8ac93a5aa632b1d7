"""Branch rollouts: a measured value for each turn, from continuations forked at that turn.

A turn's share of the episode's outcome (GRPO's uniform credit, or leave-one-out at the turn) says
how the *episode* went, not what the turn did. Branching measures it: after turn ``k``, fork the
conversation and the sandbox (:meth:`~agentgym.sandboxes.Sandbox.fork`) into ``n`` copies, let the
same policy finish each, and take the mean outcome as the turn's value ``V_k``. The advantage of
turn ``k`` is ``V_k − V_{k−1}``: its value against its parent's, which is the mean value of the turns
the policy could have taken instead (its siblings in the tree). A turn that settled the outcome gets
the whole change; a turn that changed nothing gets about 0, however the episode ended.

    async with agentgym.make("agentgym/code-v0") as env:
        result = await branch_rollout(env, policy, task, n=4)
    result.values        # V_0 .. V_T (V_T: the episode's own outcome)
    result.advantages    # one per turn
    result.sandbox_seconds, result.forks   # what the branching cost

Only envs whose sandbox forks can branch (code, SWE, terminal, and any env that holds a
sandbox); others are refused by name, since their state outside the conversation cannot
be copied faithfully: envs with no sandbox, and envs that set ``branchable = False`` because their
state lives in processes a fork does not copy (the GUI env's browser page, the MCP env's servers).
"""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections.abc import Sequence

from pydantic import BaseModel, Field

from agentgym.env import Env
from agentgym.errors import EnvError
from agentgym.policies.base import Policy
from agentgym.types import Message, Task, Trajectory


class BranchResult(BaseModel):
    """An episode with a value per turn measured by branching.

    Attributes:
        trajectory: The main episode.
        values: ``V_0 .. V_T``: mean outcome of the branches forked before turn 1 and after each turn;
            the last is the episode's own outcome.
        advantages: ``V_k − V_{k−1}`` for each turn ``k = 1 .. T``.
        branch_outcomes: Each fork point's branch outcomes.
        forks: Sandboxes forked in all.
        sandbox_seconds: Sandbox-seconds the forks were held, forking included (the main episode's
            own sandbox is held meanwhile too, so its ``trajectory.sandbox_seconds`` grows as well).
    """

    trajectory: Trajectory
    values: list[float]
    advantages: list[float]
    branch_outcomes: list[list[float]] = Field(default_factory=list)
    forks: int = 0
    sandbox_seconds: float = 0.0


def _messages(trajectory: Trajectory) -> list[Message]:
    out = list(trajectory.messages)
    for turn in trajectory.turns:
        out += [turn.action, *turn.observation]
    return out


def _check_forkable(env: Env) -> None:
    if getattr(env, "branchable", True) is False:
        raise EnvError(f"{type(env).__name__} cannot branch: its state lives in processes (a browser, MCP servers) "
                       "that sandbox.fork does not copy (branching works for envs whose sandbox forks: code, SWE, "
                       "terminal)")
    if not env.has_sandbox:
        raise EnvError(f"{type(env).__name__} cannot branch: it holds no sandbox to fork, so its state outside the "
                       "conversation cannot be copied (branching works for envs whose sandbox forks: code, SWE, "
                       "terminal)")


def _child(env: Env, sandbox: object) -> Env:
    """A copy of ``env`` that owns ``sandbox`` (a fork of ``env``'s) and a copy of its episode so far."""
    child = copy.copy(env)
    for name, value in vars(env).items():
        if isinstance(value, list | dict | set | BaseModel | random.Random):
            setattr(child, name, copy.deepcopy(value))
    child._sandbox = sandbox  # type: ignore[assignment]
    child._sandbox_started = time.monotonic()
    child._closed = False
    return child


async def continue_episode(env: Env, policy: Policy, task: Task) -> Trajectory:
    """Play ``policy`` from where ``env``'s episode stands until it ends; the env is not reset."""
    assert env.trajectory is not None
    messages = _messages(env.trajectory)
    while not env.done:
        reply = await policy.act(messages, env.tools, task=task)
        result = await env.step(reply.message)
        messages += [reply.message, *result.observation]
        if result.terminated or result.truncated:
            break
    return env.trajectory


async def branch(env: Env, policy: Policy, task: Task, *, n: int) -> tuple[list[float], float]:
    """Fork ``env`` as its episode stands into ``n`` continuations by ``policy``; their returns, and sandbox-seconds.

    The sandbox-seconds are the ``n`` forks' held time, forking included (``n`` × the wall time, as
    they run side by side).

    Raises:
        EnvError: the env holds no sandbox to fork (named in the message), or ``n`` is below 1.
    """
    if n < 1:
        raise EnvError(f"branch needs n >= 1, got {n}")
    _check_forkable(env)
    started = time.monotonic()
    forks = await env.sandbox.fork(n)
    children = [_child(env, f) for f in forks]
    try:
        ends = await asyncio.gather(*(continue_episode(c, policy, task) for c in children))
    finally:  # only the forks go: teardown would free what the children share with env (servers, pools)
        await asyncio.gather(*(c.release_sandbox() for c in children), return_exceptions=True)
    return [t.reward for t in ends], n * (time.monotonic() - started)


async def branch_rollout(env: Env, policy: Policy, task: Task, *, n: int, seed: int | None = None) -> BranchResult:
    """Play one episode of ``policy`` on ``task`` and branch ``n`` ways before its first turn and after each turn.

    The branch after the last turn is the episode's own outcome (nothing is left to play). Costs
    about ``n × T`` extra episodes' worth of turns and ``n × T`` forks.
    """
    messages = await env.reset(task, seed=seed)
    _check_forkable(env)
    values: list[float] = []
    outcomes: list[list[float]] = []
    forks, seconds = 0, 0.0
    while True:
        got, spent = await branch(env, policy, task, n=n)
        outcomes.append(got)
        values.append(sum(got) / len(got))
        forks, seconds = forks + n, seconds + spent
        reply = await policy.act(messages, env.tools, task=task)
        result = await env.step(reply.message)
        messages += [reply.message, *result.observation]
        if result.terminated or result.truncated:
            break
    assert env.trajectory is not None
    values.append(env.trajectory.reward)
    advantages = [values[k] - values[k - 1] for k in range(1, len(values))]
    return BranchResult(trajectory=env.trajectory, values=values, advantages=advantages, branch_outcomes=outcomes,
                        forks=forks, sandbox_seconds=seconds)


def correlation(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; 0 when either side is constant."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sx = sum((a - mx) ** 2 for a in x) ** 0.5
    sy = sum((b - my) ** 2 for b in y) ** 0.5
    return sxy / (sx * sy) if sx and sy else 0.0
