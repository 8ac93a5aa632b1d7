"""What every backend shares: the :class:`~agentgym.sandboxes.base.Sandbox` methods, spoken to the agent.

A backend only starts the agent somewhere (a container, a bubblewrap jail), connects an
:class:`~agentgym.sandboxes.protocol.AgentClient` to it and says how to destroy it; the rest lives
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
from importlib import resources
from typing import Any

from agentgym.sandboxes.base import ExecResult, Limits, PythonResult
from agentgym.sandboxes.protocol import AgentClient

from agentgym.errors import SandboxError, SandboxTimeout

log = logging.getLogger(__name__)

# Host-side slack on top of a call's own timeout: the agent needs a moment to kill and drain.
GRACE_SECONDS = 5.0
PING_TIMEOUT = 2.0
STARTUP_TIMEOUT = 30.0


@functools.cache
def agent_source() -> str:
    """The in-sandbox agent's source, passed to ``python3 -c`` so no image needs it baked in."""
    return resources.files("agentgym.sandboxes.agent").joinpath("agent.py").read_text(encoding="utf-8")


def agent_config(
    limits: Limits, *, workdir: str, rlimits: dict[str, int], cpus: float | None = None,
    user: tuple[int, int] | None = None,
) -> dict[str, object]:
    """The agent's command-line config for ``limits``.

    ``cpus`` asks the agent to pin itself to that many cores, for backends with no CPU quota.
    ``user`` (uid, gid) is who code runs as, for backends that start the agent as root.
    """
    return {
        "output_bytes": limits.output_bytes,
        "exec_timeout": limits.exec_timeout,
        "wall_seconds": limits.wall_seconds,
        "workdir": workdir,
        "rlimits": rlimits,
        "cpus": cpus,
        "user": user,
    }


class AgentSandbox:
    """A sandbox whose agent answers on ``client``; the backend passes how to destroy it.

    Attributes:
        id: The backend's name for it (a container id, a process id).
        limits: What code inside may use.
    """

    def __init__(self, id: str, limits: Limits, client: AgentClient, destroy: Callable[[], None]) -> None:
        """
        Args:
            id: The backend's name for the sandbox.
            limits: What code inside may use.
            client: Connected to the sandbox's agent.
            destroy: Blocking; frees everything the sandbox holds. Must not refer to the sandbox
                object, since it also runs after the object is gone.
        """
        self.id = id
        self.limits = limits
        self.client = client
        self.started = time.monotonic()
        self._closed = False
        self._finalizer = weakref.finalize(self, _destroy_quietly, id, destroy)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"

    async def exec(
        self, cmd: str, *, timeout: float | None = None, cwd: str | None = None  # noqa: ASYNC109
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

    async def run_python(self, code: str, *, timeout: float | None = None) -> PythonResult:  # noqa: ASYNC109
        """Run ``code`` in the persistent Python session.

        Globals persist between calls. An uncaught exception comes back as ``error`` (its
        traceback) and the session lives on. When the code times out, or kills its own process
        (``os._exit``, out of memory, closed stdout), the session is restarted: ``restarted`` is
        set and earlier variables are gone.

        Raises:
            SandboxError: The sandbox died or is closed.
        """
        seconds = self._timeout(timeout)
        reply = await self._call("python", seconds, code=code, timeout=seconds)
        return PythonResult(
            output=reply["stdout"] + reply["stderr"], error=reply["error"], timed_out=reply["timed_out"],
            truncated=reply["truncated"], restarted=reply["restarted"],
        )

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
        """Whether the agent's stream is still open and usable, without asking it anything."""
        return not self._closed and self.client.broken is None and self.client.protocol.lost is None

    async def is_alive(self) -> bool:
        """Whether the agent answers a ping within two seconds; never raises."""
        if self._closed:
            return False
        try:
            await self.client.call("ping", PING_TIMEOUT)
        except (SandboxError, OSError):
            return False
        return True

    async def close(self) -> None:
        """Destroy the sandbox and everything in it; later calls do nothing."""
        if self._closed:
            return
        self._closed = True
        self.client.close()
        await asyncio.to_thread(self._finalizer)

    async def __aenter__(self) -> AgentSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- for backends
    async def _wait_ready(self) -> None:
        """Wait for the agent's first answer; destroy the sandbox and raise if it never comes."""
        try:
            await self.client.call("ping", STARTUP_TIMEOUT)
        except (SandboxError, OSError) as e:
            await self.close()
            raise SandboxError(f"sandbox {self.id} did not start: {e}") from e

    # ----------------------------------------------------------------- internals
    def _timeout(self, timeout: float | None) -> float:
        return self.limits.exec_timeout if timeout is None else timeout

    async def _call(self, op: str, seconds: float, **args: Any) -> dict[str, Any]:
        if self._closed:
            raise SandboxError(f"sandbox {self.id} is closed")
        try:
            return await self.client.call(op, seconds + GRACE_SECONDS, **args)
        except SandboxError as e:
            if isinstance(e, SandboxTimeout) or time.monotonic() - self.started < self.limits.wall_seconds:
                raise
            wall = self.limits.wall_seconds
            raise SandboxTimeout(f"sandbox {self.id} ran out of its {wall:g} s wall time") from e


def _destroy_quietly(sandbox_id: str, destroy: Callable[[], None]) -> None:
    try:
        destroy()
    except Exception as e:
        log.warning("could not destroy sandbox %s: %s", sandbox_id, e)
