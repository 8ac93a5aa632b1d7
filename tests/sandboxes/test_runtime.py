"""The sandbox runtime (agentgym.sandboxes.runtime): supplies by kind and key, closed once, all of them;
which runtime a caller gets when it names none."""

from __future__ import annotations

import asyncio

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes import acquire, runtime
from agentgym.sandboxes.pool import shared_pools
from agentgym.sandboxes.runtime import SandboxRuntime


class Supply:
    """A supply that records its shutdown, or fails it."""

    def __init__(self, closed: list[str], name: str, error: Exception | None = None) -> None:
        self.closed, self.name, self.error = closed, name, error

    async def shutdown(self) -> None:
        self.closed.append(self.name)
        if self.error is not None:
            raise self.error


async def test_closing_shuts_every_supply_down_kind_by_kind_even_when_one_fails() -> None:
    closed: list[str] = []
    rt = SandboxRuntime()
    first = rt.hold("pools", "a", lambda: Supply(closed, "pool a", RuntimeError("engine gone")))
    assert rt.hold("pools", "a", lambda: Supply(closed, "another a")) is first  # made once per key
    rt.hold("pools", "b", lambda: Supply(closed, "pool b"))
    rt.hold("driver", None, lambda: Supply(closed, "driver"))
    assert rt.kinds() == ["pools", "driver"]
    with pytest.raises(RuntimeError, match="engine gone"):
        await rt.close()
    assert sorted(closed[:2]) == ["pool a", "pool b"] and closed[2:] == ["driver"]  # pools first, then the driver
    with pytest.raises(SandboxError, match="closed"):
        rt.hold("pools", "c", lambda: Supply(closed, "too late"))
    await rt.close()  # twice is fine: nothing left to close
    assert len(closed) == 3


async def test_async_with_makes_it_current_in_its_tasks_and_closes_its_pools() -> None:
    default = runtime.current()
    default_pools = shared_pools(default)
    async with SandboxRuntime() as rt:
        assert runtime.current() is rt
        assert await asyncio.create_task(_current()) is rt  # tasks started inside inherit it
        sandbox = await acquire("local")
        await sandbox.close()  # back to rt's shared pool, wiped, kept warm
        assert len(shared_pools(rt)) == 1 and shared_pools(default) == default_pools
        async with runtime.scope() as inner:
            assert inner is rt  # a run inside an opened runtime uses it and leaves it open
        assert not rt.closed
    assert rt.closed and shared_pools(rt) == []
    assert runtime.current() is default
    async with runtime.scope() as own:
        assert own is not default and runtime.current() is own  # none opened: a run opens its own
    assert own.closed and not default.closed


async def test_shutdown_closes_the_default_and_the_next_use_makes_another() -> None:
    default = runtime.current()
    sandbox = await acquire("local")
    await sandbox.close()
    assert shared_pools()
    await runtime.shutdown()
    assert default.closed and runtime.current() is not default and shared_pools() == []


async def _current() -> SandboxRuntime:
    return runtime.current()
