"""Where an episode's CPU goes, by role: this process (the env's client side), the in-sandbox agent,
and the Python sessions (the zygote and every session it forked, the wiping one included); and the
minor page faults of each role, with what one costs on this machine.

One env on the local backend plays episodes of ``reset`` + ``--steps`` ``python`` tool calls of
``print(1)``, one after another, for at least ``--seconds`` per window. CPU is read from
``/proc/PID/stat`` (the zygote's count includes the sessions it has reaped), so the split holds for
the process roles, which are the same on Docker; Docker adds its containers' shims and cgroup
accounting (``code_env_throughput.py`` and ``wipe_cost.py`` charge those). With ``--steps 0``, an
episode is a reset: a wipe and nothing else. Medians of ``--repeat`` windows with their ranges.

A session is forked from the zygote, so every page it writes (a reference count of a shared object
is enough) is a copy-on-write fault, and every page it allocates a fresh one: ``fault_us`` is the
CPU of one fresh page (an anonymous page written once, then unmapped) measured here, to put the
sessions' faults per episode in milliseconds.

    python benchmarks/episode_cost.py                      # 0 and 20 steps, ~1 min
    python benchmarks/episode_cost.py --quick --out "$(mktemp -d)/e.json"
    git show OLD:sandboxes/agent/agent.py > old_agent.py       # a one-file supervisor (before the package)
    python benchmarks/episode_cost.py --against old_agent.py   # A/B, windows interleaved
    git worktree add ../old OLD                                 # or another checkout's package
    python benchmarks/episode_cost.py --against ../old/sandboxes/supervisor
    python benchmarks/episode_cost.py --through-agent     # direct sessions against calls through the agent
"""

from __future__ import annotations

import argparse
import asyncio
import json
import mmap
import os
import resource
import time
from pathlib import Path
from typing import Any

from cpu_accounting import comm, own_cpu, process_cpu, process_faults, tree
from results_file import portable, run_args, run_info, run_options, save_results
from stats import fmt, summarize

import agentgym
from agentgym.sandboxes import local, shutdown_pools, warm_up
from agentgym.sandboxes.bootstrap import PACKAGE, framed_package, in_order, supervisor_payload
from agentgym.types import Message, ToolCall

CALL = ToolCall(id="c", name="python", arguments=json.dumps({"code": "print(1)"}))
ACTION = Message(role="assistant", tool_calls=[CALL])


def roles() -> dict[str, float]:
    """CPU seconds and minor faults so far of the agent and of the sessions (zygote + its children, live
    and reaped), and this process's faults."""
    parent = tree()
    python = {pid for pid in parent if comm(pid).startswith("python")}
    agents = {pid for pid in python if parent[pid] not in python}
    zygotes = {pid for pid in python if parent[pid] in agents}
    sessions = {pid for pid in python if parent[pid] in zygotes}
    return {"agent": sum(process_cpu(p, reaped=False) for p in agents),
            "sessions": sum(process_cpu(p) for p in zygotes | sessions),
            "client_faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt,
            "agent_faults": sum(process_faults(p, reaped=False) for p in agents),
            "sessions_faults": sum(process_faults(p) for p in zygotes | sessions)}


def fault_us(pages: int = 4096, rounds: int = 10) -> float:
    """CPU microseconds of one fresh anonymous page: mapped, written once, unmapped."""
    started = time.process_time()
    for _ in range(rounds):
        with mmap.mmap(-1, pages * mmap.PAGESIZE) as area:
            for offset in range(0, pages * mmap.PAGESIZE, mmap.PAGESIZE):
                area[offset] = 1
    return (time.process_time() - started) / rounds / pages * 1e6


async def window(env: Any, steps: int, seconds: float) -> dict[str, Any]:
    task = env.tasks()[0]
    before, client, started, episodes = roles(), own_cpu(), time.perf_counter(), 0
    while time.perf_counter() - started < seconds:
        await env.reset(task)
        for _ in range(steps):
            result = await env.step(ACTION)
            if result.observation[0].text.strip() != "1":
                raise RuntimeError(f"the step answered {result.observation[0].text!r}, not 1")
        episodes += 1
    wall, client, after = time.perf_counter() - started, own_cpu() - client, roles()
    split = {"client": client, "agent": after["agent"] - before["agent"],
             "sessions": after["sessions"] - before["sessions"]}
    per_episode = {f"{k}_ms_per_episode": v / episodes * 1e3 for k, v in split.items()}
    faults = {f"{k}_per_episode": (after[k] - before[k]) / episodes
              for k in ("client_faults", "agent_faults", "sessions_faults")}
    total = sum(split.values()) / episodes * 1e3
    return {"episodes": episodes, "wall_ms_per_episode": wall / episodes * 1e3, **per_episode,
            "total_ms_per_episode": total, "total_ms_per_step": total / steps if steps else None, **faults,
            "fault_us": fault_us()}


