"""Choosing a backend, and warm pools of Python sandboxes that lend a ready one in about a millisecond.

Creating a sandbox costs a container start or a jail start (docs/benchmarks.md); a :class:`SandboxPool`
pays that in the background so that ``acquire()`` only pops a ready one. It is the one pool type of
:mod:`~agentgym.sandboxes.lending` with a start function for a backend and a recycler: when the
caller ``close()``-s what it got, the sandbox is wiped back to fresh in the background (:class:`Wipe`)
and goes back to the pool; one that cannot be wiped is destroyed, and the pool makes a new one.

Shared pools belong to a :class:`~agentgym.sandboxes.runtime.SandboxRuntime` (the one opened around
the run, else the event loop's default) and are keyed by backend, image, limits and purpose, so every
env of a run shares them; a shared pool starts empty and goes with its runtime. Verifiers get
sandboxes from pools of their own (``acquire(..., verifier=True)``): a sandbox that held a task's
hidden tests is never lent to a model's session afterwards, only to later verifiers. A verifier
whose sandboxes play roles that must not mix names each role (``verifier="code-grader"``): each
role has a pool of its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any, Protocol

from agentgym.errors import SandboxError
from agentgym.sandboxes import backends, engine
from agentgym.sandboxes.contract import ExecResult, Limits, PythonResult, Sandbox
from agentgym.sandboxes.hosts import Endpoint, EndpointsFull, add_holder, configured
from agentgym.sandboxes.lending import Destroy, Lease, Pool, Recycler
from agentgym.sandboxes.runtime import SandboxRuntime, current
from agentgym.sandboxes.supervised import SupervisedSandbox

log = logging.getLogger(__name__)

MAX_SHARED_SANDBOXES = 64  # a shared pool's ceiling: 32 sessions at once and their spares
PARALLEL_STARTS = 4

SHARED = "shared sandbox pools"  # their kind in a runtime, keyed by backend, image, limits, purpose (False: models)


async def resolve_backend(backend: str) -> str:
    """``"docker"``, ``"local"``, or for ``"auto"`` Docker when a configured engine answers (checked once), else local.

    Raises:
        SandboxError: An unknown backend name.
    """
    if backend == "auto":
        if await asyncio.to_thread(_any_engine):
            return "docker"
        _warn_no_docker()
        return "local"
    backends.get(backend)  # raises for an unknown name
    return backend


async def start(
    backend: str, image: str, limits: Limits, hosts: Sequence[Endpoint] | None = None, *, spare: bool = False
) -> SupervisedSandbox:
    """Create one sandbox now, with no pool (``backend`` already resolved).

    A Docker sandbox goes to the least loaded of ``hosts`` (default: the configured endpoints); a
    ``spare`` only where there is room now (:class:`~agentgym.sandboxes.hosts.EndpointsFull` if none).

    A caller cancelled mid-start does not leak: the start finishes and its sandbox is closed.

    Raises:
        SandboxError: The sandbox could not be started, whatever the cause; the message says why.
    """
    creating = asyncio.ensure_future(backends.get(backend).start(image, limits, hosts, spare=spare))
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        creating.add_done_callback(_close_orphan)
        raise
    except SandboxError:
        raise
    except Exception as e:  # e.g. the engine's HTTP API timing out: still a sandbox failure, with its reason
        raise SandboxError(f"could not start a {backend} sandbox: {type(e).__name__}: {e}") from e


_orphans: set[asyncio.Future[None]] = set()
"""The closes of sandboxes whose start was cancelled, each kept until it ends (the event loop holds tasks
only weakly). No runtime's: such a start belongs to no pool (:func:`start` is called outside pools too),
and an entry leaves with its task, so there is nothing to close."""


def _close_orphan(creating: asyncio.Future[SupervisedSandbox]) -> None:
    if creating.cancelled() or creating.exception() is not None:
        return
    closing = asyncio.ensure_future(creating.result().close())
    _orphans.add(closing)
    closing.add_done_callback(_orphans.discard)


class Wipe:
    """The supervisor's wipe (:meth:`SupervisedSandbox.wipe`): every process, IPC object, keyring and file of
    the code's user removed, checked, and a new Python session forked; done while the next episode starts."""

    background = True
    reuses = True

    async def record(self, item: SupervisedSandbox) -> None:
        return None

    async def recycle(self, item: SupervisedSandbox, record: object) -> str | None:
        return await item.wipe()


