"""Code-env throughput: concurrent sessions, each reset + N steps of a `python` call printing 1.

Reports steps per CPU-second (this process + Docker daemons + containers) and the step latency at one
session, through the public env API on the docker backend (and, for comparison, the local one).

    python benchmarks/code_env_throughput.py [--sessions 8] [--steps 20] [--backend docker]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from cpu_accounting import CpuMeter

import agentgym
from agentgym.sandboxes import shutdown_pools, warm_up
from agentgym.types import Message, ToolCall

PRINT_1 = Message(role="assistant", tool_calls=[ToolCall(id="c", name="python", arguments='{"code": "print(1)"}')])


async def session(backend: str, steps: int, latencies: list[float]) -> None:
    async with agentgym.make("code", sandbox=backend, max_turns=steps + 1) as env:
        await env.reset(env.tasks()[0])
        for _ in range(steps):
            started = time.perf_counter()
            result = await env.step(PRINT_1)
            latencies.append(time.perf_counter() - started)
            assert result.observation[0].text.strip() == "1", result.observation[0].text


async def measure(backend: str, sessions: int, steps: int) -> dict[str, float]:
    await warm_up(backend, image="python", count=sessions)
    single: list[float] = []
    await session(backend, steps * 5, single)
    latencies: list[float] = []
    meter = CpuMeter()
    started = time.perf_counter()
    await asyncio.gather(*(session(backend, steps, latencies) for _ in range(sessions)))
    wall = time.perf_counter() - started
    cpu = meter.stop()
    total_steps = sessions * steps
    return {
        "backend": backend,
        "sessions": sessions,
        "steps": total_steps,
        "wall_seconds": wall,
        "cpu_seconds": cpu["total"],
        "cpu_breakdown": cpu,
        "steps_per_cpu_second": total_steps / cpu["total"],
        "steps_per_wall_second": total_steps / wall,
        "step_p50_ms_one_session": statistics.median(single) * 1e3,
        "step_p50_ms_concurrent": statistics.median(latencies) * 1e3,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--backend", nargs="+", default=["docker", "local"])
    args = parser.parse_args()
    rows = []
    try:
        for backend in args.backend:
            rows.append(await measure(backend, args.sessions, args.steps))
    finally:
        await shutdown_pools()
    print(f"{'backend':<8} {'steps/CPU-s':>12} {'steps/wall-s':>13} {'p50 1 session':>14} {'p50 concurrent':>15}")
    for r in rows:
        print(f"{r['backend']:<8} {r['steps_per_cpu_second']:>12.0f} {r['steps_per_wall_second']:>13.0f} "
              f"{r['step_p50_ms_one_session']:>12.2f}ms {r['step_p50_ms_concurrent']:>13.2f}ms")
        print("         cpu: " + ", ".join(f"{k}={v:.3f}s" for k, v in r["cpu_breakdown"].items()))
    out = Path(__file__).parent / "results" / "code_env_throughput.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
