"""Untrusted code stays inside its limits on every backend: network, memory, processes, CPU, disk,
output, environment, host files and the Docker socket."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentgym.sandboxes.backends import start
from agentgym.sandboxes.supervised import SupervisedSandbox
from tests.network import NO_ROUTE, PROBE, UNANSWERED, host_addresses, outcomes
from tests.sandboxes.conftest import SMALL


@dataclass
class Listener:
    """A TCP server on every host interface: its port, and the peers that connected to it."""

    port: int
    peers: list[str] = field(default_factory=list)


@pytest.fixture
async def host_server() -> AsyncIterator[Listener]:
    listener = Listener(0)

    def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        listener.peers.append(str(writer.get_extra_info("peername")))
        writer.close()

    server = await asyncio.start_server(accept, "0.0.0.0", 0)
    listener.port = server.sockets[0].getsockname()[1]
    try:
        yield listener
    finally:
        server.close()
        await server.wait_closed()


async def test_no_network(sandbox: SupervisedSandbox, host_server: Listener) -> None:
    """The host, where this test listens, is not reached; reserved addresses have no route at all."""
    targets = [*((addr, 80) for addr in UNANSWERED), *((addr, host_server.port) for addr in host_addresses())]
    result = await sandbox.run_python(PROBE.format(targets=targets), timeout=60)
    assert result.error is None
    found = outcomes(result.output)
    assert set(found) == set(targets), result.output
    assert all(found[(addr, 80)] in NO_ROUTE for addr in UNANSWERED), found
    assert "reached" not in found.values() and "timeout" not in found.values(), found
    assert host_server.peers == []


async def test_memory_cap(sandbox: SupervisedSandbox) -> None:
    twice = 2 * SMALL.memory_mb << 20
    result = await sandbox.run_python(f"hog = b'x' * {twice}")
    assert result.error is not None
    assert result.restarted or "MemoryError" in result.error
    assert (await sandbox.run_python("print('fine')")).output == "fine\n"
    shell = await sandbox.exec(f"python3 -c 'b\"x\" * {twice}'")
    assert shell.exit_code != 0
    assert (await sandbox.exec("echo fine")).stdout == "fine\n"


FORK_UNTIL_REFUSED = """
import os, time
n = 0
try:
    while n < 10000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)
