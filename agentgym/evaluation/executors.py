"""Where a run's episodes are played: in this process (the default), or on a Ray cluster.

An executor is handed a run (the env, its arguments, the policy, the timeouts) and a list of
``(task, seed)`` jobs, plays them, and reports each trajectory back as its episode ends. Only the
driver (:func:`agentgym.evaluation.evaluate`) writes the run's files, so the executor is not part of
what a run is: a run started on one executor may be resumed on another.

:class:`LocalExecutor` plays episodes on this process's event loop; ``RayExecutor``
(:mod:`agentgym.evaluation.ray_executor`, needs ``agentgym[ray]``) ships each episode to workers on a
Ray cluster. Anything with the three methods of :class:`Executor` can be passed as ``executor=``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentgym.env import Env
from agentgym.errors import AgentgymError, PolicyError
from agentgym.policies.base import Policy, Reply
from agentgym.registry import env_class, make
from agentgym.rollout import run_many
from agentgym.types import Message, Task, ToolSpec, Trajectory

if TYPE_CHECKING:
    from agentgym.sandboxes.runtime import SandboxRuntime

Job = tuple[Task, int]
Report = Callable[[Trajectory, PolicyError | None], None]
"""Called once per finished episode: its trajectory, and the fatal policy error it met, if any."""


@dataclass(frozen=True)
class RunSpec:
    """What every episode of a run shares: what to build, what acts, how long it may take.

    ``concurrency`` is the bound on episodes in flight: in total for the local executor, per worker
    for one that spreads episodes over workers.
    """

    env_id: str
    policy: Policy
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 8
    turn_timeout: float | None = None
    episode_timeout: float | None = None

    def make_env(self) -> Any:
        return make(self.env_id, **self.env_kwargs)


@runtime_checkable
class Executor(Protocol):
    """Plays a run's episodes somewhere and reports each one back as it ends."""

    name: str

    async def prepare(self, run: RunSpec) -> None:
        """Check, before the first episode, that episodes can be played (start what they need).

        Raises:
            AgentgymError: No episode could be played; the message says why.
        """
        ...

    async def run(self, jobs: Sequence[Job], report: Report) -> None:
        """Play ``jobs`` and ``report`` each one exactly once.

        On cancellation, episodes in flight are reported with outcome ``cancelled`` before the
        cancellation propagates.
        """
        ...

    async def close(self) -> None:
        """Release what :meth:`prepare` started; safe to call when it failed or was never called."""
        ...


class LocalExecutor:
    """Plays episodes on this process's event loop, ``concurrency`` at once (the default executor)."""

    name = "local"

    def __init__(self) -> None:
        self._run: RunSpec | None = None

    async def prepare(self, run: RunSpec) -> None:
        self._run = run
        await start_a_sandbox(env_class(run.env_id), run.env_kwargs)

    async def run(self, jobs: Sequence[Job], report: Report) -> None:
        run = self._run
        if run is None:
            raise AgentgymError("LocalExecutor.run() before prepare()")
        watch = FatalWatch(run.policy)
        await run_many(run.make_env, watch, jobs, on_result=lambda t: report(t, watch.error),
                       concurrency=run.concurrency, turn_timeout=run.turn_timeout,
                       episode_timeout=run.episode_timeout)

    async def close(self) -> None:
        self._run = None


EXECUTORS = ("local", "ray")


def get_executor(executor: Executor | str | None, **options: Any) -> Executor:
    """An executor by name (``"local"``, ``"ray"``) or itself; ``options`` go to the named one's constructor.

    Raises:
        AgentgymError: An unknown name, or options the local executor does not take.
    """
    if executor is None or executor == "local":
        if options:
            raise AgentgymError(f"the local executor takes no options, got {', '.join(sorted(options))}")
        return LocalExecutor()
    if executor == "ray":
        from agentgym.evaluation.ray_executor import RayExecutor

        return RayExecutor(**options)
    if isinstance(executor, str):
        raise AgentgymError(f"unknown executor {executor!r}; use one of {', '.join(EXECUTORS)}")
    return executor


async def start_a_sandbox(cls: type[Env], env_kwargs: dict[str, Any], runtime: SandboxRuntime | None = None) -> None:
    """For an env that needs sandboxes, take one from the runtime's shared pool now and give it back.

    An unknown backend, a Docker engine that does not answer, a missing image: each would otherwise
    fail every episode the same way. The sandbox goes back to the pool for the first episode.
    """
    image = cls.sandbox_image
    backend = env_kwargs.get("sandbox_backend", "auto")
    if image is None or not isinstance(backend, str):
        return
    from agentgym.sandboxes import acquire

    sandbox = await acquire(backend, image=image, runtime=runtime)
    await sandbox.close()


class FatalWatch:
    """The policy, seen through a window that keeps the first fatal :class:`PolicyError`, to stop the run on it."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.name = policy.name
        self.error: PolicyError | None = None

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        try:
            return await self.policy.act(messages, tools, task=task)
        except PolicyError as e:
            if e.fatal and self.error is None:
                self.error = e
            raise
