"""How Chromium starts for a browser sandbox: in a container (``docker``) or on the host (``local``).

Both are Playwright's ordinary ``chromium.launch(executable_path=...)`` over ``--remote-debugging-pipe``,
with the pipe running through this process (:class:`~agentgym.sandboxes.browser.direct.DirectPipe`):
the executable is the pipe's launcher, which hands the pipe over and execs the host's Chromium, or
``docker run -i --rm --network none <image> ...`` whose stdin/stdout the container maps onto
Chromium's pipe fds 3/4: no port and no socket on the host once the browser runs, and nothing but
the pipe between the page and the host. The container carries the owner labels of every agentgym
container (:func:`~agentgym.sandboxes.engine.owner_labels`), so ``agentgym sandbox ls``/``prune`` and
the reaper treat it like the others, plus ``agentgym.kind=browser``.

Each launch goes through the Playwright driver it is given: the sandbox runtime's
(:mod:`~agentgym.sandboxes.browser.driver`). Playwright is imported here only inside functions, so
``import agentgym`` never imports it.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from agentgym.errors import SandboxError
from agentgym.sandboxes import channel, engine
from agentgym.sandboxes.browser.direct import DirectPipe, Fifos
from agentgym.sandboxes.browser.frames import ON_DEMAND_ARGS

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

IMAGE = "chromium"  # the recipe in agentgym/sandboxes/images/chromium.json
HEADLESS_SHELL = "chromium-headless-shell"
LOCAL_CHROMIUMS = (f"/usr/bin/{HEADLESS_SHELL}", "/usr/bin/chromium")
"""Debian's, in order of preference (``playwright install`` is not needed). The headless shell (package
``chromium-headless-shell``, the "old headless" Playwright itself runs headless) starts in about a third
of the time of the full browser, opens contexts faster, and can draw frames on demand (``frames.py``)."""
KIND_LABEL = f"{engine.LABEL}.kind"
PID_FILE = "/tmp/chromium.pid"  # inside the container: the browser process, for kill_browser()
MARKER = "--agentgym-browser"  # an inert switch naming a local browser's main process, for kill_browser()
CODE_UID = 65534
CODE_USER = f"{CODE_UID}:{CODE_UID}"
PIPE_MOUNT = "/run/agentgym"
"""Where the directory of a browser's FIFOs appears in its container (see ``direct.Fifos``)."""
LAUNCH_TIMEOUT_MS = 60_000
LOCAL_NETWORK_ARGS = ("--proxy-server=http://192.0.2.1:9", "--proxy-bypass-list=<-loopback>",
                      "--host-resolver-rules=MAP * ~NOTFOUND",
                      "--force-webrtc-ip-handling-policy=disable_non_proxied_udp")
"""What keeps the host's Chromium (the local backend) off the network, short of a namespace: every
connection its network stack makes (HTTP a Playwright route did not answer, WebSocket, WebRTC's TCP)
goes to a proxy at a documentation address (192.0.2.0/24, never routed), loopback included (by
default Chromium bypasses proxies for it); no host name resolves; and WebRTC may not send UDP
outside a proxy (no STUN, no direct media). What it does not cover is listed in docs/gui.md."""
# Inside the container: note Chromium's pid, then become Chromium with the pipe on fds 3 (commands,
# the container's stdin) and 4 (replies, its stdout); Chromium's own stdout joins its stderr.
# The binary itself: Debian's /usr/bin/chromium-headless-shell is a script that runs it as a child.
INNER = f'echo $$ >{PID_FILE} && exec /usr/lib/chromium/{HEADLESS_SHELL} "$@" 3<&0 4>&1 </dev/null >&2'
# The same with the pipe as two FIFOs in a mounted directory ($0 commands in, $1 replies out). The replies'
# FIFO is opened first: its reader is waiting, while the host opens the commands' one once this side has.
INNER_FIFOS = (f'echo $$ >{PID_FILE} && out=$1 && shift && '
               f'exec /usr/lib/chromium/{HEADLESS_SHELL} "$@" 4>"$out" 3<"$0" </dev/null >&2')


class BrowserLimits(BaseModel):
    """What a browser sandbox may use (Docker enforces every field; the local backend none).

    Attributes:
        cpus: CPU cores (a quota).
        memory_mb: Memory of the whole container, its ``/tmp`` tmpfs included (Chromium's profile
            and shared memory live there: Playwright passes ``--disable-dev-shm-usage``).
        pids: Processes and threads at once; Chromium runs about a hundred threads.
        disk_mb: Size of the container's ``/tmp`` tmpfs, the only writable place.
        wall_seconds: Lifetime; after it Chromium is killed and the container goes. A warm pool
            stops handing out a browser past half of it.
    """

    model_config = ConfigDict(frozen=True)

    cpus: float = 1.0
    memory_mb: int = 1024
    pids: int = 512
    disk_mb: int = 256
    wall_seconds: float = 6 * 3600.0


_prepared: list[str] = []
"""The image's reference, once it is known to exist: a fact about the engine, true for the whole process
(as the Docker backend's images, ``docker._ready_images``), so it is no runtime's to forget."""


def prepare_image() -> str:
    """Once per process: reap leaked agentgym containers and make sure the Chromium image exists.

    Blocking: the first build takes about a minute and a half (see ``images/chromium.json``).

    Raises:
        SandboxError: The image could not be built.
    """
    if not _prepared:
        import docker

        from agentgym.sandboxes import builder, reaper

        try:
            reaper.reap()
            _prepared.append(builder.ensure(IMAGE))
        except docker.errors.DockerException as e:
            raise SandboxError(f"could not prepare the browser image: {e}") from e
    return _prepared[0]


def container_name() -> str:
    """A fresh container name: the handle to the container before its id is known."""
    return f"agentgym-browser-{uuid.uuid4().hex[:12]}"


