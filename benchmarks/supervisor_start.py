"""A sandbox's start and its python calls with this checkout's supervisor against another's, interleaved.

Each round starts one sandbox per arm on each backend, the arms' order alternating between rounds:
``start_ms`` is the backend's ``create`` until the sandbox answers (the bootstrap read the supervisor
from stdin and made its modules, the zygote and the first session are forked); then ``--calls``
``run_python("print(1)")`` calls, whose median is ``call_ms``; then the sandbox is closed. Both move
with the machine's load; ``bootstrap_cpu_ms`` does less: the CPU of a bare ``python3 -c <bootstrap>``
(no sandbox) that reads the supervisor, makes its modules, forks its zygote and first session, and
exits at the end of its stdin (the median of ``--calls`` runs; the zygote's own CPU is not counted). The other
supervisor (``--against``) is an older commit's one-file ``sandboxes/agent/agent.py`` or a
``sandboxes/supervisor`` folder, sent to this checkout's bootstrap. Medians and ranges of ``--repeat`` rounds.

    git show OLD:sandboxes/agent/agent.py > old_agent.py
    python benchmarks/supervisor_start.py --against old_agent.py [--backends local docker] [--repeat 10]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from episode_cost import payload_of
from results_file import portable, run_args, run_info, run_options, save_results
from stats import fmt, summarize

from agentgym.sandboxes import docker, local
from agentgym.sandboxes.bootstrap import supervisor_argv, supervisor_config, supervisor_payload
from agentgym.sandboxes.contract import Limits

BACKENDS = {"local": local, "docker": docker}


async def one(backend: str, payload: bytes, calls: int) -> dict[str, float]:
    """Start one sandbox on ``backend`` with ``payload`` on its stdin, time ``calls`` python calls, close it."""
    module = BACKENDS[backend]
    module.supervisor_payload = lambda: payload  # type: ignore[attr-defined]
    try:
        started = time.perf_counter()
        sandbox = await (local.create(Limits()) if backend == "local" else docker.create("python", Limits()))
        start = time.perf_counter() - started
    finally:
        module.supervisor_payload = supervisor_payload  # type: ignore[attr-defined]
    try:
        await sandbox.run_python("print(1)")  # the first call takes the direct session
        took = []
        for _ in range(calls):
            began = time.perf_counter()
            await sandbox.run_python("print(1)")
            took.append(time.perf_counter() - began)
    finally:
        await sandbox.close()
    return {"start_ms": start * 1e3, "call_ms": statistics.median(took) * 1e3}


def bootstrap_cpu(payload: bytes, runs: int) -> dict[str, float]:
    """The median CPU-ms of a bare supervisor process from start to exit (see the module's docstring)."""
    took = []
    with tempfile.TemporaryDirectory() as workdir:
        argv = supervisor_argv(sys.executable, supervisor_config(Limits(), workdir=workdir, rlimits={}))
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(argv, input=payload, capture_output=True, check=True, timeout=60)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            took.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {"bootstrap_cpu_ms": statistics.median(took) * 1e3}


async def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    arms = {"this checkout": supervisor_payload(), portable(args.against): payload_of(args.against)[0]}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {(b, a): [] for b in args.backends for a in arms}
    for backend in args.backends:
        for payload in arms.values():  # a warm-up each: images, imports, the first fork
            await one(backend, payload, 5)
    for k in range(args.repeat):
        for backend in args.backends:
            for name in list(arms)[:: 1 if k % 2 == 0 else -1]:
                row = await one(backend, arms[name], args.calls)
                runs[backend, name].append({**row, **bootstrap_cpu(arms[name], args.calls // 5)})
    return [{"backend": b, "supervisor": a, "runs": rows, "summary": summarize(rows)} for (b, a), rows in runs.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", metavar="PATH", required=True,
                        help="the other supervisor: a one-file agent.py or a sandboxes/supervisor folder")
    parser.add_argument("--backends", nargs="+", choices=sorted(BACKENDS), default=["local", "docker"])
    parser.add_argument("--calls", type=int, default=50, help="python calls timed per sandbox")
    run_options(parser, "supervisor_start", repeat=10, quick="two rounds of five calls")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.calls = 2, 5
    levels = asyncio.run(measure(args))
    for row in levels:
        s = row["summary"]
        print(f"{row['backend']:7} {row['supervisor'][:40]:40} start {fmt(s['start_ms'], '{:.1f}')} ms"
              f"   call {fmt(s['call_ms'], '{:.3f}')} ms   bootstrap CPU {fmt(s['bootstrap_cpu_ms'], '{:.1f}')} ms")
    save_results({**run_info(), "args": run_args(args), "levels": levels}, args.out)


if __name__ == "__main__":
    main()