"""


async def test_processes_are_bounded(sandbox: SupervisedSandbox) -> None:
    result = await sandbox.exec(f"python3 -c '{FORK_UNTIL_REFUSED}'", timeout=20)
    assert 0 < int(result.stdout) < SMALL.pids
    started = time.monotonic()
    bomb = await sandbox.exec("f() { f | f & }; f; sleep 30", timeout=3)
    assert time.monotonic() - started < 25  # stopped, not left to its 30 s (a loaded machine is slow to kill it)
    assert bomb.timed_out or "fork" in bomb.stderr  # killed at the timeout, or the shell itself was refused
    for _ in range(240):  # the engine frees the bomb's pids a moment after the kill (60 s at most)
        if (await sandbox.exec("echo survived")).stdout == "survived\n":
            break
        await asyncio.sleep(0.25)
    else:
        pytest.fail("the sandbox did not recover from a fork bomb")


async def test_cpu_time_is_bounded(sandbox: SupervisedSandbox) -> None:
    shell = await sandbox.exec("while :; do :; done", timeout=1)  # endless: they return only if stopped
    python = await sandbox.run_python("while True:\n    pass", timeout=1)
    assert shell.timed_out and python.timed_out
    assert (await sandbox.exec("echo after")).stdout == "after\n"


async def test_disk_is_bounded(sandbox: SupervisedSandbox) -> None:
    twice = 2 * SMALL.disk_mb
    for path in ("/work/big", "/tmp/big"):
        result = await sandbox.run_python(
            f"with open({path!r}, 'wb') as f:\n    for _ in range({twice}):\n        f.write(bytes(1 << 20))"
        )
        assert result.error is not None
        assert "No space left on device" in result.error or "File too large" in result.error
        await sandbox.exec(f"rm -f {path}")
    readonly = await sandbox.exec("echo x > /usr/escape || echo x > /escape")
    assert readonly.exit_code != 0


async def test_output_flood_is_truncated_quickly(sandbox: SupervisedSandbox) -> None:
    shell = await sandbox.exec("head -c 200000000 /dev/zero | tr '\\0' x; echo tail >&2", timeout=120)
    python = await sandbox.run_python("print('y' * 50_000_000)", timeout=120)
    assert not shell.timed_out and not python.timed_out  # the flood is drained, not waited on until it is killed
    assert shell.truncated and shell.exit_code == 0
    assert shell.stdout == "x" * SMALL.output_bytes and shell.stderr == "tail\n"
    assert python.truncated and python.output == "y" * SMALL.output_bytes


async def test_environment_is_empty(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-agentgym-test-must-not-leak")
    async with await start(backend, "python", SMALL) as box:
        env = await box.exec("env")
        everywhere = await box.exec("cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
        python = await box.run_python("import os\nprint(sorted(os.environ))")
    assert "sk-agentgym" not in env.stdout + everywhere.stdout + python.output
    names = {line.split("=", 1)[0] for line in env.stdout.splitlines()}
    assert names <= {"PATH", "HOME", "LANG", "PWD", "SHLVL", "HOSTNAME", "_"}


@pytest.fixture
def host_secrets(tmp_path: Path) -> Iterator[tuple[str, list[Path]]]:
    """A secret in the test's tmp dir and in $HOME, world-readable; plus the project's own files."""
    secret = f"agentgym-secret-{uuid.uuid4().hex}"
    in_tmp = tmp_path / "secret.txt"
    in_home = Path.home() / f".{secret}"
    for path in (in_tmp, in_home):
        path.write_text(secret)
        path.chmod(0o644)
    project = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        yield secret, [in_tmp, in_home, project]
    finally:
        in_home.unlink()


async def test_host_files_are_invisible(sandbox: SupervisedSandbox, host_secrets: tuple[str, list[Path]]) -> None:
    secret, paths = host_secrets
    result = await sandbox.exec("cat " + " ".join(map(str, paths)) + f"; ls {paths[0].parent}")
    assert secret not in result.stdout
    assert "[project]" not in result.stdout
    assert result.exit_code != 0


async def test_no_docker_socket_and_no_root(sandbox: SupervisedSandbox) -> None:
    result = await sandbox.exec(
        "ls -l /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock 2>&1; id -u"
    )
    assert "No such file" in result.stdout
    assert result.stdout.splitlines()[-1] != "0"


async def test_code_cannot_kill_the_supervisor(backend: str) -> None:
    """Code runs as another uid than the supervisor, so even ``kill -9 -1`` leaves it standing.

    (A local sandbox started by a non-root user cannot switch uids in its unprivileged jail: there
    such code ends the sandbox, and the next call raises ``SandboxError``.)
    """
    if backend == "local" and os.geteuid() != 0:
        pytest.skip("the local backend keeps code and supervisor apart only when agentgym runs as root")
    async with await start(backend, "python", SMALL) as box:
        await box.exec("kill -9 -1")
        await box.run_python("import os\nfor pid in (1, os.getppid()):\n    os.kill(pid, 9)")
        assert (await box.exec("echo standing")).stdout == "standing\n"
        caps = await box.exec("grep CapEff /proc/self/status")
        assert caps.stdout.split() == ["CapEff:", "0000000000000000"]


async def test_network_when_asked_for(backend: str, host_server: Listener) -> None:
    """The control of test_no_network: the same probe, with a network, reaches the test's listener."""
    targets = [(addr, host_server.port) for addr in host_addresses()]
    async with await start(backend, "python", SMALL.model_copy(update={"network": True})) as box:
        result = await box.run_python(PROBE.format(targets=targets), timeout=60)
    assert "reached" in outcomes(result.output).values(), result.output
    assert host_server.peers
