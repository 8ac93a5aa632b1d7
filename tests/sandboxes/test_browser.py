"""Browser sandboxes: clean state across episodes, prepared contexts, frames on demand, crashes, the
warm pool, and what the container may do.

Every test starts its own browsers and closes them; the Docker ones run Debian's Chromium headless
shell in the ``chromium`` recipe's image (built on first use, about a minute and a half).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest
from PIL import Image
from playwright.async_api import Error as PlaywrightError

from agentgym.errors import SandboxError
from agentgym.sandboxes import SandboxRuntime, engine, list_sandboxes, prune
from agentgym.sandboxes.browser import (
    BrowserLimits,
    BrowserPool,
    BrowserSandbox,
    browser_pool,
    create_browser,
    launch,
    serve_directory,
)
from agentgym.sandboxes.browser import sandbox as browser_sandbox
from agentgym.sandboxes.browser.driver import DRIVER, driver
from agentgym.sandboxes.browser.launch import CODE_USER, KIND_LABEL, PIPE_MOUNT
from agentgym.sandboxes.browser.pool import SHARED
from tests.conftest import docker_or_skip
from tests.network import UNANSWERED, host_addresses

BROWSER_LABEL = {KIND_LABEL: "browser"}
GONE_WITHIN = 30.0  # seconds a dead browser's container may take to be removed


@pytest.fixture
def site(tmp_path: Path) -> Path:
    (tmp_path / "index.html").write_text("<html><body><button id=b onclick='window.hits=(window.hits||0)+1'>"
                                         "go</button></body></html>")
    return tmp_path


@pytest.fixture
async def browser(backend: str) -> AsyncIterator[BrowserSandbox]:
    sandbox = await create_browser(backend)
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def open_site(sandbox: BrowserSandbox, site: Path):  # type: ignore[no-untyped-def]
    context = await sandbox.new_context()
    base = await serve_directory(context, site)
    page = await context.new_page()
    await page.goto(base + "index.html")
    return page


async def wait_until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + GONE_WITHIN
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {GONE_WITHIN:g} s: {what}")
        await asyncio.sleep(0.2)


def browser_containers() -> set[str]:
    return {c.id for c in list_sandboxes(BROWSER_LABEL)}


def drivers() -> set[int]:
    """This process's Playwright drivers: the Node processes running ``run-driver`` (zombies are gone)."""
    found = set()
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "run-driver" in process.cmdline() and process.status() != psutil.STATUS_ZOMBIE:
                found.add(process.pid)
    return found


async def test_a_page_runs_and_is_served_from_the_host(browser: BrowserSandbox, site: Path) -> None:
    page = await open_site(browser, site)
    await page.click("#b")
    await page.click("#b")
    assert await page.evaluate("window.hits") == 2
    missing = await page.goto(page.url.replace("index.html", "../../etc/passwd"))
    assert missing is not None and missing.status == 404
    assert await browser.is_alive()


async def test_a_new_context_forgets_the_previous_episode(browser: BrowserSandbox, site: Path) -> None:
    page = await open_site(browser, site)
    await page.evaluate("localStorage.setItem('k', 'v'); sessionStorage.setItem('s', 'v'); document.cookie = 'c=1'")
    assert await page.evaluate("[localStorage.getItem('k'), document.cookie]") == ["v", "c=1"]
    first = page.context

    page = await open_site(browser, site)
    assert await page.evaluate("[localStorage.getItem('k'), sessionStorage.getItem('s'), document.cookie]") == [
        None, None, "",
    ]
    assert browser.browser.contexts == [page.context]
    with pytest.raises(PlaywrightError):
        await first.new_page()  # the previous context is closed


async def load_site(context, site: Path):  # type: ignore[no-untyped-def]
    """A prepared context's setup: the site served and its page loaded."""
    base = await serve_directory(context, site)
    page = await context.new_page()
    await page.goto(base + "index.html")
    return page


def spare_tasks() -> list[asyncio.Task]:
    return [t for t in asyncio.all_tasks() if "_make_spare" in repr(t.get_coro())]


