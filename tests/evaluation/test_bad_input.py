"""Bad options and inputs to ``agentgym eval``: one line naming what is wrong, exit status 2, nothing lost.

The CLI runs in this process (argparse's own exits included), except where a fresh process is
the point (a Docker engine that does not answer is remembered per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.errors import DataError
from agentgym.evaluation import evaluate
from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolSpec, read_jsonl

from .helpers import COUNTER, run_cli

GOOD_ROW = {"task_id": "t/1", "prompt": "def one():\n", "entry_point": "one",
            "test": "def check(candidate):\n    assert candidate() == 1\n",
            "canonical_solution": "    return 1\n"}


def one_error(err: str) -> str:
    """The single line of an error, checked to be single."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("option, value", [("--concurrency", "0"), ("--concurrency", "-1"), ("--limit", "-1"),
                                           ("--limit", "0"), ("--samples", "0"), ("--max-turns", "0"),
                                           ("--turn-timeout", "0")])
def test_counts_and_durations_below_one_are_refused(tmp_path, capsys, option, value):
    code, _, err = run_cli(capsys, "eval", COUNTER, "--model", "reference", option, value,
                           "--out", str(tmp_path / "run.jsonl"))
    assert code == 2
    assert f"argument {option}: must be " in err.strip().splitlines()[-1]
    assert "Traceback" not in err and not (tmp_path / "run.jsonl").exists()


def test_limit_plays_exactly_that_many(tmp_path, capsys):
    code, _, err = run_cli(capsys, "eval", "toy", "--model", "reference", "--limit", "2",
                           "--out", str(tmp_path / "run.jsonl"))
    assert code == 0, err
    assert sorted(t.task_id for t in read_jsonl(tmp_path / "run.jsonl")) == ["green", "red"]


def out_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "a-dir").mkdir()
    return {
        "missing directory": (tmp_path / "nope" / "run.jsonl", "directory {parent} does not exist"),
        "under a file": (tmp_path / "a-file" / "run.jsonl", "{parent} is not a directory"),
        "a directory": (tmp_path / "a-dir", "{path} is a directory"),
        "read-only place": (Path("/proc/agentgym-run.jsonl"), "cannot write {path}"),
    }


@pytest.mark.parametrize("case", ["missing directory", "under a file", "a directory", "read-only place"])
def test_unusable_out_is_one_line_naming_it(tmp_path, capsys, case):
    out, expected = out_cases(tmp_path)[case]
    code, _, err = run_cli(capsys, "eval", "toy", "--model", "reference", "--out", str(out))
    assert code == 2
    assert expected.format(path=out, parent=out.parent) in one_error(err)
    assert not (tmp_path / "nope").exists()


def write_rows(path: Path, *lines: str | bytes) -> Path:
    path.write_bytes(b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines))
    return path


BAD_TASK_FILES = {
    "integer task_id": ([json.dumps(GOOD_ROW), json.dumps({**GOOD_ROW, "task_id": 7})],
                        "tasks.jsonl:2: task_id must be a string, got 7"),
    "a bare number": ([json.dumps(GOOD_ROW), "42"], "tasks.jsonl:2: expected a JSON object, got a number 42"),
    "null prompt": ([json.dumps({**GOOD_ROW, "prompt": None})], "tasks.jsonl:1: prompt must be a string, got null"),
    "not UTF-8": ([json.dumps(GOOD_ROW), b'{"task_id": "caf\xe9"}'], "tasks.jsonl:2: not UTF-8 text (byte 0xe9"),
    "truncated line 2": ([json.dumps(GOOD_ROW), json.dumps({**GOOD_ROW, "task_id": "t/2"})[:25]],
                         "tasks.jsonl:2: not valid JSON"),
    "duplicate ids": ([json.dumps(GOOD_ROW), json.dumps({**GOOD_ROW, "prompt": "def two():\n"})],
                      "tasks.jsonl:2: duplicate task id 't/1' (first on line 1)"),
}


@pytest.mark.parametrize("case", list(BAD_TASK_FILES))
def test_bad_task_file_names_file_and_line(tmp_path, capsys, case):
    lines, expected = BAD_TASK_FILES[case]
    tasks = write_rows(tmp_path / "tasks.jsonl", *lines)
    out = tmp_path / "run.jsonl"
    code, _, err = run_cli(capsys, "eval", "code", "--model", "reference", "--sandbox", "local",
                           "--tasks", str(tasks), "--out", str(out))
    assert code == 2
    assert f"agentgym: error: {tmp_path}/{expected}" in one_error(err)
    assert not out.exists()


def test_out_that_is_the_task_file_is_refused(tmp_path, capsys):
    tasks = write_rows(tmp_path / "tasks.jsonl", json.dumps(GOOD_ROW))
    before = tasks.read_bytes()
    code, _, err = run_cli(capsys, "eval", "code", "--model", "reference", "--sandbox", "local",
                           "--tasks", str(tasks), "--out", str(tmp_path / "." / "tasks.jsonl"))
    assert code == 2 and "the run would overwrite its tasks" in one_error(err)
    assert tasks.read_bytes() == before


class CountUp:
    """Plays the Counter env right for any target in ``task.data``."""

    name = "count-up"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        done = sum(m.role == "tool" for m in messages)
        call = (native_tool_call("c", "add", {"amount": 1}) if done < task.data["target"]
                else native_tool_call("c", "submit", {"total": done}))
        return Reply(message=Message(role="assistant", tool_calls=[call]))


async def test_duplicate_task_ids_are_refused_not_miscounted(tmp_path):
    """Two episodes keyed alike (rewards 0 and 1) were once summarised as "2 successes"."""
    reachable, unreachable = Task(id="same", prompt="Reach 2.", data={"target": 2}), Task(
        id="same", prompt="Reach 9.", data={"target": 9})
    with pytest.raises(DataError, match=r"task id 'same' is used twice \(tasks #1 and #2\)"):
        await evaluate(COUNTER, CountUp(), tasks=[reachable, unreachable], out=tmp_path / "run.jsonl",
                       progress=False)
    assert not (tmp_path / "run.jsonl").exists()
    distinct = [reachable, unreachable.model_copy(update={"id": "other"})]
    summary, trajectories = await evaluate(COUNTER, CountUp(), tasks=distinct, progress=False)
    assert [t.outcome_reward for t in trajectories] == [1.0, 0.0]  # 9 is past Counter's 5 turns
    assert summary.episodes == 2 and summary.successes == 1


def test_unknown_sandbox_through_env_arg_is_refused(tmp_path, capsys):
    for env in ("toy", "code"):
        code, _, err = run_cli(capsys, "eval", env, "--model", "reference", "--env-arg", "sandbox_backend=dockr",
                               "--limit", "1", "--out", str(tmp_path / f"{env}.jsonl"))
        assert code == 2
        assert one_error(err) == "agentgym: error: --env-arg sandbox_backend='dockr': use one of auto, docker, local"


def test_unreachable_docker_engine_fails_before_the_first_episode(tmp_path):
    out = tmp_path / "run.jsonl"
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "code", "--model", "reference",
                           "--sandbox", "docker", "--limit", "2", "--out", str(out)],
                          cwd=tmp_path, env=env, text=True, capture_output=True, timeout=300)
    assert done.returncode == 2
    assert one_error(done.stderr).startswith("agentgym: error: no Docker engine answers")
    assert not out.exists()
