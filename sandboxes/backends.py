"""Sandbox backends by name: ``"docker"``, ``"local"``, and any that a package registers.

A backend is an object with a ``name`` and an ``async start(image, limits, hosts, *, spare)`` that
returns a started :class:`~agentgym.sandboxes.supervised.SupervisedSandbox`. Pools and the CLI reach one by
its name through :func:`get`, so choosing a backend imports no backend's module: the backend modules
depend on the backend-neutral ones and never the other way round (tests/sandboxes/test_imports.py
holds that). A package adds a backend with :func:`register`, or with an entry point in the
``agentgym.sandbox_backends`` group naming the backend object (``"mine = pkg.module:BACKEND"``).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Protocol

from agentgym.errors import SandboxError
from agentgym.sandboxes import engine
from agentgym.sandboxes.hosts import configured

if TYPE_CHECKING:
    from agentgym.sandboxes.contract import Limits
    from agentgym.sandboxes.hosts import Endpoint
    from agentgym.sandboxes.supervised import SupervisedSandbox

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "agentgym.sandbox_backends"
BUILTIN = {"docker": "agentgym.sandboxes.docker:BACKEND", "local": "agentgym.sandboxes.local:BACKEND"}
"""The built-in backends, as ``module:attribute`` of their objects (imported on first use)."""


class Backend(Protocol):
    """What a sandbox backend gives the pools: a name and a way to start one sandbox."""

    name: str

    async def start(
        self, image: str, limits: Limits, hosts: Sequence[Endpoint] | None = None, *, spare: bool = False
    ) -> SupervisedSandbox:
        """Start one sandbox of ``image`` under ``limits``.

        ``hosts`` are the Docker endpoints to choose among (backends without engines ignore them);
        a ``spare`` (a pool's, started ahead of demand) takes a place only where there is room now.

        Raises:
            SandboxError: The sandbox could not be started; the message says why.
        """
        ...


_registered: dict[str, Backend] = {}


def register(backend: Backend) -> None:
    """Make ``backend`` available under ``backend.name`` (replacing a registered one of that name)."""
    _registered[backend.name] = backend


def names() -> list[str]:
    """Every backend name that :func:`get` accepts: built-in, registered, then from entry points."""
    found = [*BUILTIN, *_registered]
    found += [ep.name for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name not in found]
    return found


def get(name: str) -> Backend:
    """The backend called ``name``.

    Raises:
        SandboxError: No backend has that name.
    """
    if name in _registered:
        return _registered[name]
    if name in BUILTIN:
        module, attribute = BUILTIN[name].split(":")
        backend: Backend = getattr(importlib.import_module(module), attribute)
        return backend
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        backend = ep.load()
        register(backend)
        return backend
    raise SandboxError(f"unknown sandbox backend {name!r}; use one of: auto, {', '.join(names())}")


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
    get(backend)  # raises for an unknown name
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
    creating = asyncio.ensure_future(get(backend).start(image, limits, hosts, spare=spare))
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


def _any_engine() -> bool:
    """Whether one of the configured Docker endpoints answers."""
    return any(engine.available(endpoint) for endpoint in configured())


@functools.cache
def _warn_no_docker() -> None:
    log.warning("no Docker engine answers: sandboxes run on the local backend")
