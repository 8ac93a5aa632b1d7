"""A page's frames: drawn on demand (a screenshot in a few milliseconds) or by Chromium's own clock.

A free-running headless Chromium draws at most one frame per vsync tick (60 a second), and a
screenshot (``Page.captureScreenshot``) waits for the next frame or two, whatever the page. Chromium's
headless shell can instead draw a frame only when asked
(``--enable-begin-frame-control``): ``HeadlessExperimental.beginFrame`` draws one at once and
returns its pixels, several times faster for a MiniWoB page (docs/browser-sandbox.md). That is the
``on_demand`` mode of a browser sandbox (:data:`ON_DEMAND_ARGS` at launch).

In that mode nothing is drawn between requests, and three things wait for a frame:
``requestAnimationFrame`` callbacks (and what runs on them: d3 and Raphael animations, Playwright's
``raf`` polling), mouse moves and wheel events (Chromium delivers them aligned to frames), and
screenshots (Playwright's ``page.screenshot()`` and ``Page.captureScreenshot`` hang). Timers,
clicks, keys, script and page loads run as usual, and CSS transitions and jQuery animations follow
the wall clock: a frame drawn 200 ms into a 400 ms transition shows it half way. So
:class:`PageFrames` draws a frame whenever something waits for one: :meth:`~PageFrames.run` keeps
drawing while an action is pending, :meth:`~PageFrames.screenshot` draws the frame it returns, and
:meth:`~PageFrames.draw` draws one before the page is read (the frame a free-running browser would
have drawn since the last action). What runs on animation frames between two of them does not
run: an animation driven by them moves only when the page is looked at or acted on (a time-based
one, like d3's, then jumps to where the wall clock says it is; one that counts frames lags).

In the ``free`` mode (the full Chromium, or a sandbox started with ``frames="free"``) every method
does what plain Playwright does.
"""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from agentgym.errors import SandboxError

if TYPE_CHECKING:
    from playwright.async_api import Page

    from agentgym.sandboxes.browser.direct import PageSession

Frames = Literal["on_demand", "free"]
T = TypeVar("T")

ON_DEMAND_ARGS = ("--enable-begin-frame-control", "--run-all-compositor-stages-before-draw",
                  "--disable-checker-imaging", "--disable-new-content-rendering-timeout")
"""The headless shell's switches for frames on demand: frames only when asked, each one complete
(all of the page rastered, images decoded, new content drawn at once rather than after a timeout).
They are the part of ``--deterministic-mode`` these pages need, without its main-thread-only animations."""
PUMP_SECONDS = 0.010
"""How long an action may be pending before :meth:`PageFrames.run` draws a frame for it: longer than a
Playwright click or key press takes without one, so those draw none; a mouse move or wheel
event that waits for a frame gets one after this long. (A click on the page's direct session never
waits for a frame: see ``PageSession.click``.)"""
SCREENSHOT = {"screenshot": {"format": "png", "optimizeForSpeed": True}}
SCREENSHOT_TRIES = 5


class PageFrames:
    """Frames and screenshots of one page, asked for on its direct DevTools session.

    Args:
        page: A Playwright ``Page`` of a browser sandbox.
        on_demand: Whether the browser draws only when asked (see the module's docstring).
        lock: The browser's frame lock, shared by all its pages: Chromium takes one frame request
            at a time per browser, whatever the page (a second one in flight makes its GPU process
            exit with "overlapping IssueExternalBeginFrame", and after six such exits the browser).
        session: Gets the page's direct DevTools session (``BrowserSandbox.session``); frames are
            asked for on it, and so may anything else that should skip Playwright's driver.
    """

    def __init__(self, page: Page, on_demand: bool, lock: asyncio.Lock,
                 session: Callable[[], Awaitable[PageSession]]) -> None:
        self.page = page
        self.on_demand = on_demand
        self.session = session
        self._lock = lock

    async def draw(self) -> None:
        """Draw one frame now (on demand), running what waits for one; nothing in the free mode."""
        if self.on_demand:
            await self._begin_frame({})

    async def run(self, action: Awaitable[T]) -> T:
        """Await ``action`` (a click, a key, a wheel...), drawing frames while it waits for one."""
        if not self.on_demand:
            return await action
        task = asyncio.ensure_future(action)
        try:
            while not (await asyncio.wait({task}, timeout=PUMP_SECONDS))[0]:
                await self._begin_frame({})
        except BaseException:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)  # its error is the browser's, already raised
            raise
        return task.result()

    async def screenshot(self, clip: tuple[int, int, int, int] | None = None) -> bytes:
        """A PNG of the page now, or of ``clip`` (x, y, width, height in CSS pixels) of it.

        On demand it is the frame drawn for it, cut to ``clip`` here (the frame has no clip of its
        own); free-running it is Playwright's ``page.screenshot``. Now and then Chromium does not
        draw the frame it was asked for (and returns no picture); another is asked for then.

        Raises:
            SandboxError: The browser returned no picture for :data:`SCREENSHOT_TRIES` frames in a row.
        """
        if not self.on_demand:
            box = None if clip is None else dict(zip(("x", "y", "width", "height"), clip, strict=True))
            return await self.page.screenshot(type="png", clip=box)  # type: ignore[arg-type]
        for _ in range(SCREENSHOT_TRIES):
            frame = await self._begin_frame(SCREENSHOT)
            if "screenshotData" in frame:
                break
        else:
            raise SandboxError(f"the browser drew {SCREENSHOT_TRIES} frames but returned no screenshot of them")
        png = base64.b64decode(frame["screenshotData"])
        return png if clip is None else _crop(png, clip)

    async def _begin_frame(self, params: dict[str, Any]) -> dict[str, Any]:
        session = await self.session()
        async with self._lock:
            (frame,) = await session.send(("HeadlessExperimental.beginFrame", params))
            return frame


def _crop(png: bytes, clip: tuple[int, int, int, int]) -> bytes:
    """``png`` cut to ``clip``, encoded fast (zlib level 1: a 160x210 page is 2-4 KB either way)."""
    from PIL import Image

    x, y, width, height = clip
    out = io.BytesIO()
    Image.open(io.BytesIO(png)).crop((x, y, x + width, y + height)).save(out, "PNG", compress_level=1)
    return out.getvalue()
