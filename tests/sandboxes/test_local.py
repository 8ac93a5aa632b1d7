"""The local backend: close() leaves no process behind, and on a machine without bubblewrap there
are still rlimits, an empty environment, a private working directory and a warning; only file and
network isolation are missing."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from agentgym.sandboxes import local
from tests.sandboxes.conftest import SMALL


async def test_close_kills_detached_processes() -> None:
    box = await local.create(SMALL)
    if box._uid is None:
        await box.close()
        pytest.skip("finding a sandbox's processes needs its own uid (run as root)")
    await box.exec("setsid nohup sleep 60 >/dev/null 2>&1 &")
    assert living_processes(box._uid)
    await box.close()
    assert living_processes(box._uid) == []


async def test_runs_without_bubblewrap(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(local, "bubblewrap", lambda: None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-agentgym-test-must-not-leak")
    local._warn_unjailed.cache_clear()
    with caplog.at_level(logging.WARNING):
        box = await local.create(SMALL)
    assert "no network or file isolation" in caplog.text
    workdir = box._workdir
    assert workdir is not None and (await box.exec("pwd")).stdout == workdir + "\n"
    try:
        await box.run_python("x = 2")
        assert (await box.run_python("print(x * 21)")).output == "42\n"
        env = await box.exec("env; pwd")
        assert "sk-agentgym" not in env.stdout and env.stdout.endswith(workdir + "\n")
        limits = await box.exec("ulimit -c; ulimit -v")
        assert limits.stdout.split() == ["0", str(SMALL.memory_mb * 1024)]
        if os.geteuid() == 0:
            assert (await box.exec("id -u")).stdout.strip() != "0"
            await box.exec("nohup sleep 60 >/dev/null 2>&1 &")  # a stray the close must kill
    finally:
        await box.close()
    assert not Path(workdir).exists()  # noqa: ASYNC240 - a stat
    if box._uid is not None:
        assert living_processes(box._uid) == []


def living_processes(uid: int) -> list[str]:
    """Processes of ``uid`` that are not zombies (a killed orphan stays one until init reaps it)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state != "Z":
            found.append(pid)
    return found
