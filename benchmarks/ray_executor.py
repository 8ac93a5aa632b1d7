"""Episodes/s with the local executor against the Ray executor on one and on two nodes of this machine,
what Ray adds per episode, what the driver pays per episode, and how long a Ray cluster takes to start.

Workloads, each through :func:`agentgym.evaluation.evaluate` as ``agentgym eval`` plays them:

- ``toy``: the toy env's reference policy (two turns, no sandbox): episodes cost almost nothing, so
  the figure is the executor's own cost. At concurrency 1 (``toy-serial``) the wall time per
  episode is its latency; the Ray minus local difference is what Ray adds to one episode.
- ``humaneval``: the HumanEval reference eval on the local sandbox backend (bubblewrap jails),
  a real episode's work (a session, a verification in two more sandboxes).

Setups: ``local`` (8 episodes in flight in this process); ``ray-1`` (a one-node cluster, 2 CPUs,
one worker with 8 in flight); ``ray-2`` (two nodes of 1 CPU, one worker each with 4 in flight: the
same 8 in all). Both clusters are on this one 2-core machine, so two nodes cannot be faster than
one here; the point is what the executor costs, and that it spreads. Clusters are started by
:class:`agentgym.testing.ray_cluster.LocalRayCluster`; their start time is reported. Episodes/s
counts from the first episode (``Summary.wall_seconds``); ``setup_s`` is what came before it
(joining the cluster, starting the workers, each worker's first sandbox). ``driver_cpu_ms_per_episode``
is this process's CPU time (setup included) over the episodes: all of the work with the local
executor (sandboxes' own processes aside), only the driver's share with Ray.

The driver's own cost per episode is measured apart: decoding a returned HumanEval trajectory,
encoding it and appending it to the JSONL file (what :func:`evaluate` does for each). Sizes: an
:class:`~agentgym.evaluation.ray_executor.EpisodeSpec` as pickled for the wire, a trajectory's JSON.

    python benchmarks/ray_executor.py                          # 3 rounds, ~10 min
    python benchmarks/ray_executor.py --quick --out "$(mktemp -d)/r.json"  # smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import run_args, run_info, run_options, save_results
from stats import fmt, spread, summarize

from agentgym.envs.code.policies import ReferenceSolution
from agentgym.evaluation import evaluate
from agentgym.evaluation.executors import Executor, LocalExecutor
from agentgym.registry import env_class
from agentgym.sandboxes import SandboxRuntime
from agentgym.testing.ray_cluster import LocalRayCluster
from agentgym.types import Trajectory

IN_FLIGHT = 8


def workloads(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    toy = env_class("toy").scripted_policies()["reference"]
    return {
        "toy": {"env": "toy", "policy": toy, "samples": args.toy_samples, "in_flight": IN_FLIGHT},
        "toy-serial": {"env": "toy", "policy": toy, "samples": max(1, args.toy_samples // 5), "in_flight": 1},
        "humaneval": {"env": "code", "policy": ReferenceSolution, "limit": args.limit, "in_flight": IN_FLIGHT,
                      "env_kwargs": {"sandbox_backend": "local"}},
    }


async def one_run(work: dict[str, Any], executor: Executor, workers: int) -> tuple[dict[str, float], Trajectory]:
    """One evaluation in a fresh event loop (fresh pools): episodes/s from the first episode, and setup."""
    started, cpu = time.monotonic(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        async with SandboxRuntime():
            summary, trajectories = await evaluate(
                work["env"], work["policy"](), limit=work.get("limit"), samples=work.get("samples", 1),
                concurrency=max(1, work["in_flight"] // workers), env_kwargs=work.get("env_kwargs"),
                out=Path(tmp) / "run.jsonl", executor=executor, progress=False)
    if summary.successes != summary.episodes:
        raise RuntimeError(f"{summary.episodes - summary.successes} episodes failed: {summary.failures}")
    total, cpu = time.monotonic() - started, time.process_time() - cpu
    return {
        "episodes": summary.episodes,
        "episodes_per_s": summary.episodes_per_second,
        "ms_per_episode": summary.wall_seconds / summary.episodes * 1e3,
        "setup_s": total - summary.wall_seconds,
        # this process only: all of the work with the local executor, the driver's share with Ray
        "driver_cpu_ms_per_episode": cpu / summary.episodes * 1e3,
    }, trajectories[0]


def driver_cost(trajectory: Trajectory, repeat: int) -> dict[str, float]:
    """What the driver does per returned episode: decode its JSON, encode a row, append and flush it."""
    text = trajectory.model_dump_json()
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "run.jsonl", "a", encoding="utf-8") as sink:
        started = time.perf_counter()
        for _ in range(repeat):
            row = Trajectory.model_validate_json(text).model_dump_json()
            sink.write(row + "\n")
            sink.flush()
        seconds = (time.perf_counter() - started) / repeat
    return {"us_per_episode": seconds * 1e6, "episodes_per_s_one_core": 1 / seconds,
            "trajectory_json_bytes": len(text)}


def spec_bytes(trajectory: Trajectory) -> int:
    """An episode's spec as it goes over the wire: pickled, for a HumanEval task and the reference policy."""
    import ray.cloudpickle

    from agentgym.envs.code.tasks import load_tasks
    from agentgym.evaluation.ray_executor import EpisodeSpec

    task = next(t for t in load_tasks() if t.id == trajectory.task_id)
    setup = ray.cloudpickle.dumps((env_class("code"), {"sandbox_backend": "local"}, ReferenceSolution()))
    return len(ray.cloudpickle.dumps(EpisodeSpec("agentgym/code-v0", setup, task, 0, 600.0, 3600.0)))


