"""A fake sandbox backend for pool tests: the test decides, with futures, when a start or a wipe ends.

It fakes only what :class:`~agentgym.sandboxes.pool.SandboxPool` calls on a sandbox: ``connected``,
``started``, ``close()``, ``destroy()`` and ``wipe()``.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from typing import Any

from agentgym.sandboxes import backends

_ids = itertools.count()


class FakeSandbox:
    def __init__(self) -> None:
        self.id = f"fake-{next(_ids)}"
        self.connected = True
        self.started = time.monotonic()
        self.limits = None
        self.destroyed = False
        self.wipes: list[asyncio.Future[bool]] = []  # one per wipe(): True wipes it clean, False fails

    async def close(self) -> None:
        await self.destroy()

    async def destroy(self) -> None:
        self.destroyed, self.connected = True, False

    async def wipe(self) -> str | None:
        wipe = asyncio.get_running_loop().create_future()
        self.wipes.append(wipe)
        return None if await wipe else "the fake wipe failed"


class FakeBackend:
    """Registered under ``name``; each ``start()`` waits on a future in ``starts`` that the test resolves."""

    def __init__(self, name: str = "fake") -> None:
        self.name = name
        self.starts: list[asyncio.Future[FakeSandbox]] = []

    async def start(self, image: str, limits: Any, hosts: Sequence[Any] | None = None, *, spare: bool = False) -> Any:
        starting: asyncio.Future[FakeSandbox] = asyncio.get_running_loop().create_future()
        self.starts.append(starting)
        return await starting

    def finish_starts(self) -> list[FakeSandbox]:
        """End every start still waiting, each with a new sandbox."""
        made = []
        for starting in self.starts:
            if not starting.done():
                made.append(FakeSandbox())
                starting.set_result(made[-1])
        return made


def register_fake(name: str = "fake") -> FakeBackend:
    fake = FakeBackend(name)
    backends.register(fake)
    return fake
