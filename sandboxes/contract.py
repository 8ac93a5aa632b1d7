"""The sandbox contract every backend meets: limits, results, and the :class:`Sandbox` protocol.

A sandbox runs untrusted code with no network, bounded CPU, memory, processes, disk, wall time and
output, and sees nothing of the host but what a task writes into it. Every backend starts the same
in-sandbox supervisor (the stdlib-only package ``supervisor/``) and speaks one framed protocol to it, so
every backend has the same semantics and passes the same conformance suite (``tests/sandboxes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict


class Limits(BaseModel):
    """What untrusted code may use. Every backend honours every field, each with its own tools.

    Attributes:
        cpus: CPU cores (a fraction is allowed). Docker: a CPU quota; local: pinned to
            ``ceil(cpus)`` cores, a different slice of the allowed cores for each sandbox in turn.
        memory_mb: Memory. Docker: the container's memory cgroup, files in its tmpfs included;
            local: address space per process (RLIMIT_AS).
        pids: Processes and threads at once. Docker: the pids cgroup; local: RLIMIT_NPROC on the
            sandbox's own uid (when agentgym runs as root; otherwise only timeouts bound them).
        disk_mb: Space for files the code writes: ``/tmp``, ``/dev/shm`` and the working
            directory are each a tmpfs of this size (on the local backend without bubblewrap or
            namespaces: an ordinary directory), and no single file may grow past it (RLIMIT_FSIZE).
        wall_seconds: Lifetime of the sandbox; after it the supervisor exits and the sandbox is removed.
        exec_timeout: Default time limit for one ``exec`` or ``run_python`` call.
        output_bytes: Output kept per call (stdout and stderr each); the rest is dropped and
            the result is marked ``truncated``.
        network: Allow network access (off by default). Docker: the default bridge network;
            local: the host's network (bubblewrap shares it instead of making an empty one).
        writable_root: Docker only: the container's root filesystem is writable (its own copy-on-write
            layer, which ``docker commit`` and ``docker diff`` see), for envs whose files must live
            outside the tmpfs mounts, e.g. a repository at ``/testbed`` (the SWE env). Such a sandbox
            cannot be wiped by the supervisor (its root holds too much to check), so a pool destroys it on
            close. The local backend refuses it.
    """

    model_config = ConfigDict(frozen=True)

    cpus: float = 1.0
    memory_mb: int = 512
    pids: int = 128
    disk_mb: int = 256
    wall_seconds: float = 1800.0
    exec_timeout: float = 30.0
    output_bytes: int = 65536
    network: bool = False
    writable_root: bool = False


class ExecResult(BaseModel):
    """The result of a shell command."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    truncated: bool = False

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class PythonResult(BaseModel):
    """The result of running code in the sandbox's persistent Python session.

    ``output`` is what the code printed (stdout then stderr); ``error`` is the traceback of an
    uncaught exception. ``restarted`` is true when the session had to be restarted (it timed out or
    died), so variables from earlier calls are gone.
    """

    output: str = ""
    error: str | None = None
    timed_out: bool = False
    truncated: bool = False
    restarted: bool = False


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run untrusted code. All methods are async; ``close`` is idempotent."""

    id: str
    limits: Limits

    async def exec(
        self, cmd: str, *, timeout: float | None = None, cwd: str | None = None
    ) -> ExecResult:
        """Run a shell command (``/bin/sh -c``) and wait for it, up to ``timeout`` seconds."""
        ...

    async def run_python(self, code: str, *, timeout: float | None = None) -> PythonResult:
        """Run code in the persistent Python session; state carries over between calls."""
        ...

    async def read_file(self, path: str) -> bytes:
        """Read a file inside the sandbox."""
        ...

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Write a file inside the sandbox, creating parent directories."""
        ...

    async def fork(self, n: int = 1) -> Sequence[Sandbox]:
        """``n`` new sandboxes that start from this one's current files (not its processes).

        Each is the caller's to close; none shares anything with this sandbox or the others.
        """
        ...

    async def is_alive(self) -> bool:
        """Whether the sandbox still answers; never raises."""
        ...

    async def close(self) -> None:
        """Stop and remove the sandbox; later calls do nothing."""
        ...
