"""The environment contract as a function: ``await check_env(MyEnv)`` before anyone trains on it.

It checks what the runner, the evaluation and the TRL adapter rely on, and says which part failed:

- the tool specs are valid OpenAI function schemas (identifier names, descriptions for the tool and
  every parameter, an object schema whose required parameters exist);
- ``step`` and ``end`` refuse to run before ``reset``; every episode of the env's ``reference`` policy
  (and ``baseline``, if any) ends ``terminated`` or ``truncated`` within ``max_turns``, ``step``
  refuses to run after it, and its trajectory round-trips through JSON;
- the reference's mean return beats the baseline's (or is above 0 without a baseline): the verifier
  can tell a solution from a non-solution;
- no dodge: every known way for a model to break its own episode (the generic ones of
  ``no_dodge.py`` and the env's ``dodges()``) ends in a grade, never an ``error`` or a timeout,
  and never a success;
- ``close`` can be called twice and ``reset`` refuses afterwards;
- every sandbox the env took (for its episodes and for its verifier) was given back (closed or destroyed);
- the env accepts ``runtime=`` (a :class:`~agentgym.sandboxes.SandboxRuntime` of the check's own),
  holds no lease of it once closed, and closing that runtime leaves no container, process or browser
  that the check started.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgym.env import Env
from agentgym.errors import EnvError
from agentgym.rollout import rollout
from agentgym.testing.no_dodge import check_no_dodge
from agentgym.types import Message, Task, Trajectory


class EnvCheckError(AssertionError):
    """An environment broke the contract; the message names the env and what broke."""


@dataclass(frozen=True)
class EnvReport:
    """What a passing :func:`check_env` measured."""

    env: str
    tasks: int
    reference_return: float
    baseline_return: float | None
    sandboxes: int
    """Sandboxes the env took during the check (every one was given back)."""
    dodges: tuple[str, ...] = ()
    """The dodges played, each ended in a grade."""


class _Tracked:
    """A sandbox that remembers whether it was closed or destroyed; everything else goes to the real one.

    A verifier may destroy what it borrowed rather than close it, so that it is never lent again.
    """

    def __init__(self, sandbox: Any) -> None:
        self._sandbox = sandbox
        self.closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sandbox, name)

    async def close(self) -> None:
        self.closed = True
        await self._sandbox.close()

    async def destroy(self) -> None:
        self.closed = True
        await self._sandbox.destroy()


class _TrackingProvider:
    """A sandbox provider that hands out the backend's sandboxes and keeps a list of them."""

    def __init__(self, backend: Any, image: str, runtime: Any) -> None:
        self.backend = backend
        self.image = image
        self.runtime = runtime
        self.handed: list[_Tracked] = []

    async def acquire(self) -> _Tracked:
        from agentgym.sandboxes import acquire

        sandbox = _Tracked(await acquire(self.backend, image=self.image, runtime=self.runtime))
        self.handed.append(sandbox)
        return sandbox


def check_tool_specs(cls: type[Env]) -> None:
    """Raise :class:`EnvCheckError` unless every tool spec of ``cls`` is a valid function schema."""
    names = [spec.name for spec in cls.tool_specs()]
    if len(set(names)) != len(names):
        raise EnvCheckError(f"{cls.__name__}: tool names repeat: {names}")
    for spec in cls.tool_specs():
        where = f"{cls.__name__}: tool {spec.name!r}"
        params = spec.parameters
        properties = params.get("properties", {})
        problems = [
            "name is not an identifier" if not spec.name.isidentifier() else "",
            "has no description" if not spec.description.strip() else "",
            "parameters are not an object schema" if params.get("type") != "object" else "",
            *(f"parameter {p!r} has no description" for p, schema in properties.items()
              if not str(schema.get("description", "")).strip()),
            *(f"requires unknown parameter {p!r}" for p in params.get("required", []) if p not in properties),
        ]
        problems = [p for p in problems if p]
        if problems:
            raise EnvCheckError(f"{where}: {'; '.join(problems)}")
        json.dumps(spec.to_openai())  # raises on a schema that is not JSON


async def _refuses(action: Any, what: str, env_name: str) -> None:
    try:
        await action
    except EnvError:
        return
    raise EnvCheckError(f"{env_name}: {what} did not raise EnvError")


