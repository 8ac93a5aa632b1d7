"""CPU seconds spent by this process, the Docker daemons and the containers, for per-CPU-second figures.

Wall time on a shared 2-core machine says little; CPU time says what a step costs. We add up:
this process (user + system) and its live child processes (local sandboxes), ``dockerd``,
``containerd`` and every ``containerd-shim`` (from /proc), and the containers themselves (from the
cgroup Docker puts them under: cgroup v1 ``cpuacct/docker``, or cgroup v2 ``docker`` /
``system.slice/docker-*.scope``).
"""

from __future__ import annotations

import glob
import os
import resource
from pathlib import Path

DAEMONS = ("dockerd", "containerd", "containerd-shim", "containerd-shim-runc-v2", "docker-proxy")


def _proc_cpu(pid: str) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def daemon_cpu() -> dict[str, float]:
    """CPU seconds of each Docker daemon process alive now, by pid."""
    out = {}
    for comm_path in glob.glob("/proc/[0-9]*/comm"):
        try:
            comm = Path(comm_path).read_text().strip()
        except OSError:
            continue
        if comm.startswith(DAEMONS):
            pid = comm_path.split("/")[2]
            out[pid] = _proc_cpu(pid)
    return out


def container_cpu() -> float:
    """CPU seconds of all Docker containers, as their parent cgroup counts them (monotonic on v1)."""
    v1 = Path("/sys/fs/cgroup/cpuacct/docker/cpuacct.usage")
    if v1.exists():
        return int(v1.read_text()) / 1e9
    total = 0.0
    for stat in [*glob.glob("/sys/fs/cgroup/docker/cpu.stat"),
                 *glob.glob("/sys/fs/cgroup/system.slice/docker-*.scope/cpu.stat")]:
        for line in Path(stat).read_text().splitlines():
            if line.startswith("usage_usec"):
                total += int(line.split()[1]) / 1e6
    return total


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def descendants_cpu() -> dict[str, float]:
    """CPU seconds of every live descendant of this process (local sandboxes), by pid."""
    parents: dict[str, str] = {}
    for stat_path in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat_path).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[stat_path.split("/")[2]] = fields[1]
    mine = {str(os.getpid())}
    grew = True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in mine} - mine
        grew = bool(found)
        mine |= found
    mine.discard(str(os.getpid()))
    return {pid: _proc_cpu(pid) for pid in mine}


class CpuMeter:
    """Snapshot before, snapshot after: CPU seconds by part in between.

    Reading /proc for the other parts costs this process ~5 ms on a busy machine, so our own
    snapshot is taken after the others on start and before them on stop: the meter does not
    count itself.
    """

    def __init__(self) -> None:
        self.start_daemons = daemon_cpu()
        self.start_containers = container_cpu()
        self.start_children = descendants_cpu()
        self.start_self = self_cpu()

    def stop(self) -> dict[str, float]:
        this_process = self_cpu() - self.start_self
        daemons_now = daemon_cpu()
        daemons = sum(v - self.start_daemons.get(pid, 0.0) for pid, v in daemons_now.items())
        parts = {
            "this_process": this_process,
            "docker_daemons": daemons,
            "containers": container_cpu() - self.start_containers,
            "child_processes": sum(v - self.start_children.get(pid, 0.0) for pid, v in descendants_cpu().items()),
        }
        parts["total"] = sum(parts.values())
        return parts
