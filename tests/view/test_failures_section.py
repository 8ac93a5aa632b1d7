"""The report says "No failed episodes" only when every episode succeeded.

An episode can fail without an error (it ended, scored 0): a run where half the episodes did so is
not a run with no failed episodes. The runs are real toy-env runs made by the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentgym.view.report import failures_section
from agentgym.view.runs import load_runs

ROOT = Path(__file__).resolve().parents[2]


def toy(policy: str, where: Path) -> Path:
    out = where / f"toy__{policy}.jsonl"
    argv = [sys.executable, "-m", "agentgym.cli", "eval", "toy", "--model", policy, "--out", str(out)]
    done = subprocess.run(argv, cwd=where, text=True, capture_output=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return out


def test_no_failed_episodes_only_when_none_failed(tmp_path: Path) -> None:
    (good,) = load_runs([toy("reference", tmp_path)])
    assert all(t.success for t in good.trajectories)
    assert failures_section([good]) == "<p>No failed episodes.</p>"
    (bad,) = load_runs([toy("baseline", tmp_path)])  # says red: right on one task in three
    lost = sum(not t.success for t in bad.trajectories)
    assert lost == 2 and all(t.failure is None for t in bad.trajectories)
    said = failures_section([good, bad])
    assert "No failed episodes" not in said and f"{lost} of 6 did not succeed" in said
