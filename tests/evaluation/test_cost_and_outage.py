"""Two things a hosted run must say plainly: a cost that nobody knows, and an endpoint that is down.

An unpriced model's cost is unknown, not ``$0.0000`` (which reads as free), in eval's summary and in
the report. A dead ``--api-base`` gives progress lines naming the retries and the last error, not
minutes of silence: the run is a real child process, its endpoint a port nothing listens on.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from agentgym.testing import FakeOpenAI
from agentgym.view.report import cost_section
from agentgym.view.runs import load_runs

from .counter_model import counter_model
from .helpers import COUNTER, run_cli


def test_an_unpriced_model_costs_unknown_not_zero(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(counter_model) as server:  # "openai/fake-model" has no price in litellm's table
        code, printed, err = run_cli(capsys, "eval", COUNTER, "--model", "openai/fake-model", "--api-base",
                                     server.base_url, "--limit", "2", "--out", str(out))
        calls = len(server.requests)
    assert code == 0, err
    cost = next(line for line in printed.splitlines() if line.startswith("cost"))
    assert cost.split(None, 1)[1] == f"unknown ({calls} unpriced calls)" and "$0.0000" not in printed
    (run,) = load_runs([out])
    assert run.summary.unpriced_calls == calls
    assert f"unknown ({calls} unpriced calls)" in cost_section([run]) and "$0.0000" not in cost_section([run])


def test_a_priced_model_costs_dollars(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(lambda request: {**counter_model(request), "model": "gpt-4o-mini"}) as server:
        code, printed, err = run_cli(capsys, "eval", COUNTER, "--model", "openai/gpt-4o-mini", "--api-base",
                                     server.base_url, "--limit", "1", "--out", str(out))
    assert code == 0, err
    cost = next(line for line in printed.splitlines() if line.startswith("cost")).split(None, 1)[1]
    assert cost.startswith("$") and "unknown" not in cost
    (run,) = load_runs([out])
    assert run.summary.cost_usd > 0 and run.summary.unpriced_calls == 0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_a_dead_api_base_gives_progress_lines_with_retries_and_the_last_error(tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    argv = [sys.executable, "-m", "agentgym.cli", "eval", "toy", "--model", "openai/gpt-4o-mini", "--api-base",
            f"http://127.0.0.1:{closed_port()}/v1", "--progress-every", "0.5", "--out", str(tmp_path / "run.jsonl")]
    child = subprocess.Popen(argv, cwd=tmp_path, env=env, text=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    seen = []
    try:
        deadline = time.monotonic() + 120
        assert child.stderr is not None
        while time.monotonic() < deadline:
            line = child.stderr.readline()
            if not line:
                break
            seen.append(line)
            if "model retries, last error:" in line:
                break
    finally:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
    progress = [line for line in seen if "model retries, last error:" in line]
    assert progress, "".join(seen[-20:])
    assert progress[0].startswith("toy · openai/gpt-4o-mini: 0/3 episodes, 0 succeeded")
    assert "Connection" in progress[0] or "connect" in progress[0].lower(), progress[0]