def docker_run_args(name: str, ref: str, limits: BrowserLimits, fifos: Fifos | None = None) -> list[str]:
    """``docker run`` options, image and command up to Chromium's arguments (Playwright's follow them).

    No network, a read-only root with a size-capped ``/tmp``, capped memory (no swap), CPU and
    processes, no capabilities, no privilege escalation, an unprivileged user, and an environment
    of HOME and LANG only (the image sets PATH): nothing of the host's environment, files or
    Docker socket. ``--init`` reaps Chromium's children and ends the container when Chromium
    ends; ``timeout`` enforces the wall time inside. The DevTools pipe is the container's stdin
    and stdout (``--interactive``: Docker's attach stream), or with ``fifos`` the two FIFOs of
    their directory, mounted read-only at :data:`PIPE_MOUNT`: nothing else of the host's.
    """
    labels = {**engine.owner_labels(limits.wall_seconds), KIND_LABEL: "browser"}
    if fifos is None:
        stdio, inner = ["--interactive"], ["sh", "-c", INNER, "chromium"]
    else:
        stdio = [f"--mount=type=bind,source={fifos.dir},target={PIPE_MOUNT},readonly"]
        inner = ["sh", "-c", INNER_FIFOS, f"{PIPE_MOUNT}/{fifos.into}", f"{PIPE_MOUNT}/{fifos.out}"]
    return [
        *stdio, "--rm", "--init", f"--name={name}",
        "--network=none",
        f"--memory={limits.memory_mb}m", f"--memory-swap={limits.memory_mb}m",
        f"--cpus={limits.cpus:g}", f"--pids-limit={limits.pids}",
        "--read-only", f"--tmpfs=/tmp:rw,nosuid,nodev,size={limits.disk_mb}m,mode=1777",
        "--cap-drop=ALL", "--security-opt=no-new-privileges", f"--user={CODE_USER}",
        "--ulimit=core=0", "--log-driver=none",
        "--env=HOME=/tmp", "--env=LANG=C.UTF-8",
        *(f"--label={key}={value}" for key, value in labels.items()),
        ref,
        "timeout", "-s", "KILL", f"{int(limits.wall_seconds)}",
        *inner,
    ]


def can_draw_on_demand(executable: str) -> bool:
    """Whether ``executable`` is Chromium's headless shell, the one that draws frames on demand."""
    return Path(executable).name == HEADLESS_SHELL


async def launch_docker(pw: Playwright, name: str, ref: str, limits: BrowserLimits,
                        on_demand: bool) -> tuple[Browser, DirectPipe]:
    """Start Chromium (the image's headless shell) in container ``name`` from image ``ref``, driven by ``pw``.

    The caller removes the container on failure. ``on_demand``: draw frames only when asked.

    Raises:
        SandboxError: Chromium did not start (the message carries Playwright's log of why).
    """
    args = list(ON_DEMAND_ARGS) if on_demand else []
    fifos = Fifos(CODE_UID) if await asyncio.to_thread(channel.usable) else None
    return await _launch(pw, ["docker", "run", *docker_run_args(name, ref, limits, fifos)], args, fifos)


def local_chromium() -> str:
    """The host's Chromium for the local backend: the headless shell if installed, else the full browser.

    Raises:
        SandboxError: Neither is installed (the message names both).
    """
    for path in LOCAL_CHROMIUMS:
        if os.access(path, os.X_OK):
            return path
    raise SandboxError(f"the local browser backend needs Chromium at {' or '.join(LOCAL_CHROMIUMS)}: "
                       "apt-get install chromium-headless-shell")


async def launch_local(pw: Playwright, executable: str, marker: str, on_demand: bool) -> tuple[Browser, DirectPipe]:
    """Start the host's Chromium at ``executable`` (no isolation at all), its main process tagged with ``marker``,
    driven by ``pw``.

    ``on_demand``: draw frames only when asked (the headless shell only: :func:`can_draw_on_demand`).

    Raises:
        SandboxError: Chromium did not start.
    """
    args = [f"{MARKER}={marker}", *LOCAL_NETWORK_ARGS, *(ON_DEMAND_ARGS if on_demand else ())]
    return await _launch(pw, [executable], args)


async def _launch(pw: Playwright, command: list[str], args: list[str],
                  fifos: Fifos | None = None) -> tuple[Browser, DirectPipe]:
    """``pw``'s launch of ``command`` + its arguments + ``args``, the pipe relayed by this process."""
    from playwright.async_api import Error

    pipe = DirectPipe(fifos)
    attached = asyncio.ensure_future(pipe.attach())
    try:
        browser = await pw.chromium.launch(
            executable_path=pipe.executable, args=args, env={**os.environ, **pipe.launch_env(command)},
            headless=True, timeout=LAUNCH_TIMEOUT_MS,
        )
        await attached  # done: Playwright spoke to the browser through it
    except BaseException as e:
        attached.cancel()
        await asyncio.gather(attached, return_exceptions=True)
        pipe.close("the launch failed")
        if isinstance(e, Error):
            raise SandboxError(f"Chromium did not start: {e.message}") from e
        raise
    return browser, pipe


def local_browser_pid(marker: str) -> int | None:
    """The pid of the local Chromium whose main process carries ``marker``, or None if it is gone.

    Debian's ``/usr/bin`` launchers are shell scripts that may run Chromium as a child rather than
    exec it; the script carries the marker too, so only a process whose program is Chromium counts.
    """
    wanted = f"{MARKER}={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
            program = Path(os.readlink(entry / "exe")).name
        except OSError:
            continue
        if wanted in args and not any(a.startswith(b"--type=") for a in args) and program.startswith("chromium"):
            return int(entry.name)
    return None
