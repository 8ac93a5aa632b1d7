"""The local backend: close() leaves no process behind; without bubblewrap each sandbox still has
private writable places (its own namespaces where the kernel allows them, else a working directory
that is also HOME and TMPDIR) and a warning that says how to install bubblewrap; sandboxes spread
over the cores agentgym may use."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from agentgym.sandboxes import local
from tests.network import UNANSWERED, host_addresses
from tests.sandboxes.conftest import SMALL


async def test_close_kills_detached_processes() -> None:
    box = await local.create(SMALL)
    if box._uid is None:
        await box.close()
        pytest.skip("finding a sandbox's processes needs its own uid (run as root)")
    await box.exec("setsid nohup sleep 60 >/dev/null 2>&1 &")
    assert living_processes(box._uid)
    await box.close()
    assert living_processes(box._uid) == []


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine without bubblewrap (the README's first command on a fresh machine)."""
    monkeypatch.setattr(local, "bubblewrap", lambda: None)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-agentgym-test-must-not-leak")
    local._warn_no_bubblewrap.cache_clear()
    local._warn_unjailed.cache_clear()


PRIVATE = """
import os, socket, tempfile
open("/tmp/job.json", "w").write({mine!r})
open("report.json", "w").write({mine!r})
try:
    open("/var/tmp/agentgym-escape", "w").write("x")
    escaped = True
except OSError:
    escaped = False
online = False
for host, port in {targets!r}:  # this machine's addresses, where the test listens, and a reserved one
    try:
        socket.create_connection((host, port), timeout=5).close()
        online = True
    except socket.timeout:
        online = True  # the packet went somewhere: a network namespace has no route to wait on
    except OSError:
        pass
processes = [p for p in os.listdir("/proc") if p.isdigit()]
print(open("/tmp/job.json").read(), sorted(os.listdir("/tmp")), escaped, online, len(processes) < 10)
"""


async def test_without_bubblewrap_sandboxes_get_namespaces_of_their_own(
    no_bubblewrap: None, caplog: pytest.LogCaptureFixture
) -> None:
    if not local.namespaces():
        pytest.skip("this machine lets no process make namespaces (needs root or user namespaces)")
    with caplog.at_level(logging.WARNING):
        boxes = await asyncio.gather(local.create(SMALL), local.create(SMALL))
    assert "install bubblewrap" in caplog.text and "read the host's files" in caplog.text
    workdirs = [box._workdir for box in boxes]
    peers: list[str] = []

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peers.append(str(writer.get_extra_info("peername")))
        writer.close()

    server = await asyncio.start_server(accept, "0.0.0.0", 0)
    port = server.sockets[0].getsockname()[1]
    targets = [(UNANSWERED[0], 80), *((addr, port) for addr in host_addresses())]
    try:
        for name, box in zip("ab", boxes, strict=True):
            result = await box.run_python(PRIVATE.format(mine=name, targets=targets), timeout=60)
            # Its own /tmp (nothing of the host's, nor of the other sandbox), no writing elsewhere,
            # no network, and only its own processes in /proc.
            assert result.output == f"{name} ['job.json'] False False True\n", result
            assert (await box.read_file("/tmp/job.json")) == name.encode()
            env = await box.exec("env; pwd; hostname")
            assert "sk-agentgym" not in env.stdout and env.stdout.endswith(f"{box._workdir}\nsandbox\n")
        host = Path("/tmp/job.json")  # the fixed path the code env once used: the host's stays untouched
        assert not host.exists() or host.read_text() not in ("a", "b")  # noqa: ASYNC240 - a stat
        assert not Path("/var/tmp/agentgym-escape").exists()  # noqa: ASYNC240
        assert all(not Path(w, "report.json").exists() for w in workdirs if w)  # noqa: ASYNC240
    finally:
        server.close()
        await asyncio.gather(*(box.close() for box in boxes))
    assert peers == []
    assert not any(Path(w).exists() for w in workdirs if w)  # noqa: ASYNC240 - a stat
    for box in boxes:
        if box._uid is not None:
            assert living_processes(box._uid) == []