async def test_a_prepared_context_is_fresh_outlives_clear_and_is_taken_only_for_its_key(
    browser: BrowserSandbox, site: Path,
) -> None:
    page = await open_site(browser, site)
    await page.evaluate("localStorage.setItem('k', 'v'); document.cookie = 'c=1'")
    browser.prepare("index", lambda context: load_site(context, site))
    await browser.clear()  # what a pool does with a browser given back: the spare stays
    context, prepared = await browser.take_prepared("index")
    assert browser.browser.contexts == [context] and browser.last_key == "index"
    assert await prepared.evaluate("[localStorage.getItem('k'), document.cookie]") == [None, ""]

    browser.prepare("index", lambda context: load_site(context, site))
    assert await browser.take_prepared("other") is None  # another key: the spare is dropped, not handed out
    assert browser.browser.contexts == [context]

    async def broken(context):  # type: ignore[no-untyped-def]
        raise RuntimeError("the page would not load")

    browser.prepare("index", broken)
    assert await browser.take_prepared("index") is None  # the caller makes one as usual
    assert browser.browser.contexts == [context]
    assert await browser.take_prepared("index") is None  # nothing prepared

    browser.prepare("index", lambda context: load_site(context, site))
    await browser.new_context()  # an ordinary new context drops the spare
    assert len(browser.browser.contexts) == 1 and not spare_tasks()
    browser.prepare("index", lambda context: load_site(context, site))
    await browser.close()  # a spare still being made when the sandbox closes is stopped
    assert not spare_tasks()


async def test_frames_on_demand_are_drawn_when_asked_and_screenshots_come_from_them(backend: str, site: Path) -> None:
    sandbox = await create_browser(backend, frames="on_demand")
    try:
        assert sandbox.on_demand
        page = await open_site(sandbox, site)
        frames = sandbox.frames(page)
        assert sandbox.frames(page) is frames
        await page.evaluate("window.ticks = 0; (function tick() { window.ticks++; requestAnimationFrame(tick); })()")
        await asyncio.sleep(0.2)
        assert await page.evaluate("window.ticks") == 1  # nothing is drawn unasked
        await frames.draw()
        await frames.draw()
        assert await page.evaluate("window.ticks") == 3
        await frames.run(page.mouse.move(20, 10))  # input that waits for a frame
        await frames.run(page.mouse.wheel(0, 30))
        await page.evaluate("document.body.style.background = 'rgb(255, 0, 0)'")
        picture = Image.open(io.BytesIO(await frames.screenshot((0, 0, 120, 90)))).convert("RGB")
        assert picture.size == (120, 90) and picture.getpixel((100, 80)) == (255, 0, 0)
        whole = Image.open(io.BytesIO(await frames.screenshot()))
        assert whole.size == (page.viewport_size["width"], page.viewport_size["height"])

        # two pages of one browser asking for frames at once (an episode's and a prepared one's):
        # Chromium takes one at a time per browser, so the sandbox queues them
        other = await load_site(await sandbox.browser.new_context(), site)
        pages = [frames, sandbox.frames(other)]
        shots = await asyncio.gather(*(p.screenshot((0, 0, 50, 50)) for _ in range(30) for p in pages),
                                     *(p.draw() for _ in range(30) for p in pages))
        assert all(Image.open(io.BytesIO(png)).size == (50, 50) for png in shots[:60])
        assert await sandbox.is_alive() and sandbox.lost is None
    finally:
        await sandbox.close()


async def test_killing_chromium_mid_use_is_a_clear_error_and_leaves_no_container(
    backend: str, browser: BrowserSandbox, site: Path,
) -> None:
    page = await open_site(browser, site)
    hanging = asyncio.ensure_future(page.evaluate("new Promise(() => {})"))  # in use when it dies
    await asyncio.sleep(0.2)
    before = browser_containers() if backend == "docker" else set()
    assert backend == "local" or browser.id in before

    await browser.kill_browser()

    with pytest.raises(PlaywrightError):
        await asyncio.wait_for(hanging, GONE_WITHIN)
    await wait_until(lambda: browser.lost is not None, "the sandbox notices its browser is gone")
    assert "Chromium exited" in (browser.lost or "")
    assert not await browser.is_alive()
    with pytest.raises(SandboxError, match=r"is gone: Chromium exited"):
        await browser.new_context()
    if backend == "docker":
        await wait_until(lambda: browser.id not in browser_containers(), "the container is removed")
    await browser.close()
    await browser.close()  # idempotent


async def test_the_pool_hands_out_a_warm_browser_and_takes_it_back_clean(backend: str, site: Path) -> None:
    pool = BrowserPool(backend, size=1)
    try:
        await pool.fill()
        assert pool.ready == 1
        lease = await pool.acquire()
        first = lease.held
        page = await open_site(first, site)
        await page.evaluate("localStorage.setItem('k', 'v')")
        await lease.release()
        assert first.browser.contexts == []  # cleared on the way back
        with pytest.raises(SandboxError, match="given back"):
            lease.held  # noqa: B018  # a spent lease reaches nothing

        lease = await pool.acquire()  # the warm one comes back, not a new start
        again = lease.held
        assert again is first and lease.reused and await again.is_alive()
        page = await open_site(again, site)
        assert await page.evaluate("localStorage.getItem('k')") is None

        await lease.release(reusable=False)  # e.g. a page misbehaved: closed, not kept
        assert not again.connected
        await wait_until(lambda: pool.ready >= 1, "the pool starts a replacement")
    finally:
        await pool.shutdown()


