"""CPU seconds and memory of what one benchmark run owns: this process, its children, its containers.

Wall time on a shared 2-core machine says little; CPU time says what a step costs, but only if the
meter charges the run's own work and nobody else's (other jobs share the machine and the Docker
engine). :class:`CpuMeter` adds up, between ``CpuMeter()`` and ``stop()``:

- ``client``: this process (user + system), less the meter's own sampling thread;
- ``child_processes``: this process's descendants (local sandboxes, ``docker`` CLI runs), live ones
  from /proc and reaped ones from ``RUSAGE_CHILDREN``;
- ``containers``: the cgroups of the containers this process owns, i.e. those labelled
  ``agentgym.owner_pid=<this pid>`` (agentgym's own label) or ``agentgym.bench_owner_pid=<this pid>``
  (:data:`BENCH_OWNER_LABEL`, for baseline containers a benchmark starts itself), plus every container
  started under :func:`cgroup_parent` (whose parent cgroup keeps the CPU of removed containers);
- ``container_shims``: the ``containerd-shim`` of each owned container, its own CPU only: what it
  reaps is mostly the container's processes, already in the container's cgroup, so ``runc``'s CPU
  (container create, start, delete) is in no part but ``machine``.

``total`` is their sum. Reported beside it, not in it: ``docker_daemons`` (dockerd and containerd,
which serve every client of the engine, so a run cannot claim only its share) and ``machine`` (every
CPU of the machine, to show how busy it was). Containers are found from the cgroup filesystem and
their labels from Docker's config files, so the meter does not call the engine (which would charge
the daemons); a sampling thread (every ``interval`` s) picks up containers started during the window
and keeps the last reading of those removed before ``stop()``.
"""

from __future__ import annotations

import glob
import json
import os
import re
import resource
import threading
import time
from pathlib import Path

