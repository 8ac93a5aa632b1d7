"""SIGTERM and SIGHUP to a real ``agentgym eval`` stop it as Ctrl-C does, and a second signal stops it at once.

The model (FakeOpenAI, solving HumanEval) answers until a few episodes have finished, then hangs:
the episodes still running hold their sandboxes while they wait for it. Then the signal: those
episodes must be recorded as ``cancelled``, the summary printed and written, every sandbox (a
container, or a local process tree) gone, and the process exited with ``128 + signum``.
"""

from __future__ import annotations

import json
import signal
import time

import pytest

from agentgym.sandboxes import list_sandboxes
from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl
from tests.conftest import docker_or_skip

from ..code.humaneval_model import humaneval_model
from ..evaluation.processes import descendants, start_eval, still_running, wait_until

CONCURRENCY = 3


def containers_of(pid: int) -> list[str]:
    return [c.id for c in list_sandboxes({"agentgym.owner_pid": str(pid)})]


def start_and_hang(server: FakeOpenAI, out, backend: str, *extra: str):
    """A run with two episodes finished and ``CONCURRENCY`` more waiting on a model that no longer answers."""
    proc = start_eval(out.parent, "code", "--model", "openai/fake-model", "--api-base", server.base_url,
                      "--limit", "12", "--concurrency", str(CONCURRENCY), "--sandbox", backend,
                      "--request-timeout", "600", "--out", str(out), *extra)
    wait_until(lambda: out.exists() and out.read_text().count("\n") >= 2, proc, "two episodes finished")
    server.faults = ["hang"] * 100
    wait_until(lambda: server.served.get("hang", 0) >= CONCURRENCY, proc, "every running episode waiting")
    return proc


@pytest.mark.parametrize("signum, backend, executor", [(signal.SIGTERM, "docker", "local"),
                                                        (signal.SIGHUP, "local", "local"),
                                                        (signal.SIGTERM, "local", "ray")])
def test_a_signal_records_running_episodes_prints_the_summary_and_releases_sandboxes(tmp_path, signum, backend,
                                                                                     executor):
    if backend == "docker":
        docker_or_skip()
    if executor == "ray":
        pytest.importorskip("ray")
    # With Ray, a local cluster started by the run itself: its workers see the run's key for FakeOpenAI.
    extra = ["--executor", "ray", "--ray-workers", "1"] if executor == "ray" else []
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(humaneval_model, hang_seconds=600) as server:
        proc = start_and_hang(server, out, backend, *extra)
        below = descendants(proc.pid)
        if backend == "docker":
            assert containers_of(proc.pid)
        elif executor == "local":
            assert below  # the local sandboxes' process trees (a Ray worker's are the worker's)
        sent = time.monotonic()
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    assert proc.returncode == 128 + signum, stderr
    assert took < 20, took  # within the default grace period
    assert "Traceback" not in stderr
    name = signal.Signals(signum).name
    assert f"interrupted ({name}): running episodes are recorded as cancelled" in stderr
    rows = read_jsonl(out)
    outcomes = [t.outcome for t in rows]
    assert outcomes.count("cancelled") == CONCURRENCY and outcomes.count("terminated") >= 2, outcomes
    assert set(outcomes) == {"terminated", "cancelled"}
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == len(rows) and summary["outcomes"]["cancelled"] == CONCURRENCY
    assert "episodes" in stdout and f"summary:      {out.with_suffix('.summary.json')}" in stdout
    assert still_running(below) == []
    if backend == "docker":
        assert containers_of(proc.pid) == []
    assert not out.with_suffix(".run.lock").exists()


@pytest.mark.parametrize("how", ["a second signal", "the grace period over"])
def test_a_second_signal_or_the_grace_period_ends_it_at_once(tmp_path, how):
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(humaneval_model, hang_seconds=600) as server:
        grace = ["--stop-timeout", "0.001"] if how == "the grace period over" else []
        proc = start_and_hang(server, out, "local", *grace)
        finished = out.read_bytes()
        below = descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        seen = ""
        if how == "a second signal":  # once the first is handled: two pending SIGTERMs are delivered as one
            assert proc.stderr is not None
            while "SIGTERM: stopping" not in seen:
                line = proc.stderr.readline()
                assert line, seen
                seen += line
            proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=30)
        stderr = seen + stderr
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    reason = "SIGTERM again: stopping now" if how == "a second signal" else "not stopped within 0.001 s of SIGTERM"
    assert f"agentgym: {reason}" in stderr and "Traceback" not in stderr, stderr
    assert out.read_bytes().startswith(finished)  # what was written is whole
    assert out.read_bytes().endswith(b"\n")
    assert still_running(below) == []  # the local sandboxes die with their parent
