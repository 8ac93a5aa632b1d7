"""HumanEval as Harbor task folders, round trip, and what grading a terminal episode costs.

- Round trip: ``agentgym export code --to harbor`` writes HumanEval's 164 tasks as Harbor folders; the
  terminal env loads them back and plays each with the ``oracle`` (its ``solution/solve.sh``) and the
  ``baseline`` (submits at once). ``oracle_passed`` and ``baseline_passed`` count rewards of 1.
- Grading cost: per oracle episode of ``--samples`` tasks, the terminal env's verifier from the end of the
  episode to the reward (stop the agent's processes, ``docker diff``, empty ``/tests`` and ``/logs``, upload
  ``tests/``, ``bash /tests/test.sh`` as root, read the reward), against the baseline measured in the same
  round: ``docker run --rm`` of the task's image with the same ``tests/`` and the oracle's ``/app`` mounted,
  running the same ``test.sh``, then reading the reward file it wrote. ``grading_vs_docker_run`` is their
  ratio, median with range over the samples.
- Reuse: ``--group`` oracle episodes of one task one after another in one env (a GRPO group), with the
  containers reset and reused (the default) and with ``reuse=False`` (each destroyed, the next started),
  the two arms alternating for ``--rounds``. ``reuse_vs_fresh`` is the ratio of their median seconds per
  whole episode (start or reset included), with its range over the rounds.

    python benchmarks/harbor_terminal.py [--limit 164] [--samples 20] [--concurrency 4] [--group 8] [--rounds 3]

Writes benchmarks/results/harbor_terminal.json.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from results_file import results_path, run_args, run_info, save_results
from stats import spread

import agentgym
from agentgym.envs.code.tasks import load_tasks as code_tasks
from agentgym.envs.terminal.env import TerminalEnv, harbor_task
from agentgym.envs.terminal.export import export_code_tasks
from agentgym.envs.terminal.images import image_for
from agentgym.rewards.verifier import Episode
from agentgym.rollout import rollout
from agentgym.sandboxes import SandboxRuntime
from agentgym.types import Reward, Task, Trajectory

RESULTS = results_path("harbor_terminal")
BASE_IMAGES = {"python:3.13-slim-bookworm": "agentgym/python"}


class Timed:
    """The terminal verifier, timed: seconds from the end of an episode to its reward."""

    name = "timed"

    def __init__(self) -> None:
        self.inner = TerminalEnv.verifier
        self.seconds: list[float] = []

    async def score(self, episode: Episode) -> Reward:
        started = time.perf_counter()
        reward = await self.inner.score(episode)
        self.seconds.append(time.perf_counter() - started)
        return reward


async def group(task: Task, policy: Any, size: int, *, reuse: bool) -> list[float]:
    """Seconds of each of ``size`` episodes of ``task`` played one after another in one env; the pool's
    containers are the run's own, so the first episode starts one and the others reset it (or start anew)."""
    seconds = []
    async with SandboxRuntime():
        env = agentgym.make("terminal", base_images=BASE_IMAGES, reuse=reuse)
        try:
            for _ in range(size):
                started = time.perf_counter()
                run = await rollout(env, policy, task)
                await env.release_sandbox()  # the reset (or the destroy) is part of the episode's cost
                seconds.append(time.perf_counter() - started)
                assert run.outcome_reward == 1.0 and run.info.get("sandbox_discarded") is None, run.info
        finally:
            await env.close()
    return seconds


async def play(episodes: list[tuple[Task, Any]], concurrency: int, verifier: Timed | None = None) -> list[Trajectory]:
    gate = asyncio.Semaphore(concurrency)

    async def one(task: Task, policy: Any) -> Trajectory:
        async with gate:
            env = agentgym.make("terminal", base_images=BASE_IMAGES,
                                **({"verifier": verifier} if verifier is not None else {}))
            try:
                return await rollout(env, policy, task)
            finally:
                await env.close()

    async with SandboxRuntime():
        return list(await asyncio.gather(*(one(task, policy) for task, policy in episodes)))


