"""The ``environment_factory`` path: TRL owns the loop and calls an agentgym env's tools as methods.

TRL (>= 1.16) builds one environment object per rollout with a no-argument factory, calls
``reset(**row)`` with the dataset row, discovers tools as the public functions of the object's
*class* (``inspect.getmembers(type(env), inspect.isfunction)``, reading signatures and Google-style
docstrings), and calls ``get_reward()`` when the rollout ends, if the class has one.
:func:`environment_class` generates such a class for any agentgym env: one method per tool, with the
tool's parameters and docstring (:mod:`agentgym.trl.schema`), each running one ``env.step`` on the
process's env loop, so turn rewards, argument validation and error observations behave exactly as
in evaluation.

A batch's env work overlaps wherever TRL lets it: ``reset`` starts the episode on the env loop and
returns at once (the prompt is already in the row), so a batch's resets run together; the reward
function of :func:`environment_spec` scores the whole batch at once and logs the env's metrics
(:mod:`agentgym.trl.metrics`); and :class:`~agentgym.trl.EnvGRPOTrainer` runs a batch's tool calls
together. One env's work always runs in order: reset, then its calls, then scoring.

    spec = environment_spec("toy")
    trainer = EnvGRPOTrainer(model, args=config, processing_class=tokenizer, **spec.trainer_kwargs())
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import json
import random
import uuid
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar, cast

from agentgym.env import Env
from agentgym.errors import EnvError
from agentgym.registry import env_class, make
from agentgym.trl import _loop
from agentgym.trl._episode import finish
from agentgym.trl.metrics import episode_metrics, log_batch
from agentgym.trl.schema import check_describable, tool_method
from agentgym.types import Message, Task, ToolCall

TASK_COLUMN = "agentgym_task"
"""Dataset column holding each row's :class:`~agentgym.types.Task` as JSON."""

T = TypeVar("T")

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


def arguments_key(name: str, arguments: dict[str, Any]) -> str:
    """One string per (tool, arguments) pair, to match a call TRL makes with one started ahead."""
    return name + json.dumps(arguments, sort_keys=True, default=str)


_live: weakref.WeakSet[AgentgymEnvironment] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """When the process exits, close every env still open (TRL never closes the ones it pools), then
    the env loop's sandbox runtime (that loop's default: every env of the adapter draws from it), once.

    Closing stops the containers, browsers and spares that would otherwise outlive training.
    """
    if not _loop.started():
        return
    envs = [e.env for e in list(_live)]

    async def close() -> None:
        from agentgym.sandboxes import runtime

        await asyncio.gather(*(env.close() for env in envs), return_exceptions=True)
        await runtime.shutdown()

    _loop.run(close(), timeout=60)


class BatchCalls(Protocol):
    """What an env asks of the batch it belongs to (see :class:`~agentgym.trl.EnvGRPOTrainer`)."""

    def dispatch(self) -> None:
        """Start every tool call of the batch that TRL is about to make and that has not started yet."""


