"""One shutdown for every kind of kept sandbox (agentgym.sandboxes.runtime)."""

from __future__ import annotations

import pytest

from agentgym.sandboxes import acquire, runtime
from agentgym.sandboxes.pool import shared_pools
from agentgym.sandboxes.runtime import SandboxRuntime


async def test_the_runtime_closes_every_registered_kind_even_when_one_fails() -> None:
    closed: list[str] = []

    async def fails() -> None:
        closed.append("fails")
        raise RuntimeError("engine gone")

    async def works() -> None:
        closed.append("works")

    runtime.on_shutdown("test kind that fails", fails)
    runtime.on_shutdown("test kind that works", works)
    try:
        sandbox = await acquire("local")
        await sandbox.close()  # back to this loop's shared pool, to be kept warm
        assert len(shared_pools()) == 1
        with pytest.raises(RuntimeError, match="engine gone"):
            async with SandboxRuntime():
                pass
        assert closed == ["fails", "works"]
        assert shared_pools() == []  # the built-in kinds ran too
    finally:
        runtime.forget("test kind that fails")
        runtime.forget("test kind that works")


def test_every_kind_of_kept_sandbox_registers_its_closer() -> None:
    import agentgym.envs.swe.warm
    import agentgym.sandboxes.browser.pool  # noqa: F401

    assert {"shared sandbox pools", "shared browser pools",
            "SWE sandboxes kept for the next episode"} <= set(runtime.kinds())
