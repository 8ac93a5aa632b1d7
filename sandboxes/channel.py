"""The Docker backend's direct data path: a unix socket in a bind-mounted directory, bypassing dockerd.

Over the attach stream every request and reply is copied through dockerd and the container's shim
(about as much CPU as the supervisor itself spends). With a local engine we instead make a fresh, empty
host directory per sandbox, mount it read-only at :data:`MOUNT` in the container and listen on
``supervisor.sock`` in it before the container starts; the supervisor connects as its first act, before it
starts anything that could run user code, and the kernel carries the frames from then on.

Untrusted code gains nothing: the host accepts exactly one connection, checks that it comes from a
process in the sandbox's own container (its cgroup names the container), then closes the listener
and unlinks the socket, all before it sends the first request, so no user code exists while there
is anything to connect to. The directory is mode 0700 (0711 when agentgym is not root, so the
container's root can reach the socket), read-only inside the container, and empty after startup.
It is removed with the container; :func:`remove_stale` removes those whose owner died.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import socket
import struct
import tempfile
import time
from typing import Any

from agentgym.errors import SandboxError
from agentgym.sandboxes import engine
from agentgym.sandboxes.hosts import Endpoint

MOUNT = "/run/agentgym"  # where the directory appears inside the container
SOCKET_NAME = "supervisor.sock"
PREFIX = "agentgym-docker-"
LABEL = f"{engine.LABEL}.rundir"  # on the container: which directory is its own
STALE_SECONDS = 60  # a directory no container names is left alone this long (it may be mid-creation)


def usable(endpoint: Endpoint | None = None) -> bool:
    """Whether the engine shares this machine's filesystem: a local unix-socket engine, not tcp:// or ssh://."""
    return str(engine.client(endpoint).api.base_url) == "http+docker://localhost"  # docker-py's name for a unix socket


class Listener:
    """The host end, made before the container: a fresh directory with a listening socket in it."""

    def __init__(self) -> None:
        pid = os.getpid()
        self.dir = tempfile.mkdtemp(prefix=f"{PREFIX}{pid}.{engine.process_start(pid)}-")
        self.path = os.path.join(self.dir, SOCKET_NAME)
        self._sock: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.bind(self.path)
            if os.geteuid() != 0:  # the container's root has no CAP_DAC_OVERRIDE: it needs the bits
                os.chmod(self.dir, 0o711)
                os.chmod(self.path, 0o666)
            self._sock.listen(2)
            self._sock.setblocking(False)
        except OSError:
            self.close()
            remove_dir(self.dir)
            raise

    async def accept(self, container_id: str, lost: asyncio.Future[None],
                     seconds: float) -> tuple[socket.socket, socket.socket]:
        """The supervisor's two connections (requests, then the socket it sends its Python session's pipes on), once;
        then nothing is left to connect to.

        Raises:
            SandboxError: The supervisor exited first (``lost`` finished), did not connect within
                ``seconds``, or a peer is not a process of ``container_id``.
        """
        assert self._sock is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        conns: list[socket.socket] = []
        try:
            for _ in range(2):
                conn = await self._accept_one(lost, deadline - loop.time())
                conns.append(conn)
                if not from_container(conn, container_id):
                    raise SandboxError(f"a process outside container {container_id[:12]} connected to its socket")
                conn.setblocking(False)
        except BaseException:
            for conn in conns:
                conn.close()
            raise
        finally:
            self.close()
        return conns[0], conns[1]

    async def _accept_one(self, lost: asyncio.Future[None], seconds: float) -> socket.socket:
        assert self._sock is not None
        accepting = asyncio.ensure_future(asyncio.get_running_loop().sock_accept(self._sock))
        try:
            waiting: list[asyncio.Future[Any]] = [accepting, lost]
            await asyncio.wait(waiting, timeout=max(seconds, 0.0), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not accepting.done():
                accepting.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await accepting
        if accepting.cancelled() or accepting.exception() is not None:
            raise SandboxError(f"the supervisor did not connect to {MOUNT}/{SOCKET_NAME}")
        conn: socket.socket = accepting.result()[0]
        return conn

    def close(self) -> None:
        """Stop listening and unlink the socket: the directory is left empty."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def from_container(conn: socket.socket, container_id: str) -> bool:
    """Whether the peer of ``conn`` is a process in ``container_id`` (by its cgroup)."""
    pid, _, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    try:
        with open(f"/proc/{pid}/cgroup", encoding="ascii", errors="replace") as f:
            return pid > 0 and container_id in f.read()
    except OSError:
        return False


def remove_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def remove_stale(in_use: set[str]) -> list[str]:
    """Remove our directories that are old, that no container in ``in_use`` names and whose owner is gone; return them.

    The owner (pid and start time, in the name) keeps a directory whose container runs on an
    engine ``in_use`` was not gathered from: a process may have sandboxes on several local engines.
    """
    removed = []
    for path in glob.glob(os.path.join(tempfile.gettempdir(), PREFIX + "*")):
        try:
            if path in in_use or time.time() - os.stat(path).st_mtime < STALE_SECONDS or _owner_alive(path):
                continue
        except FileNotFoundError:
            continue
        remove_dir(path)
        removed.append(path)
    return removed


def _owner_alive(path: str) -> bool:
    """Whether the process named in a directory's name (``PREFIX<pid>.<start>-...``) still runs."""
    owner = os.path.basename(path)[len(PREFIX):].split("-", 1)[0]
    pid, _, start = owner.partition(".")
    if not pid.isdigit() or not start:
        return False  # a name from before owners were recorded: the containers alone decide
    return engine.process_start(int(pid)) == start
