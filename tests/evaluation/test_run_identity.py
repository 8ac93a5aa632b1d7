"""What a run is (env, tasks, model, sampling) decides whether ``--resume`` may continue it; where it runs does not.

A resume with another task file, or with none where the run had one, would merge two task sets into
one summary: refused. A resume that reaches the same model at another address (a server restarted on
another port) is the same run: accepted. A run with no task at all is a bad input, not a 0/0 result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl

from .counter_model import counter_model
from .helpers import COUNTER, run_cli
from .test_resume import FIRST, SECOND, code_eval, summary_of


def write_tasks(path: Path, *tasks: dict) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


@pytest.mark.parametrize("second_tasks", ["other", "none"])
def test_resume_with_another_task_set_is_refused(tmp_path, capsys, second_tasks):
    out = tmp_path / "run.jsonl"
    first = write_tasks(tmp_path / "first.jsonl", FIRST)
    assert run_cli(capsys, *code_eval(out, "local", "--tasks", str(first)))[0] == 0
    before = out.read_bytes()
    other = ["--tasks", str(write_tasks(tmp_path / "second.jsonl", SECOND))] if second_tasks == "other" else []
    code, _, err = run_cli(capsys, *code_eval(out, "local", "--limit", "1", "--resume", *other))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"cannot resume {out}: it holds another run (another task set" in err
    assert out.read_bytes() == before and [t.task_id for t in read_jsonl(out)] == ["t/1"]


def test_resume_may_play_more_of_the_same_task_file(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    tasks = write_tasks(tmp_path / "tasks.jsonl", FIRST, SECOND)
    assert run_cli(capsys, *code_eval(out, "local", "--tasks", str(tasks), "--limit", "1"))[0] == 0
    moved = tasks.rename(tmp_path / "moved.jsonl")  # the same tasks from another path: the same run
    code, _, err = run_cli(capsys, *code_eval(out, "local", "--tasks", str(moved), "--resume"))
    assert code == 0, err
    assert summary_of(out)["episodes"] == summary_of(out)["successes"] == 2


def test_resume_at_another_api_base_is_the_same_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run.jsonl"
    args = ["eval", COUNTER, "--model", "openai/fake-model", "--out", str(out)]
    with FakeOpenAI(counter_model) as first:
        assert run_cli(capsys, *args, "--api-base", first.base_url, "--limit", "2")[0] == 0
    with FakeOpenAI(counter_model) as second:  # another port
        assert second.base_url != first.base_url
        code, _, err = run_cli(capsys, *args, "--api-base", second.base_url, "--resume")
        assert second.requests, "the resumed episode was played at the new address"
    assert code == 0, err
    assert summary_of(out)["episodes"] == summary_of(out)["successes"] == 3


def test_an_env_with_no_tasks_and_no_task_file_is_a_bad_input(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    code, printed, err = run_cli(capsys, "eval", "swe", "--model", "reference", "--out", str(out))
    assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1, err
    assert "no tasks to play: swe has no built-in tasks, and no --tasks" in err
    assert not out.exists() and not out.with_suffix(".summary.json").exists()
