"""Forking a sandbox: n new sandboxes that start from its current files, for branching an episode at a turn.

A sandbox's files live in two kinds of place, and each is copied the cheapest way that sees it:

- **What code can write that no image holds**: the tmpfs mounts (``/work``, ``/tmp``, ``/dev/shm``
  on Docker and under bubblewrap; the working directory of an unjailed local sandbox). Only
  processes inside the sandbox see them (``docker cp`` reads the container's layer, not its
  tmpfs), so the supervisor's copier streams them (``snapshot``: a length-prefixed JSON header per
  entry, then its bytes), read once, and each fork's copier makes them from the same chunks
  (``restore``). Both copiers run as the code's uid, so a fork's files are its own code's,
  exactly as if that code had written them. (Python's ``tarfile`` did the same 5-10x slower.)
- **A writable container root** (Docker with ``read_only`` off, e.g. a repository at ``/testbed``):
  ``docker commit`` (the container paused for the moment) into an untagged image from which the
  forks' containers start (:mod:`.commit`, the Docker backend's half of forking).

Forks get the parent's image and limits, and fresh processes (a supervisor, a new Python session: no
variables, no background jobs); each has its own copy of everything, shared with no one. Started
anew, a fork is no pool's: closing it destroys it. Taken from a warm pool (``fork(n, pool=...)``),
which spares the container starts, it goes back there when closed and is wiped like any sandbox:
the files it was given count as written by its code, so the wipe removes them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from agentgym.errors import SandboxError
from agentgym.sandboxes.lending import Lease

if TYPE_CHECKING:
    from agentgym.sandboxes.pool import SandboxProvider
    from agentgym.sandboxes.supervised import SupervisedSandbox

log = logging.getLogger(__name__)

CHUNK_BYTES = 8 << 20  # of the stream per request: bounds the supervisor's memory, whatever the files weigh
COPY_TIMEOUT = 120.0  # seconds for one chunk's round trip (a slow disk, a loaded machine)


StartLike = Callable[[int], Awaitable[list["SupervisedSandbox"]]]


async def fork(parent: SupervisedSandbox, n: int, start_like: StartLike) -> list[SupervisedSandbox]:
    """``n`` new sandboxes holding copies of ``parent``'s files; ``start_like(n)`` starts them empty.

    The snapshot is read while the new sandboxes start. Nothing is left behind on failure: every
    fork started is destroyed and the parent is as it was.

    Raises:
        ValueError: ``n`` is below 1.
        SandboxError: The parent is closed or dead, a fork could not be started, or the files could
            not be copied (the message says why).
    """
    if n < 1:
        raise ValueError(f"a sandbox forks into at least 1 sandbox, not {n}")
    if not parent.connected:
        raise SandboxError(f"sandbox {parent.id} is closed or gone; it cannot be forked")
    # The engine's copy (a commit) is taken inside start_like, while the supervisor streams the tmpfs.
    snapshot, started = await asyncio.gather(snapshot_of(parent), start_like(n), return_exceptions=True)
    forks = started if isinstance(started, list) else []
    try:
        if isinstance(snapshot, BaseException):
            raise snapshot
        if isinstance(started, BaseException):
            raise started
        await asyncio.gather(*(restore(f, snapshot) for f in forks))
    except BaseException:
        await asyncio.gather(*(f.destroy() for f in forks), return_exceptions=True)
        raise
    return forks


async def snapshot_of(sandbox: SupervisedSandbox) -> list[str]:
    """The stream of every place code can write in ``sandbox``, as base64 chunks (sent on as they are).

    Raises:
        SandboxError: The copy failed; the message says why.
    """
    chunks: list[str] = []
    first = True
    try:
        while True:
            reply = await sandbox._call("snapshot", COPY_TIMEOUT, first=first, size=CHUNK_BYTES, timeout=COPY_TIMEOUT)
            first = False
            chunks.append(reply["data"])
            if reply["done"]:
                return chunks
    except OSError as e:  # e.g. no process left for the copier
        raise SandboxError(f"could not copy the files of sandbox {sandbox.id}: {e}") from e


async def restore(sandbox: SupervisedSandbox, chunks: list[str]) -> None:
    """Unpack a snapshot into ``sandbox``'s own writable places.

    Raises:
        SandboxError: The files could not be restored; the message says why.
    """
    try:
        for i, data in enumerate(chunks):
            await sandbox._call("restore", COPY_TIMEOUT, data=data, first=i == 0, last=i == len(chunks) - 1,
                                timeout=COPY_TIMEOUT)
    except OSError as e:
        raise SandboxError(f"could not restore the files in sandbox {sandbox.id}: {e}") from e


async def take_from(pool: SandboxProvider, parent: SupervisedSandbox, n: int) -> list[SupervisedSandbox]:
    """``n`` sandboxes from ``pool`` to fork ``parent`` into, checked to be of its kind and limits."""
    if parent.limits.writable_root:
        raise ValueError("a sandbox with a writable root forks from a commit of it: fork it without a pool")
    forks = await start_all(n, pool.acquire)  # type: ignore[arg-type]
    lent = [f.held if isinstance(f, Lease) else f for f in forks]  # a pool's leases: the sandboxes they lend
    wrong = [f for f in lent if type(f) is not type(parent) or f.limits != parent.limits]
    if wrong:
        await asyncio.gather(*(f.destroy() for f in forks))
        raise ValueError(f"the pool gives {type(wrong[0]).__name__} sandboxes with {wrong[0].limits!r}, "
                         f"not {type(parent).__name__} sandboxes with {parent.limits!r} like the one forked")
    return forks


async def start_all(n: int, start_one: Callable[[], Awaitable[SupervisedSandbox]]) -> list[SupervisedSandbox]:
    """``n`` sandboxes from ``start_one``, started together; if any fails, the others are destroyed."""
    results = await asyncio.gather(*(start_one() for _ in range(n)), return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        await asyncio.gather(*(r.destroy() for r in results if not isinstance(r, BaseException)))
        raise failures[0]
    return list(results)  # type: ignore[arg-type]