async def test_without_bubblewrap_a_mount_no_one_can_reach_does_not_stop_a_sandbox(no_bubblewrap: None) -> None:
    """A mount hidden under another mount (one made over a folder that had mounts below it) is listed
    in the mount table but cannot be reached, here or in a sandbox: it must not stop the supervisor."""
    if not local.namespaces() or os.geteuid() != 0:
        pytest.skip("needs namespaces and root (to mount)")
    folder = tempfile.mkdtemp(prefix="agentgym-test-mount-", dir="/var/tmp")
    inner = os.path.join(folder, "inner")
    os.mkdir(inner)
    mounted: list[str] = []
    try:
        for point in (inner, folder):  # the second hides the first
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "agentgym-test", point], check=True)  # noqa: ASYNC221
            mounted.append(point)
        assert not os.path.exists(inner)  # noqa: ASYNC240 - a stat
        box = await local.create(SMALL)
        try:
            assert (await box.exec("echo started")).stdout == "started\n"
        finally:
            await box.close()
    finally:
        for point in reversed(mounted):
            subprocess.run(["umount", point], check=True)  # noqa: ASYNC221
        shutil.rmtree(folder)


async def test_without_namespaces_the_working_directory_is_home_and_tmpdir(
    no_bubblewrap: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(local, "namespaces", lambda: False)
    with caplog.at_level(logging.WARNING):
        box = await local.create(SMALL)
    assert "no network or file isolation" in caplog.text and "apt-get install bubblewrap" in caplog.text
    workdir = box._workdir
    assert workdir is not None and not box.recyclable
    try:
        await box.run_python("x = 2")
        assert (await box.run_python("print(x * 21)")).output == "42\n"
        places = await box.run_python(
            "import os, tempfile\nprint(os.getcwd(), os.environ['HOME'], tempfile.gettempdir())"
        )
        assert places.output == f"{workdir} {workdir} {workdir}\n"
        env = await box.exec("env")
        assert "sk-agentgym" not in env.stdout
        limits = await box.exec("ulimit -c; ulimit -v")
        assert limits.stdout.split() == ["0", str(SMALL.memory_mb * 1024)]
        if os.geteuid() == 0:
            assert (await box.exec("id -u")).stdout.strip() != "0"
            await box.exec("nohup sleep 60 >/dev/null 2>&1 &")  # a stray the close must kill
    finally:
        await box.close()
    assert not Path(workdir).exists()  # noqa: ASYNC240 - a stat
    if box._uid is not None:
        assert living_processes(box._uid) == []


async def test_sandboxes_spread_over_the_allowed_cores() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    boxes = await asyncio.gather(*(local.create(SMALL) for _ in allowed[:4]))
    try:
        cores = set()
        for box in boxes:
            result = await box.run_python("import os\nprint(sorted(os.sched_getaffinity(0)))")
            mine = eval(result.output)
            assert len(mine) == 1  # cpus=1: one core of its own
            cores.update(mine)
        assert cores == set(allowed[:4])
    finally:
        await asyncio.gather(*(box.close() for box in boxes))


def living_processes(uid: int) -> list[str]:
    """Processes of ``uid`` that are not zombies (a killed orphan stays one until init reaps it)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state != "Z":
            found.append(pid)
    return found


def _persistent_keyring_of(uid: int) -> int:
    """Have the kernel make ``uid``'s persistent keyring (as code under that uid could), linked to our thread's."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    number = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine)
    if number is None:
        pytest.skip("keyctl's number is unknown on " + os.uname().machine)
    ring = libc.syscall(number, 22, ctypes.c_long(uid), ctypes.c_long(-1))  # KEYCTL_GET_PERSISTENT into @t
    if ring < 0:
        pytest.skip(f"keyrings are unavailable here (errno {ctypes.get_errno()})")
    return int(ring)


async def test_a_new_sandbox_never_gets_a_uid_in_use_or_one_that_owns_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Keys outlive a sandbox that is destroyed unwiped (a persistent keyring lasts three days), and two
    # live sandboxes under one uid would kill each other's processes: neither uid may be handed out.
    if os.geteuid() != 0:
        pytest.skip("per-sandbox uids need root")
    keyed, low = local.UID_RANGE[0], local.UID_RANGE[0] + 1
    _persistent_keyring_of(keyed)
    assert keyed in local.uids_with_keys()
    first = await local.create(SMALL)
    try:
        assert first._uid is not None
        picks = iter([keyed, first._uid, os.getuid(), low])
        monkeypatch.setattr(local.random, "randrange", lambda *_: next(picks))
        second = await local.create(SMALL)
        try:
            assert second._uid == low
            assert (await second.run_python("import os; print(os.getuid())")).output == f"{low}\n"
        finally:
            await second.close()
        assert low not in local._uids_taken
    finally:
        await first.close()
