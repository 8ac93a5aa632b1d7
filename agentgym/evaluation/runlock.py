"""One writer per run file: a lock beside the trajectories, held for as long as a run has them open.

Two runs on one ``--out`` (a ``--resume`` in a second terminal while the first still writes) would
both play the unfinished episodes, paying for them twice, and interleave their rows. So a run takes
an exclusive ``flock`` on ``<name>.run.lock`` before it reads or writes any of its files, and the
second run is refused with who holds it: the holder's pid, host and start time, which it writes
into the lock file.

The kernel drops a ``flock`` when its holder dies, however it dies (SIGKILL, a lost node), so a
lock file left by a dead run holds no lock: the next run takes it over and writes itself in. The
file is removed when the run ends; a run that found it removed under it (between its open and its
lock) opens it again, so two runs never hold locks on two different files of one name.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from agentgym.errors import DataError


def lock_path(out: Path) -> Path:
    """The lock file of the trajectories file ``out``: ``run.jsonl`` -> ``run.run.lock``."""
    return out.with_suffix(".run.lock")


class RunLock:
    """The exclusive lock of the run writing ``out``; :meth:`acquire` it before touching the run's files.

    Args:
        out: The trajectories file.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = lock_path(out)
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or say who has it.

        Raises:
            DataError: Another live process holds it (the message names its pid, host and start time),
                or the lock file cannot be made.
        """
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as e:
                raise DataError(f"cannot write {self.out}: its lock file {self.path.name}: {e.strerror or e}") from e
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise DataError(f"{self.out} is being written by another run ({_describe(holder)}); "
                                "wait for it to end, or choose another --out") from None
            if _same_file(fd, self.path):
                break
            os.close(fd)  # removed by its last holder between our open and our lock: open it again
        self._fd = fd
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        with contextlib.suppress(OSError):  # the lock is the flock; who holds it is for the message (a full disk)
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)

    def release(self) -> None:
        """Remove the lock file and drop the lock; safe to call when not held."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()  # while still held, so that no one locks the file being removed
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "a process that has not yet written its pid"
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, started {holder.get('started', '?')}"
