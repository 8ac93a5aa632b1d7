"""Closed sandboxes go back to their pool wiped: nothing of the last user survives into the next."""

from __future__ import annotations

import asyncio

from agentgym import Env, Task
from agentgym.sandboxes.lending import Destroy
from agentgym.sandboxes.pool import SandboxPool, acquire, shared_pool, shutdown_pools
from tests.sandboxes.conftest import SMALL

LEFTOVERS = """
import os, subprocess
secret = 42
open('/tmp/left.txt', 'w').write('x')
os.makedirs('/tmp/locked/deeper')
open('/tmp/locked/deeper/f', 'w').write('x')
os.chmod('/tmp/locked/deeper', 0)
os.chmod('/tmp/locked', 0)
subprocess.Popen(['sleep', '300'], start_new_session=True)
"""

SNOOP = """
import os
mine = [p for p in os.listdir('/proc') if p.isdigit() and os.stat('/proc/' + p).st_uid == os.getuid()
        and int(p) != os.getpid()]
print(sorted(os.listdir('/tmp')), sorted(os.listdir('.')), 'secret' in globals(), len(mine))
"""


async def ready(pool: SandboxPool, count: int) -> None:
    """Wait (up to 60 s: a loaded machine wipes slowly) until ``count`` sandboxes are ready in ``pool``."""
    for _ in range(1200):
        if pool.ready == count:
            return
        await asyncio.sleep(0.05)


async def _returned(pool: SandboxPool, sandbox_id: str) -> bool:
    for _ in range(1200):  # up to 60 s
        if any(s.id == sandbox_id for s in pool._ready):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_closed_sandbox_comes_back_wiped(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=1, max_size=4)
    try:
        first = await pool.acquire()
        assert not (await first.run_python(LEFTOVERS)).error
        await first.write_file("notes.txt", "private")
        await first.exec("nohup sleep 300 >/dev/null 2>&1 &")
        await first.close()
        assert await _returned(pool, first.id), "the wiped sandbox did not come back to the pool"
        while True:  # take spares until we get the recycled one
            again = await pool.acquire()
            if again.id == first.id:
                break
            await again.destroy()
        assert again is not first
        result = await again.run_python(SNOOP)
        assert result.output.strip() == "[] [] False 0", result
        assert not result.restarted and result.error is None
        try:
            await first.run_python("print(1)")
        except Exception as e:  # the old handle stays closed: it cannot reach the next user's sandbox
            assert "closed" in str(e)
        else:
            raise AssertionError("the old handle still works")
        await again.destroy()
    finally:
        await pool.shutdown()


async def test_a_dead_sandbox_is_destroyed_not_recycled(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=1)
    try:
        box = await pool.acquire()
        box.client.close()  # as if the supervisor's stream broke
        await box.close()
        await asyncio.sleep(0.5)
        assert all(s.id != box.id for s in pool._ready)
        assert not await box.is_alive()
    finally:
        await pool.shutdown()


async def test_a_pool_that_does_not_recycle_destroys(backend: str) -> None:
    pool = SandboxPool(backend, "python", SMALL, size=1, recycler=Destroy())
    try:
        box = await pool.acquire()
        await box.close()
        assert not await box.is_alive()  # destroyed, not wiped: nothing of it is left to hand out
        assert all(s.id != box.id for s in pool._ready)
    finally:
        await pool.shutdown()


async def test_a_recycling_pool_keeps_one_spare_beyond_those_lent_and_no_twins() -> None:
    pool = SandboxPool("local", "python", SMALL, size=2, max_size=4)
    try:
        await pool.fill()
        lent = [await pool.acquire(), await pool.acquire()]
        assert pool.counts().starting == 1  # one spare for the next caller, not one per lent sandbox
        await ready(pool, 1)
        await asyncio.gather(*(box.close() for box in lent))
        await ready(pool, 3)
        assert {box.id for box in lent} <= {box.id for box in pool._ready}
        gone = await pool.acquire()
        await gone.destroy()  # destroyed, not closed: two ready ones remain, enough for size 2
        assert pool.ready == 2 and pool.counts().starting == 0 and gone.id not in {box.id for box in pool._ready}
    finally:
        await pool.shutdown()


