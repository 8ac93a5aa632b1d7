"""The TRL adapter: train any agentgym environment with TRL's ``GRPOTrainer`` (TRL 1.16).

Two paths, both giving the trainer the env's reward:

- :func:`environment_spec` (``environment_factory``): TRL runs the multi-turn loop and calls the env's
  tools as methods of a generated class. Least code; TRL decides how calls are parsed and rendered.
- :func:`rollout_spec` (``rollout_func``): agentgym runs the loop with the trainer's model, parses calls
  with agentgym's own parser, masks env tokens out of the loss, and hands per-turn rewards on, which
  :class:`TurnCreditGRPOTrainer` turns into per-token advantages.

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
    environment_spec,
    task_dataset,
)
from agentgym.trl.rollout import EnvRollout, RolloutSpec, env_reward_func, rollout_spec

__all__ = [
    "TASK_COLUMN",
    "AgentgymEnvironment",
    "EnvRollout",
    "EnvironmentSpec",
    "RolloutSpec",
    "TurnCreditGRPOTrainer",
    "env_reward_func",
    "env_seconds",
    "environment_class",
    "environment_spec",
    "rollout_spec",
    "task_dataset",
    "turn_advantages",
]


def __getattr__(name: str) -> Any:
    if name == "TurnCreditGRPOTrainer":  # subclasses TRL's trainer: built on first use
        from agentgym.trl import credit

        return credit.TurnCreditGRPOTrainer
    raise AttributeError(name)
