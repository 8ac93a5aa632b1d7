"""A tiny offline agent for the TRL tests: built and warm-started once per session (~15 s)."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

pytest.importorskip("trl")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="session")
def toy_agent() -> tuple[Any, Any]:
    import torch

    # One thread: the model is tiny, and the machine's cores are shared with other test runs, where
    # a second thread mostly waits (and makes runs slower and less repeatable under load).
    torch.set_num_threads(1)
    from agentgym.envs.toy.env import say_examples
    from agentgym.trl.tiny import tiny_agent

    return tiny_agent("toy", say_examples(), steps=300, seed=0)


@pytest.fixture
def agent(toy_agent: tuple[Any, Any]) -> tuple[Any, Any]:
    """A fresh copy of the warm-started model (tests train it) and the shared tokenizer."""
    model, tokenizer = toy_agent
    return copy.deepcopy(model), tokenizer


def grpo_config(output_dir: Any, **overrides: Any) -> Any:
    """A CPU GRPO configuration sized for tests."""
    from trl import GRPOConfig

    settings: dict[str, Any] = {
        "use_cpu": True, "bf16": False, "gradient_checkpointing": False, "report_to": "none",
        "per_device_train_batch_size": 8, "num_generations": 4, "max_completion_length": 48,
        "learning_rate": 1e-4, "logging_steps": 1, "max_steps": 2, "save_strategy": "no", "seed": 0,
        "disable_tqdm": True, "max_tool_calling_iterations": 1,
    }
    settings.update(overrides)
    return GRPOConfig(output_dir=str(output_dir), **settings)
