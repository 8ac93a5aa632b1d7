"""The host's half of the supervisor protocol: write one JSON line, await the line with the same id.

The line is :func:`~agentgym.sandboxes.supervisor.wire.message_line`, the supervisor's own.

Both backends carry the same frames: the local backend over the supervisor's stdin/stdout pipes, the
Docker backend over a unix socket shared with the container (see :mod:`~agentgym.sandboxes.channel`)
or, when the engine is remote, over the container's attach socket, where Docker wraps each chunk of
output in an 8-byte header (stream type, 3 zero bytes, big-endian length) that
:class:`SupervisorProtocol` strips.
Everything runs on the event loop (no thread hop per call) and a call's timeout is a
``loop.call_later`` on its future, the cheapest timer asyncio has.
"""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

from agentgym.errors import SandboxError, SandboxTimeout
from agentgym.sandboxes.supervisor.wire import message_line

STDERR_KEPT = 4096  # the supervisor's own stderr, kept to explain a sandbox that died


class SupervisorProtocol(asyncio.Protocol):
    """Receives the supervisor's response lines and hands each to the call waiting for its id.

    Args:
        multiplexed: The stream carries Docker's 8-byte frame headers (an attach socket with
            ``tty=False``); stderr frames are kept in :attr:`stderr` rather than parsed.
        stderr: Where the supervisor's stderr is kept, when another stream carries it (the attach
            socket beside a direct one); it explains a lost connection.
    """

    def __init__(self, *, multiplexed: bool = False, stderr: bytearray | None = None) -> None:
        self.multiplexed = multiplexed
        self.stderr = bytearray() if stderr is None else stderr
        self.lost: str | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._raw = bytearray()
        self._lines = bytearray()
        self._waiting: tuple[int, asyncio.Future[dict[str, Any]]] | None = None

    def data_received(self, data: bytes) -> None:
        if not self.multiplexed:
            self._feed(data)
            return
        raw = self._raw
        raw += data
        while len(raw) >= 8:
            kind, size = raw[0], struct.unpack_from(">I", raw, 4)[0]
            if len(raw) < 8 + size:
                break
            payload = bytes(raw[8 : 8 + size])
            del raw[: 8 + size]
            if kind == 2:
                self.stderr += payload
                del self.stderr[:-STDERR_KEPT]
            else:
                self._feed(payload)

    def _feed(self, data: bytes) -> None:
        start = 0
        while True:
            end = data.find(b"\n", start)  # only new bytes are searched: a 100 MB reply stays linear
            if end < 0:
                self._lines += data[start:]
                return
            if self._lines:
                line = bytes(self._lines + data[start:end])
                self._lines.clear()
            else:
                line = data[start:end]
            self._deliver(line)
            start = end + 1

    def _deliver(self, line: bytes) -> None:
        if self._waiting is None:
            return  # the answer to a call that was cancelled or timed out
        try:
            reply = json.loads(line)
        except ValueError:
            self._fail(SandboxError(f"the sandbox supervisor wrote a bad frame: {line[:200]!r}"))
            return
        call_id, future = self._waiting
        if reply.get("id") == call_id and not future.done():
            self._waiting = None
            future.set_result(reply)

    def _fail(self, error: SandboxError) -> None:
        if self._waiting is not None:
            future = self._waiting[1]
            self._waiting = None
            if not future.done():
                future.set_exception(error)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = "the sandbox supervisor exited" + (f" ({exc})" if exc else "")
        if self.stderr:
            self.lost += ": " + self.stderr.decode("utf-8", "replace").strip()[-1000:]
        self._fail(SandboxError(self.lost))
        if not self.closed.done():
            self.closed.set_result(None)


class SupervisorClient:
    """Sends requests to one supervisor, one at a time, and turns failures into :class:`SandboxError`.

    A call that times out on the host side leaves the supervisor in an unknown state, so the client
    refuses further calls: a hung sandbox fails fast instead of hanging every later call.

    Args:
        transport: Where request lines are written.
        protocol: Where response lines arrive.
        name: Used in error messages.
    """

    def __init__(self, transport: asyncio.WriteTransport, protocol: SupervisorProtocol, *, name: str) -> None:
        self.transport = transport
        self.protocol = protocol
        self.name = name
        self.broken: str | None = None
        self._lock = asyncio.Lock()
        self._next_id = 0

    async def call(self, op: str, seconds: float, /, **args: Any) -> dict[str, Any]:
        """Send ``op`` and return the supervisor's reply.

        Raises:
            SandboxTimeout: No reply within ``seconds``.
            SandboxError: The supervisor is gone, broke the protocol, or failed the op for a reason
                other than the filesystem.
            OSError: The op failed with an errno (e.g. ``FileNotFoundError`` from ``read_file``).
        """
        async with self._lock:
            failure = self.broken or self.protocol.lost
            if failure is not None:
                raise SandboxError(f"sandbox {self.name} is unusable: {failure}")
            self._next_id += 1
            call_id = self._next_id
            loop = asyncio.get_running_loop()
            future: asyncio.Future[dict[str, Any]] = loop.create_future()
            self.protocol._waiting = (call_id, future)
            self.transport.write(message_line({"id": call_id, "op": op, **args}))
            timer = loop.call_later(seconds, self._expire, future, op, seconds)
            try:
                reply = await future
            finally:
                timer.cancel()
                if self.protocol._waiting is not None and self.protocol._waiting[1] is future:
                    self.protocol._waiting = None
        if not reply.get("ok"):
            error = reply.get("error", "unknown error")
            if reply.get("errno"):
                raise OSError(reply["errno"], error, reply.get("filename"))
            raise SandboxError(f"sandbox {self.name}: {op} failed: {error}")
        return reply

    def _expire(self, future: asyncio.Future[dict[str, Any]], op: str, seconds: float) -> None:
        if not future.done():
            self.broken = f"{op} got no answer within {seconds:.3g} s"
            future.set_exception(SandboxTimeout(f"sandbox {self.name}: {self.broken}"))

    def close(self) -> None:
        """Close the request stream; the supervisor sees end of input and exits."""
        if not self.transport.is_closing():
            self.transport.close()
