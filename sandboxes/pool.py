"""Choosing a backend, and warm pools that hand out ready sandboxes in about a millisecond.

Creating a sandbox costs a container start or a jail start (docs/benchmarks.md); a pool pays that in
the background so that ``acquire()`` only pops a ready one. When the caller ``close()``-s what it got,
the sandbox is wiped back to fresh in the background (:meth:`SupervisedSandbox.recycle`: every process,
IPC object, keyring and file of the code's user removed, checked, and a new Python session forked)
and goes back to the pool; one that cannot be wiped is destroyed, and the pool makes a new one.

A recycling pool counts lent sandboxes as its own: ``size`` is the population it keeps (ready,
lent, being wiped or starting), and beyond those lent it keeps the spares that demand needs, so
that the caller who comes next gets a ready sandbox rather than waiting for the wipe of the one
just closed: one, plus as many as callers arrive while one wipe runs (the pool measures both, the
wipe's duration and the gap between acquires). A caller who finds none ready and none on its way
makes the pool keep one more (up to ``max_size``). A miss while a wipe is on its way does not: with
episodes shorter than a wipe, growing on every miss started containers whose starts slowed the
wipes, which caused more misses, up to the pool's ceiling.

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
import collections
import dataclasses
import functools
import logging
import math
import time
from collections.abc import Sequence
from typing import Protocol

from agentgym.errors import SandboxError
from agentgym.sandboxes import backends, engine
from agentgym.sandboxes.contract import Limits, Sandbox
from agentgym.sandboxes.hosts import Endpoint, EndpointsFull, add_holder, configured
from agentgym.sandboxes.runtime import SandboxRuntime, current
from agentgym.sandboxes.supervised import SupervisedSandbox
from agentgym.sandboxes.warm import RETRY_SECONDS, WarmPool

log = logging.getLogger(__name__)

MAX_SHARED_SANDBOXES = 64  # a shared pool's ceiling: 32 sessions at once and their spares
PARALLEL_STARTS = 4
WAIT_FOR_RETURN_SECONDS = 2.0  # how long a caller waits for a spare on its way before starting one
SMOOTHING = 0.2  # weight of the newest sample in the pool's running means (wipe duration, gap between acquires)

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


@dataclasses.dataclass(frozen=True)
class PoolCounts:
    """What a pool holds at one moment; ``population`` is the one count its sizing compares to ``size``."""

    ready: int  # started or wiped, waiting for a caller
    lent: int  # handed out by a recycling pool: they come back when closed
    wiping: int  # closed, on their way back
    starting: int  # spares being started
    cold: int  # started for a caller who found none ready: counted until lent, so a refill does not start its twin
    size: int
    max_size: int

    @property
    def population(self) -> int:
        return self.ready + self.lent + self.wiping + self.starting + self.cold


class SandboxPool(WarmPool[SupervisedSandbox]):
    """Keeps sandboxes of one kind ready and hands them out.

    Usable as an env's ``sandbox_backend=`` provider: ``Env(sandbox_backend=SandboxPool("docker", size=8))``.
    Spares older than half their wall time, or whose supervisor has gone (its stream closed), are
    thrown away rather than handed out, so callers get a live sandbox with most of its life ahead.
    A hand-out does not wait for anything (no ping): the supervisor answered when it started, is idle
    since, and its death would have closed the stream.

    Args:
        backend: ``"docker"``, ``"local"`` or ``"auto"``.
        image: Recipe name or image reference (Docker only; the local backend uses the host's python).
        limits: Limits for every sandbox of the pool.
        size: Sandboxes to keep: with ``recycle``, the whole population (ready, lent, being wiped,
            starting), at least the lent ones plus :meth:`spares`; without, spares ready beyond
            those lent. Grows by one each time a caller finds none ready (with ``recycle``: and
            none on its way back from a wipe).
        max_size: The most ``size`` may grow to, and the most sandboxes a recycling pool keeps
            (default: ``size``).
        recycle: Wipe and reuse closed sandboxes (see above); ``False`` destroys each one after a
            single use.
        hosts: Docker endpoints to spread sandboxes over, each up to its capacity (default: the
            process's configured ones, see :mod:`~agentgym.sandboxes.hosts`).
    """

    limits: Limits

    def __init__(
        self, backend: str = "auto", image: str = "python", limits: Limits | None = None, size: int = 2,
        *, max_size: int | None = None, recycle: bool = True, hosts: Sequence[Endpoint] | None = None,
    ) -> None:
        super().__init__(size, max_size, limits or Limits())
        self.backend = backend
        self.hosts = tuple(hosts) if hosts is not None else None
        self._loop: asyncio.AbstractEventLoop | None = None  # where its sandboxes live, once known
        add_holder(self)
        self.image = image
        self.recycle = recycle
        self._wiping = 0  # closed sandboxes on their way back: they count as spares to come
        self._lent = 0  # handed out by a recycling pool: they come back when closed
        self._cold = 0  # started for a caller who could not wait: theirs, not the pool's
        self._waiters: collections.deque[asyncio.Future[SupervisedSandbox]] = collections.deque()
        self._gate: asyncio.Semaphore | None = None
        self._wipe_seconds = Mean()  # how long a wipe takes
        self._acquire_gap = Mean()  # time between acquires
        self._last_acquire: float | None = None

    def __repr__(self) -> str:
        return f"<SandboxPool {self.backend} {self.image} ready={self.ready} size={self.size}>"

    async def acquire(self) -> SupervisedSandbox:
        """A ready sandbox; the caller owns it and must ``close()`` it.

        Raises:
            SandboxError: The pool is shut down, or no sandbox could be created (with the reason).
        """
        if self._closed:
            raise SandboxError("the sandbox pool is shut down")
        self._loop = asyncio.get_running_loop()
        self.backend = await resolve_backend(self.backend)
        now = time.monotonic()
        if self._last_acquire is not None:
            self._acquire_gap.add(now - self._last_acquire)
        self._last_acquire = now
        while self._ready:
            sandbox = self._ready.popleft()
            if self._fit(sandbox):
                self._hand_out(sandbox)
                self._refill()
                return sandbox
            self._spawn(sandbox.close())
            self._refill()
        on_its_way = self._wiping + self._starting > len(self._waiters)
        if not (self.recycle and on_its_way):
            self.size = min(self.size + 1, self.max_size)  # a caller found none ready: keep one more
        if on_its_way:
            # One is on its way back (being wiped) or starting: wait for it, not for a cold start,
            # and start the spares that would have spared this caller the wait.
            self._refill()
            waiting = asyncio.get_running_loop().create_future()
            self._waiters.append(waiting)
            try:
                return await asyncio.wait_for(waiting, WAIT_FOR_RETURN_SECONDS)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                if waiting.done() and not waiting.cancelled():
                    await waiting.result().close()
                raise
        self._cold += 1  # counted while it starts, so a refill meanwhile does not start its twin
        try:
            sandbox = await self._start()
        finally:
            self._cold -= 1
        self._hand_out(sandbox)  # counted as lent before the refill, which would otherwise start its twin
        self._refill()
        return sandbox

    async def shutdown(self) -> None:
        """Stop refilling and destroy the spares; sandboxes already handed out are the callers'."""
        self._closed = True
        while self._waiters:
            waiting = self._waiters.popleft()
            if not waiting.done():
                waiting.set_exception(SandboxError("the sandbox pool is shut down"))
        await super().shutdown()

    def reclaim(self, endpoints: Sequence[Endpoint]) -> bool:
        """Destroy a ready spare on one of ``endpoints``, for a caller who found them all full; whether there was one.

        Only on this pool's own event loop. The pool then refills no sooner than a retry pause, and
        a spare it starts later only takes a place that is free.
        """
        if self._loop is not asyncio.get_running_loop():
            return False
        for sandbox in self._ready:
            if getattr(sandbox, "endpoint", None) in endpoints:
                self._ready.remove(sandbox)
                self._backoff_until = time.monotonic() + RETRY_SECONDS  # no refill into the freed place
                self._spawn(sandbox.destroy())
                return True
        return False

    def keep(self, sandbox: SupervisedSandbox) -> None:
        """Take back a sandbox this pool lent, as it is (no wipe), for its next caller.

        Only for a pool whose callers all run the same trusted code in their sandboxes, which may
        then find what the last one left: the code env's graders keep their grading server between
        verifications this way. One that is dead, old or no longer lent is destroyed instead.
        """
        lent_here = sandbox.return_to == self._give_back
        if lent_here:
            sandbox.return_to = None
            self._lent -= 1
        if not lent_here or self._closed or not self._fit(sandbox):
            self._spawn(sandbox.destroy())
            self._refill()
        else:
            self._deliver(sandbox)

    def _hand_out(self, sandbox: SupervisedSandbox) -> SupervisedSandbox:
        if self.recycle:
            self._lent += 1
            sandbox.return_to = self._give_back
        return sandbox

    def _give_back(self, sandbox: SupervisedSandbox, reusable: bool) -> None:
        """A caller closed ``sandbox`` (wipe it in the background and keep it) or destroyed it."""
        self._lent -= 1
        if reusable:
            self._wiping += 1
            self._spawn(self._wipe(sandbox))
        else:
            self._refill()

    async def _wipe(self, sandbox: SupervisedSandbox) -> None:
        began = time.monotonic()
        try:
            fresh = None if self._closed else await sandbox.recycle()
        finally:
            self._wiping -= 1
        if fresh is not None:
            self._wipe_seconds.add(time.monotonic() - began)
        if fresh is None or self._closed or self._population() >= self.max_size or not self._fit(fresh):
            await (fresh or sandbox).destroy()
            self._refill()
        else:
            self._deliver(fresh)

    async def _prepare(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.backend = await resolve_backend(self.backend)

    def _kind(self) -> str:
        return f"{self.backend} sandbox"

    async def _start_spare(self) -> SupervisedSandbox:
        return await self._start(spare=True)

    async def _start(self, *, spare: bool = False) -> SupervisedSandbox:
        if self._gate is None:
            self._gate = asyncio.Semaphore(PARALLEL_STARTS)
        async with self._gate:
            return await start(self.backend, self.image, self.limits, self.hosts, spare=spare)

    def spares(self) -> int:
        """Spares a recycling pool keeps beyond those lent: one, plus the callers expected while a wipe runs.

        Never more than one per lent sandbox: a caller who finds none ready was lent one before.
        """
        wipe, gap = self._wipe_seconds.value, self._acquire_gap.value
        during_a_wipe = math.ceil(wipe / gap) if wipe and gap else 0
        return 1 + min(during_a_wipe, self._lent + self._cold)

    def _target(self) -> int:
        # With recycling, lent sandboxes come back: ``size`` is then the whole population to keep,
        # and spares beyond the lent ones keep the next callers from waiting for a wipe.
        return max(self.size, self._lent + self._cold + self.spares()) if self.recycle else self.size

    def counts(self) -> PoolCounts:
        """What the pool holds now (for tests, logs and dashboards)."""
        return PoolCounts(
            ready=len(self._ready), lent=self._lent, wiping=self._wiping, starting=self._starting,
            cold=self._cold, size=self.size, max_size=self.max_size,
        )

    def _population(self) -> int:
        return self.counts().population

    def _deliver(self, sandbox: SupervisedSandbox) -> None:
        """A ready sandbox: to the first caller still waiting, else onto the ready queue."""
        while self._waiters:
            waiting = self._waiters.popleft()
            if not waiting.done():
                waiting.set_result(self._hand_out(sandbox))
                return
        self._ready.append(sandbox)

    def _start_failed(self, error: Exception) -> None:
        if isinstance(error, EndpointsFull):  # no room for a spare: callers still get places, from spares too
            log.info("no spare %s sandbox: %s", self.backend, error)
        else:
            super()._start_failed(error)


class Mean:
    """A running mean that follows change: each sample weighs :data:`SMOOTHING`, the past the rest."""

    def __init__(self) -> None:
        self.value = 0.0
        self._seen = False

    def add(self, sample: float) -> None:
        self.value = sample if not self._seen else SMOOTHING * sample + (1 - SMOOTHING) * self.value
        self._seen = True


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
        if verifier and isinstance(sandbox, SupervisedSandbox):
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
    runtime: SandboxRuntime | None = None,
) -> SandboxPool:
    """The runtime's pool :func:`acquire` draws from for these arguments, made if need be: for a caller
    that also gives sandboxes back with :meth:`SandboxPool.keep`.

    Raises:
        SandboxError: An unknown backend name, or a closed runtime.
    """
    name = await resolve_backend(backend)
    limits = limits or Limits()
    return (runtime or current()).hold(
        SHARED, (name, image, limits, verifier),
        lambda: SandboxPool(name, image, limits, size=0, max_size=MAX_SHARED_SANDBOXES))


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