def docker_run_grading(folder: Path, image: str, source: str) -> tuple[float, float]:
    """The same test.sh in a fresh container of the task's image, the oracle's solution in /app; (seconds, reward)."""
    with tempfile.TemporaryDirectory() as scratch:
        app, logs = Path(scratch, "app"), Path(scratch, "logs")
        app.mkdir()
        logs.mkdir()
        (app / "solution.py").write_text(source)
        started = time.perf_counter()
        subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{folder / 'tests'}:/tests:ro",
                        "-v", f"{app}:/app", "-v", f"{logs}:/logs", "--entrypoint", "bash", image, "/tests/test.sh"],
                       check=True, capture_output=True)
        reward = float((logs / "verifier" / "reward.txt").read_text())
        return time.perf_counter() - started, reward


def oracle_source(folder: Path) -> str:
    line = (folder / "solution" / "solve.sh").read_text().splitlines()[1]
    return base64.b64decode(line.split()[1]).decode()


async def measure(limit: int, samples: int, concurrency: int, size: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch, "humaneval")
        export_code_tasks(code_tasks()[:limit], out)
        tasks = TerminalEnv.load_tasks(out)
        image = image_for(harbor_task(tasks[0]), BASE_IMAGES).ref  # one image: every folder's context is the same
        oracle, baseline = (TerminalEnv.scripted_policies()[name]() for name in ("oracle", "baseline"))
        started = time.perf_counter()
        runs = await play([(t, oracle) for t in tasks] + [(t, baseline) for t in tasks], concurrency)
        round_trip_s = time.perf_counter() - started
        oracles, baselines = runs[:len(tasks)], runs[len(tasks):]
        failed = [r.task_id for r in oracles if r.outcome_reward != 1.0]
        graded, plain = [], []
        for task in tasks[:samples]:  # one at a time, alternating: neither arm shares the machine with the other
            timed = Timed()
            [run] = await play([(task, oracle)], 1, timed)
            assert run.outcome_reward == 1.0, run.info.get("verifier")
            graded.append(timed.seconds[0])
            seconds, reward = await asyncio.to_thread(docker_run_grading, harbor_task(task).path, image,
                                                      oracle_source(harbor_task(task).path))
            assert reward == 1.0
            plain.append(seconds)
        reused, fresh = [], []
        for _ in range(rounds):
            reused.append(statistics.median((await group(tasks[0], oracle, size, reuse=True))[1:]))
            fresh.append(statistics.median((await group(tasks[0], oracle, size, reuse=False))[1:]))
    ratios = [g / p for g, p in zip(graded, plain, strict=True)]
    return {
        "tasks": len(tasks),
        "oracle_passed": sum(r.outcome_reward == 1.0 for r in oracles),
        "baseline_passed": sum(r.outcome_reward == 1.0 for r in baselines),
        "oracle_failed": failed,
        "round_trip_s": round(round_trip_s, 1),
        "episodes_per_s": round(2 * len(tasks) / round_trip_s, 2),
        "grading_ms": spread([s * 1e3 for s in graded]),
        "docker_run_ms": spread([s * 1e3 for s in plain]),
        "grading_vs_docker_run": spread(ratios),
        "samples": len(graded),
        "group_episode_s": {"reused": spread(reused), "fresh": spread(fresh)},
        "reuse_vs_fresh": spread([r / f for r, f in zip(reused, fresh, strict=True)]),
        "group": size,
        "rounds": rounds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=164, help="HumanEval tasks exported and played")
    parser.add_argument("--samples", type=int, default=20, help="oracle episodes whose grading is timed")
    parser.add_argument("--concurrency", type=int, default=4, help="round-trip episodes at once")
    parser.add_argument("--group", type=int, default=8, help="episodes of one task in a row, per arm and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the reuse comparison")
    parser.add_argument("--quick", action="store_true", help="smoke test: 4 tasks, 2 samples, groups of 3, 1 round")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    limit, samples, size, rounds = (4, 2, 3, 1) if args.quick else (args.limit, args.samples, args.group, args.rounds)
    result = asyncio.run(measure(limit, samples, args.concurrency, size, rounds))
    print(json.dumps(result, indent=1))
    print(f"grading: median {result['grading_ms']['median']:.0f} ms, "
          f"{result['grading_vs_docker_run']['median']:.2f}x a docker run of the same test.sh; a reused container's "
          f"episode {result['reuse_vs_fresh']['median']:.2f}x a fresh one's")
    result.update(info=run_info(), args=run_args(args))
    save_results(result, args.out)


if __name__ == "__main__":
    main()
