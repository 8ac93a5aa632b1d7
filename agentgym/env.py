"""The environment base class: an async, multi-turn, tool-calling episode in Gymnasium's words."""

from __future__ import annotations

import inspect
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from agentgym.errors import EnvError, ToolError
from agentgym.parsing import ParsedCall, parse_tool_calls
from agentgym.rewards.verifier import Episode, ScoreFn, Verifier, VerifierLike, as_verifier
from agentgym.tools import ToolFunction, collect_tools
from agentgym.types import (
    Message,
    Reward,
    StepResult,
    Task,
    ToolCall,
    ToolErrorKind,
    ToolSpec,
    Trajectory,
    Turn,
    Usage,
)

if TYPE_CHECKING:
    from agentgym.policies.base import Policy
    from agentgym.sandboxes.contract import Sandbox
    from agentgym.sandboxes.lending import Lease
    from agentgym.sandboxes.runtime import SandboxRuntime
    from agentgym.sandboxes.spec import SandboxSpec


class ToolResult:
    """What a tool may return instead of a plain string: content plus a turn reward and info."""

    __slots__ = ("content", "info", "reward")

    def __init__(self, content: str | list[Any], *, reward: float = 0.0, info: dict[str, Any] | None = None):
        self.content = content
        self.reward = reward
        self.info = info or {}


@dataclass(frozen=True)
class Dodge:
    """A known way for a model to break its own episode, as the replies it sends (``Env.dodges``).

    A policy under RL prefers an episode that ends in an error (no grade: no advantage, replayed on
    ``--resume``) to one graded a failure, so the env must grade whatever the model does.
    :func:`agentgym.testing.check_env` plays each dodge: the replies in order, then ``end()`` if the
    episode is still going; it must end ``terminated`` or ``truncated``, not a success, within its time.

    Attributes:
        replies: Assistant messages, sent one a turn (the episode may end before the last).
        task: The task to play it on; the env's first built-in task by default.
    """

    replies: tuple[Message, ...]
    task: Task | None = None

    @classmethod
    def calls(cls, *calls: tuple[str, dict[str, Any]], task: Task | None = None) -> Dodge:
        """A dodge of one tool call a turn: ``(name, arguments)`` each."""
        return cls(tuple(Message(role="assistant", tool_calls=[ToolCall(id=f"dodge_{i}", name=name,
                                                                         arguments=json.dumps(arguments))])
                         for i, (name, arguments) in enumerate(calls)), task)


class Responder(Protocol):
    """Answers the model's plain-text reply with a turn of the env's own: a simulated user, for one.

    Returning messages (``user`` messages, usually) continues the episode with them as the
    observation; returning ``None`` lets the reply end the episode as it would without a responder.
    """

    async def respond(self, env: Env, text: str) -> list[Message] | None: ...


class Feedback(Protocol):
    """Answers a final answer, given its score: returning messages gives the model another try.

    ``None`` ends the episode with that score. ``env.trajectory.attempts`` holds the score of every
    final answer so far, the current one last.
    """

    async def review(self, env: Env, reward: Reward) -> list[Message] | None: ...