class AgentgymEnvironment:
    """Base of the classes :func:`environment_class` generates; one instance serves many rollouts.

    Its only public methods are ``reset`` and the env's tools (and ``get_reward`` when the class owns
    the reward): TRL turns every other public function of the class into a tool.

    Attributes:
        env: The agentgym env this object drives.
        done: The episode has ended (a final tool was called or the turn limit reached).
        failure: Why the env crashed this episode (a dead sandbox), or ``None``.
    """

    _make_env: ClassVar[Callable[[], Env]]
    _tool_names: ClassVar[frozenset[str]] = frozenset()

    def __init__(self) -> None:
        self.env = type(self)._make_env()
        self.done = False
        self.failure: str | None = None
        self._lock = asyncio.Lock()  # one env's work runs in order: reset, its calls, scoring
        self._started: deque[tuple[str, Future[str]]] = deque()  # calls started ahead of TRL asking
        self._batch: BatchCalls | None = None
        _live.add(self)

    def reset(self, **row: Any) -> str | None:
        """Start an episode on the row's task and return at once; the prompt is already in the row.

        The episode starts on the env loop, so a batch's resets overlap; the first tool call or the
        scoring waits for it. A reset that fails (a sandbox that will not start) fails this episode.
        """
        if TASK_COLUMN not in row:
            raise EnvError(f"dataset rows need a {TASK_COLUMN!r} column: build them with task_dataset()")
        task = Task.model_validate_json(row[TASK_COLUMN])
        self._started.clear()
        self._submit(lambda: self._start(task))
        return None

    def _submit(self, work: Callable[[], Awaitable[T]]) -> Future[T]:
        async def in_order() -> T:
            async with self._lock:
                return await work()

        return _loop.submit(in_order())

    def _fail(self, error: BaseException | str) -> None:
        self.done = True
        self.failure = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        if self.env.trajectory is not None:
            self.env.trajectory.outcome, self.env.trajectory.failure = "error", self.failure

    async def _start(self, task: Task) -> None:
        self.done, self.failure = False, None
        self.env.trajectory = None  # a reset that fails must not mark the previous episode
        try:
            await self.env.reset(task)
        except Exception as e:  # a sandbox that would not start fails this episode, not the batch
            self._fail(e)

    async def _step(self, name: str, arguments: dict[str, Any]) -> str:
        if self.failure is not None:
            return f"Error: the environment failed: {self.failure}"
        if self.done:
            return "Error: the episode is over; no further tool calls are run."
        call = ToolCall(id=f"call_{uuid.uuid4().hex[:8]}", name=name, arguments=json.dumps(arguments, default=str))
        try:
            result = await self.env.step(Message(role="assistant", tool_calls=[call]))
        except Exception as e:  # the env crashed (bad input already came back as an observation)
            self._fail(e)
            return f"Error: the environment failed: {self.failure}"
        self.done = result.terminated or result.truncated
        return observation_text(result.observation)

    async def _finish(self) -> float | None:
        """The episode's return: turn rewards plus the outcome reward (scored now if still running).

        ``None`` when the env crashed: TRL then gives the rollout no advantage.
        """
        if self.failure is None:
            try:
                await finish(self.env)
            except Exception as e:
                self._fail(e)
        self.done = True
        if self.failure is not None or self.env.trajectory is None:
            return None
        return self.env.trajectory.reward

    def _start_call(self, name: str, arguments: dict[str, Any]) -> None:
        """Start a call TRL is about to make, so it runs alongside the rest of the batch's."""
        self._started.append((arguments_key(name, arguments), self._submit(lambda: self._step(name, arguments))))

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._batch is not None and not self._started:
            self._batch.dispatch()
        if not self._started:
            return _loop.wait(self._submit(lambda: self._step(name, arguments)))
        key, started = self._started.popleft()
        result = _loop.wait(started)
        if key != arguments_key(name, arguments):
            self._abandon_started(f"TRL made the call {name}({arguments}) where another was started ahead")
            return f"Error: the environment failed: {self.failure}"
        return result

    def _abandon_started(self, reason: str) -> int:
        """Fail the episode if calls were started that TRL did not make as expected; how many were left.

        The env ran steps the model's context will not show, so the episode must not be trained on.
        """
        left = len(self._started)
        for _, started in self._started:
            _loop.wait(started)
        self._started.clear()
        _loop.wait(self._submit(lambda: self._crash(reason)))
        return left

    async def _crash(self, reason: str) -> None:
        self._fail(reason)


class _OwnsReward(AgentgymEnvironment):
    def get_reward(self) -> float | None:
        """The episode's return (scored now if still running); ``None`` when the env crashed."""
        return _loop.wait(self._submit(self._finish))


def environment_class(
    source: EnvSource, *, name: str | None = None, owns_reward: bool = True
) -> type[AgentgymEnvironment]:
    """A TRL environment class for an agentgym env: its tools as methods, plus ``reset``.

    Args:
        source: The env to adapt.
        name: The class name, which is what TRL logs the reward under; the env class's name by default.
        owns_reward: Give the class ``get_reward()``, which TRL calls once per rollout, one after the
            other, and logs as ``rewards/<name>/mean``. :func:`environment_spec` turns this off and
            passes :func:`environment_reward_func` instead, which scores a batch at once and logs
            the env's metrics.

    Raises:
        EnvError: A tool TRL cannot call as a method (named like ``reset``, ``get_reward`` or
            ``_private``), or whose parameters transformers cannot describe.
    """
    cls, make_env = env_factory(source)
    base = _OwnsReward if owns_reward else AgentgymEnvironment
    tools = cls.tool_functions()
    namespace: dict[str, Any] = {"_make_env": staticmethod(make_env), "_tool_names": frozenset(tools),
                                 "__doc__": cls.__doc__}
    for tool_name, tool in tools.items():
        if tool_name in ("reset", "get_reward") or tool_name.startswith("_") or not tool_name.isidentifier():
            raise EnvError(f"tool {tool_name!r} of {cls.__name__} cannot be a TRL environment method")
        method = tool_method(tool, AgentgymEnvironment._call)
        check_describable(method, cls.__name__)
        namespace[tool_name] = method
    return type(name or cls.__name__, (base,), namespace)


