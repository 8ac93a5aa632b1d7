"""Round trip of ``run_python("print(1)")`` in a warm sandbox, against ``docker exec`` on the same container.

agentgym keeps one agent process per sandbox and talks to it over the container's attach socket,
so a call is one JSON line each way; the usual alternative, the docker SDK's ``exec_run``, starts a
new process through the engine for every call. Both run ``print(1)`` in the same container.

    python benchmarks/sandbox_roundtrip.py [--calls 500] [--exec-calls 50]

Writes benchmarks/results/sandbox_roundtrip.json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from results_file import results_path, save_results

from agentgym.sandboxes import acquire, shutdown_pools

RESULTS = results_path("sandbox_roundtrip")


def summary(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {
        "p50_ms": statistics.median(ordered) * 1e3,
        "p95_ms": ordered[int(0.95 * (len(ordered) - 1))] * 1e3,
        "calls": len(ordered),
    }


async def time_run_python(sandbox: object, calls: int) -> list[float]:
    for _ in range(20):  # warm the session
        await sandbox.run_python("print(1)")  # type: ignore[attr-defined]
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        result = await sandbox.run_python("print(1)")  # type: ignore[attr-defined]
        out.append(time.perf_counter() - started)
        assert result.output == "1\n", result
    return out


def time_exec_run(container_id: str, calls: int) -> list[float]:
    import docker

    container = docker.from_env().containers.get(container_id)
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        code, output = container.exec_run(["python3", "-c", "print(1)"])
        out.append(time.perf_counter() - started)
        assert code == 0 and output == b"1\n", (code, output)
    return out


async def main(calls: int, exec_calls: int) -> dict[str, object]:
    results: dict[str, object] = {}
    docker_box = await acquire("docker", image="python")
    local_box = await acquire("local")
    try:
        results["docker_run_python"] = summary(await time_run_python(docker_box, calls))
        exec_run = await asyncio.to_thread(time_exec_run, docker_box.id, exec_calls)
        results["docker_exec_run"] = summary(exec_run)
        results["local_run_python"] = summary(await time_run_python(local_box, calls))
    finally:
        await docker_box.close()
        await local_box.close()
        await shutdown_pools()
    fast, slow = results["docker_run_python"], results["docker_exec_run"]
    results["speedup_p50"] = slow["p50_ms"] / fast["p50_ms"]  # type: ignore[index]
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--exec-calls", type=int, default=50)
    args = parser.parse_args()
    results = asyncio.run(main(args.calls, args.exec_calls))
    print(f"{'path':<28} {'p50 ms':>9} {'p95 ms':>9} {'calls':>6}")
    for name in ("docker_run_python", "docker_exec_run", "local_run_python"):
        row = results[name]
        print(f"{name:<28} {row['p50_ms']:>9.3f} {row['p95_ms']:>9.3f} {row['calls']:>6}")  # type: ignore[index]
    print(f"run_python is {results['speedup_p50']:.0f}x faster than exec_run at p50")
    save_results(results, RESULTS)
