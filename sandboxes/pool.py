"""Warm pools of Python sandboxes, which lend a ready one in about a millisecond.

A :class:`SandboxPool` is :mod:`~agentgym.sandboxes.lending`'s pool with a backend's start and a
recycler: a sandbox given back (``close()``) is wiped in the background (:class:`Wipe`) while the
next episode starts; one that cannot be wiped is destroyed, and the pool starts another.

Shared pools belong to a :class:`~agentgym.sandboxes.runtime.SandboxRuntime`, keyed by backend, image,
limits and purpose: verifiers draw from pools of their own (``acquire(..., verifier=True)``, or a role
name), so a sandbox that held hidden tests is never lent to a model's session afterwards.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Sequence
from typing import Any, Protocol, cast

from agentgym.sandboxes.backends import resolve_backend, start
from agentgym.sandboxes.contract import ExecResult, Limits, PythonResult, Sandbox
from agentgym.sandboxes.hosts import Endpoint, EndpointsFull, add_holder
from agentgym.sandboxes.lending import RETRY_SECONDS, Lease, Pool, Recycler
from agentgym.sandboxes.runtime import SandboxRuntime, current
from agentgym.sandboxes.supervised import SupervisedSandbox

MAX_SHARED_SANDBOXES = 64  # a shared pool's ceiling: 32 sessions at once and their spares
PARALLEL_STARTS = 4

SHARED = "shared sandbox pools"  # their kind in a runtime, keyed by backend, image, limits, purpose (False: models)


class Wipe(Recycler[SupervisedSandbox]):
    """The supervisor's wipe (:meth:`SupervisedSandbox.wipe`), while the next episode starts."""

    async def recycle(self, item: SupervisedSandbox, record: object) -> str | None:
        return await item.wipe()


class Keep(Recycler[SupervisedSandbox]):
    """Take the sandbox back as it is: only for borrowers that all run the same trusted code (graders)."""

    background = False


