"""The Docker backend: the supervisor runs as a container's main process and talks over its attach socket.

Each sandbox is one container, created from the image with ``python3 -u -c <bootstrap>`` as its
command (the supervisor's source follows on stdin), so any image with a ``python3`` works. The
container has no network (unless
``Limits.network``), a read-only root (unless ``Limits.writable_root``) with size-limited tmpfs at
``/tmp`` and ``/work``, capped
memory, CPU and process count, no privilege escalation, and an environment of PATH, HOME and LANG
only. The supervisor runs as root holding nothing but the capabilities to switch user and to signal;
the code it runs is uid 65534 with no capabilities at all, so that code cannot kill the supervisor.

The container is created with ``StdinOnce`` and ``AutoRemove``: when the owning process dies for
any reason its end of the request stream closes (the direct unix socket of
:mod:`~agentgym.sandboxes.channel`, or the attach socket), the supervisor reads end of input and exits,
and Docker removes the container. The labels from
:func:`~agentgym.sandboxes.engine.owner_labels` let :mod:`~agentgym.sandboxes.reaper` remove the rest.

Docker SDK calls block, so they run in a thread; the request stream is a non-blocking socket on the
event loop (the attach stream is opened there too, by :mod:`~agentgym.sandboxes.attach`), and a call
round trip costs a fraction of a millisecond. Each container runs on one engine, an
:class:`~agentgym.sandboxes.hosts.Endpoint` chosen by capacity; engines other than a local unix
socket get the attach stream, since the direct socket needs a shared filesystem.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
from typing import TYPE_CHECKING, Any

from agentgym.errors import SandboxError
from agentgym.sandboxes import attach, builder, channel, commit, engine, fork, hosts, reaper
from agentgym.sandboxes.bootstrap import supervisor_argv, supervisor_config, supervisor_payload
from agentgym.sandboxes.client import SupervisorClient, SupervisorProtocol
from agentgym.sandboxes.contract import Limits
from agentgym.sandboxes.hosts import Endpoint
from agentgym.sandboxes.supervised import STARTUP_TIMEOUT, SupervisedSandbox

if TYPE_CHECKING:
    from collections.abc import Sequence

log = logging.getLogger(__name__)

# The supervisor runs as root with only the capabilities to switch user and to signal; everything it
# starts runs as CODE_USER with none, so user code cannot kill the supervisor (kill -9 -1) or regain root.
SUPERVISOR_USER = "0:0"
SUPERVISOR_CAPS = ["SETUID", "SETGID", "KILL"]
CODE_USER = (65534, 65534)
WORKDIR = "/work"
ENVIRONMENT = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": WORKDIR,
    "LANG": "C.UTF-8",
}
# Memory, processes and disk are the engine's job (cgroups, tmpfs); these are per-process extras.
NOFILE = 4096

# What the process has learnt of each engine: true for the whole process, whichever sandbox runtime asks
# next, so kept here and never forgotten (a runtime that closes has not changed the engine).
_ready_images: set[tuple[Endpoint, str]] = set()  # (engine, image) known to exist there
_reaped: set[Endpoint] = set()  # engines whose containers of dead owners this process has reaped once
_direct: dict[Endpoint, bool] = {}  # per engine: requests over a unix socket (decided on first use), not attach
_direct_proven: set[Endpoint] = set()  # engines where a direct sandbox has worked: later failures are not the path's


class DockerSandbox(SupervisedSandbox):
    """A sandbox that is one container; ``id`` is the container id, ``endpoint`` the engine it runs on."""

    recyclable = True  # code is CODE_USER in the container's own pid, IPC and mount namespaces

    def __init__(
        self, id: str, limits: Limits, client: SupervisorClient, attach: Any, rundir: str | None,
        slot: hosts.Slot | None = None, session_socket: socket.socket | None = None,
    ) -> None:
        self.endpoint = slot.endpoint if slot is not None else hosts.default()
        super().__init__(id, limits, client, functools.partial(_destroy, id, rundir, self.endpoint, slot),
                         session_socket)
        self._attach = attach  # the attach stream's transport (it carries the supervisor's stderr)

    async def _start_like(self, n: int) -> list[SupervisedSandbox]:
        """``n`` containers like this one: its image, or a commit of its writable root, and its limits."""
        endpoint = self.endpoint
        image = await asyncio.to_thread(commit.image_for_forks, self.id, endpoint)
        try:
            forks = await fork.start_all(n, lambda: start(image.ref, self.limits, endpoint))
        finally:
            if image.committed:  # the forks' containers hold it now; without any, it goes at once
                await asyncio.to_thread(commit.release_image, image.ref, endpoint)
        if image.committed:
            for sandbox in forks:
                sandbox._also_on_destroy(functools.partial(commit.release_image, image.ref, endpoint))
        return forks


def _destroy(container_id: str, rundir: str | None, endpoint: Endpoint, slot: hosts.Slot | None = None) -> None:
    try:
        engine.remove_container(container_id, endpoint)
    finally:
        if slot is not None:
            slot.release()
        if rundir is not None:
            channel.remove_dir(rundir)


async def create(
    image: str = "python", limits: Limits | None = None, hosts_: Sequence[Endpoint] | None = None,
    *, place_seconds: float = hosts.PLACE_SECONDS,
) -> DockerSandbox:
    """Start a container sandbox from ``image`` (a recipe name or an image reference).

    The container goes to the least loaded of ``hosts_`` (default: the process's configured
    endpoints, see :mod:`~agentgym.sandboxes.hosts`), waiting up to ``place_seconds`` for a place
    when all are full (an idle pool spare gives its place up).
    Makes sure the image is on that engine on first use there (copied from another engine that
    has it, else built: about a minute) and reaps leaked containers on the first call per engine.
    Requests go over a direct unix socket when the engine is local
    (:mod:`~agentgym.sandboxes.channel`), else over the attach stream; if the first direct start
    on an engine fails, the process keeps to the attach stream there from then on.

    Raises:
        SandboxError: No engine, the image cannot be had, no place within a minute, or the supervisor does not start.
    """
    limits = limits or Limits()
    slot = await hosts.place(hosts_ or hosts.configured(), place_seconds)
    try:
        ref = await asyncio.to_thread(_prepare, image, slot.endpoint)
        return await _start_on(slot, ref, limits)
    except BaseException:
        slot.release()
        raise


async def start(ref: str, limits: Limits, endpoint: Endpoint) -> DockerSandbox:
    """Start a container sandbox from ``ref``, an image ``endpoint`` already has (a fork's image)."""
    slot = await hosts.place([endpoint])
    try:
        return await _start_on(slot, ref, limits)
    except BaseException:
        slot.release()
        raise


async def _start_on(slot: hosts.Slot, ref: str, limits: Limits) -> DockerSandbox:
    endpoint = slot.endpoint
    if endpoint not in _direct:
        _direct[endpoint] = endpoint.local and await asyncio.to_thread(channel.usable, endpoint)
    if not _direct[endpoint]:
        return await _create(slot, ref, limits, direct=False)
    try:
        sandbox = await _create(slot, ref, limits, direct=True)
    except SandboxError as e:
        if endpoint in _direct_proven:
            raise
        log.warning("the direct socket to Docker sandboxes on %s does not work (%s); using the attach stream",
                    endpoint.url, e)
        _direct[endpoint] = False
        slot.hold()  # the failed sandbox gave its place back
        return await _create(slot, ref, limits, direct=False)
    return sandbox


async def _create(slot: hosts.Slot, ref: str, limits: Limits, *, direct: bool) -> DockerSandbox:
    endpoint = slot.endpoint
    listener = await asyncio.to_thread(channel.Listener) if direct else None
    rundir = listener.dir if listener is not None else None
    try:
        container_id = await asyncio.to_thread(_create_container, endpoint, ref, limits, rundir)
    except BaseException:
        if listener is not None:
            listener.close()
            channel.remove_dir(listener.dir)
        raise
    loop = asyncio.get_running_loop()
    attach_protocol: SupervisorProtocol | None = None
    try:
        attached, attach_protocol = await attach.open_stream(
            endpoint, container_id, lambda: SupervisorProtocol(multiplexed=True), STARTUP_TIMEOUT
        )
        await asyncio.to_thread(engine.client(endpoint).api.start, container_id)
        attached.write(supervisor_payload())  # the bootstrap reads the supervisor's modules from stdin first
        transport: asyncio.WriteTransport = attached
        protocol = attach_protocol
        session_socket = None
        if listener is not None:
            conn, session_socket = await listener.accept(container_id, attach_protocol.closed, STARTUP_TIMEOUT)
            transport, protocol = await loop.create_connection(
                lambda: SupervisorProtocol(stderr=attach_protocol.stderr), sock=conn
            )
    except BaseException as e:
        if listener is not None:
            listener.close()
        await asyncio.to_thread(_destroy, container_id, rundir, endpoint)
        said = attach_protocol.lost if attach_protocol is not None else None  # the supervisor's own words on why
        if isinstance(e, SandboxError) and said:
            raise SandboxError(f"{e}: {said}") from e
        raise
    client = SupervisorClient(transport, protocol, name=container_id[:12])
    sandbox = DockerSandbox(container_id, limits, client, attached, rundir, slot, session_socket)
    await sandbox._wait_ready()
    if direct:
        _direct_proven.add(endpoint)
    return sandbox


def _prepare(image: str, endpoint: Endpoint) -> str:
    """Once per process and engine: reap leaked containers; once per image and engine: make sure it exists."""
    import docker

    if endpoint not in _reaped:
        reaper.reap(endpoint)
        _reaped.add(endpoint)
    ref = builder.resolve(image)
    if (endpoint, ref) in _ready_images:
        return ref
    try:
        ref = builder.ensure(image, endpoint)
    except docker.errors.DockerException as e:
        raise SandboxError(f"could not prepare image {image!r} on {endpoint.url}: {e}") from e
    _ready_images.add((endpoint, ref))
    return ref


def _create_container(endpoint: Endpoint, ref: str, limits: Limits, rundir: str | None) -> str:
    """Create (not start) the container; the caller attaches to it before starting it, so no output is missed.

    With ``rundir`` the directory is mounted read-only at :data:`channel.MOUNT` and the supervisor
    connects to the socket in it. The attach stream is opened either way: it carries the supervisor's
    stderr, and its closing (the owner died) ends the container.
    """
    import docker

    api = engine.client(endpoint).api
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
        # Both root's (the supervisor makes the working directory sticky and world-writable, like /tmp):
        # code owns nothing here it could mark (times, modes) for the next user of a recycled sandbox.
        tmpfs={"/tmp": f"{disk},mode=1777", WORKDIR: disk},
        cap_drop=["ALL"],
        cap_add=SUPERVISOR_CAPS,
        security_opt=["no-new-privileges"],
        ulimits=[
            docker.types.Ulimit(name="core", soft=0, hard=0),
            docker.types.Ulimit(name="nofile", soft=NOFILE, hard=NOFILE),
        ],
        mounts=[docker.types.Mount(channel.MOUNT, rundir, type="bind", read_only=True)] if rundir else None,
    )
    rlimits = {"FSIZE": limits.disk_mb << 20, "MSGQUEUE": 0}  # no POSIX message queues, as on the local backend
    config = supervisor_config(limits, workdir=WORKDIR, rlimits=rlimits, user=CODE_USER)
    labels = engine.owner_labels(limits.wall_seconds)
    if rundir is not None:
        config["socket"] = f"{channel.MOUNT}/{channel.SOCKET_NAME}"
        labels[channel.LABEL] = rundir
    try:
        created = api.create_container(
            ref,
            command=supervisor_argv("python3", config),
            user=SUPERVISOR_USER,
            environment=ENVIRONMENT,
            working_dir=WORKDIR,
            labels=labels,
            stdin_open=True,  # with detach=False this also sets StdinOnce: our EOF ends the supervisor
            detach=False,
            tty=False,
            host_config=host_config,
        )
    except docker.errors.DockerException as e:
        raise SandboxError(f"could not create a container from {ref} on {endpoint.url}: {e}") from e
    return str(created["Id"])


class DockerBackend:
    """The ``"docker"`` backend (:mod:`agentgym.sandboxes.backends`): one container per sandbox."""

    name = "docker"

    async def start(
        self, image: str, limits: Limits, hosts_: Sequence[Endpoint] | None = None, *, spare: bool = False
    ) -> DockerSandbox:
        """A container from ``image`` on the least loaded of ``hosts_``; a spare only where there is room now."""
        return await create(image, limits, hosts_, place_seconds=0.0 if spare else hosts.PLACE_SECONDS)


BACKEND = DockerBackend()
