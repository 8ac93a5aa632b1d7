"""Both paths log what the episodes did as TRL metrics: components, tool calls, tool errors by kind,
turns and crashes, each equal to what the batch's own trajectories say (counted here independently).

The env, :class:`~tests.trl.envs.Moody`, scores blue, refuses green with a ``ToolError`` and crashes on
red, so one batch of the tiny model's episodes holds all of these.
"""

from __future__ import annotations

from statistics import mean
from typing import Any

import pytest

from agentgym.trl import environment_spec, rollout_spec
from agentgym.types import Task, Trajectory
from tests.trl.conftest import grpo_config
from tests.trl.envs import Moody

BLUE = Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})
KINDS = ("malformed_json", "unknown_tool", "invalid_arguments", "tool_raised", "no_tool_call")


def expected_metrics(trajectories: list[Trajectory | None], failures: list[str | None]) -> dict[str, float]:
    started = [t for t in trajectories if t is not None]
    scored = [t for t, f in zip(trajectories, failures, strict=True) if t is not None and f is None]
    out = {
        "env/crashed": mean(f is not None for f in failures),
        "env/turns": mean(len(t.turns) for t in started),
        "env/tool_calls": mean(sum(m.role == "tool" for turn in t.turns for m in turn.observation) for t in started),
        "env/components/blue": mean(t.reward_components["blue"] for t in scored),
        "env/components/answered": mean(t.reward_components["answered"] for t in scored),
    }
    for kind in KINDS:
        out[f"env/tool_errors/{kind}"] = mean(sum(turn.tool_errors.count(kind) for turn in t.turns) for t in started)
    return out


def assert_logged(logs: list[dict[str, Any]], expected: dict[str, float]) -> None:
    (step,) = [h for h in logs if "env/crashed" in h]
    assert expected["env/crashed"] > 0 and expected["env/tool_errors/tool_raised"] > 0  # there was something to count
    assert {k: step[k] for k in expected} == pytest.approx(expected)


def test_environment_factory_path_logs_env_metrics(agent: Any, tmp_path: Any) -> None:
    from agentgym.trl import EnvGRPOTrainer

    model, tokenizer = agent
    spec = environment_spec(Moody, [BLUE], repeat=16)
    args = grpo_config(tmp_path, max_steps=1, per_device_train_batch_size=16, num_generations=8)
    trainer = EnvGRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    trainer.train()
    envs = trainer.environments  # the batch's episodes, as the trainer left them
    assert_logged(trainer.state.log_history,
                  expected_metrics([e.env.trajectory for e in envs], [e.failure for e in envs]))


def test_rollout_func_path_logs_env_metrics(agent: Any, tmp_path: Any) -> None:
    from trl import GRPOTrainer

    model, tokenizer = agent
    spec = rollout_spec(Moody, [BLUE], repeat=16)
    outputs: list[dict[str, Any]] = []

    def rollout(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        outputs.append(spec.rollout_func(prompts, trainer))
        return outputs[-1]

    args = grpo_config(tmp_path, max_steps=1, per_device_train_batch_size=16, num_generations=8)
    trainer = GRPOTrainer(model, args=args, processing_class=tokenizer, train_dataset=spec.train_dataset,
                          rollout_func=rollout, reward_funcs=spec.reward_funcs)
    trainer.train()
    (out,) = outputs
    assert_logged(trainer.state.log_history, expected_metrics(out["agentgym_trajectory"], out["agentgym_failure"]))