class SandboxLease(Lease[SupervisedSandbox]):
    """A lent Python sandbox, a :class:`~agentgym.sandboxes.contract.Sandbox` until ``close()`` (given back)
    or ``destroy()``; every call raises afterwards. Other attributes are read through while lent."""

    def __init__(self, pool: Pool[SupervisedSandbox], item: SupervisedSandbox, reused: bool) -> None:
        super().__init__(pool, item, reused)
        self.id = item.id
        self.limits = item.limits

    def __repr__(self) -> str:
        return f"<SandboxLease {self.id} {'lent' if self.active else 'given back'}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_pool", "_item"):
            raise AttributeError(name)
        return getattr(self.held, name)

    @property
    def connected(self) -> bool:
        return self.active and self._item.connected

    async def exec(self, cmd: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        return await self.held.exec(cmd, timeout=timeout, cwd=cwd)

    async def run_python(self, code: str, *, timeout: float | None = None) -> PythonResult:
        return await self.held.run_python(code, timeout=timeout)

    async def read_file(self, path: str) -> bytes:
        return await self.held.read_file(path)

    async def write_file(self, path: str, data: bytes | str) -> None:
        await self.held.write_file(path, data)

    async def fork(self, n: int = 1, *, pool: SandboxProvider | None = None) -> Sequence[Sandbox]:
        return await self.held.fork(n, pool=pool)

    async def is_alive(self) -> bool:
        return self.active and await self._item.is_alive()

    async def close(self) -> None:
        await self.release(reusable=True)

    async def destroy(self) -> None:
        await self.release(reusable=False)

    async def __aenter__(self) -> SandboxLease:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class SandboxPool(Pool[SupervisedSandbox]):
    """Python sandboxes of one kind kept ready and lent as :class:`SandboxLease`-s, with no ping (a dead
    supervisor would have closed its stream); an env's provider: ``Env(sandbox_backend=SandboxPool("docker"))``.

    Args:
        backend: ``"docker"``, ``"local"`` or ``"auto"``.
        image: Recipe name or image reference (Docker only; the local backend uses the host's python).
        limits: Limits for every sandbox of the pool.
        size: Sandboxes to keep, lent ones included (:class:`~agentgym.sandboxes.lending.Pool`'s sizing).
        max_size: The most ``size`` may grow to (default ``size``).
        recycler: What is done with a closed sandbox (default :class:`Wipe`, and reuse; :class:`Keep`;
            :class:`~agentgym.sandboxes.lending.Destroy` after a single use).
        hosts: Docker endpoints to spread sandboxes over (default: :mod:`~agentgym.sandboxes.hosts`' configured ones).
    """

    expected_failures = (EndpointsFull,)

    def __init__(
        self, backend: str = "auto", image: str = "python", limits: Limits | None = None, size: int = 2,
        *, max_size: int | None = None, recycler: Recycler[SupervisedSandbox] | None = None,
        hosts: Sequence[Endpoint] | None = None,
    ) -> None:
        self.backend = backend
        self.image = image
        self.limits = limits or Limits()
        self.hosts = tuple(hosts) if hosts is not None else None
        self._loop: asyncio.AbstractEventLoop | None = None  # where its sandboxes live, once known
        self._gate = asyncio.Semaphore(PARALLEL_STARTS)
        super().__init__(self._start_sandbox, recycler or Wipe(), size=size, max_size=max_size,
                         wall_seconds=self.limits.wall_seconds, kind=f"{backend} {image} sandbox", lease=SandboxLease)
        add_holder(self)

    async def acquire(self) -> SandboxLease:  # type: ignore[override]  # its leases are SandboxLease-s
        return cast(SandboxLease, await super().acquire())

    def reclaim(self, endpoints: Sequence[Endpoint]) -> bool:
        """Destroy a ready spare on one of ``endpoints`` (all full for a caller; this loop's only), refilling
        only after a pause (the caller needs its place); whether there was one."""
        if self._loop is not asyncio.get_running_loop():
            return False
        spare = next((s for s in self._ready if getattr(s, "endpoint", None) in endpoints), None)
        if spare is not None:
            self._ready.remove(spare)
            self._forget(spare)
            self._backoff_until = time.monotonic() + RETRY_SECONDS
            self._spawn(spare.destroy())
        return spare is not None

    async def _start_sandbox(self, *, spare: bool = False) -> SupervisedSandbox:
        self._loop = asyncio.get_running_loop()
        self.backend = await resolve_backend(self.backend)
        self.kind = f"{self.backend} {self.image} sandbox"
        async with self._gate:
            return await start(self.backend, self.image, self.limits, self.hosts, spare=spare)


class SandboxProvider(Protocol):
    """Anything that hands out sandboxes, like :class:`SandboxPool`: what ``Env(sandbox_backend=...)`` accepts."""

    async def acquire(self) -> Sandbox: ...


async def acquire(
    backend: str | SandboxProvider = "auto", *, image: str = "python", limits: Limits | None = None,
    verifier: bool | str = False, runtime: SandboxRuntime | None = None,
) -> Sandbox:
    """A sandbox from the runtime's shared warm pool for ``(backend, image, limits)``.

    Args:
        backend: ``"auto"`` (Docker when an engine answers, else local with a warning),
            ``"docker"``, ``"local"``, or a provider with ``async acquire()`` such as a :class:`SandboxPool`.
        image: Recipe name (``"python"``) or image reference (``"python:3.12-slim"``).
        limits: Defaults to :class:`Limits()`.
        verifier: For a verifier, which puts hidden tests in the sandbox: it comes from (and goes back to)
            a pool kept for verifiers, or for the role a string names; from a provider, it is destroyed on
            close.
        runtime: Whose pools (default: :func:`~agentgym.sandboxes.runtime.current`).

    Raises:
        SandboxError: No sandbox could be created; the message says why.
    """
    if not isinstance(backend, str):
        sandbox = await backend.acquire()
        if verifier and isinstance(sandbox, Lease):
            sandbox.destroy_on_release = True
        return sandbox
    pool = await shared_pool(backend, image=image, limits=limits, verifier=verifier, runtime=runtime)
    return await pool.acquire()


@dataclasses.dataclass(frozen=True)
class SandboxSupply:
    """Where a live episode's verifier gets sandboxes (``Episode.sandboxes``) as its env does, with no handle
    on the env (whose tools and state are the model's): the env's backend, image and runtime."""

    backend: str | SandboxProvider
    image: str
    runtime: SandboxRuntime

    async def acquire(self, *, verifier: bool | str = True) -> Sandbox:
        """A sandbox of the env's image from the runtime's verifier pool; the caller closes it."""
        return await acquire(self.backend, image=self.image, verifier=verifier, runtime=self.runtime)

async def warm_up(
    backend: str = "auto", *, image: str = "python", limits: Limits | None = None, count: int = 1,
    verifier: bool | str = False, runtime: SandboxRuntime | None = None,
) -> None:
    """Have ``count`` sandboxes ready in the shared pool :func:`acquire` draws from (before a timed run, in
    its runtime), and wait for them; :class:`SandboxError` with why if one cannot start."""
    await (await shared_pool(backend, image=image, limits=limits, verifier=verifier, runtime=runtime)).warm(count)


async def shared_pool(
    backend: str = "auto", *, image: str = "python", limits: Limits | None = None, verifier: bool | str = False,
    runtime: SandboxRuntime | None = None, keep: bool = False,
) -> SandboxPool:
    """The runtime's pool :func:`acquire` draws from for these arguments, made if need be (``keep``: one whose
    closed sandboxes come back as they are, :class:`Keep`); :class:`SandboxError` for a closed runtime."""
    name = await resolve_backend(backend)
    limits = limits or Limits()
    return (runtime or current()).hold(
        SHARED, (name, image, limits, verifier, keep),
        lambda: SandboxPool(name, image, limits, size=0, max_size=MAX_SHARED_SANDBOXES,
                            recycler=Keep() if keep else None))


def shared_pools(runtime: SandboxRuntime | None = None) -> list[SandboxPool]:
    """The runtime's shared pools (those :func:`acquire` and :func:`warm_up` made); default :func:`current`."""
    return [p for p in (runtime or current()).held(SHARED) if isinstance(p, SandboxPool)]


async def shutdown_pools(runtime: SandboxRuntime | None = None) -> None:
    """Shut down the runtime's shared pools (default :func:`current`), destroying their spares."""
    await (runtime or current()).release(SHARED)
