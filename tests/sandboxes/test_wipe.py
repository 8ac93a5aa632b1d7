"""A wipe leaves nothing of the last user: every kind of state code can leave is removed, checked, or
the sandbox is destroyed. Run on Docker, on bubblewrap, and on the local backend's own namespaces."""

from __future__ import annotations

import ctypes
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from agentgym.sandboxes import local
from agentgym.sandboxes.pool import SandboxPool, start
from agentgym.sandboxes.sandbox import AgentSandbox
from tests.conftest import docker_or_skip
from tests.sandboxes.conftest import SMALL

SECRET = "agentgym-hidden-tests"


def use(flavour: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Prepare ``flavour`` and return its backend's name."""
    if flavour == "docker":
        docker_or_skip()
    if flavour == "local-namespaces":
        monkeypatch.setattr(local, "bubblewrap", lambda: None)
        if not local.namespaces():
            pytest.skip("this machine lets no process make namespaces (needs root or user namespaces)")
    return flavour.split("-")[0]


@pytest.fixture(params=[pytest.param("docker", marks=pytest.mark.docker), "local", "local-namespaces"])
def backend_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Docker; local under bubblewrap; local under the agent's own namespaces (bubblewrap hidden)."""
    return use(request.param, monkeypatch)


@pytest.fixture(params=["local", "local-namespaces"])
def local_name(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The local flavours only: code in Docker cannot use keyrings (see test_docker_refuses_keyrings)."""
    return use(request.param, monkeypatch)


@asynccontextmanager
async def pool_of_one(backend: str) -> AsyncIterator[SandboxPool]:
    """A pool of exactly one sandbox, so that the next acquire returns the one just wiped."""
    one = SandboxPool(backend, "python", SMALL, size=1, max_size=1)
    try:
        await one.fill()
        yield one
    finally:
        await one.shutdown()


@pytest.fixture
async def pool(backend_name: str) -> AsyncIterator[SandboxPool]:
    async with pool_of_one(backend_name) as one:
        yield one


@pytest.fixture
async def local_pool(local_name: str) -> AsyncIterator[SandboxPool]:
    async with pool_of_one(local_name) as one:
        yield one


async def recycled(pool: SandboxPool, leave: str) -> tuple[AgentSandbox, AgentSandbox]:
    """Run ``leave`` in a sandbox, close it and take the same sandbox back, wiped."""
    first = await pool.acquire()
    result = await first.run_python(leave)
    assert result.error is None, result
    await first.close()
    again = await pool.acquire()
    return first, again


LEAVE_IPC = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT = 0o1000
shm = libc.shmget(0x5EC2E7, 4096, IPC_CREAT | 0o600)
libc.shmat.restype = ctypes.c_void_p
address = libc.shmat(shm, None, 0)
ctypes.memmove(address, b"{SECRET}", {len(SECRET)})
queue = libc.msgget(0x5EC2E8, IPC_CREAT | 0o600)
message = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + 64)
ctypes.memmove(message, (1).to_bytes(8, "little") + b"{SECRET}", 8 + {len(SECRET)})
assert libc.msgsnd(queue, message, {len(SECRET)}, 0) == 0, ctypes.get_errno()
assert libc.semget(0x5EC2E9, 3, IPC_CREAT | 0o600) >= 0
assert min(shm, queue) >= 0
for table in ("shm", "msg", "sem"):
    assert len(open("/proc/sysvipc/" + table).read().splitlines()) == 2, table
"""

SNOOP_IPC = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
left = [line for table in ("shm", "msg", "sem") for line in open("/proc/sysvipc/" + table).read().splitlines()[1:]]
print(left, libc.shmget(0x5EC2E7, 0, 0), libc.msgget(0x5EC2E8, 0), libc.semget(0x5EC2E9, 0, 0))
"""


async def test_sysv_ipc_objects_are_removed(pool: SandboxPool) -> None:
    first, again = await recycled(pool, LEAVE_IPC)
    assert again.id == first.id
    assert (await again.run_python(SNOOP_IPC)).output == "[] -1 -1 -1\n"


LEAVE_FILES = f"""
import os
for place in ("/tmp", ".", "/dev/shm"):
    open(place + "/.hidden", "w").write("{SECRET}")
    os.makedirs(place + "/locked/deeper")
    open(place + "/locked/deeper/f", "w").write("{SECRET}")
    os.mkfifo(place + "/fifo")
    os.symlink("/etc/hostname", place + "/link")
    os.chmod(place + "/locked/deeper", 0)
    os.chmod(place + "/locked", 0)
"""

SNOOP_FILES = """
import os
print([sorted(os.listdir(place)) for place in ("/tmp", ".", "/dev/shm")])
"""


async def test_files_in_every_writable_place_are_removed(pool: SandboxPool) -> None:
    first, again = await recycled(pool, LEAVE_FILES)
    assert again.id == first.id
    assert (await again.run_python(SNOOP_FILES)).output == "[[], [], []]\n"


LEAVE_PROCESSES = """
import os, signal, subprocess, time
subprocess.Popen(["sleep", "300"], start_new_session=True)
stopped = subprocess.Popen(["sleep", "300"])
os.kill(stopped.pid, signal.SIGSTOP)
if os.fork() == 0:  # a copy of the session itself, never exec'd, in a session of its own
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(300)
    os._exit(0)
"""

SNOOP_PROCESSES = """
import os
def status(pid):
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
    return int(fields["Uid"].split()[0]), fields["Name"].strip(), fields["State"].split()[0]
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
print([(p, *status(p)[1:]) for p in others if status(p)[0] == os.getuid()])  # zombies included
"""


async def test_every_process_of_the_code_is_killed(pool: SandboxPool) -> None:
    first, again = await recycled(pool, LEAVE_PROCESSES)
    assert again.id == first.id
    assert (await again.run_python(SNOOP_PROCESSES)).output == "[]\n"
    assert (await again.exec("echo alive")).stdout == "alive\n"


KEYCTL = {"x86_64": 250, "aarch64": 219}
ADD_KEY = {"x86_64": 248, "aarch64": 217}

LEAVE_KEYS = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD_KEY, KEYCTL = {ADD_KEY}[os.uname().machine], {KEYCTL}[os.uname().machine]
def add(kind, name, payload, ring):
    key = libc.syscall(ADD_KEY, kind, name, payload, len(payload) if payload else 0, ctypes.c_long(ring))
    assert key > 0, (name, ctypes.get_errno())
    return key
for ring, name in ((-4, b"user"), (-5, b"user-session"), (-3, b"session")):  # @u, @us, @s
    add(b"user", b"{SECRET}-" + name, b"{SECRET}", ring)
nested = add(b"keyring", b"{SECRET}-ring", None, -3)
add(b"user", b"{SECRET}-nested", b"{SECRET}", nested)
user = libc.syscall(KEYCTL, 0, ctypes.c_long(-4), 0)
assert libc.syscall(KEYCTL, 8, ctypes.c_long(nested), ctypes.c_long(user)) == 0  # linked into @u: outlives us
assert libc.syscall(KEYCTL, 15, ctypes.c_long(user), 3600) == 0  # a timeout on the user keyring
"""

SNOOP_KEYS = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL = {KEYCTL}[os.uname().machine]
found = [libc.syscall(KEYCTL, 10, ctypes.c_long(ring), b"user", b"{SECRET}-user", 0) for ring in (-4, -5, -3)]
libc.syscall(KEYCTL, 0, ctypes.c_long(-4), 1)
keys = open("/proc/keys").read()
timeouts = [line.split()[3] for line in keys.splitlines() if line.endswith(f"_uid.{{os.getuid()}}: empty")]
print(found, "{SECRET}" in keys, timeouts)
"""


async def test_keyrings_of_the_code_are_emptied(local_pool: SandboxPool) -> None:
    first, again = await recycled(local_pool, LEAVE_KEYS)
    assert again.id == first.id
    assert (await again.run_python(SNOOP_KEYS)).output == "[-1, -1, -1] False ['perm']\n"


@pytest.mark.docker
async def test_docker_refuses_keyrings() -> None:
    docker_or_skip()
    pool = SandboxPool("docker", "python", SMALL, size=1, max_size=1)
    try:
        box = await pool.acquire()
        result = await box.run_python(LEAVE_KEYS)
        assert result.error is not None and "(b'agentgym-hidden-tests-user', 1)" in result.error  # EPERM
        await box.close()
    finally:
        await pool.shutdown()


LOCK_USER_KEYRING = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL = {KEYCTL}[os.uname().machine]
user = libc.syscall(KEYCTL, 0, ctypes.c_long(-4), 1)
assert libc.syscall(KEYCTL, 5, ctypes.c_long(user), 0) == 0  # no rights for anyone: the wipe cannot clear it
"""


async def test_a_sandbox_the_wipe_cannot_clean_is_destroyed(local_pool: SandboxPool) -> None:
    first, again = await recycled(local_pool, LOCK_USER_KEYRING)
    assert again.id != first.id
    assert not await first.is_alive()
    assert (await again.run_python("print('fresh')")).output == "fresh\n"


async def test_the_hosts_session_keyring_is_out_of_reach(local_name: str) -> None:
    """Code never holds the keyring of the process that started agentgym (its keys would be readable)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    machine = os.uname().machine
    assert libc.syscall(KEYCTL[machine], 1, None) > 0  # this test process joins a session keyring of its own
    name = f"{SECRET}-host".encode()
    assert libc.syscall(ADD_KEY[machine], b"user", name, b"sk-host", 7, ctypes.c_long(-3)) > 0
    snoop = f"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = libc.syscall({KEYCTL[machine]}, 10, ctypes.c_long(-3), b"user", {name!r}, 0)
print(found, {name.decode()!r} in open("/proc/keys").read())
"""
    async with await start(local_name, "python", SMALL) as box:
        assert (await box.run_python(snoop)).output == "-1 False\n"
