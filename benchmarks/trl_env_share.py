"""The environment's share of a GRPO step's wall time: env + sandbox against generation + update.

A GRPO step generates completions (the model), runs them through the environment (tools, sandbox,
scoring) and updates the model. If the env's share is large, the trainer waits on it and more
parallel envs pay off; if it is small, the model is the bottleneck. Measured per step with a trainer
callback: env time is what the trainer spent waiting on env work (:func:`agentgym.trl.env_seconds`),
generation time is what the rollout function spent generating (rollout_func path), and the rest is
the update (forward, backward, optimizer) plus TRL's bookkeeping.

Uses the tiny offline model from the examples on the CPU, so the model side is as cheap as it gets:
read the env share here as an upper bound of what a real model would see.

    python benchmarks/trl_env_share.py [--steps 12] [--envs toy code]

Writes benchmarks/results/trl_env_share.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from results_file import results_path, save_results
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

import agentgym
from agentgym.envs.toy.env import say_examples
from agentgym.trl import EnvGRPOTrainer, env_seconds, environment_spec, rollout_spec
from agentgym.trl.tiny import tiny_agent

RESULTS = results_path("trl_env_share")


class StepClock(TrainerCallback):  # type: ignore[misc]
    """Wall time, env time and generation time of each optimizer step."""

    def __init__(self, rollout: Any | None) -> None:
        self.rollout = rollout
        self.steps: list[dict[str, float]] = []

    def _generation(self) -> float:
        return self.rollout.generation_seconds if self.rollout is not None else float("nan")

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.start = (time.perf_counter(), env_seconds(), self._generation())

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        wall, env, gen = time.perf_counter(), env_seconds(), self._generation()
        wall0, env0, gen0 = self.start
        self.steps.append({"wall": wall - wall0, "env": env - env0, "generation": gen - gen0})


def measure(env_id: str, path: str, steps: int, model: Any, tokenizer: Any) -> dict[str, Any]:
    env = agentgym.make(env_id)
    tasks = list(env.tasks())[:4] or None
    spec = (rollout_spec if path == "rollout" else environment_spec)(env_id, tasks, repeat=1000)
    clock = StepClock(spec.rollout_func if path == "rollout" else None)  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out, use_cpu=True, bf16=False, gradient_checkpointing=False, report_to="none",
            per_device_train_batch_size=16, num_generations=8, max_completion_length=64, learning_rate=1e-4,
            max_steps=steps + 2, logging_steps=1, save_strategy="no", seed=0, disable_tqdm=True,
            max_tool_calling_iterations=2,
        )
        trainer_class = GRPOTrainer if path == "rollout" else EnvGRPOTrainer  # each path as docs/trl.md runs it
        trainer = trainer_class(model, args=config, processing_class=tokenizer, callbacks=[clock],
                                **spec.trainer_kwargs())
        trainer.train()
    kept = clock.steps[2:]  # the first steps pay one-off costs (template compilation, allocator warm-up)
    wall = sum(s["wall"] for s in kept)
    env_share = sum(s["env"] for s in kept) / wall
    result = {
        "steps": len(kept),
        "step_seconds_p50": statistics.median(s["wall"] for s in kept),
        "env_share": env_share,
    }
    if path == "rollout":
        generation_share = sum(s["generation"] for s in kept) / wall
        result["generation_share"] = generation_share
        result["update_and_other_share"] = 1 - env_share - generation_share
    else:
        result["generation_update_and_other_share"] = 1 - env_share
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="env share of a GRPO step")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--envs", nargs="+", default=["toy"])
    args = parser.parse_args()
    base_model, tokenizer = tiny_agent("toy", say_examples(), steps=300)
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "model": "tiny Qwen3 (2 layers, hidden 64), warm-started on the toy env",
        "batch": "16 completions (2 prompts x 8 generations), max_completion_length 64",
    }
    for env_id in args.envs:
        for path in ("rollout", "environment"):
            result = measure(env_id, path, args.steps, copy.deepcopy(base_model), tokenizer)
            results[f"{env_id}/{path}"] = result
            print(env_id, path, json.dumps(result))
    save_results(results, RESULTS)


if __name__ == "__main__":
    main()