OWNER_LABEL = "agentgym.owner_pid"  # set by agentgym on every container it starts
BENCH_OWNER_LABEL = "agentgym.bench_owner_pid"  # set by benchmarks on baseline containers they start
DAEMONS = ("dockerd", "containerd")
SHIM_PREFIX = "containerd-shim"
DOCKER_ROOT = Path("/var/lib/docker/containers")
CGROUP = Path("/sys/fs/cgroup")
_CONTAINER_ID = re.compile(r"(?:docker-)?([0-9a-f]{64})(?:\.scope)?$")
_TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------- processes
def _stat_fields(pid: str | int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def process_cpu(pid: str | int, *, reaped: bool = True) -> float:
    """CPU seconds of ``pid`` (utime stime) and of the children it has reaped (cutime cstime); 0 if gone."""
    fields = _stat_fields(pid)
    return sum(int(x) for x in fields[11:15 if reaped else 13]) / _TICK if fields else 0.0


def process_faults(pid: str | int, *, reaped: bool = True) -> int:
    """Minor page faults of ``pid`` (minflt) and of the children it has reaped (cminflt); 0 if gone."""
    fields = _stat_fields(pid)
    if not fields:
        return 0
    return int(fields[7]) + (int(fields[8]) if reaped else 0)


def comm(pid: str | int) -> str:
    """The process's name (``/proc/PID/comm``); empty if it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit()]


def daemon_cpu() -> float:
    """CPU seconds of dockerd and containerd (machine-wide: they serve every client of the engine)."""
    return sum(process_cpu(pid) for pid in _pids() if comm(pid) in DAEMONS)


def descendants(root: int | None = None) -> list[int]:
    """Pids of every live descendant of ``root`` (default: this process)."""
    return list(tree(root))


def tree(root: int | None = None) -> dict[int, int]:
    """Every live descendant of ``root`` (default: this process), with its parent's pid."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields:
            children.setdefault(int(fields[1]), []).append(int(pid))
    out: dict[int, int] = {}
    todo = [root]
    while todo:
        parent = todo.pop()
        kids = children.get(parent, [])
        out.update(dict.fromkeys(kids, parent))
        todo += kids
    return out


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu() -> float:
    """CPU seconds of this process's descendants: live ones, and the children it has reaped."""
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return reaped.ru_utime + reaped.ru_stime + sum(process_cpu(pid) for pid in descendants())


def machine_cpu() -> float:
    """Busy CPU seconds of the whole machine since boot (/proc/stat: all but idle and iowait)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _TICK


def process_tree_memory(pid: int, *, include_root: bool = True) -> dict[str, float]:
    """PSS and RSS in MB of ``pid``'s descendants and (``include_root``) of ``pid`` itself.

    PSS shares each shared page out among the processes that map it, so sandboxes that share the
    interpreter's pages are not each charged all of them.
    """
    pss = rss = 0
    for p in [pid, *descendants(pid)] if include_root else descendants(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss += int(line.split()[1])
        except OSError:
            continue
    return {"pss_mb": pss / 1024, "rss_mb": rss / 1024}


# ---------------------------------------------------------------------------------------- containers
def _cgroup_v1() -> bool:
    return (CGROUP / "cpuacct").is_dir()


def _container_cgroups() -> dict[str, Path]:
    """Container id -> its CPU cgroup directory, for every running container (cgroup v1 or v2)."""
    if _cgroup_v1():
        candidates = glob.glob(str(CGROUP / "cpuacct/docker/*"))
    else:
        candidates = glob.glob(str(CGROUP / "system.slice/docker-*.scope")) + glob.glob(str(CGROUP / "docker/*"))
    out = {}
    for path in candidates:
        m = _CONTAINER_ID.search(path)
        if m and os.path.isdir(path):
            out[m.group(1)] = Path(path)
    return out


def _cgroup_cpu(path: Path) -> float | None:
    """CPU seconds a cgroup has used, or None if it is gone."""
    try:
        if _cgroup_v1():
            return int((path / "cpuacct.usage").read_text()) / 1e9
        for line in (path / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec"):
                return int(line.split()[1]) / 1e6
    except (OSError, ValueError):
        return None
    return None


def container_labels(container_id: str) -> dict[str, str] | None:
    """A container's labels, from Docker's config file (no engine call), else from the engine."""
    try:
        config = json.loads((DOCKER_ROOT / container_id / "config.v2.json").read_text())
        return config["Config"].get("Labels") or {}
    except (OSError, ValueError, KeyError):
        pass
    try:
        import docker

        client = docker.from_env()
        try:
            return client.api.inspect_container(container_id)["Config"].get("Labels") or {}
        finally:
            client.close()
    except Exception:
        return None


def is_own(labels: dict[str, str] | None, pid: int | None = None) -> bool:
    """Whether a container with these labels belongs to process ``pid`` (default: this one)."""
    me = str(os.getpid() if pid is None else pid)
    return bool(labels) and me in (labels.get(OWNER_LABEL), labels.get(BENCH_OWNER_LABEL))


def own_containers() -> list[str]:
    """Ids of the running containers this process owns (see :func:`is_own`)."""
    return [cid for cid in _container_cgroups() if is_own(container_labels(cid))]


def container_memory(container_id: str) -> dict[str, float]:
    """A container's memory in MB: what its cgroup is charged (``usage``) and its processes' ``rss``.

    Raises:
        FileNotFoundError: No such running container.
    """
    if _cgroup_v1():
        path = CGROUP / "memory/docker" / container_id
        usage = int((path / "memory.usage_in_bytes").read_text())
        stat = dict(line.split() for line in (path / "memory.stat").read_text().splitlines())
        rss = int(stat.get("total_rss", stat.get("rss", 0)))
    else:
        path = _container_cgroups()[container_id]
        usage = int((path / "memory.current").read_text())
        stat = dict(line.split() for line in (path / "memory.stat").read_text().splitlines())
        rss = int(stat.get("anon", 0))
    return {"usage_mb": usage / 2**20, "rss_mb": rss / 2**20}


def cgroup_parent() -> str | None:
    """A cgroup parent for ``docker run --cgroup-parent`` whose CPU counter outlives its containers.

    Only with cgroup v1 and Docker's cgroupfs driver (where ``/sys/fs/cgroup/cpuacct/docker``
    exists); None elsewhere, and the meter then samples such containers like the others (a container
    that lives less than the sampling interval is then undercounted). Remove it with
    :func:`remove_cgroup_parent` when its containers are gone.
    """
    if not (CGROUP / "cpuacct/docker").is_dir():
        return None
    return f"/agentgym-bench-{os.getpid()}"


def _parent_cpu() -> float:
    parent = cgroup_parent()
    if parent is None:
        return 0.0
    return _cgroup_cpu(CGROUP / "cpuacct" / parent.lstrip("/")) or 0.0


def _parent_children() -> list[str]:
    """Ids of the containers running under this process's :func:`cgroup_parent`."""
    parent = cgroup_parent()
    if parent is None:
        return []
    return [m.group(1) for p in glob.glob(str(CGROUP / "cpuacct" / parent.lstrip("/") / "*"))
            if (m := _CONTAINER_ID.search(p))]


