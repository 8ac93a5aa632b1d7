"""A test run killed while its Ray cluster is up leaves no Ray process behind.

A real pytest process starts a one-node :class:`LocalRayCluster` and is SIGKILLed once the node is
up: nothing of it can run its cleanup, so the cluster's watchdog must stop ``ray start --block``,
its raylet and every other process the node started.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ..evaluation.processes import REPO, descendants, still_running

HOLDER = '''
import time
from agentgym.testing.ray_cluster import LocalRayCluster

def test_hold():
    with LocalRayCluster(nodes=1) as cluster:
        print("UP", cluster.address, flush=True)
        time.sleep(600)
'''


def test_a_killed_test_run_leaves_no_ray_process(tmp_path):
    try:
        import ray
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI is set but Ray is missing: the dev extra installs agentgym[ray]")
        pytest.skip("a Ray cluster needs agentgym[ray]")
    (tmp_path / "test_hold.py").write_text(HOLDER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "test_hold.py"],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    deadline = time.monotonic() + 300
    for line in run.stdout:
        if line.startswith("UP ") or time.monotonic() > deadline:
            break
    assert line.startswith("UP "), "the cluster did not start"
    time.sleep(2)  # the node's own children (raylet, workers) are started by then
    ray = [p for p in descendants(run.pid) if "ray" in " ".join(p.cmdline()).lower()]
    assert ray, "no ray process under the test run"
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert still_running(ray, grace=30) == []
