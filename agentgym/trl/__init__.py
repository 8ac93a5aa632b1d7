"""The TRL adapter: train any agentgym environment with TRL's ``GRPOTrainer`` (TRL 1.16).

Two paths, both giving the trainer the env's reward and logging the env's metrics
(:mod:`agentgym.trl.metrics`):

- :func:`environment_spec` (``environment_factory``): TRL runs the multi-turn loop and calls the env's
  tools as methods of a generated class. Least code; TRL decides how calls are parsed and rendered.
  :class:`EnvGRPOTrainer` runs a batch's tool calls concurrently (``GRPOTrainer`` runs them one by one).
- :func:`rollout_spec` (``rollout_func``): agentgym runs the loop with the trainer's model, parses calls
  with agentgym's own parser, masks env tokens out of the loss, and hands per-turn rewards on, which
  :class:`TurnCreditGRPOTrainer` turns into per-token advantages. :class:`OverlapGRPOTrainer`
  (``max_staleness=1``) plays the next batch's episodes while the trainer updates on this one
  (:mod:`agentgym.trl.overlap`).

Importing this package does not import TRL or torch; the functions that need them import them.
"""

from typing import Any

from agentgym.trl._loop import env_seconds
from agentgym.trl.credit import turn_advantages
from agentgym.trl.environment import (
    TASK_COLUMN,
    AgentgymEnvironment,
    EnvironmentSpec,
    environment_class,
    environment_reward_func,
    environment_spec,
    task_dataset,
)
from agentgym.trl.rollout import EnvRollout, RolloutSpec, env_reward_func, rollout_spec

__all__ = [
    "TASK_COLUMN",
    "AgentgymEnvironment",
    "EnvGRPOTrainer",
    "EnvRollout",
    "EnvironmentSpec",
    "OverlapGRPOTrainer",
    "RolloutSpec",
    "TurnCreditGRPOTrainer",
    "env_reward_func",
    "env_seconds",
    "environment_class",
    "environment_reward_func",
    "environment_spec",
    "rollout_spec",
    "task_dataset",
    "turn_advantages",
]


def __getattr__(name: str) -> Any:
    # The trainers subclass TRL's, so they are built on first use.
    if name == "TurnCreditGRPOTrainer":
        from agentgym.trl import credit

        return credit.TurnCreditGRPOTrainer
    if name == "OverlapGRPOTrainer":
        from agentgym.trl import overlap

        return overlap.OverlapGRPOTrainer
    if name == "EnvGRPOTrainer":
        from agentgym.trl import trainer

        return trainer.EnvGRPOTrainer
    raise AttributeError(name)
