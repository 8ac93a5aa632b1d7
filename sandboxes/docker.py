"""The Docker backend: the agent runs as a container's main process and talks over its attach socket.

Each sandbox is one container, created from the image with ``python3 -u -c <agent>`` as its
command, so any image with a ``python3`` works. The container has no network (unless
``Limits.network``), a read-only root with size-limited tmpfs at ``/tmp`` and ``/work``, capped
memory, CPU and process count, no privilege escalation, and an environment of PATH, HOME and LANG
only. The agent runs as root holding nothing but the capabilities to switch user and to signal;
the code it runs is uid 65534 with no capabilities at all, so that code cannot kill the agent.

The container is created with ``StdinOnce`` and ``AutoRemove``: when the owning process dies for
any reason its end of the attach socket closes, the agent reads end of input and exits, and Docker
removes the container. The labels from
:func:`~agentgym.sandboxes.engine.owner_labels` let :mod:`~agentgym.sandboxes.reaper` remove the rest.

Docker SDK calls block, so they run in a thread; the attach socket itself is a non-blocking
socket on the event loop, and a call round trip costs a fraction of a millisecond.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import TYPE_CHECKING, Any

from agentgym.sandboxes import builder, engine, reaper
from agentgym.sandboxes.base import Limits
from agentgym.sandboxes.protocol import AgentClient, AgentProtocol
from agentgym.sandboxes.sandbox import AgentSandbox, agent_config, agent_source

from agentgym.errors import SandboxError

if TYPE_CHECKING:
    import socket

# The agent runs as root with only the capabilities to switch user and to signal; everything it
# starts runs as CODE_USER with none, so user code cannot kill the agent (kill -9 -1) or regain root.
AGENT_USER = "0:0"
AGENT_CAPS = ["SETUID", "SETGID", "KILL"]
CODE_USER = (65534, 65534)
WORKDIR = "/work"
ENVIRONMENT = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": WORKDIR,
    "LANG": "C.UTF-8",
}
# Memory, processes and disk are the engine's job (cgroups, tmpfs); these are per-process extras.
NOFILE = 4096

_ready_images: set[str] = set()


class DockerSandbox(AgentSandbox):
    """A sandbox that is one container; ``id`` is the container id."""

    def __init__(self, id: str, limits: Limits, client: AgentClient, attach: Any) -> None:
        super().__init__(id, limits, client, functools.partial(engine.remove_container, id))
        self._attach = attach  # keeps the HTTP response that owns the hijacked socket alive


async def create(image: str = "python", limits: Limits | None = None) -> DockerSandbox:
    """Start a container sandbox from ``image`` (a recipe name or an image reference).

    Builds the recipe's image on first use (about a minute, once per machine) and reaps leaked
    containers on the first call in a process.

    Raises:
        SandboxError: No engine, the image cannot be had, or the agent does not start.
    """
    limits = limits or Limits()
    ref = await asyncio.to_thread(_prepare, image)
    container_id, attach = await asyncio.to_thread(_create_and_attach, ref, limits)
    loop = asyncio.get_running_loop()
    raw: socket.socket = attach._sock
    raw.setblocking(False)
    try:
        transport, protocol = await loop.create_connection(
            lambda: AgentProtocol(multiplexed=True), sock=raw
        )
        await asyncio.to_thread(engine.client().api.start, container_id)
    except BaseException:
        await asyncio.to_thread(engine.remove_container, container_id)
        raise
    client = AgentClient(transport, protocol, name=container_id[:12])
    sandbox = DockerSandbox(container_id, limits, client, attach)
    await sandbox._wait_ready()
    return sandbox


def _prepare(image: str) -> str:
    """Once per process: reap leaked containers; once per image: make sure it exists."""
    import docker

    if not _ready_images:
        reaper.reap()
    ref = builder.resolve(image)
    if ref in _ready_images:
        return ref
    try:
        ref = builder.ensure(image)
    except docker.errors.DockerException as e:
        raise SandboxError(f"could not prepare image {image!r}: {e}") from e
    _ready_images.add(ref)
    return ref


def _create_and_attach(ref: str, limits: Limits) -> tuple[str, Any]:
    """Create the container and attach to its stdin/stdout/stderr before it starts.

    Attaching first means no output can be missed; the socket is hijacked from the HTTP response.
    """
    import docker

    api = engine.client().api
    disk = f"rw,nosuid,nodev,size={limits.disk_mb}m"
    uid, gid = CODE_USER
    host_config = api.create_host_config(
        auto_remove=True,
        init=True,
        network_mode="bridge" if limits.network else "none",
        mem_limit=f"{limits.memory_mb}m",
        memswap_limit=f"{limits.memory_mb}m",
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,
        read_only=True,
        tmpfs={"/tmp": f"{disk},mode=1777", WORKDIR: f"{disk},uid={uid},gid={gid},mode=0755"},
        cap_drop=["ALL"],
        cap_add=AGENT_CAPS,
        security_opt=["no-new-privileges"],
        ulimits=[
            docker.types.Ulimit(name="core", soft=0, hard=0),
            docker.types.Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
        ],
    )
    rlimits = {"FSIZE": limits.disk_mb << 20}
    config = agent_config(limits, workdir=WORKDIR, rlimits=rlimits, user=CODE_USER)
    try:
        created = api.create_container(
            ref,
            command=["python3", "-u", "-c", agent_source(), json.dumps(config)],
            user=AGENT_USER,
            environment=ENVIRONMENT,
            working_dir=WORKDIR,
            labels=engine.owner_labels(limits.wall_seconds),
            stdin_open=True,  # with detach=False this also sets StdinOnce: our EOF ends the agent
            detach=False,
            tty=False,
            host_config=host_config,
        )
        container_id = created["Id"]
    except docker.errors.DockerException as e:
        raise SandboxError(f"could not create a container from {ref}: {e}") from e
    try:
        attach = api.attach_socket(
            container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
    except BaseException:
        engine.remove_container(container_id)
        raise
    return container_id, attach
