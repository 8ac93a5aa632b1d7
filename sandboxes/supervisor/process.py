"""Processes and descriptors: killing a process group, exit statuses as a shell reports them,
closing every descriptor but a few.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal


def kill_group(pgid: int) -> None:
    """SIGKILL a process group. One signal is enough: the kernel lets no fork in the group escape it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def exit_status(returncode: int) -> int:
    """A shell-style exit code: 128 + signal for a process killed by a signal."""
    return 128 - returncode if returncode < 0 else returncode


def returncode(status: int) -> int:
    """A wait status as ``subprocess`` reports it: the exit code, or minus the signal."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def close_all_but(keep: set[int]) -> None:
    """Close every file descriptor not in ``keep``."""
    top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = top if 0 < top < 1 << 20 else 1 << 16
    low = 0
    for fd in [*sorted(keep), top]:
        if fd > low:  # closerange(n, n) would close everything from n up
            os.closerange(low, fd)
        low = fd + 1


def quiet_stdio(keep: int = 2) -> None:
    """Let go of the host's request stream (only the supervisor may hold it, so that its end is seen at once)
    and of every other descriptor but stderr and ``keep``."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    close_all_but({0, 1, 2, keep})
