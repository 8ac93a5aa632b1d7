"""The Docker engine restarted mid-run (a second engine of the test's own, the machine's is shared):
episodes whose sandboxes died with it are recorded as errors with their reason, later ones run on the
engine once it is back, ``--resume`` replays the errors, and no container is left on the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agentgym.testing import FakeOpenAI
from agentgym.testing.dockerd import Engine, second_engine
from agentgym.types import read_jsonl
from tests.conftest import docker_or_skip

from ..code.humaneval_model import humaneval_model

pytestmark = pytest.mark.docker

TASKS = 10


class HeldModel:
    """The HumanEval model, holding every call after the first ``free`` until ``release`` is set.

    So when the engine restarts, episodes are mid-run (sandboxes up, waiting on the model) however fast
    or slow the machine is: with a model that only slept, a starved test process could look in after
    the whole run had finished, and find no sandbox to lose."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.calls = 0
        self.held = 0
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.calls += 1
            hold = self.calls > self.free and not self.release.is_set()
            self.held += hold
        if hold:
            self.release.wait(600)
        return humaneval_model(request)


def eval_on(engine: Engine, server: FakeOpenAI, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "DOCKER_HOST": engine.unix.url, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "OPENAI_API_KEY": "sk-test"}
    argv = [sys.executable, "-m", "agentgym.cli", "eval", "code", "--model", "openai/fake-model", "--api-base",
            server.base_url, "--limit", str(TASKS), "--concurrency", "3", "--sandbox", "docker", "--out", str(out),
            *extra]
    return subprocess.Popen(argv, env=env, cwd=out.parent, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_an_engine_restarted_mid_run_loses_nothing_and_leaves_nothing(tmp_path):
    docker_or_skip()
    out = tmp_path / "run.jsonl"
    model = HeldModel(free=6)
    with second_engine() as engine, FakeOpenAI(model) as server:
        try:
            first = eval_on(engine, server, out)
            deadline = time.monotonic() + 600
            while not model.held and time.monotonic() < deadline:
                assert first.poll() is None, first.communicate()[1]
                time.sleep(0.1)
            assert model.held  # episodes are waiting on the model, their sandboxes up
            assert containers(engine)  # the run's sandboxes are on the second engine (its image copied there)
            engine.stop()
            engine.start()
            model.release.set()
            _, err = first.communicate(timeout=600)
            assert first.returncode == 0, err
            rows = read_jsonl(out)
            assert sorted(t.task_id for t in rows) == sorted(f"HumanEval/{i}" for i in range(TASKS))
            failed = [t for t in rows if t.outcome == "error"]
            assert failed  # the episodes whose sandboxes went down with the engine
            for t in failed:
                assert t.failure is not None and "SandboxError" in t.failure

            again = eval_on(engine, server, out, "--resume")
            _, err = again.communicate(timeout=600)
            assert again.returncode == 0, err
            finished = [t.task_id for t in read_jsonl(out) if t.outcome == "terminated"]
            assert sorted(finished) == sorted(f"HumanEval/{i}" for i in range(TASKS))  # each once
            assert json.loads(out.with_suffix(".summary.json").read_text())["successes"] == TASKS
            assert containers(engine) == []
        finally:
            model.release.set()  # a failed test must not leave the server held


def containers(engine: Engine) -> list[str]:
    """Every agentgym container on the engine, running or not."""
    listed = subprocess.run(["docker", "-H", engine.unix.url, "ps", "-aq", "--filter", "label=agentgym=1"],
                            capture_output=True, text=True, check=True)
    return listed.stdout.split()
