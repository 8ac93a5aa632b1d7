"""The wipe's cleaner: run as the code's uid in the next session before it takes any code, it kills
every process of that uid, removes SysV IPC objects and deletes all that was not there at start.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import time

from .linux import IPC_RMID, PSEUDO_FS, libc, mountinfo
from .wire import READ_CHUNK


def writable_mounts() -> list[str]:
    """Mount points that are writable and hold files: where code could leave something."""
    found = set()
    for point, options, fstype, superblock in mountinfo():
        if "rw" in options and "ro" not in superblock and fstype not in PSEUDO_FS:
            found.add(point)
    return sorted(found)


def walk(root: str, seen: set[str], limit: int) -> bool:
    """Add every path under ``root`` (itself included) to ``seen``; False past ``limit`` entries.

    A path that is not there is not added: a mount point hidden under another mount is in the mount
    table but reachable by no one, code included, so it holds nothing to record."""
    stack = [root]
    while stack:
        path = stack.pop()
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        except OSError:
            mode = 0  # unreadable here: the wipe checks whether code could have written in it
        seen.add(path)
        if len(seen) > limit:
            return False
        try:
            if not stat.S_ISDIR(mode):
                continue
            with os.scandir(path) as entries:
                stack += [e.path for e in entries]
        except OSError:
            continue  # unreadable here: the wipe checks whether code could have written in it
    return True


def read_proc(path: str) -> bytes:
    """A /proc file's bytes (raw reads: no codec to look up in a freshly forked cleaner)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def field(status: bytes, name: bytes) -> bytes:
    """The first word of a ``Name:`` line of /proc/PID/status."""
    start = status.index(b"\n" + name + b":") + len(name) + 2
    return status[start : status.index(b"\n", start)].split()[0]


def processes_of(uid: int) -> tuple[list[int], list[int]]:
    """Processes whose real uid is ``uid``, other than this one: (live ones, zombies)."""
    me = os.getpid()
    live: list[int] = []
    zombies: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            status = read_proc(f"/proc/{entry}/status")
        except OSError:
            continue
        if int(field(status, b"Uid")) == uid:
            (zombies if field(status, b"State") in (b"Z", b"X") else live).append(int(entry))
    return live, zombies


def wait_for_exit(pids: list[int], deadline: float) -> None:
    """Until one of ``pids`` ends (each one's pidfd), or ``deadline``; no sleeping loop."""
    poller, fds = select.poll(), []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))  # type: ignore[attr-defined]
            except ProcessLookupError:
                return  # already gone
            except (AttributeError, OSError):  # Python < 3.9 or Linux < 5.3
                time.sleep(0.001)
                return
            poller.register(fds[-1], select.POLLIN)
        poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
    finally:
        for fd in fds:
            os.close(fd)


def kill_everything(uid: int, deadline: float) -> str | None:
    """Kill every process of ``uid`` (this one is ``uid`` already), wait until each is gone and reaped."""
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # every process we may signal but ourselves, forks in flight included
        live, zombies = processes_of(uid)
        if not live and not zombies:
            return None
        if time.monotonic() >= deadline:
            return f"processes survived: {(live + zombies)[:10]}"
        if live:
            wait_for_exit(live, deadline)
        else:  # dead, and their parents (init, the zygote: both root) reap them within microseconds
            time.sleep(0.0002)


def ipc_ids(table: str) -> list[int]:
    try:
        lines = read_proc("/proc/sysvipc/" + table).splitlines()[1:]
    except FileNotFoundError:
        return []  # no SysV IPC in this kernel
    return [int(line.split()[1]) for line in lines if line.strip()]


def remove_ipc() -> str | None:
    """Remove every SysV shared memory segment, message queue and semaphore set in the IPC namespace."""
    remove = {"shm": lambda i: libc().shmctl(i, IPC_RMID, None), "msg": lambda i: libc().msgctl(i, IPC_RMID, None),
              "sem": lambda i: libc().semctl(i, 0, IPC_RMID)}
    left = []
    for table, rm in remove.items():
        for ident in ipc_ids(table):
            rm(ident)
        left += [f"{table} {i}" for i in ipc_ids(table)]
    return f"IPC objects left: {left[:10]}" if left else None


def writable_by(st: os.stat_result, uid: int, gid: int) -> bool:
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IWUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IWGRP)
    return bool(st.st_mode & stat.S_IWOTH)


def remove_tree(path: str, st: os.stat_result, problems: list[str]) -> None:
    """Delete ``path`` and all under it, making our own directories searchable first.

    Walks down by changing directory, a level at a time, and names entries relative to where it is:
    code can build a tree deeper than a path can name (PATH_MAX) or than Python may recurse, by
    changing directory as it goes, and such a tree must not make the wipe fail. It holds no file
    descriptor per level either; the working directory is put back after. No process of the code's
    uid is left meanwhile that could swap a directory for a link.
    """
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(path)
        except OSError as e:
            problems.append(f"{path}: {e.strerror}")
        return
    parent, name = os.path.split(path)
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    below: list[str] = []  # the directories entered, from ``path`` down
    try:
        os.chdir(parent)
        enter(name)
        below.append(name)
        while below:
            child = None  # the first subdirectory; files before it are removed on the way
            with os.scandir(".") as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    os.unlink(entry.name)
            if child is not None:
                enter(child)
                below.append(child)
            else:  # empty now
                os.chdir("..")
                os.rmdir(below.pop())
    except OSError as e:
        problems.append(f"{path}: {e.strerror} ({len(below)} levels down)")
    finally:
        os.fchdir(here)
        os.close(here)


def enter(name: str) -> None:
    """Change into directory ``name``, first giving ourselves (its owner) the right to list, enter and empty it."""
    if os.lstat(name).st_mode & 0o700 != 0o700:
        os.chmod(name, 0o700)
    os.chdir(name)


def scrub(path: str, baseline: set[str], problems: list[str]) -> None:
    """Remove from directory ``path`` every entry that was not there at start, with all under it."""
    try:
        with os.scandir(path) as entries:
            children = [(e.path, e.stat(follow_symlinks=False)) for e in entries]
    except OSError as e:
        problems.append(f"{path}: cannot be checked ({e.strerror})")
        return
    for child, st in children:
        if child not in baseline:
            remove_tree(child, st, problems)


def clean(uid: int, writable: list[str], baseline: set[str], deadline: float) -> str | None:
    """Run in the cleaner, as the code's uid ``uid``: remove all it left; None when all is gone, else why not.

    ``writable`` are the directories the code's uid could write to at start; it cannot have made
    any other writable (it owns none of them, and none of their parents), so whatever it left is in them.
    """
    if os.getuid() != uid or os.geteuid() != uid:
        return "the cleaner is not the code's user"
    problems = [p for p in (kill_everything(uid, deadline), remove_ipc()) if p]
    found: list[str] = []
    for path in writable:
        scrub(path, baseline, found)
    problems += found[:10]
    return "; ".join(problems) or None
