"""The supervisor's entry: read the config, make the jail if asked, connect, start the zygote, then
answer request lines until the stream closes or the wall clock runs out.

The bootstrap (``agentgym.sandboxes.bootstrap.BOOTSTRAP``) runs this module as ``__main__`` after
installing the package's other modules from stdin.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import time

from .jail import jail
from .linux import PR_SET_NO_NEW_PRIVS, checked, libc, new_session_keyring
from .ops import Supervisor
from .wire import READ_CHUNK, message_line, write_all
from .zygote import Zygote


def connect(path: str) -> socket.socket:
    """The host's socket (Docker with a local engine), connected before anything else runs.

    The host accepts two connections (requests, then the lending socket of :meth:`Supervisor.op_session`)
    and unlinks the socket before its first request, so by the time any user code exists there is
    nothing left to connect to.
    """
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    channel.connect(path)
    return channel


def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    if config.get("jail"):
        jail(config["jail"])
        if config.get("probe"):  # the host only asked whether the jail can be made here
            return
    channel = connect(config["socket"]) if config.get("socket") else None
    lender = connect(config["socket"]) if channel else None  # the host accepts a second connection for it
    if config.get("lend_fd") is not None:
        lender = socket.socket(fileno=int(config["lend_fd"]))
    requests, replies = (channel.fileno(), channel.fileno()) if channel else (0, 1)
    supervisor = Supervisor(config)
    supervisor.lender = lender
    if supervisor.user:
        os.setgroups([])
    # No privilege gain through setuid files for anything started from here.
    checked(libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl")
    supervisor.keyrings = new_session_keyring()
    if supervisor.keyrings and supervisor.keyring_filter is None and supervisor.unwipeable is None:
        # Code could leave keys under its uid (its persistent keyring outlives it) that no wipe clears.
        supervisor.unwipeable = "code can use keyrings on " + os.uname().machine
    if config.get("cores"):  # no CPU quota on this backend: the nearest thing is a few cores of its own
        os.sched_setaffinity(0, config["cores"])
    os.makedirs(supervisor.workdir, exist_ok=True)
    if supervisor.user:  # root's, sticky and world-writable like /tmp: code owns nothing here it could mark
        os.chmod(supervisor.workdir, 0o1777)
    os.chdir(supervisor.workdir)
    supervisor.take_baseline()
    supervisor.zygote = Zygote(supervisor)  # before any request: its memory holds nothing a request brought
    try:
        supervisor.start_worker()
    except OSError:
        pass  # the first python call reports it
    pending = bytearray()
    try:
        while True:
            remaining = supervisor.deadline - time.monotonic()
            if remaining <= 0:
                break
            if not select.select([requests], [], [], remaining)[0]:
                continue
            chunk = os.read(requests, READ_CHUNK)  # under malloc's mmap threshold: no mmap per request
            if not chunk:
                break
            end = chunk.find(b"\n")  # only new bytes are searched: a 100 MB write_file stays linear
            while end >= 0:
                pending += chunk[:end]
                chunk = chunk[end + 1 :]
                if pending:
                    write_all(replies, answer(supervisor, bytes(pending)))
                pending.clear()
                end = chunk.find(b"\n")
            pending += chunk
    finally:
        supervisor.shutdown()


def answer(supervisor: Supervisor, line: bytes) -> bytes:
    try:
        req = json.loads(line)
    except ValueError as e:
        reply = {"id": None, "ok": False, "error": f"bad frame: {e}"}
    else:
        reply = supervisor.handle(req)
    return message_line(reply)


if __name__ == "__main__":
    main()
