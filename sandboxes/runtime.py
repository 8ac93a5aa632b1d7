"""The sandbox runtime: what a run keeps of every kind of sandbox, opened once and closed once.

Sandboxes are kept warm in several kinds of supply: pools of Python sandboxes (:mod:`.pool`), browser
pools (:mod:`.browser.pool`) and the Playwright driver their browsers run on (:mod:`.browser.driver`),
and what an env family keeps (the SWE env's containers reset for the next episode of a task). A
:class:`SandboxRuntime` holds them all: each kind's module asks it for the supply of a key
(``runtime.hold(kind, key, make)``), made on first ask, and closing the runtime shuts every one down.
Whoever runs episodes (``evaluate``, the CLI, the TRL adapter, the Ray worker, the MCP server, a
user's script) opens one with ``async with SandboxRuntime():`` and misses no kind.

Which runtime a caller gets, when it names none, is :func:`current`: the innermost runtime opened
with ``async with`` in this context (tasks started inside inherit it), else this event loop's
*default* runtime. The default is the fallback for code that opens none (a script that only calls
``acquire()``, an env used on its own); :func:`shutdown` closes it, and the next use makes a new one.
An env takes a runtime the same way whatever its family: ``make(name, runtime=rt)``
(:class:`~agentgym.env.Env`'s ``runtime=``), else :func:`current` when it first needs a sandbox.

What lives as long as a run is the runtime's. What stays module state holds for the whole process
and has nothing to close: facts about an engine (an image it has, its leaked containers reaped), the
configured endpoints and the count of sandboxes on each (a capacity bounds the process, whichever
runtime started a sandbox), the local backend's uids taken (machine-wide) and its turn of cores
(shared by the runtimes open at once), the closes of cancelled starts, the registered backends and
the engine clients (docs/architecture.md lists them, with why).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Hashable
from types import TracebackType
from typing import Protocol, TypeVar

from agentgym.errors import SandboxError

log = logging.getLogger(__name__)


class Supply(Protocol):
    """What a runtime keeps: anything that can shut down what it keeps (a pool, a set of kept sandboxes)."""

    async def shutdown(self) -> None: ...


T = TypeVar("T", bound=Supply)


class SandboxRuntime:
    """Every sandbox supply of a run, by kind and key; ``close()`` (or leaving ``async with``) shuts them all down.

    Supplies are made on first ask and closed kind by kind in the order the kinds were first asked
    for (a pool is asked for before the first browser it starts asks for the driver, so its spares
    close before the driver stops); the supplies of one kind close concurrently. Every one is closed even
    if one fails; the first failure is raised after the rest. Use one runtime on one event loop:
    the sandboxes it keeps are bound to the loop they started on.
    """

    def __init__(self) -> None:
        self._held: dict[str, dict[Hashable, Supply]] = {}
        self._closed = False
        self._token: contextvars.Token[SandboxRuntime | None] | None = None

    def __repr__(self) -> str:
        kept = ", ".join(f"{kind}: {len(by_key)}" for kind, by_key in self._held.items())
        return f"<SandboxRuntime {'closed' if self._closed else 'open'} {kept}>"

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has begun: a closed runtime makes no more supplies."""
        return self._closed

    def hold(self, kind: str, key: Hashable, make: Callable[[], T]) -> T:
        """The supply of ``kind`` for ``key``, made with ``make()`` on first ask and kept until :meth:`close`.

        Raises:
            SandboxError: The runtime is closed.
        """
        if self._closed:
            raise SandboxError("the sandbox runtime is closed")
        by_key = self._held.setdefault(kind, {})
        if key not in by_key:
            by_key[key] = make()
        supply: T = by_key[key]  # type: ignore[assignment]  # one kind's module makes one type per kind
        return supply

    def kinds(self) -> list[str]:
        """The kinds of supply made so far, in the order they close."""
        return list(self._held)

    def held(self, kind: str) -> list[Supply]:
        """The supplies of ``kind`` made so far (in the order they were made)."""
        return list(self._held.get(kind, {}).values())

    async def release(self, kind: str) -> None:
        """Shut down and forget the supplies of ``kind`` (the next ask makes new ones)."""
        await _shut(list(self._held.pop(kind, {}).values()))

    async def close(self) -> None:
        """Shut down every supply, kind by kind; a closed runtime makes no more. Safe to call twice."""
        self._closed = True
        for loop, default in list(_defaults.items()):
            if default is self:
                del _defaults[loop]  # code that opens none gets a new default next time
        failure: BaseException | None = None
        for kind in list(self._held):
            try:
                await self.release(kind)
            except Exception as e:
                log.warning("closing the %s failed: %s", kind, e)
                failure = failure or e
        if failure is not None:
            raise failure

    async def __aenter__(self) -> SandboxRuntime:
        """Make this runtime :func:`current` in this context (and in the tasks started from it)."""
        self._token = _opened.set(self)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            _opened.reset(self._token)
            self._token = None
        await self.close()


async def _shut(supplies: list[Supply]) -> None:
    outcomes = await asyncio.gather(*(s.shutdown() for s in supplies), return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    if failures:
        raise failures[0]


_opened: contextvars.ContextVar[SandboxRuntime | None] = contextvars.ContextVar("agentgym_sandbox_runtime",
                                                                              default=None)
_defaults: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SandboxRuntime] = weakref.WeakKeyDictionary()
"""Each event loop's default runtime: the fallback for code that opens none (module state only here)."""


def current() -> SandboxRuntime:
    """The runtime opened with ``async with`` in this context, else this event loop's default one (made if need be)."""
    opened = _opened.get()
    if opened is not None and not opened.closed:
        return opened
    return _defaults.setdefault(asyncio.get_running_loop(), SandboxRuntime())


@contextlib.asynccontextmanager
async def scope() -> AsyncIterator[SandboxRuntime]:
    """For a run: the runtime opened around the caller, left open; if none is, a new one, closed after the block.

    What ``evaluate`` runs in, so that a run's sandboxes go with it unless its caller keeps them
    for more (a runtime the caller opened, e.g. with spares from ``warm_up`` in it).
    """
    opened = _opened.get()
    if opened is not None and not opened.closed:
        yield opened
    else:
        async with SandboxRuntime() as fresh:
            yield fresh


async def shutdown() -> None:
    """Close this event loop's default runtime: every sandbox kept by code that opened no runtime of its own."""
    default = _defaults.pop(asyncio.get_running_loop(), None)
    if default is not None:
        await default.close()

