"""Full HumanEval reference run (164 episodes) at concurrency 8: agentgym's sandboxes vs a naive baseline.

Whole episodes as ``agentgym eval`` plays them: reset, one ``python`` call running the canonical
solution, ``submit``, and the verification (the task's tests in a fresh sandbox). The baseline is what
a first implementation does: a fresh ``docker run --rm`` for every tool call and every verification
(files the verifier writes are kept on the host and mounted in). All run through the same env, policy
and runner, so the ratio is the sandbox layer's doing. Each run is a fresh event loop, so agentgym's
shared pools start empty and the run pays its container starts, as a user's first evaluation does.
Runs go in rounds (docker, local, naive); each round's ratios are taken within the round, and the
median of ``--repeat`` rounds is reported with its range. CPU is this run's own (:mod:`cpu_accounting`);
the naive containers run under a cgroup parent of their own so their CPU is counted after they are
removed (their shims, gone with them, are not counted: that undercounts the baseline).

    python benchmarks/humaneval_reference.py            # 5 rounds, ~5 min
    python benchmarks/humaneval_reference.py --quick --out /tmp/h.json   # smoke test
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import tempfile
from pathlib import Path

from cpu_accounting import BENCH_OWNER_LABEL, CpuMeter, cgroup_parent, remove_cgroup_parent
from results_file import results_path, run_info, save_results
from stats import fmt, spread, summarize

from agentgym.envs.code.policies import ReferenceSolution
from agentgym.evaluation import evaluate
from agentgym.sandboxes import Limits, PythonResult, image_tag, shutdown_pools
from agentgym.sandboxes.base import ExecResult

NAIVE = "naive"
LABELS = {"docker": "agentgym docker", "local": "agentgym local", NAIVE: "naive docker run --rm"}


def _cgroup_flags() -> list[str]:
    parent = cgroup_parent()
    return ["--cgroup-parent", parent] if parent else []


class NaiveDockerSandbox:
    """One ``docker run --rm`` per call: no warm pool, no persistent process (the baseline)."""

    def __init__(self, image: str) -> None:
        self.id = "naive"
        self.limits = Limits()
        self.image = image
        self.files = tempfile.TemporaryDirectory(prefix="agentgym-naive-")

    async def _run(self, *argv: str, timeout: float | None = None) -> ExecResult:
        proc = await asyncio.create_subprocess_exec(
            "docker", "run", "--rm", "--network", "none", "-v", f"{self.files.name}:/tmp",
            "--label", f"{BENCH_OWNER_LABEL}={os.getpid()}", *_cgroup_flags(), self.image, *argv,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout or self.limits.exec_timeout + 30)
        return ExecResult(exit_code=proc.returncode or 0, stdout=out.decode(), stderr=err.decode())

    async def exec(self, cmd: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        return await self._run("sh", "-c", f"cd {shlex.quote(cwd or '/tmp')} && {cmd}", timeout=timeout)

    async def run_python(self, code: str, *, timeout: float | None = None) -> PythonResult:
        result = await self._run("python3", "-c", code, timeout=timeout)
        return PythonResult(output=result.stdout + result.stderr)

    async def read_file(self, path: str) -> bytes:
        return (Path(self.files.name) / Path(path).name).read_bytes()

    async def write_file(self, path: str, data: bytes | str) -> None:
        target = Path(self.files.name) / Path(path).name
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    async def is_alive(self) -> bool:
        return True

    async def close(self) -> None:
        self.files.cleanup()


class NaiveProvider:
    def __init__(self, image: str) -> None:
        self.image = image

    async def acquire(self) -> NaiveDockerSandbox:
        return NaiveDockerSandbox(self.image)


async def run(kind: str, limit: int, concurrency: int) -> dict[str, object]:
    """One full evaluation in a fresh event loop (so fresh shared pools): what one ``agentgym eval`` pays."""
    sandbox: object = NaiveProvider(image_tag("python")) if kind == NAIVE else kind
    meter = CpuMeter()
    try:
        summary, _ = await evaluate("code", ReferenceSolution(), env_kwargs={"sandbox_backend": sandbox}, limit=limit,
                                    concurrency=concurrency, progress=False)
        cpu = meter.stop()
    finally:
        await shutdown_pools()
    if summary.successes != summary.episodes:
        raise RuntimeError(f"{kind}: {summary.episodes - summary.successes} episodes failed: {summary.failures}")
    return {
        "episodes": summary.episodes,
        "wall_s": summary.wall_seconds,
        "episodes_per_s": summary.episodes_per_second,
        "cpu_ms_per_episode": cpu["total"] / summary.episodes * 1e3,
        "cpu_ms_per_episode_with_daemons": cpu["total_with_daemons"] / summary.episodes * 1e3,
        "machine_cpu_over_own_cpu": cpu["machine"] / cpu["total"],
        "cpu_s": cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--limit", type=int, default=164, help="tasks (HumanEval has 164)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of every run; medians are reported")
    parser.add_argument("--quick", action="store_true", help="smoke test: 8 tasks, 2 rounds")
    parser.add_argument("--out", type=Path, default=results_path("humaneval_reference"))
    args = parser.parse_args()
    if args.quick:
        args.limit, args.repeat = 8, 2
    info = run_info()
    kinds = ["docker", "local", NAIVE]
    runs: dict[str, list[dict[str, object]]] = {k: [] for k in kinds}
    try:
        for _ in range(args.repeat):  # rounds: each ratio compares runs made minutes apart, not an hour
            for kind in kinds:
                runs[kind].append(asyncio.run(run(kind, args.limit, args.concurrency)))
                print(f"{kind}: {runs[kind][-1]['episodes_per_s']:.2f} episodes/s", flush=True)
    finally:
        remove_cgroup_parent()
    rows = []
    for kind in kinds:
        ratios = [r["episodes_per_s"] / n["episodes_per_s"] for r, n in zip(runs[kind], runs[NAIVE], strict=True)]
        rows.append({"run": LABELS[kind], "summary": summarize(runs[kind]), "vs_naive": spread(ratios),
                     "runs": runs[kind]})
    print(f"\nHumanEval reference, {args.limit} tasks, concurrency {args.concurrency}; median (min–max) of "
          f"{args.repeat} rounds\n{'run':<24} {'episodes/s':>20} {'CPU-ms/episode':>16} {'vs naive':>20}")
    for r in rows:
        s = r["summary"]
        print(f"{r['run']:<24} {fmt(s['episodes_per_s'], '{:.2f}'):>20} {s['cpu_ms_per_episode']['median']:>16.0f} "
              f"{fmt(r['vs_naive'], '{:.1f}x'):>20}")
    save_results({"info": info, "args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, args.out)


if __name__ == "__main__":
    main()
