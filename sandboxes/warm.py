"""What every warm pool does the same way: start spares in the background, count them while they
start, pause after a start that failed, and hand out only spares that are alive and young.

:class:`~agentgym.sandboxes.pool.SandboxPool` (Python sandboxes, wiped between users) and
:class:`~agentgym.sandboxes.browser.pool.BrowserPool` (browsers, cleared between episodes) build on
it. Each says how to start a spare (:meth:`WarmPool._start_spare`), how many it keeps
(:meth:`WarmPool._target` against :meth:`WarmPool._population`) and where a new one goes
(:meth:`WarmPool._deliver`); lending and taking back are theirs.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Coroutine
from typing import Any, Generic, Protocol, TypeVar

from agentgym.errors import SandboxError

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0  # pause after a failed background start, so a broken engine is not hammered


class Spare(Protocol):
    """What a pool needs of what it keeps."""

    @property
    def connected(self) -> bool: ...

    @property
    def started(self) -> float: ...

    async def close(self) -> None: ...


class WallTime(Protocol):
    @property
    def wall_seconds(self) -> float: ...


S = TypeVar("S", bound=Spare)


class WarmPool(Generic[S]):
    """Spares of one kind, kept ready in the background.

    Args:
        size: Spares to keep (subclasses say what ``size`` counts).
        max_size: The most ``size`` may grow to (default: ``size``).
        limits: The spares' limits; one past half its ``wall_seconds`` is too old to hand out.
    """

    def __init__(self, size: int, max_size: int | None, limits: WallTime) -> None:
        self.size = size
        self.max_size = max(size, max_size if max_size is not None else size)
        self.limits = limits
        self._ready: collections.deque[S] = collections.deque()
        self._starting = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._backoff_until = 0.0
        self._failure: str | None = None
        self._closed = False

    @property
    def ready(self) -> int:
        """Spares ready to hand out now."""
        return len(self._ready)

    async def fill(self) -> None:
        """Start spares and wait until ``size`` are ready.

        Raises:
            SandboxError: A spare could not be started; the message says why.
        """
        await self._prepare()
        while self.ready < self.size and not self._closed:
            self._failure, self._backoff_until = None, 0.0
            for _ in range(self.size - self.ready - self._starting):
                self._starting += 1
                self._spawn(self._add_one())
            await asyncio.gather(*self._tasks)
            if self._failure is not None:
                raise SandboxError(f"could not start a {self._kind()}: {self._failure}")

    async def shutdown(self) -> None:
        """Stop refilling and close the spares; what was handed out is the callers'."""
        self._closed = True
        await asyncio.gather(*self._tasks, return_exceptions=True)  # starts in flight close what they make
        spares, self._ready = list(self._ready), collections.deque()
        await asyncio.gather(*(s.close() for s in spares))

    # ----------------------------------------------------------------- for subclasses
    async def _prepare(self) -> None:
        """Anything to settle before the first start (e.g. which backend ``"auto"`` means)."""

    async def _start_spare(self) -> S:
        raise NotImplementedError

    def _kind(self) -> str:
        """What a spare is, for messages: "docker sandbox", "browser sandbox"."""
        raise NotImplementedError

    def _target(self) -> int:
        """How many the pool wants in all (counted as :meth:`_population` counts)."""
        return self.size

    def _population(self) -> int:
        """How many the pool has in all: ready and starting, and whatever else the subclass counts."""
        return len(self._ready) + self._starting

    def _deliver(self, spare: S) -> None:
        """A spare just started: ready for the next caller."""
        self._ready.append(spare)

    def _start_failed(self, error: Exception) -> None:
        log.warning("could not start a spare %s: %s", self._kind(), error)

    # ----------------------------------------------------------------- shared mechanics
    def _fit(self, spare: S) -> bool:
        """Alive, and with most of its wall time ahead."""
        return spare.connected and time.monotonic() - spare.started < self.limits.wall_seconds / 2

    def _refill(self) -> None:
        missing = min(self._target(), self.max_size) - self._population()
        if self._closed or missing <= 0 or time.monotonic() < self._backoff_until:
            return
        for _ in range(missing):
            self._starting += 1
            self._spawn(self._add_one())

    async def _add_one(self) -> None:
        try:
            spare = await self._start_spare()
        except Exception as e:
            self._failure = str(e)
            self._backoff_until = time.monotonic() + RETRY_SECONDS
            self._start_failed(e)
            return
        finally:
            self._starting -= 1
        if self._closed:
            await spare.close()
        else:
            self._deliver(spare)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
