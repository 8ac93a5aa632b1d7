"""A direct line to Chromium beside Playwright's: this process relays the DevTools pipe and sends on it too.

Every Playwright call crosses two hops and two JSON codecs: this process to Playwright's Node driver, and
the driver to Chromium. A step of the GUI env (a click, then a read of the page's reward) made that way
costs four round trips of both, more than twice what the same commands cost sent straight to Chromium
(``benchmarks/gui_browser.py``; the figures are in docs/benchmarks.md). So the pipe between Playwright and
Chromium runs through this process: Playwright starts :data:`LAUNCHER` as its browser, which hands
Playwright's end of the pipe and a new pipe to Chromium to the :class:`DirectPipe` of this process over a
unix socket in a private directory (``SCM_RIGHTS``), then becomes Chromium (or ``docker run`` of it). The
pipe copies Playwright's messages to Chromium and Chromium's to Playwright, whole messages only, and sends
commands of its own in between, on the DevTools session of a page Playwright opened
(:meth:`DirectPipe.page_session`); replies to them (ids from :data:`FIRST_ID`, far above Playwright's, which
count from 1) come back here and never reach Playwright. So a click and the read after it are two writes and
two reads of this process, a few hundred microseconds each.

For a container on a local engine, Chromium's end of the pipe need not cross Docker's attach stream
(the ``docker`` client, dockerd and the container's shim: three copies, and CPU per GUI env step that
``benchmarks/gui_step_cpu.py`` measures): the pipe is then two FIFOs in a fresh directory of
their own, mounted read-only into the container, which Chromium opens inside as its fds 3 and 4
while this process holds the other ends (:class:`Fifos`); once both are open they are unlinked and
the directory removed.

Nothing listens once the launcher has connected: the socket is unlinked, the directory removed.
When Chromium's end closes (it exited or crashed) Playwright's end is closed too, so Playwright
sees the browser go as before, and commands of this process waiting for replies fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import secrets
import shutil
import socket
import struct
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentgym.errors import SandboxError, SandboxTimeout
from agentgym.sandboxes.pipes import PipeWriter
from agentgym.sandboxes.supervisor.wire import read_available

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

LAUNCHER = Path(__file__).with_name("launcher.py")
FIRST_ID = 1 << 30
"""This process's command ids start here; Playwright's count from 1 and would need a billion commands to meet them."""
MARKER = "agentgym-session-"
"""An expression Playwright's session evaluates once, so the pipe learns that session's id."""
ATTACH_SECONDS = 60.0
REPLY_SECONDS = 30.0
READ_BYTES = 1 << 20
MAX_MESSAGE_BYTES = 512 << 20
"""A message from Chromium longer than this ends the relay (a browser taken over could otherwise fill this
process's memory); a full-page PNG of a large viewport is tens of MiB."""


class Fifos:
    """Chromium's end of the pipe as two FIFOs in a fresh directory, for a container to open as fds 3 and 4.

    The directory and FIFOs belong to ``uid`` (the container's user) with modes 0700 and 0600 when
    this process is root; otherwise the container's user cannot be given them, and the directory is
    0711 (not listable) and the FIFOs 0666 under names of 128 random bits. The read end is opened
    at once (non-blocking), so Chromium's open for writing does not wait; the write end once
    Chromium has opened its reading side (:meth:`open_writer`).
    """

    def __init__(self, uid: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="agentgym-browser-pipe-"))
        token = secrets.token_hex(16)
        self.into, self.out = f"{token}.in", f"{token}.out"
        try:
            for name in (self.into, self.out):
                os.mkfifo(self.dir / name, 0o600)
                if os.geteuid() == 0:
                    os.chown(self.dir / name, uid, uid)
                else:
                    os.chmod(self.dir / name, 0o666)
            if os.geteuid() == 0:
                os.chown(self.dir, uid, uid)
            else:
                os.chmod(self.dir, 0o711)
            self.reader = os.open(self.dir / self.out, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except BaseException:
            self.remove()
            raise

    async def open_writer(self, launcher: int, timeout: float) -> int:
        """The write end, once Chromium has opened both FIFOs (it opens this one last).

        Raises:
            SandboxError: Process ``launcher`` (the ``docker run`` Playwright started) ended first,
                or Chromium did not open the FIFO within ``timeout``.
        """
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                return os.open(self.dir / self.into, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as e:
                if e.errno != errno.ENXIO:  # ENXIO: no reader yet
                    raise SandboxError(f"could not open the browser's pipe: {e}") from e
            if not _running(launcher):
                raise SandboxError("the browser's container ended before Chromium opened its pipe")
            if asyncio.get_running_loop().time() > deadline:
                raise SandboxError("the browser never opened its pipe")
            await asyncio.sleep(0.002)

    def remove(self) -> None:
        """Unlink the FIFOs and their directory (open ends stay open)."""
        shutil.rmtree(self.dir, ignore_errors=True)


class DirectPipe:
    """Relays one browser's DevTools pipe between Playwright and Chromium, and sends commands of its own on it.

    Make it, pass :meth:`launch_env` to Playwright's launch of :meth:`executable`, and await
    :meth:`attach` alongside the launch: the launcher connects, hands over the pipe's ends, and
    the relay runs in this event loop from then on.

    Args:
        fifos: Chromium's end as :class:`Fifos` for a container to open (mount ``fifos.dir``), or
            None: a pipe the launcher makes and hands over with Playwright's.
    """

    def __init__(self, fifos: Fifos | None = None) -> None:
        self.fifos = fifos
        self._dir = Path(tempfile.mkdtemp(prefix="agentgym-browser-"))  # 0700: only this user reaches the socket
        self._socket = self._dir / "pipe.sock"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self._socket))
        self._listener.listen(1)
        self._listener.setblocking(False)
        self._to_browser: PipeWriter | None = None
        self._to_playwright: PipeWriter | None = None
        self._from_playwright = b""
        self._from_browser = b""
        self._readers: list[int] = []
        self._next_id = FIRST_ID
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._markers: dict[str, asyncio.Future[str]] = {}
        self.closed: str | None = None
        self.playwright_input = 0
        """How many writes of Playwright's carried an ``Input.`` command (a mouse or key event it sent),
        so that a page's count of mouse releases can tell this process's clicks from its (``PageSession.click``)."""
        stub = self._dir / "chromium"
        stub.write_text(f"#!/bin/sh\nexec '{sys.executable}' -I -S '{LAUNCHER}' \"$@\"\n")
        stub.chmod(0o700)

    @property
    def executable(self) -> str:
        """What Playwright starts as its browser: a stub in the private directory that runs :data:`LAUNCHER`."""
        return str(self._dir / "chromium")

    def launch_env(self, command: list[str]) -> dict[str, str]:
        """The launcher's environment: the socket, what it execs (``command``, Playwright's arguments), the pipe."""
        return {"AGENTGYM_BROWSER_SOCKET": str(self._socket), "AGENTGYM_BROWSER_COMMAND": "\n".join(command),
                "AGENTGYM_BROWSER_PIPE": "fifos" if self.fifos else "pipes"}

    async def attach(self) -> None:
        """Take the pipe's ends from the launcher and start relaying; closes the socket and its directory.

        Raises:
            SandboxError: No launcher connected within a minute, or it sent no pipe.
        """
        loop = asyncio.get_running_loop()
        try:
            conn, _ = await asyncio.wait_for(loop.sock_accept(self._listener), ATTACH_SECONDS)
        except TimeoutError as e:
            raise SandboxError("the browser launcher never connected") from e
        finally:
            self._drop_socket()
        with conn:
            launcher = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
            conn.setblocking(True)
            conn.settimeout(ATTACH_SECONDS)
            _, fds, _, _ = await asyncio.to_thread(socket.recv_fds, conn, 16, 4)
        expected = 2 if self.fifos else 4
        if len(fds) != expected:
            for fd in fds:
                os.close(fd)
            raise SandboxError(f"the browser launcher sent {len(fds)} descriptors, not {expected}")
        if self.fifos:
            try:
                fds += [await self.fifos.open_writer(launcher, ATTACH_SECONDS), self.fifos.reader]
            except BaseException:
                for fd in fds:
                    os.close(fd)
                raise
            finally:
                self.fifos.remove()
        from_playwright, to_playwright, to_browser, from_browser = fds
        for fd in fds:
            os.set_inheritable(fd, False)
            os.set_blocking(fd, False)
        self._to_browser = PipeWriter(to_browser)
        self._to_playwright = PipeWriter(to_playwright)
        self._readers = [from_playwright, from_browser]
        loop.add_reader(from_playwright, self._on_playwright, from_playwright)
        loop.add_reader(from_browser, self._on_browser, from_browser)

    async def page_session(self, page: Page) -> PageSession:
        """A DevTools session on ``page`` for :meth:`send`: one Playwright opens, whose id the pipe learns here."""
        token = secrets.token_hex(8)
        learnt = self._markers[token] = asyncio.get_running_loop().create_future()
        try:
            cdp = await page.context.new_cdp_session(page)
            await cdp.send("Runtime.evaluate", {"expression": f"'{MARKER}{token}'"})
            return PageSession(self, await asyncio.wait_for(learnt, REPLY_SECONDS), cdp)
        finally:
            self._markers.pop(token, None)

    async def send(self, session: str, *commands: tuple[str, dict[str, Any]],
                   timeout: float = REPLY_SECONDS) -> list[dict[str, Any]]:
        """Send ``commands`` (method, params) on ``session`` in one write; their results, in order.

        Chromium handles a session's commands in the order they arrive; the replies are awaited together.

        Raises:
            SandboxError: The browser is gone, did not answer within ``timeout``, or a command failed.
        """
        if self.closed is not None or self._to_browser is None:
            raise SandboxError(f"the browser's pipe is closed: {self.closed or 'not attached'}")
        loop = asyncio.get_running_loop()
        futures, out = [], []
        for method, params in commands:
            self._next_id += 1
            future = self._waiting[self._next_id] = loop.create_future()
            futures.append(future)
            out.append(json.dumps({"id": self._next_id, "method": method, "params": params,
                                   "sessionId": session}).encode())
        self._to_browser.write(b"\0".join(out) + b"\0")
        ids = range(self._next_id - len(commands) + 1, self._next_id + 1)
        try:
            _, late = await asyncio.wait(futures, timeout=timeout)
        finally:  # answered, timed out or cancelled: replies still to come are dropped when they come
            for ident in ids:
                self._waiting.pop(ident, None)
        if late:
            raise SandboxTimeout(f"the browser did not answer {commands[0][0]} within {timeout:g} s")
        replies = [future.result() for future in futures]  # the pipe's error, if it closed meanwhile
        for (method, _), reply in zip(commands, replies, strict=True):
            if "error" in reply:
                raise SandboxError(f"{method}: {reply['error'].get('message', reply['error'])}")
        return [reply["result"] for reply in replies]

    def close(self, reason: str = "closed") -> None:
        """Stop relaying and close every end this process holds (Playwright and Chromium see the pipe close)."""
        if self.closed is not None:
            return
        self.closed = reason
        self._drop_socket()
        if self.fifos is not None:
            self.fifos.remove()
            if not self._readers:  # never attached: the read end is not among the relay's
                with contextlib.suppress(OSError):
                    os.close(self.fifos.reader)
        loop = asyncio.get_event_loop()
        for fd in self._readers:
            loop.remove_reader(fd)
            os.close(fd)
        self._readers = []
        for writer in (self._to_browser, self._to_playwright):
            if writer is not None:
                writer.close()
        error = SandboxError(f"the browser's pipe is closed: {reason}")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(error)
        self._waiting.clear()

    def _drop_socket(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _on_playwright(self, fd: int) -> None:
        """Playwright wrote: pass its whole messages to Chromium, noting the session of a marker."""
        data = read_available(fd, READ_BYTES)
        if data is None:
            return
        if not data:
            self._finish("Playwright closed the pipe")
            return
        self._from_playwright += data
        if b"\0" not in data:
            return
        end = self._from_playwright.rfind(b"\0")
        whole, self._from_playwright = self._from_playwright[:end + 1], self._from_playwright[end + 1:]
        if self._markers and MARKER.encode() in whole:
            self._note_marker(whole)
        if b'"Input.' in whole:  # or a string that starts so: a count too high only costs a read
            self.playwright_input += 1
        assert self._to_browser is not None
        self._to_browser.write(whole)

    def _on_browser(self, fd: int) -> None:
        """Chromium wrote: replies to this process's commands stay here, all else goes on to Playwright."""
        data = read_available(fd, READ_BYTES)
        if data is None:
            return
        if not data:
            self._finish("Chromium closed the pipe (it exited or crashed)")
            return
        self._from_browser += data
        if b"\0" not in data:  # the middle of a long message (a screenshot, a page's body)
            if len(self._from_browser) > MAX_MESSAGE_BYTES:
                self._finish(f"Chromium sent a message over {MAX_MESSAGE_BYTES >> 20} MiB")
            return
        messages = self._from_browser.split(b"\0")
        self._from_browser = messages.pop()
        onward = []
        for message in messages:
            ident = _reply_id(message)
            if ident is None or ident < FIRST_ID:  # Playwright's
                onward.append(message)
                continue
            future = self._waiting.pop(ident, None)  # None: its caller gave up; Playwright must not see it
            if future is not None and not future.done():
                try:
                    future.set_result(json.loads(message))
                except ValueError as e:
                    future.set_exception(SandboxError(f"the browser sent a reply that is not JSON: {e}"))
        if onward:
            assert self._to_playwright is not None
            self._to_playwright.write(b"\0".join(onward) + b"\0")

    def _note_marker(self, messages: bytes) -> None:
        for message in messages.split(b"\0"):
            if MARKER.encode() in message:
                command = json.loads(message)
                token = str(command.get("params", {}).get("expression", "")).strip("'").removeprefix(MARKER)
                future = self._markers.get(token)
                if future is not None and not future.done() and "sessionId" in command:
                    future.set_result(command["sessionId"])

    def _finish(self, reason: str) -> None:
        """One side closed: flush what is pending to the other, then close everything."""
        for writer in (self._to_browser, self._to_playwright):
            if writer is not None:
                writer.flush_blocking()
        self.close(reason)


class PageSession:
    """One page's DevTools session, spoken to through the :class:`DirectPipe` (not through Playwright)."""

    def __init__(self, pipe: DirectPipe, session_id: str, cdp: CDPSession) -> None:
        self.pipe = pipe
        self.id = session_id
        self._cdp = cdp  # Playwright's handle on the session: it lives as long as the page
        self._releases: int | None = None  # the page's count of trusted mouse releases after our last click
        self._input_seen = 0  # the pipe's count of Playwright's input then
        self._clicking = asyncio.Lock()  # clicks with a read, one at a time: each expects the count it left

    async def send(self, *commands: tuple[str, dict[str, Any]], timeout: float = REPLY_SECONDS) -> list[dict[str, Any]]:
        """Send ``commands`` in one write and return their results (see :meth:`DirectPipe.send`)."""
        return await self.pipe.send(self.id, *commands, timeout=timeout)

    async def evaluate(self, expression: str, *, timeout: float = REPLY_SECONDS) -> Any:
        """The JSON value of ``expression`` in the page's main world.

        Raises:
            SandboxError: It threw (the message is the exception's), or the browser is gone.
        """
        (result,) = await self.send(_evaluate(expression), timeout=timeout)
        return _value(result)

    async def click(self, x: float, y: float, *, then: str | None = None, timeout: float = REPLY_SECONDS) -> Any:
        """A trusted left click at (x, y) CSS pixels: move, press, release, as Playwright's ``mouse.click``;
        with ``then``, the JSON value of that expression once the page has handled the click.

        The three go in one write. A mouse move waits for the next frame when the browser draws on
        demand, but the press behind it makes Chromium deliver it at once, so no frame is drawn.
        When this returns the page has handled ``mouseup`` and ``click``.

        ``then`` goes in the same write, behind the click, saving the read's round trip on most
        steps (see docs/browser-sandbox.md). But input reaches the page by another path than
        commands, and Chromium may run the expression before the page has handled the release. So it
        runs with a count of the trusted mouse releases the page has seen (a listener it installs on
        first use). The value stands only when that count is one more than after this session's last
        click and no trusted input but this session's can have reached the page since: every trusted
        event comes through the pipe, from here or from Playwright, whose input commands the pipe
        counts. Otherwise (the first click, a page loaded since, input from Playwright, a click in an
        iframe, the expression ahead of the release) it is evaluated again once the click's replies
        are in, as without ``then``.
        """
        commands = [_mouse("mouseMoved", x, y, "none", 0), _mouse("mousePressed", x, y, "left", 1),
                    _mouse("mouseReleased", x, y, "left", 1)]
        async with self._clicking:
            if then is None:
                await self.send(*commands, timeout=timeout)
                if self._releases is not None:  # one more expected (if it missed the page: a read more, later)
                    self._releases += 1
                return None
            counted = f"[{_COUNT_RELEASES}, ({then})]"
            seen = self.pipe.playwright_input
            releases, value = _value((await self.send(*commands, _evaluate(counted), timeout=timeout))[-1])
            alone = self._input_seen == seen == self.pipe.playwright_input
            if not alone or self._releases is None or releases != self._releases + 1:
                seen = self.pipe.playwright_input
                releases, value = await self.evaluate(counted, timeout=timeout)
            self._releases, self._input_seen = releases, seen
        return value


_COUNT_RELEASES = """(() => {
  let seen = window.__agentgymReleases;
  if (!seen) {
    seen = window.__agentgymReleases = {count: 0};
    addEventListener("mouseup", (event) => { if (event.isTrusted) seen.count++; }, true);
  }
  return seen.count;
})()"""
"""The page's count of trusted mouse releases, by a listener this installs on first use (``PageSession.click``)."""


def _evaluate(expression: str) -> tuple[str, dict[str, Any]]:
    return "Runtime.evaluate", {"expression": expression, "returnByValue": True}


def _value(result: dict[str, Any]) -> Any:
    if "exceptionDetails" in result:
        details = result["exceptionDetails"]
        raise SandboxError(details.get("exception", {}).get("description") or details.get("text", "exception"))
    return result["result"].get("value")


def _mouse(kind: str, x: float, y: float, button: str, clicks: int) -> tuple[str, dict[str, Any]]:
    return "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": button, "clickCount": clicks}


def _reply_id(message: bytes) -> int | None:
    """The id of a reply (Chromium writes it first: ``{"id":12,...``), or None for an event or anything else."""
    if not message.startswith(b'{"id":'):
        return None
    end = message.find(b",", 6)
    digits = message[6:end]
    return int(digits) if end > 0 and digits.isdigit() else None


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
