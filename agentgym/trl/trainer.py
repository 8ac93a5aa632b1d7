"""``EnvGRPOTrainer``: TRL's ``GRPOTrainer`` running a batch's env tool calls concurrently.

On the ``environment_factory`` path, TRL 1.16 makes tool calls rollout by rollout and waits for each
rollout's results before it makes the next rollout's calls (``GRPOTrainer._tool_call_loop``; async
tools are gathered only within one message). So a batch of 8 rollouts whose tool takes 0.2 s spends
1.6 s a round, however the env is written. This subclass makes the round take about one call's time
without copying TRL's loop: while the loop runs, the batch's agentgym envs know their batch, and the
first time TRL asks one of them for a call, every call TRL is about to make in that round starts at
once on the env loop. TRL then collects each result in its own order.

Which calls TRL is about to make: in a round, TRL runs the tool calls of each rollout whose latest
assistant message holds calls not yet run (the first completion, or the one generated after the
last round's results). Calls TRL refuses without calling anything are not started: a call that is
not a function call, arguments that are not an object, a name that is not one of the env's tools.
Each env checks that every call TRL makes is the one it started; an episode where they differ, or
where a started call is never made, is failed (reward ``None``, so no advantage) instead of being
trained on steps its context does not show, and a warning says so.

This overrides a private TRL method (there is no public hook between parsing a batch's calls and
running them); if TRL renames it, the override is never called and calls run one by one, as in
``GRPOTrainer``, and the trainer warns at construction.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from agentgym.trl.environment import AgentgymEnvironment


class BatchRound:
    """The agentgym envs of one batch and TRL's messages for each, while TRL runs their tool calls."""

    def __init__(self, environments: Sequence[Any], completions: Any) -> None:
        shaped = (isinstance(completions, list) and len(completions) == len(environments)
                  and all(isinstance(m, list) for m in completions))
        if not shaped and any(isinstance(e, AgentgymEnvironment) for e in environments):
            warnings.warn("agentgym.trl: TRL's tool loop no longer looks as expected; tool calls run one by one",
                          stacklevel=3)
        self.pairs = [(env, messages) for env, messages in zip(environments, completions or [], strict=False)
                      if shaped and isinstance(env, AgentgymEnvironment)]
        self.seen: set[int] = set()  # the assistant messages whose calls have been started

    def dispatch(self) -> None:
        """Start every call of the round that has not started yet, each env's in its message's order."""
        for env, messages in self.pairs:
            last = messages[-1] if messages else None
            if not isinstance(last, dict) or last.get("role") != "assistant" or id(last) in self.seen:
                continue
            self.seen.add(id(last))
            for call in last.get("tool_calls") or []:
                if not isinstance(call, dict) or call.get("type") != "function":
                    continue
                function = call.get("function") or {}
                name, arguments = function.get("name"), function.get("arguments")
                if name in env._tool_names and isinstance(arguments, dict):
                    env._start_call(name, arguments)

    def __enter__(self) -> BatchRound:
        for env, _ in self.pairs:
            env._batch = self
        return self

    def __exit__(self, *exc: object) -> None:
        unmade = 0
        for env, _ in self.pairs:
            env._batch = None
            if env._started:
                unmade += env._abandon_started("a tool call started ahead was never made by TRL")
        if unmade:
            warnings.warn(f"agentgym.trl: {unmade} tool calls started ahead were never made by TRL; "
                          "their episodes are failed", stacklevel=2)


def _trainer_class() -> type:
    from trl.trainer.grpo_trainer import GRPOTrainer

    from agentgym.trl.components import ZeroSignalMixin

    class EnvGRPOTrainer(ZeroSignalMixin, GRPOTrainer):
        """``GRPOTrainer`` whose ``environment_factory`` rollouts run a batch's tool calls concurrently.

        Use it exactly like ``GRPOTrainer`` (with :func:`~agentgym.trl.environment_spec`); with any
        other environment or none it behaves as ``GRPOTrainer``. On either path it logs the batch's
        zero-signal groups (:mod:`agentgym.trl.components`).
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if not callable(getattr(GRPOTrainer, "_tool_call_loop", None)):
                warnings.warn("agentgym.trl: this TRL has no GRPOTrainer._tool_call_loop; tool calls run one by one",
                              stacklevel=2)
            super().__init__(*args, **kwargs)

        def _tool_call_loop(self, prompts: Any, prompt_ids: Any, completion_ids: Any, completions: Any,
                            *args: Any, **kwargs: Any) -> Any:
            with BatchRound(self.environments or [], completions):
                return super()._tool_call_loop(  # type: ignore[no-untyped-call]
                    prompts, prompt_ids, completion_ids, completions, *args, **kwargs)

    EnvGRPOTrainer.__module__ = __name__
    return EnvGRPOTrainer


def __getattr__(name: str) -> Any:
    # The class subclasses TRL's trainer, so it is built on first use: importing agentgym.trl stays light.
    if name == "EnvGRPOTrainer":
        cls = _trainer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
