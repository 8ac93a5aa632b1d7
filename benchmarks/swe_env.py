"""SWE env: episode reset with warm reuse against a fresh container, the reset-to-base checks, verification per task.

- ``reset_warm_ms``: ``env.reset(task)`` when the previous episode's sandbox of the same image was
  reset to its base and passed every check (``envs/swe/kept.py``): no container start.
- ``reset_fresh_ms``: ``env.reset(task)`` with no such sandbox: a container starts from the image.
- ``give_back_ms``: what warm reuse pays instead, when an episode ends: kill the code's processes,
  ``git reset``/``git clean``, and the checks (``git status``, scratch directories, ``docker diff``).
- ``verify_s``: the verifier on the gold patch: a fresh container, the patch, the test patch, the
  tests, swebench's grading; destroyed after. It owns the test run (``envs/swe/guard.py``,
  ``envs/swe/protect.py``): the protected files archived and put back, the image's plugins listed,
  canaries, the JUnit report read and cross-checked.
- ``verify_plain_s``: the baseline, measured in the same run, interleaved with ``verify_s``: SWE-bench's
  procedure alone (a fresh container, ``git apply`` of the patch and the test patch, the test command,
  swebench's grading), none of that ownership. ``verify_added`` is ``verify_s / verify_plain_s``.

Each figure is the median of ``--runs`` runs (with its range) of per-run p50s over ``--samples``
episodes. Tasks come from ``--tasks FILE`` (SWE-bench format, first task), or the tiny repository of
the test suite (``tests/swe/repo.py``, its image built from a Dockerfile on first use).

    python benchmarks/swe_env.py [--samples 10] [--runs 3] [--tasks FILE] [--quick]

Writes benchmarks/results/swe_env.json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from results_file import results_path, run_info, save_results
from stats import spread

from agentgym.envs.swe import testrun
from agentgym.envs.swe.env import SWEEnv
from agentgym.envs.swe.grading import Grade, grade, parser_name
from agentgym.envs.swe.images import image_for
from agentgym.envs.swe.kept import GIT, start_fresh
from agentgym.envs.swe.tasks import REPO_DIR, SWETask, load_tasks
from agentgym.envs.swe.verifier import evaluate_patch, graded_test_files
from agentgym.sandboxes import shutdown_containers
from agentgym.types import Task

RESULTS = results_path("swe_env")


async def tiny_task() -> Task:
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from tests.swe import repo
    from tests.swe.fixtures import head_of

    return SWETask.model_validate(repo.task_row(await asyncio.to_thread(head_of, "flat"))).to_task()


async def plain_verify(swe: SWETask, patch: str, image: str) -> Grade:
    """SWE-bench's procedure with nothing the verifier owns: the baseline of ``verify_s``."""
    sandbox = await start_fresh(image)
    try:
        await sandbox.exec(f"{GIT} checkout -q -f {swe.base_commit} && {GIT} clean -qfd", cwd=REPO_DIR)
        for name, text in (("model", patch), ("test", swe.test_patch)):
            if text.strip():
                await sandbox.write_file(f"/tmp/{name}.patch", text)
                await sandbox.exec(f"{GIT} apply /tmp/{name}.patch", cwd=REPO_DIR)
        result = await testrun.run_tests(sandbox, swe.test_cmd or testrun.DEFAULT_TEST_CMD,
                                         tests=graded_test_files(swe), parser=parser_name(swe))
        return grade(swe, result.swebench_log, applied=True)
    finally:
        await sandbox.destroy()


async def one_run(task: Task, samples: int) -> dict[str, float]:
    warm, fresh, give_back, verify, plain = [], [], [], [], []
    env = SWEEnv()
    try:
        for i in range(samples * 2):
            if i % 2:  # every other episode starts with no warm sandbox
                await shutdown_containers()
            started = time.perf_counter()
            await env.reset(task)
            (fresh if i % 2 else warm if i else fresh).append(time.perf_counter() - started)
            await env.bash("echo change >> README.txt; python3 -c 'print(1)'")
            started = time.perf_counter()
            await env.release_sandbox()
            give_back.append(time.perf_counter() - started)
    finally:
        await env.close()
        await shutdown_containers()
    swe = SWETask.of(task)
    image = await asyncio.to_thread(image_for, swe)
    for _ in range(max(1, samples // 2)):
        started = time.perf_counter()
        graded = await evaluate_patch(swe, swe.patch, image=image)
        verify.append(time.perf_counter() - started)
        assert graded.resolved, graded.reason
        started = time.perf_counter()
        graded = await plain_verify(swe, swe.patch, image)
        plain.append(time.perf_counter() - started)
        assert graded.resolved, graded.reason
    return {
        "reset_warm_ms": statistics.median(warm) * 1e3,
        "reset_fresh_ms": statistics.median(fresh) * 1e3,
        "give_back_ms": statistics.median(give_back) * 1e3,
        "verify_s": statistics.median(verify),
        "verify_plain_s": statistics.median(plain),
        "verify_added": statistics.median(verify) / statistics.median(plain),
        "fresh_over_warm": statistics.median(fresh) / statistics.median(warm),
    }


async def main(samples: int, runs: int, tasks: str | None) -> dict:
    task = load_tasks(tasks)[0] if tasks else await tiny_task()
    results = [await one_run(task, samples) for _ in range(runs)]
    return {"info": run_info(), "task": task.id, "samples": samples, "runs": results,
            "summary": {key: spread([r[key] for r in results]) for key in results[0]}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tasks", help="SWE-bench-format tasks; the first is used")
    parser.add_argument("--quick", action="store_true", help="2 samples, 1 run: a smoke test")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    samples, runs = (2, 1) if args.quick else (args.samples, args.runs)
    data = asyncio.run(main(samples, runs, args.tasks))
    for key, value in data["summary"].items():
        print(f"{key:<16} median {value['median']:10.3f}  range {value['min']:.3f} .. {value['max']:.3f}")
    save_results(data, args.out)
