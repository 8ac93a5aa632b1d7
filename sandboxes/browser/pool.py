"""Warm pools of browser sandboxes: Chromium's start (most of a second) is paid in the background.

:func:`acquire_browser` pops a ready browser; :func:`release_browser` closes its contexts and puts it
back for the next episode (or closes it). A :class:`BrowserPool` is the one pool type of
:mod:`~agentgym.sandboxes.lending` with a browser start and a recycler that clears the browser's
contexts; sizing, pausing after a failed start and lending only live, young browsers are that pool's.
Shared pools belong to a :class:`~agentgym.sandboxes.runtime.SandboxRuntime` (the one opened around
the run, else the event loop's default), one per backend, limits and way of drawing, shared by every
env of the run. Their browsers run on that runtime's Playwright driver
(:mod:`~agentgym.sandboxes.browser.driver`); closing the runtime closes their spares, and the driver
closes what is left of its browsers (those still lent) and stops.
"""

from __future__ import annotations

import functools
from typing import Final

from agentgym.sandboxes.browser.frames import Frames
from agentgym.sandboxes.browser.launch import BrowserLimits
from agentgym.sandboxes.browser.sandbox import BrowserSandbox, create_browser
from agentgym.sandboxes.lending import Lease, Pool
from agentgym.sandboxes.pool import resolve_backend
from agentgym.sandboxes.runtime import SandboxRuntime, current

MAX_SHARED_BROWSERS = 32


class ClearBrowser:
    """Close a given-back browser's contexts (pages, storage, cookies go with them): fresh for the next episode."""

    background = False
    reuses = True

    async def record(self, item: BrowserSandbox) -> None:
        return None

    async def recycle(self, item: BrowserSandbox, record: object) -> str | None:
        await item.clear()
        return None


class BrowserPool(Pool[BrowserSandbox]):
    """Keeps browser sandboxes of one kind ready and takes them back after use.

    Args:
        backend: ``"docker"``, ``"local"`` or ``"auto"``.
        limits: Limits of every browser of the pool.
        size: Browsers to keep, lent ones included; grows by one each time a caller finds none.
        max_size: The most ``size`` may grow to, and the most browsers the pool keeps.
        frames: How its browsers draw: ``"free"`` or ``"on_demand"`` (see :func:`create_browser`).
        runtime: Whose Playwright driver its browsers run on (default: the runtime
            :func:`~agentgym.sandboxes.runtime.current` when each starts); closing that runtime closes
            them. The pool itself is its owner's to shut down, unless a runtime holds it (:func:`browser_pool`).
    """

    def __init__(self, backend: str = "auto", limits: BrowserLimits | None = None, size: int = 1,
                 *, max_size: int | None = None, frames: Frames = "free",
                 runtime: SandboxRuntime | None = None) -> None:
        self.backend = backend
        self.limits = limits or BrowserLimits()
        self.frames: Frames = frames
        start = functools.partial(self._start_browser, runtime)
        super().__init__(start, ClearBrowser(), size=size, max_size=max_size, wall_seconds=self.limits.wall_seconds,
                         kind="browser sandbox", reused_first=True)
        self._leases: dict[int, Lease[BrowserSandbox]] = {}  # by id(browser): what release() gives back

    def __repr__(self) -> str:
        return f"<BrowserPool {self.backend} ready={self.ready} size={self.size}>"

    async def acquire(self) -> BrowserSandbox:  # type: ignore[override]  # callers hold the browser itself
        """A ready browser with no context open; give it back with :meth:`release`.

        Raises:
            SandboxError: The pool is shut down, or no browser could be started (with the reason).
        """
        lease = await self.lend()
        self._leases[id(lease.held)] = lease
        return lease.held

    async def lend(self) -> Lease[BrowserSandbox]:
        """A lease on a ready browser (what an env holds): ``release()`` gives it back as :meth:`release` does.

        Raises:
            SandboxError: The pool is shut down, or no browser could be started (with the reason).
        """
        return await super().acquire()

    def lent(self, sandbox: BrowserSandbox) -> bool:
        """Whether ``sandbox`` is one this pool lent and has not taken back."""
        return id(sandbox) in self._leases

    async def release(self, sandbox: BrowserSandbox, reusable: bool = True) -> None:
        """Take ``sandbox`` back: its contexts closed, ready for the next caller; or close it.

        A browser that died, is past half its wall time, or is not ``reusable`` (e.g. a page
        misbehaved) is closed, and the pool starts a replacement. One this pool did not lend is closed.
        """
        lease = self._leases.pop(id(sandbox), None)
        if lease is None:
            await sandbox.close()
        else:
            await lease.release(reusable)

    async def _start_browser(self, runtime: SandboxRuntime | None, *, spare: bool = False) -> BrowserSandbox:
        return await create_browser(self.backend, self.limits, frames=self.frames, runtime=runtime)


SHARED: Final = "shared browser pools"  # their kind in a runtime, keyed by backend, limits and frames


async def browser_pool(backend: str = "auto", limits: BrowserLimits | None = None, *, frames: Frames = "free",
                       runtime: SandboxRuntime | None = None) -> BrowserPool:
    """The runtime's shared pool for these arguments (default runtime: :func:`current`), made if need be.

    Raises:
        SandboxError: An unknown backend name, or a closed runtime.
    """
    key = (await resolve_backend(backend), limits or BrowserLimits(), frames)
    within = runtime or current()
    return within.hold(SHARED, key, lambda: BrowserPool(key[0], key[1], size=0, max_size=MAX_SHARED_BROWSERS,
                                                        frames=frames, runtime=within))


async def acquire_browser(backend: str = "auto", limits: BrowserLimits | None = None, *,
                          frames: Frames = "free", runtime: SandboxRuntime | None = None) -> BrowserSandbox:
    """A browser from the runtime's warm pool for its arguments; give it back with :func:`release_browser`.

    Args:
        backend: ``"auto"`` (Docker when an engine answers, else local with a warning),
            ``"docker"`` or ``"local"`` (NO network isolation).
        limits: Defaults to :class:`BrowserLimits()`.
        frames: ``"free"`` or ``"on_demand"`` (see :func:`create_browser`).
        runtime: Whose pools (default: :func:`~agentgym.sandboxes.runtime.current`).

    Raises:
        SandboxError: No browser could be started; the message says why.
    """
    return await (await browser_pool(backend, limits, frames=frames, runtime=runtime)).acquire()


async def release_browser(sandbox: BrowserSandbox, reusable: bool = True, *,
                          runtime: SandboxRuntime | None = None) -> None:
    """Give back a browser from :func:`acquire_browser`: cleared and kept warm if ``reusable``, else closed.

    ``runtime`` is the one it was acquired from (default :func:`current`); a browser from anywhere
    else (:func:`create_browser`) is closed.
    """
    for pool in (runtime or current()).held(SHARED):
        if isinstance(pool, BrowserPool) and pool.lent(sandbox):
            await pool.release(sandbox, reusable)
            return
    await sandbox.close()


async def warm_up_browsers(backend: str = "auto", limits: BrowserLimits | None = None, count: int = 1, *,
                           frames: Frames = "free", runtime: SandboxRuntime | None = None) -> None:
    """Have ``count`` browsers ready in the shared pool :func:`acquire_browser` draws from, and wait for them.

    Raises:
        SandboxError: A browser could not be started; the message says why.
    """
    pool = await browser_pool(backend, limits, frames=frames, runtime=runtime)
    pool.size = max(pool.size, count)
    pool.max_size = max(pool.max_size, count)
    await pool.fill()

