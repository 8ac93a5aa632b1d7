"""The local backend: the supervisor as a child process, jailed by bubblewrap when it is installed.

With bubblewrap the supervisor runs in new user, pid, network, ipc, uts and mount namespaces (no
network at all unless ``Limits.network``, which keeps the host's), sees read-only ``/usr`` and the
few files python needs, and writes only to size-limited tmpfs at ``/tmp``, ``/dev/shm`` and
``/work``; it dies with its parent.

Without bubblewrap the supervisor makes its own mount, IPC, UTS, pid and network namespaces where the
kernel lets it (as root, or through a user namespace): every host mount read-only, fresh tmpfs at
``/tmp``, ``/dev/shm`` and a working directory of its own, no network; it can still read the
host's files.
Where it cannot (no user namespaces, or root without CAP_SYS_ADMIN) it runs with a private working
directory that is also its ``HOME`` and ``TMPDIR``, and nothing else is private: a warning says so
once, with how to install bubblewrap. Envs must therefore keep their files in the working
directory (relative paths), never at fixed absolute paths.

Either way the environment is empty (PATH, HOME, LANG only: no API key leaks in) and the supervisor puts
rlimits on everything it starts (address space, CPU, file size, processes, open files, no core
dumps, no POSIX message queues). RLIMIT_NPROC counts processes per uid and does not bind root, so
when agentgym runs as root each sandbox's code runs as its own unused uid (:func:`pick_uid`), which
makes the process cap per sandbox; the supervisor then stays root with (in bubblewrap) only the capabilities to switch
user and to signal, so code cannot kill it (as on Docker), and the sandbox can be wiped and reused.
Run as another user, everything in the jail shares one uid and each sandbox is used once.
Each sandbox is pinned to ``ceil(cpus)`` cores, taken in turn from the cores agentgym may use.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from agentgym.errors import SandboxError
from agentgym.sandboxes import fork
from agentgym.sandboxes.bootstrap import supervisor_argv, supervisor_config, supervisor_payload
from agentgym.sandboxes.client import SupervisorClient, SupervisorProtocol
from agentgym.sandboxes.contract import Limits
from agentgym.sandboxes.supervised import SupervisedSandbox

if TYPE_CHECKING:
    from agentgym.sandboxes.hosts import Endpoint

log = logging.getLogger(__name__)

PATH = "/usr/local/bin:/usr/bin:/bin"
JAIL_WORKDIR = "/work"
JAIL_UID = 65534  # the uid everything has inside an unprivileged jail
SUPERVISOR_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL")
# Per-sandbox uids when running as root: far above any real account.
UID_RANGE = (1_500_000, 1_900_000)
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/alternatives", "/etc/ssl", "/etc/mime.types")
NETWORK_ETC_FILES = ("/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf")
NOFILE = 1024
KILL_WAIT_SECONDS = 60.0  # how long a destroy waits for killed processes of the code's uid to go
# Without bubblewrap the working directory is a host directory (over which the supervisor's own jail
# mounts a tmpfs): outside /tmp, so that it does not show in the sandbox's private /tmp.
WORKDIR_PARENT = "/var/tmp" if os.path.isdir("/var/tmp") and os.access("/var/tmp", os.W_OK) else None


class LocalSandbox(SupervisedSandbox):
    """A sandbox that is one local process tree; ``id`` is ``local-<pid>``."""

    def __init__(
        self, limits: Limits, client: SupervisorClient, proc: subprocess.Popen[bytes], uid: int | None,
        workdir: str | None, recyclable: bool, session_socket: socket.socket | None = None,
    ) -> None:
        destroy = functools.partial(_destroy, proc, uid, workdir)
        super().__init__(f"local-{proc.pid}", limits, client, destroy, session_socket)
        self.proc = proc
        self._uid = uid
        self._workdir = workdir
        # Code under a uid of its own, in private mount and IPC namespaces: it can be wiped.
        self.recyclable = recyclable

    async def _start_like(self, n: int) -> list[SupervisedSandbox]:
        return await fork.start_all(n, lambda: create(self.limits))


_uids_taken: set[int] = set()
"""Uids of this process's sandboxes, from their start until they are destroyed. Process-wide, not a
runtime's: a uid is taken on the whole machine (:func:`pick_uid` also asks the kernel for the rest), and a
sandbox keeps its uid after the runtime that lent it closes, or with no runtime at all."""


def pick_uid() -> int:
    """A uid for a new sandbox's code: in :data:`UID_RANGE`, and free.

    Free means: no sandbox of this process has it (two sandboxes under one uid would kill each
    other's processes when either is wiped or destroyed), no process on the machine runs as it
    (a sandbox of another agentgym process), and it owns no key in the kernel: a uid's persistent
    keyring outlives its processes (three days by default), and the next code under that uid could
    read what an earlier user of it left there (code gets no keyrings where the supervisor's seccomp
    filter is made, but anything else on the machine, or an older agentgym, may have used that uid).
    """
    taken = _uids_taken | uids_running() | uids_with_keys()
    while True:
        uid = random.randrange(*UID_RANGE)
        if uid not in taken:
            _uids_taken.add(uid)
            return uid


def uids_running() -> set[int]:
    """The uids of every process on the machine."""
    return {uid for _, uid in processes()}


def processes() -> Iterator[tuple[int, int]]:
    """(pid, uid) of every process on the machine: the owners of the /proc/PID directories."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(FileNotFoundError):
                yield int(entry), os.stat(f"/proc/{entry}").st_uid


def uids_with_keys() -> set[int]:
    """The uids the kernel keeps keys for (``/proc/key-users``), empty where keyrings are unavailable."""
    try:
        with open("/proc/key-users", encoding="ascii") as f:
            return {int(line.split(":", 1)[0]) for line in f if ":" in line}
    except OSError:
        return set()


def _destroy(proc: subprocess.Popen[bytes], uid: int | None, workdir: str | None) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    # Processes that left the process group (setsid), and jailed ones dying after bwrap: kill what is
    # left of the code's uid until nothing is, so that a closed sandbox uses no CPU and no memory. A
    # killed process goes however busy the machine is (a count of tries once gave up under load); the
    # deadline is only for one stuck in the kernel, which is logged.
    deadline = time.monotonic() + KILL_WAIT_SECONDS
    pause = 0.005
    while uid is not None and kill_uid(uid):
        if time.monotonic() > deadline:
            log.warning("processes of sandbox uid %d outlived SIGKILL for %g s", uid, KILL_WAIT_SECONDS)
            break
        time.sleep(pause)
        pause = min(2 * pause, 0.1)
    if uid is not None:
        _uids_taken.discard(uid)
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)


