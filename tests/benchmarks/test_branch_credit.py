"""The branch-credit benchmark runs and finds the decisive turn better by branching than by the episode's outcome."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.scripts import run_script


def test_quick_run(tmp_path: Path) -> None:
    result = run_script("branch_credit", tmp_path / "b.json", "--quick")
    (row,) = result["results"]
    c = row["correlation"]
    assert row["n"] == 2 and row["episodes"] == 4 and row["forks_per_episode"] >= 2
    assert c["branch"] > c["uniform"] and c["branch"] > c["leave_one_out"]
