"""Terminal containers reused between episodes of one task (a GRPO group), reset and checked as the SWE env's are.

The agent's commands run as an unprivileged uid, so what an episode can change is the task's working
directory (made writable to all, ``/app``), the in-memory folders (``/tmp``, ``/work``, ``/dev/shm``) and
the few places any user may write; the verifier adds ``/tests`` and ``/logs`` and runs the tests as root.
When an episode ends, :class:`WorkdirReset` (the recycler of the terminal env's pools):

1. kills every process of the agent's uid (``kill -9 -1`` as that uid), and none may be left;
2. removes ``/tests`` and ``/logs`` (root's), empties the in-memory folders, which must list as at start;
3. empties the working directory and puts back, through the engine, the copy of it taken when the
   container was fresh (``docker cp``: owners, modes and times kept); its listing (type, mode, owner,
   size, time, link target and a hash of every file's bytes) must be as at start;
4. ``docker diff`` must show nothing outside what it showed at start and the working directory: a change
   anywhere else (``/etc``, ``/var/tmp``, a package the tests installed as root) means the container is
   destroyed, not reused;
5. no process of another uid may run that did not run at start (a daemon the tests left as root).

A container that fails a check is destroyed, and the episode records why (``info["sandbox_discarded"]``).
What a fresh container looks like is recorded when it starts, before any episode.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import posixpath
import shlex
import tarfile
from dataclasses import dataclass
from typing import Any

from agentgym.envs.swe.kept import (
    EMPTY_SCRATCH,
    LIST_SCRATCH,
    PROCESSES_LEFT,
    RESET_TIMEOUT,
    run_checked,
)
from agentgym.errors import SandboxError
from agentgym.sandboxes import CODE_USER, Endpoint, Recycler, SupervisedSandbox, engine

from .verifier import as_root, list_pids

MAX_WORKDIR_BYTES = 256 << 20
"""A working directory larger than this is not copied at start: its containers are destroyed, not reused."""
_NOT_AGENTS = list_pids(f'[ "$uid" != {CODE_USER[0]} ]')
"""The pids of every other uid than the agent's (root's: the supervisor, and whatever the tests left)."""


@dataclass(frozen=True)
class Fresh:
    """A fresh container: its working directory's archive and listing, scratch listing, diff and pids."""

    archive: bytes
    listing: tuple[tuple[Any, ...], ...]
    scratch: str
    diff: frozenset[str]
    pids: frozenset[str]


@dataclass(frozen=True)
class WorkdirReset(Recycler[SupervisedSandbox]):
    """The terminal pools' recycler: reset a given-back container to its fresh working directory and check it
    (see the module docstring); one that fails a check is destroyed, with the reason. The episode waits
    for the verdict, which its record says."""

    workdir: str
    background = False

    async def record(self, item: SupervisedSandbox) -> Fresh | None:
        if self.workdir == "/":
            return None
        archive = await asyncio.to_thread(_archive, item, self.workdir)
        pids = frozenset((await asyncio.to_thread(_as_root, item, _NOT_AGENTS)).split())
        return Fresh(archive=archive, listing=listing(archive) if archive else (),
                     scratch=await run_checked(item, LIST_SCRATCH, "listing scratch directories", cwd="/"),
                     diff=frozenset(await asyncio.to_thread(engine.changed_paths, item.id)), pids=pids)

    async def recycle(self, item: SupervisedSandbox, record: Fresh | None) -> str | None:
        if record is None:
            return "the task's working directory is /: the whole root is the agent's, so it is not reset"
        if not record.archive:
            return f"the working directory is over {MAX_WORKDIR_BYTES >> 20} MB: not copied at start"
        try:
            return await self._reset(item, record)
        except (SandboxError, OSError, ValueError, tarfile.TarError) as e:
            return f"the reset failed: {e}"

    async def _reset(self, item: SupervisedSandbox, fresh: Fresh) -> str | None:
        await item.exec("kill -9 -1 2>/dev/null; true", timeout=RESET_TIMEOUT)
        if left := (await run_checked(item, PROCESSES_LEFT, "listing processes", cwd="/")).split():
            return f"processes of the agent survived the kill: {left[:5]}"
        quoted = shlex.quote(self.workdir)
        await item.exec(f"{EMPTY_SCRATCH}; find {quoted} -mindepth 1 -delete 2>/dev/null; true",
                        cwd="/", timeout=RESET_TIMEOUT)  # as the agent's uid: what it made, even if private
        await asyncio.to_thread(_as_root, item, f"rm -rf /tests /logs; find {quoted} -mindepth 1 -delete; true")
        if await run_checked(item, LIST_SCRATCH, "listing scratch directories", cwd="/") != fresh.scratch:
            return "files left in /tmp, /work or /dev/shm"
        if (await asyncio.to_thread(_as_root, item, f"find {quoted} -mindepth 1 | head -5")).strip():
            return f"{self.workdir} could not be emptied"
        parent = posixpath.dirname(self.workdir.rstrip("/")) or "/"
        await asyncio.to_thread(lambda: engine.client(_endpoint(item)).api.put_archive(item.id, parent, fresh.archive))
        now = await asyncio.to_thread(_archive, item, self.workdir)
        if not now or listing(now) != fresh.listing:
            return f"{self.workdir} differs from its fresh state after the reset"
        inside = self.workdir.rstrip("/")
        changed = [p for p in await asyncio.to_thread(engine.changed_paths, item.id)
                   if p not in fresh.diff and p != inside and not p.startswith(inside + "/")]
        if changed:
            return f"docker diff shows changes outside {self.workdir}: {changed[:5]}"
        started = set((await asyncio.to_thread(_as_root, item, _NOT_AGENTS)).split()) - fresh.pids
        return f"processes started during the episode are left: {sorted(started)[:5]}" if started else None


def listing(archive: bytes) -> tuple[tuple[Any, ...], ...]:
    """Each entry of a ``docker cp`` archive: name, type, mode, owner, size, time, link target, bytes' hash.

    The working directory's own entry leaves its time out: putting its files back touches it."""
    entries = []
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            content = tar.extractfile(member) if member.isreg() else None
            digest = hashlib.sha256(content.read()).hexdigest() if content is not None else ""
            top = "/" not in member.name.rstrip("/")
            entries.append((member.name, member.type, member.mode, member.uid, member.gid, member.size,
                            None if top else member.mtime, member.linkname, digest))
    return tuple(sorted(entries))


def _archive(item: SupervisedSandbox, path: str) -> bytes:
    """``path`` as ``docker cp`` reads it, or empty when it is over :data:`MAX_WORKDIR_BYTES`."""
    stream, _ = engine.client(_endpoint(item)).api.get_archive(item.id, path)
    data = bytearray()
    for chunk in stream:
        data += chunk
        if len(data) > MAX_WORKDIR_BYTES:
            return b""
    return bytes(data)


def _as_root(item: SupervisedSandbox, command: str) -> str:
    code, said = as_root(item.id, _endpoint(item), command)
    if code != 0:
        raise SandboxError(f"{command[:60]!r} as root failed ({code}): {said[-300:]}")
    return said


def _endpoint(item: SupervisedSandbox) -> Endpoint | None:
    return getattr(item, "endpoint", None)
