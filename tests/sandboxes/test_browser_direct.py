"""The browser sandbox's direct DevTools session: the pipe between Playwright and Chromium runs through
this process, which sends its own commands on it (trusted clicks, reads), beside Playwright's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentgym.errors import SandboxError
from agentgym.sandboxes.browser import BrowserSandbox, create_browser, serve_directory

PAGE = """<html><body style="margin:0">
<button id=b style="position:absolute;left:20px;top:30px;width:60px;height:40px">go</button>
<script>
window.log = [];
for (const kind of ['mousemove', 'mouseover', 'mousedown', 'mouseup', 'click'])
  document.getElementById('b').addEventListener(kind, e => log.push([kind, e.isTrusted, e.clientX, e.clientY]));
window.ticks = 0;
(function tick() { window.ticks++; requestAnimationFrame(tick); })();
</script></body></html>"""


@pytest.fixture
async def sandbox(backend: str) -> AsyncIterator[BrowserSandbox]:
    sandbox = await create_browser(backend, frames="on_demand")  # as the GUI env's: nothing drawn unasked
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def open_page(sandbox: BrowserSandbox, tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "index.html").write_text(PAGE)
    context = await sandbox.new_context(viewport={"width": 200, "height": 200})
    base = await serve_directory(context, tmp_path)
    page = await context.new_page()
    await page.goto(base + "index.html")
    return page


async def test_a_direct_click_is_trusted_complete_and_needs_no_frame(sandbox: BrowserSandbox, tmp_path: Path) -> None:
    page = await open_page(sandbox, tmp_path)
    session = await sandbox.session(page)
    assert await sandbox.session(page) is session
    ticks = await session.evaluate("window.ticks")

    await session.click(50, 50)

    # when the click returns, the page has handled all of it: the read right after sees every event
    assert await session.evaluate("log") == [[kind, True, 50, 50]
                                             for kind in ("mouseover", "mousemove", "mousedown", "mouseup", "click")]
    assert await session.evaluate("window.ticks") == ticks  # no frame was drawn for it
    assert await page.evaluate("log.length") == 5  # Playwright sees the same page
    await session.click(150, 150)  # outside the button
    assert await session.evaluate("log.length") == 5


async def test_a_direct_click_and_a_playwright_click_look_the_same_to_the_page(
    sandbox: BrowserSandbox, tmp_path: Path,
) -> None:
    """The two twins of a click (the GUI env sends its own; a user's code may click through Playwright)
    give the page the same events, in the same order, at the same place, all trusted."""
    logs = []
    for clicks in ("direct", "playwright"):
        page = await open_page(sandbox, tmp_path)
        if clicks == "direct":
            await (await sandbox.session(page)).click(50, 50)
        else:
            await sandbox.frames(page).draw()  # Playwright's input waits for a frame; the direct click does not
            await page.mouse.click(50, 50)
        logs.append(await page.evaluate("log"))
        await page.context.close()
    assert logs[0] == logs[1] == [[kind, True, 50, 50]
                                  for kind in ("mouseover", "mousemove", "mousedown", "mouseup", "click")]


async def test_a_click_with_a_read_never_reads_before_the_click(sandbox: BrowserSandbox, tmp_path: Path) -> None:
    """The read goes in the click's write and may run first in the page (a quarter of the time, measured):
    that value must never be the one returned, whatever else clicked or reloaded the page meanwhile."""
    page = await open_page(sandbox, tmp_path)
    session = await sandbox.session(page)
    clicks = "log.filter(event => event[0] === 'click').length"
    expected = 0
    for i in range(300):
        if i == 100:
            await page.mouse.click(50, 50)  # a trusted release this session did not send
            expected += 1
        if i == 200:
            await page.reload()  # the log and the page's count of releases start again
            # A new document takes input once it has drawn a frame. A frame asked for is now and then not drawn;
            # a screenshot's is (it asks again until it gets a picture), as before the GUI env's first action.
            await sandbox.frames(page).screenshot()
            expected = 0
        expected += 1
        assert await session.click(50, 50, then=clicks) == expected, i
    assert await session.click(150, 150, then=clicks) == expected  # outside the button: no click, still read


async def test_direct_reads_return_values_and_errors(sandbox: BrowserSandbox, tmp_path: Path) -> None:
    session = await sandbox.session(await open_page(sandbox, tmp_path))
    assert await session.evaluate("({a: [1, 'two', null], b: 2.5})") == {"a": [1, "two", None], "b": 2.5}
    assert await session.evaluate("undefined") is None
    with pytest.raises(SandboxError, match="ReferenceError: nope is not defined"):
        await session.evaluate("nope")
    with pytest.raises(SandboxError, match=r"NoSuch\.method"):
        await session.send(("NoSuch.method", {}))
    assert await session.evaluate("1 + 1") == 2  # a failed command costs nothing


async def test_a_reply_that_comes_too_late_is_dropped_not_passed_to_playwright(
    sandbox: BrowserSandbox, tmp_path: Path,
) -> None:
    page = await open_page(sandbox, tmp_path)
    session = await sandbox.session(page)
    slow = ("Runtime.evaluate", {"expression": "new Promise(r => setTimeout(() => r(7), 300))", "awaitPromise": True})
    with pytest.raises(SandboxError, match=r"did not answer Runtime\.evaluate within 0\.05 s"):
        await session.send(slow, timeout=0.05)
    cancelled = asyncio.ensure_future(session.send(slow))
    await asyncio.sleep(0.05)
    cancelled.cancel()
    await asyncio.sleep(0.6)  # both replies have come back by now, to nobody
    assert await page.evaluate("1 + 2") == 3 and await session.evaluate("2 + 2") == 4
    assert sandbox.connected and await sandbox.is_alive()


async def test_playwright_and_the_direct_session_share_the_pipe(sandbox: BrowserSandbox, tmp_path: Path) -> None:
    page = await open_page(sandbox, tmp_path)
    session = await sandbox.session(page)
    frames = sandbox.frames(page)
    ours = [session.evaluate(f"'ours-{i}'") for i in range(50)]
    theirs = [page.evaluate(f"'theirs-{i}'") for i in range(50)]
    shots = [frames.screenshot((0, 0, 40, 40)) for _ in range(5)]
    results = await asyncio.gather(*ours, *theirs, *shots)
    assert results[:100] == [f"ours-{i}" for i in range(50)] + [f"theirs-{i}" for i in range(50)]
    assert all(png.startswith(b"\x89PNG") for png in results[100:])
    await page.reload()  # Playwright's traffic (routes, navigation) still flows
    assert await page.evaluate("log.length") == 0 and await session.evaluate("log.length") == 0


async def test_nothing_is_left_to_connect_to_once_the_browser_runs(sandbox: BrowserSandbox) -> None:
    launcher_dir = Path(sandbox.pipe.executable).parent
    assert not await asyncio.to_thread(launcher_dir.exists)  # the launcher's socket and its directory
    fifos = sandbox.pipe.fifos
    assert fifos is None or not await asyncio.to_thread(fifos.dir.exists)  # the container's FIFOs: unlinked once open
    assert (fifos is not None) == (sandbox.backend == "docker")


async def test_a_browser_that_dies_fails_direct_commands_at_once(sandbox: BrowserSandbox, tmp_path: Path) -> None:
    session = await sandbox.session(await open_page(sandbox, tmp_path))
    hanging = asyncio.ensure_future(session.send(("Runtime.evaluate", {"expression": "new Promise(() => {})",
                                                                       "awaitPromise": True})))
    await asyncio.sleep(0.2)
    await sandbox.kill_browser()
    with pytest.raises(SandboxError, match="pipe is closed"):
        await asyncio.wait_for(hanging, 30)
    with pytest.raises(SandboxError, match="pipe is closed"):
        await session.evaluate("1")
    assert sandbox.pipe.closed is not None  # the relay stopped and closed its ends
