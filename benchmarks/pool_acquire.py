"""How long ``acquire()`` takes from a warm pool, against creating and starting a sandbox on demand.

A warm acquire pops a ready sandbox; a cold one starts a container (or a local jail)
and waits for its agent's first answer. Each warm acquire waits for the pool to refill first, so
every sample is a warm hand-out, not a queue.

    python benchmarks/pool_acquire.py [--samples 30] [--backends docker local] [--out FILE]

Writes benchmarks/results/pool_acquire.json (or ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from results_file import results_path, save_results

from agentgym.sandboxes import SandboxPool

RESULTS = results_path("pool_acquire")


async def timed_acquires(pool: SandboxPool, samples: int, *, refill: bool) -> list[float]:
    out = []
    for _ in range(samples):
        if refill:
            await pool.fill()
        started = time.perf_counter()
        sandbox = await pool.acquire()
        out.append(time.perf_counter() - started)
        await sandbox.close()
    return out


async def measure(backend: str, samples: int) -> dict[str, float]:
    warm_pool = SandboxPool(backend, "python", size=2)
    cold_pool = SandboxPool(backend, "python", size=0)  # nothing kept ready: every acquire starts one
    try:
        warm = await timed_acquires(warm_pool, samples, refill=True)
        cold = await timed_acquires(cold_pool, max(5, samples // 3), refill=False)
    finally:
        await warm_pool.shutdown()
        await cold_pool.shutdown()
    return {
        "warm_p50_ms": statistics.median(warm) * 1e3,
        "warm_max_ms": max(warm) * 1e3,
        "cold_p50_ms": statistics.median(cold) * 1e3,
        "samples": len(warm),
    }


async def main(backends: list[str], samples: int) -> dict[str, dict[str, float]]:
    return {backend: await measure(backend, samples) for backend in backends}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--backends", nargs="+", default=["docker", "local"])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    results = asyncio.run(main(args.backends, args.samples))
    print(f"{'backend':<8} {'warm p50 ms':>12} {'warm max ms':>12} {'cold p50 ms':>12}")
    for backend, row in results.items():
        warm, worst, cold = row["warm_p50_ms"], row["warm_max_ms"], row["cold_p50_ms"]
        print(f"{backend:<8} {warm:>12.3f} {worst:>12.3f} {cold:>12.1f}")
    save_results(results, args.out)