async def create(limits: Limits | None = None) -> LocalSandbox:
    """Start a local sandbox.

    Raises:
        SandboxError: The supervisor could not be started.
    """
    limits = limits or Limits()
    if limits.writable_root:
        raise SandboxError("Limits(writable_root=True) needs the docker backend: a local sandbox has no root "
                           "filesystem of its own to write")
    python = interpreter()
    uid = pick_uid() if os.geteuid() == 0 else None
    rlimits = {
        "AS": limits.memory_mb << 20,
        "CPU": math.ceil(limits.wall_seconds * max(1.0, limits.cpus)),
        "FSIZE": limits.disk_mb << 20,
        "NOFILE": NOFILE,
        "CORE": 0,
        "MSGQUEUE": 0,  # POSIX queues live in the IPC namespace where no wipe could list them
    }
    if uid is not None:
        rlimits["NPROC"] = limits.pids
    env = {"PATH": PATH, "LANG": "C.UTF-8"}
    cores = pick_cores(limits.cpus)
    # As root the supervisor stays root (in bubblewrap with only the capabilities to switch user and to
    # signal) and code runs as ``uid``: code cannot kill the supervisor. Otherwise all is one uid.
    code_user = (uid, uid) if uid is not None else None
    run_as = None
    recyclable = uid is not None
    if bubblewrap() is not None:
        workdir = None
        config = supervisor_config(limits, workdir=JAIL_WORKDIR, rlimits=rlimits, cores=cores, user=code_user)
        argv = [*jail_argv(python, limits, uid), *supervisor_argv(python, config)]
        env["HOME"] = JAIL_WORKDIR
    else:
        workdir = tempfile.mkdtemp(prefix="agentgym-sandbox-", dir=WORKDIR_PARENT)
        env["HOME"] = workdir
        if namespaces():
            _warn_no_bubblewrap()
            jail = {"workdir": workdir, "disk_mb": limits.disk_mb, "network": limits.network}
            config = supervisor_config(limits, workdir=workdir, rlimits=rlimits, cores=cores, user=code_user, jail=jail)
        else:
            _warn_unjailed()
            if uid is not None:
                os.chown(workdir, uid, uid)
            config = supervisor_config(limits, workdir=workdir, rlimits=rlimits, cores=cores)
            env["TMPDIR"] = workdir
            run_as, recyclable = uid, False
        argv = supervisor_argv(python, config)
    # The socket the supervisor sends its session's pipes on (sandboxes/direct_session.py): its end keeps its number.
    session_socket, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    config["lend_fd"] = theirs.fileno()
    argv[-1] = json.dumps(config)
    try:
        # Started on the event loop's thread (not in a worker thread that may end), because
        # --die-with-parent follows the thread that forked; a fork takes about a millisecond.
        proc = subprocess.Popen(  # noqa: ASYNC220
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd="/", start_new_session=True, close_fds=True, pass_fds=(theirs.fileno(),),
            user=run_as, group=run_as, extra_groups=[] if run_as is not None else None,
        )
    except OSError as e:
        session_socket.close()
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
        if uid is not None:
            _uids_taken.discard(uid)
        raise SandboxError(f"could not start the local sandbox supervisor: {e}") from e
    finally:
        theirs.close()
    session_socket.setblocking(False)
    loop = asyncio.get_running_loop()
    assert proc.stdin is not None and proc.stdout is not None
    transport, _ = await loop.connect_write_pipe(asyncio.BaseProtocol, proc.stdin)
    transport.write(supervisor_payload())  # the bootstrap reads the supervisor's modules from stdin first
    _, protocol = await loop.connect_read_pipe(SupervisorProtocol, proc.stdout)
    client = SupervisorClient(transport, protocol, name=f"local-{proc.pid}")
    sandbox = LocalSandbox(limits, client, proc, uid, workdir, recyclable, session_socket)
    await sandbox._wait_ready()
    return sandbox


