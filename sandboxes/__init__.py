"""Sandboxes: isolated places where untrusted code runs, handed out from warm pools.

The front door::

    from agentgym.sandboxes import acquire

    sandbox = await acquire("auto", image="python")   # Docker when an engine answers, else local
    try:
        result = await sandbox.run_python("print(6 * 7)")
    finally:
        await sandbox.close()

Warm pools, browser pools and what env families keep belong to a sandbox runtime (``async with
SandboxRuntime():`` around a run closes them all; code that opens none uses the event loop's default
one, see :mod:`agentgym.sandboxes.runtime`).

Backends (``docker``, ``local``) start the same in-sandbox supervisor and pass the same conformance
suite; see :mod:`agentgym.sandboxes.contract` for the contract. Docker sandboxes can spread over
several engines (:class:`Endpoint`, :mod:`agentgym.sandboxes.hosts`). Nothing here imports the docker SDK
until a Docker sandbox is asked for.
"""

from agentgym.sandboxes.backends import start
from agentgym.sandboxes.bootstrap import supervisor_sources
from agentgym.sandboxes.builder import build_image, image_tag
from agentgym.sandboxes.contract import ExecResult, Limits, PythonResult, Sandbox
from agentgym.sandboxes.docker import CODE_USER
from agentgym.sandboxes.hosts import Endpoint
from agentgym.sandboxes.lending import Destroy, Lease, Pool, PoolCounts, Recycler
from agentgym.sandboxes.pool import (
    Keep,
    SandboxLease,
    SandboxPool,
    SandboxProvider,
    SandboxSupply,
    Wipe,
    acquire,
    shared_pool,
    shutdown_pools,
    warm_up,
)
from agentgym.sandboxes.reaper import ContainerInfo, list_sandboxes, prune
from agentgym.sandboxes.runtime import SandboxRuntime, current
from agentgym.sandboxes.spec import SandboxSpec, discarded, shutdown_containers
from agentgym.sandboxes.supervised import SupervisedSandbox

__all__ = [
    "CODE_USER",
    "ContainerInfo",
    "Destroy",
    "Endpoint",
    "ExecResult",
    "Keep",
    "Lease",
    "Limits",
    "Pool",
    "PoolCounts",
    "PythonResult",
    "Recycler",
    "Sandbox",
    "SandboxLease",
    "SandboxPool",
    "SandboxProvider",
    "SandboxRuntime",
    "SandboxSpec",
    "SandboxSupply",
    "SupervisedSandbox",
    "Wipe",
    "acquire",
    "build_image",
    "current",
    "discarded",
    "image_tag",
    "list_sandboxes",
    "prune",
    "shared_pool",
    "shutdown_containers",
    "shutdown_pools",
    "start",
    "supervisor_sources",
    "warm_up",
]
