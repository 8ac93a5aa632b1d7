"""A batch's env work overlaps on the environment_factory path: resets, tool calls and scoring.

Measured by counting the env coroutines in flight at once (:class:`tests.trl.envs.InFlight`), not by
timing: each reset, call and scoring of :class:`~tests.trl.envs.Sleepy` holds for 0.5 s, so work that
overlaps is counted together and work done one by one never is.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from agentgym.trl import environment_class, environment_spec, task_dataset
from agentgym.trl.trainer import BatchRound
from agentgym.types import Task
from tests.trl.conftest import grpo_config
from tests.trl.envs import InFlight, Sleepy

BLUE = Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})


def _one_step(agent: tuple[Any, Any], tmp_path: Any, trainer_class: type) -> tuple[InFlight, list[dict[str, Any]]]:
    """One GRPO step of 8 rollouts on Sleepy; what ran at once, and the logs."""
    model, tokenizer = agent
    Sleepy.flight = InFlight()
    spec = environment_spec(Sleepy, [BLUE], repeat=16)
    args = grpo_config(tmp_path, max_steps=1, per_device_train_batch_size=8, num_generations=4)
    trainer = trainer_class(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    trainer.train()
    return Sleepy.flight, trainer.state.log_history


def test_env_grpo_trainer_runs_a_batchs_resets_calls_and_scoring_at_once(agent: Any, tmp_path: Any) -> None:
    from agentgym.trl import EnvGRPOTrainer

    flight, logs = _one_step(agent, tmp_path, EnvGRPOTrainer)
    assert flight.total["say"] >= 4  # the tiny model calls the tool in most rollouts
    assert flight.peak == {"reset": 8, "say": flight.total["say"], "score": 8}
    assert [h["rewards/Sleepy/mean"] for h in logs if "rewards/Sleepy/mean" in h] == [1.0]


def test_plain_grpo_trainer_makes_tool_calls_one_by_one_but_resets_and_scoring_overlap(
    agent: Any, tmp_path: Any
) -> None:
    """The control: TRL's own tool loop waits for each rollout's calls before the next rollout's."""
    from trl import GRPOTrainer

    flight, _ = _one_step(agent, tmp_path, GRPOTrainer)
    assert flight.total["say"] >= 4
    assert flight.peak == {"reset": 8, "say": 1, "score": 8}


def _message(*calls: tuple[str, Any]) -> dict[str, Any]:
    """An assistant message as TRL parses it, with function calls."""
    return {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": name, "arguments": arguments}} for name, arguments in calls]}


def _envs(n: int) -> list[Any]:
    cls = environment_class("toy", owns_reward=False)
    row = task_dataset("toy", [BLUE])[0]
    envs = [cls() for _ in range(n)]
    for env in envs:
        env.reset(**row)
    return envs


def test_a_round_starts_only_the_calls_trl_will_make() -> None:
    first, second = _envs(2)
    completions = [
        [_message(("hint", {}), ("say", {"colour": "blue"}))],
        [_message(("nope", {}), ("say", "not an object"))],  # TRL refuses both without calling anything
    ]
    with BatchRound([first, second], completions) as batch:
        batch.dispatch()
        assert len(first._started) == 2 and not second._started
        batch.dispatch()  # a message's calls start once
        assert len(first._started) == 2
        assert first.hint() == "blue"
        assert first.say(colour="blue") == "You said blue."
    assert first.failure is None and first.done


def test_a_started_call_trl_never_makes_fails_its_episode_with_a_warning() -> None:
    (env,) = _envs(1)
    with pytest.warns(UserWarning, match="1 tool calls started ahead were never made"):
        with BatchRound([env], [[_message(("say", {"colour": "blue"}))]]) as batch:
            batch.dispatch()
    assert env.failure == "a tool call started ahead was never made by TRL"
    assert env.env.trajectory is not None and env.env.trajectory.outcome == "error"


def test_a_call_other_than_the_one_started_fails_its_episode() -> None:
    (env,) = _envs(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is left unmade: no warning
        with BatchRound([env], [[_message(("say", {"colour": "blue"}))]]):
            answer = env.say(colour="red")
    assert answer.startswith("Error: the environment failed: TRL made the call say({'colour': 'red'})")
    assert env.failure is not None and env.env.trajectory is not None
    assert env.env.trajectory.outcome == "error"