async def test_a_dead_browser_is_not_taken_back(backend: str) -> None:
    pool = BrowserPool(backend, size=0)
    try:
        lease = await pool.acquire()
        sandbox = lease.held
        await sandbox.kill_browser()
        await wait_until(lambda: sandbox.lost is not None, "the sandbox notices its browser is gone")
        why = await lease.release()  # recycled while the giver waits: refused, and said why
        assert why is not None and pool.discarded[-1] == why and pool.ready == 0
    finally:
        await pool.shutdown()


async def test_a_runtime_runs_its_browsers_on_one_driver_and_closing_it_leaves_nothing(backend: str) -> None:
    before = drivers()  # the default runtime's, if an earlier test started browsers with no runtime
    async with SandboxRuntime() as rt:
        lease = await (await browser_pool(backend)).acquire()  # from the runtime's shared pool
        sandbox = lease.held
        own = await create_browser(backend)  # no pool, no close: still the runtime's to close
        started = drivers() - before
        assert len(started) == 1  # the driver the runtime started, for both
        await lease.release()
        assert (await (await browser_pool(backend)).acquire()).held is sandbox  # the shared pool reuses it
        assert drivers() - before == started and rt.kinds() == [SHARED, DRIVER]
    assert not sandbox.connected and not own.connected  # lent or made, they went with the runtime
    assert drivers() == before  # and so did its driver
    if backend == "docker":
        await wait_until(lambda: not {sandbox.id, own.id} & browser_containers(), "the containers are removed")
    async with SandboxRuntime():  # a runtime after one closed starts a driver of its own
        again = (await (await browser_pool(backend)).acquire()).held
        assert again is not sandbox and await again.is_alive()
        assert len(drivers() - before) == 1
    assert not again.connected and drivers() == before


async def test_runtimes_on_two_event_loops_each_stop_only_their_own_driver() -> None:
    before = drivers()
    async with SandboxRuntime():
        here = (await (await browser_pool("local")).acquire()).held

        async def elsewhere() -> tuple[int, bool]:
            async with SandboxRuntime():
                there = (await (await browser_pool("local")).acquire()).held
                return len(drivers() - before), await there.is_alive()

        assert await asyncio.to_thread(asyncio.run, elsewhere()) == (2, True)  # both runtimes' drivers at once
        assert len(drivers() - before) == 1 and await here.is_alive()  # the other loop's went, this one's stays
    assert not here.connected and drivers() == before


async def test_a_closed_runtimes_driver_launches_nothing_and_closes_a_browser_that_finished_starting_late() -> None:
    rt = SandboxRuntime()
    owner = driver(rt)
    sandbox = await create_browser("local", runtime=rt)
    assert owner.started
    await rt.close()
    assert not owner.started and not sandbox.connected
    with pytest.raises(SandboxError, match="runtime is closed"):
        await create_browser("local", runtime=rt)
    with pytest.raises(SandboxError, match="driver is stopped"):
        await owner.playwright()
    async with SandboxRuntime():
        late = await create_browser("local")  # as if its launch ended after the driver stopped
        with pytest.raises(SandboxError, match="driver is stopped"):
            await owner.adopt(late)
        assert not late.connected


async def test_choosing_the_local_backend_warns_that_pages_are_not_isolated(caplog: pytest.LogCaptureFixture) -> None:
    browser_sandbox._warn_local.cache_clear()
    with caplog.at_level(logging.WARNING):
        sandbox = await create_browser("local")
    await sandbox.close()
    assert "NO network isolation" in caplog.text


