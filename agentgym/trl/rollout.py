"""The ``rollout_func`` path: agentgym runs the multi-turn loop with the trainer's own model.

TRL (>= 1.16) calls ``rollout_func(prompts, trainer)`` with the prompts of this process's batch, each
already repeated ``num_generations`` times, and expects exactly one completion per prompt received:
``prompt_ids``, ``completion_ids``, ``logprobs`` and, optionally, ``env_mask`` (1 for tokens the model
wrote, 0 for tokens the environment wrote, which TRL keeps out of the loss). Every other key reaches
the reward functions as a keyword argument.

Each rollout here is an agentgym episode: the model generates a turn with the trainer's generation
backend (transformers or vLLM, as configured; see :mod:`agentgym.trl.generation`), the text is
parsed with agentgym's one tool-call parser and stepped through the env, and the env's answer is
appended in the chat template's own rendering, masked out. Completions are cut to
``max_completion_length`` by us; an episode the budget cuts short is scored as it stands. Per-turn
rewards and each turn's token span travel along for :class:`~agentgym.trl.credit.TurnCreditGRPOTrainer`,
and each episode's :class:`~agentgym.types.Trajectory` for any reward function that wants it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.env import Env
from agentgym.errors import EnvError
from agentgym.policies.chat_template import chat_dicts, use_tool_schemas
from agentgym.rewards.group import zero_signal_groups
from agentgym.rewards.verifier import THINK
from agentgym.trl import _loop
from agentgym.trl._episode import finish
from agentgym.trl.components import component_reward_funcs
from agentgym.trl.environment import TASK_COLUMN, EnvSource, component_config, env_factory, reward_name, task_dataset
from agentgym.trl.generation import generate
from agentgym.trl.metrics import episode_metrics, log_batch
from agentgym.types import Message, Task, Trajectory


class TemplateRenderer:
    """Token ids for prompts and env observations, rendered by the tokenizer's chat template.

    Observations are rendered the way TRL renders tool results: a short dummy conversation with and
    without the new messages, keeping the difference after the assistant's end-of-turn token. That
    needs a prefix-preserving template; when the tokenizer's is not (Qwen3's drops earlier think
    blocks), TRL's training variant of it is used, as TRL itself does.
    """

    def __init__(self, tokenizer: Any, chat_template_kwargs: dict[str, Any] | None = None,
                 tool_schemas: str | None = None) -> None:
        from trl.chat_template_utils import get_training_chat_template, is_chat_template_prefix_preserving

        self.tokenizer = tokenizer
        self.kwargs = dict(chat_template_kwargs or {})
        if tool_schemas is not None:
            use_tool_schemas(tokenizer, tool_schemas)
        if not is_chat_template_prefix_preserving(tokenizer):
            self.kwargs["chat_template"] = get_training_chat_template(tokenizer)

    def _ids(self, messages: list[dict[str, Any]], **kwargs: Any) -> list[int]:
        return list(self.tokenizer.apply_chat_template(messages, tokenize=True, return_dict=False,
                                                       **self.kwargs, **kwargs))

    def prompt(self, messages: Sequence[Message], tools: list[dict[str, Any]]) -> list[int]:
        """The prompt's ids, generation prompt included."""
        return self._ids(chat_dicts(messages), tools=tools or None, add_generation_prompt=True)

    def observation(self, observation: Sequence[Message]) -> list[int]:
        """Ids after an assistant's end-of-turn token: the env's answer and the generation prompt."""
        first = observation[0]
        calls = [{"type": "function", "function": {"name": first.name or "tool", "arguments": {}}}]
        dummy: list[dict[str, Any]] = [{"role": "user", "content": "x"}]
        dummy.append({"role": "assistant", "content": "", "tool_calls": calls} if first.role == "tool"
                     else {"role": "assistant", "content": "x"})
        prefix = self._ids(dummy)
        full = self._ids(dummy + chat_dicts(observation), add_generation_prompt=True)
        eos = [i for i, t in enumerate(prefix) if t == self.tokenizer.eos_token_id]
        if eos:
            prefix = prefix[: eos[-1] + 1]
        if full[: len(prefix)] != prefix:
            raise EnvError("the chat template does not render a conversation's start as a prefix of it")
        return full[len(prefix):]


