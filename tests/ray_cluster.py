"""A real two-node Ray cluster on this machine, for the Ray executor's tests.

``ray start --head`` and a second ``ray start --address`` each run with ``--block`` in a process
group of their own, with this venv's Python (so workers import this checkout) and a temporary
directory of their own; stopping is killing those two groups (``--block`` also spawns a reaper that
takes the node's processes down with it). ``ray stop`` is never used: it stops every Ray process
on the machine, other people's too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

RAY = [sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start", "--block",
       "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]
#: No token authentication: Ray's default turns it on for a head node but not for the nodes and drivers
#: that join it, which it then refuses; and a driver reads the mode when it imports Ray, so it cannot be
#: switched on for a test. The cluster is this machine's, for the length of a test session.
ENV = {"RAY_AUTH_MODE": "disabled"}
START_TIMEOUT = 180.0  # ray start on a busy 2-core machine takes 20-60 s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``ray start --block ...``, returned once the node says it is up."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=Path(__file__).parents[1], env={**os.environ, **ENV})
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        if "Ray runtime started" in text or "block forever" in text:
            return proc
        if proc.poll() is not None:
            raise RuntimeError(f"{' '.join(argv[3:])} exited {proc.returncode}:\n{text[-3000:]}")
        time.sleep(0.5)
    stop(proc)
    raise RuntimeError(f"{' '.join(argv[3:])} did not start within {START_TIMEOUT:g}s:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop one node: its ``ray start`` process group, politely and then not."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
            return


@contextlib.contextmanager
def two_node_cluster(cpus_per_node: int = 1) -> Iterator[str]:
    """A head node and a worker node on this machine; yields the head's address."""
    temp = Path(tempfile.mkdtemp(prefix="agr-"))  # short: Ray's unix sockets live under it
    port = free_port()
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        nodes.append(_start([*RAY, "--head", "--include-dashboard=false", "--port", str(port), "--num-cpus",
                             str(cpus_per_node), "--ray-client-server-port", str(free_port()), "--temp-dir",
                             str(temp / "ray")], temp / "head.log"))
        nodes.append(_start([*RAY, "--address", f"127.0.0.1:{port}", "--num-cpus", str(cpus_per_node)],
                            temp / "worker.log"))
        yield f"127.0.0.1:{port}"
    finally:
        for proc in reversed(nodes):
            stop(proc)
        subprocess.run(["rm", "-rf", str(temp)], check=False)
