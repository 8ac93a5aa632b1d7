"""``--tasks`` goes through the env's ``load_tasks``: each env reads its own format, and says what is wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.envs.code.env import CodeEnv
from agentgym.envs.search.env import SearchEnv
from agentgym.errors import DataError
from agentgym.types import Task, read_jsonl

HUMANEVAL_ROW = {
    "task_id": "mine/add", "prompt": "def add(a, b):\n    \"\"\"Sum.\"\"\"\n", "entry_point": "add",
    "canonical_solution": "    return a + b\n", "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n",
}


def test_the_cli_reads_a_task_file_through_the_env(tmp_path: Path) -> None:
    tasks = tmp_path / "mine.jsonl"
    tasks.write_text(json.dumps(HUMANEVAL_ROW) + "\n")
    out = tmp_path / "run.jsonl"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "code", "--model", "reference", "--sandbox",
                           "local", "--tasks", str(tasks), "--out", str(out)], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr
    [trajectory] = read_jsonl(out)
    assert (trajectory.task_id, trajectory.env, trajectory.success) == ("mine/add", "agentgym/code-v0", True)


def test_each_env_checks_its_own_format(tmp_path: Path) -> None:
    bad_code = tmp_path / "code.jsonl"
    bad_code.write_text(json.dumps({k: v for k, v in HUMANEVAL_ROW.items() if k != "test"}) + "\n")
    with pytest.raises(DataError, match=r"code\.jsonl:1: missing field"):
        CodeEnv.load_tasks(bad_code)
    search = tmp_path / "search.jsonl"
    good = Task(id="q1", prompt="Who won Super Bowl 50?", data={"answer": ["Denver Broncos"]})
    old = Task(id="q2", prompt="Where?", data={"answers": ["Santa Clara"]})
    search.write_text(good.model_dump_json() + "\n\n" + old.model_dump_json() + "\n")
    with pytest.raises(DataError, match=r"search\.jsonl:3: task 'q2' has no gold answer .* \(it has data\['answers'\]"):
        SearchEnv.load_tasks(search)
    search.write_text(good.model_dump_json() + "\n")
    assert SearchEnv.load_tasks(search) == [good]
    search.write_text("{not json\n")
    with pytest.raises(DataError, match=r"search\.jsonl:1: "):
        SearchEnv.load_tasks(search)
