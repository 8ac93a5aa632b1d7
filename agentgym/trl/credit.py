"""Per-turn credit for GRPO: a trainer whose advantages vary by turn within a completion.

GRPO gives every token of a completion the same advantage: how much better the episode's total
reward was than its group's. In a multi-turn episode that credits a wasted turn as much as the turn
that solved the task. :class:`TurnCreditGRPOTrainer` adds a per-turn correction, computed from the
per-turn rewards the ``rollout_func`` path records:

    A[i, t] = A_grpo[i] + (L[i, k] - L[i, 0]) / scale        for the tokens t of turn k

where ``L`` are turn-level leave-one-out advantages within the group
(:func:`~agentgym.rewards.turns.leave_one_out_advantages` on the discounted returns) and ``scale``
is the group's reward std (when TRL scales rewards by group). For a single-turn episode, or
when every rollout's later turns fare like its first, this is exactly GRPO. TRL's loss accepts
advantages of shape ``(B, T)``; tokens the env wrote are masked out of the loss regardless.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgym.rewards.turns import leave_one_out_advantages


def turn_advantages(
    base: list[float],
    turn_rewards: list[list[float]],
    turn_spans: list[list[list[int]]],
    *,
    group_size: int,
    width: int,
    gamma: float = 1.0,
    scale_by_std: bool = True,
    failed: Sequence[bool] | None = None,
    measured: Sequence[Sequence[float]] | None = None,
) -> list[list[float]]:
    """Per-token advantages ``(B, width)`` from GRPO's per-completion ones and per-turn rewards.

    A crashed episode (``failed``) gets no advantage on any token, and is left out of its group's
    turn baselines and std, as TRL leaves it out of the episode-level ones: a crash teaches nothing
    and moves no other rollout's credit.

    Args:
        base: GRPO's advantage per completion.
        turn_rewards: Each completion's per-turn rewards.
        turn_spans: Each completion's turns as ``[start, end)`` token ranges in the completion.
        group_size: Completions per prompt (consecutive rows form a group).
        width: Padded completion length.
        gamma: Discount for the returns-to-go.
        scale_by_std: Divide the correction by the group's std of episode returns.
        failed: Which completions' episodes crashed; none by default.
        measured: Per-turn advantages measured elsewhere (branch rollouts, :mod:`agentgym.branch`),
            one list per completion, used as ``L`` instead of the leave-one-out ones.
    """
    if len(base) % group_size:
        raise ValueError(f"batch of {len(base)} is not a whole number of groups of {group_size}")
    crashed = list(failed) if failed is not None else [False] * len(base)
    out: list[list[float]] = []
    for g in range(0, len(base), group_size):
        kept = [i for i in range(g, g + group_size) if not crashed[i]]
        rewards = [turn_rewards[i] for i in kept]
        if measured is not None:
            loo = {i: list(measured[i]) for i in kept}
        else:
            loo = dict(zip(kept, leave_one_out_advantages(rewards, gamma=gamma), strict=True))
        totals = [sum(r) for r in rewards]
        mean = sum(totals) / max(len(totals), 1)
        std = (sum((x - mean) ** 2 for x in totals) / max(len(totals) - 1, 1)) ** 0.5
        scale = std + 1e-4 if scale_by_std else 1.0
        for i in range(g, g + group_size):
            if crashed[i]:
                out.append([0.0] * width)
                continue
            row = [base[i]] * width
            own = loo[i]
            for k, (start, end) in enumerate(turn_spans[i][: len(own)]):
                correction = (own[k] - own[0]) / scale
                for t in range(start, min(end, width)):
                    row[t] += correction
            out.append(row)
    return out


def _trainer_class() -> type:
    from accelerate.utils import gather_object  # type: ignore[import-untyped]
    from trl.trainer.grpo_trainer import GRPOTrainer

    from agentgym.trl.components import ZeroSignalMixin

    class TurnCreditGRPOTrainer(ZeroSignalMixin, GRPOTrainer):
        """``GRPOTrainer`` with per-turn advantages; use it with :func:`~agentgym.trl.rollout_spec`.

        The episode-level part of each token's advantage is TRL's, so per-component advantages
        (``multi_objective_aggregation="normalize_then_sum"``) reach the per-token path too; it logs
        the batch's zero-signal groups (:mod:`agentgym.trl.components`).

        A ``rollout_func`` that returns ``agentgym_turn_advantages`` (one list of per-turn advantages
        per completion, e.g. ``BranchResult.advantages`` from :func:`agentgym.branch.branch_rollout`)
        has those used in place of the leave-one-out ones.

        Args:
            turn_gamma: Discount for per-turn returns-to-go (1.0: every later reward counts fully).
            *args, **kwargs: As for ``GRPOTrainer``.
        """

        def __init__(self, *args: Any, turn_gamma: float = 1.0, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.turn_gamma = turn_gamma

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            import torch

            output = super()._generate_and_score_completions(inputs)
            if "agentgym_turn_rewards" not in inputs[0]:
                raise ValueError("TurnCreditGRPOTrainer needs turn rewards: use agentgym.trl.rollout_spec")
            training = bool(getattr(self.model, "training", True))
            group = int((self.num_generations if training else self.num_generations_eval) or 1)
            local = output["advantages"]
            base = gather_object(local.tolist())
            rewards = gather_object([x["agentgym_turn_rewards"] for x in inputs])
            spans = gather_object([x["agentgym_turn_spans"] for x in inputs])
            failed = gather_object([x["agentgym_failure"] is not None for x in inputs])
            measured = (gather_object([x["agentgym_turn_advantages"] for x in inputs])
                        if "agentgym_turn_advantages" in inputs[0] else None)
            width = output["completion_ids"].size(1)
            full = turn_advantages(base, rewards, spans, group_size=group, width=width, gamma=self.turn_gamma,
                                   scale_by_std=self.scale_rewards != "none", failed=failed, measured=measured)
            start = self.accelerator.process_index * len(inputs)
            output["advantages"] = torch.tensor(full[start: start + len(inputs)], dtype=local.dtype,
                                                device=local.device)
            return output

    TurnCreditGRPOTrainer.__module__ = __name__
    return TurnCreditGRPOTrainer


def __getattr__(name: str) -> Any:
    # The class subclasses TRL's trainer, so it is built on first use: importing agentgym.trl stays light.
    if name == "TurnCreditGRPOTrainer":
        cls = _trainer_class()
        globals()[name] = cls
        return cls
    raise AttributeError(name)