_turn = itertools.count()
"""Whose turn of the cores is next. Process-wide: every runtime open at once competes for the same cores,
so one count spreads all of them (a count per runtime would start each on the same first cores)."""


def pick_cores(cpus: float) -> list[int]:
    """``ceil(cpus)`` of the cores this process may use, a different slice for each sandbox in turn."""
    allowed = sorted(os.sched_getaffinity(0))
    count = min(len(allowed), max(1, math.ceil(cpus)))
    first = next(_turn) * count
    return [allowed[(first + i) % len(allowed)] for i in range(count)]


@functools.cache
def bubblewrap() -> str | None:
    """Path of ``bwrap`` if it is installed and can make a user namespace here."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    probe = subprocess.run(
        [path, "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip()
        log.warning("bubblewrap cannot create namespaces here: %s", reason)
        return None
    return path


@functools.cache
def namespaces() -> bool:
    """Whether the supervisor can make its own namespaces here (without bubblewrap): tried once, in a probe."""
    workdir = tempfile.mkdtemp(prefix="agentgym-probe-", dir=WORKDIR_PARENT)
    config = {"jail": {"workdir": workdir, "disk_mb": 1, "network": False}, "probe": True}
    try:
        probe = subprocess.run(
            supervisor_argv(interpreter(), config), input=supervisor_payload(), capture_output=True, check=False,
            env={"PATH": PATH, "LANG": "C.UTF-8"}, cwd="/", timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("could not probe for namespaces: %s", e)
        return False
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if probe.returncode != 0:
        reason = probe.stderr.decode(errors="replace").strip().splitlines()
        log.info("local sandboxes cannot make their own namespaces here: %s", reason[-1] if reason else "")
        return False
    return True


@functools.cache
def interpreter() -> str:
    """The Python that runs the supervisor: the system one when there is one (its files live in /usr)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    return sys.executable