@dataclass
class _Rollout:
    env: Env
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    spans: list[list[int]] = field(default_factory=list)
    has_logprobs: bool = True
    failure: str | None = None

    def fail(self, error: BaseException) -> None:
        """Record an env that raised (a crashed sandbox): the episode ends, unscored."""
        self.failure = f"{type(error).__name__}: {error}"
        if self.env.trajectory is not None:
            self.env.trajectory.outcome, self.env.trajectory.failure = "error", self.failure

    def add(self, ids: list[int], mask: int, logprobs: list[float] | None = None) -> None:
        self.completion_ids += ids
        self.env_mask += [mask] * len(ids)
        self.logprobs += logprobs if logprobs is not None else [0.0] * len(ids)
        if mask and logprobs is None:
            self.has_logprobs = False


class EnvRollout:
    """A ``rollout_func`` that plays each prompt as one agentgym episode with the trainer's model.

    Args:
        source: The env to play (id, class, or no-argument factory); one fresh env per rollout.
            For the code env's text answer mode: ``lambda: make("code", answer="text", ...)``.
        resample: DAPO's dynamic sampling: up to this many times per batch, replay every group whose
            episodes all scored the same (reward and every component) on a fresh task drawn from
            ``pool``, so the batch is not spent on zero gradient. 0 (the default) replaces nothing.
            The replaced rows carry ``agentgym_resampled`` = 1 and are logged as
            ``env/zero_signal_replaced``; TRL trains on the returned ``prompt_ids``, though the
            prompt text it logs for the row stays the one it sampled.
        pool: Tasks to draw replacements from (required with ``resample``).
        seed: Seeds the draws.
        tool_schemas: ``"full"`` or ``"compact"``: sets the tokenizer's chat template to render tools
            that way (:func:`~agentgym.policies.chat_template.use_tool_schemas`); ``None`` leaves it.

    Attributes:
        generation_seconds: Wall-clock time spent generating so far (env time:
            :func:`agentgym.trl.env_seconds`).
    """

    def __init__(self, source: EnvSource, *, resample: int = 0, pool: Sequence[Task] = (), seed: int = 0,
                 tool_schemas: str | None = None) -> None:
        self.env_class, self.make_env = env_factory(source)
        self.tool_schemas = tool_schemas
        self._renderer: TemplateRenderer | None = None
        self.generation_seconds = 0.0
        if resample < 0 or (resample and not pool):
            raise EnvError("resample= needs a non-negative count and a pool of tasks to draw from")
        self.resample, self.pool, self._rng = resample, list(pool), random.Random(seed)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tokenizer = getattr(trainer.processing_class, "tokenizer", trainer.processing_class)
        if self._renderer is None or self._renderer.tokenizer is not tokenizer:
            self._renderer = TemplateRenderer(tokenizer, getattr(trainer, "chat_template_kwargs", None),
                                              self.tool_schemas)
        rollouts = self.play([self.task_of(p) for p in prompts], trainer, self._renderer,
                             trainer.max_completion_length)
        resampled = [0.0] * len(rollouts)
        training = bool(getattr(trainer.model, "training", True))
        group = int((trainer.num_generations if training else trainer.num_generations_eval) or 1)
        for _ in range(self.resample):
            flat = [g for g, f in zip(range(0, len(rollouts), group), _flat_groups(rollouts, group), strict=True) if f]
            if not flat:
                break
            fresh = [self._rng.choice(self.pool) for _ in flat]
            replayed = self.play([t for t in fresh for _ in range(group)], trainer, self._renderer,
                                 trainer.max_completion_length)
            for j, g in enumerate(flat):
                rollouts[g:g + group] = replayed[j * group:(j + 1) * group]
                resampled[g:g + group] = [1.0] * group
        out = self.collect(rollouts)
        out["agentgym_resampled"] = resampled
        return out

    @staticmethod
    def task_of(prompt: Any) -> Task:
        """The task a prompt row carries (see :func:`~agentgym.trl.environment.task_dataset`)."""
        task_json = prompt[-1].get(TASK_COLUMN) if isinstance(prompt, list) and prompt else None
        if not task_json:
            raise EnvError(f"prompt has no {TASK_COLUMN!r}: build the dataset with agentgym.trl.task_dataset")
        return Task.model_validate_json(task_json)

    def play(
        self, tasks: list[Task], trainer: Any, renderer: TemplateRenderer, budget: int
    ) -> list[_Rollout]:
        """Run one episode per task, all turns batched across episodes; returns them finished.

        An env that raises (anything but the model-facing errors ``step`` already turns into
        observations) ends its own episode as a failure; the other episodes go on.
        """
        rollouts = [_Rollout(env=self.make_env()) for _ in tasks]

        async def reset_all() -> list[Any]:
            resets = (r.env.reset(t) for r, t in zip(rollouts, tasks, strict=True))
            return list(await asyncio.gather(*resets, return_exceptions=True))

        active = []
        for i, (r, task, opening) in enumerate(zip(rollouts, tasks, _loop.run(reset_all()), strict=True)):
            tools = [t.to_openai() for t in r.env.tools]
            if isinstance(opening, BaseException):
                r.fail(opening)
                r.prompt_ids = renderer.prompt(r.env.opening_messages(task), tools)
                r.add([renderer.tokenizer.eos_token_id], 0)  # TRL needs a token; it is masked out
                continue
            r.prompt_ids = renderer.prompt(opening, tools)
            active.append(i)
        try:
            while active:
                room = {i: budget - len(rollouts[i].completion_ids) for i in active}
                started = time.perf_counter()
                ids, logprobs = generate(trainer, [rollouts[i].prompt_ids + rollouts[i].completion_ids
                                                   for i in active], max(room.values()))
                self.generation_seconds += time.perf_counter() - started
                actions = []
                for j, i in enumerate(active):
                    new = list(ids[j][: room[i]])
                    start = len(rollouts[i].completion_ids)
                    rollouts[i].add(new, 1, list(logprobs[j][: room[i]]) if logprobs is not None else None)
                    rollouts[i].spans.append([start, start + len(new)])
                    text = THINK.sub("", tokenizer_decode(renderer.tokenizer, new))
                    actions.append(Message(role="assistant", content=text))

                async def step_all(actions: list[Message] = actions, active: list[int] = active) -> list[Any]:
                    steps = (rollouts[i].env.step(a) for i, a in zip(active, actions, strict=True))
                    return list(await asyncio.gather(*steps, return_exceptions=True))

                still = []
                for i, result in zip(active, _loop.run(step_all()), strict=True):
                    r = rollouts[i]
                    if isinstance(result, BaseException):
                        r.fail(result)
                        continue
                    done = result.terminated or result.truncated or not result.observation
                    if done or len(r.completion_ids) >= budget:
                        continue
                    r.add(renderer.observation(result.observation), 0)
                    if len(r.completion_ids) < budget:
                        still.append(i)
                active = still
        finally:
            _loop.run(self._finish_all(rollouts))
        for r in rollouts:
            del r.completion_ids[budget:], r.env_mask[budget:], r.logprobs[budget:]
        return rollouts

    @staticmethod
    async def _finish_all(rollouts: list[_Rollout]) -> None:
        for r in rollouts:
            try:
                if r.failure is None:
                    await finish(r.env)
            except Exception as e:  # scoring touched a dead sandbox: a failed episode, not a failed batch
                r.fail(e)
            finally:
                try:
                    await r.env.close()
                except Exception as e:
                    r.fail(e)

    @staticmethod
    def collect(rollouts: list[_Rollout]) -> dict[str, Any]:
        """The dict TRL expects, plus each episode for the reward functions.

        ``logprobs`` is ``None`` when the generation backend gives none (transformers' ``generate``, as
        in TRL's own path); TRL then needs none, since only vLLM's importance sampling reads them.
        Env tokens carry a logprob of 0, and are masked out. A failed episode's reward is ``None``:
        TRL scores it NaN and gives it no advantage, so a crash teaches the model nothing.
        """
        trajectories = [r.env.trajectory for r in rollouts]
        sampled = all(r.has_logprobs for r in rollouts)
        return {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.completion_ids for r in rollouts],
            "logprobs": [r.logprobs for r in rollouts] if sampled else None,
            "env_mask": [r.env_mask for r in rollouts],
            "agentgym_reward": [t.reward if t and r.failure is None else None
                                for r, t in zip(rollouts, trajectories, strict=True)],
            "agentgym_failure": [r.failure for r in rollouts],
            "agentgym_trajectory": trajectories,
            "agentgym_turn_rewards": [[turn.reward for turn in t.turns] if t else [] for t in trajectories],
            "agentgym_turn_spans": [r.spans for r in rollouts],
        }