# ----------------------------------------------------------------------------------- docker only
FETCH_ALL = """async (urls) => {
  const out = {};
  for (const url of urls) {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 5000);
    try { await fetch(url, {mode: 'no-cors', signal: abort.signal}); out[url] = 'reached'; }
    catch (e) { out[url] = String(e); }
    clearTimeout(timer);
  }
  await new Promise((done) => {  // and a WebSocket, which is not a fetch
    const ws = new WebSocket(urls[0].replace('http', 'ws'));
    ws.onopen = () => { out.websocket = 'reached'; done(); };
    ws.onerror = () => { out.websocket = 'failed'; done(); };
  });
  return out;
}"""


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker), "local", "unconfined"])
async def test_untrusted_page_content_cannot_reach_the_host(backend: str, site: Path, monkeypatch) -> None:
    """``unconfined`` is the control: the host's Chromium without the local backend's network switches
    (``launch.LOCAL_NETWORK_ARGS``) does reach the host, so the switches are what stops it."""
    if backend == "docker":
        docker_or_skip()
    if backend == "unconfined":
        monkeypatch.setattr(launch, "LOCAL_NETWORK_ARGS", ())
    connections: list[str] = []

    async def count(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(str(writer.get_extra_info("peername")))
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):  # Chromium may drop it unread
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(count, "0.0.0.0", 0)
    port = server.sockets[0].getsockname()[1]
    # A TCP connection is counted whatever Chromium then does with it: it opens one even for a fetch its
    # Private Network Access rules then refuse (loopback from a public origin), so the listener, not the
    # fetch's outcome, tells whether the host was reached. This machine's own name is looked up in the
    # sandbox (a DNS answer would be a way out too), and a reserved address stands for the outside.
    urls = ([f"http://{a}:{port}/" for a in host_addresses()]
            + [f"http://{socket.gethostname()}:{port}/", f"http://{UNANSWERED[0]}/", "http://example.invalid/"])
    sandbox = await create_browser("local" if backend == "unconfined" else backend)
    try:
        page = await open_site(sandbox, site)
        results = await page.evaluate(FETCH_ALL, urls)
        await asyncio.sleep(0.5)  # let any connection that did get through be accepted
    finally:
        await sandbox.close()
        server.close()
    if backend == "unconfined":
        assert connections and "reached" in results.values(), results
        return
    assert connections == []  # local: its network stack's only way out is a proxy at a documentation address
    assert all(outcome != "reached" for outcome in results.values()), results


@pytest.mark.docker
async def test_the_container_is_confined_and_labelled(site: Path) -> None:
    docker_or_skip()
    limits = BrowserLimits(memory_mb=768, pids=300, cpus=0.5)
    sandbox = await create_browser("docker", limits)
    try:
        info = engine.client().api.inspect_container(sandbox.id)
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none"
        assert host["Memory"] == host["MemorySwap"] == 768 << 20
        assert host["PidsLimit"] == 300 and host["NanoCpus"] == 5 * 10**8
        assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"] and host["AutoRemove"]
        assert "no-new-privileges" in host["SecurityOpt"]
        assert info["Config"]["User"] == "65534:65534"
        # No Docker socket and no host directory but the pipe's, read-only and emptied once Chromium opened it
        (mount,) = info["Mounts"]
        assert mount["Destination"] == PIPE_MOUNT and not mount["RW"]
        assert not await asyncio.to_thread(os.path.exists, mount["Source"])
        listing = engine.client().containers.get(sandbox.id).exec_run(["ls", "-A", PIPE_MOUNT], user=CODE_USER)
        assert listing.exit_code == 0 and listing.output == b""
        names = {entry.split("=", 1)[0] for entry in info["Config"]["Env"]}
        assert names <= {"PATH", "HOME", "LANG"}  # nothing of the host's environment
        labels = info["Config"]["Labels"]
        assert labels[KIND_LABEL] == "browser" and labels["agentgym.owner_pid"] == str(os.getpid())
        listed = {c.id: c for c in list_sandboxes(BROWSER_LABEL)}
        assert sandbox.id in listed and not listed[sandbox.id].leaked
        page = await open_site(sandbox, site)
        assert await page.evaluate("navigator.userAgent")  # a working page under these limits
    finally:
        await sandbox.close()
    assert sandbox.id not in browser_containers()


OWNER = """
import asyncio, sys
from agentgym.sandboxes.browser import create_browser
async def main():
    sandbox = await create_browser("docker")
    print(sandbox.id, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


@pytest.mark.docker
async def test_a_browser_whose_owner_is_killed_goes_away_or_is_pruned() -> None:
    docker_or_skip()
    owner = await asyncio.create_subprocess_exec(sys.executable, "-c", OWNER, stdout=subprocess.PIPE,
                                                 start_new_session=True)
    try:
        assert owner.stdout is not None
        container = (await owner.stdout.readline()).decode().strip()
        assert container in browser_containers()
    finally:
        os.killpg(owner.pid, signal.SIGKILL)  # the owner, its Playwright driver and the docker client
        await owner.wait()

    def gone_or_leaked() -> bool:
        listed = {c.id: c for c in list_sandboxes(BROWSER_LABEL)}
        return container not in listed or listed[container].leaked

    await wait_until(gone_or_leaked, "the container ends or counts as leaked")
    prune(labels={**BROWSER_LABEL, "agentgym.owner_pid": str(owner.pid)})
    assert container not in browser_containers()


def test_importing_agentgym_or_the_browser_package_loads_no_playwright() -> None:
    code = ("import sys, agentgym, agentgym.sandboxes, agentgym.sandboxes.browser; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('playwright', 'docker')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
