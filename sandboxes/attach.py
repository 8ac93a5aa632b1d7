"""A container's attach stream, opened on the event loop for any endpoint: unix, tcp, tcp with TLS, ssh.

The docker SDK can hand back the socket of an attach request, but only a plain one is usable by
asyncio (a TLS socket or an ssh pipe is not), so the request is made here instead: connect to the
engine the way its URL says (for ``ssh://``, through ``ssh HOST docker system dial-stdio``, as the
docker command does), send ``POST /containers/ID/attach`` asking to upgrade the connection, and once
the engine answers ``101`` hand the connection to the caller's protocol. From then on the stream
carries Docker's multiplexed frames (see :class:`~agentgym.sandboxes.client.SupervisorProtocol`).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from agentgym.errors import SandboxError
from agentgym.sandboxes.hosts import Endpoint

P = TypeVar("P", bound=asyncio.Protocol)

HEADER_LIMIT = 65536
REQUEST = (
    "POST /containers/{id}/attach?stdin=1&stdout=1&stderr=1&stream=1 HTTP/1.1\r\n"
    "Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\nContent-Length: 0\r\n\r\n"
)


async def open_stream(
    endpoint: Endpoint, container_id: str, factory: Callable[[], P], seconds: float
) -> tuple[asyncio.Transport, P]:
    """Attach to the stdin, stdout and stderr of ``container_id`` (created, best not yet started).

    Raises:
        SandboxError: The engine cannot be reached or refuses the attach; the message says why.
    """
    loop = asyncio.get_running_loop()
    request = REQUEST.format(id=container_id).encode()
    opened: asyncio.Transport | None = None
    try:
        opened, upgrade = await asyncio.wait_for(_connect(endpoint, lambda: _Upgrade(request)), seconds)
        await asyncio.wait_for(upgrade.answered, seconds)
    except BaseException as e:
        if opened is not None:
            opened.close()
        if isinstance(e, OSError | TimeoutError):  # ssl.SSLError is an OSError
            raise SandboxError(f"could not attach to container {container_id[:12]} on {endpoint.url}: {e!r}") from e
        raise
    assert opened is not None
    transport, protocol = opened, factory()
    transport.set_protocol(protocol)
    protocol.connection_made(transport)
    rest = upgrade.take_rest()
    if rest:
        protocol.data_received(rest)
    if upgrade.lost is not None:  # the connection closed before the hand-over
        loop.call_soon(protocol.connection_lost, upgrade.lost if isinstance(upgrade.lost, Exception) else None)
    return transport, protocol


async def _connect(endpoint: Endpoint, factory: Callable[[], _Upgrade]) -> tuple[asyncio.Transport, _Upgrade]:
    loop = asyncio.get_running_loop()
    parts = urlsplit(endpoint.url)
    if parts.scheme == "unix":
        return await loop.create_unix_connection(factory, parts.path)  # type: ignore[return-value]
    if parts.scheme == "tcp":
        context = None
        if endpoint.tls_verify:
            ca, cert, key = endpoint.certificates()
            context = ssl.create_default_context(cafile=ca)
            context.load_cert_chain(cert, key)
        return await loop.create_connection(  # type: ignore[return-value]
            factory, str(parts.hostname), parts.port or 0, ssl=context
        )
    ours, theirs = socket.socketpair()
    try:
        command = ["ssh", *(["-l", parts.username] if parts.username else []),
                   *(["-p", str(parts.port)] if parts.port else []), "--", str(parts.hostname),
                   "docker system dial-stdio"]
        await asyncio.create_subprocess_exec(*command, stdin=theirs.fileno(), stdout=theirs.fileno())
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return await loop.create_connection(factory, sock=ours)  # type: ignore[return-value]


class _Upgrade(asyncio.Protocol):
    """Sends the attach request and reads the engine's answer, up to the end of its headers."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.answered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.lost: Exception | bool | None = None  # False: closed cleanly
        self._buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self.answered.done():
            return
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > HEADER_LIMIT:
                self.answered.set_exception(SandboxError("the Docker engine's answer to attach has no end of headers"))
            return
        head = bytes(self._buffer[:end]).decode("latin-1")
        status = head.split("\r\n", 1)[0].split(" ", 2)
        if len(status) < 2 or status[1] not in ("101", "200"):
            body = bytes(self._buffer[end + 4 :]).decode("utf-8", "replace").strip()
            refusal = f"the Docker engine refused to attach: {head.splitlines()[0]} {body}"
            self.answered.set_exception(SandboxError(refusal))
            return
        del self._buffer[: end + 4]
        self.answered.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = exc or False
        if not self.answered.done():
            self.answered.set_exception(SandboxError(f"the Docker engine closed the attach connection ({exc})"))

    def take_rest(self) -> bytes:
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest
