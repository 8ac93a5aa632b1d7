"""SWE sandboxes: fresh containers of a task's image, and kept ones reused by resetting them to their base.

A SWE repository lives at ``/testbed`` in the container's own filesystem (``Limits.writable_root``),
so the agent's generic wipe, which checks every writable mount file by file, cannot vouch for it and a
pool would destroy it. Instead, when an episode ends its sandbox is reset here, in about the time of a
``git reset``, and reused only if every check passes (:class:`GitReset`, the recycler of their pools):

1. every process of the code's user is killed (``kill -9 -1`` as that user), and none is left;
2. ``/tmp``, ``/work`` (the code's ``$HOME``) and ``/dev/shm`` are emptied and hold what they held at start;
3. the repository goes back to the base commit: ``git reset --hard``, ``git clean`` of every
   untracked and ignored file that was not there when the container was fresh (git runs with no
   global config, hooks or fsmonitor, so nothing the model set up for git runs);
4. ``git status --ignored`` is what it was at start, and ``HEAD`` is the base commit;
5. what ``git reset`` does not put back is put back from the fresh record
   (:mod:`~agentgym.envs.swe.reset_inside`): git's index, ``ORIG_HEAD`` and every reflog under
   ``.git/logs`` (bytes and times), every tracked file's access and modification times; every SysV
   IPC object is removed (the sandbox wipe's own ``remove_ipc``); every tracked file and link is given a
   new inode, so which ones the episode changed or replaced does not show; every tracked entry's mode and
   extended attributes are put back and, with its link count and a folder's inode, must be as at start;
   and every entry under an ignored folder that was there at start has its type, size, mode and times,
   change time included (which no process can set back), as at start;
6. ``docker diff`` of the container, taken once the reset's git commands are done (while they run,
   git's lock files would show), shows nothing outside what it showed at start, the work tree under
   ``/testbed``, and git's index, ``ORIG_HEAD`` and reflogs: a change anywhere else (``.git/config``,
   hooks, objects, ``/var/tmp``, ``/etc``) means the sandbox is destroyed, not reused;
7. still no process of the code's user.

What a fresh container looked like (steps 3 to 6) is recorded when it starts, before any model acts.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentgym.errors import EnvError, SandboxError
from agentgym.sandboxes import Limits, Recycler, SupervisedSandbox, engine, start, supervisor_sources

from .tasks import REPO_DIR

log = logging.getLogger(__name__)

LIMITS = Limits(writable_root=True, memory_mb=2048, pids=256, disk_mb=1024, exec_timeout=60.0, output_bytes=1 << 20)
"""SWE sandboxes' limits: a writable root for ``/testbed``, room for a test suite; no network."""
GIT = "env GIT_CONFIG_GLOBAL=/dev/null git -c core.hooksPath=/dev/null -c core.fsmonitor=false"
"""git as the reset and the submission run it: no global config (``$HOME`` is the model's), no hook, no
fsmonitor: nothing the model could have set up runs (a repository config it changed is caught by the
``docker diff`` check, and the sandbox is destroyed)."""
_STATUS = f"env GIT_OPTIONAL_LOCKS=0 {GIT.removeprefix('env ')} status"
"""``git status`` that writes nothing (no index refresh): the index the reset put back stays as it is."""
SCRATCH = ("/tmp", "/work", "/dev/shm")
MAX_IDLE = 8  # reset sandboxes kept per image
RESET_TIMEOUT = 60.0
_GIT_OWN = ("/index", "/ORIG_HEAD", "/logs")  # what our own reset and `git status` write under .git
_INSIDE_SOURCE = (Path(__file__).parent / "reset_inside.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Fresh:
    """What a sandbox's image looks like when fresh: compared against after each reset."""

    status: str  # git status --porcelain --ignored
    scratch: str  # listing of the scratch directories
    diff: frozenset[str]  # docker diff paths
    record: str  # reset_inside's record (JSON): git's own files, tracked files' times, ignored paths' state
    ignored: list[list[Any]]  # the ignored paths' state, from the record


async def start_fresh(image: str, limits: Limits = LIMITS) -> SupervisedSandbox:
    """A new container of ``image``; the caller destroys it.

    Raises:
        EnvError: The container cannot be started (no Docker engine: SWE sandboxes are Docker only).
    """
    if not await asyncio.to_thread(engine.available):
        raise EnvError("the SWE env needs Docker: its repository lives at /testbed in a container's own "
                       "filesystem, which the local sandbox backend cannot give")
    try:
        return await start("docker", image, limits)
    except SandboxError as e:
        raise EnvError(f"could not start a SWE sandbox from {image}: {e}") from e


async def snapshot(sandbox: SupervisedSandbox) -> Fresh:
    """What a fresh sandbox looks like, before anyone touched it: what a reset must give back."""
    status = await run_checked(sandbox, f"{_STATUS} --porcelain --ignored", "git status")
    ignored = [line[3:] for line in status.splitlines() if line.startswith("!! ")]
    record = await _inside(sandbox, "record", json.dumps(ignored))
    scratch = await run_checked(sandbox, LIST_SCRATCH, "listing scratch directories")
    diff = frozenset(await asyncio.to_thread(engine.changed_paths, sandbox.id))
    return Fresh(status=status, scratch=scratch, diff=diff,
                 record=record, ignored=json.loads(record)["ignored"])


async def _inside(sandbox: SupervisedSandbox, command: str, *args: str, record: str | None = None) -> str:
    """Run :mod:`~agentgym.envs.swe.reset_inside` ``command`` in the sandbox; what it wrote (JSON).

    Its files go to a folder of their own in ``/tmp``, written anew each time (the model could have
    changed any it found) and removed after; Python runs isolated (``-I -S``: no site, no user site,
    no ``PYTHON*`` variables), so nothing the model left on a path is imported.
    """
    folder = f"/tmp/agentgym-reset-{secrets.token_hex(8)}"
    await sandbox.write_file(f"{folder}/reset_inside.py", _INSIDE_SOURCE)
    extra = list(args)
    if record is not None:
        await sandbox.write_file(f"{folder}/record.json", record)
        for name, source in supervisor_sources().items():  # the wipe's remove_ipc and what it imports
            await sandbox.write_file(f"{folder}/supervisor/{name}.py", source)
        extra = [f"{folder}/record.json", f"{folder}/out.json", f"{folder}/supervisor"]
    else:
        extra = [f"{folder}/out.json", *extra]
    quoted = " ".join(shlex.quote(a) for a in extra)
    try:
        await run_checked(sandbox, f"python3 -I -S {folder}/reset_inside.py {command} {REPO_DIR} {quoted}",
                          f"reset_inside {command}", cwd="/")
        return (await sandbox.read_file(f"{folder}/out.json")).decode()
    finally:
        await sandbox.exec(f"rm -rf {folder}", cwd="/", timeout=RESET_TIMEOUT)


LIST_SCRATCH = "find " + " ".join(SCRATCH) + " -mindepth 1 2>/dev/null | sort"
EMPTY_SCRATCH = "find " + " ".join(SCRATCH) + " -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null; true"
PROCESSES_LEFT = (
    "for d in /proc/[0-9]*; do [ \"${d#/proc/}\" = $$ ] && continue; "
    "grep -q \"^Uid:[[:space:]]*$(id -u)[[:space:]]\" $d/status 2>/dev/null && echo ${d#/proc/}; done; true"
)


async def run_checked(sandbox: SupervisedSandbox, cmd: str, what: str, *, cwd: str = REPO_DIR) -> str:
    """``cmd``'s stdout as the code's user; a failed or cut-off run is a ``SandboxError`` naming ``what``."""
    done = await sandbox.exec(cmd, cwd=cwd, timeout=RESET_TIMEOUT)
    if done.exit_code != 0 or done.truncated:
        raise SandboxError(f"{what} failed ({done.exit_code}): {done.output[-500:]}")
    return done.stdout


async def reset_to_base(sandbox: SupervisedSandbox, fresh: Fresh, base_commit: str) -> str | None:
    """Reset a used sandbox to its fresh state at ``base_commit``; None when every check passes, else why not."""
    try:
        await sandbox.exec("kill -9 -1 2>/dev/null; true", timeout=RESET_TIMEOUT)
        left = (await run_checked(sandbox, PROCESSES_LEFT, "listing processes", cwd="/")).split()
        if left:
            return f"processes survived the kill: {left[:5]}"
        return await _reset_and_check(sandbox, fresh, base_commit)
    except (SandboxError, OSError, ValueError) as e:
        return f"the reset failed: {e}"


async def _reset_and_check(sandbox: SupervisedSandbox, fresh: Fresh, base_commit: str) -> str | None:
    await sandbox.exec(EMPTY_SCRATCH, cwd="/", timeout=RESET_TIMEOUT)
    if await run_checked(sandbox, LIST_SCRATCH, "listing scratch directories", cwd="/") != fresh.scratch:
        return "files left in /tmp, /work or /dev/shm"
    kept = [line[3:] for line in fresh.status.splitlines() if line.startswith("!! ")]  # ignored at start
    keep = " ".join(f"-e {shlex.quote('/' + path)}" for path in kept)
    await run_checked(sandbox, f"{GIT} -c core.logAllRefUpdates=false reset -q --hard {shlex.quote(base_commit)} "
                               f"&& {GIT} clean -qffdx {keep}", "git reset")
    if await run_checked(sandbox, f"{_STATUS} --porcelain --ignored", "git status") != fresh.status:
        return "the repository differs from its fresh state after the reset"
    head = (await run_checked(sandbox, f"{GIT} rev-parse HEAD", "git rev-parse")).strip()
    if head != base_commit and not head.startswith(base_commit):
        return f"HEAD is {head}, not the base commit {base_commit}"
    after = json.loads(await _inside(sandbox, "restore", record=fresh.record))
    if after["ipc"]:
        return after["ipc"]
    if after["ignored"] != fresh.ignored:
        changed_ignored = sorted({e[0] for e in after["ignored"]} ^ {e[0] for e in fresh.ignored}
                                 | {a[0] for a, b in zip(after["ignored"], fresh.ignored, strict=False) if a != b})
        return f"an ignored path that was there at start changed: {changed_ignored[:5]}"
    changed_metadata = _changed_metadata(json.loads(fresh.record)["metadata"], after["metadata"])
    if changed_metadata:
        return ("modes, link counts, extended attributes or folders' inodes of tracked entries differ after the "
                f"reset: {changed_metadata}")
    # Only now, with every git command of the reset done: a lock file git holds would show in it.
    now = await asyncio.to_thread(engine.changed_paths, sandbox.id)
    changed = [p for p in now if p not in fresh.diff and not _expected(p)]
    if changed:
        return f"docker diff shows changes outside the work tree: {changed[:5]}"
    left = (await run_checked(sandbox, PROCESSES_LEFT, "listing processes", cwd="/")).split()
    return f"processes started during the reset: {left[:5]}" if left else None


def _changed_metadata(fresh: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """Tracked entries whose mode, link count, extended attributes or folder inode differ (a hard link
    made to a tracked file that survives the reset shows as its link count, a tracked folder the
    episode replaced by a copy as its inode), the first five."""
    return sorted(p for p in fresh.keys() | now.keys() if fresh.get(p) != now.get(p))[:5]


def _expected(path: str) -> bool:
    """A path a used and reset sandbox may differ in: the work tree, and what git itself writes in ``.git``."""
    if path == REPO_DIR or not path.startswith(REPO_DIR + "/"):
        return path == REPO_DIR
    git = REPO_DIR + "/.git"
    if path == git:
        return True
    if path.startswith(git + "/"):
        return path[len(git):].startswith(_GIT_OWN)
    return True


@dataclass(frozen=True)
class GitReset(Recycler[SupervisedSandbox]):
    """The SWE pools' recycler: a given-back container is reset to ``base_commit`` and checked against what
    it looked like fresh (:func:`reset_to_base`); one that fails a check is destroyed, with the reason.

    The episode waits for the verdict (not ``background``): its record says whether its container is
    kept, and why not.
    """

    base_commit: str
    background = False

    async def record(self, item: SupervisedSandbox) -> Fresh:
        return await snapshot(item)

    async def recycle(self, item: SupervisedSandbox, record: Fresh) -> str | None:
        return await reset_to_base(item, record, self.base_commit)

