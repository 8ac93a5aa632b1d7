"""The two data paths to a Docker sandbox, and what a new engine costs: direct socket against attach stream.

With a local engine (a unix socket) requests go over a private unix socket bind-mounted into the
container; with any other endpoint they go over the container's attach stream, through dockerd and
the container's shim. For each path this measures, in a warm sandbox, the round trip of the protocol's
``ping`` (the transport alone) and of a trivial ``exec("true")``, and the start of a sandbox (container
created, attached, started, agent answering). Rows:

- ``unix direct``: the shared engine at ``/var/run/docker.sock``, the default path;
- ``unix attach``: the same engine with the direct socket turned off, so only the data path differs;
- ``tcp+tls attach``: a second engine on this machine (``agentgym.testing.dockerd``), reached over
  ``tcp://127.0.0.1`` with mutual TLS: the path every remote engine takes, minus the network.

It also times getting the python image onto the fresh second engine (``docker save`` from the shared
engine streamed into ``docker load`` there), against building it there with debootstrap.
Medians of ``--repeat`` runs with their ranges.

    python benchmarks/docker_endpoints.py                       # ~3 min
    python benchmarks/docker_endpoints.py --quick --out "$(mktemp -d)/e.json"   # smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from results_file import run_args, run_info, run_options, save_results
from stats import fmt, percentile, summarize

from agentgym.sandboxes import builder, docker, hosts
from agentgym.sandboxes.contract import Limits
from agentgym.sandboxes.hosts import Endpoint
from agentgym.testing.dockerd import second_engine

LIMITS = Limits(memory_mb=256, wall_seconds=600)


async def one_run(endpoint: Endpoint, calls: int, starts: int) -> dict[str, Any]:
    started: list[float] = []
    for _ in range(starts):
        began = time.perf_counter()
        box = await docker.create("python", LIMITS, [endpoint])
        started.append(time.perf_counter() - began)
        await box.destroy()
    pings: list[float] = []
    execs: list[float] = []
    async with await docker.create("python", LIMITS, [endpoint]) as box:
        multiplexed = box.client.protocol.multiplexed
        for _ in range(10):  # warm
            await box.exec("true")
        for _ in range(calls):
            began = time.perf_counter()
            await box.client.call("ping", 10)
            pings.append(time.perf_counter() - began)
        for _ in range(calls):
            began = time.perf_counter()
            result = await box.exec("true")
            execs.append(time.perf_counter() - began)
            if result.exit_code != 0:
                raise RuntimeError(f"exec('true') gave {result}")
    return {
        "ping_p50_ms": percentile(pings, 50) * 1e3,
        "exec_p50_ms": percentile(execs, 50) * 1e3,
        "exec_p95_ms": percentile(execs, 95) * 1e3,
        "start_p50_ms": percentile(started, 50) * 1e3,
        "attach_stream": multiplexed,
    }


async def measure(name: str, endpoint: Endpoint, args: argparse.Namespace) -> dict[str, Any]:
    runs = [await one_run(endpoint, args.calls, args.starts) for _ in range(args.repeat)]
    row = {"path": name, "endpoint": endpoint.url, "attach_stream": runs[0]["attach_stream"],
           "summary": summarize(runs), "runs": runs}
    s = row["summary"]
    print(f"{name:<16} ping {fmt(s['ping_p50_ms'], '{:.3f}')} ms   exec {fmt(s['exec_p50_ms'], '{:.2f}')} ms   "
          f"start {fmt(s['start_p50_ms'])} ms", flush=True)
    return row


async def main(args: argparse.Namespace) -> dict[str, Any]:
    await asyncio.to_thread(builder.build_image, "python")
    local = hosts.default()
    rows = [await measure("unix direct", local, args)]
    docker._direct[local] = False  # the same engine, the direct socket off: only the data path changes
    try:
        rows.append(await measure("unix attach", local, args))
    finally:
        del docker._direct[local]
    with second_engine(tls=True) as engine:
        assert engine.tcp is not None
        began = time.perf_counter()
        source = await asyncio.to_thread(builder.copy_image, builder.image_tag("python"), engine.unix)
        copy_seconds = time.perf_counter() - began
        if source is None:
            raise RuntimeError("the shared engine has no python image to copy")
        rows.append(await measure("tcp+tls attach", engine.tcp, args))
    print(f"image copied to a new engine in {copy_seconds:.1f} s")
    return {"rows": rows, "image_copy_s": copy_seconds}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="round trips timed per run")
    parser.add_argument("--starts", type=int, default=15, help="sandbox starts timed per run")
    run_options(parser, "docker_endpoints", repeat=3, quick="20 calls, 2 starts, one run")
    args = parser.parse_args()
    if args.quick:
        args.calls, args.starts, args.repeat = 20, 2, 1
    info = run_info()
    results = asyncio.run(main(args))
    save_results({"info": info, "args": run_args(args), **results}, args.out)
