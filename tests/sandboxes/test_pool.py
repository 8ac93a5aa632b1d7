"""Warm pools and backend choice: fast hand-outs, growth on demand, clean shutdown, clear failures."""

from __future__ import annotations

import asyncio

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes import Keep, SandboxPool, acquire, shutdown_pools, warm_up
from agentgym.sandboxes.backends import resolve_backend
from agentgym.sandboxes.engine import available
from agentgym.sandboxes.pool import shared_pool
from tests.conftest import docker_or_skip
from tests.sandboxes.conftest import SMALL


async def test_pool_hands_out_warm_sandboxes(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=2)
    first = await pool.acquire()
    await pool.fill()
    assert pool.ready == 2
    warm = {box.id for box in pool._ready}
    second = await pool.acquire()
    assert second.id in warm and second.id != first.id  # handed one of the ready ones, none started for it
    assert (await second.run_python("print(1 + 1)")).output == "2\n"
    await pool.fill()
    await pool.shutdown()
    assert pool.ready == 0
    await asyncio.gather(first.close(), second.close())
    with pytest.raises(SandboxError, match="shut down"):
        await pool.acquire()


async def test_acquire_uses_a_provider_object() -> None:
    pool = SandboxPool("local", limits=SMALL, size=1)
    box = await acquire(pool)
    try:
        assert (await box.exec("echo ok")).stdout == "ok\n"
    finally:
        await box.close()
        await pool.shutdown()


async def test_shared_pools_grow_on_demand_and_shut_down() -> None:
    await warm_up("local", limits=SMALL, count=2)
    ready = {box.id for box in (await shared_pool("local", limits=SMALL))._ready}
    warm = await acquire("local", limits=SMALL)
    assert len(ready) == 2 and warm.id in ready
    await warm.close()
    boxes = await asyncio.gather(*(acquire("local", limits=SMALL) for _ in range(3)))
    assert len({b.id for b in boxes}) == 3
    await asyncio.gather(*(b.close() for b in boxes))
    again = await acquire("local", limits=SMALL)
    await again.close()
    await shutdown_pools()


async def test_unknown_backend_is_refused() -> None:
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        await acquire("kubernetes")


@pytest.mark.docker
async def test_missing_image_fails_with_the_reason() -> None:
    docker_or_skip()
    with pytest.raises(SandboxError, match="could not be pulled"):  # at once, not after a wait on a missing image
        await acquire("docker", image="agentgym-test/no-such-image:1", limits=SMALL)
    await shutdown_pools()


async def test_auto_prefers_docker() -> None:
    assert await resolve_backend("auto") == ("docker" if available() else "local")


async def test_dead_spares_are_not_handed_out() -> None:
    pool = SandboxPool("local", limits=SMALL, size=2)
    await pool.fill()
    dead = list(pool._ready)
    for spare in dead:
        spare.proc.kill()  # type: ignore[attr-defined]
    await asyncio.sleep(0.3)  # the supervisors' streams close
    box = await pool.acquire()
    try:
        assert box.id not in {d.id for d in dead}
        assert (await box.exec("echo ok")).stdout == "ok\n"
    finally:
        await box.close()
        await pool.shutdown()
        await asyncio.gather(*(d.close() for d in dead))


async def test_keep_takes_a_sandbox_back_as_it_is() -> None:
    """The ``Keep`` recycler skips the wipe (for callers that all run the same trusted code); the lease given
    back reaches nothing, and one given back as not reusable is destroyed."""
    pool = SandboxPool("local", "python", SMALL, size=1, max_size=1, recycler=Keep())
    try:
        box = await pool.acquire()
        await box.run_python("left = 'by the last caller'")
        await box.close()
        again = await pool.acquire()
        assert again is not box and again.held is box._item
        assert (await again.run_python("print(left)")).output == "by the last caller\n"
        with pytest.raises(SandboxError, match="given back"):
            await box.run_python("print(left)")
        kept = again.held
        await again.destroy()
        assert not await kept.is_alive() and pool.counts().lent == 0
    finally:
        await pool.shutdown()
