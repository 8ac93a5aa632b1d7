"""The jail a local sandbox without bubblewrap makes for itself: private namespaces, every host
mount read-only, tmpfs where code may write, and an init that reaps orphans.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from .linux import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    MOUNT_FLAGS,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    PSEUDO_FS,
    checked,
    libc,
    mount,
    mountinfo,
)
from .process import quiet_stdio, returncode


def jail(spec: dict[str, Any]) -> None:
    """Private namespaces for a local sandbox without bubblewrap (as root, or in a user namespace).

    Mount, IPC, UTS, pid and (without ``network``) network namespaces. Every mount becomes read-only,
    so the only places code can write are the fresh tmpfs mounted at ``/tmp``, ``/dev/shm`` and the
    working directory; the host's ``/tmp`` is out of sight, and a new ``/proc`` shows only the
    sandbox's processes. Returns in the supervisor, which is pid 2 under an init that reaps orphans.

    Raises:
        OSError: A namespace or mount could not be made (the host then runs without them).
    """
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | (0 if spec.get("network") else CLONE_NEWNET)
    checked(libc().unshare(flags | (CLONE_NEWUSER if uid != 0 else 0)), "unshare")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    for point, options, fstype, _ in mountinfo():
        if "rw" not in options or fstype in PSEUDO_FS or point == "/proc" or point.startswith("/proc/"):
            continue
        kept = sum(MOUNT_FLAGS.get(o, 0) for o in options)  # a user namespace may not drop these
        try:
            mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.ENOENT, errno.ESTALE):  # hidden or unreachable mounts
                raise
    tmpfs = f"size={int(spec['disk_mb'])}m,mode=1777"
    for point in ("/tmp", spec["workdir"], "/dev/shm"):
        if os.path.isdir(point):
            mount("tmpfs", point, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs)
    checked(libc().sethostname(b"sandbox", 7), "sethostname")
    become_init()
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def become_init() -> None:
    """Fork the new pid namespace's init, which forks the supervisor and reaps every orphan until it ends.

    The first process stays to report init's exit status; init's end kills all in the namespace.
    Returns only in the supervisor (pid 2).
    """
    init = os.fork()
    if init:
        quiet_stdio()
        os._exit(returncode(os.waitpid(init, 0)[1]) & 0xFF)
    supervisor = os.fork()
    if supervisor == 0:
        return
    quiet_stdio()
    while True:
        pid, status = os.wait()
        if pid == supervisor:
            os._exit(returncode(status) & 0xFF)
