"""Full HumanEval reference run (164 episodes) at concurrency 8: agentgym's sandboxes vs a naive baseline.

The baseline is what a first implementation does: a fresh ``docker run --rm`` for every tool call and
every verification (files the verifier writes are kept on the host and mounted in). Both run through
the same env, policy and runner, so the ratio is the sandbox layer's doing.

    python benchmarks/humaneval_reference.py [--concurrency 8] [--limit 164] [--skip-baseline]
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import tempfile
from pathlib import Path

from results_file import results_path, save_results

from agentgym.envs.code.policies import ReferenceSolution
from agentgym.evaluation import evaluate
from agentgym.sandboxes import Limits, PythonResult, image_tag, shutdown_pools
from agentgym.sandboxes.base import ExecResult


class NaiveDockerSandbox:
    """One ``docker run --rm`` per call: no warm pool, no persistent process (the baseline)."""

    def __init__(self, image: str) -> None:
        self.id = "naive"
        self.limits = Limits()
        self.image = image
        self.files = tempfile.TemporaryDirectory(prefix="agentgym-naive-")

    async def _run(self, *argv: str, timeout: float | None = None) -> ExecResult:
        proc = await asyncio.create_subprocess_exec(
            "docker", "run", "--rm", "--network", "none", "-v", f"{self.files.name}:/tmp", self.image, *argv,
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


async def run(label: str, sandbox: object, limit: int, concurrency: int) -> dict[str, object]:
    summary, _ = await evaluate("code", ReferenceSolution(), env_kwargs={"sandbox_backend": sandbox}, limit=limit,
                                concurrency=concurrency, progress=False)
    assert summary.successes == summary.episodes, summary.failures
    return {"label": label, "episodes": summary.episodes, "successes": summary.successes,
            "wall_seconds": summary.wall_seconds, "episodes_per_second": summary.episodes_per_second}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--limit", type=int, default=164)
    parser.add_argument("--skip-baseline", action="store_true")
    args = parser.parse_args()
    rows = []
    try:
        rows.append(await run("agentgym docker", "docker", args.limit, args.concurrency))
        rows.append(await run("agentgym local", "local", args.limit, args.concurrency))
        if not args.skip_baseline:
            naive = NaiveProvider(image_tag("python"))
            rows.append(await run("naive docker run --rm", naive, args.limit, args.concurrency))
    finally:
        await shutdown_pools()
    base = next((r for r in rows if r["label"].startswith("naive")), None)
    print(f"{'run':<24} {'episodes':>8} {'wall s':>8} {'episodes/s':>11} {'vs naive':>9}")
    for r in rows:
        ratio = f"{r['episodes_per_second'] / base['episodes_per_second']:.1f}x" if base else "-"
        print(f"{r['label']:<24} {r['episodes']:>8} {r['wall_seconds']:>8.1f} "
              f"{r['episodes_per_second']:>11.2f} {ratio:>9}")
    save_results(rows, results_path("humaneval_reference"))


if __name__ == "__main__":
    asyncio.run(main())