def _flat_groups(rollouts: Sequence[_Rollout], group: int) -> list[bool]:
    """Per group: whether its scored episodes agree on the reward and on every reward component."""
    vectors: list[list[float] | None] = []
    for r in rollouts:
        t = r.env.trajectory
        vectors.append(None if t is None or r.failure is not None else [t.reward])
    for g in range(0, len(rollouts), group):
        members = [rollouts[i].env.trajectory for i in range(g, g + group) if vectors[i] is not None]
        keys = sorted({k for t in members if t is not None for k in t.reward_components})
        for i in range(g, g + group):
            t, v = rollouts[i].env.trajectory, vectors[i]
            if v is not None and t is not None:
                v += [t.reward_components.get(k, 0.0) for k in keys]
    return zero_signal_groups(vectors, group_size=group)


def tokenizer_decode(tokenizer: Any, ids: list[int]) -> str:
    """Decode a turn, dropping special tokens (end-of-turn, padding) but keeping tool-call markup."""
    return str(tokenizer.decode(ids, skip_special_tokens=True))


def env_reward_func(name: str) -> Callable[..., list[float | None]]:
    """A TRL reward function returning the env's episode return and logging the batch's env metrics.

    Named ``name`` so TRL logs it as ``rewards/<name>/mean``, the same column the
    ``environment_factory`` path gives; the metrics are :mod:`agentgym.trl.metrics`'.
    """

    def reward(completions: list[Any], agentgym_reward: list[float | None],
               agentgym_trajectory: list[Trajectory | None] | None = None,
               agentgym_failure: list[str | None] | None = None,
               agentgym_resampled: list[float] | None = None,
               log_metric: Callable[[str, float], None] | None = None, **_: Any) -> list[float | None]:
        if log_metric is not None and agentgym_trajectory is not None and agentgym_failure is not None:
            log_batch(log_metric, [episode_metrics(t, f)
                                   for t, f in zip(agentgym_trajectory, agentgym_failure, strict=True)])
            if agentgym_resampled is not None:
                log_metric("env/zero_signal_replaced", sum(agentgym_resampled) / max(len(agentgym_resampled), 1))
        return [None if r is None else float(r) for r in agentgym_reward]

    reward.__name__ = reward.__qualname__ = name
    return reward


