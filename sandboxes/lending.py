"""One pool for every kind of sandbox: started by a function, made ready again by a recycler, lent as leases.

A :class:`Pool` keeps items of one kind (Python sandboxes, browsers, SWE containers) ready and lends
each as a :class:`Lease`. ``lease.release()`` ends the loan for good (the lease answers nothing
afterwards, so whoever kept it cannot reach the next borrower's work) and hands the item to the pool's
:class:`Recycler`: wipe, keep, destroy, clear a browser, reset a repository. An item the recycler
refuses is destroyed, with the reason in :attr:`Pool.discarded`.

Sizing: a pool keeps the lent items plus :meth:`Pool.spares` (one, plus the borrowers expected while
one recycling runs, both measured), so the next borrower need not wait for the last one's recycling. A
borrower who finds none ready, and none being recycled, makes it keep one more (up to ``max_size``);
growing on every miss instead started containers that slowed the wipes, which caused more misses.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import math
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar

from agentgym.errors import SandboxError

log = logging.getLogger(__name__)

RETRY_SECONDS = 5.0  # pause after a failed background start, so a broken engine is not hammered
WAIT_FOR_RETURN_SECONDS = 2.0  # how long a borrower waits for a spare on its way before starting one
SMOOTHING = 0.2  # weight of the newest sample in the pool's running means (recycling time, gap between loans)
MAX_DISCARDED = 100  # reasons kept in Pool.discarded


class Pooled(Protocol):
    """What a pool keeps: whether it is alive, when it started, how to destroy it."""

    @property
    def connected(self) -> bool: ...

    @property
    def started(self) -> float: ...

    async def close(self) -> None: ...


S = TypeVar("S", bound=Pooled)
S_contra = TypeVar("S_contra", bound=Pooled, contravariant=True)


class Recycler(Generic[S_contra]):
    """How a pool makes a given-back item ready for its next borrower; this base takes it back as it is.

    ``background``: the giver goes on at once (a wipe runs while the next episode starts) rather than
    wait for the verdict (a SWE reset, whose reason the episode records). ``reuses``: items come back.
    """

    background = True
    reuses = True

    async def record(self, item: S_contra) -> Any:
        """What the item looks like fresh, taken when it starts, for :meth:`recycle` to compare with."""
        return None

    async def recycle(self, item: S_contra, record: Any) -> str | None:
        """Make ``item`` fresh again; None when it may be lent again, else why not (it is destroyed)."""
        return None


class Destroy(Recycler[Pooled]):
    """Never reuse: every given-back item is destroyed."""

    reuses = False

    async def recycle(self, item: Pooled, record: Any) -> str | None:
        return "the pool destroys what it lent"


@dataclasses.dataclass(frozen=True)
class PoolCounts:
    """What a pool holds at one moment (``cold``: started for a borrower who found none ready)."""

    ready: int
    lent: int
    wiping: int
    starting: int
    cold: int
    size: int
    max_size: int

    @property
    def population(self) -> int:
        return self.ready + self.lent + self.wiping + self.starting + self.cold


class Lease(Generic[S]):
    """One loan of a pooled item (``reused``: recycled rather than started for it); :meth:`release` spends it."""

    def __init__(self, pool: Pool[S], item: S, reused: bool) -> None:
        self._pool: Pool[S] | None = pool
        self._item = item
        self.reused = reused
        self.destroy_on_release = False  # it will hold what no later borrower may see (hidden tests)

    @property
    def held(self) -> S:
        """The item lent; raises :class:`SandboxError` once given back."""
        if self._pool is None:
            raise SandboxError("this sandbox is closed: it was given back to its pool, and its lease is over")
        return self._item

    @property
    def active(self) -> bool:
        """Whether the lease is not given back yet."""
        return self._pool is not None

    async def release(self, reusable: bool = True) -> str | None:
        """Give the item back: recycled if ``reusable``, else destroyed; safe twice. Why it will not be
        lent again, when known before this returns (destroyed, or refused by a foreground recycler)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return None
        return await pool._take_back(self._item, reusable and not self.destroy_on_release)


