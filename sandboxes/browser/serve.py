"""Serving host files to a sandboxed browser with no network: Playwright routes answer from a directory.

A browser sandbox has no network and no view of the host's files, so pages reach it through
Playwright's request interception: requests under ``origin`` are answered by the host from
``directory``, over the same DevTools pipe the browser is driven by. Nothing listens anywhere.
"""

from __future__ import annotations

import asyncio
import mimetypes
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Route

DEFAULT_ORIGIN = "http://agentgym.local"


async def serve_directory(context: BrowserContext, directory: str | Path, origin: str = DEFAULT_ORIGIN) -> str:
    """Answer the context's requests under ``origin`` with the files of ``directory``; return ``origin + "/"``.

    ``<origin>/a/b.html`` is ``directory/a/b.html``; a path outside ``directory`` or a missing file
    gets a 404. Files are read once and kept in memory (task pages are small and read often).
    """
    root = await asyncio.to_thread(Path(directory).resolve)
    origin = origin.rstrip("/")
    cache: dict[str, tuple[int, bytes, str]] = {}

    async def answer(route: Route) -> None:
        path = unquote(urlsplit(route.request.url).path).lstrip("/")
        if path not in cache:
            cache[path] = _read(root, path)
        status, body, content_type = cache[path]
        await route.fulfill(status=status, body=body, content_type=content_type)

    await context.route(f"{origin}/**", answer)
    return origin + "/"


def _read(root: Path, path: str) -> tuple[int, bytes, str]:
    file = (root / path).resolve()
    if not file.is_relative_to(root) or not file.is_file():
        return 404, b"not found", "text/plain"
    content_type = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
    return 200, file.read_bytes(), content_type
