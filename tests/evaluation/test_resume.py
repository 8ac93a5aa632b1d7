"""``--resume`` continues the same run, and only that: a torn row costs nothing, another run is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl
from tests.conftest import docker_or_skip

from .counter_model import counter_model
from .helpers import COUNTER, run_cli

FIRST = {"task_id": "t/1", "prompt": "def one():\n", "entry_point": "one",
         "test": "def check(candidate):\n    assert candidate() == 1\n", "canonical_solution": "    return 1\n"}
SECOND = {**FIRST, "task_id": "t/2", "prompt": "def two():\n", "entry_point": "two",
          "test": "def check(candidate):\n    assert candidate() == 2\n", "canonical_solution": "    return 2\n"}


def code_eval(out: Path, backend: str, *extra: str) -> list[str]:
    return ["eval", "code", "--model", "reference", "--sandbox", backend, "--out", str(out), *extra]


def summary_of(out: Path) -> dict:
    return json.loads(out.with_suffix(".summary.json").read_text())


def test_resume_after_a_torn_last_line_loses_nothing(tmp_path, capsys, backend):
    out = tmp_path / "run.jsonl"
    code, _, err = run_cli(capsys, *code_eval(out, backend, "--limit", "2"))
    assert code == 0, err
    whole = out.read_bytes()
    out.write_bytes(whole + whole[:300])  # killed while writing a third row
    code, _, err = run_cli(capsys, *code_eval(out, backend, "--limit", "3", "--resume"))
    assert code == 0, err
    rows = out.read_bytes().split(b"\n")
    assert rows[-1] == b"" and all(json.loads(row) for row in rows[:-1])  # every line whole
    assert sorted(t.task_id for t in read_jsonl(out)) == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert summary_of(out)["episodes"] == 3 and summary_of(out)["successes"] == 3


def test_a_whole_last_row_without_its_newline_is_kept(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert run_cli(capsys, "eval", "toy", "--model", "reference", "--limit", "2", "--out", str(out))[0] == 0
    out.write_bytes(out.read_bytes().rstrip(b"\n"))
    assert run_cli(capsys, "eval", "toy", "--model", "reference", "--resume", "--out", str(out))[0] == 0
    assert sorted(t.task_id for t in read_jsonl(out)) == ["blue", "green", "red"]
    assert summary_of(out)["episodes"] == 3


def test_resume_may_switch_the_sandbox_backend(tmp_path, capsys, backend):
    """Both backends pass one conformance suite: the backend is not part of what a run is."""
    docker_or_skip()
    other = "local" if backend == "docker" else "docker"
    out = tmp_path / "run.jsonl"
    assert run_cli(capsys, *code_eval(out, backend, "--limit", "1"))[0] == 0
    code, _, err = run_cli(capsys, *code_eval(out, other, "--limit", "2", "--resume"))
    assert code == 0, err
    assert summary_of(out)["episodes"] == 2 and summary_of(out)["successes"] == 2


@pytest.mark.parametrize("change, named", [
    (["--model", "openai/other-model"], 'policy.model was "openai/fake-model", now "openai/other-model"'),
    (["--temperature", "0.7"], "policy.temperature was 0.0, now 0.7"),
    (["--max-turns", "3"], "env_args.max_turns was null, now 3"),
    (["--env-arg", "max_turns=4"], "env_args.max_turns was null, now 4"),
])
def test_resume_into_another_run_is_refused(tmp_path, capsys, monkeypatch, change, named):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model) as server:
        args = ["eval", COUNTER, "--api-base", server.base_url, "--out", str(out)]
        assert run_cli(capsys, *args, "--model", "openai/fake-model", "--limit", "2")[0] == 0
        before = (out.read_bytes(), out.with_suffix(".summary.json").read_bytes())
        requests = len(server.requests)
        code, _, err = run_cli(capsys, *args, "--model", "openai/fake-model", *change, "--resume")
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert f"cannot resume {out}: it holds another run (" in err and named in err
        assert (out.read_bytes(), out.with_suffix(".summary.json").read_bytes()) == before
        assert len(server.requests) == requests
        # The same run resumes: one more task played, two kept.
        code, _, err = run_cli(capsys, *args, "--model", "openai/fake-model", "--resume")
    assert code == 0, err
    assert summary_of(out)["episodes"] == 3 and summary_of(out)["successes"] == 3


def test_resume_after_a_task_changed_is_refused(tmp_path, capsys):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(FIRST) + "\n" + json.dumps(SECOND) + "\n")
    out = tmp_path / "run.jsonl"
    args = code_eval(out, "local", "--tasks", str(tasks))
    assert run_cli(capsys, *args, "--limit", "1")[0] == 0
    tasks.write_text(json.dumps({**FIRST, "test": "def check(candidate):\n    assert candidate() == 2\n"}) + "\n"
                     + json.dumps(SECOND) + "\n")
    code, _, err = run_cli(capsys, *args, "--resume")
    assert code == 2 and "task 't/1' changed" in err
    assert [t.task_id for t in read_jsonl(out)] == ["t/1"]


def test_a_file_without_a_run_record_is_not_resumed(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    assert run_cli(capsys, "eval", "toy", "--model", "reference", "--limit", "1", "--out", str(out))[0] == 0
    out.with_suffix(".run.json").unlink()
    code, _, err = run_cli(capsys, "eval", "toy", "--model", "reference", "--resume", "--out", str(out))
    assert code == 2 and "it has no run record (run.run.json)" in err
    assert len(read_jsonl(out)) == 1


def test_a_full_out_needs_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "run.jsonl"
    args = ["eval", "toy", "--model", "reference", "--out", str(out)]
    assert run_cli(capsys, *args, "--limit", "1")[0] == 0
    before = out.read_bytes()
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and "already holds trajectories: pass --resume to continue that run or --overwrite" in err
    assert out.read_bytes() == before
    assert run_cli(capsys, *args, "--limit", "2", "--overwrite")[0] == 0
    assert len(read_jsonl(out)) == 2 and summary_of(out)["episodes"] == 2
