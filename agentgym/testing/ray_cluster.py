"""A real Ray cluster of one or more nodes on this machine, for the Ray executor's tests and benchmark.

Each node is a ``ray start --block`` in a process group of its own, run with this Python (so workers
import the same agentgym), the head with a temporary directory of its own; stopping is killing those
groups (``--block`` also spawns a reaper that takes the node's processes down with it). ``ray stop``
is never used: it stops every Ray process on the machine, other people's too.

A watchdog process (:data:`WATCHDOG`) stops them as well if the process that started the cluster
dies without stopping it (a test run killed, SIGKILL included): it holds the read end of a pipe
whose only write end is the starter's, is told each node's process group through it, and on end
of file (the starter gone, however it died) kills those groups and removes the temporary
directory. A cluster stopped as usual tells it so first, and it exits without killing anything.

    with LocalRayCluster(nodes=2) as cluster:
        evaluate(..., executor=RayExecutor(cluster.address))
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAY = [sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start", "--block",
       "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]
#: No token authentication: Ray's default turns it on for a head node but not for the nodes and drivers
#: that join it, which it then refuses; and a driver reads the mode when it imports Ray, so it cannot be
#: switched on for a test. The cluster is this machine's, for as long as a test session or benchmark runs.
ENV = {"RAY_AUTH_MODE": "disabled"}
START_TIMEOUT = 240.0  # ray start on a busy 2-core machine takes 20-100 s

WATCHDOG = r"""
import os, shutil, signal, sys, time
groups, temp = [], sys.argv[1]
for line in sys.stdin:
    if line.strip() == "stopped":
        sys.exit(0)
    groups.append(int(line))
for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 0)):
    for group in groups:
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{g}") for g in groups):
        time.sleep(0.2)
shutil.rmtree(temp, ignore_errors=True)
"""
"""Run as ``python -c WATCHDOG TEMP`` with the pipe on stdin: each line a process group, ``stopped`` to stand down."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalRayCluster:
    """A head node and ``nodes - 1`` worker nodes, ``cpus_per_node`` CPUs each, on this machine.

    Attributes:
        address: The head's ``host:port``, for ``ray.init`` and ``RayExecutor``.
        start_seconds: How long each node took to start, head first.
    """

    def __init__(self, nodes: int = 2, cpus_per_node: int = 1) -> None:
        self.nodes = nodes
        self.cpus_per_node = cpus_per_node
        self.address = ""
        self.start_seconds: list[float] = []
        self._temp = Path()
        self._procs: list[subprocess.Popen[bytes]] = []
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._tell: int | None = None  # the write end of the watchdog's pipe

    def start(self) -> None:
        self._temp = Path(tempfile.mkdtemp(prefix="agr-"))  # short: Ray's unix sockets live under it
        read, self._tell = os.pipe()  # not inherited by the nodes: the starter alone holds the write end
        try:
            self._watchdog = subprocess.Popen([sys.executable, "-c", WATCHDOG, str(self._temp)], stdin=read,
                                              start_new_session=True)  # a Ctrl-C to the starter's group spares it
        finally:
            os.close(read)
        port = free_port()
        self.address = f"127.0.0.1:{port}"
        cpus = ["--num-cpus", str(self.cpus_per_node)]
        self._start([*RAY, "--head", "--include-dashboard=false", "--port", str(port), *cpus,
                     "--ray-client-server-port", str(free_port()), "--temp-dir", str(self._temp / "ray")], "head")
        for n in range(1, self.nodes):
            self._start([*RAY, "--address", self.address, *cpus], f"node{n}")

    def _start(self, argv: list[str], name: str) -> None:
        """``ray start --block ...``, returned once the node says it is up."""
        log = self._temp / f"{name}.log"
        started = time.monotonic()
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, **ENV})
        self._procs.append(proc)
        self._tell_watchdog(f"{proc.pid}\n")  # start_new_session: its pid is its process group
        while time.monotonic() - started < START_TIMEOUT:
            text = log.read_text(errors="replace")
            if "Ray runtime started" in text or "block forever" in text:
                self.start_seconds.append(time.monotonic() - started)
                return
            if proc.poll() is not None:
                raise RuntimeError(f"ray start ({name}) exited {proc.returncode}:\n{text[-3000:]}")
            time.sleep(0.5)
        raise RuntimeError(f"ray start ({name}) did not start within {START_TIMEOUT:g}s:\n{log.read_text()[-3000:]}")

    def stop(self) -> None:
        """Stop every node, workers first: each ``ray start`` process group, politely and then not."""
        for proc in reversed(self._procs):
            for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(wait)
                    break
        self._procs = []
        shutil.rmtree(self._temp, ignore_errors=True)
        self._tell_watchdog("stopped\n")
        if self._tell is not None:
            os.close(self._tell)
            self._tell = None
        if self._watchdog is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watchdog.wait(10)
            self._watchdog = None

    def _tell_watchdog(self, line: str) -> None:
        if self._tell is not None:
            with contextlib.suppress(OSError):
                os.write(self._tell, line.encode())

    def __enter__(self) -> LocalRayCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
