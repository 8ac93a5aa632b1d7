"""The environment base class: an async, multi-turn, tool-calling episode in Gymnasium's words."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from agentgym.errors import EnvError, ToolError
from agentgym.parsing import ParsedCall, parse_tool_calls
from agentgym.tools import ToolFunction, collect_tools
from agentgym.types import Message, Reward, StepResult, Task, ToolErrorKind, ToolSpec, Trajectory, Turn

if TYPE_CHECKING:
    from agentgym.policies.base import Policy


class ToolResult:
    """What a tool may return instead of a plain string: content plus a turn reward and info."""

    __slots__ = ("content", "info", "reward")

    def __init__(self, content: str | list[Any], *, reward: float = 0.0, info: dict[str, Any] | None = None):
        self.content = content
        self.reward = reward
        self.info = info or {}


class Env:
    """An episode in which a model speaks in chat messages and acts by calling tools.

    The loop, seen from a policy or a trainer::

        async with agentgym.make("code") as env:
            messages = await env.reset(task)            # opening messages: system + user
            while True:
                action = await policy.act(messages, env.tools)
                result = await env.step(action)         # StepResult
                messages += [action, *result.observation]
                if result.terminated or result.truncated:
                    break

    ``reset(task, seed=...)`` starts an episode and returns the opening messages. ``step(action)``
    takes one assistant message, runs each of its tool calls, and returns a :class:`StepResult`: one
    ``tool`` message per call as the observation, the turn's reward, ``terminated`` when a final tool
    was called (or the model answered in plain text, if :attr:`text_ends_episode`), ``truncated`` when
    :attr:`max_turns` ran out first. When an episode ends, :meth:`score` gives the outcome reward, which
    is added to that last step's reward; ``info["reward"]`` holds its components.

    Writing an environment means subclassing once: write tools as typed async methods marked with
    :func:`~agentgym.tools.tool` (the docstring is what the model reads), mark the one that ends the
    episode ``final=True``, and override :meth:`score`. Set :attr:`sandbox_image` and the base class
    takes a sandbox from the warm pool on ``reset`` (``self.sandbox``) and returns it on the next reset
    or ``close``.

    Bad model output never raises: malformed JSON, an unknown tool, arguments that fail the schema, and
    a :class:`~agentgym.errors.ToolError` raised by a tool all become ``tool`` messages that say what was
    wrong, and are counted in ``trajectory.turns[i].tool_errors`` by kind. Anything else a tool raises
    (a crashed sandbox) propagates: the rollout runner records it as a failed episode with its reason.

    ``close()`` may be called any number of times; later calls do nothing.

    Attributes:
        id: The registered name, e.g. ``"code"``; set by :func:`~agentgym.registry.register`.
        max_turns: Steps before the episode is truncated.
        text_ends_episode: An assistant message with no tool call ends the episode and its text is
            taken as the final answer. When false, the model is told to call a tool instead.
        sandbox_image: Name of the sandbox image this env needs, or ``None`` for no sandbox.
    """

    id: ClassVar[str] = ""
    max_turns: ClassVar[int] = 10
    text_ends_episode: ClassVar[bool] = True
    sandbox_image: ClassVar[str | None] = None
    _tools: ClassVar[dict[str, ToolFunction]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._tools = collect_tools(cls)

    def __init__(self, *, max_turns: int | None = None, sandbox: Any = "auto") -> None:
        """
        Args:
            max_turns: Override the class's turn limit.
            sandbox: ``"docker"``, ``"local"``, ``"auto"`` (Docker when a daemon answers, else local),
                or a provider object with ``async acquire()`` (e.g. a ``SandboxPool``).
        """
        if max_turns is not None:
            if max_turns < 1:
                raise EnvError("max_turns must be at least 1")
            self.max_turns = max_turns  # type: ignore[misc]
        self.sandbox_backend = sandbox
        self.sandbox: Any = None
        self.task: Task | None = None
        self.trajectory: Trajectory | None = None
        self.final_answer: str | None = None
        self.rng = random.Random()
        self._done = False
        self._closed = False
        self._sandbox_started = 0.0

    # ----------------------------------------------------------------- the episode contract
    @property
    def done(self) -> bool:
        """Whether the current episode has ended (terminated or truncated); ``step()`` now raises."""
        return self._done

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools the model may call, as OpenAI function specs."""
        return [t.spec for t in self._tools.values()]

    async def reset(self, task: Task | None = None, *, seed: int | None = None) -> list[Message]:
        """Start an episode on ``task`` (or one drawn from :meth:`tasks` with ``seed``); return the opening messages."""
        if self._closed:
            raise EnvError(f"{type(self).__name__} is closed")
        if seed is not None:
            self.rng.seed(seed)
        if task is None:
            pool = self.tasks()
            if not pool:
                raise EnvError(f"{type(self).__name__} has no built-in tasks: pass a Task to reset()")
            task = self.rng.choice(pool)
        await self.release_sandbox()
        self.task, self.final_answer, self._done = task, None, False
        if self.sandbox_image is not None:
            from agentgym.sandboxes import acquire

            self.sandbox = await acquire(self.sandbox_backend, image=self.sandbox_image)
            self._sandbox_started = time.monotonic()
        await self.setup(task)
        messages = self.opening_messages(task)
        self.trajectory = Trajectory(task_id=task.id, env=self.id or type(self).__name__, seed=seed, messages=messages)
        return list(messages)

    async def step(self, action: Message | Mapping[str, Any]) -> StepResult:
        """Run one assistant message's tool calls and answer them.

        ``action`` is a :class:`~agentgym.types.Message`, or the same in OpenAI's format: a dict, or
        the message object the OpenAI SDK returns.
        """
        if self.trajectory is None or self.task is None:
            raise EnvError("step() called before reset()")
        try:
            action = Message.coerce(action)
        except ValueError as e:
            raise EnvError(f"step() needs an assistant message: {e}") from e
        if self._done:
            raise EnvError("step() called after the episode ended; call reset()")
        started = time.monotonic()
        turn = Turn(action=action)
        self.trajectory.turns.append(turn)
        calls = parse_tool_calls(action) if action.role == "assistant" else []
        terminated = False
        if not calls:
            if self.text_ends_episode:
                self.final_answer = self.answer_from_text(action.text)
                terminated = True
            else:
                turn.tool_errors.append("no_tool_call")
                names = ", ".join(self._tools)
                turn.observation.append(Message(role="user", content=f"Call one of the tools: {names}."))
        for call in calls:
            message, final = await self._run_call(call, turn)
            turn.observation.append(message)
            if final:
                terminated = True
                break
        truncated = not terminated and len(self.trajectory.turns) >= self.max_turns
        info: dict[str, Any] = {}
        self.trajectory.reward += turn.reward
        if terminated or truncated:
            info["reward"] = (await self.end("terminated" if terminated else "truncated")).model_dump()
        turn.env_seconds = time.monotonic() - started
        if turn.tool_errors:
            info["tool_errors"] = list(turn.tool_errors)
        return StepResult(
            observation=list(turn.observation), reward=turn.reward,
            terminated=terminated, truncated=truncated, info=info,
        )

    async def end(self, outcome: Literal["terminated", "truncated"] = "truncated") -> Reward:
        """End the current episode now and score it as it stands; ``step`` calls this when an episode ends.

        A driver that stops an episode early (a trainer out of tokens, a model that answered in text
        the driver keeps) calls it to get the outcome reward all the same. The reward is added to the
        last turn and to the trajectory's return, and its components are recorded.
        """
        if self.trajectory is None:
            raise EnvError("end() called before reset()")
        if self._done:
            raise EnvError("the episode has already ended")
        self._done = True
        reward = await self.score()
        trajectory = self.trajectory
        trajectory.outcome_reward = reward.value
        trajectory.reward_components = dict(reward.components)
        trajectory.info.update(reward.info)
        trajectory.reward += reward.value
        if trajectory.turns:
            trajectory.turns[-1].reward += reward.value
        trajectory.outcome = outcome
        return reward

    async def close(self) -> None:
        """Release the sandbox and anything :meth:`teardown` frees; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.teardown()
        finally:
            await self.release_sandbox()

    async def __aenter__(self) -> Env:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- hooks for subclasses
    def tasks(self) -> Sequence[Task]:
        """Built-in tasks, used when ``reset()`` gets none."""
        return []

    def opening_messages(self, task: Task) -> list[Message]:
        """The system and user messages an episode starts with."""
        out = []
        system = task.system or self.system_prompt(task)
        if system:
            out.append(Message(role="system", content=system))
        out.append(Message(role="user", content=task.prompt))
        return out

    def system_prompt(self, task: Task) -> str | None:
        """The system prompt for ``task`` when the task carries none."""
        return None

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        """Named scripted policies for this env, e.g. ``{"reference": ..., "baseline": ...}``.

        ``agentgym eval ENV --model reference`` looks here before treating the name as a litellm model,
        so every environment can ship a no-key end-to-end check of itself.
        """
        return {}

    def answer_from_text(self, text: str) -> str:
        """The final answer in a plain-text reply (used when the model ends without a final tool)."""
        return text

    async def setup(self, task: Task) -> None:
        """Prepare ``task`` after the sandbox is acquired (copy files in, start services)."""

    async def teardown(self) -> None:
        """Free what :meth:`setup` made; called by ``close()``."""

    async def score(self) -> Reward:
        """The outcome reward of the finished episode; 0 unless a subclass says otherwise."""
        return Reward(value=0.0)

    # ----------------------------------------------------------------- internals
    async def _run_call(self, call: ParsedCall, turn: Turn) -> tuple[Message, bool]:
        def error(kind: ToolErrorKind, text: str) -> tuple[Message, bool]:
            turn.tool_errors.append(kind)
            return Message(role="tool", tool_call_id=call.id, name=call.name, content=f"Error: {text}"), False

        if call.error is not None:
            return error(call.error, call.error_message or "could not parse the tool call")
        fn = self._tools.get(call.name)
        if fn is None:
            return error("unknown_tool", f"unknown tool {call.name!r}; available: {', '.join(self._tools)}")
        try:
            arguments = fn.validate(call.arguments)
        except ValueError as e:
            return error("invalid_arguments", f"invalid arguments for {call.name}: {e}")
        try:
            result = await fn.fn(self, **arguments)
        except ToolError as e:
            return error("tool_raised", str(e))
        content: Any = result
        if isinstance(result, ToolResult):
            content = result.content
            turn.reward += result.reward
            turn.info.update(result.info)
        if fn.final:
            self.final_answer = self.final_answer if self.final_answer is not None else str(content)
        return Message(role="tool", tool_call_id=call.id, name=call.name, content=content), fn.final

    async def release_sandbox(self) -> None:
        """Give the episode's sandbox back now rather than at the next reset or close.

        For an env that is done with it early, e.g. before scoring in a fresh sandbox, so that a
        busy run holds one sandbox per episode instead of two.
        """
        if self.sandbox is None:
            return
        sandbox, self.sandbox = self.sandbox, None
        if self.trajectory is not None:
            self.trajectory.sandbox_seconds += time.monotonic() - self._sandbox_started
        await sandbox.close()
