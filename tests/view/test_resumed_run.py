"""After Ctrl-C and ``--resume`` (README's flow), the report and the exports count the episodes eval counts.

The run is real: ``agentgym eval`` in a child process against an OpenAI-compatible server
(:class:`~agentgym.testing.FakeOpenAI`) that answers three episodes and then holds every request, so
that two episodes are in flight (concurrency 2) when the run gets SIGINT and are recorded ``cancelled``. The resume
talks to a second server on another port (the same run: the endpoint is not its identity). The
file then holds the superseded ``cancelled`` rows and their replays; eval, ``agentgym view`` (read
in Chromium) and ``agentgym export --to parquet`` must all say six episodes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agentgym.testing import FakeOpenAI, completion, tool_call
from agentgym.types import read_jsonl

from .conftest import Page, agentgym

N = 6


def solutions() -> dict[str, str]:
    from agentgym.envs.code.env import _humaneval

    return {t.data["prompt"]: t.data["canonical_solution"] for t in _humaneval()[:N]}


def solver(answer_first: int | None, release: threading.Event) -> Any:
    """Submit each task's canonical solution; after ``answer_first`` answers, hold requests until released."""
    tasks = solutions()
    answered = [0]

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        answered[0] += 1
        if answer_first is not None and answered[0] > answer_first:
            release.wait(300)
        user = next(m["content"] for m in request["messages"] if m["role"] == "user")
        prompt = next(p for p in tasks if p in user)
        return completion(tool_calls=[tool_call("submit", {"code": prompt + tasks[prompt]})])

    return answer


def eval_args(out: Path, api_base: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "agentgym.cli", "eval", "code", "--model", "openai/gpt-4o-mini", "--sandbox",
            "local", "--limit", str(N), "--concurrency", "2", "--api-base", api_base, "--out", str(out), *extra]


def test_view_and_export_count_a_resumed_run_as_eval_does(browser: Any, tmp_path: Path) -> None:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = tmp_path / "runs" / "code__gpt.jsonl"
    out.parent.mkdir()
    release = threading.Event()
    with FakeOpenAI(solver(3, release)) as held:
        child = subprocess.Popen(eval_args(out, held.base_url), cwd=tmp_path, env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 300
            # The fourth request holds the server; the fifth waits behind it: two episodes in flight.
            while not (out.exists() and out.read_text().count("\n") >= 3) or len(held.requests) < 4:
                assert child.poll() is None and time.monotonic() < deadline, "the run ended or stalled early"
                time.sleep(0.2)
            time.sleep(1.0)
            child.send_signal(signal.SIGINT)  # Ctrl-C, with two episodes waiting on the model
            _, err = child.communicate(timeout=120)
        finally:
            release.set()
            if child.poll() is None:
                child.kill()
    assert child.returncode == 130, err
    rows = read_jsonl(out)
    assert sorted(t.outcome for t in rows) == ["cancelled"] * 2 + ["terminated"] * 3

    with FakeOpenAI(solver(None, release)) as again:
        resumed = subprocess.run(eval_args(out, again.base_url, "--resume"), cwd=tmp_path, env=env, text=True,
                                 capture_output=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads(out.with_suffix(".summary.json").read_text())
    assert summary["episodes"] == summary["successes"] == N
    assert len(read_jsonl(out)) == N + 2  # the two cancelled rows are still in the file, superseded

    report = tmp_path / "report.html"
    view = agentgym("view", "runs", "--out", str(report), cwd=tmp_path)
    assert view.returncode == 0, view.stderr
    assert f"1 run, {N} episodes" in view.stdout
    page = Page(browser, width=1000)
    try:
        page.page.goto(report.as_uri())
        page.page.wait_for_selector("#summary-table")
        row = page.page.locator("#summary-table tbody tr").first.inner_text()
        assert f"{N}/{N} = 100.0%" in row, row
        assert page.page.locator("tr.episode-row").count() == N
        assert "cancelled" not in page.page.locator("#outcomes, #summary-table").all_inner_texts().__str__()
        assert page.errors == []
    finally:
        page.page.close()

    parquet = tmp_path / "run.parquet"
    exported = agentgym("export", str(out), "--to", "parquet", str(parquet), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert f"{N} trajectories" in exported.stdout
    import pyarrow.parquet as pq

    table = pq.read_table(parquet)
    assert table.num_rows == N and set(table.column("outcome").to_pylist()) == {"terminated"}
