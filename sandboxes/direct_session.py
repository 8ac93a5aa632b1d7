"""The host's direct line to a sandbox's Python session: python calls that never wake the supervisor.

A python call through the supervisor crosses two processes: the host writes a request to the supervisor, the
supervisor writes the code to the session's pipe, waits for its reply, reads its output, and writes a
reply back. The supervisor's part of that is a large share of the call's cost (docs/benchmarks.md, "Python
calls that skip the supervisor", has the figures). So the supervisor hands the host the session's
own pipes (its ``session`` op sends them with ``SCM_RIGHTS`` on a socket kept for that): the host
writes the code frame to the session and reads its reply and output itself, exactly as the supervisor
would, and the supervisor only steps in to start a session, to kill one that timed out, died or closed
its output (``session`` with ``restart``), and for everything else (commands, files, wipes).

The session runs untrusted code, so everything read from it is bounded here as in the supervisor: each
output stream keeps ``cap`` bytes and drops the rest, the reply frame is at most :func:`reply_limit`
bytes (about ``cap``: so is its traceback, the one field of any size) and is read by its exact shape
(:func:`parse_reply`: one linear scan, nothing that nests), and a frame that is not a length and
that shape, a reply nobody asked for, or one that does not
carry the current call's number (the real reply to a call whose code forged one to end it early)
makes the session "garbled" (restarted). A session that stops reading its code or never answers is a timeout. Nothing
is ever sent to the session but code frames, and it gets no descriptor of the host's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
from dataclasses import dataclass
from typing import Any, Literal

from agentgym.sandboxes.pipes import PipeWriter

# The supervisor's own: the host reads a direct session as the supervisor reads one it keeps.
from agentgym.sandboxes.supervisor.wire import (
    LENGTH_DIGITS,
    LENT_FDS,
    QUIET_WAIT,
    READ_CHUNK,
    Capture,
    code_frame,
    parse_reply,
    plain_reply,
    read_available,
    reply_limit,
)

Outcome = Literal["done", "timeout", "died", "broken", "garbled"]


@dataclass
class Ran:
    """What one python call on a direct session came to.

    Attributes:
        outcome: ``done`` (the session answered and lives on), ``timeout``, ``died`` (its reply pipe
            closed), ``broken`` (the code closed its output) or ``garbled`` (the reply pipe carried
            what no session sends: code wrote to it).
        error: The traceback of an uncaught exception, when it answered.
        out: What it wrote to stdout (the first ``cap`` bytes).
        err: What it wrote to stderr (likewise).
    """

    outcome: Outcome
    error: str | None
    out: Capture
    err: Capture


def receive(session_socket: socket.socket) -> list[int]:
    """The session's four pipes, which the supervisor sent on ``session_socket`` before its reply to ``session``.

    Raises:
        OSError: Nothing (or not four descriptors) was waiting there; any received are closed.
    """
    _, fds, _, _ = socket.recv_fds(session_socket, 1, LENT_FDS, socket.MSG_DONTWAIT)
    if len(fds) != LENT_FDS:
        for fd in fds:
            os.close(fd)
        raise OSError(f"the supervisor sent {len(fds)} descriptors, not {LENT_FDS}")
    for fd in fds:  # nothing this process starts (a local sandbox, a browser's driver) may inherit them
        os.set_inheritable(fd, False)
    return fds


class DirectSession:
    """One Python session's pipes, handed over by the supervisor; python calls on it run from this event loop.

    Calls are one at a time (the caller holds a lock). The reply pipe is watched for as long as the
    session is held; stdout and stderr only once a call has run for :data:`QUIET_WAIT` without
    answering, since most calls answer within it and their output is then read in one go.

    Args:
        fds: Code in (written), replies, stdout and stderr (read), as :func:`receive` returns them.
        cap: Bytes kept of each output stream per call.
    """

    def __init__(self, fds: list[int], cap: int) -> None:
        self.code_in, self.replies, self.stdout, self.stderr = fds
        for fd in fds:
            os.set_blocking(fd, False)
        self.cap = cap
        self.limit = reply_limit(cap)
        self.garbled = False  # it sent a reply nobody asked for, or a bad frame
        self.dead = False  # its reply pipe closed
        self._loop = asyncio.get_running_loop()
        self._frame = bytearray()
        self._call: asyncio.Future[Outcome] | None = None
        self._reply: dict[str, Any] | None = None
        self._calls = 0  # the number of the current (or last) call, which its reply must carry
        self._plain = b""  # that call's reply when it raised nothing (supervisor.plain_reply)
        self._captures: dict[int, Capture] = {}
        self._code = PipeWriter(self.code_in, on_broken=lambda: self._finish("died"))  # the session gone
        # One watchdog timer per session, re-armed lazily (see _watch): a timer set and cancelled per
        # call cost more than the rest of the call's bookkeeping together.
        self._timer: asyncio.TimerHandle | None = None
        self._quiet_at = self._ends_at = 0.0  # when the current call starts reading output, and times out
        self._pumping = False  # stdout and stderr (and the code pipe, while a frame is pending) are watched
        self._closed = False
        self._loop.add_reader(self.replies, self._on_reply)

    async def run(self, code: str, seconds: float) -> Ran:
        """Run ``code`` in the session; its outcome, traceback and output. Never raises for what the code does."""
        out, err = Capture(self.cap), Capture(self.cap)
        if self.dead or self.garbled:
            return Ran("died" if self.dead else "garbled", None, out, err)
        data = code.encode("utf-8", "surrogatepass")  # a lone surrogate fails in the session, as code
        self._captures = {self.stdout: out, self.stderr: err}
        self._reply = None
        call = self._call = self._loop.create_future()
        self._calls += 1
        self._plain = plain_reply(self._calls)
        self._code.write(code_frame(self._calls, data))
        if self._code.pending:  # the session reads a long frame as it comes; meanwhile it may write output
            self._pump()
        now = self._loop.time()
        self._quiet_at, self._ends_at = now + min(QUIET_WAIT, seconds), now + seconds
        if self._timer is not None and self._timer.when() > self._quiet_at:  # set for a slower call
            self._timer.cancel()
            self._timer = None
        if self._timer is None:
            self._timer = self._loop.call_at(self._quiet_at, self._watch)
        try:
            outcome = await call
        finally:
            self._call = None
            if not self._closed:
                self._stop_pumping()
        if not self._closed:  # closed meanwhile (the sandbox was destroyed): its numbers may be others' now
            self._drain(self._captures)
        self._captures = {}
        reply = self._reply
        if outcome == "done" and reply is not None and reply.get("broken"):
            outcome = "broken"
        error = reply.get("error") if reply is not None else None
        return Ran(outcome, error if isinstance(error, str) else None, out, err)

    def collect(self, ran: Ran) -> None:
        """Add to ``ran`` what the output pipes still hold: after a restart, what the session wrote last."""
        if not self._closed:
            self._drain({self.stdout: ran.out, self.stderr: ran.err})

    def close(self) -> None:
        """Stop watching the session and close the pipes this process holds (the supervisor keeps its own)."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._stop_pumping()
        self._loop.remove_reader(self.replies)
        self._code.close()
        for fd in (self.replies, self.stdout, self.stderr):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self._call is not None and not self._call.done():
            self._call.set_result("died")

    # ----------------------------------------------------------------- event-loop callbacks
    def _watch(self) -> None:
        """The watchdog: a call that has run :data:`QUIET_WAIT` has its output read as it comes, one past
        its time is a timeout. Left set when a call ends, it may fire during a later call, or none: it
        then re-arms for that call's moments, or lapses until the next call sets it."""
        self._timer = None
        if self._call is None or self._call.done():
            return
        now = self._loop.time()
        if now >= self._ends_at:
            self._finish("timeout")
            return
        if now >= self._quiet_at:
            self._pump()
        self._timer = self._loop.call_at(self._ends_at if self._pumping else self._quiet_at, self._watch)

    def _pump(self) -> None:
        if not self._pumping:
            self._pumping = True
            for fd in self._captures:
                self._loop.add_reader(fd, self._on_output, fd)

    def _stop_pumping(self) -> None:
        if self._pumping:  # most calls answer before they need it: nothing to undo then
            self._pumping = False
            for fd in (self.stdout, self.stderr):
                self._loop.remove_reader(fd)
            self._code.drop()

    def _on_output(self, fd: int) -> None:
        chunk = read_available(fd)
        if chunk:
            self._captures[fd].feed(chunk)
        elif chunk == b"":
            self._loop.remove_reader(fd)  # closed: the reply pipe says whether the session went

    @staticmethod
    def _drain(captures: dict[int, Capture]) -> None:
        """Take what the pipes hold now: one ``select`` says which hold anything, so an empty one costs no read."""
        ready = select.select(list(captures), [], [], 0)[0]
        for fd in ready:
            while True:
                chunk = read_available(fd)
                if not chunk:
                    break
                captures[fd].feed(chunk)
                if len(chunk) < READ_CHUNK:  # a short read took all the pipe held
                    break

    def _on_reply(self) -> None:
        chunk = read_available(self.replies)
        if chunk is None:
            return
        if not chunk:
            self.dead = True
            self._loop.remove_reader(self.replies)
            self._finish("died")
            return
        frame = self._frame
        frame += chunk
        if frame == self._plain and self._call is not None:  # most replies: no error, output intact
            frame.clear()
            self._reply = {}
            self._finish("done")
            return
        if len(frame) < LENGTH_DIGITS:
            return
        digits = bytes(frame[:LENGTH_DIGITS])
        size = int(digits) if digits.isdigit() else -1
        if size < 0 or size > self.limit or self._call is None:
            self._give_up()
            return
        if len(frame) < LENGTH_DIGITS + size:
            return
        reply = parse_reply(bytes(frame[LENGTH_DIGITS:])) if len(frame) == LENGTH_DIGITS + size else None
        if reply is None or reply["call"] != self._calls:
            self._give_up()  # not a reply, more than one, or not this call's (code forged one before it)
            return
        frame.clear()
        self._reply = reply
        self._finish("done")

    def _give_up(self) -> None:
        """The session sent what no session sends: stop reading it; it is restarted."""
        self.garbled = True
        self._frame.clear()
        self._loop.remove_reader(self.replies)
        self._finish("garbled")

    def _finish(self, outcome: Outcome) -> None:
        if self._call is not None and not self._call.done():
            self._call.set_result(outcome)

