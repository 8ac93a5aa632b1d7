"""What sandbox an env needs, declared once (:class:`SandboxSpec`), and the one way it is lent (:func:`lease`).

An env says what its episodes run in; :class:`~agentgym.env.Env` takes a lease on reset and gives it
back on the next reset or close. Which pool lends it, how it is recycled and when it closes are the
runtime's and the pool's, never the env's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from typing import Any, Literal, cast

from agentgym.errors import SandboxError
from agentgym.sandboxes import engine
from agentgym.sandboxes.backends import start
from agentgym.sandboxes.contract import Limits
from agentgym.sandboxes.lending import Pool, Recycler
from agentgym.sandboxes.pool import SandboxLease, SandboxProvider, acquire
from agentgym.sandboxes.runtime import SandboxRuntime, current

Kind = Literal["python", "container", "browser"]
CONTAINERS = "container pools"  # their kind in a runtime, keyed by image, limits and recycler


@dataclasses.dataclass(frozen=True)
class SandboxSpec:
    """The sandbox an episode needs (hashable: the runtime keys its pools by it).

    Attributes:
        kind: ``python``: from the runtime's shared pools (Docker or local), wiped between borrowers.
            ``container``: a Docker container of ``image``, recycled by ``recycler``, no spare kept.
            ``browser``: a browser sandbox (:mod:`~agentgym.sandboxes.browser`), contexts cleared.
        image: Recipe name or image reference (``python`` and ``container``).
        limits: :class:`~agentgym.sandboxes.contract.Limits` (``BrowserLimits`` for a browser); default the kind's.
        recycler: A ``container``'s recycler (e.g. the SWE env's reset and checks).
        max_kept: The most containers of one spec kept between episodes.
        frames: How a browser draws (``free`` or ``on_demand``).
        held: How long an env keeps its lease: ``episode``, or ``env`` (across episodes while alive: a
            browser whose next page is prepared during this episode).
    """

    kind: Kind = "python"
    image: str = "python"
    limits: Any = None
    recycler: Recycler[Any] | None = None
    max_kept: int = 8
    frames: Literal["free", "on_demand"] = "free"
    held: Literal["episode", "env"] = "episode"


async def lease(backend: str | SandboxProvider, spec: SandboxSpec, *, runtime: SandboxRuntime | None = None) -> Any:
    """A :class:`~agentgym.sandboxes.lending.Lease` for ``spec`` from ``runtime``'s pools (default
    :func:`~agentgym.sandboxes.runtime.current`): a :class:`~agentgym.sandboxes.pool.SandboxLease` for a
    Python sandbox or a container; from a provider (``backend`` a pool of the caller's), what it lends.

    Raises:
        SandboxError: The spec cannot be lent here (a container without Docker, a browser from a provider),
            or its sandbox could not be started; the message says why.
    """
    runtime = runtime or current()
    if spec.kind == "python":
        return await acquire(backend, image=spec.image, limits=spec.limits, runtime=runtime)
    if not isinstance(backend, str):
        raise SandboxError(f"a {spec.kind} sandbox comes from the runtime's pools, not from {backend!r}")
    if spec.kind == "browser":
        from agentgym.sandboxes.browser.pool import browser_pool

        return await (await browser_pool(backend, spec.limits, frames=spec.frames, runtime=runtime)).acquire()
    if backend not in ("auto", "docker") or not await asyncio.to_thread(engine.available):
        raise SandboxError(f"a container sandbox of {spec.image} needs Docker (its files live in the container's "
                           f"own filesystem, which the local backend cannot give); backend {backend!r}"
                           + ("" if backend != "auto" else " found no engine"))
    recycler, limits = spec.recycler, spec.limits or Limits(writable_root=True)
    if recycler is None:
        raise SandboxError("a container sandbox needs a recycler (say how it is made fresh between episodes)")
    pools = runtime.hold(CONTAINERS, (spec.image, limits, recycler), lambda: Pool(
        functools.partial(start, "docker", spec.image, limits), recycler, size=0, max_size=spec.max_kept,
        wall_seconds=limits.wall_seconds, kind=f"container of {spec.image}", spares=False, lease=SandboxLease))
    return cast(SandboxLease, await pools.acquire())


def discarded(runtime: SandboxRuntime | None = None) -> list[str]:
    """Why containers of the runtime were not lent again, pool by pool, most recent last (for tests and logs)."""
    return [why for pool in (runtime or current()).held(CONTAINERS) if isinstance(pool, Pool) for why in pool.discarded]


async def shutdown_containers(runtime: SandboxRuntime | None = None) -> None:
    """Destroy the runtime's kept containers now (SWE ones among them): idle ones, and lent ones as they come back."""
    await (runtime or current()).release(CONTAINERS)
