"""The benchmark meter charges the run's own containers and children, and nobody else's."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentgym.sandboxes import image_tag
from tests.conftest import docker_or_skip

_METER = Path(__file__).parents[2] / "benchmarks" / "cpu_accounting.py"
_spec = importlib.util.spec_from_file_location("cpu_accounting", _METER)
assert _spec is not None and _spec.loader is not None
cpu_accounting = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cpu_accounting)

BUSY = ["python3", "-c", "import time\nend = time.time() + 30\nwhile time.time() < end: pass"]


@pytest.fixture
def busy_container() -> Iterator[object]:
    """Start a CPU-burning container labelled with a given owner pid; removed after the test."""
    docker_or_skip()
    import docker

    client = docker.from_env()
    started = []

    def start(owner: int) -> object:
        c = client.containers.run(image_tag("python"), BUSY, detach=True, network_mode="none",
                                  labels={cpu_accounting.BENCH_OWNER_LABEL: str(owner)})
        started.append(c)
        return c

    yield start
    for c in started:
        try:
            c.remove(force=True)
        except docker.errors.NotFound:
            pass  # the test removed it
    client.close()


def metered(seconds: float) -> dict[str, float]:
    meter = cpu_accounting.CpuMeter(interval=0.05)
    time.sleep(seconds)
    return meter.stop()


@pytest.mark.docker
def test_other_processes_containers_are_not_charged(busy_container) -> None:  # type: ignore[no-untyped-def]
    busy_container(1)  # owned by pid 1: someone else's
    time.sleep(0.5)
    cpu = metered(1.0)
    assert cpu["machine"] > 0.05  # it did burn CPU on this machine
    assert cpu["containers"] == 0 and cpu["own_containers_seen"] == 0


@pytest.mark.docker
def test_own_container_started_during_the_window_is_charged(busy_container) -> None:  # type: ignore[no-untyped-def]
    meter = cpu_accounting.CpuMeter(interval=0.05)
    container = busy_container(os.getpid())
    time.sleep(1.5)
    container.remove(force=True)  # removed before the stop: its last sampled CPU still counts
    cpu = meter.stop()
    assert cpu["own_containers_seen"] == 1
    assert cpu["containers"] > 0.05  # a busy second, however loaded the machine


def test_reaped_children_are_charged() -> None:
    meter = cpu_accounting.CpuMeter()
    subprocess.run([sys.executable, "-c", "sum(range(30_000_000))"], check=True)
    cpu = meter.stop()
    assert cpu["child_processes"] > 0.05
    assert cpu["client"] < cpu["child_processes"]
