"""Docker: a container's writable root copied by ``docker commit``, for forks of it (see :mod:`.fork`).

A fork of a sandbox whose root is writable (e.g. a repository at ``/testbed``) starts from an untagged
image committed from the parent (the container paused for the moment), labelled :data:`IMAGE_LABEL`.
The image goes when the last container using it goes; one left by a process that died is removed by
the reaper (:func:`leaked_images`, :func:`remove_images`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from agentgym.errors import SandboxError
from agentgym.sandboxes import engine

if TYPE_CHECKING:
    from agentgym.sandboxes.hosts import Endpoint

log = logging.getLogger(__name__)

IMAGE_LABEL = f"{engine.LABEL}.fork"  # on images committed for forks: the reaper's to remove once unused
RELEASE_SECONDS = 5.0  # how long the last fork's destroy waits for the engine to let go of the image


class ForkImage(NamedTuple):
    ref: str
    committed: bool  # made for these forks: to be removed with the last of them


def image_for_forks(container_id: str, endpoint: Endpoint) -> ForkImage:
    """The parent's own image when its root is read-only (nothing there changes), else a commit of it."""
    import docker

    api = engine.client(endpoint).api
    try:
        info = api.inspect_container(container_id)
        if info["HostConfig"].get("ReadonlyRootfs"):
            return ForkImage(info["Config"]["Image"], committed=False)
        # Labels are the container's plus ours; owner labels let the reaper tell a leaked image.
        label = [f"LABEL {IMAGE_LABEL}={container_id[:12]}"]
        try:
            committed = api.commit(container_id, changes=label, pause=True)  # frozen: one instant's files
        except docker.errors.APIError as e:
            if "freeze" not in str(e) and "pause" not in str(e):
                raise
            # A loaded engine can fail to freeze in time: copy while it runs, as the tmpfs copy does.
            committed = api.commit(container_id, changes=label, pause=False)
    except docker.errors.DockerException as e:
        raise SandboxError(f"could not copy the root of sandbox {container_id[:12]}: {e}") from e
    return ForkImage(committed["Id"], committed=True)


def release_image(ref: str, endpoint: Endpoint) -> None:
    """Remove a fork image unless a live container still uses it, then its fork-image parents likewise.

    Called by each fork's destroy: the last one removes it. A container already removed can take a
    moment to let go of its image, so a conflict with no live user is retried for a few seconds.
    """
    import docker

    api = engine.client(endpoint).api
    deadline = time.monotonic() + RELEASE_SECONDS
    while ref:
        try:
            info = api.inspect_image(ref)
        except docker.errors.APIError:
            return  # gone, or being removed by another fork's destroy ("layer does not exist")
        if IMAGE_LABEL not in ((info.get("Config") or {}).get("Labels") or {}):
            return  # not ours (the base image under a chain of forks)
        try:
            api.remove_image(ref, noprune=False)
        except docker.errors.APIError as e:
            # Anything but a conflict: gone, or going. A conflict with no live user: let go in a moment.
            if e.status_code != 409 or _in_use(ref, endpoint) or time.monotonic() > deadline:
                return
            time.sleep(0.05)
            continue
        ref = info.get("Parent") or ""  # a fork of a fork: its base may now be unused too


def _in_use(ref: str, endpoint: Endpoint) -> bool:
    """Whether a container not on its way out runs ``ref`` or an image built on it (a fork of a fork)."""
    import docker

    try:
        containers = engine.client(endpoint).api.containers(all=True, filters={"ancestor": ref})
    except docker.errors.APIError:
        return True  # cannot tell: leave it to the last fork's destroy, or to the reaper
    return any(c.get("State") not in ("removing", "exited", "dead") for c in containers)


def leaked_images(
    *, everything: bool = False, labels: Mapping[str, str] | None = None, endpoint: Endpoint | None = None
) -> list[str]:
    """Ids of fork images whose owner process is gone (with ``everything``: all), that carry ``labels``."""
    wanted = [IMAGE_LABEL, *(f"{k}={v}" for k, v in (labels or {}).items())]
    images = engine.client(endpoint).api.images(all=True, filters={"label": wanted})
    return [i["Id"] for i in images if everything or not engine.owner_alive(i.get("Labels") or {})]


def remove_images(ids: list[str], endpoint: Endpoint | None = None) -> list[str]:
    """Remove those of the fork images ``ids`` that nothing uses; return their short ids."""
    import docker

    removed = []
    for image_id in ids:
        try:
            engine.client(endpoint).api.remove_image(image_id)
        except docker.errors.APIError:
            continue  # in use (a live fork, or a fork of it), or already gone
        removed.append(image_id.removeprefix("sha256:")[:12])
    if removed:
        log.warning("removed %d fork image(s): %s", len(removed), ", ".join(removed))
    return removed
