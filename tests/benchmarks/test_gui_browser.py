"""The GUI browser benchmark runs in its tiny configuration and writes every figure the docs quote.

It checks what the script produces (keys, that each part ran), never how fast anything is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.test_scripts import is_spread, run_quick

pytestmark = pytest.mark.docker


def test_gui_browser(tmp_path: Path) -> None:
    result = run_quick("gui_browser", tmp_path)
    assert result["info"]["commit"] and result["task"] == "click-test" and result["env_steps"] == 5
    assert set(result["backends"]) == {"docker", "local"}
    assert result["docker_pipe"] == "fifos"  # this machine's engine is local
    for row in result["backends"].values():
        summary = row["summary"]
        for key in ("start_ms", "warm_acquire_ms", "reset_load_ms", "reset_episode_ms", "step_ms",
                    "step_playwright_ms", "step_screenshot_ms", "idle_mib", "env_reset_ms", "env_reset_cold_ms",
                    "env_step_ms", "env_episode_ms", "env_reset_think_ms", "env_step_think_ms", "env_episode_think_ms"):
            assert is_spread(summary[key]) and summary[key]["min"] > 0, key
        assert set(summary["screenshot_ms"]) == {"frame_png_clip", "free_playwright_png_clip",
                                                 "free_cdp_png_clip_fast", "free_cdp_jpeg80_clip_fast"}
        assert len(row["runs"]) == 2
        assert set(row["selenium_over_ours"]) == {"step", "step_playwright", "step_screenshot", "click_read",
                                                  "screenshot", "reset", "env_step", "env_episode", "env_step_think",
                                                  "env_episode_think"}
        assert all(ratio > 0 for ratio in row["selenium_over_ours"].values())
    selenium = result["selenium"]["summary"]
    for key in ("start_ms", "reset_ms", "step_ms", "step_screenshot_ms", "click_read_ms", "screenshot_ms",
                "episode_ms"):
        assert is_spread(selenium[key]) and selenium[key]["min"] > 0, key


def test_gui_step_cpu(tmp_path: Path) -> None:
    # enough steps that the shim's share of the attach stream (~1 CPU-ms a step) spans clock ticks (10 ms)
    result = run_quick("gui_step_cpu", tmp_path, "--steps", "150")
    assert result["info"]["commit"] and result["steps"] == 150
    for pipe in ("fifos", "attach"):
        summary = result[pipe]["summary"]
        for key in ("client", "child_processes", "containers", "container_shims", "total", "docker_daemons", "wall_ms"):
            assert is_spread(summary[key]), key
        assert summary["client"]["min"] > 0 and summary["containers"]["min"] > 0
    # the attach stream's copies run in the docker client and the container's shim; the FIFOs' nowhere
    assert result["attach"]["summary"]["child_processes"]["min"] > 0
    assert result["attach"]["summary"]["container_shims"]["min"] > 0
    assert result["fifos"]["summary"]["container_shims"]["max"] == 0
