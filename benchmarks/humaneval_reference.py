"""Full HumanEval reference run (164 episodes) at concurrency 8: agentgym's sandboxes vs a naive baseline.

Whole episodes as ``agentgym eval`` plays them: reset, one ``python`` call running the canonical
solution, ``submit``, and the verification (the submission and the task's tests in two sandboxes of
their own). The baseline is what a first implementation does: a fresh ``docker run --rm`` for every
sandbox it is asked for (the episode's session, and the verifier's two), with no warm pool and no
reuse; commands run in a ``docker run --rm`` each, Python in the sandbox's one persistent session.
All run through the same env, policy and runner, so the ratio is the sandbox layer's doing. Each run
is a fresh event loop, so agentgym's shared pools start empty and the run pays its container starts,
as a user's first evaluation does.
Runs go in rounds (docker, local, naive); each round's ratios are taken within the round, and the
median of ``--repeat`` rounds is reported with its range. CPU is this run's own (:mod:`cpu_accounting`);
the naive containers run under a cgroup parent of their own so their CPU is counted after they are
removed (their shims, gone with them, are not counted: that undercounts the baseline).

    python benchmarks/humaneval_reference.py            # 5 rounds, ~5 min
    python benchmarks/humaneval_reference.py --quick --out "$(mktemp -d)/h.json"   # smoke test

``--versions OLD,NEW`` compares two checkouts of agentgym instead (no naive run): in each round, each
of ``--kinds`` runs under each checkout in turn (a process each, with ``PYTHONPATH`` set to it), and
the ratios NEW/OLD of CPU-ms per episode and of episodes per second are taken within the round::

    python benchmarks/humaneval_reference.py --versions ../before,. --kinds docker,local --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from cpu_accounting import BENCH_OWNER_LABEL, CpuMeter, cgroup_parent, remove_cgroup_parent
from results_file import run_args, run_info, run_options, save_results
from stats import fmt, spread, summarize

from agentgym.envs.code.policies import ReferenceSolution
from agentgym.evaluation import evaluate
from agentgym.sandboxes import Limits, PythonResult, SandboxRuntime, image_tag
from agentgym.sandboxes.contract import ExecResult

NAIVE = "naive"
LABELS = {"docker": "agentgym docker", "local": "agentgym local", NAIVE: "naive docker run --rm"}


def _cgroup_flags() -> list[str]:
    parent = cgroup_parent()
    return ["--cgroup-parent", parent] if parent else []


# The naive sandbox's Python session: length-prefixed code in on stdin, a length-prefixed JSON reply out.
SESSION = r"""
import io, json, sys, traceback
namespace = {"__name__": "__main__"}
while True:
    size = sys.stdin.buffer.read(10)
    if not size:
        break
    code = sys.stdin.buffer.read(int(size)).decode()
    sys.stdout = sys.stderr = io.StringIO()
    error = None
    try:
        exec(compile(code, "<python>", "exec"), namespace)
    except BaseException:
        error = traceback.format_exc()
    output, sys.stdout, sys.stderr = sys.stdout.getvalue(), sys.__stdout__, sys.__stderr__
    reply = json.dumps({"output": output, "error": error}).encode()
    sys.stdout.buffer.write(b"%010d" % len(reply) + reply)
    sys.stdout.buffer.flush()