def jail_argv(python: str, limits: Limits, code_uid: int | None) -> list[str]:
    """The bubblewrap command line that jails the supervisor.

    With ``code_uid`` (agentgym runs as root) bubblewrap runs privileged: no user namespace, every
    capability dropped but those the supervisor needs to run code as ``code_uid``. Without it,
    bubblewrap makes an unprivileged user namespace and everything inside is uid 65534.
    """
    bwrap = bubblewrap()
    assert bwrap is not None
    size = str(limits.disk_mb << 20)
    argv = [
        bwrap, "--die-with-parent", "--new-session", "--clearenv",
        "--setenv", "PATH", PATH, "--setenv", "HOME", JAIL_WORKDIR, "--setenv", "LANG", "C.UTF-8",
    ]
    if code_uid is not None:
        argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        argv += [] if limits.network else ["--unshare-net"]
        argv += ["--cap-drop", "ALL"]
        for cap in SUPERVISOR_CAPS:
            argv += ["--cap-add", cap]
    else:
        argv += ["--unshare-all", "--uid", str(JAIL_UID), "--gid", str(JAIL_UID)]
        argv += ["--share-net"] if limits.network else []
    argv += ["--hostname", "sandbox", "--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for path in ETC_FILES + (NETWORK_ETC_FILES if limits.network else ()):  # name resolution
        argv += ["--ro-bind-try", path, path]
    prefix = os.path.realpath(sys.prefix if python == sys.executable else "/usr")
    if not prefix.startswith("/usr"):
        argv += ["--ro-bind", prefix, prefix]
    argv += [
        "--proc", "/proc", "--dev", "/dev",
        "--size", size, "--perms", "1777", "--tmpfs", "/dev/shm",
        "--size", size, "--perms", "1777", "--tmpfs", "/tmp",
        "--size", size, "--perms", "1777" if code_uid is not None else "0755", "--tmpfs", JAIL_WORKDIR,
        "--remount-ro", "/", "--chdir", JAIL_WORKDIR,
    ]
    return argv


def kill_uid(uid: int) -> int:
    """SIGKILL every live process of ``uid`` (a uid only this sandbox uses); return how many there were."""
    found = 0
    for pid, owner in processes():
        if owner != uid:
            continue
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue  # already dead, waiting for its parent
            os.kill(pid, signal.SIGKILL)
            found += 1
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


INSTALL_BUBBLEWRAP = "install bubblewrap (apt-get install bubblewrap, dnf install bubblewrap) for full isolation"


@functools.cache
def _warn_no_bubblewrap() -> None:
    log.warning(
        "bubblewrap is not installed: local sandboxes make namespaces of their own (private /tmp, working "
        "directory, IPC and processes, no network unless asked for), but code can read the host's files; %s",
        INSTALL_BUBBLEWRAP,
    )


@functools.cache
def _warn_unjailed() -> None:
    log.warning(
        "bubblewrap is not installed and namespaces are not available: local sandboxes have rlimits, an "
        "empty environment and a private working directory (also HOME and TMPDIR), but no network or "
        "file isolation, and /tmp is the host's; %s", INSTALL_BUBBLEWRAP
    )


class LocalBackend:
    """The ``"local"`` backend (:mod:`agentgym.sandboxes.backends`): a jailed process per sandbox."""

    name = "local"

    async def start(
        self, image: str, limits: Limits, hosts: Sequence[Endpoint] | None = None, *, spare: bool = False
    ) -> LocalSandbox:
        """A process running the host's Python (``image`` and ``hosts`` name Docker things: not used here)."""
        return await create(limits)


BACKEND = LocalBackend()