class Env:
    """An episode in which a model speaks in chat messages and acts by calling tools.

    The loop, seen from a policy or a trainer::

        async with agentgym.make("agentgym/code-v0") as env:
            messages = await env.reset(task)            # opening messages: system + user
            while True:
                reply = await policy.act(messages, env.tools, task=task)
                result = await env.step(reply.message)  # StepResult
                messages += [reply.message, *result.observation]
                if result.terminated or result.truncated:
                    break

    ``reset(task, seed=...)`` starts an episode and returns the opening messages. ``step(action)``
    takes one assistant message, runs each of its tool calls, and returns a :class:`StepResult`: one
    ``tool`` message per call as the observation, the turn's reward, ``terminated`` when the model gave
    its final answer (a final tool, or a plain-text reply if :attr:`text_ends_episode`), ``truncated``
    when :attr:`max_turns` ran out first. When an episode ends, the env's :attr:`verifier` scores it
    (:meth:`score`); the outcome reward is added to that last step's reward and ``info["reward"]``
    holds its components.

    Writing an environment means subclassing once (``docs/writing-envs.md`` walks through it):

    - tools are typed methods marked with :func:`~agentgym.tools.tool` (``async def``, or ``def`` to
      run in a thread); the docstring is what the model reads; the one that ends the episode is
      ``final=True`` and its result (or what it sets as ``self.final_answer``) is the final answer;
    - ``verifier`` declares how an episode is scored: a function of the :class:`~agentgym.rewards.Episode`
      (task, trajectory, final answer, and the :meth:`final_state` the env exposes), a
      :class:`~agentgym.rewards.Rubric`, or an :class:`~agentgym.rewards.LLMJudge`. ``score`` is not
      overridden: one contract scores every episode, whoever drives the env;
    - :meth:`tasks` lists built-in tasks, :meth:`load_tasks` reads a task file, and
      :meth:`scripted_policies` names a ``reference`` (and a ``baseline``) policy;
    - :meth:`respond` answers a plain-text reply with a turn of the env's own (a simulated user), and
      :meth:`review` may give the model another try after a final answer (see ``agentgym.feedback``).

    Set :attr:`sandbox_image` (a Python sandbox of that image) or :attr:`sandbox_spec` (any kind: a
    container recycled by a recycler of the env's, a browser), or override :meth:`sandbox_for` for a
    spec per task, and the base class takes a lease on ``reset`` (``self.sandbox``, the live one) and
    gives it back on the next reset or ``close``: the one acquire and release path of every env. The
    lease comes from the pools of one :class:`~agentgym.sandboxes.runtime.SandboxRuntime`: the
    constructor's ``runtime``, else the one current when it needs a sandbox (:meth:`sandbox_runtime`).

    Bad model output never raises: malformed JSON, an unknown tool, arguments that fail the schema, a
    :class:`~agentgym.errors.ToolError` raised by a tool, and any exception type listed in
    :attr:`model_errors` all become ``tool`` messages that say what was wrong, and are counted in
    ``trajectory.turns[i].tool_errors`` by kind. Anything else a tool raises (a crashed sandbox)
    propagates: the rollout runner records it as a failed episode with its reason.

    ``close()`` may be called any number of times; later calls do nothing.

    Attributes:
        id: The registered id, e.g. ``"agentgym/code-v0"``; set by :func:`~agentgym.registry.make`.
        max_turns: Steps before the episode is truncated.
        text_ends_episode: An assistant message with no tool call (that :meth:`respond` does not
            answer) ends the episode and its text is the final answer. When false, the model is
            told to call a tool instead.
        sandbox_image: Name of the Python sandbox image this env needs, or ``None`` for no sandbox.
        sandbox_spec: The sandbox this env needs, of any kind (:class:`~agentgym.sandboxes.SandboxSpec`);
            it wins over :attr:`sandbox_image`.
        model_errors: Exception types a tool raises when the *model* erred (tau2's tools raise
            ``ValueError`` for a wrong id): they go back to the model as tool errors instead of
            crashing the episode. :class:`~agentgym.errors.ToolError` always does.
        verifier: Scores a finished episode; ``None`` scores 0. A plain function set in the class body
            is called with the episode only (it is not a method).
        release_before_scoring: Give the episode's sandbox back once :meth:`final_state` has taken
            its snapshot, before the verifier runs: for a verifier that works in sandboxes of its own,
            so that a busy run holds one sandbox per episode rather than two.
        revealed_info: Keys of a reward's ``info`` that feedback may show the model word for word
            (:meth:`feedback_report`). None by default: ``info`` holds what the grader saw, which may
            be hidden from the model (a code task's tests and their expected values).
        max_calls_per_turn: Tool calls one message may have run; the rest are answered with a
            ``turn_limit`` tool error and not run.
        max_turn_chars: Characters of arguments, summed over one message's calls, that may run; a
            call that would go past it is refused (``turn_limit``), as are those after it.
        max_turn_seconds: Seconds of tool work one message may start: a call that would begin after
            them is refused (``turn_limit``). A turn's work is then at most this plus one call's own
            limit, so one message of many calls cannot outlast a driver's turn timeout and turn a
            grade into a ``timeout`` (``check_env``'s no-dodge check sends such a message).
    """

    id: ClassVar[str] = ""
    max_turns: ClassVar[int] = 10
    text_ends_episode: ClassVar[bool] = True
    sandbox_image: ClassVar[str | None] = None
    sandbox_spec: ClassVar[SandboxSpec | None] = None
    model_errors: ClassVar[tuple[type[Exception], ...]] = ()
    verifier: ClassVar[Verifier | ScoreFn | None] = None  # spelled out: mypy binds self through the alias
    release_before_scoring: ClassVar[bool] = False
    revealed_info: ClassVar[tuple[str, ...]] = ()
    max_calls_per_turn: ClassVar[int] = 32
    max_turn_chars: ClassVar[int] = 1 << 20
    max_turn_seconds: ClassVar[float] = 120.0
    _tools: ClassVar[dict[str, ToolFunction]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._tools = collect_tools(cls, reserved=RESERVED_NAMES)
        if "score" in vars(cls):
            raise TypeError(
                f"{cls.__name__} overrides Env.score(); declare the env's verifier instead "
                "(verifier = a function of the Episode, a Rubric or an LLMJudge)"
            )
        verifier = vars(cls).get("verifier")
        if inspect.isfunction(verifier) and next(iter(inspect.signature(verifier).parameters), None) == "self":
            raise TypeError(f"{cls.__name__}.verifier is called with the Episode only, not as a method: "
                            "drop `self` (episode.state is the env's final_state())")

    def __init__(
        self,
        *,
        max_turns: int | None = None,
        sandbox_backend: Any = "auto",
        verifier: VerifierLike | None = None,
        user: Responder | None = None,
        feedback: Feedback | None = None,
        runtime: SandboxRuntime | None = None,
    ) -> None:
        """Every env accepts these keyword arguments; a subclass adds its own and passes ``**kwargs`` on.

        Args:
            max_turns: Override the class's turn limit.
            sandbox_backend: Where sandboxes come from: ``"docker"``, ``"local"``, ``"auto"`` (Docker
                when an engine answers, else local), or a provider with ``async acquire()`` (e.g. a
                ``SandboxPool``). Ignored by envs without a :attr:`sandbox_image`. The live sandbox of
                the current episode is ``self.sandbox``.
            verifier: Score episodes with this instead of the class's :attr:`verifier`.
            user: Answers plain-text replies (a :class:`~agentgym.users.SimulatedUser`), see :meth:`respond`.
            feedback: Reviews final answers (:class:`~agentgym.feedback.TryAgain`,
                :class:`~agentgym.feedback.LanguageFeedback`), see :meth:`review`.
            runtime: The :class:`~agentgym.sandboxes.runtime.SandboxRuntime` whose pools and kept
                sandboxes this env draws from, and which closes them; default: the one opened
                around the caller (``async with SandboxRuntime():``), else the event loop's default.
        """
        if max_turns is not None:
            if max_turns < 1:
                raise EnvError("max_turns must be at least 1")
            self.max_turns = max_turns  # type: ignore[misc]
        self.sandbox_backend = sandbox_backend
        self.runtime = runtime
        self._sandbox: Sandbox | Lease[Any] | None = None  # a lease from the runtime's pools, or a provider's sandbox
        self._spec: SandboxSpec | None = None  # what the episode's sandbox is
        self._verifier = verifier
        self.user = user
        self.feedback = feedback
        self.task: Task | None = None
        self.trajectory: Trajectory | None = None
        self.rng = random.Random()
        self._done = False
        self._closed = False
        self._sandbox_started = 0.0

    # ----------------------------------------------------------------- the episode contract
    @property
    def done(self) -> bool:
        """Whether the current episode has ended (terminated or truncated); ``step()`` now raises."""
        return self._done

    @classmethod
    def tool_specs(cls) -> list[ToolSpec]:
        """The tools the model may call, as OpenAI function specs (no instance needed)."""
        return [t.spec for t in cls._tools.values()]

    @classmethod
    def tool_functions(cls) -> dict[str, ToolFunction]:
        """The class's tools by name with their functions (signature and type hints included): what an
        adapter that generates typed methods from them (TRL's ``environment_factory``) needs."""
        return dict(cls._tools)

    @property
    def tools(self) -> list[ToolSpec]:
        """The tools the model may call in this episode: the class's, plus any the instance added (MCP servers)."""
        return [t.spec for t in self._tools.values()]

    @property
    def final_answer(self) -> str | None:
        """The current episode's final answer (``trajectory.final_answer``); a final tool may set it."""
        return self.trajectory.final_answer if self.trajectory is not None else None

    @final_answer.setter
    def final_answer(self, value: str | None) -> None:
        if self.trajectory is None:
            raise EnvError("final_answer set before reset()")
        self.trajectory.final_answer = value

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
        spec = await self.sandbox_for(task)
        if spec != self._spec or spec is None or spec.held == "episode" or not self._lease_alive():
            await self.release_sandbox()
        self._spec = spec
        self.task, self._done = task, False
        self.trajectory = Trajectory(task_id=task.id, env=self.id or type(self).__name__, seed=seed)
        if spec is not None and self._sandbox is None:
            await self._acquire_sandbox()
        await self.setup(task)
        messages = self.opening_messages(task)
        self.trajectory.messages = messages
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
        answered = False
        if not calls:
            reply = await self.respond(action.text)
            if reply:
                turn.observation.extend(reply)
            elif self.text_ends_episode:
                self.final_answer = self.answer_from_text(action.text)
                answered = True
            else:
                turn.tool_errors.append("no_tool_call")
                names = ", ".join(self._tools)
                turn.observation.append(Message(role="user", content=f"Call one of the tools: {names}."))
        spent_chars = 0
        for index, call in enumerate(calls):
            spent_chars += len(call.raw_arguments)
            refusal = self._turn_limit(index, spent_chars, time.monotonic() - started)
            if refusal is not None:
                turn.tool_errors.append("turn_limit")
                turn.observation.append(Message(role="tool", tool_call_id=call.id, name=call.name,
                                                content=f"Error: not run: {refusal}"))
                continue
            message, final = await self._run_call(call, turn)
            turn.observation.append(message)
            if final:
                answered = True
                break
        self.trajectory.reward += turn.reward
        info: dict[str, Any] = {}
        terminated = answered and not await self._another_try(turn, info)
        truncated = not terminated and len(self.trajectory.turns) >= self.max_turns
        if truncated:
            info["reward"] = (await self.end("truncated")).model_dump()
        turn.env_seconds = time.monotonic() - started
        if turn.tool_errors:
            info["tool_errors"] = list(turn.tool_errors)
        return StepResult(
            observation=list(turn.observation), reward=turn.reward,
            terminated=terminated, truncated=truncated, info=info,
        )

    async def end(self, outcome: Literal["terminated", "truncated"] = "truncated") -> Reward:
        """End the current episode now and score it as it stands; ``step`` calls this when turns run out.

        A driver that stops an episode early (a trainer out of tokens, a model that answered in text
        the driver keeps) calls it to get the outcome reward all the same. The reward is added to the
        last turn and to the trajectory's return, and its components are recorded.
        """
        if self.trajectory is None:
            raise EnvError("end() called before reset()")
        if self._done:
            raise EnvError("the episode has already ended")
        self._done = True
        return self._record_outcome(await self.score(), outcome)

    async def score(self) -> Reward:
        """Run the env's :attr:`verifier` on the episode as it stands; 0 when the env declares none.

        The verifier gets an :class:`~agentgym.rewards.Episode`: the task, the trajectory (with its
        final answer), this env's :meth:`final_state`, and where its sandboxes come from (not the env:
        a verifier cannot call the model's tools or change the env's state). With
        :attr:`release_before_scoring` the episode's sandbox goes back once the state is taken.
        """
        if self.trajectory is None or self.task is None:
            raise EnvError("score() called before reset()")
        verifier = self._verifier if self._verifier is not None else type(self).verifier  # a function stays unbound
        if verifier is None:
            return Reward(value=0.0)
        from agentgym.sandboxes.pool import SandboxSupply

        state = await self.final_state()
        if self.release_before_scoring:
            await self.release_sandbox()
        supply = SandboxSupply(self.sandbox_backend, self.sandbox_image or "python", self.sandbox_runtime())
        episode = Episode(task=self.task, trajectory=self.trajectory, state=state, sandboxes=supply)
        return await as_verifier(verifier).score(episode)

    async def close(self) -> None:
        """Release the sandbox and anything :meth:`teardown` frees; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            await self.teardown()
        finally:
            await self.release_sandbox()
            self._spec = None

    async def __aenter__(self) -> Env:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def record_usage(self, role: str, usage: Usage) -> None:
        """Count a model call made on the env's side (``"user"``, ``"feedback"``, ...) in ``trajectory.usage_by_role``.

        The policy's own usage is recorded per turn by the runner; this keeps the two apart, so an
        evaluation summary can say what the simulated user cost next to what the agent cost.
        """
        if self.trajectory is None:
            raise EnvError("record_usage() called before reset()")
        self.trajectory.usage_by_role[role] = self.trajectory.usage_by_role.get(role, Usage()) + usage

    # ----------------------------------------------------------------- hooks for subclasses
    def tasks(self) -> Sequence[Task]:
        """Built-in tasks, used when ``reset()`` gets none and by ``agentgym eval`` without ``--tasks``."""
        return []

    @classmethod
    def load_tasks(cls, path: str | Path) -> list[Task]:
        """Tasks from a file in this env's format (``agentgym eval --tasks PATH``); envs that read files override it."""
        raise EnvError(f"{cls.__name__} reads no task files: it plays its built-in tasks, or Tasks passed to reset()")

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
        so every environment can ship a no-key end-to-end check of itself; ``agentgym.testing.check_env``
        requires ``reference`` to beat ``baseline``.
        """
        return {}

    @classmethod
    def dodges(cls) -> dict[str, Dodge]:
        """Known ways for a model to break its own episode in this env, by name (see :class:`Dodge`).

        ``agentgym.testing.check_env`` plays each, with its own that apply to every env (malformed and
        unknown calls, arguments of the wrong type, strings with NUL bytes and lone surrogates, a huge
        reply), and fails unless every one ends graded. Declare what is particular to the env: a tool
        argument that makes its sandbox or verifier fail, output too large to carry, a page's script.
        """
        return {}

    def answer_from_text(self, text: str) -> str:
        """The final answer in a plain-text reply (used when the model ends without a final tool)."""
        return text

    async def setup(self, task: Task) -> None:
        """Prepare ``task`` after the sandbox is acquired (copy files in, start services, build a DB)."""

    async def teardown(self) -> None:
        """Free what :meth:`setup` made; called by ``close()``."""

    async def final_state(self) -> Any:
        """What the verifier may see of the world when the episode ends (``Episode.state``).

        A snapshot of what the model changed, e.g. a copy of a database, a repository diff read from
        the sandbox, a page. Called once per scoring, before the verifier runs; ``None`` by default.
        """
        return None

    async def respond(self, text: str) -> list[Message] | None:
        """The env's answer to a plain-text reply: messages continue the episode, ``None`` does not answer.

        By default the constructor's ``user`` (a simulated user) answers, if there is one.
        """
        return await self.user.respond(self, text) if self.user is not None else None

    def feedback_report(self, reward: Reward) -> dict[str, Any]:
        """What feedback may tell the model about a graded final answer (``LanguageFeedback``'s teacher
        reads it, and may quote it): the score, its components, the env's summary
        (:meth:`feedback_details`) and the ``info`` keys the env's author named in :attr:`revealed_info`.
        Never the rest of ``info``."""
        details = self.feedback_details(reward)
        details.update({key: reward.info[key] for key in self.revealed_info if key in reward.info})
        return {"score": reward.value, "components": reward.components, "details": details}

    def feedback_details(self, reward: Reward) -> dict[str, Any]:
        """The env's summary of a reward's ``info`` that the model may see; nothing by default."""
        return {}

    async def review(self, reward: Reward) -> list[Message] | None:
        """After a final answer scored ``reward``: messages give the model another try, ``None`` ends the episode.

        By default the constructor's ``feedback`` (``TryAgain``, ``LanguageFeedback``) decides. It is not
        asked when the turn limit has been reached.
        """
        return await self.feedback.review(self, reward) if self.feedback is not None else None

    # ----------------------------------------------------------------- internals
    async def _another_try(self, turn: Turn, info: dict[str, Any]) -> bool:
        """Score a final answer; end the episode with it, or continue if :meth:`review` answers."""
        assert self.trajectory is not None
        self._done = True
        reward = await self.score()
        self.trajectory.attempts.append(reward.value)
        more = await self.review(reward) if len(self.trajectory.turns) < self.max_turns else None
        if not more:
            info["reward"] = self._record_outcome(reward, "terminated").model_dump()
            return False
        self._done = False
        turn.observation.extend(more)
        info["attempt_reward"] = reward.value
        if self._spec is not None and not self.has_sandbox and self.task is not None:
            await self._acquire_sandbox()  # scoring gave it back (release_before_scoring)
            await self.resume(self.task)
        return True

    def _turn_limit(self, index: int, chars: int, seconds: float) -> str | None:
        """Why the ``index``-th call of a message may not run (its bounds spent), or None when it may."""
        if index >= self.max_calls_per_turn:
            return f"one message may run at most {self.max_calls_per_turn} tool calls"
        if chars > self.max_turn_chars:
            return f"one message's tool calls may carry at most {self.max_turn_chars} characters of arguments"
        if seconds > self.max_turn_seconds:
            return f"this message's tool calls used up a turn's {self.max_turn_seconds:g} s"
        return None

    def _record_outcome(self, reward: Reward, outcome: Literal["terminated", "truncated"]) -> Reward:
        trajectory = self.trajectory
        assert trajectory is not None
        trajectory.outcome_reward = reward.value
        trajectory.reward_components = dict(reward.components)
        trajectory.info.update(reward.info)
        trajectory.reward += reward.value
        if trajectory.turns:
            trajectory.turns[-1].reward += reward.value
        trajectory.outcome = outcome
        return reward

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
        if not _encodable(arguments):
            return error("invalid_arguments", f"invalid arguments for {call.name}: text with a lone surrogate "
                                              "(a \\ud800-\\udfff escape that is half of a pair) is not Unicode")
        previous = self.final_answer
        if fn.final:
            self.final_answer = None  # a final tool sets the answer, or its result is the answer
        try:
            try:
                result = await fn.call(self, arguments)
            except BaseException:
                self.final_answer = previous  # a final tool that failed gave no answer
                raise
        except ToolError as e:
            return error("tool_raised", str(e))
        except self.model_errors as e:
            return error("tool_raised", f"{type(e).__name__}: {e}")
        content: Any = result
        if isinstance(result, ToolResult):
            content = result.content
            turn.reward += result.reward
            turn.info.update(result.info)
        if fn.final and self.final_answer is None:
            self.final_answer = content if isinstance(content, str) else str(content)
        return Message(role="tool", tool_call_id=call.id, name=call.name, content=content), fn.final

    def sandbox_runtime(self) -> SandboxRuntime:
        """The runtime this env's sandboxes come from now: the constructor's ``runtime``, else the current one."""
        from agentgym.sandboxes.runtime import current

        return self.runtime or current()

    async def sandbox_for(self, task: Task) -> SandboxSpec | None:
        """The sandbox ``task``'s episode runs in, or None for none: :attr:`sandbox_spec`, else a Python
        sandbox of :attr:`sandbox_image`. Override for a spec per task (the SWE env's task images)."""
        if self.sandbox_spec is not None or self.sandbox_image is None:
            return self.sandbox_spec
        from agentgym.sandboxes.spec import SandboxSpec

        return SandboxSpec(image=self.sandbox_image)

    @property
    def sandbox(self) -> Sandbox:
        """The current episode's live sandbox: taken on ``reset`` when the env declares one (:meth:`sandbox_for`).

        Raises:
            EnvError: There is none: this env needs no sandbox, no episode is running, the env gave
                it back (:meth:`release_sandbox`, e.g. before its verifier ran), or it is a browser
                (:attr:`lease`).
        """
        from agentgym.sandboxes.contract import Sandbox
        from agentgym.sandboxes.lending import Lease

        if self._sandbox is None:
            declared = ((self.sandbox_spec, self.sandbox_image) != (None, None)
                        or type(self).sandbox_for is not Env.sandbox_for)
            why = ("holds no sandbox now: call reset(), or the episode gave it back" if declared
                   else "declares no sandbox (sandbox_image, sandbox_spec, sandbox_for)")
            raise EnvError(f"{type(self).__name__} {why}")
        if isinstance(self._sandbox, Lease) and not isinstance(self._sandbox, Sandbox):
            raise EnvError(f"{type(self).__name__}'s sandbox is a {type(self.lease.held).__name__}: env.lease.held")
        return self._sandbox

    @property
    def lease(self) -> Lease[Any]:
        """The lease on the sandbox the env holds now, whatever its kind (``lease.held`` is the sandbox).

        Raises:
            EnvError: The env holds none, or its sandbox came from a provider (``sandbox_backend``), not a pool lease.
        """
        from agentgym.sandboxes.lending import Lease

        if not isinstance(self._sandbox, Lease):
            raise EnvError(f"{type(self).__name__} holds no lease now" if self._sandbox is None
                           else f"{type(self).__name__}'s sandbox came from {self.sandbox_backend!r}, not a pool")
        return self._sandbox

    @property
    def has_sandbox(self) -> bool:
        """Whether the env holds a live sandbox now (:attr:`sandbox` or :attr:`lease` would not raise)."""
        return self._sandbox is not None

    async def resume(self, task: Task) -> None:
        """Put the episode's state into a sandbox taken anew for another try (scoring gave the last one
        back, :attr:`release_before_scoring`); by default nothing: the conversation carries on."""
        return None

    async def before_release(self) -> None:
        """Stop what the episode started in its sandbox before it goes back (in-sandbox servers); by default nothing."""
        return None

    def _lease_alive(self) -> bool:
        from agentgym.sandboxes.lending import Lease

        return isinstance(self._sandbox, Lease) and self._sandbox.active and self._sandbox.held.connected

    async def _acquire_sandbox(self) -> None:
        from agentgym.sandboxes.spec import lease

        assert self._spec is not None
        self._sandbox = await lease(self.sandbox_backend, self._spec, runtime=self.sandbox_runtime())
        self._sandbox_started = time.monotonic()

    async def release_sandbox(self) -> None:
        """Give the episode's sandbox back now rather than at the next reset or close.

        For an env that is done with it early, e.g. before scoring in a fresh sandbox, so that a
        busy run holds one sandbox per episode instead of two. A pool whose recycler the giver waits
        for (the SWE env's reset and checks) says why it will not lend the sandbox again, if it will
        not: the episode's ``info["sandbox_discarded"]``.
        """
        from agentgym.sandboxes.lending import Lease

        if self._sandbox is None:
            return
        try:
            await self.before_release()
        finally:
            sandbox, self._sandbox = self._sandbox, None
            if self.trajectory is not None:
                self.trajectory.sandbox_seconds += time.monotonic() - self._sandbox_started
            if not isinstance(sandbox, Lease):
                await sandbox.close()
            else:
                why = await sandbox.release()
                if why is not None and self.trajectory is not None:
                    self.trajectory.info["sandbox_discarded"] = why

RESERVED_NAMES = frozenset(
    {name for name in dir(Env) if not name.startswith("_")}
    | {"task", "trajectory", "rng", "sandbox", "sandbox_backend", "runtime", "user", "feedback"}
)
"""Names a tool may not take: the env's own members, which a tool method of that name would replace."""


def _encodable(value: Any) -> bool:
    """Whether every string in ``value`` (arguments parsed from JSON) can be written as UTF-8.

    JSON lets a model send a lone surrogate (``"\\ud800"``), which no file, process or socket takes:
    a tool would raise ``UnicodeEncodeError`` mid-episode, an error the model caused. So such
    arguments are refused before any tool sees them, as arguments of the wrong type are.
    """
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(_encodable(v) for v in value)
    return True
