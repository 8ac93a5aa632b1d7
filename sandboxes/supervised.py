"""What every backend shares: the :class:`~agentgym.sandboxes.contract.Sandbox` methods, spoken to the supervisor.

A backend only starts the supervisor somewhere (a container, a bubblewrap jail), connects an
:class:`~agentgym.sandboxes.client.SupervisorClient` to it and says how to destroy it; the rest lives
here, so both backends behave the same. The destroy function is held by a ``weakref.finalize``, so
a sandbox nobody closed is still destroyed when it is garbage-collected or when the interpreter
exits: the synchronous backstop behind ``close()``.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentgym.errors import SandboxError, SandboxTimeout
from agentgym.sandboxes import direct_session, fork
from agentgym.sandboxes.client import SupervisorClient
from agentgym.sandboxes.contract import ExecResult, Limits, PythonResult

if TYPE_CHECKING:
    import socket

    from agentgym.sandboxes.pool import SandboxProvider

log = logging.getLogger(__name__)

# Host-side slack on top of a call's own timeout: the supervisor needs a moment to kill and drain.
GRACE_SECONDS = 5.0
WALL_CLOCK_SLACK = 1.0
"""Seconds the supervisor's wall clock may lead ``started`` by: it starts counting before this object exists,
so a supervisor lost this close to the deadline ran out of wall time."""
PING_TIMEOUT = 2.0
STARTUP_TIMEOUT = 30.0
RECYCLE_TIMEOUT = 10.0

class SupervisedSandbox:
    """A sandbox whose supervisor answers on ``client``; the backend passes how to destroy it.

    Attributes:
        id: The backend's name for it (a container id, a process id).
        limits: What code inside may use.
    """

    recyclable = False
    """Whether :meth:`recycle` can wipe it: code runs as a uid of its own (so the supervisor can tell what
    that uid left) in private IPC and mount namespaces. Set by the backend."""

    def __init__(self, id: str, limits: Limits, client: SupervisorClient, destroy: Callable[[], None],
                 session_socket: socket.socket | None = None) -> None:
        """
        Args:
            id: The backend's name for the sandbox.
            limits: What code inside may use.
            client: Connected to the sandbox's supervisor.
            destroy: Blocking; frees everything the sandbox holds. Must not refer to the sandbox
                object, since it also runs after the object is gone.
            session_socket: The host's end of the socket the supervisor sends its Python session's pipes on (see
                :mod:`~agentgym.sandboxes.direct_session`); None where there is none (a remote engine's
                attach stream), and python calls then go through the supervisor.
        """
        self.id = id
        self.limits = limits
        self.client = client
        self.session_socket = session_socket
        self.started = time.monotonic()
        self._after_destroy: list[Callable[[], None]] = []  # run once it is destroyed (not referring to it)
        # Destroys the sandbox if this object is dropped unclosed: the synchronous backstop.
        self._finalizer = weakref.finalize(self, _destroy_quietly, id, destroy, self._after_destroy)
        self._closed = False
        self._session: direct_session.DirectSession | None = None
        self._cut_off = False  # a call on the direct session was cancelled: the next one starts a new session
        self._python_lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"

    async def exec(
        self, cmd: str, *, timeout: float | None = None, cwd: str | None = None
    ) -> ExecResult:
        """Run ``cmd`` with ``/bin/sh -c`` in the working directory (or ``cwd``).

        The command runs in its own process group; when ``timeout`` (default
        ``limits.exec_timeout``) runs out the whole group is killed and the result has
        ``timed_out`` set and exit code 124. A process killed by a signal gives 128 + signal.
        stdout and stderr each keep ``limits.output_bytes``; the rest is dropped and ``truncated``
        set. Background jobs that keep the output pipes open are killed when the shell exits;
        ones that redirect their output (``nohup srv >log 2>&1 &``) keep running.

        Raises:
            SandboxError: The sandbox died or is closed.
        """
        seconds = self._timeout(timeout)
        reply = await self._call("exec", seconds, cmd=cmd, timeout=seconds, cwd=cwd)
        return ExecResult(
            exit_code=reply["exit_code"], stdout=reply["stdout"], stderr=reply["stderr"],
            timed_out=reply["timed_out"], truncated=reply["truncated"],
        )

    async def run_python(self, code: str, *, timeout: float | None = None) -> PythonResult:
        """Run ``code`` in the persistent Python session.

        Globals persist between calls. An uncaught exception comes back as ``error`` (its
        traceback) and the session lives on. When the code times out, or kills its own process
        (``os._exit``, out of memory, closed stdout), the session is restarted: ``restarted`` is
        set and earlier variables are gone. A call cancelled by its caller leaves the session to be
        replaced where this process holds it directly (see :mod:`~agentgym.sandboxes.direct_session`): the next
        call runs in a new one (``restarted``).

        Raises:
            SandboxError: The sandbox died or is closed.
        """
        seconds = self._timeout(timeout)
        if self.session_socket is not None:
            return await self._run_direct(code, seconds)
        reply = await self._call("python", seconds, code=code, timeout=seconds)
        return PythonResult(
            output=reply["stdout"] + reply["stderr"], error=reply["error"], timed_out=reply["timed_out"],
            truncated=reply["truncated"], restarted=reply["restarted"],
        )

    async def _run_direct(self, code: str, seconds: float) -> PythonResult:
        """``run_python`` on the session's own pipes (:mod:`~agentgym.sandboxes.direct_session`), the supervisor asked
        only for a session and to restart one; the result is the same as through the supervisor."""
        async with self._python_lock:
            if self._closed:
                raise SandboxError(f"sandbox {self.id} is closed")
            fresh = False
            if self._session is None:
                # after a call cut off by its caller, the session may still be running that call's code
                fresh = self._cut_off
                _, failed = await self._borrow("cut off" if fresh else None, seconds)
                self._cut_off = False
                if failed is not None:
                    return PythonResult(output="", error=failed, timed_out=False, truncated=False, restarted=True)
            session = self._session
            assert session is not None
            try:
                ran = await session.run(code, seconds)
            except BaseException:  # cancelled: the next call gets a new session (its reply would be this one's)
                self._session, self._cut_off = None, True
                session.close()
                raise
            error = ran.error
            if ran.outcome != "done":
                self._session = None
                try:
                    note, failed = await self._borrow(ran.outcome, seconds)
                finally:
                    session.collect(ran)  # what it wrote before it was killed
                    session.close()
                error = ((error or "") + note if ran.outcome == "broken" else note) + (failed or "")
        return PythonResult(
            output=ran.out.text() + ran.err.text(), error=error, timed_out=ran.outcome == "timeout",
            truncated=ran.out.truncated or ran.err.truncated, restarted=ran.outcome != "done" or fresh,
        )

    async def _borrow(self, restart: str | None, seconds: float) -> tuple[str, str | None]:
        """Take the session's pipes from the supervisor, which first kills the current session when ``restart``
        says why; what a python call says of the restart, and why no session could be started."""
        assert self.session_socket is not None
        reply = await self._call("session", 0.0, restart=restart, timeout=seconds)
        if reply["failed"]:
            return reply["note"] or "", reply["failed"]
        try:
            self._session = self._take_session()
        except OSError as e:
            raise SandboxError(f"sandbox {self.id}: the supervisor sent no Python session: {e}") from e
        return reply["note"] or "", None

    def _take_session(self) -> direct_session.DirectSession:
        """The session the supervisor has just sent: its pipes wait on the session socket.

        Raises:
            OSError: They are not there.
        """
        assert self.session_socket is not None
        return direct_session.DirectSession(direct_session.receive(self.session_socket), self.limits.output_bytes)

    async def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` (relative paths start at the working directory).

        Raises:
            OSError: The file cannot be read (``FileNotFoundError``, ``IsADirectoryError``, ...).
        """
        reply = await self._call("read_file", self.limits.exec_timeout, path=path)
        return base64.b64decode(reply["data"])

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Write ``data`` (str is UTF-8 encoded) to ``path``, creating parent directories.

        Raises:
            OSError: The file cannot be written (e.g. the disk limit is reached: ENOSPC).
        """
        raw = data.encode("utf-8") if isinstance(data, str) else data
        encoded = base64.b64encode(raw).decode()
        await self._call("write_file", self.limits.exec_timeout, path=path, data=encoded)

    @property
    def connected(self) -> bool:
        """Whether the supervisor's stream is still open and usable, without asking it anything."""
        return not self._closed and self.client.broken is None and self.client.protocol.lost is None

    async def is_alive(self) -> bool:
        """Whether the supervisor answers a ping within two seconds; never raises."""
        if self._closed:
            return False
        try:
            await self.client.call("ping", PING_TIMEOUT)
        except (SandboxError, OSError):
            return False
        return True

    async def wipe(self) -> str | None:
        """Wipe this sandbox back to fresh, in place; None when it is, else why not (then destroy it).

        Fresh means what a new sandbox has, checked inside by the supervisor (its ``wipe`` op): no process
        of the code's user, no SysV IPC object, empty keyrings of that user, nothing in any writable
        mount but what was there at start, and a new Python session (forked from a warm parent, so
        the next call does not wait for an interpreter). Pools call it between borrowers
        (:class:`~agentgym.sandboxes.pool.Wipe`), who each hold a lease of their own.
        """
        if not self.recyclable:
            return f"{type(self).__name__} sandboxes cannot be wiped"
        if self._closed or self.client.broken is not None or self.client.protocol.lost is not None:
            return "its supervisor is gone"
        self._drop_session()  # the wipe ends the session; the next user borrows the new one
        try:
            wiped = await self.client.call("wipe", RECYCLE_TIMEOUT + GRACE_SECONDS, timeout=RECYCLE_TIMEOUT,
                                           lend=self.session_socket is not None)
            if wiped.get("lent"):
                # The new session was sent with the wipe's reply: the first call asks nothing more.
                self._session = self._take_session()
        except (SandboxError, OSError) as e:
            return f"the wipe failed: {e}"
        if not wiped["clean"]:
            log.warning("sandbox %s is not clean after a wipe, destroying it: %s", self.id, wiped["reason"])
            return f"not clean after a wipe: {wiped['reason']}"
        self._cut_off = False
        return None

    async def fork(self, n: int = 1, *, pool: SandboxProvider | None = None) -> list[SupervisedSandbox]:
        """``n`` new sandboxes that start from this one's current files, for branching an episode at a turn.

        Each fork has the same image and limits, a copy of every file code could have written (the
        working directory, ``/tmp``, ``/dev/shm``, a writable container root), and fresh processes: a
        new Python session, no background jobs. Forks share nothing with this sandbox or each other;
        each is the caller's to close. This sandbox keeps running; files that its code changes while
        the copy is taken may be copied either way. See :mod:`agentgym.sandboxes.fork`.

        Args:
            n: How many forks.
            pool: Take the forks' sandboxes from this pool (a :class:`SandboxPool` of this sandbox's
                image and limits) instead of starting new ones: warm, a fork costs the copy alone.
                Closed, they go back to it and are wiped like any other. Not for a writable root,
                whose forks start from a commit of it. Without it, forks are started anew and
                closing one destroys it.

        Raises:
            ValueError: ``n`` is below 1, or ``pool`` gives sandboxes of other limits or is used
                with a writable root.
            SandboxError: This sandbox is closed, a fork could not start, or the files could not be
                copied; no fork is left running.
        """
        start_like = self._start_like if pool is None else functools.partial(fork.take_from, pool, self)
        return await fork.fork(self, n, start_like)

    async def close(self) -> None:
        """Destroy the sandbox with everything in it; later calls do nothing. (A lent one's lease,
        :class:`~agentgym.sandboxes.pool.SandboxLease`, gives it back to its pool instead.)"""
        if not self._closed:
            await self.destroy()

    async def destroy(self) -> None:
        """Destroy the sandbox and everything in it, whether or not it was closed."""
        self._closed = True
        self._drop_session()
        if self.session_socket is not None:
            self.session_socket.close()
        self.client.close()
        await asyncio.to_thread(self._finalizer)

    async def __aenter__(self) -> SupervisedSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- for backends
    async def _start_like(self, n: int) -> list[SupervisedSandbox]:
        """``n`` fresh, empty sandboxes of this one's kind and limits: what :meth:`fork` fills."""
        raise SandboxError(f"{type(self).__name__} sandboxes cannot be forked")

    def _also_on_destroy(self, after: Callable[[], None]) -> None:
        """Run ``after`` (blocking, not referring to this object) once this sandbox is destroyed."""
        if self._finalizer.alive:
            self._after_destroy.append(after)
        else:
            after()

    async def _wait_ready(self) -> None:
        """Wait for the supervisor's first answer; destroy the sandbox and raise if it never comes."""
        try:
            await self.client.call("ping", STARTUP_TIMEOUT)
        except (SandboxError, OSError) as e:
            await self.close()
            raise SandboxError(f"sandbox {self.id} did not start: {e}") from e

    # ----------------------------------------------------------------- internals
    def _drop_session(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def _timeout(self, timeout: float | None) -> float:
        return self.limits.exec_timeout if timeout is None else timeout

    async def _call(self, op: str, seconds: float, **args: Any) -> dict[str, Any]:
        if self._closed:
            raise SandboxError(f"sandbox {self.id} is closed")
        try:
            return await self.client.call(op, seconds + GRACE_SECONDS, **args)
        except SandboxError as e:
            elapsed = time.monotonic() - self.started
            if isinstance(e, SandboxTimeout) or elapsed < self.limits.wall_seconds - WALL_CLOCK_SLACK:
                raise
            wall = self.limits.wall_seconds
            raise SandboxTimeout(f"sandbox {self.id} ran out of its {wall:g} s wall time") from e


def _destroy_quietly(sandbox_id: str, destroy: Callable[[], None], after: list[Callable[[], None]]) -> None:
    try:
        destroy()
    except Exception as e:
        log.warning("could not destroy sandbox %s: %s", sandbox_id, e)
    finally:
        for then in after:
            then()
