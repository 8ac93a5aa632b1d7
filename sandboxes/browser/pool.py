"""Warm pools of browser sandboxes: Chromium's start (most of a second) is paid in the background.

:func:`acquire_browser` pops a ready browser; :func:`release_browser` closes its contexts and puts it
back for the next episode (or closes it). A pool keeps ``size`` spares ready, and each caller who
finds none ready makes it keep one more (up to ``max_size``). Starting spares in the background,
pausing after a failed start and handing out only live, young browsers are
:class:`~agentgym.sandboxes.warm.WarmPool`'s, as for the python sandbox pools.
Pools are per event loop, backend and limits, shared by every env of a process.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from agentgym.errors import SandboxError
from agentgym.sandboxes import runtime
from agentgym.sandboxes.browser.frames import Frames
from agentgym.sandboxes.browser.launch import BrowserLimits, stop_driver
from agentgym.sandboxes.browser.sandbox import BrowserSandbox, create_browser
from agentgym.sandboxes.warm import WarmPool

log = logging.getLogger(__name__)

MAX_SHARED_BROWSERS = 32


class BrowserPool(WarmPool[BrowserSandbox]):
    """Keeps browser sandboxes of one kind ready and takes them back after use.

    Args:
        backend: ``"docker"``, ``"local"`` or ``"auto"``.
        limits: Limits of every browser of the pool.
        size: Spares to keep ready beyond those lent; grows by one each time a caller finds none.
        max_size: The most ``size`` may grow to, and the most browsers the pool keeps ready (a
            browser given back beyond it replaces the oldest spare).
        frames: How its browsers draw: ``"free"`` or ``"on_demand"`` (see :func:`create_browser`).
    """

    limits: BrowserLimits

    def __init__(self, backend: str = "auto", limits: BrowserLimits | None = None, size: int = 1,
                 *, max_size: int | None = None, frames: Frames = "free") -> None:
        super().__init__(size, max_size, limits or BrowserLimits())
        self.backend = backend
        self.frames: Frames = frames

    def __repr__(self) -> str:
        return f"<BrowserPool {self.backend} ready={self.ready} size={self.size}>"

    async def acquire(self) -> BrowserSandbox:
        """A ready browser with no context open; give it back with :meth:`release`.

        Raises:
            SandboxError: The pool is shut down, or no browser could be started (with the reason).
        """
        if self._closed:
            raise SandboxError("the browser pool is shut down")
        while self._ready:
            sandbox = self._ready.popleft()
            if self._fit(sandbox):
                self._refill()
                return sandbox
            self._spawn(sandbox.close())
        self.size = min(self.size + 1, self.max_size)  # a caller found none ready: keep one more
        sandbox = await self._start_spare()
        self._refill()
        return sandbox

    async def release(self, sandbox: BrowserSandbox, reusable: bool = True) -> None:
        """Take ``sandbox`` back: its contexts closed, ready for the next caller; or close it.

        A browser that died, is past half its wall time, or is not ``reusable`` (e.g. a page
        misbehaved) is closed, and the pool starts a replacement.
        """
        if reusable and not self._closed and self._fit(sandbox):
            try:
                await sandbox.clear()
            except Exception as e:
                log.info("browser sandbox %s could not be cleared, closing it: %s", sandbox.id, e)
            else:
                if self._fit(sandbox):
                    self._ready.appendleft(sandbox)  # handed out next: a used browser is a warm one
                    while len(self._ready) > self.max_size:
                        self._spawn(self._ready.pop().close())
                    return
        await sandbox.close()
        self._refill()

    def _kind(self) -> str:
        return "browser sandbox"

    async def _start_spare(self) -> BrowserSandbox:
        return await create_browser(self.backend, self.limits, frames=self.frames)


PoolKey = tuple[str, BrowserLimits, Frames]
_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[PoolKey, BrowserPool]] = weakref.WeakKeyDictionary()
_lenders: weakref.WeakKeyDictionary[BrowserSandbox, BrowserPool] = weakref.WeakKeyDictionary()


async def acquire_browser(backend: str = "auto", limits: BrowserLimits | None = None, *,
                          frames: Frames = "free") -> BrowserSandbox:
    """A browser from this process's warm pool for its arguments; give it back with :func:`release_browser`.

    Args:
        backend: ``"auto"`` (Docker when an engine answers, else local with a warning),
            ``"docker"`` or ``"local"`` (NO network isolation).
        limits: Defaults to :class:`BrowserLimits()`.
        frames: ``"free"`` or ``"on_demand"`` (see :func:`create_browser`).

    Raises:
        SandboxError: No browser could be started; the message says why.
    """
    pool = await _shared_pool(backend, limits, frames)
    sandbox = await pool.acquire()
    _lenders[sandbox] = pool
    return sandbox


async def release_browser(sandbox: BrowserSandbox, reusable: bool = True) -> None:
    """Give back a browser from :func:`acquire_browser`: cleared and kept warm if ``reusable``, else closed.

    A browser from anywhere else (:func:`create_browser`) is closed.
    """
    pool = _lenders.pop(sandbox, None)
    if pool is None:
        await sandbox.close()
    else:
        await pool.release(sandbox, reusable)


async def warm_up_browsers(backend: str = "auto", limits: BrowserLimits | None = None, count: int = 1, *,
                           frames: Frames = "free") -> None:
    """Have ``count`` browsers ready in the shared pool :func:`acquire_browser` draws from, and wait for them.

    Raises:
        SandboxError: A browser could not be started; the message says why.
    """
    pool = await _shared_pool(backend, limits, frames)
    pool.size = max(pool.size, count)
    pool.max_size = max(pool.max_size, count)
    await pool.fill()


async def shutdown_browser_pools() -> None:
    """Close this event loop's shared pools' spares, then stop its Playwright driver (and every browser of it)."""
    pools = _shared.pop(asyncio.get_running_loop(), {})
    await asyncio.gather(*(p.shutdown() for p in pools.values()))
    await stop_driver()


runtime.on_shutdown("shared browser pools", shutdown_browser_pools)


async def _shared_pool(backend: str, limits: BrowserLimits | None, frames: Frames) -> BrowserPool:
    from agentgym.sandboxes.pool import resolve_backend

    key = (await resolve_backend(backend), limits or BrowserLimits(), frames)
    pools = _shared.setdefault(asyncio.get_running_loop(), {})
    if key not in pools:
        pools[key] = BrowserPool(key[0], key[1], size=0, max_size=MAX_SHARED_BROWSERS, frames=frames)
    return pools[key]
