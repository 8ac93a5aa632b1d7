"""One writer per run file, between two real ``agentgym eval`` processes on one ``--out``.

The first run's episodes hang on FakeOpenAI, so it holds its file for as long as the test needs;
a second run on the same file is refused (``--resume``, ``--overwrite``, or neither) naming the
first's pid, and once the first is SIGKILLed its lock file is stale and the next run takes it over.
"""

from __future__ import annotations

import signal

from agentgym.evaluation.runlock import lock_path
from agentgym.testing import FakeOpenAI
from agentgym.types import read_jsonl

from .processes import run_eval, start_eval, wait_until


def test_a_second_writer_is_refused_and_a_dead_ones_lock_taken_over(tmp_path):
    out = tmp_path / "run.jsonl"
    lock = lock_path(out)
    with FakeOpenAI(lambda request: {}, faults=["hang"] * 50, hang_seconds=600) as server:
        first = start_eval(tmp_path, "toy", "--model", "openai/fake-model", "--api-base", server.base_url,
                           "--request-timeout", "600", "--out", str(out))
        try:
            wait_until(lambda: server.served.get("hang", 0) >= 3, first, "playing its 3 episodes")
            for again in (["--resume"], ["--overwrite"], []):
                second = run_eval(tmp_path, "toy", "--model", "openai/fake-model", "--api-base", server.base_url,
                                  "--out", str(out), *again, timeout=120)
                lines = second.stderr.strip().splitlines()
                assert second.returncode == 2, second.stderr
                assert len(lines) == 1, second.stderr
                assert lines[0].startswith(f"agentgym: error: {out} is being written by another run "
                                           f"(pid {first.pid} on "), second.stderr
                assert ", started 20" in lines[0] and "wait for it to end, or choose another --out" in lines[0]
            assert server.served["hang"] == 3  # the refused runs played nothing
            assert first.poll() is None
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait()
    assert lock.exists() and f'"pid": {first.pid}' in lock.read_text()  # stale: its holder is dead

    taken = run_eval(tmp_path, "toy", "--model", "reference", "--overwrite", "--out", str(out))
    assert taken.returncode == 0, taken.stderr
    assert sorted(t.task_id for t in read_jsonl(out)) == ["blue", "green", "red"]
    assert not lock.exists()  # removed when the run ended