async def test_the_next_caller_does_not_wait_for_the_wipe_of_the_last() -> None:
    pool = SandboxPool("local", "python", SMALL, size=1, max_size=4)
    try:
        await pool.fill()
        first = await pool.acquire()
        await ready(pool, 1)  # the spare a lent sandbox brings
        await first.close()  # now being wiped
        second = await pool.acquire()
        assert second.id != first.id and pool.counts().wiping == 1
        assert (await second.run_python("print(2)")).output == "2\n"
        await second.close()
    finally:
        await pool.shutdown()


class Scratch(Env):
    """An env whose episodes only need a sandbox."""

    sandbox_image = "python"

    def tasks(self) -> list[Task]:
        return [Task(id="t", prompt="anything")]


async def test_an_env_reset_does_not_wait_for_the_last_episodes_wipe() -> None:
    pool = SandboxPool("local", "python", SMALL, size=1, max_size=4)
    env = Scratch(sandbox_backend=pool)
    try:
        await pool.fill()
        await env.reset()
        first = env.sandbox
        await ready(pool, 1)
        await env.reset()  # closes the first (wiped in the background) and takes the spare
        assert env.sandbox.id != first.id
        assert (await env.sandbox.exec("echo fine")).stdout == "fine\n"
    finally:
        await env.close()
        await pool.shutdown()


async def test_a_cold_acquire_on_a_pool_of_one_starts_no_spare_and_recycles() -> None:
    pool = SandboxPool("local", "python", SMALL, size=1, max_size=1)
    try:
        box = await pool.acquire()
        assert pool.counts().starting == 0 and pool.ready == 0  # the pool is full: the lent one is all it keeps
        await box.close()
        assert await _returned(pool, box.id), "the only sandbox was destroyed instead of recycled"
    finally:
        await pool.shutdown()


async def test_a_caller_waits_for_a_sandbox_being_wiped_rather_than_starting_one() -> None:
    pool = SandboxPool("local", "python", SMALL, size=1, max_size=1)
    try:
        await pool.fill()
        box = await pool.acquire()
        await box.close()  # now being wiped; the pool has no room for a spare
        again = await pool.acquire()  # the pool is empty, but one is on its way back
        assert again.id == box.id and pool.counts().cold == 0 and pool.size == 1
        await again.close()
    finally:
        await pool.shutdown()


async def test_verifier_sandboxes_are_never_lent_to_a_model() -> None:
    limits = SMALL.model_copy(update={"exec_timeout": 19})  # shared pools of their own for this test
    try:
        verifier = await acquire("local", limits=limits, verifier=True)
        await verifier.write_file("hidden_tests.py", "assert f(1) == 2")
        await verifier.close()
        verifiers = await shared_pool("local", limits=limits, verifier=True)
        assert await _returned(verifiers, verifier.id), "a closed verifier sandbox should be wiped and kept"
        models = [await acquire("local", limits=limits) for _ in range(3)]
        spares = (await shared_pool("local", limits=limits))._ready
        assert verifier.id not in {box.id for box in models} | {box.id for box in spares}
        await asyncio.gather(*(box.close() for box in models))
    finally:
        await shutdown_pools()


async def test_a_verifier_sandbox_from_a_provider_is_destroyed_on_close() -> None:
    pool = SandboxPool("local", "python", SMALL, size=1, max_size=2)
    try:
        box = await acquire(pool, verifier=True)
        await box.close()
        assert not await box.is_alive()
        assert box.id not in {spare.id for spare in pool._ready}
    finally:
        await pool.shutdown()


async def test_episodes_shorter_than_a_wipe_do_not_grow_the_pool_to_its_ceiling() -> None:
    # A session that closes and acquires faster than a wipe runs misses a ready sandbox now and then;
    # growing on each such miss started sandboxes whose starts slowed the wipes, up to max_size.
    pool = SandboxPool("local", "python", SMALL, size=1, max_size=16)
    population = []
    try:
        await pool.fill()
        for _ in range(40):
            box = await pool.acquire()
            assert (await box.run_python("print(1)")).output == "1\n"
            await box.close()
            population.append(pool.counts().population)
        assert pool.size == 1
        assert max(population) <= 3, population  # one lent, and at most one spare per lent one beyond the first
    finally:
        await pool.shutdown()
