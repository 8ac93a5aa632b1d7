"""Per-component advantages and zero-signal groups on both TRL paths.

GRPO normalises the *sum* of its rewards within a group, so a component on a large scale (a cost in
tokens, a judge's 0-10) swamps a 0/1 one (NeMo-RL #2892). :func:`component_reward_funcs` hands TRL
each named reward component as its own reward function, read off the episode's
``trajectory.reward_components`` (the ``rollout_func`` path's trajectories, or the
``environment_factory`` path's envs); with ``GRPOConfig(multi_objective_aggregation=
"normalize_then_sum", reward_weights=...)`` TRL then normalises each within its group and sums them
with the weights (GDPO), the formula :func:`agentgym.rewards.component_advantages` computes. The
specs' :meth:`config_overrides` give those two settings.

Groups whose rewards are all equal give no gradient. :class:`ZeroSignalMixin` (in
:class:`~agentgym.trl.EnvGRPOTrainer` and :class:`~agentgym.trl.TurnCreditGRPOTrainer`) counts them
per batch, over the weighted reward functions, and logs ``env/zero_signal_groups`` (the fraction)
and ``env/zero_signal_count``; TRL's own ``frac_reward_zero_std`` is batch-wide under
``normalize_then_sum`` and so says nothing per group. On the ``rollout_func`` path
:class:`~agentgym.trl.EnvRollout` can also replace such groups with fresh tasks (DAPO's dynamic
sampling; ``rollout_spec(..., resample=n)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentgym.rewards.group import zero_signal_groups
from agentgym.trl import _loop
from agentgym.trl.environment import AgentgymEnvironment
from agentgym.types import Trajectory

ZERO_SIGNAL = "env/zero_signal_groups"
ZERO_SIGNAL_COUNT = "env/zero_signal_count"


def _component(trajectory: Trajectory | None, failed: bool, name: str) -> float | None:
    if trajectory is None or failed:
        return None
    value = trajectory.reward_components.get(name)
    return None if value is None else float(value)


def component_reward_func(name: str) -> Callable[..., list[float | None]]:
    """A TRL reward function returning each episode's ``reward_components[name]`` (``None`` for a crash).

    It works on both paths: it reads ``agentgym_trajectory`` when the ``rollout_func`` path passes it,
    else the ``environments`` TRL passes on the ``environment_factory`` path (scoring any episode
    still running). Named ``component/<name>``, so TRL logs ``rewards/component/<name>/mean``.
    """

    def reward(agentgym_trajectory: list[Trajectory | None] | None = None,
               agentgym_failure: list[str | None] | None = None,
               environments: list[Any] | None = None, **_: Any) -> list[float | None]:
        if agentgym_trajectory is not None:
            failures = agentgym_failure or [None] * len(agentgym_trajectory)
            return [_component(t, f is not None, name) for t, f in zip(agentgym_trajectory, failures, strict=True)]
        out: list[float | None] = []
        for e in environments or []:
            if not isinstance(e, AgentgymEnvironment):
                out.append(None)
                continue
            _loop.wait(e._submit(e._finish))  # scores a still-running episode; a finished one is left as is
            out.append(_component(e.env.trajectory, e.failure is not None, name))
        return out

    reward.__name__ = reward.__qualname__ = f"component/{name}"
    return reward


def component_reward_funcs(weights: Mapping[str, float]) -> tuple[list[Callable[..., list[float | None]]], list[float]]:
    """One reward function per named component, and their weights, in the same order."""
    if not weights:
        raise ValueError("components= needs at least one named component and its weight")
    return [component_reward_func(n) for n in weights], [float(w) for w in weights.values()]


def zero_signal(rewards_per_func: Sequence[Sequence[float]], weights: Sequence[float], group_size: int) -> list[bool]:
    """Per group: whether every weighted reward function is constant across it (NaN rows: crashes, left out)."""
    rows: list[list[float] | None] = []
    for row in rewards_per_func:
        kept = [float(v) for v, w in zip(row, weights, strict=True) if w != 0]
        rows.append(None if all(v != v for v in kept) else [0.0 if v != v else v for v in kept])
    return zero_signal_groups(rows, group_size=group_size)


class ZeroSignalMixin:
    """Counts a batch's zero-signal groups and logs them, whichever path fills the batch.

    Mixed into a ``GRPOTrainer`` subclass: it wraps TRL's ``_calculate_rewards``, which returns every
    process's rewards per reward function, so whole groups are seen even when they span processes.
    """

    def _calculate_rewards(self, *args: Any, **kwargs: Any) -> Any:
        rewards = super()._calculate_rewards(*args, **kwargs)  # type: ignore[misc]
        training = bool(getattr(self.model, "training", True))  # type: ignore[attr-defined]
        group = int((self.num_generations if training else self.num_generations_eval) or 1)  # type: ignore[attr-defined]
        flags = zero_signal(rewards.tolist(), self.reward_weights.tolist(), group)  # type: ignore[attr-defined]
        metrics = self._metrics["train" if training else "eval"]  # type: ignore[attr-defined]
        metrics[ZERO_SIGNAL].append(sum(flags) / len(flags) if flags else 0.0)
        metrics[ZERO_SIGNAL_COUNT].append(float(sum(flags)))
        return rewards
