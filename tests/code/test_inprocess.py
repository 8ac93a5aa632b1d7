"""In-process grading (``grading="inprocess"``): plain Python's verdict, and the generic tampering caught.

The submission shares the interpreter with the tests there, so these are the forges a policy finds
first: leave early with a clean status, exit at import, replace a builtin the tests rely on, set a
trace hook, write passing records for every statement on the result channel. Each must score 0 with
a wrong function, on both backends; the same honest function passes. Also: the dry run that decides
a task's mode before its first episode, through the env and through ``agentgym tasks check``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym import make
from agentgym.envs.code.grading import verify
from agentgym.envs.code.policies import ReferenceSolution
from agentgym.evaluation import evaluate
from agentgym.types import Task

from .test_forgery import submit

DATA = {"task_id": "square", "prompt": "def square(x: int) -> int:\n    \"\"\"x squared.\"\"\"\n",
        "test": "def check(candidate):\n    for x in range(-3, 4):\n        assert candidate(x) == x * x\n"
                "    assert candidate(10) == 100\n",
        "entry_point": "square", "canonical_solution": "    return x * x\n"}
HONEST = "def square(x):\n    return x * x\n"
FORGES = {
    "os._exit(0) from the call": "import os\ndef square(x):\n    os._exit(0)\n",
    "sys.exit(0) at import": "import sys\nsys.exit(0)\ndef square(x):\n    return 0\n",
    "AssertionError replaced": "import builtins\nbuiltins.AssertionError = type('A', (Exception,), {})\n"
                               "def square(x):\n    return 0\n",
    "a trace hook that swallows failures": "import sys\nsys.settrace(lambda *a: None)\ndef square(x):\n    return 0\n",
    "a check of its own": "def check(candidate):\n    pass\ndef square(x):\n    return 0\n",
    "a passing record for each statement (two and the canaries) on the channel, then a clean exit":
        "import json, os, sys\ndef square(x):\n    fd = int(sys.argv[1])\n"
        "    for i in range(4):\n        os.write(fd, (json.dumps(['finished', i, None]) + '\\n').encode())\n"
        "    os.write(fd, b'[\"done\"]\\n')\n    os._exit(0)\n",
    "a passing record for every statement written at import, then a clean exit":
        "import json, os, sys\nfd = int(sys.argv[1])\n"
        "for i in range(4):\n    os.write(fd, (json.dumps(['finished', i, None]) + '\\n').encode())\n"
        "os.write(fd, b'[\"done\"]\\n')\nos._exit(0)\n",
    "isinstance patched to say yes": "import builtins\nbuiltins.isinstance = lambda *a: True\n"
                                     "def square(x):\n    return 0\n",
}


async def test_an_honest_solution_passes_in_process(backend: str) -> None:
    report = await verify(DATA, HONEST, sandbox=backend, image="python", timeout=20, grading="inprocess")
    assert report.all_passed and report.grading == "inprocess", report


@pytest.mark.parametrize("forge", FORGES, ids=list(FORGES))
async def test_in_process_forges_score_zero(backend: str, forge: str) -> None:
    report = await verify(DATA, FORGES[forge], sandbox=backend, image="python", timeout=20, grading="inprocess")
    assert not report.all_passed, report
    assert report.error or any(not t["passed"] for t in report.tests), report


def write_tasks(path: Path) -> Path:
    rows = [
        DATA,
        {"task_id": "linked", "prompt": "class ListNode:\n    def __init__(self, val=0, next=None):\n"
                                        "        self.val = val\n        self.next = next\n\n\n"
                                        "def head_val(head):\n    \"\"\"The first value.\"\"\"\n",
         "canonical_solution": "    return head.val\n", "entry_point": "head_val",
         "test": "def check(candidate):\n    assert candidate(ListNode(4)) == 4\n"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_tasks_check_says_how_each_task_is_graded_or_why_it_is_refused(tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "tasks.jsonl")
    run = subprocess.run([sys.executable, "-m", "agentgym.cli", "tasks", "check", str(path)],
                         capture_output=True, text=True, timeout=120)
    lines = run.stdout.splitlines()
    assert run.returncode == 1, run
    assert lines[0].startswith("square: graded isolated"), lines
    assert lines[1].startswith("linked: refused: isolated grading of the canonical solution differs"), lines
    assert "ListNode(4)" in lines[1] and "not plain data" in lines[1], lines
    auto = subprocess.run([sys.executable, "-m", "agentgym.cli", "tasks", "check", str(path), "--grading", "auto"],
                          capture_output=True, text=True, timeout=120)
    assert auto.returncode == 0 and auto.stdout.splitlines()[1].startswith("linked: graded inprocess"), auto


async def test_a_task_the_relay_cannot_grade_is_refused_before_its_episode_or_graded_in_process(
        backend: str, tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "tasks.jsonl")
    solution = "def head_val(head):\n    return head.val\n"
    async with make("code", sandbox_backend=backend, tasks_path=path) as env:
        task = next(t for t in env.tasks() if t.id == "linked")
        with pytest.raises(Exception, match="refused: isolated grading of the canonical solution differs"):
            await env.reset(task)
    async with make("code", sandbox_backend=backend, tasks_path=path, grading="auto") as env:
        for task in env.tasks():
            await env.reset(task)
            await env.step(submit(HONEST if task.id == "square" else solution))
            assert env.trajectory is not None
            assert env.trajectory.reward == 1.0, env.trajectory.info
            assert env.trajectory.info["grading"] == ("isolated" if task.id == "square" else "inprocess")


async def test_every_reward_says_which_mode_graded_it(backend: str) -> None:
    task = Task(id="square", prompt=DATA["prompt"], data={**DATA, "grading": "inprocess"})
    async with make("code", sandbox_backend=backend) as env:
        await env.reset(task)
        await env.step(submit("def square(x):\n    return 0\n"))
        assert env.trajectory is not None
        assert env.trajectory.reward == 0.0 and env.trajectory.info["grading"] == "inprocess"


async def test_the_run_summary_says_how_its_episodes_were_graded(backend: str, tmp_path: Path) -> None:
    path = write_tasks(tmp_path / "tasks.jsonl")
    summary, _ = await evaluate("code", ReferenceSolution(), env_kwargs={
        "sandbox_backend": backend, "tasks_path": str(path), "grading": "auto"}, progress=False)
    assert summary.successes == 2 and summary.grading == {"isolated": 1, "inprocess": 1}, summary
    assert "inprocess=1, isolated=1" in summary.table()
