"""Forking a sandbox: n new sandboxes that start from its current files, for branching an episode at a turn.

A sandbox's files live in two kinds of place, and each is copied the cheapest way that sees it:

- **What code can write that no image holds**: the tmpfs mounts (``/work``, ``/tmp``, ``/dev/shm``
  on Docker and under bubblewrap; the working directory of an unjailed local sandbox). Only
  processes inside the sandbox see them (``docker cp`` reads the container's layer, not its
  tmpfs), so the agent's copier streams them (``snapshot``: a length-prefixed JSON header per
  entry, then its bytes), read once, and each fork's copier makes them from the same chunks
  (``restore``). Both copiers run as the code's uid, so a fork's files are its own code's,
  exactly as if that code had written them. (Python's ``tarfile`` did the same 5-10x slower.)
- **A writable container root** (Docker with ``read_only`` off, e.g. a repository at ``/testbed``):
  ``docker commit`` (the container paused for the moment) into an untagged image labelled
  :data:`IMAGE_LABEL`, from which the forks' containers start. The image goes when the last
  container using it goes; one left by a process that died is removed by the reaper.

Forks get the parent's image and limits, and fresh processes (an agent, a new Python session: no
variables, no background jobs); each has its own copy of everything, shared with no one. Started
anew, a fork is no pool's: closing it destroys it. Taken from a warm pool (``fork(n, pool=...)``),
which spares the container starts, it goes back there when closed and is wiped like any sandbox:
the files it was given count as written by its code, so the wipe removes them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from agentgym.errors import SandboxError
from agentgym.sandboxes import engine

if TYPE_CHECKING:
    from agentgym.sandboxes.docker import DockerSandbox
    from agentgym.sandboxes.hosts import Endpoint
    from agentgym.sandboxes.pool import SandboxProvider
    from agentgym.sandboxes.sandbox import AgentSandbox

log = logging.getLogger(__name__)

CHUNK_BYTES = 8 << 20  # of the stream per request: bounds the agent's memory, whatever the files weigh
COPY_TIMEOUT = 120.0  # seconds for one chunk's round trip (a slow disk, a loaded machine)
IMAGE_LABEL = f"{engine.LABEL}.fork"  # on images committed for forks: the reaper's to remove once unused
RELEASE_SECONDS = 5.0  # how long the last fork's destroy waits for the engine to let go of the image


StartLike = Callable[[int], Awaitable[list["AgentSandbox"]]]


async def fork(parent: AgentSandbox, n: int, start_like: StartLike) -> list[AgentSandbox]:
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
    # The engine's copy (a commit) is taken inside start_like, while the agent streams the tmpfs.
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


async def snapshot_of(sandbox: AgentSandbox) -> list[str]:
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


async def restore(sandbox: AgentSandbox, chunks: list[str]) -> None:
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


async def take_from(pool: SandboxProvider, parent: AgentSandbox, n: int) -> list[AgentSandbox]:
    """``n`` sandboxes from ``pool`` to fork ``parent`` into, checked to be of its kind and limits."""
    if parent.limits.writable_root:
        raise ValueError("a sandbox with a writable root forks from a commit of it: fork it without a pool")
    forks = await start_all(n, pool.acquire)  # type: ignore[arg-type]
    wrong = [f for f in forks if type(f) is not type(parent) or f.limits != parent.limits]
    if wrong:
        await asyncio.gather(*(f.destroy() for f in forks))
        raise ValueError(f"the pool gives {type(wrong[0]).__name__} sandboxes with {wrong[0].limits!r}, "
                         f"not {type(parent).__name__} sandboxes with {parent.limits!r} like the one forked")
    return forks


async def start_all(n: int, start_one: Callable[[], Awaitable[AgentSandbox]]) -> list[AgentSandbox]:
    """``n`` sandboxes from ``start_one``, started together; if any fails, the others are destroyed."""
    results = await asyncio.gather(*(start_one() for _ in range(n)), return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures:
        await asyncio.gather(*(r.destroy() for r in results if not isinstance(r, BaseException)))
        raise failures[0]
    return list(results)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- Docker: the container's root
async def start_docker_forks(parent: DockerSandbox, n: int) -> list[AgentSandbox]:
    """``n`` containers like ``parent``: its image, or a commit of its writable root, and its limits."""
    from agentgym.sandboxes import docker

    endpoint = parent.endpoint
    image = await asyncio.to_thread(_image_for_forks, parent.id, endpoint)
    try:
        forks = await start_all(n, lambda: docker.start(image.ref, parent.limits, endpoint))
    finally:
        if image.committed:  # the forks' containers hold it now; without any, it goes at once
            await asyncio.to_thread(release_image, image.ref, endpoint)
    if image.committed:
        for sandbox in forks:
            sandbox._also_on_destroy(functools.partial(release_image, image.ref, endpoint))
    return forks


class _ForkImage(NamedTuple):
    ref: str
    committed: bool  # made for these forks: to be removed with the last of them


def _image_for_forks(container_id: str, endpoint: Endpoint) -> _ForkImage:
    """The parent's own image when its root is read-only (nothing there changes), else a commit of it."""
    import docker

    api = engine.client(endpoint).api
    try:
        info = api.inspect_container(container_id)
        if info["HostConfig"].get("ReadonlyRootfs"):
            return _ForkImage(info["Config"]["Image"], committed=False)
        # Labels are the container's plus ours; owner labels let the reaper tell a leaked image.
        label = [f"LABEL {IMAGE_LABEL}={container_id[:12]}"]
        try:
            committed = api.commit(container_id, changes=label, pause=True)  # frozen: one instant's files
        except docker.errors.APIError as e:
            if "freeze" not in str(e) and "pause" not in str(e):
                raise
            # A loaded engine can fail to freeze in time: copy while it runs, as the tmpfs copy does.
            committed = api.commit(container_id, changes=label, pause=False)
    except docker.errors.DockerException as e:
        raise SandboxError(f"could not copy the root of sandbox {container_id[:12]}: {e}") from e
    return _ForkImage(committed["Id"], committed=True)


