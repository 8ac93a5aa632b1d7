"""Running a benchmark script as its smoke tests do: in a process of its own, its results file read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def run_script(script: str, out: Path, *args: str, timeout: float = 600) -> dict[str, Any]:
    """``benchmarks/<script>.py ARGS --out OUT``; its results, or a failure that shows the end of its output."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / f"{script}.py"), *args, "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result
