"""Procedural code tasks: deterministic, split without overlap, solved by their reference, and graded
the same whether the answer comes as a ``submit`` call or as a fenced block in text."""

from __future__ import annotations

import json

import pytest

from agentgym import Message, ToolCall, make
from agentgym.envs.code import procedural
from agentgym.envs.code.policies import PromptBaseline, ReferenceSolution
from agentgym.errors import DataError, EnvError
from agentgym.evaluation import evaluate


def test_the_same_spec_gives_the_same_tasks_and_each_task_once() -> None:
    first = procedural.procedural_rows("procedural:easy:train:0-299")
    again = procedural.procedural_rows("procedural:easy:train:0-299")
    assert first == again
    keys = [row["procedural"]["key"] for row in first]
    assert len(set(keys)) == len(keys) == len({row["task_id"] for row in first})
    assert 100 < len(first) < 300  # seeds that draw a listed task add nothing


@pytest.mark.parametrize("level", procedural.LEVELS)
def test_training_and_heldout_ranges_share_no_task(level: str) -> None:
    train = procedural.procedural_rows(f"procedural:{level}:train:0-1999")
    heldout = procedural.procedural_rows(f"procedural:{level}:heldout:0-1999")
    assert len(heldout) >= 40
    # by content (template and parameters), by the prompt the model sees, and by id
    assert not {r["procedural"]["key"] for r in train} & {r["procedural"]["key"] for r in heldout}
    assert not {r["prompt"] for r in train} & {r["prompt"] for r in heldout}
    assert not {r["task_id"] for r in train} & {r["task_id"] for r in heldout}
    assert all(procedural.split_of(r["procedural"]["key"]) == "heldout" for r in heldout)


def test_hidden_tests_tell_a_constant_answer_from_the_function() -> None:
    for row in procedural.procedural_rows("procedural:easy:train:0-199"):
        values = [line.rsplit("==", 1)[1] for line in row["test"].splitlines() if "assert" in line]
        assert len(values) == procedural.TESTS
        if row["procedural"]["key"].count('"above"') or '"is_even"' in row["procedural"]["key"]:
            assert len(set(values)) == 2, row["prompt"]


@pytest.mark.parametrize("spec", ["procedural:easy", "procedural:trivial:train:0-9", "procedural:easy:test:0-9",
                                  "procedural:easy:train:9-0"])
def test_a_bad_spec_is_one_clear_error(spec: str) -> None:
    with pytest.raises(DataError, match="procedural"):
        make("code", tasks_path=spec).tasks()


async def test_reference_scores_one_and_the_bare_prompt_zero(backend: str) -> None:
    tasks = [*make("code").load_tasks("procedural:easy:heldout:0-7"),
             *make("code").load_tasks("procedural:medium:train:0-3"),
             *make("code").load_tasks("procedural:hard:heldout:0-3")]
    env_kwargs = {"sandbox_backend": backend}
    ref, _ = await evaluate("code", ReferenceSolution(), tasks=tasks, env_kwargs=env_kwargs, progress=False)
    assert (ref.episodes, ref.successes) == (len(tasks), len(tasks)), ref.failures
    base, _ = await evaluate("code", PromptBaseline(), tasks=tasks, env_kwargs=env_kwargs, progress=False)
    assert (base.episodes, base.successes) == (len(tasks), 0)


async def test_text_answers_are_graded_as_a_submit_of_the_same_code() -> None:
    (task,) = make("code").load_tasks("procedural:easy:train:3-3")
    right = task.data["prompt"] + task.data["canonical_solution"]
    wrong = task.data["prompt"] + "    return None\n"
    for code, reward in ((right, 1.0), (wrong, 0.0)):
        async with make("code", sandbox_backend="local", answer="text") as env:
            opening = await env.reset(task)
            assert env.tools == [] and env.max_turns == 1
            assert [m.role for m in opening] == ["user"] and opening[0].text.endswith(task.data["prompt"] + "```")
            text = await env.step(Message(role="assistant", content=f"Sure.\n```python\n{code}```\nDone."))
            text_tests = env.trajectory.info["tests"]
        async with make("code", sandbox_backend="local") as env:
            await env.reset(task)
            call = ToolCall(id="c", name="submit", arguments=json.dumps({"code": code}))
            submitted = await env.step(Message(role="assistant", tool_calls=[call]))
            assert env.trajectory.info["tests"] == text_tests
        assert text.terminated and submitted.terminated and text.reward == submitted.reward == reward


async def test_text_mode_refuses_tool_calls_and_unknown_modes() -> None:
    (task,) = make("code").load_tasks("procedural:easy:train:3-3")
    async with make("code", sandbox_backend="local", answer="text") as env:
        await env.reset(task)
        call = ToolCall(id="c", name="submit", arguments=json.dumps({"code": task.data["prompt"]}))
        result = await env.step(Message(role="assistant", tool_calls=[call]))
    assert result.truncated and result.reward == 0.0 and "unknown tool" in result.observation[0].text
    with pytest.raises(EnvError, match="answer='voice'"):
        make("code", answer="voice")
