"""Real learning: GRPO through the rollout_func path raises the toy env's reward from its start.

The warm-started model calls ``say`` with colours about uniformly; only "blue" is rewarded, and the
prompt does not say so. Whatever rise the run shows is learnt from the env's reward. Seeded, so the
numbers repeat on a machine; the bar (+0.15) sits under the rise measured here (0.29 -> 0.51).
"""

from __future__ import annotations

from typing import Any

from agentgym.trl import rollout_spec
from agentgym.types import Task
from tests.trl.conftest import grpo_config


def test_mean_reward_rises_over_a_seeded_grpo_run(agent: tuple[Any, Any], tmp_path: Any) -> None:
    from trl import GRPOTrainer

    model, tokenizer = agent
    blue = Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})
    spec = rollout_spec("toy", [blue], repeat=1000)
    args = grpo_config(tmp_path, per_device_train_batch_size=16, num_generations=8, learning_rate=5e-4,
                       max_steps=40)
    trainer = GRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    trainer.train()
    key = "rewards/agentgym/toy-v0/mean"  # named by the env's id
    curve = [h[key] for h in trainer.state.log_history if key in h]
    assert len(curve) == 40
    start, end = sum(curve[:10]) / 10, sum(curve[-10:]) / 10
    assert end >= start + 0.15, f"reward went {start:.2f} -> {end:.2f}: {[round(x, 2) for x in curve]}"