@dataclass
class RolloutSpec:
    """What ``GRPOTrainer`` needs to train on an agentgym env through ``rollout_func``.

    With ``components``, ``reward_weights`` holds one weight per reward function (0 for the env's
    total, which is then only logged) and :meth:`config_overrides` the ``GRPOConfig`` settings that
    make TRL normalise each component within its group.
    """

    train_dataset: Any
    rollout_func: EnvRollout
    reward_funcs: list[Callable[..., list[float | None]]]
    reward_weights: list[float] | None = None

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``GRPOTrainer(...)`` (or :class:`TurnCreditGRPOTrainer`)."""
        return {"train_dataset": self.train_dataset, "rollout_func": self.rollout_func,
                "reward_funcs": self.reward_funcs}

    def config_overrides(self) -> dict[str, Any]:
        """``GRPOConfig`` keyword arguments this spec needs: per-component normalisation when it has components."""
        return component_config(self.reward_weights)


def rollout_spec(
    source: EnvSource, tasks: Sequence[Task] | None = None, *, repeat: int | None = 1,
    components: Mapping[str, float] | None = None, resample: int = 0, tool_schemas: str | None = None,
) -> RolloutSpec:
    """The dataset, rollout function and env reward function to train on ``source`` with ``rollout_func``.

    Args:
        source: The env.
        tasks: Its tasks; the env's built-in ones by default.
        repeat: See :func:`~agentgym.trl.task_dataset`.
        components: Reward component name to weight: each becomes its own reward function, normalised
            within its group (see :mod:`agentgym.trl.components`).
        resample: Replace zero-signal groups with fresh tasks up to this many times a batch (see
            :class:`EnvRollout`).
        tool_schemas: :class:`EnvRollout`'s.
    """
    pool = list(tasks) if tasks is not None else (list(env_factory(source)[1]().tasks()) if resample else [])
    rollout = EnvRollout(source, resample=resample, pool=pool, tool_schemas=tool_schemas)
    funcs = [env_reward_func(reward_name(source, rollout.env_class.__name__))]
    weights = None
    if components is not None:
        extra, component_weights = component_reward_funcs(components)
        funcs, weights = funcs + extra, [0.0, *component_weights]
    return RolloutSpec(task_dataset(source, tasks, repeat=repeat), rollout, funcs, weights)