"""


class NaiveDockerSandbox:
    """No warm pool, no reuse (the baseline): a ``docker run --rm`` per command, and one for the Python
    session, started on its first use and removed on close."""

    def __init__(self, image: str) -> None:
        self.id = "naive"
        self.limits = Limits()
        self.image = image
        self.files = tempfile.TemporaryDirectory(prefix="agentgym-naive-")
        self.session: asyncio.subprocess.Process | None = None
        self.name = ""

    def _docker_run(self, *argv: str) -> list[str]:
        return ["docker", "run", "--rm", "--network", "none", "-v", f"{self.files.name}:/tmp",
                "--label", f"{BENCH_OWNER_LABEL}={os.getpid()}", *_cgroup_flags(), *argv]

    async def _run(self, *argv: str, timeout: float | None = None) -> ExecResult:
        proc = await asyncio.create_subprocess_exec(
            *self._docker_run(self.image, *argv), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout or self.limits.exec_timeout + 30)
        return ExecResult(exit_code=proc.returncode or 0, stdout=out.decode(), stderr=err.decode())

    async def exec(self, cmd: str, *, timeout: float | None = None, cwd: str | None = None) -> ExecResult:
        return await self._run("sh", "-c", f"cd {shlex.quote(cwd or '/tmp')} && {cmd}", timeout=timeout)

    async def run_python(self, code: str, *, timeout: float | None = None) -> PythonResult:
        if self.session is None:
            self.name = f"agentgym-naive-{uuid.uuid4().hex[:12]}"
            self.session = await asyncio.create_subprocess_exec(
                *self._docker_run("-i", "--name", self.name, self.image, "python3", "-u", "-c", SESSION),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        stdin, stdout = self.session.stdin, self.session.stdout
        assert stdin is not None and stdout is not None
        data = code.encode()

        async def exchange() -> dict[str, str | None]:
            stdin.write(b"%010d" % len(data) + data)
            await stdin.drain()
            reply: dict[str, str | None] = json.loads(await stdout.readexactly(int(await stdout.readexactly(10))))
            return reply

        try:
            reply = await asyncio.wait_for(exchange(), timeout or self.limits.exec_timeout)
        except TimeoutError:
            await self._end_session()
            return PythonResult(error="timed out", timed_out=True, restarted=True)
        except (asyncio.IncompleteReadError, ConnectionError):
            await self._end_session()
            return PythonResult(error="the Python session exited", restarted=True)
        return PythonResult(output=reply["output"] or "", error=reply["error"])

    async def _end_session(self) -> None:
        if self.session is None:
            return
        remove = await asyncio.create_subprocess_exec(
            "docker", "rm", "-f", self.name, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        await remove.wait()
        await self.session.wait()
        self.session = None

    async def read_file(self, path: str) -> bytes:
        return (Path(self.files.name) / Path(path).name).read_bytes()

    async def write_file(self, path: str, data: bytes | str) -> None:
        target = Path(self.files.name) / Path(path).name
        target.write_bytes(data.encode() if isinstance(data, str) else data)

    async def is_alive(self) -> bool:
        return True

    async def close(self) -> None:
        await self._end_session()
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
    async with SandboxRuntime():  # closed after the meter stops, as an eval's pools outlive its last episode
        summary, _ = await evaluate("code", ReferenceSolution(), env_kwargs={"sandbox_backend": sandbox}, limit=limit,
                                    concurrency=concurrency, progress=False)
        cpu = meter.stop()
    if summary.successes != summary.episodes and kind != NAIVE:
        raise RuntimeError(f"{kind}: {summary.episodes - summary.successes} episodes failed: {summary.failures}")
    # The baseline's episodes can fail on a loaded machine (a verification out of time): its time was
    # spent all the same, so the run counts, with how many passed.
    return {
        "episodes": summary.episodes,
        "passed": summary.successes,
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
    parser.add_argument("--kinds", default=f"docker,local,{NAIVE}",
                        help="runs in each round, of docker, local and naive (without naive there is no ratio: "
                             "e.g. to compare two versions of agentgym, run each with PYTHONPATH set to it)")
    run_options(parser, "humaneval_reference", repeat=5, quick="8 tasks, 2 rounds",
                repeat_help="rounds of every run; medians are reported")
    parser.add_argument("--versions", help="OLD,NEW: two agentgym checkouts to compare (see the module docstring)")
    args = parser.parse_args()
    if args.quick:
        args.limit, args.repeat = 8, 2
    info = run_info()
    kinds = args.kinds.split(",")
    if args.versions:
        compare_versions(args, kinds, info)
        return
    runs: dict[str, list[dict[str, object]]] = {k: [] for k in kinds}
    try:
        for _ in range(args.repeat):  # rounds: each ratio compares runs made minutes apart, not an hour
            for kind in kinds:
                runs[kind].append(asyncio.run(run(kind, args.limit, args.concurrency)))
                run_ = runs[kind][-1]
                print(f"{kind}: {run_['episodes_per_s']:.2f} episodes/s, {run_['passed']} of {run_['episodes']} passed",
                      flush=True)
    finally:
        remove_cgroup_parent()
    rows = []
    for kind in kinds:
        ratios = [r["episodes_per_s"] / n["episodes_per_s"]
                  for r, n in zip(runs[kind], runs.get(NAIVE, runs[kind]), strict=True)]
        rows.append({"run": LABELS[kind], "summary": summarize(runs[kind]),
                     "vs_naive": spread(ratios) if NAIVE in runs else None, "runs": runs[kind]})
    print(f"\nHumanEval reference, {args.limit} tasks, concurrency {args.concurrency}; median (min–max) of "
          f"{args.repeat} rounds\n{'run':<24} {'episodes/s':>20} {'CPU-ms/episode':>16} {'vs naive':>20}")
    for r in rows:
        s = r["summary"]
        ratio = fmt(r["vs_naive"], "{:.1f}x") if r["vs_naive"] else "-"
        print(f"{r['run']:<24} {fmt(s['episodes_per_s'], '{:.2f}'):>20} {s['cpu_ms_per_episode']['median']:>16.0f} "
              f"{ratio:>20}")
    save_results({"info": info, "args": run_args(args), "rows": rows}, args.out)


def compare_versions(args: argparse.Namespace, kinds: list[str], info: dict[str, object]) -> None:
    """Rounds of each kind under each of two checkouts, one process per run; NEW/OLD ratios within rounds."""
    versions = [os.path.abspath(v) for v in args.versions.split(",")]
    if len(versions) != 2:
        raise SystemExit("--versions takes two checkouts: OLD,NEW")
    runs: dict[tuple[str, str], list[dict[str, object]]] = {(k, v): [] for k in kinds for v in versions}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.repeat):
            for kind in kinds:
                for version in versions:
                    out = Path(scratch) / f"{round_}-{kind}-{versions.index(version)}.json"
                    subprocess.run([sys.executable, __file__, "--kinds", kind, "--repeat", "1", "--limit",
                                    str(args.limit), "--concurrency", str(args.concurrency), "--out", str(out)],
                                   env={**os.environ, "PYTHONPATH": version}, check=True, stdout=subprocess.DEVNULL)
                    runs[kind, version].append(json.loads(out.read_text())["rows"][0]["runs"][0])
    rows = []
    print(f"\nHumanEval reference, {args.limit} tasks, concurrency {args.concurrency}; NEW ({versions[1]}) over "
          f"OLD ({versions[0]}), median (min–max) of {args.repeat} rounds\n"
          f"{'run':<18} {'OLD CPU-ms/ep':>14} {'NEW CPU-ms/ep':>14} {'CPU ratio':>20} {'episodes/s ratio':>20}")
    for kind in kinds:
        old, new = runs[kind, versions[0]], runs[kind, versions[1]]
        cpu = spread([float(n["cpu_ms_per_episode"]) / float(o["cpu_ms_per_episode"])  # type: ignore[arg-type]
                      for o, n in zip(old, new, strict=True)])
        rate = spread([float(n["episodes_per_s"]) / float(o["episodes_per_s"])  # type: ignore[arg-type]
                       for o, n in zip(old, new, strict=True)])
        before, after = summarize(old), summarize(new)
        rows.append({"run": LABELS[kind], "old": before, "new": after, "cpu_new_over_old": cpu,
                     "rate_new_over_old": rate, "runs": {"old": old, "new": new}})
        print(f"{LABELS[kind]:<18} {before['cpu_ms_per_episode']['median']:>14.0f} "
              f"{after['cpu_ms_per_episode']['median']:>14.0f} {fmt(cpu, '{:.2f}x'):>20} {fmt(rate, '{:.2f}x'):>20}")
    save_results({"info": info, "args": run_args(args), "rows": rows}, args.out)


if __name__ == "__main__":
    main()
