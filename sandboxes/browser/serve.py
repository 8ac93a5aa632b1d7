"""Serving host files to a sandboxed browser with no network: Playwright routes answer from a directory.

A browser sandbox has no network and no view of the host's files, so pages reach it through
Playwright's request interception: requests under ``origin`` are answered by the host from
``directory``, over the same DevTools pipe the browser is driven by. Nothing listens anywhere.

A route handler never raises. Playwright keeps a handler's exception on the connection it shares with
every other page of the event loop and raises it from the next call anyone makes there, so a page
that asks for a path the file system refuses (a NUL byte, a name too long) would fail another
episode's call, and the exception's text would carry the host's path into that episode's failure.
So a path that cannot be a file of the directory is a 404, whatever the reason, and a request that
cannot be answered any more (its page closed meanwhile) is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import mimetypes
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Route

log = logging.getLogger(__name__)

DEFAULT_ORIGIN = "http://agentgym.local"
MAX_PATH_CHARS = 1024
"""Longer request paths are 404s without a look at the file system (no file of a served tree is that deep)."""
Headers = Callable[[str, bytes], dict[str, str]]
"""Extra response headers for a served file: a function of its path (relative to the directory) and body."""
Served = tuple[int, bytes, str, dict[str, str]]
NOT_FOUND: Served = (404, b"not found", "text/plain", {})


async def serve_directory(context: BrowserContext, directory: str | Path, origin: str = DEFAULT_ORIGIN,
                          *, headers: Headers | None = None) -> str:
    """Answer the context's requests under ``origin`` with the files of ``directory``; return ``origin + "/"``.

    ``<origin>/a/b.html`` is ``directory/a/b.html``; a path outside ``directory``, a missing file or
    a path the file system cannot hold gets a 404. Files found are read once and kept in memory
    (task pages are small and read often). ``headers(path, body)`` adds response headers to a file's
    answer, or replaces its content-type (a Content-Security-Policy computed from the page, say).
    """
    root = await asyncio.to_thread(Path(directory).resolve)
    origin = origin.rstrip("/")
    cache: dict[str, Served] = {}

    async def answer(route: Route) -> None:
        try:
            path = unquote(urlsplit(route.request.url).path).lstrip("/")
            served = cache.get(path)
            if served is None:
                served = _read(root, path, headers)
                if served[0] == 200:
                    cache[path] = served
            status, body, content_type, extra = served
            await route.fulfill(status=status, body=body, headers={"content-type": content_type, **extra})
        except Exception as e:  # never raise into Playwright's connection (see the module's docstring)
            log.debug("a route of %s could not be answered: %s", origin, type(e).__name__)
            await drop(route)

    await context.route(f"{origin}/**", answer)
    return origin + "/"


async def abort_all(context: BrowserContext) -> None:
    """Abort every request of ``context`` that no later route answers (Playwright tries the latest first)."""
    await context.route("**/*", drop)


async def drop(route: Route) -> None:
    """Abort ``route``'s request as blocked by the client; nothing is raised if it cannot be (its page is gone)."""
    with contextlib.suppress(Exception):
        await route.abort("blockedbyclient")


def _read(root: Path, path: str, headers: Headers | None) -> Served:
    """The answer for ``path``: the file's status, body, type and headers, or a 404; never raises."""
    if len(path) > MAX_PATH_CHARS or "\0" in path:
        return NOT_FOUND
    try:
        file = (root / path).resolve()
        if not file.is_relative_to(root) or not file.is_file():
            return NOT_FOUND
        body = file.read_bytes()
        extra = headers(file.relative_to(root).as_posix(), body) if headers is not None else {}
    except (OSError, ValueError):  # a name too long, a component that is not a directory, a loop...
        return NOT_FOUND
    content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    return 200, body, content_type, extra
