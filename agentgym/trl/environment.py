"""The ``environment_factory`` path: TRL owns the loop and calls an agentgym env's tools as methods.

TRL (>= 1.16) builds one environment object per rollout with a no-argument factory, calls
``reset(**row)`` with the dataset row, discovers tools as the public functions of the object's
*class* (``inspect.getmembers(type(env), inspect.isfunction)``, reading signatures and Google-style
docstrings), and calls ``get_reward()`` when the rollout ends, logging it as ``rewards/<ClassName>``.
:func:`environment_class` generates such a class for any agentgym env: one method per tool, with the
tool's parameters and docstring, each running one ``env.step`` on the process's env loop, so turn
rewards, argument validation and error observations behave exactly as in evaluation.

    spec = environment_spec("toy")
    trainer = GRPOTrainer(model, args=config, processing_class=tokenizer, **spec.trainer_kwargs())
"""

from __future__ import annotations

import atexit
import inspect
import itertools
import json
import random
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast, get_type_hints

from agentgym.env import Env
from agentgym.errors import EnvError
from agentgym.registry import env_class, make
from agentgym.tools import ToolFunction
from agentgym.trl import _loop
from agentgym.trl._episode import finish
from agentgym.types import Message, Task, ToolCall

TASK_COLUMN = "agentgym_task"
"""Dataset column holding each row's :class:`~agentgym.types.Task` as JSON."""

EnvSource = str | type[Env] | Callable[[], Env]
"""A registered env id, an ``Env`` subclass, or a no-argument callable returning a fresh env."""


def env_factory(source: EnvSource) -> tuple[type[Env], Callable[[], Env]]:
    """The env class behind ``source`` and a no-argument function building a fresh env."""
    if isinstance(source, str):
        return env_class(source), lambda: make(source)
    if isinstance(source, type) and issubclass(source, Env):
        cls: type[Env] = source
        return cls, cls
    probe = source()
    if not isinstance(probe, Env):
        raise EnvError(f"{source!r} must return an agentgym Env, got {type(probe).__name__}")
    return type(probe), cast("Callable[[], Env]", source)


def observation_text(messages: Sequence[Message]) -> str:
    """The text of an env's answer (images are left out: TRL's tool messages carry text)."""
    return "\n".join(m.text for m in messages)


_live: weakref.WeakSet[AgentgymEnvironment] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Close every env still open when the process exits: TRL never closes the ones it pools.

    Closing returns sandboxes (and stops containers) that would otherwise outlive training.
    """
    envs = [e.env for e in list(_live)]
    if envs:
        async def close() -> None:
            for env in envs:
                await env.close()

        _loop.run(close(), timeout=60)


class AgentgymEnvironment:
    """Base of the classes :func:`environment_class` generates; one instance serves many rollouts.

    Attributes:
        env: The agentgym env this object drives.
        done: The episode has ended (a final tool was called or the turn limit reached).
        failure: Why the env crashed this episode (a dead sandbox), or ``None``.
    """

    _make_env: ClassVar[Callable[[], Env]]

    def __init__(self) -> None:
        self.env = type(self)._make_env()
        self.done = False
        self.failure: str | None = None
        _live.add(self)

    def reset(self, **row: Any) -> str | None:
        """Start an episode on the row's task; the prompt is already in the row, so nothing is appended."""
        if TASK_COLUMN not in row:
            raise EnvError(f"dataset rows need a {TASK_COLUMN!r} column: build them with task_dataset()")
        task = Task.model_validate_json(row[TASK_COLUMN])
        self.done, self.failure = False, None
        try:
            _loop.run(self.env.reset(task))
        except Exception as e:  # a sandbox that would not start fails this episode, not the batch
            self._fail(e)
        return None

    def _fail(self, error: Exception) -> None:
        self.done, self.failure = True, f"{type(error).__name__}: {error}"
        if self.env.trajectory is not None:
            self.env.trajectory.outcome, self.env.trajectory.failure = "error", self.failure

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self.done:
            return "Error: the episode is over; no further tool calls are run."
        arguments_json = json.dumps(arguments, default=str)
        call = ToolCall(id=f"call_{uuid.uuid4().hex[:8]}", name=name, arguments=arguments_json)
        try:
            result = _loop.run(self.env.step(Message(role="assistant", tool_calls=[call])))
        except Exception as e:  # the env crashed (bad input already came back as an observation)
            self._fail(e)
            return f"Error: the environment failed: {self.failure}"
        self.done = result.terminated or result.truncated
        return observation_text(result.observation)

    def get_reward(self) -> float | None:
        """The episode's return: turn rewards plus the outcome reward (scored now if still running).

        ``None`` when the env crashed: TRL then gives the rollout no advantage.
        """
        if self.failure is None:
            try:
                _loop.run(finish(self.env))
            except Exception as e:
                self._fail(e)
        self.done = True
        if self.failure is not None or self.env.trajectory is None:
            return None
        return self.env.trajectory.reward


