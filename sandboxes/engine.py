"""The Docker client this process keeps for each engine, whether an engine answers, and who owns a container.

The docker SDK is imported here, inside functions, so that ``import agentgym`` never imports it.
Every container agentgym starts carries labels naming its owner (process id, the process's start
time and the machine's boot) and its deadline, so that a later process can tell a leaked container
from one that is still in use (see :mod:`agentgym.sandboxes.reaper`).
"""

from __future__ import annotations

import functools
import os
import socket
import time
from typing import TYPE_CHECKING, Any

from agentgym.errors import SandboxError
from agentgym.sandboxes import hosts
from agentgym.sandboxes.hosts import Endpoint

if TYPE_CHECKING:
    import docker

LABEL = "agentgym"
PING_TIMEOUT = 2.0


def client(endpoint: Endpoint | None = None) -> docker.DockerClient:
    """The process-wide Docker client for ``endpoint`` (default: the engine ``DOCKER_HOST`` names).

    Raises:
        SandboxError: The docker SDK is missing, the endpoint's certificates are, or no engine answers.
    """
    return _client(endpoint or hosts.default())


@functools.cache
def _client(endpoint: Endpoint) -> docker.DockerClient:
    try:
        import docker
    except ImportError as e:  # pragma: no cover - docker is a core dependency
        raise SandboxError("the docker backend needs the docker SDK: pip install docker") from e
    try:
        return connect(endpoint, timeout=120)
    except docker.errors.DockerException as e:
        raise SandboxError(
            f"no Docker engine answers at {endpoint.url} ({e}); install and start Docker Engine "
            "(https://docs.docker.com/engine/install/) or use the 'local' backend"
        ) from e


def connect(endpoint: Endpoint, *, timeout: float) -> docker.DockerClient:
    """A new client for ``endpoint``: TLS with its certificates, ssh through the ``ssh`` command."""
    import docker

    if not endpoint.tls_verify:
        return docker.DockerClient(base_url=endpoint.url, timeout=timeout, use_ssh_client=endpoint.scheme == "ssh")
    ca, cert, key = endpoint.certificates()
    tls = docker.tls.TLSConfig(client_cert=(cert, key), ca_cert=ca, verify=True)

    def tls_client(version: str) -> docker.DockerClient:
        made = docker.DockerClient(base_url=endpoint.url, tls=tls, timeout=timeout, version=version)
        # requests would check the engine against REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE when set, not its ca.pem
        made.api.trust_env = False
        return made

    probe = tls_client(docker.constants.MINIMUM_DOCKER_API_VERSION)
    try:
        version = probe.api.version(api_version=False)["ApiVersion"]
    finally:
        probe.close()
    return tls_client(version)


@functools.cache
def available(endpoint: Endpoint | None = None) -> bool:
    """Whether the engine at ``endpoint`` (default: ``DOCKER_HOST``'s) answers a ping within two seconds; cached."""
    try:
        probe = connect(endpoint or hosts.default(), timeout=PING_TIMEOUT)
        try:
            return bool(probe.ping())
        finally:
            probe.close()
    except Exception:
        return False


def boot_id() -> str:
    """This machine's boot: a dead pid only means a dead owner on the boot (and host) it ran on."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read().strip()
    except OSError:
        boot = "unknown"
    return f"{boot}@{socket.gethostname()}"


def process_start(pid: int) -> str:
    """The start time of ``pid`` in clock ticks since boot, or "" if it is gone.

    Stored beside the pid so that a recycled pid is not mistaken for the owner.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def owner_labels(wall_seconds: float) -> dict[str, str]:
    """Labels for a new container owned by this process."""
    pid = os.getpid()
    return {
        LABEL: "1",
        f"{LABEL}.owner_pid": str(pid),
        f"{LABEL}.owner_start": process_start(pid),
        f"{LABEL}.owner_boot": boot_id(),
        f"{LABEL}.started": str(int(time.time())),
        f"{LABEL}.wall_seconds": str(int(wall_seconds)),
    }


def owner_alive(labels: dict[str, Any]) -> bool:
    """Whether the process that labelled a container may still be running.

    Containers from another boot or host are never judged here: only their deadline can end them.
    """
    if labels.get(f"{LABEL}.owner_boot") != boot_id():
        return True
    try:
        pid = int(labels.get(f"{LABEL}.owner_pid", ""))
    except ValueError:
        return False
    start = process_start(pid)
    return bool(start) and start == labels.get(f"{LABEL}.owner_start", start)


def remove_container(container_id: str, endpoint: Endpoint | None = None) -> None:
    """Kill and remove a container on ``endpoint``; one that is already gone (or going) is fine."""
    import docker

    try:
        client(endpoint).api.remove_container(container_id, force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        if e.status_code != 409:  # 409: removal already in progress (AutoRemove)
            raise


def changed_paths(container_id: str, endpoint: Endpoint | None = None) -> list[str]:
    """``docker diff``: the paths of a container's filesystem changed since its image, asked of the engine
    (what runs inside cannot hide a change from it).

    Raises:
        SandboxError: The engine could not say (the container is gone, the engine is down).
    """
    import docker

    try:
        return [change["Path"] for change in client(endpoint).api.diff(container_id) or []]
    except docker.errors.DockerException as e:
        raise SandboxError(f"docker diff failed: {e}") from e
