"""Warm pools of browser sandboxes: Chromium's start (most of a second) is paid in the background.

A :class:`BrowserPool` is :mod:`~agentgym.sandboxes.lending`'s pool with a browser start and a
recycler that closes the browser's contexts (:class:`ClearBrowser`). Shared pools, one per backend,
limits and way of drawing, belong to a :class:`~agentgym.sandboxes.runtime.SandboxRuntime` and run on
its Playwright driver (:mod:`~agentgym.sandboxes.browser.driver`): closing the runtime closes their
spares, and the driver closes what is left (browsers still lent) and stops.
"""

from __future__ import annotations

from typing import Final

from agentgym.sandboxes.backends import resolve_backend
from agentgym.sandboxes.browser.frames import Frames
from agentgym.sandboxes.browser.launch import BrowserLimits
from agentgym.sandboxes.browser.sandbox import BrowserSandbox, create_browser
from agentgym.sandboxes.lending import Pool, Recycler
from agentgym.sandboxes.runtime import SandboxRuntime, current

MAX_SHARED_BROWSERS = 32
SHARED: Final = "shared browser pools"  # their kind in a runtime, keyed by backend, limits and frames


class ClearBrowser(Recycler[BrowserSandbox]):
    """Close a given-back browser's contexts (pages, storage, cookies go with them): fresh for the next episode."""

    background = False

    async def recycle(self, item: BrowserSandbox, record: object) -> str | None:
        await item.clear()
        return None


class BrowserPool(Pool[BrowserSandbox]):
    """Browser sandboxes of one kind kept ready, lent as leases whose ``release()`` clears and takes them back.

    A recycled browser is lent before a spare that never was (a used browser is a warm one).

    Args:
        backend: ``"docker"``, ``"local"`` (NO network isolation) or ``"auto"``.
        limits: Limits of every browser of the pool (default :class:`BrowserLimits()`).
        size: Browsers to keep, lent ones included; grows by one each time a caller finds none.
        max_size: The most ``size`` may grow to, and the most browsers the pool keeps.
        frames: How its browsers draw: ``"free"`` or ``"on_demand"`` (see :func:`create_browser`).
        runtime: Whose Playwright driver its browsers run on (default: :func:`current` when each
            starts). The pool is its owner's to shut down, unless a runtime holds it (:func:`browser_pool`).
    """

    reused_first = True

    def __init__(self, backend: str = "auto", limits: BrowserLimits | None = None, size: int = 1,
                 *, max_size: int | None = None, frames: Frames = "free",
                 runtime: SandboxRuntime | None = None) -> None:
        self.backend = backend
        self.limits = limits or BrowserLimits()
        self.frames: Frames = frames
        super().__init__(lambda spare: create_browser(backend, self.limits, frames=frames, runtime=runtime),
                         ClearBrowser(), size=size, max_size=max_size, wall_seconds=self.limits.wall_seconds,
                         kind=f"{backend} browser sandbox")


async def browser_pool(backend: str = "auto", limits: BrowserLimits | None = None, *, frames: Frames = "free",
                       runtime: SandboxRuntime | None = None) -> BrowserPool:
    """The runtime's shared pool for these arguments (default runtime: :func:`current`), made if need be.

    ``await (await browser_pool()).acquire()`` lends a browser (``lease.held``) until ``lease.release()``;
    ``.warm(count)`` has ``count`` ready before a timed run.

    Raises:
        SandboxError: An unknown backend name, or a closed runtime.
    """
    key = (await resolve_backend(backend), limits or BrowserLimits(), frames)
    within = runtime or current()
    return within.hold(SHARED, key, lambda: BrowserPool(key[0], key[1], size=0, max_size=MAX_SHARED_BROWSERS,
                                                        frames=frames, runtime=within))
