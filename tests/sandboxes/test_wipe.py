"""A wipe leaves nothing of the last user: every kind of state code can leave is removed, checked, or
the sandbox is destroyed. Run on Docker, on bubblewrap, and on the local backend's own namespaces."""

from __future__ import annotations

import ctypes
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agentgym.sandboxes import Lease, local
from agentgym.sandboxes.backends import start
from agentgym.sandboxes.pool import SandboxPool
from agentgym.sandboxes.supervised import SupervisedSandbox
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
    """Docker; local under bubblewrap; local under the supervisor's own namespaces (bubblewrap hidden)."""
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


async def recycled(pool: SandboxPool, leave: str) -> tuple[SupervisedSandbox, SupervisedSandbox]:
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
REQUEST_KEY = {"x86_64": 249, "aarch64": 218}

USE_KEYRINGS = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
machine = os.uname().machine
outcomes = []
for call in (
    lambda: libc.syscall({ADD_KEY}[machine], b"user", b"{SECRET}", b"{SECRET}", {len(SECRET)}, ctypes.c_long(-4)),
    lambda: libc.syscall({REQUEST_KEY}[machine], b"user", b"{SECRET}", None, ctypes.c_long(0)),
    lambda: libc.syscall({KEYCTL}[machine], 22, ctypes.c_long(-1), ctypes.c_long(-3)),  # the uid's persistent keyring
    lambda: libc.syscall({KEYCTL}[machine], 0, ctypes.c_long(-4), 1),  # its user keyring
):
    outcomes.append((call(), ctypes.get_errno()))
print(outcomes)
"""


async def test_code_cannot_use_keyrings(pool: SandboxPool) -> None:
    """Keys could outlive the code's processes (a uid's persistent keyring lasts days), so code gets
    none: every keyring call fails with EPERM, on every backend (Docker's default profile and the
    supervisor's own seccomp filter)."""
    box = await pool.acquire()
    try:
        assert (await box.run_python(USE_KEYRINGS)).output == "[(-1, 1), (-1, 1), (-1, 1), (-1, 1)]\n"
        await box.write_file("keys.py", USE_KEYRINGS)
        ran = await box.exec("python3 keys.py")  # a command's processes too, not only the Python session
        assert ran.stdout == "[(-1, 1), (-1, 1), (-1, 1), (-1, 1)]\n", ran
    finally:
        await box.close()


SESSION_SET_UP = """import signal
print(open('/proc/self/oom_score_adj').read().strip(), signal.getsignal(signal.SIGCHLD) is signal.SIG_DFL)
"""


async def test_every_session_is_set_up_alike(pool: SandboxPool) -> None:
    """The first session and each wipe's are set up the same: first in line for the out-of-memory
    killer, SIGCHLD at its default (not the zygote's handler), no keyrings."""
    for _ in range(3):
        box = await pool.acquire()
        try:
            assert (await box.run_python(SESSION_SET_UP)).output == "1000 True\n"
            assert (await box.run_python(USE_KEYRINGS)).output == "[(-1, 1), (-1, 1), (-1, 1), (-1, 1)]\n"
        finally:
            await box.close()


def _plant_root_file(box: SupervisedSandbox, path: str) -> None:
    """Write a root-owned file at ``path`` inside ``box``, through a process of its /proc/PID/root."""
    Path(f"/proc/{_process_in(box)}/root{path}").write_text("not the code's")


def _process_in(box: SupervisedSandbox) -> int:
    """The host pid of a process inside ``box`` (its container's init, or the local jail's deepest process)."""
    box = box.held if isinstance(box, Lease) else box  # a pool's lease: the sandbox it lends
    if isinstance(box, local.LocalSandbox):
        pid = box.proc.pid
        while True:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
            if not children:
                return pid
            pid = int(children[0])
    from agentgym.sandboxes import engine

    return int(engine.client().api.inspect_container(box.id)["State"]["Pid"])


async def test_a_sandbox_the_wipe_cannot_clean_is_destroyed(pool: SandboxPool) -> None:
    # Something in a writable place that the code's uid cannot remove (here a root-owned file in the
    # sticky /tmp, put there from the host): the wipe says it is not clean and the pool destroys it.
    first = await pool.acquire()
    if os.geteuid() != 0:
        await first.close()
        pytest.skip("planting a root-owned file in a sandbox needs root on the host")
    _plant_root_file(first, f"/tmp/{SECRET}-root")
    await first.close()
    again = await pool.acquire()
    assert again.id != first.id
    assert not await first.is_alive()
    assert (await again.run_python(f"import os; print(os.path.exists('/tmp/{SECRET}-root'))")).output == "False\n"


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


LEAVE_DEEP_TREE = """
import os
for top in ("/tmp", os.getcwd()):
    os.chdir(top)
    for _ in range(2500):  # deeper than PATH_MAX allows a path to name, and than Python's recursion limit
        os.mkdir("d")
        os.chdir("d")
    open("f", "w").write("secret")
    os.chmod(".", 0o500)  # and not writable: the wipe must make it so
"""


async def test_a_tree_deeper_than_a_path_can_name_is_wiped(pool: SandboxPool) -> None:
    # Code cannot make a wipe fail (which would cost a new sandbox each episode) with a deep tree.
    first, again = await recycled(pool, LEAVE_DEEP_TREE)
    assert again.id == first.id, "the sandbox was destroyed instead of wiped"
    listing = await again.run_python("import os; print(os.listdir('/tmp'), os.listdir('.'))")
    assert listing.output == "[] []\n", listing
