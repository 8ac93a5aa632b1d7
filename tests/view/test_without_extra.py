"""``agentgym view`` and ``export`` on an install without the ``view`` extra: one line naming the install, no traceback.

The child process hides one of the extra's packages (``sys.modules[name] = None`` makes its import
fail as a missing package does) and runs the real command on a real run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def without(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            f"from agentgym.cli import main\nsys.exit(main({list(args)!r}))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, text=True, capture_output=True, timeout=300)


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("toy")
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "eval", "toy", "--model", "reference", "--out",
                           str(where / "toy.jsonl")], cwd=where, text=True, capture_output=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return where / "toy.jsonl"


@pytest.mark.parametrize("module, command", [
    ("plotly", ["view", "RUN", "--out", "report.html"]),
    ("datasets", ["export", "RUN", "--to", "datasets", "ds"]),
    ("pyarrow", ["export", "RUN", "--to", "parquet", "run.parquet"]),
])
def test_a_missing_view_extra_is_one_line_naming_the_install(toy_run, tmp_path, module, command):
    done = without(module, *[str(toy_run) if a == "RUN" else a for a in command], cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"agentgym: error: agentgym {command[0]} needs the view extra ({module} is not installed): "
        "pip install -e '.[view]'"]
