"""HumanEval end to end: reference solutions pass and non-solutions fail, on both backends.

Forged grades (cheats) are tests/code/test_forgery.py's.
"""

import json

import pytest

from agentgym import Message, ToolCall, make
from agentgym.envs.code.policies import PromptBaseline, ReferenceSolution
from agentgym.evaluation import evaluate
from agentgym.rollout import rollout


async def test_reference_passes_all_164_and_the_bare_prompt_none(backend):
    env_kwargs = {"sandbox_backend": backend}
    ref, ref_runs = await evaluate("code", ReferenceSolution(), env_kwargs=env_kwargs, concurrency=8,
                                   progress=False)
    assert (ref.episodes, ref.successes) == (164, 164), ref.failures
    assert ref.grading == {"isolated": 164}  # the run's summary says how it was graded
    assert all(len(t.turns) == 2 and t.outcome == "terminated" for t in ref_runs)
    assert all(t.info["tests"] and all(test["passed"] for test in t.info["tests"]) for t in ref_runs)
    assert ref.sandbox_seconds > 0
    base, base_runs = await evaluate("code", PromptBaseline(), env_kwargs=env_kwargs, concurrency=8,
                                     progress=False)
    assert (base.episodes, base.successes) == (164, 0)
    assert all(t.outcome == "terminated" and not all(x["passed"] for x in t.info["tests"]) for t in base_runs)


async def test_per_test_detail_and_plain_text_answers():
    async with make("code", sandbox_backend="local") as env:
        task = env.tasks()[2]  # truncate_number: return number % 1.0
        await env.reset(task)
        wrong = "```python\ndef truncate_number(number: float) -> float:\n    return 0.5\n```"
        result = await env.step(Message(role="assistant", content="Here it is:\n" + wrong))
    assert result.terminated and result.reward == 0.0
    tests = env.trajectory.info["tests"]
    assert [t["passed"] for t in tests] == [True, False, False]
    assert "AssertionError" in tests[1]["error"]
    assert env.trajectory.reward_components["tests_passed_fraction"] == pytest.approx(1 / 3)


async def test_python_tool_is_stateful_and_reports_errors():
    async with make("code", sandbox_backend="local") as env:
        await env.reset(env.tasks()[0])
        calls = [ToolCall(id="a", name="python", arguments=json.dumps({"code": "x = 41"})),
                 ToolCall(id="b", name="python", arguments=json.dumps({"code": "print(x + 1)\n1/0"}))]
        result = await env.step(Message(role="assistant", tool_calls=calls))
    assert result.observation[0].text == "(no output)"
    assert "42" in result.observation[1].text and "ZeroDivisionError" in result.observation[1].text


async def test_user_tasks_from_jsonl(tmp_path):
    rows = [{"task_id": "double", "prompt": "def double(x: int) -> int:\n    \"\"\"Twice x.\"\"\"\n",
             "canonical_solution": "    return 2 * x\n", "entry_point": "double",
             "test": "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(-1) == -2\n"}]
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    async with make("code", sandbox_backend="local", tasks_path=path) as env:
        (task,) = env.tasks()
        trajectory = await rollout(env, ReferenceSolution(), task)
    assert trajectory.outcome_reward == 1.0 and len(trajectory.info["tests"]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "x", "prompt": "p"}) + "\n")
    from agentgym.errors import DataError

    with pytest.raises(DataError, match="missing field"):
        make("code", tasks_path=bad).tasks()
