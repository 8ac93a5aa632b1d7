"""The Docker backend's direct socket: private to the supervisor, gone with the container, and optional."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import tempfile
import time

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes import channel, docker, hosts, reaper
from agentgym.sandboxes.client import SupervisorProtocol
from agentgym.sandboxes.docker import create
from tests.conftest import docker_or_skip
from tests.sandboxes.conftest import SMALL
from tests.sandboxes.test_leaks import dead_pid

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def _engine() -> None:
    docker_or_skip()


def rundir(box: docker.DockerSandbox) -> str:
    labels = docker.engine.client().api.inspect_container(box.id)["Config"]["Labels"]
    return str(labels[channel.LABEL])


def present(path: str) -> bool:
    return os.path.exists(path)


async def test_requests_bypass_dockerd_and_code_cannot_reach_the_socket() -> None:
    async with await create("python", SMALL) as box:
        assert not box.client.protocol.multiplexed  # the direct socket, not the attach stream
        path = rundir(box)
        assert os.listdir(path) == []  # the socket is unlinked once the supervisor is connected
        probe = await box.exec(f"ls -a {channel.MOUNT}; touch {channel.MOUNT}/x; mkdir {channel.MOUNT}/d")
        assert probe.exit_code != 0 and "Permission denied" in probe.stderr
        assert os.listdir(path) == []
        fds = await box.exec("ls -l /proc/self/fd/ /proc/$PPID/fd/")
        assert "socket:" not in fds.stdout and "pipe:" in fds.stdout  # the supervisor's socket is not inherited
    assert not present(path)


async def test_a_supervisor_that_cannot_connect_falls_back_to_the_attach_stream(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class Misplaced(channel.Listener):
        def __init__(self) -> None:
            super().__init__()
            os.rename(self.path, self.path + ".elsewhere")  # the supervisor finds no socket and exits
            self.path += ".elsewhere"

    monkeypatch.setattr(channel, "Listener", Misplaced)
    monkeypatch.setattr(docker, "_direct", {})
    monkeypatch.setattr(docker, "_direct_proven", set())
    with caplog.at_level(logging.WARNING):
        async with await create("python", SMALL) as box:
            assert box.client.protocol.multiplexed
            assert (await box.run_python("print(6 * 7)")).output == "42\n"
    assert "attach stream" in caplog.text
    assert docker._direct == {hosts.default(): False}


async def test_a_stranger_is_not_taken_for_the_supervisor() -> None:
    listener = channel.Listener()
    stranger = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        stranger.connect(listener.path)
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with pytest.raises(SandboxError, match="outside container"):
            await listener.accept("0" * 64, never, 5)
        assert not present(listener.path)
    finally:
        stranger.close()
        channel.remove_dir(listener.dir)


async def test_closing_the_direct_socket_ends_the_container() -> None:
    async with await create("python", SMALL) as box:
        protocol = box.client.protocol
        assert isinstance(protocol, SupervisorProtocol)
        box.client.transport.close()  # what the owner's death does: the supervisor reads end of input
        await asyncio.wait_for(protocol.closed, 60)
        assert not box.connected
        deadline = time.monotonic() + 60  # bounds on what must happen, wide enough for a loaded machine
        while docker.engine.client().api.containers(all=True, filters={"id": box.id}):
            assert time.monotonic() < deadline, "the container outlived its supervisor"
            await asyncio.sleep(0.2)


async def test_reaper_removes_only_stale_directories() -> None:
    fresh = channel.Listener()
    mine = channel.Listener()  # old, named by no container, but its owner (this process) lives
    for listener in (fresh, mine):
        listener.close()
    stale = tempfile.mkdtemp(prefix=f"{channel.PREFIX}{dead_pid()}.1-")  # its owner is gone
    legacy = tempfile.mkdtemp(prefix=channel.PREFIX)  # no owner in the name: the containers alone decide
    old = time.time() - channel.STALE_SECONDS - 10
    for path in (stale, legacy, mine.dir):
        os.utime(path, (old, old))
    async with await create("python", SMALL) as box:
        in_use = rundir(box)
        os.utime(in_use, (old, old))
        try:
            await asyncio.to_thread(reaper.reap)
            assert not present(stale) and not present(legacy)
            assert present(fresh.dir)  # may belong to a container being created right now
            assert present(mine.dir)  # may belong to a container of this process on another local engine
            assert present(in_use) and (await box.exec("echo alive")).stdout == "alive\n"
        finally:
            for path in (fresh.dir, mine.dir, stale, legacy):
                channel.remove_dir(path)
