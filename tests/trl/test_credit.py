"""Per-turn credit: per-token advantages from per-turn rewards, and a trainer that uses them."""

from __future__ import annotations

from typing import Any

import pytest

from agentgym.trl import rollout_spec, turn_advantages
from agentgym.types import Task
from tests.trl.conftest import grpo_config
from tests.trl.envs import Chatter, CrashyChatter


def test_single_turn_episodes_get_plain_grpo_advantages() -> None:
    out = turn_advantages([0.5, -0.5], [[1.0], [0.0]], [[[0, 3]], [[0, 2]]], group_size=2, width=4)
    assert out == [[0.5] * 4, [-0.5] * 4]


def test_a_turn_is_credited_with_how_it_compares_at_that_turn() -> None:
    # Same total reward, so GRPO's advantage is 0 for both; but rollout 0 earned it in turn 1 and
    # rollout 1 in turn 0. Turn 0 of rollout 1 did better than rollout 0's turn 0, and vice versa.
    rewards = [[0.0, 1.0], [1.0, 0.0]]
    spans = [[[0, 2], [4, 6]], [[0, 2], [4, 6]]]
    out = turn_advantages([0.0, 0.0], rewards, spans, group_size=2, width=6, scale_by_std=False)
    # Returns-to-go: rollout 0 (1, 1), rollout 1 (1, 0). LOO at turn 0: 0, 0; at turn 1: +1, -1.
    assert out[0] == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert out[1] == [0.0, 0.0, 0.0, 0.0, -1.0, -1.0]


def test_a_crashed_episode_gets_no_advantage_and_moves_no_baseline() -> None:
    base = [0.3, 0.0, -0.3, 0.1]  # TRL gives the crashed row (1) no episode advantage
    rewards = [[0.0, 1.0], [1.0, 0.0], [0.5, 0.0], [0.0, 0.2]]
    spans = [[[0, 2], [3, 5]]] * 4
    out = turn_advantages(base, rewards, spans, group_size=4, width=5, failed=[False, True, False, False])
    assert out[1] == [0.0] * 5
    # The others' credit is what it is without the crashed rollout, whatever that rollout's rewards were.
    without = turn_advantages([base[i] for i in (0, 2, 3)], [rewards[i] for i in (0, 2, 3)], spans[:3],
                              group_size=3, width=5)
    assert [out[i] for i in (0, 2, 3)] == without
    rewards[1] = [9.0, -9.0]
    assert turn_advantages(base, rewards, spans, group_size=4, width=5, failed=[False, True, False, False]) == out
    # Without the failure flag, the crashed rollout would get credit and shift the others'.
    unflagged = turn_advantages(base, rewards, spans, group_size=4, width=5)
    assert unflagged[1] != [0.0] * 5 and unflagged[0] != out[0]


def test_groups_must_be_whole() -> None:
    with pytest.raises(ValueError, match="whole number of groups"):
        turn_advantages([0.0] * 3, [[0.0]] * 3, [[[0, 1]]] * 3, group_size=2, width=1)


def test_turn_credit_trainer_trains_with_per_token_advantages(agent: tuple[Any, Any], tmp_path: Any) -> None:
    from agentgym.trl import TurnCreditGRPOTrainer

    model, tokenizer = agent
    spec = rollout_spec(Chatter, [Task(id="t", prompt="Pick a colour.")], repeat=16)
    args = grpo_config(tmp_path, max_completion_length=80)
    trainer = TurnCreditGRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    rows = [dict(spec.train_dataset[i]) for i in range(8)]
    batch = trainer._generate_and_score_completions(rows)
    advantages = batch["advantages"]
    assert advantages.shape == batch["completion_ids"].shape
    # Some episodes earned "blue" in one turn and not another; their tokens' advantages differ by turn.
    assert any(len(set(row["agentgym_turn_rewards"])) > 1 for row in rows)
    assert any(len(set(row.tolist())) > 1 for row in advantages)
    trainer.train()
    assert any("rewards/Chatter/mean" in h for h in trainer.state.log_history)


def test_turn_credit_trainer_gives_crashed_episodes_no_advantage(agent: tuple[Any, Any], tmp_path: Any) -> None:
    from agentgym.trl import TurnCreditGRPOTrainer

    model, tokenizer = agent
    spec = rollout_spec(CrashyChatter, [Task(id="t", prompt="Pick a colour.")], repeat=16)
    args = grpo_config(tmp_path, max_completion_length=80, per_device_train_batch_size=16, num_generations=8)
    trainer = TurnCreditGRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    rows = [dict(spec.train_dataset[i]) for i in range(16)]
    advantages = trainer._generate_and_score_completions(rows)["advantages"]
    crashed = [i for i, row in enumerate(rows) if row["agentgym_failure"] is not None]
    assert crashed and len(crashed) < 16
    assert all(advantages[i].abs().sum() == 0 for i in crashed)
    # The check can fail: per-turn credit alone (no flag) would have given some crashed episode credit.
    corrections = turn_advantages([0.0] * 16, [r["agentgym_turn_rewards"] for r in rows],
                                  [r["agentgym_turn_spans"] for r in rows], group_size=8, width=80)
    assert any(any(corrections[i]) for i in crashed)


def test_measured_turn_advantages_replace_leave_one_out() -> None:
    rewards = [[0.0, 1.0], [1.0, 0.0]]  # leave-one-out would give turn 1 +1 and -1
    spans = [[[0, 2], [2, 4]], [[0, 2], [2, 4]]]
    out = turn_advantages([0.5, -0.5], rewards, spans, group_size=2, width=4, scale_by_std=False,
                          measured=[[0.5, 0.0], [-0.5, 0.0]])  # branching found turn 0 decisive
    assert out == [[0.5, 0.5, 0.0, 0.0], [-0.5, -0.5, 0.0, 0.0]]


def test_branch_advantages_from_a_rollout_func_reach_the_per_token_loss(agent: tuple[Any, Any],
                                                                        tmp_path: Any) -> None:
    from agentgym.trl import TurnCreditGRPOTrainer

    model, tokenizer = agent
    spec = rollout_spec(Chatter, [Task(id="t", prompt="Pick a colour.")], repeat=16)

    def with_measured(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        out = spec.rollout_func(prompts, trainer)
        out["agentgym_turn_advantages"] = [[0.0, 3.0, -3.0][: len(s)] for s in out["agentgym_turn_spans"]]
        return out

    args = grpo_config(tmp_path, max_completion_length=80, scale_rewards="none")
    trainer = TurnCreditGRPOTrainer(model, args=args, processing_class=tokenizer, train_dataset=spec.train_dataset,
                                    rollout_func=with_measured, reward_funcs=spec.reward_funcs)
    rows = [dict(spec.train_dataset[i]) for i in range(8)]
    advantages = trainer._generate_and_score_completions(rows)["advantages"]
    checked = 0
    for row, adv in zip(rows, advantages.tolist(), strict=True):
        spans = row["agentgym_turn_spans"]
        if len(spans) < 2 or spans[1][0] >= spans[1][1] or row["agentgym_failure"] is not None:
            continue
        first, second = adv[spans[0][0]], adv[spans[1][0]]
        assert second - first == pytest.approx(3.0, abs=1e-4)
        checked += 1
    assert checked > 0
