"""``agentgym view runs/`` where one file holds no episode: that file is skipped with a line, the rest reported.

Alone, an empty file is still an error (exit 2, one line): there is nothing to show.
"""

from __future__ import annotations

from pathlib import Path

from .conftest import agentgym


def test_a_file_with_no_episode_is_skipped_with_a_line(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    done = agentgym("eval", "toy", "--model", "reference", "--out", str(runs / "toy.jsonl"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (runs / "empty.jsonl").write_text("")
    view = agentgym("view", "runs", "--out", "report.html", cwd=tmp_path)
    assert view.returncode == 0, view.stderr
    assert view.stderr.strip().splitlines() == [
        f"skipped: {Path('runs') / 'empty.jsonl'} holds no trajectory (is it an agentgym run's JSONL?)"]
    assert "report: report.html (1 run, 3 episodes)" in view.stdout
    alone = agentgym("view", str(runs / "empty.jsonl"), cwd=tmp_path)
    assert alone.returncode == 2 and len(alone.stderr.strip().splitlines()) == 1