class Pool(Generic[S]):
    """Items of one kind kept ready and lent as :class:`Lease`-s.

    Args:
        start: Starts one item (``spare=True``: a background start, which takes only a free place).
        recycler: What is done with a given-back item.
        size: The population to keep: ready, lent, being recycled or starting.
        max_size: The most ``size`` may grow to (default ``size``).
        wall_seconds: The items' lifetime: one past half of it is not lent.
        kind: What an item is, for messages ("docker sandbox").
        spares: Start items in the background (not for SWE containers, too large to keep spare).
        lease: The lease type handed out (a subclass may add the item's methods).
    """

    reused_first = False  # lend recycled items before never-lent ones (a used browser is a warm one)
    expected_failures: tuple[type[Exception], ...] = ()  # background-start failures logged as news (no room)

    def __init__(
        self, start: Callable[..., Awaitable[S]], recycler: Recycler[S], *, size: int = 2,
        max_size: int | None = None, wall_seconds: float, kind: str, spares: bool = True,
        lease: type[Lease[S]] = Lease,
    ) -> None:
        self.size = size
        self.max_size = max(size, max_size if max_size is not None else size)
        self.recycler = recycler
        self.kind = kind
        self.discarded: collections.deque[str] = collections.deque(maxlen=MAX_DISCARDED)  # why, latest last
        self._start_one = start
        self._wall_seconds = wall_seconds
        self._keeps_spares = spares
        self._lease = lease
        self._ready: collections.deque[S] = collections.deque()
        self._records: dict[int, Any] = {}  # by id(item): what each item, ready or lent, looked like fresh
        self._lent_before: set[int] = set()  # ids of the ready items that were lent before (recycled)
        self._waiters: collections.deque[asyncio.Future[Lease[S]]] = collections.deque()
        self._starting = self._lent = self._wiping = self._cold = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._backoff_until = 0.0
        self._failure: str | None = None
        self._closed = False
        self._recycle_seconds = self._acquire_gap = 0.0  # running means (0: none measured yet)
        self._last_acquire: float | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind} ready={self.ready} size={self.size}>"

    @property
    def ready(self) -> int:
        """Items ready to lend now."""
        return len(self._ready)

    async def acquire(self) -> Lease[S]:
        """A lease on a ready item; raises :class:`SandboxError` (with why) when none can be had."""
        if self._closed:
            raise SandboxError(f"the {self.kind} pool is shut down")
        now = time.monotonic()
        if self._last_acquire is not None:
            self._acquire_gap = _smoothed(self._acquire_gap, now - self._last_acquire)
        self._last_acquire = now
        lease = await self._borrow()
        self._refill()  # counted as lent before the refill
        return lease

    async def fill(self) -> None:
        """Start items and wait until ``size`` are ready; :class:`SandboxError` (with why) if one fails."""
        while self.ready < self.size and not self._closed:
            self._failure, self._backoff_until = None, 0.0
            self._add(self.size - self.ready - self._starting)
            await asyncio.gather(*self._tasks)
            if self._failure is not None:
                raise SandboxError(f"could not start a {self.kind}: {self._failure}")

    async def warm(self, count: int) -> None:
        """Keep at least ``count`` items and wait until they are ready (before a timed run)."""
        self.size = max(self.size, count)
        self.max_size = max(self.max_size, count)
        await self.fill()

    async def shutdown(self) -> None:
        """Stop refilling and destroy the ready items; what is lent is destroyed when given back."""
        self._closed = True
        while self._waiters:
            waiting = self._waiters.popleft()
            if not waiting.done():
                waiting.set_exception(SandboxError(f"the {self.kind} pool is shut down"))
        await asyncio.gather(*self._tasks, return_exceptions=True)  # starts in flight close what they make
        ready, self._ready = list(self._ready), collections.deque()
        for item in ready:
            self._forget(item)
        await asyncio.gather(*(item.close() for item in ready), return_exceptions=True)

    @property
    def on_loan(self) -> int:
        """Leases not yet given back (what a closed env must not hold)."""
        return self._lent

    def counts(self) -> PoolCounts:
        """What the pool holds now; lent items only if they come back."""
        lent = self._lent if self.recycler.reuses else 0
        return PoolCounts(ready=len(self._ready), lent=lent, wiping=self._wiping, starting=self._starting,
                          cold=self._cold, size=self.size, max_size=self.max_size)

    def spares(self) -> int:
        """Spares beyond those lent: one, plus the borrowers expected during one recycling (at most one per lent)."""
        seconds, gap = self._recycle_seconds, self._acquire_gap
        during_one = math.ceil(seconds / gap) if seconds and gap else 0
        return 1 + min(during_one, self._lent + self._cold)

    # ----------------------------------------------------------------- internals
    async def _borrow(self) -> Lease[S]:
        while self._ready:
            item = self._ready.popleft()
            if self._fit(item):
                return self._lend(item)
            self._forget(item)
            self._spawn(item.close())
            self._refill()
        on_its_way = self._wiping + self._starting > len(self._waiters)
        if not (self.recycler.reuses and on_its_way):
            self.size = min(self.size + 1, self.max_size)  # a borrower found none ready: keep one more
        if on_its_way:
            # One is being recycled or started: wait for it rather than start one, and refill.
            self._refill()
            waiting = asyncio.get_running_loop().create_future()
            self._waiters.append(waiting)
            try:
                return await asyncio.wait_for(waiting, WAIT_FOR_RETURN_SECONDS)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                if waiting.done() and not waiting.cancelled():
                    await waiting.result().release(reusable=False)
                raise
        self._cold += 1  # counted while it starts, so a refill meanwhile does not start its twin
        try:
            item = await self._start()
        finally:
            self._cold -= 1
        return self._lend(item)

    def _lend(self, item: S) -> Lease[S]:
        self._lent += 1
        reused = id(item) in self._lent_before
        self._lent_before.discard(id(item))
        return self._lease(self, item, reused)

    def _forget(self, item: S) -> None:
        """Drop what the pool knows of ``item`` (being destroyed)."""
        self._lent_before.discard(id(item))
        self._records.pop(id(item), None)

    async def _destroy(self, item: S) -> None:
        self._forget(item)
        await item.close()
        self._refill()

    async def _take_back(self, item: S, reusable: bool) -> str | None:
        self._lent -= 1
        if not reusable or self._closed:
            await self._destroy(item)
            return "closed" if self._closed else "given back as not reusable"
        self._wiping += 1
        if self.recycler.background:
            self._spawn(self._recycle(item))
            return None
        return await self._recycle(item)

    async def _recycle(self, item: S) -> str | None:
        began = time.monotonic()
        try:
            why = await self.recycler.recycle(item, self._records.get(id(item))) if item.connected else "it is gone"
        except Exception as e:
            why = f"recycling failed: {type(e).__name__}: {e}"
        finally:
            self._wiping -= 1
        if why is None:
            self._recycle_seconds = _smoothed(self._recycle_seconds, time.monotonic() - began)
            if self._closed:
                why = "the pool is shut down"
            elif self.counts().population >= self.max_size:
                why = f"the pool holds {self.max_size} already"
            elif not self._fit(item):
                why = "past half its wall time"
        if why is not None:
            self.discarded.append(why)
            log.info("%s not lent again: %s", self.kind, why)
            await self._destroy(item)
            return why
        self._lent_before.add(id(item))
        self._deliver(item)
        return None

    async def _start(self, *, spare: bool = False) -> S:
        item = await self._start_one(spare=spare)
        try:
            self._records[id(item)] = await self.recycler.record(item)
        except BaseException:
            await item.close()
            raise
        return item

    def _fit(self, item: S) -> bool:
        return item.connected and time.monotonic() - item.started < self._wall_seconds / 2

    def _refill(self) -> None:
        # Spares beyond those lent for a pool whose items do not come back; else lent ones and spares().
        target = max(self.size, self._lent + self._cold + self.spares()) if self.recycler.reuses else self.size
        if self._keeps_spares and not self._closed and time.monotonic() >= self._backoff_until:
            self._add(min(target, self.max_size) - self.counts().population)

    def _add(self, count: int) -> None:
        for _ in range(count):
            self._starting += 1
            self._spawn(self._add_one())

    async def _add_one(self) -> None:
        try:
            item = await self._start(spare=True)
        except Exception as e:
            self._failure = str(e)
            self._backoff_until = time.monotonic() + RETRY_SECONDS
            log.log(logging.INFO if isinstance(e, self.expected_failures) else logging.WARNING,
                    "could not start a spare %s: %s", self.kind, e)
            return
        finally:
            self._starting -= 1
        if self._closed:
            await self._destroy(item)
        else:
            self._deliver(item)

    def _deliver(self, item: S) -> None:
        while self._waiters:
            waiting = self._waiters.popleft()
            if not waiting.done():
                waiting.set_result(self._lend(item))
                return
        if self.reused_first and id(item) in self._lent_before:
            self._ready.appendleft(item)
        else:
            self._ready.append(item)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _smoothed(mean: float, sample: float) -> float:
    """A running mean that follows change: each sample weighs :data:`SMOOTHING` (the first is taken whole)."""
    return SMOOTHING * sample + (1 - SMOOTHING) * mean if mean else sample
