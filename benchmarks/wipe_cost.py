"""What a wipe costs, counted until the next session answers: close a used sandbox, get the next, run code.

A sandbox closed into a recycling pool is wiped back to fresh for its next user; the cost that matters
is everything between the close and the moment the next user's first ``python`` call has answered
(the wipe, the new Python session starting, the hand-out). Each of ``--sessions`` loops does, over and
over: ``sandbox.close()`` → ``pool.acquire()`` → ``run_python("print(1)")`` answered, on a
``SandboxPool(size=N, max_size=N)`` with one sandbox per loop and no spares, so every acquire is served
by the wipe of a sandbox that was just closed and the answer proves that wipe done. A window lasts at
least ``--seconds``; CPU is this run's own (:mod:`cpu_accounting`: this process, child processes, own
containers and their shims), per cycle, with dockerd/containerd beside it. The cycle's wall time
(close to answer) is reported too. Medians of ``--repeat`` windows with their ranges.

    python benchmarks/wipe_cost.py                    # docker and local, 1 and 8 loops, ~2 min
    python benchmarks/wipe_cost.py --quick --out "$(mktemp -d)/w.json"   # smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from cpu_accounting import CpuMeter
from results_file import run_args, run_info, run_options, save_results
from stats import fmt, percentile, summarize

from agentgym.sandboxes import Sandbox, SandboxPool

CODE = "print(1)"


async def answer(sandbox: Sandbox) -> None:
    result = await sandbox.run_python(CODE)
    if result.output != "1\n":
        raise RuntimeError(f"run_python printed {result.output!r} (error {result.error!r}), not 1")


async def window(pool: SandboxPool, boxes: list[Sandbox], seconds: float) -> dict[str, Any]:
    cycles: list[float] = []
    deadline = time.perf_counter() + seconds

    async def loop(k: int) -> None:
        while True:  # at least one cycle per sandbox, however late the loop starts
            started = time.perf_counter()
            await boxes[k].close()
            boxes[k] = await pool.acquire()
            await answer(boxes[k])
            cycles.append(time.perf_counter() - started)
            if time.perf_counter() >= deadline:
                break

    meter = CpuMeter()
    started = time.perf_counter()
    await asyncio.gather(*(loop(k) for k in range(len(boxes))))
    wall = time.perf_counter() - started
    cpu = meter.stop()
    return {
        "wipes": len(cycles),
        "wall_s": wall,
        "wipes_per_s": len(cycles) / wall,
        "cpu_ms_per_wipe": cpu["total"] / len(cycles) * 1e3,
        "cpu_ms_per_wipe_with_daemons": cpu["total_with_daemons"] / len(cycles) * 1e3,
        "close_to_answer_p50_ms": percentile(cycles, 50) * 1e3,
        "close_to_answer_p95_ms": percentile(cycles, 95) * 1e3,
        "machine_cpu_over_own_cpu": cpu["machine"] / cpu["total"],
        "cpu_s": cpu,
    }


async def level(backend: str, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    pool = SandboxPool(backend, "python", size=sessions, max_size=sessions)
    await pool.fill()
    boxes: list[Sandbox] = [await pool.acquire() for _ in range(sessions)]
    try:
        await asyncio.gather(*(answer(box) for box in boxes))
        await window(pool, boxes, args.seconds / 2)  # warm-up: every sandbox wiped at least once
        runs = [await window(pool, boxes, args.seconds) for _ in range(args.repeat)]
    finally:
        await asyncio.gather(*(box.close() for box in boxes))
        await pool.shutdown()
    return {"backend": backend, "sessions": sessions, "summary": summarize(runs), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", nargs="+", default=["docker", "local"])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 8], help="concurrent close/acquire loops")
    run_options(parser, "wipe_cost", repeat=5, quick="1 loop, 2 short windows", seconds=5.0)
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.seconds, args.repeat = [1], 0.5, 2
    info = run_info()
    rows = [asyncio.run(level(b, n, args)) for b in args.backend for n in args.sessions]
    print("\nwipe + next session's first answer; median (min–max) of the repeats")
    print(f"{'backend':<7} {'N':>3} {'CPU-ms per wipe':>22} {'+daemons':>9} {'close→answer p50 ms':>22} {'p95 ms':>8}")
    for r in rows:
        s = r["summary"]
        print(f"{r['backend']:<7} {r['sessions']:>3} {fmt(s['cpu_ms_per_wipe'], '{:.1f}'):>22} "
              f"{s['cpu_ms_per_wipe_with_daemons']['median']:>9.1f} {fmt(s['close_to_answer_p50_ms'], '{:.1f}'):>22} "
              f"{s['close_to_answer_p95_ms']['median']:>8.1f}")
    save_results({"info": info, "args": run_args(args), "levels": rows}, args.out)


if __name__ == "__main__":
    main()