class Keep:
    """Take the sandbox back as it is, for its next borrower, who may find what the last one left.

    Only for a pool whose borrowers all run the same trusted code: the code env's graders keep their
    grading server between verifications this way.
    """

    background = False
    reuses = True

    async def record(self, item: SupervisedSandbox) -> None:
        return None

    async def recycle(self, item: SupervisedSandbox, record: object) -> str | None:
        return None


class SandboxLease(Lease[SupervisedSandbox]):
    """A lent Python sandbox: the :class:`~agentgym.sandboxes.contract.Sandbox` of the one lent, until
    ``close()`` gives it back (wiped in the background) or ``destroy()`` has it destroyed.

    Whoever keeps the lease after that reaches nothing: every call raises. Anything else of the
    sandbox's (its backend's attributes) is read through, while lent.
    """

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

    @property
    def started(self) -> float:
        return self._item.started

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
        """Give the sandbox back to its pool (wiped for the next borrower); later calls do nothing."""
        await self.release(reusable=True)

    async def destroy(self) -> None:
        """Have the sandbox destroyed rather than reused."""
        await self.release(reusable=False)

    async def __aenter__(self) -> SandboxLease:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class SandboxPool(Pool[SupervisedSandbox]):
    """Keeps Python sandboxes of one kind ready and lends them as :class:`SandboxLease`-s.

    Usable as an env's ``sandbox_backend=`` provider: ``Env(sandbox_backend=SandboxPool("docker", size=8))``.
    Sizing, and what is done with a closed sandbox, are :class:`~agentgym.sandboxes.lending.Pool`'s.
    A hand-out does not wait for anything (no ping): the supervisor answered when it started, is idle
    since, and its death would have closed the stream.

    Args:
        backend: ``"docker"``, ``"local"`` or ``"auto"``.
        image: Recipe name or image reference (Docker only; the local backend uses the host's python).
        limits: Limits for every sandbox of the pool.
        size: Sandboxes to keep: the whole population (ready, lent, being wiped, starting).
        max_size: The most ``size`` may grow to, and the most sandboxes the pool keeps (default ``size``).
        recycle: Wipe and reuse closed sandboxes; ``False`` destroys each after a single use.
        recycler: What is done with a closed sandbox instead (:class:`Keep`); overrides ``recycle``.
        hosts: Docker endpoints to spread sandboxes over, each up to its capacity (default: the
            process's configured ones, see :mod:`~agentgym.sandboxes.hosts`).
    """

    def __init__(
        self, backend: str = "auto", image: str = "python", limits: Limits | None = None, size: int = 2,
        *, max_size: int | None = None, recycle: bool = True, recycler: Recycler[SupervisedSandbox] | None = None,
        hosts: Sequence[Endpoint] | None = None,
    ) -> None:
        self.backend = backend
        self.image = image
        self.limits = limits or Limits()
        self.hosts = tuple(hosts) if hosts is not None else None
        self._loop: asyncio.AbstractEventLoop | None = None  # where its sandboxes live, once known
        self._gate = asyncio.Semaphore(PARALLEL_STARTS)
        super().__init__(self._start_sandbox, recycler or (Wipe() if recycle else Destroy()), size=size,
                         max_size=max_size, wall_seconds=self.limits.wall_seconds, kind=f"{backend} sandbox",
                         lease=SandboxLease, expected_failures=(EndpointsFull,))
        add_holder(self)

    def __repr__(self) -> str:
        return f"<SandboxPool {self.backend} {self.image} ready={self.ready} size={self.size}>"

    async def acquire(self) -> SandboxLease:  # type: ignore[override]  # its leases are SandboxLease-s
        """A ready sandbox; the caller must ``close()`` it (it goes back, wiped).

        Raises:
            SandboxError: The pool is shut down, or no sandbox could be created (with the reason).
        """
        await self._resolve()
        lease = await super().acquire()
        assert isinstance(lease, SandboxLease)
        return lease

    async def fill(self) -> None:
        await self._resolve()
        await super().fill()

    def reclaim(self, endpoints: Sequence[Endpoint]) -> bool:
        """Destroy a ready spare on one of ``endpoints``, for a caller who found them all full; whether there was one.

        Only on this pool's own event loop. The pool then refills no sooner than a retry pause, and
        a spare it starts later only takes a place that is free.
        """
        if self._loop is not asyncio.get_running_loop():
            return False
        spare = self.take_ready(lambda s: getattr(s, "endpoint", None) in endpoints)
        if spare is not None:
            self._spawn(spare.destroy())
        return spare is not None

    async def _resolve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.backend = await resolve_backend(self.backend)
        self.kind = f"{self.backend} sandbox"

    async def _start_sandbox(self, *, spare: bool = False) -> SupervisedSandbox:
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
            ``"docker"``, ``"local"``, or any object with ``async acquire()`` such as a
            :class:`SandboxPool`.
        image: Recipe name (``"python"``) or image reference (``"python:3.12-slim"``).
        limits: Defaults to :class:`Limits()`.
        verifier: For a verifier, which puts what the model must not see (hidden tests) in the
            sandbox: it comes from a pool kept for verifiers, and once closed it is wiped and lent
            to later verifiers only, never to a model's session. From a provider object, such a
            sandbox is destroyed on close instead of going back. A string names a role among a
            verifier's sandboxes, with a pool of its own (they go back to that role only).
        runtime: Whose pools (default: :func:`~agentgym.sandboxes.runtime.current`).

    Raises:
        SandboxError: No sandbox could be created; the message says why.
    """
    if not isinstance(backend, str):
        sandbox = await backend.acquire()
        if verifier and isinstance(sandbox, Lease):
            sandbox.keep_out_of_pools()
        return sandbox
    pool = await shared_pool(backend, image=image, limits=limits, verifier=verifier, runtime=runtime)
    return await pool.acquire()


@dataclasses.dataclass(frozen=True)
class SandboxSupply:
    """Where a live episode's sandboxes come from: what its verifier gets (``Episode.sandboxes``) rather than the env.

    The env's backend and image and the runtime it draws from are enough to start sandboxes as the
    env does, so a verifier needs no handle on the env itself (whose tools and state are the model's).

    Attributes:
        backend: The env's ``sandbox_backend``: a backend name or a provider such as a ``SandboxPool``.
        image: The env's ``sandbox_image`` (``"python"`` for an env without one).
        runtime: The runtime the env's sandboxes come from.
    """

    backend: str | SandboxProvider
    image: str
    runtime: SandboxRuntime

    async def acquire(self, *, verifier: bool | str = True) -> Sandbox:
        """A sandbox of the env's image from the runtime's verifier pool (one a model is never lent
        afterwards; see :func:`~agentgym.sandboxes.pool.acquire`); the caller closes it."""
        return await acquire(self.backend, image=self.image, verifier=verifier, runtime=self.runtime)

async def warm_up(
    backend: str = "auto", *, image: str = "python", limits: Limits | None = None, count: int = 1,
    verifier: bool | str = False, runtime: SandboxRuntime | None = None,
) -> None:
    """Have ``count`` sandboxes ready in the shared pool that :func:`acquire` draws from, and wait for them.

    Call it before a timed or latency-sensitive run (an evaluation, a benchmark), inside the runtime
    that run uses, so that the first ``count`` acquires are warm too; ``verifier=True`` warms the
    verifiers' pool.

    Raises:
        SandboxError: A sandbox could not be started; the message says why.
    """
    pool = await shared_pool(backend, image=image, limits=limits, verifier=verifier, runtime=runtime)
    pool.size = max(pool.size, count)
    pool.max_size = max(pool.max_size, count)
    await pool.fill()


async def shared_pool(
    backend: str = "auto", *, image: str = "python", limits: Limits | None = None, verifier: bool | str = False,
    runtime: SandboxRuntime | None = None, keep: bool = False,
) -> SandboxPool:
    """The runtime's pool :func:`acquire` draws from for these arguments, made if need be; with ``keep``, a
    pool of its own whose closed sandboxes come back as they are (:class:`Keep`), for a verifier's role.

    Raises:
        SandboxError: An unknown backend name, or a closed runtime.
    """
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


def _any_engine() -> bool:
    """Whether one of the configured Docker endpoints answers."""
    return any(engine.available(endpoint) for endpoint in configured())


@functools.cache
def _warn_no_docker() -> None:
    log.warning("no Docker engine answers: sandboxes run on the local backend")
