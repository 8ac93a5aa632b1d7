"""``examples/train_grpo.py`` says what it is doing through its warm start, not only at the end.

A short run of the real script (25 warm-start steps, one GRPO step of two generations), as a user
would start it, in a subprocess.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def test_the_example_prints_progress_through_its_warm_start(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_grpo.py"), "--warm-start-steps", "50", "--steps", "1",
         "--generations", "2", "--output", str(tmp_path / "out")],
        cwd=tmp_path, env=env, text=True, capture_output=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    warm = [line for line in lines if line.startswith("warm start: step ")]
    assert [line.split(",")[0] for line in warm] == ["warm start: step 25/50", "warm start: step 50/50"]
    assert all(re.search(r", loss \d+\.\d{3}, \d+ s \(\d+ CPU-s\)$", line) for line in warm)
    order = [next(i for i, line in enumerate(lines) if line.startswith(prefix))
             for prefix in ("warm start: teaching", "warm start: step 25/", "GRPO: 1 steps", "done in ")]
    assert order == sorted(order)  # each said as it happens: warm start, then GRPO, then the total
