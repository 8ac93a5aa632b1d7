"""One browser in a sandbox: a Playwright ``Browser`` whose Chromium runs in a container (or on the host).

A :class:`BrowserSandbox` lives across many episodes: each episode gets a new browser context
(:meth:`BrowserSandbox.new_context`), which closes the previous one, so cookies, localStorage,
IndexedDB, cache and pages of earlier episodes are gone. Starting Chromium costs most of a second;
a new context costs milliseconds, and loading a page in it tens to hundreds more, so the next
episode's context can be made ahead, in the background (:meth:`~BrowserSandbox.prepare`), and taken
when it is asked for (:meth:`~BrowserSandbox.take_prepared`).

When Chromium dies (crash, out of memory, :meth:`~BrowserSandbox.kill_browser`), Playwright calls
on the page raise ``playwright.async_api.Error``; :attr:`BrowserSandbox.lost` then says what
happened, :meth:`~BrowserSandbox.new_context` raises :class:`~agentgym.errors.SandboxError` with
it, and the container is removed (it also removes itself: ``--rm --init``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import signal
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agentgym.errors import SandboxError
from agentgym.sandboxes import engine
from agentgym.sandboxes.browser import launch
from agentgym.sandboxes.browser.direct import DirectPipe, PageSession
from agentgym.sandboxes.browser.driver import Driver, driver
from agentgym.sandboxes.browser.frames import Frames, PageFrames
from agentgym.sandboxes.browser.launch import BrowserLimits

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page

    from agentgym.sandboxes.runtime import SandboxRuntime

log = logging.getLogger(__name__)

PING_TIMEOUT = 5.0
CLOSE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Spare:
    """A context being made for the next episode: its key, the task making it, the context once made."""

    key: str
    task: asyncio.Task[tuple[BrowserContext, Any]]
    made: list[BrowserContext]


class BrowserSandbox:
    """One Chromium in a sandbox, driven from the host by Playwright; reused across episodes.

    Attributes:
        id: The container's short id (docker), or ``local-<hex>`` (local).
        backend: ``"docker"`` or ``"local"`` (the host's Chromium: no isolation).
        browser: The Playwright ``Browser``. Use :meth:`new_context` for pages rather than
            ``browser.new_context()``, so each episode starts clean.
        pipe: The DevTools pipe between Playwright and Chromium, relayed by this process, which
            speaks on it too (:meth:`session`).
        limits: What the container may use.
        started: ``time.monotonic()`` at start.
        lost: Why the browser went away without :meth:`close`, or None while it has not.
        on_demand: Whether the browser draws frames only when asked (see :meth:`frames`).
        last_key: The key :meth:`take_prepared` was last asked for (what the last episode was).
        missed: Whether the last spare :meth:`take_prepared` found was prepared for another key (wasted).
    """

    def __init__(self, id: str, backend: str, browser: Browser, pipe: DirectPipe, limits: BrowserLimits, *,
                 container: str | None = None, marker: str | None = None, on_demand: bool = False) -> None:
        self.id = id
        self.backend = backend
        self.browser = browser
        self.pipe = pipe
        self.limits = limits
        self.on_demand = on_demand
        self.started = time.monotonic()
        self.lost: str | None = None
        self._container = container
        self._marker = marker
        self._context: BrowserContext | None = None
        self._closed = False
        self._cleanup: set[asyncio.Future[None]] = set()
        self._frames: weakref.WeakKeyDictionary[Page, PageFrames] = weakref.WeakKeyDictionary()
        self._sessions: weakref.WeakKeyDictionary[Page, asyncio.Future[PageSession]] = weakref.WeakKeyDictionary()
        self._frame_lock = asyncio.Lock()  # one frame request in flight per browser (see PageFrames)
        self.last_key: str | None = None
        self.missed = False
        self._spare: Spare | None = None
        self._finalizer = weakref.finalize(self, _remove_quietly, container) if container else None
        browser.on("disconnected", lambda _: self._on_disconnected())

    def __repr__(self) -> str:
        return f"<BrowserSandbox {self.backend} {self.id}>"

    @property
    def connected(self) -> bool:
        """Whether Playwright still holds the browser, without asking it anything."""
        return not self._closed and self.lost is None and self.browser.is_connected()

    async def new_context(self, **kwargs: Any) -> BrowserContext:
        """A fresh browser context (empty storage, cookies, cache); closes the one made before.

        Args:
            kwargs: Passed to Playwright's ``Browser.new_context`` (``viewport``, ``device_scale_factor``...).

        Raises:
            SandboxError: The sandbox is closed or its browser died (the message says which).
        """
        from playwright.async_api import Error

        self._check()
        await self._drop_spare()
        try:
            await self.clear()
            self._context = await self.browser.new_context(**kwargs)
        except Error as e:
            self._check()
            raise SandboxError(f"browser sandbox {self.id}: {e.message}") from e
        return self._context

    def frames(self, page: Page) -> PageFrames:
        """Frames and screenshots of ``page`` (one of this browser's), the same object each time.

        Take screenshots and act on pages through it: a browser that draws on demand
        (:attr:`on_demand`) draws nothing by itself, so Playwright's ``page.screenshot()`` would wait
        forever and mouse moves would wait for the next frame.
        """
        if page not in self._frames:
            self._frames[page] = PageFrames(page, self.on_demand, self._frame_lock,
                                            functools.partial(self.session, page))
        return self._frames[page]

    async def session(self, page: Page) -> PageSession:
        """A DevTools session on ``page`` (one of this browser's) spoken to directly, the same one each time.

        Commands on it skip Playwright's driver (see ``direct.py``): a click and a read of the page
        in about a millisecond. Playwright knows nothing of what they do (its mouse position stays
        where its own calls left it).

        Raises:
            SandboxError: The browser is gone.
        """
        self._check()
        made = self._sessions.get(page)
        if made is None or (made.done() and (made.cancelled() or made.exception() is not None)):
            made = self._sessions[page] = asyncio.ensure_future(self.pipe.page_session(page))
            made.add_done_callback(_retrieve)
        return await asyncio.shield(made)

    def prepare(self, key: str, setup: Callable[[BrowserContext], Awaitable[Any]], **kwargs: Any) -> None:
        """Start making the next episode's context in the background, for :meth:`take_prepared` ``(key)``.

        The context is new (``Browser.new_context(**kwargs)``: no storage, cookies or history of any
        episode) and ``setup(context)`` readies it (routes, a page loaded); nothing else touches it
        until it is taken. It replaces a spare prepared before, and outlives :meth:`clear` (a
        browser given back to its pool keeps it for its next episode); :meth:`new_context` and
        :meth:`close` drop it. A failure while making it is logged and leaves no spare.
        """
        if not self.connected:
            return
        if self._spare is not None:
            self._track(_discard(self._spare.task))
        made: list[BrowserContext] = []
        task = asyncio.ensure_future(self._make_spare(setup, kwargs, made))
        task.add_done_callback(_retrieve)
        self._spare = Spare(key, task, made)

    async def take_prepared(self, key: str) -> tuple[BrowserContext, Any] | None:
        """The context prepared for ``key`` and what its ``setup`` returned, as the browser's only context.

        Waits for it if it is still being made. ``None`` when there is none for ``key`` (a spare for
        another key is dropped) or making it failed: then make a context as usual.

        Raises:
            SandboxError: The sandbox is closed or its browser died (the message says which).
        """
        from playwright.async_api import Error

        self._check()
        self.last_key = key
        spare, self._spare = self._spare, None
        if spare is None:
            return None
        self.missed = spare.key != key
        if self.missed:
            await _discard(spare.task)
            return None
        try:
            context, value = await spare.task
        except Exception as e:
            log.info("browser sandbox %s: the prepared context for %s failed, making one now: %s", self.id, key, e)
            return None
        try:
            for other in list(self.browser.contexts):
                if other is not context:
                    await other.close()
        except Error as e:
            self._check()
            raise SandboxError(f"browser sandbox {self.id}: {e.message}") from e
        self._context = context
        return context, value

    async def clear(self) -> None:
        """Close every context of the browser but a spare being prepared (all pages and their storage go)."""
        self._context = None
        spare = self._spare.made if self._spare is not None else []
        for context in list(self.browser.contexts):
            if context not in spare:
                await context.close()

    async def is_alive(self) -> bool:
        """Whether the browser answers a round trip within five seconds; never raises."""
        return await self.ping() == "answers"

    async def ping(self) -> Literal["answers", "gone", "silent"]:
        """A round trip to the browser process (not to any page): it ``answers``, is ``gone`` (the call
        failed: it exited, its pipe closed) or is ``silent`` (still connected, but no answer within
        :data:`PING_TIMEOUT`: a paused sandbox, a stopped or starved process). Never raises.

        A page's script runs in its renderer, so a page that loops leaves the browser answering: only
        something outside the pages (the host, the sandbox) makes the browser itself silent.
        """
        if not self.connected:
            return "gone"
        try:
            session = await asyncio.wait_for(self.browser.new_browser_cdp_session(), PING_TIMEOUT)
            await asyncio.wait_for(session.send("Browser.getVersion"), PING_TIMEOUT)
            await session.detach()
        except TimeoutError:
            return "silent" if self.connected else "gone"
        except Exception:
            return "gone"
        return "answers"

    async def kill_browser(self) -> None:
        """Kill Chromium inside the sandbox with SIGKILL, as a crash would (for crash tests).

        Raises:
            SandboxError: The browser could not be found to kill.
        """
        if self._container is not None:
            await asyncio.to_thread(_exec_kill, self._container)
            return
        assert self._marker is not None
        pid = launch.local_browser_pid(self._marker)
        if pid is None:
            raise SandboxError(f"browser sandbox {self.id}: no Chromium process to kill")
        os.kill(pid, signal.SIGKILL)

    async def close(self) -> None:
        """Close the browser and remove its container; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self._context = None
        await self._drop_spare()
        try:
            await asyncio.wait_for(self.browser.close(), CLOSE_TIMEOUT)
        except Exception as e:  # already dead, or hung: the container goes anyway
            log.info("browser sandbox %s did not close cleanly: %s", self.id, e)
        self.pipe.close()
        if self._finalizer is not None:
            await asyncio.to_thread(self._finalizer)
        await asyncio.gather(*self._cleanup, return_exceptions=True)

    async def __aenter__(self) -> BrowserSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _make_spare(self, setup: Callable[[BrowserContext], Awaitable[Any]], kwargs: dict[str, Any],
                          made: list[BrowserContext]) -> tuple[BrowserContext, Any]:
        context = await self.browser.new_context(**kwargs)
        made.append(context)  # from now on clear() keeps it
        try:
            return context, await setup(context)
        except BaseException:
            with contextlib.suppress(Exception):
                await context.close()
            raise

    async def _drop_spare(self) -> None:
        spare, self._spare = self._spare, None
        if spare is not None:
            await _discard(spare.task)

    def _track(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._cleanup.add(task)
        task.add_done_callback(self._cleanup.discard)

    def _check(self) -> None:
        if self._closed:
            raise SandboxError(f"browser sandbox {self.id} is closed")
        if self.lost is not None:
            raise SandboxError(f"browser sandbox {self.id} is gone: {self.lost}")

    def _on_disconnected(self) -> None:
        if self._closed:
            return
        self.lost = "Chromium exited (it crashed, was killed, or ran out of memory or wall time)"
        log.warning("browser sandbox %s: %s", self.id, self.lost)
        self.pipe.close(self.lost)
        if self._finalizer is not None:  # the container removes itself; make sure
            self._track(asyncio.to_thread(self._finalizer))


async def create_browser(backend: str = "auto", limits: BrowserLimits | None = None, *,
                         frames: Frames = "free", runtime: SandboxRuntime | None = None) -> BrowserSandbox:
    """Start one browser sandbox now, with no pool (see :func:`browser_pool` for warm ones).

    It runs on ``runtime``'s Playwright driver (:mod:`~agentgym.sandboxes.browser.driver`), so
    closing that runtime closes it if its caller has not.

    Args:
        backend: ``"docker"`` (Chromium's headless shell in a container with no network), ``"local"``
            (the host's Chromium, its headless shell if installed: NO network isolation, pages can
            reach the host and the internet; a warning says so), or ``"auto"`` (Docker when an
            engine answers).
        limits: Defaults to :class:`BrowserLimits()`; the local backend enforces none of them.
        frames: ``"free"``: Chromium draws by its own clock, and pages behave as under plain
            Playwright. ``"on_demand"``: it draws only when asked, and screenshots take a few
            milliseconds instead of 25-35; act and take screenshots through
            :meth:`BrowserSandbox.frames` then. Needs the headless shell (the Docker image has it;
            a local browser without it falls back to ``"free"``).
        runtime: Whose driver (default: :func:`~agentgym.sandboxes.runtime.current`).

    Raises:
        SandboxError: The browser could not be started; the message says why.
    """
    from agentgym.sandboxes.backends import resolve_backend

    if frames not in ("free", "on_demand"):
        raise SandboxError(f"frames must be 'free' or 'on_demand', not {frames!r}")
    limits = limits or BrowserLimits()
    on_demand = frames == "on_demand"
    chosen = await resolve_backend(backend)
    owner = driver(runtime)
    if chosen == "local":
        _warn_local()
        executable = launch.local_chromium()
        on_demand = on_demand and launch.can_draw_on_demand(executable)
        marker = os.urandom(6).hex()
        browser, pipe = await launch.launch_local(await owner.playwright(), executable, marker, on_demand)
        sandbox = BrowserSandbox(f"local-{marker}", "local", browser, pipe, limits, marker=marker,
                                 on_demand=on_demand)
    else:
        sandbox = await _create_docker(owner, limits, on_demand)
    await owner.adopt(sandbox)
    return sandbox


async def _create_docker(owner: Driver, limits: BrowserLimits, on_demand: bool) -> BrowserSandbox:
    ref = await asyncio.to_thread(launch.prepare_image)
    name = launch.container_name()
    try:
        browser, pipe = await launch.launch_docker(await owner.playwright(), name, ref, limits, on_demand)
        info = await asyncio.to_thread(engine.client().api.inspect_container, name)
    except BaseException:
        await asyncio.shield(asyncio.to_thread(_remove_quietly, name))  # a cancelled start leaks nothing
        raise
    return BrowserSandbox(info["Id"][:12], "docker", browser, pipe, limits, container=info["Id"], on_demand=on_demand)


async def _discard(task: asyncio.Task[Any]) -> None:
    """Stop making a spare context, or close the one made."""
    task.cancel()
    result = (await asyncio.gather(task, return_exceptions=True))[0]
    if isinstance(result, tuple):
        with contextlib.suppress(Exception):
            await result[0].close()


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a spare's failure as seen (it is logged when the spare is taken, or dropped with it)."""
    if not task.cancelled():
        task.exception()


def _exec_kill(container: str) -> None:
    api = engine.client().api
    command = ["sh", "-c", f"kill -KILL $(cat {launch.PID_FILE})"]
    try:
        exec_id = api.exec_create(container, command, user=launch.CODE_USER)["Id"]
        api.exec_start(exec_id)
    except Exception as e:
        raise SandboxError(f"could not kill Chromium in container {container[:12]}: {e}") from e
    code = api.exec_inspect(exec_id).get("ExitCode")
    if code != 0:
        raise SandboxError(f"could not kill Chromium in container {container[:12]} (exit {code})")


def _remove_quietly(container: str) -> None:
    try:
        engine.remove_container(container)
    except Exception as e:
        log.warning("could not remove browser container %s: %s", container[:12], e)


@functools.cache
def _warn_local() -> None:
    log.warning(
        "browser sandbox on the local backend: the host's Chromium with NO network isolation "
        "(pages can reach the host's loopback and the internet); use backend='docker' for untrusted pages"
    )
