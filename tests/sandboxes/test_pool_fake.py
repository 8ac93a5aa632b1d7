"""Pool behaviour on a fake backend: deterministic, no sleeps, no clocks; counts() instead of privates."""

from __future__ import annotations

import asyncio

from agentgym.sandboxes.pool import SandboxPool

from .fakes import FakeBackend, FakeSandbox, register_fake


async def _settle() -> None:
    for _ in range(5):  # let the pool's callbacks and tasks run their next steps
        await asyncio.sleep(0)


async def _filled(pool: SandboxPool, fake: FakeBackend) -> FakeSandbox:
    """Fill ``pool`` (size 1) from ``fake``, finishing its one start; the sandbox it keeps ready."""
    filling = asyncio.ensure_future(pool.fill())
    await _settle()
    assert pool.counts().starting == 1
    (first,) = fake.finish_starts()
    await filling
    return first


async def test_a_closed_sandbox_is_wiped_and_handed_out_again() -> None:
    fake = register_fake("fake-recycle")
    pool = SandboxPool("fake-recycle", size=1)
    try:
        first = await _filled(pool, fake)
        box = await pool.acquire()
        assert box.held is first and pool.counts().lent == 1
        await box.close()
        await _settle()
        assert pool.counts().wiping == 1 and len(first.wipes) == 1
        first.wipes[0].set_result(True)
        await _settle()
        counts = pool.counts()
        assert counts.wiping == 0 and counts.lent == 0 and not first.destroyed
        assert counts.ready == 1 and counts.population == 1  # size 1: the wiped one is all it keeps
        assert (await pool.acquire()).held is first
    finally:
        fake.finish_starts()
        await pool.shutdown()


async def test_one_that_cannot_be_wiped_is_destroyed_and_replaced() -> None:
    fake = register_fake("fake-unwipeable")
    pool = SandboxPool("fake-unwipeable", size=1)
    try:
        first = await _filled(pool, fake)
        box = await pool.acquire()
        await box.close()
        await _settle()
        first.wipes[0].set_result(False)
        await _settle()
        assert first.destroyed
        assert pool.counts().starting >= 1  # a replacement is on its way
    finally:
        fake.finish_starts()
        await pool.shutdown()


async def test_a_miss_grows_the_pool_and_shutdown_destroys_the_spares() -> None:
    fake = register_fake("fake-grow")
    pool = SandboxPool("fake-grow", size=1, max_size=3)
    try:
        acquiring = asyncio.ensure_future(pool.acquire())  # nothing ready, nothing on its way: a cold start
        await _settle()
        assert pool.counts().cold == 1 and pool.size == 2
        fake.finish_starts()
        box = await acquiring
        await _settle()
        assert pool.counts().lent == 1
        spares = fake.finish_starts()
        await _settle()
        assert spares and pool.counts().ready == len(spares)
    finally:
        await pool.shutdown()
    assert all(spare.destroyed for spare in spares) and not box.destroyed  # the lent one is the caller's
