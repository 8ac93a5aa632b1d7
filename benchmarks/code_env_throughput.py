"""Code-env episodes as a user runs them: ``reset`` + 20 ``python`` steps, at 1, 8 and 32 sessions.

Every session is ``agentgym.make("code", sandbox_backend=BACKEND)`` (the default shared warm pool) and plays
episodes of ``env.reset(task)`` followed by ``--steps`` steps, each an assistant message with one
``python`` tool call running ``print(1)`` (the observation is checked). The pools start empty, as a
user's do; after unmeasured warm-up episodes (one per session, and on for ``--warmup`` seconds, while
the shared pool sizes its spares from the demand it sees: a run's first seconds are a cold start,
which ``pool_acquire.py`` measures), each repeat is a window of at least ``--seconds`` in which every
session plays whole episodes back to back; the window ends when the last session finishes its episode.

Per window: reset p50/p95, step p50/p95 (and the first step after a reset), steps/s, and steps per
CPU-second counting only this run's own work: this process, its child processes (local sandboxes)
and its own containers with their shims (:mod:`cpu_accounting`); dockerd/containerd are reported
beside it, not in it. The *step-only* figure (steps with no resets, in the same sessions) is kept
for comparison and labelled as such. Memory: each session's sandbox, idle after the run (container
cgroup charge on docker, PSS of its processes on local), and all of the run's sandboxes (spares
included) per session. Medians of ``--repeat`` windows with their ranges.

    python benchmarks/code_env_throughput.py                    # docker and local, 1/8/32 sessions, ~8 min
    python benchmarks/code_env_throughput.py --quick --out "$(mktemp -d)/t.json"   # smoke test, ~30 s
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from cpu_accounting import CpuMeter, container_memory, own_containers, process_tree_memory
from results_file import run_args, run_info, run_options, save_results
from stats import fmt, percentile, spread, summarize

import agentgym
from agentgym.sandboxes import shutdown_pools
from agentgym.types import Message, ToolCall

CODE = "print(1)"
ACTION = Message(role="assistant", tool_calls=[ToolCall(id="c", name="python", arguments=json.dumps({"code": CODE}))])
NO_TRUNCATION = 10**9  # an episode ends when the benchmark says so, never by the env's turn limit


class Timings:
    """Latencies (seconds) collected in one window."""

    def __init__(self) -> None:
        self.resets: list[float] = []
        self.steps: list[float] = []
        self.first_steps: list[float] = []
        self.episodes = 0


async def step(env: agentgym.Env, timings: Timings) -> float:
    started = time.perf_counter()
    result = await env.step(ACTION)
    took = time.perf_counter() - started
    text = result.observation[0].text
    if text.strip() != "1":
        raise RuntimeError(f"step printed {text!r}, not 1")
    timings.steps.append(took)
    return took


async def episode(env: agentgym.Env, steps: int, timings: Timings) -> None:
    started = time.perf_counter()
    await env.reset(env.tasks()[0])
    timings.resets.append(time.perf_counter() - started)
    for k in range(steps):
        took = await step(env, timings)
        if k == 0:
            timings.first_steps.append(took)
    timings.episodes += 1


async def window(
    envs: list[agentgym.Env], seconds: float, play: Callable[[agentgym.Env, Timings], Awaitable[object]]
) -> tuple[Timings, float, dict[str, float]]:
    """Every session runs ``play(env, timings)`` back to back until ``seconds`` have passed."""
    timings = Timings()

    async def session(env: agentgym.Env) -> None:
        while time.perf_counter() < deadline:
            await play(env, timings)

    meter = CpuMeter()  # may take a while on a loaded machine (it lists the run's containers): the window starts after
    started = time.perf_counter()
    deadline = started + seconds
    await asyncio.gather(*(session(env) for env in envs))
    wall = time.perf_counter() - started
    return timings, wall, meter.stop()


def cpu_figures(steps: int, wall: float, cpu: dict[str, float]) -> dict[str, Any]:
    return {
        "steps": steps,
        "wall_s": wall,
        "steps_per_s": steps / wall,
        "steps_per_cpu_s": steps / cpu["total"],
        "steps_per_cpu_s_with_daemons": steps / cpu["total_with_daemons"],
        "cpu_ms_per_step": cpu["total"] / steps * 1e3,
        "machine_cpu_over_own_cpu": cpu["machine"] / cpu["total"],
        "cpu_s": cpu,
    }


async def episodes_run(envs: list[agentgym.Env], steps: int, seconds: float) -> dict[str, Any]:
    timings, wall, cpu = await window(envs, seconds, lambda env, t: episode(env, steps, t))
    return {
        **cpu_figures(len(timings.steps), wall, cpu),
        "episodes": timings.episodes,
        "episodes_per_s": timings.episodes / wall,
        "cpu_ms_per_episode": cpu["total"] / timings.episodes * 1e3,
        "reset_p50_ms": percentile(timings.resets, 50) * 1e3,
        "reset_p95_ms": percentile(timings.resets, 95) * 1e3,
        "step_p50_ms": percentile(timings.steps, 50) * 1e3,
        "step_p95_ms": percentile(timings.steps, 95) * 1e3,
        "first_step_after_reset_p50_ms": percentile(timings.first_steps, 50) * 1e3,
    }


async def step_only_run(envs: list[agentgym.Env], seconds: float) -> dict[str, Any]:
    timings, wall, cpu = await window(envs, seconds, step)
    return {
        **cpu_figures(len(timings.steps), wall, cpu),
        "step_p50_ms": percentile(timings.steps, 50) * 1e3,
        "step_p95_ms": percentile(timings.steps, 95) * 1e3,
    }


def sandbox_memory(backend: str, sandbox_id: str) -> float:
    """MB one sandbox holds: its container's cgroup charge (docker) or its processes' PSS (local)."""
    if backend == "docker":
        return container_memory(sandbox_id)["usage_mb"]
    kind, _, pid = sandbox_id.partition("-")
    if kind != "local" or not pid.isdigit():
        raise ValueError(f"cannot find the processes of local sandbox {sandbox_id!r}")
    return process_tree_memory(int(pid))["pss_mb"]


async def memory(backend: str, envs: list[agentgym.Env]) -> dict[str, Any]:
    """Memory of each session's sandbox, idle, and of all this run's sandboxes per session."""
    await asyncio.sleep(1.0)  # let every sandbox settle idle
    per_sandbox = [sandbox_memory(backend, env.sandbox.id) for env in envs]
    if backend == "docker":
        owned = [container_memory(cid)["usage_mb"] for cid in own_containers()]
    else:  # every child process of this one is a local sandbox's
        owned = [process_tree_memory(os.getpid(), include_root=False)["pss_mb"]]
    return {
        "per_idle_sandbox_mb": spread(per_sandbox),
        "all_sandboxes_per_session_mb": sum(owned) / len(envs),
    }


async def level(backend: str, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    envs = [agentgym.make("code", sandbox_backend=backend, max_turns=NO_TRUNCATION) for _ in range(sessions)]
    try:
        warm, settled_at = Timings(), time.monotonic() + args.warmup

        async def settle(env: agentgym.Env) -> None:  # one episode each, and on until the pool has settled
            await episode(env, args.steps, warm)
            while time.monotonic() < settled_at:
                await episode(env, args.steps, warm)

        await asyncio.gather(*(settle(env) for env in envs))
        episodes, step_only = [], []
        for _ in range(args.repeat):
            episodes.append(await episodes_run(envs, args.steps, args.seconds))
            step_only.append(await step_only_run(envs, args.seconds / 2))
        mem = await memory(backend, envs)
    finally:
        for env in envs:
            await env.close()
        await shutdown_pools()
    return {
        "backend": backend,
        "sessions": sessions,
        "episodes": summarize(episodes),
        "step_only": summarize(step_only),
        "memory": mem,
        "runs": {"episodes": episodes, "step_only": step_only},
    }


def report(rows: list[dict[str, Any]]) -> None:
    print(f"\nwhole episodes: reset + steps; median (min–max) of the repeats\n"
          f"{'backend':<7} {'N':>3} {'reset p50 ms':>20} {'reset p95 ms':>12} {'step p50 ms':>18} "
          f"{'steps/s':>16} {'steps/CPU-s':>16} {'+daemons':>9} {'step-only steps/CPU-s':>22} {'MB/sandbox':>11}")
    for r in rows:
        e, s = r["episodes"], r["step_only"]
        print(f"{r['backend']:<7} {r['sessions']:>3} {fmt(e['reset_p50_ms'], '{:.1f}'):>20} "
              f"{e['reset_p95_ms']['median']:>12.1f} {fmt(e['step_p50_ms'], '{:.2f}'):>18} "
              f"{fmt(e['steps_per_s']):>16} {fmt(e['steps_per_cpu_s']):>16} "
              f"{e['steps_per_cpu_s_with_daemons']['median']:>9.0f} {fmt(s['steps_per_cpu_s']):>22} "
              f"{r['memory']['per_idle_sandbox_mb']['median']:>11.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", nargs="+", default=["docker", "local"])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--steps", type=int, default=20, help="steps per episode")
    parser.add_argument("--warmup", type=float, default=3.0,
                        help="unmeasured seconds of episodes first (the pool sizes its spares from demand meanwhile)")
    run_options(parser, "code_env_throughput", repeat=5, quick="1 and 2 sessions, 2 short windows",
                repeat_help="measured windows per level; medians are reported", seconds=5.0)
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.steps, args.seconds, args.repeat, args.warmup = [1, 2], 3, 0.3, 2, 0.0
    info = run_info()
    rows = []
    for backend in args.backend:
        for sessions in args.sessions:
            rows.append(asyncio.run(level(backend, sessions, args)))
            print(f"{backend} N={sessions}: done", flush=True)
    report(rows)
    save_results({"info": info, "args": run_args(args), "levels": rows}, args.out)


if __name__ == "__main__":
    main()
