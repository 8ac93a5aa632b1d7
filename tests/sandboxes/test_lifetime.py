"""A sandbox's life is bounded on the host side too: a wall-time limit ends it, and a supervisor that
stops answering turns into an error instead of a hang."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from agentgym.errors import SandboxTimeout
from agentgym.sandboxes import engine
from agentgym.sandboxes.backends import start
from agentgym.sandboxes.docker import DockerSandbox
from agentgym.sandboxes.local import LocalSandbox
from agentgym.sandboxes.supervised import GRACE_SECONDS, SupervisedSandbox
from tests.sandboxes.conftest import SMALL


async def test_wall_time_ends_the_sandbox(backend: str) -> None:
    box = await start(backend, "python", SMALL.model_copy(update={"wall_seconds": 2}))
    try:
        result = await box.exec("sleep 30", timeout=30)
        # ended by the 2 s limit, well before the command's own 30 s (with room for a loaded machine)
        assert result.timed_out and time.monotonic() - box.started < 20
        with pytest.raises(SandboxTimeout, match="wall time"):
            await box.exec("true")
        assert not await box.is_alive()
        if isinstance(box, DockerSandbox):  # the container removed itself, nobody had to close it
            deadline = time.monotonic() + 60  # wide enough for a loaded engine
            while engine.client().api.containers(all=True, filters={"id": box.id}):
                assert time.monotonic() < deadline, "the expired container was not removed"
                await asyncio.sleep(0.2)
    finally:
        await box.close()


def freeze(box: SupervisedSandbox) -> None:
    """Stop the supervisor without killing it: the worst case for a caller waiting on an answer."""
    if isinstance(box, DockerSandbox):
        engine.client().api.pause(box.id)
        return
    assert isinstance(box, LocalSandbox)
    for pid in [box.proc.pid, *descendants(box.proc.pid)]:
        os.kill(pid, signal.SIGSTOP)


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


async def test_hung_supervisor_times_out_instead_of_hanging(sandbox: SupervisedSandbox) -> None:
    freeze(sandbox)
    started = time.monotonic()
    with pytest.raises(SandboxTimeout, match="no answer"):
        await sandbox.exec("true", timeout=1)
    assert time.monotonic() - started < 1 + GRACE_SECONDS + 30  # a frozen supervisor never answers: any bound tells
    assert not await sandbox.is_alive()
    await sandbox.close()