def remove_cgroup_parent() -> None:
    """Remove this process's :func:`cgroup_parent` from every cgroup hierarchy (once it is empty)."""
    parent = cgroup_parent()
    if parent is None:
        return
    for path in glob.glob(str(CGROUP / "*" / parent.lstrip("/"))):
        for child in sorted(glob.glob(f"{path}/*/"), reverse=True):
            try:
                os.rmdir(child)
            except OSError:
                pass
        try:
            os.rmdir(path)
        except OSError:
            pass


def _shims(container_ids: set[str]) -> dict[str, str]:
    """Shim pid -> container id, for the shims of ``container_ids``."""
    out = {}
    for pid in _pids():
        if not comm(pid).startswith(SHIM_PREFIX):
            continue
        words = _cmdline(pid).split()
        for i, word in enumerate(words[:-1]):
            if word == "-id" and words[i + 1] in container_ids:
                out[pid] = words[i + 1]
    return out


class _Containers:
    """Keeps, per owned container and shim, its CPU at the start (0 for one started later) and at the last look."""

    def __init__(self) -> None:
        self.owned: dict[str, bool] = {}
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.shim_for: set[str] = set()
        self.shim_first: dict[str, float] = {}
        self.shim_last: dict[str, float] = {}
        self.look(at_start=True)

    def look(self, *, at_start: bool = False) -> None:
        for cid, path in _container_cgroups().items():
            if cid not in self.owned:
                self.owned[cid] = is_own(container_labels(cid))
            if not self.owned[cid]:
                continue
            used = _cgroup_cpu(path)
            if used is None:
                continue
            self.first.setdefault(cid, used if at_start else 0.0)
            self.last[cid] = used
        # Containers under our cgroup parent are counted by the parent's counter; only their shims here.
        new = (set(self.first) | set(_parent_children())) - self.shim_for
        if new:
            self.shim_for |= new
            for pid in _shims(new):
                self.shim_first.setdefault(pid, process_cpu(pid, reaped=False) if at_start else 0.0)
        for pid in self.shim_first:
            used = process_cpu(pid, reaped=False)
            if used:
                self.shim_last[pid] = used

    def cpu(self) -> tuple[float, float]:
        containers = sum(self.last[c] - self.first[c] for c in self.last)
        shims = sum(self.shim_last.get(p, f) - f for p, f in self.shim_first.items())
        return containers, shims


class CpuMeter:
    """Snapshot at creation, snapshot at :meth:`stop`: CPU seconds by part in between (see the module doc).

    Our own snapshot is taken last on start and first on stop, and the sampling thread's CPU is taken
    off ``client``: the meter does not count itself.
    """

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self._start_machine = machine_cpu()
        self._start_daemons = daemon_cpu()
        self._start_parent = _parent_cpu()
        self._containers = _Containers()
        self._start_children = children_cpu()
        self._stop = threading.Event()
        self._sampler_cpu = 0.0
        self._thread = threading.Thread(target=self._sample, name="cpu-meter", daemon=True)
        self._thread.start()
        self._start_self = own_cpu()

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._containers.look()
        self._sampler_cpu = time.thread_time()

    def stop(self) -> dict[str, float]:
        """CPU seconds by part since creation; ``total`` = client + child processes + containers + shims."""
        client = own_cpu() - self._start_self
        self._stop.set()
        self._thread.join()
        children = children_cpu() - self._start_children
        self._containers.look()
        containers, shims = self._containers.cpu()
        containers += _parent_cpu() - self._start_parent
        parts = {
            "client": client - self._sampler_cpu,
            "child_processes": children,
            "containers": containers,
            "container_shims": shims,
        }
        parts["total"] = sum(parts.values())
        parts["docker_daemons"] = daemon_cpu() - self._start_daemons
        parts["total_with_daemons"] = parts["total"] + parts["docker_daemons"]
        parts["machine"] = machine_cpu() - self._start_machine
        parts["meter_sampling"] = self._sampler_cpu
        parts["own_containers_seen"] = len(self._containers.last)
        return parts