def _tool_method(tool: ToolFunction) -> Callable[..., str]:
    """A method with the tool's name, parameters and docstring that runs the tool through ``env.step``."""

    def method(self: AgentgymEnvironment, **arguments: Any) -> str:
        return self._call(tool.name, arguments)

    signature = inspect.signature(tool.fn)
    hints = get_type_hints(tool.fn)
    params = [p for name, p in signature.parameters.items() if name != "self"]
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = tool.fn.__doc__
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *params],
        return_annotation=str,
    )
    method.__annotations__ = {**{p.name: hints[p.name] for p in params}, "return": str}
    return method


def environment_class(source: EnvSource, *, name: str | None = None) -> type[AgentgymEnvironment]:
    """A TRL environment class for an agentgym env: its tools as methods, plus ``reset`` and ``get_reward``.

    Args:
        source: The env to adapt.
        name: The class name, which is what TRL logs the reward under; the env class's name by default.
    """
    cls, make_env = env_factory(source)
    namespace: dict[str, Any] = {"_make_env": staticmethod(make_env), "__doc__": cls.__doc__}
    for tool_name, tool in cls._tools.items():
        if tool_name in ("reset", "get_reward") or tool_name.startswith("_") or not tool_name.isidentifier():
            raise EnvError(f"tool {tool_name!r} of {cls.__name__} cannot be a TRL environment method")
        namespace[tool_name] = _tool_method(tool)
    return type(name or cls.__name__, (AgentgymEnvironment,), namespace)


def task_dataset(
    source: EnvSource, tasks: Sequence[Task] | None = None, *, repeat: int | None = 1, seed: int = 0
) -> Any:
    """A ``datasets`` dataset of the env's opening messages (``prompt``) and the task (:data:`TASK_COLUMN`).

    The task's JSON is also stored under :data:`TASK_COLUMN` in the prompt's last message, because TRL
    hands a ``rollout_func`` the prompts and nothing else of the row; chat templates ignore the key.

    Args:
        source: The env the tasks belong to; its :meth:`~Env.opening_messages` builds each prompt.
        tasks: The tasks; the env's built-in :meth:`~Env.tasks` by default.
        repeat: How many times to list each task (a ``Dataset`` of ``repeat * len(tasks)`` rows), or
            ``None`` for an endless ``IterableDataset`` that builds each row when the trainer reads it,
            passing over the tasks in a fresh order drawn from ``seed`` each time. Use the stream for
            a large task set (the search env's 48,201 questions): it holds one row at a time, where a
            repeated list holds every row at once. ``GRPOTrainer`` then needs ``max_steps``.
        seed: Seeds the stream's order (TRL shuffles the rows again with its own seed).
    """
    _, make_env = env_factory(source)
    env = make_env()
    tasks = list(tasks) if tasks is not None else env.tasks()
    if not tasks:
        raise EnvError(f"{type(env).__name__} has no built-in tasks: pass tasks=")
    if repeat is None:
        return _task_stream(env, tasks, seed)
    from datasets import Dataset  # type: ignore[import-untyped]

    if repeat < 1:
        raise EnvError(f"repeat must be at least 1 (or None for an endless stream), not {repeat}")
    return Dataset.from_list([task_row(env, task) for task in tasks] * repeat)


def task_row(env: Env, task: Task) -> dict[str, Any]:
    """One dataset row: the task's opening messages as ``prompt``, and the task's JSON."""
    task_json = task.model_dump_json()
    prompt = [{"role": m.role, "content": m.text, TASK_COLUMN: None} for m in env.opening_messages(task)]
    prompt[-1][TASK_COLUMN] = task_json  # rollout_func sees only prompts, so the task rides along
    return {"prompt": prompt, TASK_COLUMN: task_json}


def _task_stream(env: Env, tasks: Sequence[Task], seed: int) -> Any:
    """An endless ``IterableDataset`` of :func:`task_row` rows, each pass over ``tasks`` in a new seeded order.

    Built on ``ExamplesIterable`` rather than ``IterableDataset.from_generator``, which fingerprints its
    arguments by pickling them: an env holding a search index or a client cannot be pickled, and the
    tasks need not be.
    """
    from datasets import IterableDataset
    from datasets.iterable_dataset import ExamplesIterable  # type: ignore[import-untyped]

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        rng = random.Random(seed)
        order = list(range(len(tasks)))
        for n in itertools.count():
            rng.shuffle(order)
            for i in order:
                yield n * len(order) + i, task_row(env, tasks[i])

    return IterableDataset(ExamplesIterable(rows, {}))


@dataclass
class EnvironmentSpec:
    """What ``GRPOTrainer`` needs to train on an agentgym env through ``environment_factory``.

    The env's reward arrives through the generated class's ``get_reward`` (logged as
    ``rewards/<EnvClass>/mean``); ``reward_funcs`` holds any extra reward functions you add.
    """

    train_dataset: Any
    environment_factory: type[AgentgymEnvironment]
    reward_funcs: list[Callable[..., list[float | None]]] = field(default_factory=list)

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``GRPOTrainer(...)``."""
        return {"train_dataset": self.train_dataset, "environment_factory": self.environment_factory,
                "reward_funcs": self.reward_funcs}


def environment_spec(
    source: EnvSource, tasks: Sequence[Task] | None = None, *, repeat: int | None = 1
) -> EnvironmentSpec:
    """The dataset and environment class to train on ``source`` with TRL's ``environment_factory``."""
    return EnvironmentSpec(task_dataset(source, tasks, repeat=repeat), environment_class(source))