def payload_of(path: str) -> tuple[bytes, bool]:
    """What the bootstrap reads to start the supervisor at ``path``, and whether it hands sessions over: a
    directory is the package (each ``*.py`` a module), a file one module run as ``__main__`` (the
    one-file agent of older commits)."""
    where = Path(path)
    if where.is_dir():
        sources = {f.stem: f.read_text(encoding="utf-8") for f in where.glob("*.py")}
        modules = in_order(PACKAGE, sources)
    else:
        modules = (("__main__", where.read_text(encoding="utf-8")),)
    return framed_package(PACKAGE, modules), any("def op_session" in source for _, source in modules)


async def windows(steps: int, seconds: float, count: int, agent: bytes | None = None,
                  through_agent: bool = False) -> list[dict[str, Any]]:
    """``count`` windows of one env on a fresh pool, after a warm-up window; ``agent``: another supervisor's
    payload (:func:`payload_of`);
    ``through_agent``: python calls go through the agent, as before sessions were handed to the host
    (``agentgym.sandboxes.direct_session``): the sandboxes are given no session socket."""
    if agent is not None:
        local.supervisor_payload = lambda: agent  # what the next sandboxes start (the pool is fresh)
    init = local.LocalSandbox.__init__
    if through_agent:
        def without_session_socket(self: local.LocalSandbox, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            self.session_socket = None
        local.LocalSandbox.__init__ = without_session_socket  # type: ignore[method-assign]
    await warm_up("local", count=2)
    env = agentgym.make("code", sandbox_backend="local", max_turns=10**9)
    try:
        await window(env, steps, seconds / 2)  # warm-up: the pool settles, every path has run
        return [await window(env, steps, seconds) for _ in range(count)]
    finally:
        await env.close()
        await shutdown_pools()
        local.supervisor_payload = supervisor_payload
        local.LocalSandbox.__init__ = init  # type: ignore[method-assign]


async def level(steps: int, args: argparse.Namespace, other: tuple[bytes, bool] | None) -> list[dict[str, Any]]:
    """This checkout's row for ``steps``; with ``other`` (``--against``'s payload, and whether it hands
    sessions over) and ``--through-agent``,
    those rows too, their windows interleaved."""
    arms = {"this checkout": (None, False)}
    if other is not None:  # an agent from before direct sessions answers python calls itself
        arms[portable(args.against)] = (other[0], not other[1])  # by name: no path of this machine
    if args.through_agent:
        arms["this checkout, python calls through the agent"] = (None, True)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in arms}
    if len(arms) == 1:
        runs["this checkout"] = await windows(steps, args.seconds, args.repeat)
    else:
        for k in range(args.repeat):  # alternating which goes first
            for name in list(runs)[:: 1 if k % 2 == 0 else -1]:
                runs[name] += await windows(steps, args.seconds, 1, *arms[name])
    return [{"steps": steps, "agent": name, "runs": rows,
             "summary": summarize([{k: v for k, v in r.items() if v is not None} for r in rows])}
            for name, rows in runs.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 20], help="python calls per episode")
    parser.add_argument("--against", metavar="PATH", help="another in-sandbox supervisor (an older "
                        "commit's sandboxes/agent/agent.py, or a sandboxes/supervisor folder), measured in "
                        "windows interleaved with this checkout's")
    parser.add_argument("--through-agent", action="store_true", help="also measure this checkout with python "
                        "calls through the agent (no direct sessions), in interleaved windows")
    run_options(parser, "episode_cost", repeat=5, quick="short windows", seconds=5.0)
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.repeat = 0.5, 2
    info = run_info()
    other = payload_of(args.against) if args.against else None
    rows = [row for n in args.steps for row in asyncio.run(level(n, args, other))]
    print(f"\nCPU-ms per episode on the local backend, one env (pid {os.getpid()}); median (min–max) of the repeats")
    print(f"{'steps':>5} {'client':>18} {'agent':>18} {'sessions+wipe':>18} {'total':>18} {'wall':>8}  agent")
    for r in rows:
        s = r["summary"]
        print(f"{r['steps']:>5} " + " ".join(f"{fmt(s[k + '_ms_per_episode'], '{:.2f}'):>18}"
                                             for k in ("client", "agent", "sessions", "total"))
              + f" {s['wall_ms_per_episode']['median']:>8.2f}  {r['agent']}")
    print("\nminor page faults per episode, and their CPU at this machine's cost of a fresh page")
    for r in rows:
        s = r["summary"]
        us = s["fault_us"]["median"]
        faults = {k: s[k + "_faults_per_episode"]["median"] for k in ("client", "agent", "sessions")}
        print(f"{r['steps']:>5} " + " ".join(f"{k}: {n:.0f} ({n * us / 1e3:.2f} ms)" for k, n in faults.items())
              + f"; {us:.2f} µs per fresh page  {r['agent']}")
    save_results({"info": info, "args": run_args(args), "levels": rows}, args.out)


if __name__ == "__main__":
    main()
