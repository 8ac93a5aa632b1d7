"""Fixtures for the MCP tests: the SDK test server over streamable HTTP on 127.0.0.1, in a thread."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

pytest.importorskip("mcp")


@pytest.fixture
def http_server() -> Iterator[str]:
    """``calc`` served over streamable HTTP on a socket bound here (no port race); yields its URL."""
    import uvicorn

    from .calc_server import calc

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    app = calc().streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.05)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    server.should_exit = True
    thread.join(timeout=30)
    sock.close()