def rounds(setup: str, make: Any, workers: int, works: dict[str, dict[str, Any]], repeat: int,
           runs: dict[tuple[str, str], list[dict[str, float]]]) -> Trajectory | None:
    sample = None
    for _ in range(repeat):
        for name, work in works.items():
            result, sample = asyncio.run(one_run(work, make(), workers))
            runs[setup, name].append(result)
            print(f"{setup:<7} {name:<11} {result['episodes_per_s']:8.1f} episodes/s "
                  f"(setup {result['setup_s']:.1f} s)", flush=True)
    return sample


def main() -> None:
    # A benchmark stopped with SIGTERM (``timeout``, ``kill``) still stops the Ray nodes it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=164, help="HumanEval tasks")
    parser.add_argument("--toy-samples", type=int, default=100, help="episodes per toy task (3 tasks)")
    run_options(parser, "ray_executor", repeat=3, quick="8 tasks, 15 toy episodes, 1 round",
                repeat_help="rounds of every run; medians are reported")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.toy_samples, args.repeat = 8, 5, 1
    info = run_info()
    works = workloads(args)
    setups = {"local": 1, "ray-1": 1, "ray-2": 2}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {(s, w): [] for s in setups for w in works}
    sample = rounds("local", LocalExecutor, 1, works, args.repeat, runs)
    assert sample is not None
    clusters: dict[str, dict[str, Any]] = {}
    from agentgym.evaluation.ray_executor import RayExecutor

    for setup, nodes in (("ray-1", 1), ("ray-2", 2)):
        started = time.monotonic()
        with LocalRayCluster(nodes=nodes, cpus_per_node=2 // nodes) as cluster:
            clusters[setup] = {"nodes": nodes, "node_start_s": cluster.start_seconds,
                               "cluster_start_s": time.monotonic() - started}
            print(f"{setup}: cluster of {nodes} node(s) up in {clusters[setup]['cluster_start_s']:.0f} s", flush=True)
            rounds(setup, lambda c=cluster, n=nodes: RayExecutor(c.address, workers=n), nodes, works,
                   args.repeat, runs)
    rows = [{"setup": s, "workload": w, "summary": summarize(r), "runs": r} for (s, w), r in runs.items()]
    by = {(r["setup"], r["workload"]): r["summary"] for r in rows}
    added = {setup: spread([ray["ms_per_episode"] - local["ms_per_episode"]
                            for ray, local in zip(runs[setup, "toy-serial"], runs["local", "toy-serial"],
                                                  strict=True)])
             for setup in ("ray-1", "ray-2")}
    driver = {**driver_cost(sample, 200 if args.quick else 2000), "episode_spec_bytes": spec_bytes(sample)}
    print(f"\nmedian (min–max) of {args.repeat} round(s); {os.cpu_count()} CPUs\n"
          f"{'setup':<7} {'workload':<11} {'episodes/s':>22} {'setup s':>18} {'driver CPU-ms/ep':>20}")
    for (setup, work), s in by.items():
        print(f"{setup:<7} {work:<11} {fmt(s['episodes_per_s'], '{:.1f}'):>22} {fmt(s['setup_s'], '{:.1f}'):>18} "
              f"{fmt(s['driver_cpu_ms_per_episode'], '{:.2f}'):>20}")
    for setup, ms in added.items():
        print(f"Ray adds per episode ({setup}, one in flight): {fmt(ms, '{:.1f}')} ms")
    print(f"driver per episode: {driver['us_per_episode']:.0f} µs (decode, encode, append, flush; "
          f"{driver['episodes_per_s_one_core']:.0f}/s on one core); spec {driver['episode_spec_bytes']} B, "
          f"trajectory {driver['trajectory_json_bytes']} B")
    for setup, c in clusters.items():
        print(f"{setup}: nodes started in {', '.join(f'{s:.0f} s' for s in c['node_start_s'])}")
    save_results({"info": info, "args": run_args(args), "clusters": clusters,
                  "ray_adds_ms_per_episode": added, "driver": driver, "rows": rows}, args.out)


if __name__ == "__main__":
    main()