async def check_env(
    env: type[Env] | str,
    *,
    tasks: Sequence[Task] | None = None,
    limit: int = 3,
    episode_timeout: float = 600.0,
    dodges: bool = True,
    **env_kwargs: Any,
) -> EnvReport:
    """Check that an environment keeps the contract; raise :class:`EnvCheckError` saying how it does not.

    Args:
        env: An ``Env`` subclass, a registered id or alias, or a ``module:Class`` spec.
        tasks: Tasks to play; the first ``limit`` of the env's built-in tasks by default.
        limit: How many built-in tasks to play.
        episode_timeout: Seconds allowed per episode (a dodge's included).
        dodges: Play the "no dodge" check (``agentgym.testing.no_dodge``).
        **env_kwargs: For the env's constructor (``sandbox_backend="local"``...).

    Returns:
        The mean returns of the reference and baseline policies and the sandboxes used.
    """
    from agentgym.registry import env_class, resolve

    cls = env_class(env) if isinstance(env, str) else env
    name = resolve(env) if isinstance(env, str) else cls.__name__
    check_tool_specs(cls)
    policies = cls.scripted_policies()
    if "reference" not in policies:
        raise EnvCheckError(f"{name}: scripted_policies() has no 'reference': ship one that solves the tasks")
    from agentgym.sandboxes import SandboxRuntime

    if "runtime" in env_kwargs:
        raise EnvCheckError(f"{name}: check_env passes a runtime of its own (closing it must leave nothing)")
    before = await _live_things()
    runtime = SandboxRuntime()
    tracker = None
    if cls.sandbox_image is not None:
        tracker = _TrackingProvider(env_kwargs.pop("sandbox_backend", "auto"), cls.sandbox_image, runtime)
        env_kwargs["sandbox_backend"] = tracker
    try:
        instance, played, returns, played_dodges = await _play_all(
            cls, name, runtime, tasks, limit, episode_timeout, dodges, env_kwargs)
    except BaseException:
        await runtime.close()
        raise
    handed = tracker.handed if tracker is not None else []
    leaked = [s for s in handed if not s.closed]
    if leaked or instance.has_sandbox:
        await runtime.close()
        raise EnvCheckError(f"{name}: {len(leaked)} of {len(handed)} sandboxes were never given back")
    await _leaves_nothing(runtime, before, name)
    baseline = returns.get("baseline")
    if returns["reference"] <= (baseline if baseline is not None else 0.0):
        against = f"the baseline's {baseline:.3f}" if baseline is not None else "0"
        raise EnvCheckError(f"{name}: the reference policy's mean return {returns['reference']:.3f} does not beat "
                            f"{against}: the verifier cannot tell a solution from a non-solution")
    return EnvReport(env=name, tasks=len(played), reference_return=returns["reference"],
                     baseline_return=baseline, sandboxes=len(handed), dodges=tuple(played_dodges))


async def _play_all(cls: type[Env], name: str, runtime: Any, tasks: Sequence[Task] | None, limit: int,
                    episode_timeout: float, dodges: bool, env_kwargs: dict[str, Any],
                    ) -> tuple[Env, list[Task], dict[str, float], list[str]]:
    """Every policy's episodes and the dodges, on an env of ``runtime``; the env closed after."""
    policies = cls.scripted_policies()
    try:
        instance = cls(runtime=runtime, **env_kwargs)
    except TypeError as e:
        raise EnvCheckError(f"{name}: its constructor does not accept runtime= ({e}): pass **kwargs on to Env") from e
    instance.id = name  # type: ignore[misc]
    try:
        await _refuses(instance.step(Message(role="assistant", content="hi")), "step() before reset()", name)
        await _refuses(instance.end(), "end() before reset()", name)
        played = list(tasks) if tasks is not None else list(instance.tasks())[:limit]
        if not played:
            raise EnvCheckError(f"{name}: no built-in tasks; pass tasks=")
        returns: dict[str, float] = {}
        for label in ("reference", "baseline"):
            if label in policies:
                runs = [await _play(instance, policies[label](), task, name, episode_timeout) for task in played]
                returns[label] = sum(t.reward for t in runs) / len(runs)
        played_dodges = await check_no_dodge(instance, name, played[0], timeout=episode_timeout) if dodges else []
    finally:
        await instance.close()
    await instance.close()
    await _refuses(instance.reset(played[0]), "reset() after close()", name)
    return instance, played, returns, list(played_dodges)


async def _play(env: Env, policy: Any, task: Task, name: str, episode_timeout: float) -> Trajectory:
    trajectory = await rollout(env, policy, task, episode_timeout=episode_timeout)
    where = f"{name}: {policy.name} on {task.id}"
    if trajectory.outcome not in ("terminated", "truncated"):
        raise EnvCheckError(f"{where}: the episode ended {trajectory.outcome}: {trajectory.failure}")
    if not env.done or len(trajectory.turns) > env.max_turns:
        raise EnvCheckError(f"{where}: {len(trajectory.turns)} turns, done={env.done} (max_turns {env.max_turns})")
    await _refuses(env.step(Message(role="assistant", content="again")), "step() after the episode ended", where)
    if Trajectory.model_validate_json(trajectory.model_dump_json()) != trajectory:
        raise EnvCheckError(f"{where}: the trajectory does not round-trip through JSON")
    return trajectory


async def _leaves_nothing(runtime: Any, before: set[str], name: str) -> None:
    """Raise unless the closed env holds no lease of ``runtime`` and closing it leaves nothing started."""
    from agentgym.sandboxes import Pool

    held = [f"{pool!r}: {pool.on_loan} lent" for kind in runtime.kinds() for pool in runtime.held(kind)
            if isinstance(pool, Pool) and pool.on_loan]
    await runtime.close()
    if held:
        raise EnvCheckError(f"{name}: closed, the env still holds leases: {'; '.join(held)}")
    for _ in range(20):  # a killed process or a removed container may take a moment to go
        left = await _live_things() - before
        if not left:
            return
        await asyncio.sleep(0.25)
    raise EnvCheckError(f"{name}: closing the env and its runtime left {sorted(left)[:5]}")


async def _live_things() -> set[str]:
    """This process's live descendant processes and the engine's agentgym containers, by id."""
    return _descendants() | await asyncio.to_thread(_containers)


def _descendants() -> set[str]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8") as f:
                state, ppid = f.read().rsplit(")", 1)[1].split()[:2]
        except (OSError, ValueError):
            continue
        if state != "Z":
            children.setdefault(int(ppid), []).append(int(entry.name))
    found, todo = set(), [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(f"process {child}")
            todo.append(child)
    return found


def _containers() -> set[str]:
    from agentgym.sandboxes import engine, list_sandboxes

    if not engine.available():
        return set()
    return {f"container {c.id[:12]}" for c in list_sandboxes() if c.status in ("created", "running", "paused")}
