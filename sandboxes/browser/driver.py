"""The Playwright driver of a sandbox runtime: started on first use, stopped once, when the runtime closes.

Playwright drives every browser through a driver, one Node process, bound to the event loop that
started it. A :class:`~agentgym.sandboxes.runtime.SandboxRuntime` keeps one as a supply of its own
(:func:`driver`): the runtime's browser pools launch through it, and so does
:func:`~agentgym.sandboxes.browser.sandbox.create_browser` for a browser of no pool, from the runtime
it is given (default: the current one). Closing the
runtime closes every browser launched through its driver that is still open (so their containers are
removed, not left to die with the driver's process), then stops the driver. Nothing counts users:
a runtime's driver is its own, whatever other runtimes the event loop has (each runs a Node process
of its own while both use browsers). Playwright is imported inside functions, so ``import agentgym``
never imports it.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Final

from agentgym.errors import SandboxError
from agentgym.sandboxes.runtime import SandboxRuntime, current

if TYPE_CHECKING:
    from playwright.async_api import Playwright

    from agentgym.sandboxes.browser.sandbox import BrowserSandbox

DRIVER: Final = "Playwright driver"  # its kind in a runtime (one per runtime: key None)


class Driver:
    """One Playwright driver and the browsers launched through it; :meth:`shutdown` closes them, then stops it."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._lock = asyncio.Lock()  # one start, however many browsers ask for it at once
        self._browsers: weakref.WeakSet[BrowserSandbox] = weakref.WeakSet()
        self._stopped = False

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else "started" if self._playwright is not None else "not started"
        return f"<Driver {state} browsers={len(self._browsers)}>"

    @property
    def started(self) -> bool:
        """Whether the driver's process runs (started and not yet stopped)."""
        return self._playwright is not None

    async def playwright(self) -> Playwright:
        """The driver, started on first use.

        Raises:
            SandboxError: Playwright is not installed, or the driver was stopped.
        """
        async with self._lock:
            self._check()
            if self._playwright is None:
                try:
                    from playwright.async_api import async_playwright
                except ImportError as e:
                    raise SandboxError("browser sandboxes need Playwright: pip install 'agentgym[gui]'") from e
                self._playwright = await async_playwright().start()
            return self._playwright

    async def adopt(self, sandbox: BrowserSandbox) -> None:
        """Count ``sandbox`` (launched through this driver) among those :meth:`shutdown` closes.

        Raises:
            SandboxError: The driver was stopped while the browser started (it is closed).
        """
        if self._stopped:
            await sandbox.close()
            self._check()
        self._browsers.add(sandbox)

    async def shutdown(self) -> None:
        """Close every browser launched through the driver that is still open, then stop the driver. Idempotent."""
        self._stopped = True
        await asyncio.gather(*(b.close() for b in list(self._browsers)), return_exceptions=True)
        async with self._lock:  # a start in flight finishes first, so it is stopped too
            started, self._playwright = self._playwright, None
        if started is not None:
            await started.stop()

    def _check(self) -> None:
        if self._stopped:
            raise SandboxError("the Playwright driver is stopped: its sandbox runtime closed")


def driver(runtime: SandboxRuntime | None = None) -> Driver:
    """``runtime``'s Playwright driver (default :func:`~agentgym.sandboxes.runtime.current`), made if need be.

    Raises:
        SandboxError: The runtime is closed.
    """
    return (runtime or current()).hold(DRIVER, None, Driver)
