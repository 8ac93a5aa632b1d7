"""The Docker backend: the agent runs as a container's main process and talks over its attach socket.

Each sandbox is one container, created from the image with ``python3 -u -c <agent>`` as its
command, so any image with a ``python3`` works. The container has no network (unless
``Limits.network``), a read-only root (unless ``Limits.writable_root``) with size-limited tmpfs at
``/tmp`` and ``/work``, capped
memory, CPU and process count, no privilege escalation, and an environment of PATH, HOME and LANG
only. The agent runs as root holding nothing but the capabilities to switch user and to signal;
the code it runs is uid 65534 with no capabilities at all, so that code cannot kill the agent.

The container is created with ``StdinOnce`` and ``AutoRemove``: when the owning process dies for
any reason its end of the request stream closes (the direct unix socket of
:mod:`~agentgym.sandboxes.channel`, or the attach socket), the agent reads end of input and exits,
and Docker removes the container. The labels from
:func:`~agentgym.sandboxes.engine.owner_labels` let :mod:`~agentgym.sandboxes.reaper` remove the rest.

Docker SDK calls block, so they run in a thread; the request stream is a non-blocking socket on the
event loop, and a call round trip costs a fraction of a millisecond.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from typing import TYPE_CHECKING, Any

from agentgym.errors import SandboxError
from agentgym.sandboxes import builder, channel, engine, reaper
from agentgym.sandboxes.base import Limits
from agentgym.sandboxes.protocol import AgentClient, AgentProtocol
from agentgym.sandboxes.sandbox import STARTUP_TIMEOUT, AgentSandbox, agent_config, agent_source

if TYPE_CHECKING:
    import socket

log = logging.getLogger(__name__)

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
_direct: bool | None = None  # requests over a unix socket (decided on first use), not the attach stream
_direct_proven = False  # a direct sandbox has worked in this process: later failures are not the path's


class DockerSandbox(AgentSandbox):
    """A sandbox that is one container; ``id`` is the container id."""

    recyclable = True  # code is CODE_USER in the container's own pid, IPC and mount namespaces

    def __init__(self, id: str, limits: Limits, client: AgentClient, attach: Any, rundir: str | None) -> None:
        super().__init__(id, limits, client, functools.partial(_destroy, id, rundir))
        self._attach = attach  # keeps the HTTP response that owns the hijacked socket alive

    async def _start_like(self, n: int) -> list[AgentSandbox]:
        from agentgym.sandboxes import fork

        return await fork.start_docker_forks(self, n)


def _destroy(container_id: str, rundir: str | None) -> None:
    try:
        engine.remove_container(container_id)
    finally:
        if rundir is not None:
            channel.remove_dir(rundir)


async def create(image: str = "python", limits: Limits | None = None) -> DockerSandbox:
    """Start a container sandbox from ``image`` (a recipe name or an image reference).

    Builds the recipe's image on first use (about a minute, once per machine) and reaps leaked
    containers on the first call in a process. Requests go over a direct unix socket when the
    engine is local (:mod:`~agentgym.sandboxes.channel`), else over the attach socket; if the
    first direct start in a process fails, the process keeps to the attach socket from then on.

    Raises:
        SandboxError: No engine, the image cannot be had, or the agent does not start.
    """
    ref = await asyncio.to_thread(_prepare, image)
    return await start(ref, limits or Limits())


async def start(ref: str, limits: Limits) -> DockerSandbox:
    """Start a container sandbox from ``ref``, an image the engine has (see :func:`create`)."""
    global _direct
    if _direct is None:
        _direct = await asyncio.to_thread(channel.usable)
    if not _direct:
        return await _create(ref, limits, direct=False)
    try:
        sandbox = await _create(ref, limits, direct=True)
    except SandboxError as e:
        if _direct_proven:
            raise
        log.warning("the direct socket to Docker sandboxes does not work here (%s); using the attach stream", e)
        _direct = False
        return await _create(ref, limits, direct=False)
    return sandbox


async def _create(ref: str, limits: Limits, *, direct: bool) -> DockerSandbox:
    global _direct_proven
    listener = await asyncio.to_thread(channel.Listener) if direct else None
    rundir = listener.dir if listener is not None else None
    try:
        container_id, attach = await asyncio.to_thread(_create_and_attach, ref, limits, rundir)
    except BaseException:
        if listener is not None:
            listener.close()
            channel.remove_dir(listener.dir)
        raise
    loop = asyncio.get_running_loop()
    raw: socket.socket = attach._sock
    raw.setblocking(False)
    attach_protocol: AgentProtocol | None = None
    try:
        attached, attach_protocol = await loop.create_connection(
            lambda: AgentProtocol(multiplexed=True), sock=raw
        )
        await asyncio.to_thread(engine.client().api.start, container_id)
        transport: asyncio.WriteTransport = attached
        protocol = attach_protocol
        if listener is not None:
            conn = await listener.accept(container_id, attach_protocol.closed, STARTUP_TIMEOUT)
            transport, protocol = await loop.create_connection(
                lambda: AgentProtocol(stderr=attach_protocol.stderr), sock=conn
            )
    except BaseException as e:
        if listener is not None:
            listener.close()
        await asyncio.to_thread(_destroy, container_id, rundir)
        said = attach_protocol.lost if attach_protocol is not None else None  # the agent's own words on why
        if isinstance(e, SandboxError) and said:
            raise SandboxError(f"{e}: {said}") from e
        raise
    client = AgentClient(transport, protocol, name=container_id[:12])
    sandbox = DockerSandbox(container_id, limits, client, attach, rundir)
    await sandbox._wait_ready()
    _direct_proven = _direct_proven or direct
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


def _create_and_attach(ref: str, limits: Limits, rundir: str | None) -> tuple[str, Any]:
    """Create the container and attach to its stdin/stdout/stderr before it starts.

    Attaching first means no output can be missed; the socket is hijacked from the HTTP response.
    With ``rundir`` the directory is mounted read-only at :data:`channel.MOUNT` and the agent
    connects to the socket in it. The attach stream stays open either way: it carries the agent's
    stderr, and its closing (the owner died) ends the container.
    """
    import docker

    api = engine.client().api
    disk = f"rw,nosuid,nodev,size={limits.disk_mb}m"
    host_config = api.create_host_config(
        auto_remove=True,
        init=True,
        network_mode="bridge" if limits.network else "none",
        mem_limit=f"{limits.memory_mb}m",
        memswap_limit=f"{limits.memory_mb}m",
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,
        read_only=not limits.writable_root,
        # Both root's (the agent makes the working directory sticky and world-writable, like /tmp):
        # code owns nothing here it could mark (times, modes) for the next user of a recycled sandbox.
        tmpfs={"/tmp": f"{disk},mode=1777", WORKDIR: disk},
        cap_drop=["ALL"],
        cap_add=AGENT_CAPS,
        security_opt=["no-new-privileges"],
        ulimits=[
            docker.types.Ulimit(name="core", soft=0, hard=0),
            docker.types.Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
        ],
        mounts=[docker.types.Mount(channel.MOUNT, rundir, type="bind", read_only=True)] if rundir else None,
    )
    rlimits = {"FSIZE": limits.disk_mb << 20, "MSGQUEUE": 0}  # no POSIX message queues, as on the local backend
    config = agent_config(limits, workdir=WORKDIR, rlimits=rlimits, user=CODE_USER)
    labels = engine.owner_labels(limits.wall_seconds)
    if rundir is not None:
        config["socket"] = f"{channel.MOUNT}/{channel.SOCKET_NAME}"
        labels[channel.LABEL] = rundir
    try:
        created = api.create_container(
            ref,
            command=["python3", "-u", "-c", agent_source(), json.dumps(config)],
            user=AGENT_USER,
            environment=ENVIRONMENT,
            working_dir=WORKDIR,
            labels=labels,
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
