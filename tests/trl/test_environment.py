"""The environment_factory path: the generated class as TRL sees it, and a real GRPO run through it."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from agentgym.envs.toy.env import ColourEnv
from agentgym.trl import TASK_COLUMN, environment_class, environment_spec, task_dataset
from agentgym.types import Task
from tests.trl.conftest import grpo_config
from tests.trl.envs import Constant

BLUE = Task(id="blue", prompt="Pick a colour.", data={"colour": "blue"})


def test_generated_class_exposes_tools_the_way_trl_discovers_them() -> None:
    from transformers.utils import get_json_schema

    cls = environment_class("toy")
    assert cls.__name__ == "ColourEnv"
    public = {n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")}
    assert public == {"reset", "get_reward", "hint", "say"}
    schema = get_json_schema(cls.say)["function"]
    assert schema["name"] == "say"
    assert schema["description"] == "Say a colour and end the episode."
    colour = {"type": "string", "description": "One of red, green or blue."}
    assert schema["parameters"]["properties"]["colour"] == colour
    assert schema["parameters"]["required"] == ["colour"]


def test_reset_tools_and_reward_run_a_real_episode() -> None:
    row: dict[str, Any] = task_dataset("toy", [BLUE])[0]
    env = environment_class(ColourEnv)()
    assert env.reset(**row) is None
    assert env.hint() == "blue"
    assert env.say(colour="blue") == "You said blue."
    assert env.say(colour="red").startswith("Error: the episode is over")
    assert env.get_reward() == pytest.approx(0.9)  # 1.0 outcome - 0.1 for the hint
    assert [t.reward for t in env.env.trajectory.turns] == pytest.approx([-0.1, 1.0])

    env.reset(**row)  # the same object serves the next rollout
    assert env.say(colour=7).startswith("Error: invalid arguments for say")  # validated like any model output
    assert env.say(colour="red") == "You said red."
    assert env.get_reward() == 0.0


def test_an_episode_the_model_never_ends_is_scored_as_it_stands() -> None:
    env = environment_class(ColourEnv)()
    env.reset(**task_dataset("toy", [BLUE])[0])
    assert env.get_reward() == 0.0
    assert env.env.trajectory.outcome == "truncated"


def test_dataset_rows_carry_the_task() -> None:
    row = task_dataset("toy", [BLUE], repeat=3)
    assert len(row) == 3
    assert Task.model_validate_json(row[0][TASK_COLUMN]) == BLUE
    assert row[0]["prompt"][-1]["content"] == "Pick a colour."
    assert Task.model_validate_json(row[0]["prompt"][-1][TASK_COLUMN]) == BLUE


def test_the_spec_scores_through_its_reward_function_not_get_reward() -> None:
    """TRL would score a class with get_reward once more, one rollout at a time: the spec's class has none."""
    spec = environment_spec("toy", [BLUE])
    public = {n for n, _ in inspect.getmembers(spec.environment_factory, inspect.isfunction) if not n.startswith("_")}
    assert public == {"reset", "hint", "say"}
    (reward,) = spec.reward_funcs
    assert reward.__name__ == "agentgym/toy-v0"  # TRL logs rewards/agentgym/toy-v0/mean: the env id
    envs = [spec.environment_factory() for _ in range(2)]
    for env in envs:
        env.reset(**spec.train_dataset[0])
    envs[0].say(colour="blue")
    logged: dict[str, float] = {}
    assert reward(environments=envs, log_metric=logged.__setitem__) == [1.0, 0.0]
    assert logged["env/components/correct"] == 0.5 and logged["env/turns"] == 0.5


def test_env_reward_reaches_trl_metrics(agent: tuple[Any, Any], tmp_path: Any) -> None:
    from trl import GRPOTrainer

    model, tokenizer = agent
    spec = environment_spec(Constant, [BLUE], repeat=16)
    args = grpo_config(tmp_path)
    trainer = GRPOTrainer(model, args=args, processing_class=tokenizer, **spec.trainer_kwargs())
    trainer.train()
    logged = [h["rewards/Constant/mean"] for h in trainer.state.log_history if "rewards/Constant/mean" in h]
    assert logged == pytest.approx([0.37, 0.37])


def test_an_env_crash_fails_the_episode_and_its_reward_is_none() -> None:
    from tests.trl.envs import Crashy

    env = environment_class(Crashy)()
    env.reset(**task_dataset(Crashy, [BLUE])[0])
    assert env.say(colour="red") == "Error: the environment failed: RuntimeError: sandbox died"
    assert env.get_reward() is None
    assert env.env.trajectory is not None and env.env.trajectory.outcome == "error"
    env.reset(**task_dataset(Crashy, [BLUE])[0])  # the next episode starts clean
    assert env.say(colour="blue") == "You said blue."
    assert env.get_reward() == 1.0


async def test_the_toy_env_reference_policy_scores_point_nine() -> None:
    from agentgym.envs.toy.env import COLOURS

    for colour in COLOURS:
        env = ColourEnv()
        task = Task(id=colour, prompt="Pick a colour.", data={"colour": colour})
        messages = await env.reset(task)
        policy = ColourEnv.scripted_policies()["reference"]()
        while True:
            action = (await policy.act(messages, env.tools, task=task)).message
            result = await env.step(action)
            messages += [action, *result.observation]
            if result.terminated or result.truncated:
                break
        assert env.trajectory is not None and env.trajectory.reward == pytest.approx(0.9)


def test_at_exit_the_pooled_envs_and_then_their_sandboxes_runtime_are_closed() -> None:
    """TRL never closes the envs it pools: at exit the adapter closes them, then the runtime whose
    warm pools they drew from (its env loop's default), so no spare outlives training."""
    import psutil

    from agentgym.envs.code.env import CodeEnv
    from agentgym.sandboxes import runtime
    from agentgym.sandboxes.pool import shared_pools
    from agentgym.trl import _loop
    from agentgym.trl import environment as adapter

    def make() -> CodeEnv:
        return CodeEnv(sandbox_backend="local")

    task = make().tasks()[0]
    env = environment_class(make)()
    env.reset(**task_dataset(make, [task])[0])
    assert env.python(code="print(6 * 7)").strip() == "42"
    sandbox = env.env.sandbox
    pid = int(sandbox.id.removeprefix("local-"))

    async def runtime_of_the_loop() -> runtime.SandboxRuntime:
        return runtime.current()

    used = _loop.run(runtime_of_the_loop())
    assert shared_pools(used) and psutil.pid_exists(pid)
    adapter._close_all()
    assert not env.env.has_sandbox and used.closed and shared_pools(used) == []
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
