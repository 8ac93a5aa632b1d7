"""Finding and removing agentgym containers: leaked ones on first use and on ``prune``, all on ``prune --all``.

A container is leaked when the process that made it is gone (same boot and host, pid dead or
recycled) or its wall time is over. Containers normally remove themselves (see
:mod:`agentgym.sandboxes.docker`); this catches the rest, e.g. an engine restarted under them.
Both also remove the host directories of direct sockets (:mod:`agentgym.sandboxes.channel`) that
no remaining container names: those of an owner that was killed before it could; and the images
committed for forks (:mod:`agentgym.sandboxes.fork`) whose owner is gone and that nothing uses.

Each call works on one engine (an :class:`~agentgym.sandboxes.hosts.Endpoint`; default: the one
``DOCKER_HOST`` names); ``agentgym sandbox ls | prune`` go over every configured one. An owner is
judged by the labels alone, so a process on this machine can tell its leaked containers on a
remote engine too; containers another machine started there end only by their deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from agentgym.sandboxes import builder, channel, commit, engine, hosts
from agentgym.sandboxes.hosts import Endpoint

log = logging.getLogger(__name__)

EXPIRY_SLACK = 60  # seconds after the wall time before a container counts as leaked


class ContainerInfo(BaseModel):
    """One agentgym container, as ``agentgym sandbox ls`` shows it."""

    id: str
    endpoint: str
    image: str
    status: str
    owner_pid: int | None
    started: float | None
    wall_seconds: float | None
    leaked: bool


def list_sandboxes(labels: Mapping[str, str] | None = None, endpoint: Endpoint | None = None) -> list[ContainerInfo]:
    """Every container labelled ``agentgym=1`` on the engine at ``endpoint``, running or not.

    Args:
        labels: Only containers that also carry each of these labels with these values.
        endpoint: The engine (default: the one ``DOCKER_HOST`` names).
    """
    api = engine.client(endpoint).api
    url = (endpoint or hosts.default()).url
    out = []
    wanted = [f"{engine.LABEL}=1", *(f"{k}={v}" for k, v in (labels or {}).items())]
    for c in api.containers(all=True, filters={"label": wanted}):
        labels = c.get("Labels") or {}
        out.append(ContainerInfo(
            id=c["Id"][:12],
            endpoint=url,
            image=c.get("Image", ""),
            status=c.get("Status", ""),
            owner_pid=_number(labels, "owner_pid", int),
            started=_number(labels, "started", float),
            wall_seconds=_number(labels, "wall_seconds", float),
            leaked=is_leaked(labels),
        ))
    return out


def is_leaked(labels: dict[str, Any], now: float | None = None) -> bool:
    """Whether a container with these labels has outlived its owner or its wall time."""
    now = time.time() if now is None else now
    started = _number(labels, "started", float)
    wall = _number(labels, "wall_seconds", float)
    if started is not None and wall is not None and now > started + wall + EXPIRY_SLACK:
        return True
    return not engine.owner_alive(labels)


def reap(endpoint: Endpoint | None = None) -> list[str]:
    """Remove leaked containers and stale socket directories on one engine; return the containers' short ids."""
    return prune(endpoint=endpoint)


def prune(*, everything: bool = False, images: bool = False, labels: Mapping[str, str] | None = None,
          dry_run: bool = False, endpoint: Endpoint | None = None) -> list[str]:
    """Remove leaked agentgym containers (owner gone, or wall time over), or with ``everything`` all of them.

    A container whose owner still runs belongs to a live run, perhaps another user's on a shared
    engine: only ``everything`` removes it. Fork images go the same way, once no container uses them.

    Args:
        everything: Remove containers in use too.
        images: Also remove the images of outdated recipes.
        labels: Only containers that also carry these labels (e.g. ``{"agentgym.owner_pid": "1234"}``).
        dry_run: Remove nothing; return what would be removed.
        endpoint: The engine (default: the one ``DOCKER_HOST`` names).

    Returns:
        Short ids of the (to be) removed containers and fork images, then tags of the (to be)
        removed recipe images.
    """
    chosen = [c.id for c in list_sandboxes(labels, endpoint) if everything or c.leaked]
    fork_images = commit.leaked_images(everything=everything, labels=labels, endpoint=endpoint)
    stale_images: list[str] = []
    if images:
        stale_images = builder.stale_images(endpoint)
    if dry_run:
        return chosen + [i.removeprefix("sha256:")[:12] for i in fork_images] + stale_images
    removed = _remove(chosen, endpoint) + commit.remove_images(fork_images, endpoint)
    if (endpoint or hosts.default()).local:
        _remove_stale_dirs(endpoint)
    for tag in stale_images:
        engine.client(endpoint).images.remove(tag)
    return removed + stale_images


def _remove(ids: list[str], endpoint: Endpoint | None) -> list[str]:
    for container_id in ids:
        engine.remove_container(container_id, endpoint)
    if ids:
        where = f" on {endpoint.url}" if endpoint is not None else ""
        log.warning("removed %d agentgym container(s)%s: %s", len(ids), where, ", ".join(ids))
    return ids


def _remove_stale_dirs(endpoint: Endpoint | None) -> None:
    containers = engine.client(endpoint).api.containers(all=True, filters={"label": channel.LABEL})
    in_use = {(c.get("Labels") or {}).get(channel.LABEL, "") for c in containers}
    stale = channel.remove_stale(in_use)
    if stale:
        log.info("removed %d stale agentgym socket director(ies)", len(stale))


def _number(labels: dict[str, Any], key: str, kind: type[int] | type[float]) -> Any:
    try:
        return kind(labels[f"{engine.LABEL}.{key}"])
    except (KeyError, ValueError):
        return None