def release_image(ref: str, endpoint: Endpoint) -> None:
    """Remove a fork image unless a live container still uses it, then its fork-image parents likewise.

    Called by each fork's destroy: the last one removes it. A container already removed can take a
    moment to let go of its image, so a conflict with no live user is retried for a few seconds.
    """
    import docker

    api = engine.client(endpoint).api
    deadline = time.monotonic() + RELEASE_SECONDS
    while ref:
        try:
            info = api.inspect_image(ref)
        except docker.errors.APIError:
            return  # gone, or being removed by another fork's destroy ("layer does not exist")
        if IMAGE_LABEL not in ((info.get("Config") or {}).get("Labels") or {}):
            return  # not ours (the base image under a chain of forks)
        try:
            api.remove_image(ref, noprune=False)
        except docker.errors.APIError as e:
            # Anything but a conflict: gone, or going. A conflict with no live user: let go in a moment.
            if e.status_code != 409 or _in_use(ref, endpoint) or time.monotonic() > deadline:
                return
            time.sleep(0.05)
            continue
        ref = info.get("Parent") or ""  # a fork of a fork: its base may now be unused too


def _in_use(ref: str, endpoint: Endpoint) -> bool:
    """Whether a container not on its way out runs ``ref`` or an image built on it (a fork of a fork)."""
    import docker

    try:
        containers = engine.client(endpoint).api.containers(all=True, filters={"ancestor": ref})
    except docker.errors.APIError:
        return True  # cannot tell: leave it to the last fork's destroy, or to the reaper
    return any(c.get("State") not in ("removing", "exited", "dead") for c in containers)


def leaked_images(
    *, everything: bool = False, labels: Mapping[str, str] | None = None, endpoint: Endpoint | None = None
) -> list[str]:
    """Ids of fork images whose owner process is gone (with ``everything``: all), that carry ``labels``."""
    wanted = [IMAGE_LABEL, *(f"{k}={v}" for k, v in (labels or {}).items())]
    images = engine.client(endpoint).api.images(all=True, filters={"label": wanted})
    return [i["Id"] for i in images if everything or not engine.owner_alive(i.get("Labels") or {})]


def remove_images(ids: list[str], endpoint: Endpoint | None = None) -> list[str]:
    """Remove those of the fork images ``ids`` that nothing uses; return their short ids."""
    import docker

    removed = []
    for image_id in ids:
        try:
            engine.client(endpoint).api.remove_image(image_id)
        except docker.errors.APIError:
            continue  # in use (a live fork, or a fork of it), or already gone
        removed.append(image_id.removeprefix("sha256:")[:12])
    if removed:
        log.warning("removed %d fork image(s): %s", len(removed), ", ".join(removed))
    return removed
