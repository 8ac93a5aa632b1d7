"""Per-component advantages and zero-signal groups reach TRL's loss on both paths, with a tiny model."""

from __future__ import annotations

from typing import Any

import pytest

from agentgym.rewards import component_advantages, summed_advantages
from agentgym.trl import environment_spec, rollout_spec
from agentgym.trl.components import ZERO_SIGNAL, ZERO_SIGNAL_COUNT, zero_signal
from agentgym.types import Task, Trajectory
from tests.trl.conftest import grpo_config
from tests.trl.envs import Constant, TwoScales

TASK = Task(id="t", prompt="Pick a colour.")
WEIGHTS = {"blue": 1.0, "loud": 1.0}


def expected(trajectories: list[Trajectory | None], failed: list[bool]) -> list[float]:
    rows = [None if t is None or f else t.reward_components for t, f in zip(trajectories, failed, strict=True)]
    return component_advantages(rows, WEIGHTS, group_size=4)


def check(trainer: Any, batch: dict[str, Any], trajectories: list[Trajectory | None], failed: list[bool]) -> None:
    advantages = batch["advantages"]
    if advantages.dim() == 2:  # the per-token path: every token of a one-turn episode has the episode's
        advantages = advantages[:, 0]
    assert advantages.tolist() == pytest.approx(expected(trajectories, failed), abs=1e-4)
    rewards = [[float("nan")] * 3 if t is None or f else
               [t.reward, t.reward_components["blue"], t.reward_components["loud"]]
               for t, f in zip(trajectories, failed, strict=True)]
    flags = zero_signal(rewards, [0.0, 1.0, 1.0], 4)
    metrics = trainer._metrics["train"]
    assert metrics[ZERO_SIGNAL][-1] == sum(flags) / len(flags)
    assert metrics[ZERO_SIGNAL_COUNT][-1] == sum(flags)
    # Not GRPO's sum-then-normalise, under which ``loud`` would decide nearly everything.
    rows = [None if t is None or f else t.reward_components for t, f in zip(trajectories, failed, strict=True)]
    assert advantages.tolist() != pytest.approx(summed_advantages(rows, WEIGHTS, group_size=4), abs=1e-2)
    blues = [[r["blue"] for r in rows[g:g + 4] if r is not None] for g in range(0, len(rows), 4)]
    assert any(len(set(b)) > 1 for b in blues), "no group where the small component varies: nothing shown"


def test_rollout_func_path_trains_on_per_component_advantages(agent: tuple[Any, Any], tmp_path: Any) -> None:
    from agentgym.trl import TurnCreditGRPOTrainer

    model, tokenizer = agent
    spec = rollout_spec(TwoScales, [TASK], repeat=16, components=WEIGHTS)
    assert spec.config_overrides() == {"multi_objective_aggregation": "normalize_then_sum",
                                       "reward_weights": [0.0, 1.0, 1.0]}
    args = grpo_config(tmp_path, **spec.config_overrides())
    trainer = TurnCreditGRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    rows = [dict(spec.train_dataset[i]) for i in range(8)]
    batch = trainer._generate_and_score_completions(rows)
    check(trainer, batch, [r["agentgym_trajectory"] for r in rows], [r["agentgym_failure"] is not None for r in rows])
    trainer.train()
    logged = {k for h in trainer.state.log_history for k in h}
    assert {"rewards/component/blue/mean", "rewards/component/loud/mean", ZERO_SIGNAL} <= logged


def test_environment_factory_path_trains_on_per_component_advantages(agent: tuple[Any, Any], tmp_path: Any) -> None:
    from agentgym.trl import EnvGRPOTrainer

    model, tokenizer = agent
    spec = environment_spec(TwoScales, [TASK], repeat=16, components=WEIGHTS)
    args = grpo_config(tmp_path, **spec.config_overrides())
    trainer = EnvGRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    rows = [dict(spec.train_dataset[i]) for i in range(8)]
    batch = trainer._generate_and_score_completions(rows)
    envs = trainer.environments
    check(trainer, batch, [e.env.trajectory for e in envs], [e.failure is not None for e in envs])
    trainer.train()
    logged = {k for h in trainer.state.log_history for k in h}
    assert {"rewards/component/blue/mean", "rewards/component/loud/mean", ZERO_SIGNAL, ZERO_SIGNAL_COUNT} <= logged


def test_zero_signal_groups_are_counted_and_replaced_on_the_rollout_path(agent: tuple[Any, Any],
                                                                        tmp_path: Any) -> None:
    from agentgym.trl import EnvGRPOTrainer

    model, tokenizer = agent
    pool = [Task(id=f"fresh-{i}", prompt="Pick a colour.") for i in range(3)]
    spec = rollout_spec(Constant, pool, repeat=16, resample=1)
    args = grpo_config(tmp_path, max_steps=1)
    trainer = EnvGRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    rows = [dict(spec.train_dataset[i]) for i in range(8)]
    trainer._generate_and_score_completions(rows)
    # Constant scores 0.37 whatever is said: every group is flat, so each was replayed once on a
    # fresh task (one task per group), and is still flat, which the count says.
    assert [r["agentgym_resampled"] for r in rows] == [1.0] * 8
    ids = [r["agentgym_trajectory"].task_id for r in rows]
    assert len(set(ids[:4])) == 1 and len(set(ids[4:])) == 1
    assert trainer._metrics["train"][ZERO_SIGNAL][-1] == 1.0
    trainer.train()
    logged = [h for h in trainer.state.log_history if "env/zero_signal_replaced" in h]
    assert logged and logged[0]["env/zero_signal_replaced"] == 1.0 and logged[0][ZERO_SIGNAL] == 1.0
