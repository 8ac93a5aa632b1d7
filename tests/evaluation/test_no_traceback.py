"""Inputs that once ended in a traceback: each is one line and exit status 2, from a real ``agentgym`` process.

A fresh process for each, as an operator runs it: an exception that escapes ``main`` shows here as
a traceback on stderr, which an in-process call would turn into a test error of another kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROW = {"task_id": "t/1", "prompt": "def one():\n    \"\"\"\ud800\"\"\"\n", "entry_point": "one",
       "test": "def check(candidate):\n    assert candidate() == 1\n", "canonical_solution": "    return 1\n"}

CASES: dict[str, tuple[list[str], str]] = {
    "--out .": (["eval", "toy", "--model", "reference", "--out", "."],
                ". is a directory; --out takes a file name"),
    "code tasks_path=123": (["eval", "code", "--model", "reference", "--sandbox", "local", "--env-arg",
                             "tasks_path=123", "--out", "run.jsonl"],
                            "code: cannot list its tasks with sandbox_backend='local', tasks_path=123: TypeError"),
    "search metric=bogus": (["eval", "search", "--model", "reference", "--env-arg", "metric=bogus", "--out",
                             "run.jsonl"],
                            "cannot build agentgym/search-v0 with sandbox_backend='auto', metric='bogus': "
                            "metric must be 'f1' or 'em'"),
    "swe reward=bogus": (["eval", "swe", "--model", "reference", "--env-arg", "reward=bogus", "--out", "run.jsonl"],
                         "cannot build agentgym/swe-v0 with sandbox_backend='auto', reward='bogus': "
                         "unknown SWE reward"),
    "a lone surrogate": (["eval", "code", "--model", "reference", "--sandbox", "local", "--tasks", "tasks.jsonl",
                          "--out", "run.jsonl"],
                         "tasks.jsonl:1: prompt holds a lone surrogate"),
    "view --out DIR": (["view", "runs", "--out", "runs"], "runs is a directory; --out takes the report's file name"),
    "view --out under /proc": (["view", "runs", "--out", "/proc/agentgym-report.html"],
                               "cannot write /proc/agentgym-report.html: "),
    "view --port 99999": (["view", "runs", "--serve", "--port", "99999"],
                          "argument --port: a port is 0 to 65535, got 99999"),
}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a finished toy run in ``runs/`` and a task file whose prompt holds ``\\ud800``."""
    work = tmp_path_factory.mktemp("bad-input")
    (work / "tasks.jsonl").write_text(json.dumps(ROW) + "\n")  # ensure_ascii: the file itself is ASCII
    (work / "runs").mkdir()
    done = agentgym(work, "eval", "toy", "--model", "reference", "--out", "runs/toy.jsonl")
    assert done.returncode == 0, done.stderr
    return work


def agentgym(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-m", "agentgym.cli", *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


@pytest.mark.parametrize("case", list(CASES))
def test_one_line_and_exit_2(workdir, case):
    args, expected = CASES[case]
    before = sorted(p.name for p in workdir.rglob("*"))
    done = agentgym(workdir, *args)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    if "--port" in args:  # argparse's own: its usage lines, then the error
        assert lines[-1] == f"agentgym view: error: {expected}", done.stderr
    else:
        assert len(lines) == 1 and lines[0].startswith("agentgym: error: ") and expected in lines[0], done.stderr
    assert sorted(p.name for p in workdir.rglob("*")) == before  # nothing written, nothing left half-written
