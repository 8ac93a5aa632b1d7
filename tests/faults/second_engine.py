"""A second Docker engine on this machine, all its own: socket, data root, exec root, pidfile.

The machine's engine is shared (other runs' sandboxes live on it): a test that restarts an engine
restarts this one. It has no bridge network (sandboxes have none) and gets the sandbox image from
the first engine (``docker save | docker load``: no registry needed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from agentgym.sandboxes import image_tag

START_TIMEOUT = 60.0


class SecondEngine:
    """``dockerd`` under ``root``; :meth:`restart` stops it (its containers with it) and starts it again."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.host = f"unix://{root / 'docker.sock'}"
        self.env = {**os.environ, "DOCKER_HOST": self.host}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.root / "dockerd.log", "ab") as log:  # the daemon keeps its own descriptor
            self.process = self._dockerd(log)
        deadline = time.monotonic() + START_TIMEOUT
        while subprocess.run(["docker", "version"], env=self.env, capture_output=True).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                log_text = (self.root / "dockerd.log").read_text()[-3000:]
                raise RuntimeError(f"the second dockerd did not start:\n{log_text}")
            time.sleep(0.5)

    def _dockerd(self, log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            ["dockerd", "--host", self.host, "--data-root", str(self.root / "data"), "--exec-root",
             str(self.root / "exec"), "--pidfile", str(self.root / "docker.pid"), "--bridge", "none",
             "--iptables=false", "--ip6tables=false", "--ip-masq=false", "--shutdown-timeout", "2"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def containers(self) -> list[str]:
        """Every agentgym container on this engine, running or not."""
        listed = subprocess.run(["docker", "ps", "-aq", "--filter", "label=agentgym=1"], env=self.env,
                                capture_output=True, text=True, check=True)
        return listed.stdout.split()


@contextlib.contextmanager
def second_engine() -> Iterator[SecondEngine]:
    root = Path(tempfile.mkdtemp(prefix="agd-"))  # short: the socket path must fit in 108 bytes
    engine = SecondEngine(root)
    try:
        engine.start()
        save = subprocess.Popen(["docker", "save", image_tag("python")], stdout=subprocess.PIPE)
        subprocess.run(["docker", "load", "-q"], stdin=save.stdout, env=engine.env, check=True, capture_output=True)
        assert save.wait() == 0
        yield engine
    finally:
        engine.stop()
        shutil.rmtree(root, ignore_errors=True)
