"""The driver (``agentgym eval``) SIGKILLed mid-run, then restarted with ``--resume``: every episode it
finished is kept once, the rest are played, and no container of either process is left once the
second has started (the first's are removed when its sockets close, or reaped by the next start)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentgym.sandboxes import list_sandboxes
from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl
from tests.conftest import docker_or_skip

from ..code.humaneval_model import humaneval_model

pytestmark = pytest.mark.docker

TASKS = 12


def slow_model(request: dict[str, Any]) -> dict[str, Any]:
    """The HumanEval model, 0.15 s an answer (one at a time): episodes end over seconds."""
    time.sleep(0.15)
    return humaneval_model(request)


def start(server: FakeOpenAI, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test"}
    argv = [sys.executable, "-m", "agentgym.cli", "eval", "code", "--model", "openai/fake-model", "--api-base",
            server.base_url, "--limit", str(TASKS), "--concurrency", "3", "--sandbox", "docker", "--out", str(out),
            *extra]
    return subprocess.Popen(argv, env=env, cwd=out.parent, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def containers_of(pid: int) -> list[str]:
    return [c.id for c in list_sandboxes({"agentgym.owner_pid": str(pid)})]


def test_a_sigkilled_driver_resumes_without_losing_or_repeating_an_episode(tmp_path):
    docker_or_skip()
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(slow_model) as server:
        first = start(server, out)
        deadline = time.monotonic() + 300
        while (not out.exists() or out.read_text().count("\n") < 3) and time.monotonic() < deadline:
            assert first.poll() is None, first.communicate()[1]
            time.sleep(0.1)
        assert containers_of(first.pid)  # it was running sandboxes
        first.send_signal(signal.SIGKILL)
        first.wait()
        finished = {(t.task_id, t.seed) for t in read_jsonl(out) if t.outcome == "terminated"}
        assert 3 <= len(finished) < TASKS

        second = start(server, out, "--resume")
        _, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    rows = [(t.task_id, t.seed) for t in read_jsonl(out) if t.outcome == "terminated"]
    assert sorted(rows) == sorted((f"HumanEval/{i}", 0) for i in range(TASKS))  # each finished once
    assert set(rows[: len(finished)]) == finished  # the kept ones first, the rest played after
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == summary["successes"] == TASKS
    assert containers_of(first.pid) == [] and containers_of(second.pid) == []
