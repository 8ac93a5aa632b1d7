"""Closing every kept sandbox of every kind with one call: :func:`shutdown`, or ``async with SandboxRuntime()``.

Sandboxes are kept warm in several places, each per event loop: the shared Python-sandbox pools
(:mod:`.pool`), the shared browser pools (:mod:`.browser.pool`), and what an env family keeps (the
SWE env's containers kept for the next episode of a task). Each registers how to close its own with
:func:`on_shutdown` when its module is imported, so whoever runs episodes (the CLI, the Ray worker,
the MCP server, a user's script) calls one function and misses none: before this, the CLI closed
two kinds of the three and the Ray worker and the MCP server one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

log = logging.getLogger(__name__)

_closers: dict[str, Callable[[], Awaitable[None]]] = {}


def on_shutdown(kind: str, close: Callable[[], Awaitable[None]]) -> None:
    """Have :func:`shutdown` call ``close()`` (this event loop's sandboxes of ``kind``); one closer per kind."""
    _closers[kind] = close


def forget(kind: str) -> None:
    """Stop calling the closer of ``kind`` (e.g. a test's own)."""
    _closers.pop(kind, None)


def kinds() -> list[str]:
    """The kinds of kept sandbox that :func:`shutdown` closes, in the order it closes them."""
    return list(_closers)


async def shutdown() -> None:
    """Close this event loop's kept sandboxes of every registered kind.

    Every closer runs even if one fails; the first failure is raised after the rest have run.
    """
    failure: BaseException | None = None
    for kind, close in list(_closers.items()):
        try:
            await close()
        except Exception as e:
            log.warning("closing the %s failed: %s", kind, e)
            failure = failure or e
    if failure is not None:
        raise failure


class SandboxRuntime:
    """``async with SandboxRuntime():`` runs the block, then :func:`shutdown`, however the block ends."""

    async def __aenter__(self) -> SandboxRuntime:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await shutdown()
