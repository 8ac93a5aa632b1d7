"""agentgym as targets of the OpenEnv peer harness (``bench.py --extra-targets``), through its public env API.

The peer harness (``../shared/peers/openenv/bench.py``, outside this repository) plays episodes of
``reset`` + 20 steps of ``print(1)`` per session against OpenEnv's coding env and against these
targets, in the same run, with the same meter. :mod:`openenv_side_by_side` runs it; this file only
plugs agentgym in. It runs inside the harness's own Python, so it imports nothing from ``benchmarks/``.

Targets (one ``agentgym.make("code", sandbox_backend=BACKEND)`` per session, as a user writes it):

  agentgym-docker   ``reset`` is ``env.reset(task)``, a step is ``env.step(assistant message with one
                    python tool call {"code": ...})`` whose observation is returned as stdout. The
                    sandboxes come from agentgym's default shared warm pool, which the harness's
                    unmeasured warm-up episode (one per session) fills the way a user's first episodes do.
  agentgym-local    the same on the local backend (a bubblewrap jail + agent per sandbox, no Docker).

``open()`` first has ``2 * n`` sandboxes ready in the shared pool (``warm_up``, as the docs advise before
a timed run), then plays episodes in every session for at least 3 s (and two each) before the harness's own warm-up,
so the pool has settled before the harness fixes the list of what it meters: the pool sizes its
spares from the wipe time and acquire rate it measures, and any spare it decides to add starts
within those seconds rather than unmetered in the measured phase. Idle spares cost no CPU; they
count in the memory per session.

Accounting (read by the harness once the warm-up is over): ``containers()`` lists the containers
agentgym started from this process (its own label ``agentgym.owner_pid=<pid>``), so their cgroups
count as "server" and their shims as "docker"; ``server_pids()`` lists the local sandboxes' outermost
processes (direct children of this process). If the set of sandboxes changes during the measured
phase (the pool starts or destroys one), the harness did not meter the new ones: ``close()`` logs
"sandbox set changed" and appends ``{"target", "n", "new", "gone"}`` as a JSON line to the file named
by ``AGENTGYM_BENCH_NOTES`` (if set), where :mod:`openenv_side_by_side` picks it up.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from bench import Target, log  # the harness's folder is on sys.path when it loads this file

OWNER_LABEL = "agentgym.owner_pid"
NO_TRUNCATION = 10**9  # the harness decides where an episode ends, never the env's turn limit
SETTLING_EPISODES = 2
SETTLING_SECONDS = 3.0  # and at least this long: the spares the pool sizes from demand have started by then


def _own_containers() -> dict[str, Any]:
    """Running containers that agentgym started from this process, by id."""
    import docker

    client = docker.from_env()
    try:
        return {c.id: c for c in client.containers.list(filters={"label": f"{OWNER_LABEL}={os.getpid()}"})}
    finally:
        client.close()


def _sandbox_roots() -> list[int]:
    """Local sandboxes' outermost processes: every child of this process (the harness starts none here)."""
    import psutil

    return [p.pid for p in psutil.Process().children(recursive=False)]


def _note(record: dict[str, Any]) -> None:
    """Append ``record`` to the notes file the side-by-side runner reads (a short blocking write)."""
    path = os.environ.get("AGENTGYM_BENCH_NOTES")
    if path:
        with open(path, "a") as notes:
            notes.write(json.dumps(record) + "\n")


class AgentgymTarget(Target):
    backend = "docker"

    def __init__(self, args: Any) -> None:
        super().__init__(args)
        self.uses_docker = self.backend == "docker"
        self.envs: list[Any] = []
        self._metered: set[Any] = set()

    def describe(self) -> str:
        return (f'agentgym.make("code", sandbox_backend="{self.backend}") per session (shared warm pool); '
                'env.reset(task); env.step(python tool call)')

    async def open(self, n: int) -> None:
        import agentgym
        from agentgym.sandboxes import warm_up

        await warm_up(self.backend, count=2 * n)
        self.envs = [agentgym.make("code", sandbox_backend=self.backend, max_turns=NO_TRUNCATION) for _ in range(n)]
        self.task = self.envs[0].tasks()[0]

        settled_at = time.monotonic() + SETTLING_SECONDS

        async def settle(i: int) -> None:
            played = 0
            while played < SETTLING_EPISODES or time.monotonic() < settled_at:
                played += 1
                await self.reset(i)
                for _ in range(self.args.steps):
                    await self.step(i, "print(1)")

        await asyncio.gather(*(settle(i) for i in range(n)))

    async def reset(self, i: int) -> None:
        await self.envs[i].reset(self.task)

    async def step(self, i: int, code: str) -> str:
        from agentgym.types import Message, ToolCall

        call = ToolCall(id="c", name="python", arguments=json.dumps({"code": code}))
        result = await self.envs[i].step(Message(role="assistant", tool_calls=[call]))
        return result.observation[0].text

    def containers(self) -> list[Any]:
        found = _own_containers() if self.uses_docker else {}
        self._metered = set(found)
        return list(found.values())

    def server_pids(self) -> list[int]:
        if self.uses_docker:
            return []
        pids = _sandbox_roots()
        self._metered = set(pids)
        return pids

    async def close(self) -> None:
        from agentgym.sandboxes import shutdown_pools

        now = set(_own_containers()) if self.uses_docker else set(_sandbox_roots())
        if self._metered and now != self._metered:
            new, gone = len(now - self._metered), len(self._metered - now)
            log(f"{self.name}: sandbox set changed during the level: {new} new, {gone} gone "
                "(the new ones were not metered)")
            _note({"target": self.name, "n": len(self.envs), "new": new, "gone": gone})
        for env in self.envs:
            await env.close()
        self.envs = []
        await shutdown_pools()
        if self.uses_docker:  # nothing of ours may outlive the level
            for c in _own_containers().values():
                log(f"{self.name}: removing leftover agentgym container {c.short_id}")
                c.remove(force=True)


def _target(name: str, backend: str) -> Any:
    cls = type(name.replace("-", "_"), (AgentgymTarget,), {"name": name, "backend": backend})
    return lambda args: cls(args)


TARGETS = {
    "agentgym-docker": _target("agentgym-docker", "docker"),
    "agentgym-local": _target("agentgym-local", "local"),
}
