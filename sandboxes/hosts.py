"""Docker endpoints: which engines sandboxes run on, and how many each may hold.

An :class:`Endpoint` names one Docker engine the way ``DOCKER_HOST`` does (``unix:///path``,
``tcp://host:port`` with or without TLS, ``ssh://[user@]host[:port]``) and the most sandboxes
this process keeps on it at once (its ``capacity``; none means no ceiling). A process has a list
of endpoints (:func:`configured`): set in code with :func:`configure`, else from
``AGENTGYM_DOCKER_HOSTS`` (``URL[=CAP]`` items separated by commas; the command line's
``--docker-host URL[=CAP]``, repeatable, sets it for the run and its workers); with neither, the
one engine ``DOCKER_HOST`` names (the local socket by default). TLS follows Docker's own
variables for every ``tcp://`` endpoint given as text: ``DOCKER_TLS_VERIFY`` set to a non-empty
value turns it on, with ``ca.pem``, ``cert.pem`` and ``key.pem`` from ``DOCKER_CERT_PATH``
(default ``~/.docker``).

Each new sandbox goes to the endpoint with the lowest share of its capacity in use once it is
added (so capacities 3 and 1 take sandboxes 3 to 1). Idle spares must not starve callers: a spare
is only started where there is room (:func:`place` with no wait), and a caller who finds every
endpoint full asks the pools (registered with :func:`add_holder`) to give up an idle spare there,
then waits for the place it frees. Counts are this process's own: processes sharing engines divide
their capacities between them.

What this module keeps is process-wide, not a :class:`~agentgym.sandboxes.runtime.SandboxRuntime`'s:
the endpoints are configuration, like the environment variables they override; a capacity bounds what
the whole process keeps on an engine, so the live counts must see every sandbox on it, whichever
runtime's pool started it, or none (:func:`~agentgym.sandboxes.backends.start`, a fork), and also one that
outlives its runtime (a place is given back by the sandbox's destroy, which may run from a finalizer
on any thread); counts per runtime would let two runtimes open at once each fill an engine. For the
same reason any pool of the process may give up an idle spare to a caller who finds its engines full.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import os
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Protocol
from urllib.parse import urlsplit

from agentgym.errors import SandboxError

ENV_VAR = "AGENTGYM_DOCKER_HOSTS"
DEFAULT_URL = "unix:///var/run/docker.sock"
SCHEMES = ("unix", "tcp", "ssh")
PLACE_SECONDS = 60.0  # how long a start waits for a place on a full set of endpoints
PLACE_POLL_SECONDS = 0.05
RECLAIM_SECONDS = 1.0  # a waiting caller has another idle sandbox destroyed no sooner than this


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One Docker engine and how many sandboxes this process may keep on it.

    Two endpoints are the same engine when URL and TLS settings match; ``capacity`` is not part
    of that (it is a budget, not an address).

    Attributes:
        url: ``unix:///run/docker.sock``, ``tcp://10.0.0.5:2376`` or ``ssh://user@host``.
        capacity: The most sandboxes on it at once from this process; ``None``: no ceiling.
        tls_verify: Talk TLS to a ``tcp://`` engine and check its certificate against ``ca.pem``.
        cert_path: Directory with ``ca.pem``, ``cert.pem`` and ``key.pem`` (default:
            ``DOCKER_CERT_PATH``, else ``~/.docker``).
    """

    url: str
    capacity: int | None = dataclasses.field(default=None, compare=False)
    tls_verify: bool = False
    cert_path: str | None = None

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in SCHEMES:
            raise SandboxError(f"Docker endpoint {self.url!r}: use unix:///path, tcp://host:port or ssh://[user@]host")
        if parts.scheme == "unix" and not parts.path:
            raise SandboxError(f"Docker endpoint {self.url!r} names no socket path")
        if parts.scheme in ("tcp", "ssh") and not parts.hostname:
            raise SandboxError(f"Docker endpoint {self.url!r} names no host")
        if parts.scheme == "tcp" and parts.port is None:
            raise SandboxError(f"Docker endpoint {self.url!r} names no port (2375 plain, 2376 with TLS)")
        if self.capacity is not None and self.capacity < 1:
            raise SandboxError(f"Docker endpoint {self.url!r}: capacity must be at least 1, not {self.capacity}")
        if self.tls_verify and parts.scheme != "tcp":
            raise SandboxError(f"Docker endpoint {self.url!r}: TLS is for tcp:// endpoints")

    def __str__(self) -> str:
        return self.url if self.capacity is None else f"{self.url}={self.capacity}"

    @property
    def scheme(self) -> str:
        return urlsplit(self.url).scheme

    @property
    def local(self) -> bool:
        """Whether the engine shares this machine's filesystem (a unix socket), which the direct socket path needs."""
        return self.scheme == "unix"

    def certificates(self) -> tuple[str, str, str]:
        """Paths of ``ca.pem``, ``cert.pem`` and ``key.pem`` for a TLS endpoint.

        Raises:
            SandboxError: One of them is missing.
        """
        folder = self.cert_path or os.environ.get("DOCKER_CERT_PATH") or os.path.expanduser("~/.docker")
        paths = tuple(os.path.join(folder, name) for name in ("ca.pem", "cert.pem", "key.pem"))
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise SandboxError(f"Docker endpoint {self.url} wants TLS but {', '.join(missing)} is missing")
        return paths  # type: ignore[return-value]


