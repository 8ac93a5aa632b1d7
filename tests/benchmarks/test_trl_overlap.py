"""``benchmarks/trl_overlap.py --quick``: both arms train, the overlap arm one step stale, the sync arm not.

It checks what the script writes, never a timing (the docs quote the full run's file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.scripts import run_script

#: The tiny model's warm start and four short training runs: minutes on a loaded 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def test_trl_overlap_quick_measures_both_arms(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    result = run_script("trl_overlap", tmp_path / "trl_overlap.json", "--quick", timeout=1800)
    summary = result["summary"]
    assert summary["sync"]["staleness_max"] == 0 and summary["overlap"]["staleness_max"] == 1
    for arm in ("sync", "overlap"):
        (run,) = result["runs"][arm]
        assert len(run["step_seconds"]) == 2 and all(s > 0 for s in run["step_seconds"])
        assert summary[arm]["step_seconds"]["min"] <= summary[arm]["step_seconds"]["median"]
    assert result["runs"]["overlap"][0]["staleness"] == [0, 1, 1]  # one more step is run first
    assert summary["sync"]["env_seconds_per_step"]["min"] >= 1.0  # a reset and a step of 0.5 s each, waited on
    assert summary["speedup_sync_over_overlap"] > 0
    assert "--out" not in result["run"]["command"]