def environment_reward_func(name: str) -> Callable[..., list[float | None]]:
    """A TRL reward function that scores a batch's episodes at once and logs the env's metrics.

    It reads the episodes off the ``environments`` TRL passes to reward functions, scores all of
    them concurrently on the env loop (a crashed one scores ``None``: no advantage), and logs
    :mod:`agentgym.trl.metrics` through ``log_metric``. Named ``name``, so TRL logs the reward as
    ``rewards/<name>/mean``, the same column the ``rollout_func`` path gives.
    """

    def reward(environments: list[Any], log_metric: Callable[[str, float], None] | None = None,
               **_: Any) -> list[float | None]:
        ours = [e for e in environments if isinstance(e, AgentgymEnvironment)]
        scoring = {id(e): e._submit(e._finish) for e in ours}
        rewards = [_loop.wait(scoring[id(e)]) if id(e) in scoring else None for e in environments]
        if log_metric is not None and ours:
            log_batch(log_metric, [episode_metrics(e.env.trajectory, e.failure) for e in ours])
        return rewards

    reward.__name__ = reward.__qualname__ = name
    return reward


def reward_name(source: EnvSource, class_name: str) -> str:
    """The env's name in TRL's logs (``rewards/<name>/mean``): its registered id when ``source`` is one
    (``agentgym/toy-v0``, the name a user gave), else its class's name."""
    if isinstance(source, str):
        from agentgym.registry import resolve

        return resolve(source)
    return class_name


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

    The env's reward arrives through ``reward_funcs[0]`` (:func:`environment_reward_func`, logged as
    ``rewards/<env id>/mean``, see :func:`reward_name`); append any extra reward functions of yours.
    """

    train_dataset: Any
    environment_factory: type[AgentgymEnvironment]
    reward_funcs: list[Callable[..., list[float | None]]] = field(default_factory=list)
    reward_weights: list[float] | None = None
    """One weight per reward function when the spec has components (0 for the env's total)."""

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``GRPOTrainer(...)`` or :class:`~agentgym.trl.EnvGRPOTrainer`."""
        return {"train_dataset": self.train_dataset, "environment_factory": self.environment_factory,
                "reward_funcs": self.reward_funcs}

    def config_overrides(self) -> dict[str, Any]:
        """``GRPOConfig`` keyword arguments this spec needs: per-component normalisation when it has components."""
        return component_config(self.reward_weights)


def component_config(weights: list[float] | None) -> dict[str, Any]:
    """``multi_objective_aggregation="normalize_then_sum"`` and the weights, or nothing without components."""
    if weights is None:
        return {}
    return {"multi_objective_aggregation": "normalize_then_sum", "reward_weights": list(weights)}


def environment_spec(
    source: EnvSource, tasks: Sequence[Task] | None = None, *, repeat: int | None = 1,
    components: Mapping[str, float] | None = None,
) -> EnvironmentSpec:
    """The dataset, environment class and env reward function to train on ``source`` with ``environment_factory``.

    ``components`` (name to weight) adds one reward function per reward component, normalised within
    its group by TRL under :meth:`EnvironmentSpec.config_overrides` (see :mod:`agentgym.trl.components`).
    """
    from agentgym.trl.components import component_reward_funcs

    cls = environment_class(source, owns_reward=False)
    funcs: list[Callable[..., list[float | None]]] = [environment_reward_func(reward_name(source, cls.__name__))]
    weights = None
    if components is not None:
        extra, component_weights = component_reward_funcs(components)
        funcs, weights = funcs + extra, [0.0, *component_weights]
    return EnvironmentSpec(task_dataset(source, tasks, repeat=repeat), cls, funcs, weights)