def parse(text: str) -> Endpoint:
    """An endpoint from ``URL[=CAPACITY]``, e.g. ``tcp://10.0.0.5:2376=64``; TLS from Docker's variables.

    Raises:
        SandboxError: A malformed URL or capacity; the message shows the expected form.
    """
    url, sep, cap = text.strip().rpartition("=")
    if not sep:
        url, cap = cap, ""
    capacity: int | None = None
    if sep:
        try:
            capacity = int(cap)
        except ValueError:
            raise SandboxError(f"Docker endpoint {text!r}: expected URL[=CAPACITY] with a whole number") from None
    tls = url.startswith("tcp://") and bool(os.environ.get("DOCKER_TLS_VERIFY"))
    return Endpoint(url, capacity, tls_verify=tls)


def default() -> Endpoint:
    """The engine ``DOCKER_HOST`` names (the local socket if unset), with no capacity ceiling."""
    return parse(os.environ.get("DOCKER_HOST") or DEFAULT_URL)


_configured: tuple[Endpoint, ...] | None = None  # set by configure(): process configuration, as the variables


def configure(endpoints: Sequence[Endpoint | str] | None) -> None:
    """Set this process's endpoints (``None``: back to ``AGENTGYM_DOCKER_HOSTS`` / ``DOCKER_HOST``).

    Raises:
        SandboxError: A malformed endpoint, the same engine twice, or an empty list.
    """
    global _configured
    if endpoints is None:
        _configured = None
        return
    _configured = _checked([parse(e) if isinstance(e, str) else e for e in endpoints])


def configured() -> tuple[Endpoint, ...]:
    """This process's endpoints: from :func:`configure`, else ``AGENTGYM_DOCKER_HOSTS``, else :func:`default`.

    Raises:
        SandboxError: ``AGENTGYM_DOCKER_HOSTS`` is malformed.
    """
    if _configured is not None:
        return _configured
    listed = os.environ.get(ENV_VAR, "").strip()
    if listed:
        try:
            return _checked([parse(item) for item in listed.split(",") if item.strip()])
        except SandboxError as e:
            raise SandboxError(f"{ENV_VAR}: {e}") from None
    return (default(),)


def _checked(endpoints: list[Endpoint]) -> tuple[Endpoint, ...]:
    if not endpoints:
        raise SandboxError("no Docker endpoint given")
    seen = set()
    for endpoint in endpoints:
        if endpoint in seen:
            raise SandboxError(f"Docker endpoint {endpoint.url} is given twice")
        seen.add(endpoint)
    return tuple(endpoints)


class EndpointsFull(SandboxError):
    """Every endpoint a sandbox may go to holds its capacity."""


class Holder(Protocol):
    """Something that keeps idle sandboxes (a pool) and can give one up to free its place."""

    def reclaim(self, endpoints: Sequence[Endpoint]) -> bool:
        """Destroy one idle sandbox on one of ``endpoints``; whether there was one."""
        ...


_holders: weakref.WeakSet[Holder] = weakref.WeakSet()  # type: ignore[type-var]  # every runtime's pools, and others


def add_holder(holder: Holder) -> None:
    """Let callers who find every endpoint full take ``holder``'s idle sandboxes' places."""
    _holders.add(holder)


# ---------------------------------------------------------------------------------------- placement
_live: collections.Counter[Endpoint] = collections.Counter()  # the process's sandboxes per engine (see above)
_lock = threading.Lock()  # released from finalizers, which may run on any thread


def live(endpoint: Endpoint) -> int:
    """Sandboxes this process has on ``endpoint`` now (started or starting, not yet destroyed)."""
    with _lock:
        return _live[endpoint]


class Slot:
    """One sandbox's place on an endpoint; :meth:`release` gives it back once, however often it is called."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._held = True

    def release(self) -> None:
        with _lock:
            if self._held:
                self._held = False
                _live[self.endpoint] -= 1

    def hold(self) -> None:
        """Count the place again after a release (a failed first try whose retry goes to the same engine)."""
        with _lock:
            if not self._held:
                self._held = True
                _live[self.endpoint] += 1


def take(endpoints: Sequence[Endpoint]) -> Slot | None:
    """A place on the endpoint with room that is least loaded once it is counted; ``None`` if all are full."""
    with _lock:
        room = [e for e in endpoints if e.capacity is None or _live[e] < e.capacity]
        if not room:
            return None
        chosen = min(room, key=lambda e: 0.0 if e.capacity is None else (_live[e] + 1) / e.capacity)
        _live[chosen] += 1
        return Slot(chosen)


async def place(endpoints: Sequence[Endpoint], seconds: float = PLACE_SECONDS) -> Slot:
    """:func:`take`, or when every endpoint is full, have a holder give up an idle sandbox and wait up to ``seconds``.

    Raises:
        EndpointsFull: Still full after ``seconds``; the message gives each endpoint's count.
    """
    now = time.monotonic()
    deadline, ask_at = now + seconds, now
    while (slot := take(endpoints)) is None:
        now = time.monotonic()
        if now >= deadline:
            load = ", ".join(f"{e.url} {live(e)}/{e.capacity}" for e in endpoints)
            raise EndpointsFull(f"every Docker endpoint is full ({load}): raise a capacity or add an endpoint")
        if now >= ask_at and any(holder.reclaim(endpoints) for holder in list(_holders)):
            # One idle sandbox at a time: its destroy frees the place this caller then takes. Ask
            # again only if the place went to someone else meanwhile, or a spare went idle since.
            ask_at = now + RECLAIM_SECONDS
        await asyncio.sleep(PLACE_POLL_SECONDS)
    return slot
