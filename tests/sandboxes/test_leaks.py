"""Nothing outlives its owner: closed, failed and orphaned Docker sandboxes all disappear."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from agentgym.sandboxes import builder, engine, reaper
from agentgym.sandboxes.docker import create
from tests.conftest import docker_or_skip
from tests.sandboxes.conftest import SMALL

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def _engine() -> None:
    docker_or_skip()


def exists(container_id: str) -> bool:
    return bool(engine.client().api.containers(all=True, filters={"id": container_id}))


async def gone_within(container_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not await asyncio.to_thread(exists, container_id):
            return True
        await asyncio.sleep(0.2)
    return False


async def test_close_removes_the_container() -> None:
    box = await create("python", SMALL)
    assert exists(box.id)
    await box.close()
    assert not exists(box.id)


async def test_error_inside_async_with_removes_the_container() -> None:
    box = await create("python", SMALL)
    with pytest.raises(RuntimeError):
        async with box:
            await box.exec("true")
            raise RuntimeError("the env crashed")
    assert not exists(box.id)


OWNER = """
import asyncio
from agentgym.sandboxes.docker import create
from agentgym.sandboxes.contract import Limits

async def main():
    box = await create("python", Limits(memory_mb=128, wall_seconds=600))
    print(box.id, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_sigkilled_owner_leaves_nothing() -> None:
    owner = await asyncio.create_subprocess_exec(sys.executable, "-c", OWNER, stdout=subprocess.PIPE)
    assert owner.stdout is not None
    container_id = (await asyncio.wait_for(owner.stdout.readline(), 60)).decode().strip()
    assert container_id and exists(container_id)
    owner.kill()
    await owner.wait()
    # The owner's end of the attach socket closed: the supervisor reads EOF, exits, and Docker removes it.
    assert await gone_within(container_id, 15)


def labelled_sleeper(**overrides: str) -> str:
    """A started container with owner labels (patched by ``overrides``) that never removes itself."""
    labels = engine.owner_labels(600)
    labels.update({f"{engine.LABEL}.{k}": v for k, v in overrides.items()})
    api = engine.client().api
    created = api.create_container(
        builder.image_tag("python"), command=["sleep", "600"], labels=labels,
        host_config=api.create_host_config(network_mode="none", init=True),
    )
    api.start(created["Id"])
    return created["Id"]


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


async def test_reaper_removes_only_leaked_containers() -> None:
    orphan = labelled_sleeper(owner_pid=str(dead_pid()))
    expired = labelled_sleeper(started="1000")
    recycled = labelled_sleeper(owner_start="1")  # our pid, but not our process: the pid was reused
    mine = labelled_sleeper()
    try:
        removed = await asyncio.to_thread(reaper.reap)
        # Any process reaps on its first Docker use, so another one on this engine may get there first.
        assert all(c[:12] in removed or not exists(c) for c in (orphan, expired, recycled))
        assert mine[:12] not in removed and exists(mine)
        listed = {c.id: c for c in reaper.list_sandboxes()}
        assert not listed[mine[:12]].leaked
    finally:
        # Not prune(): it would also remove sandboxes other test runs on this engine are using.
        for container_id in (orphan, expired, recycled, mine):
            await asyncio.to_thread(engine.remove_container, container_id)
    assert not any(map(exists, (orphan, expired, recycled, mine)))


EXITS_WITHOUT_CLOSING = """
import asyncio, os
from agentgym.sandboxes import acquire, warm_up
from agentgym.sandboxes.contract import Limits

async def main():
    limits = Limits(memory_mb=128)
    await warm_up("docker", limits=limits, count=2)   # spares in the shared pool
    box = await acquire("docker", limits=limits)      # and one in use, never closed
    print(os.getpid(), flush=True)

asyncio.run(main())
"""


async def test_exit_without_closing_leaves_nothing() -> None:
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", EXITS_WITHOUT_CLOSING, stdout=subprocess.PIPE
    )
    out, _ = await owner.communicate()
    assert owner.returncode == 0
    pid = out.decode().strip()
    # The atexit backstop removed them before the process ended.
    left = engine.client().api.containers(all=True, filters={"label": f"{engine.LABEL}.owner_pid={pid}"})
    assert left == []


FIRST_USE = """
import asyncio
from agentgym.sandboxes.docker import create
from agentgym.sandboxes.contract import Limits

async def main():
    box = await create("python", Limits(memory_mb=128))
    await box.close()

asyncio.run(main())
"""


async def test_first_docker_use_in_a_process_reaps() -> None:
    orphan = labelled_sleeper(owner_pid=str(dead_pid()))
    try:
        fresh = await asyncio.create_subprocess_exec(sys.executable, "-c", FIRST_USE)
        assert await fresh.wait() == 0
        assert not exists(orphan)
    finally:
        await asyncio.to_thread(engine.remove_container, orphan)
