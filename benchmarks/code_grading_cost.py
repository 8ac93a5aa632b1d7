"""What grading a code submission costs, per mode: a task of 20,000 candidate calls, and a HumanEval subset.

Each grading is one ``verify`` on a warm pool (a first grading warms it and is not counted), run in
this process against the checkout on ``PYTHONPATH``; ``--modes`` picks the modes (a checkout without
``grading`` takes ``isolated`` only). Wall seconds per grading, the median of ``--repeat``. Where the
checkout has the load-time dry run, its cost per HumanEval task (paid once per task set and process,
before the first episode) is measured too. ``before_after.py --only "code grading"`` runs it under two
checkouts, rounds interleaved (an older checkout without this script runs the newer one's copy).

    python benchmarks/code_grading_cost.py --sandbox local --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import statistics
import time
from pathlib import Path

from results_file import results_path, run_args, run_info, save_results

from agentgym.envs.code.grading import verify
from agentgym.envs.code.tasks import load_tasks

MANY = {"task_id": "many", "prompt": "def inc(x: int) -> int:\n    \"\"\"x + 1.\"\"\"\n",
        "test": "def check(candidate):\n    for i in range(20000):\n        assert candidate(i) == i + 1\n",
        "entry_point": "inc"}
SOLUTION = "def inc(x):\n    return x + 1\n"


async def seconds(data: dict, solution: str, sandbox: str, mode: str | None, repeat: int) -> tuple[float, bool]:
    kwargs = {} if mode is None else {"grading": mode}
    await verify(data, solution, sandbox=sandbox, image="python", timeout=600, **kwargs)
    times, passed = [], True
    for _ in range(repeat):
        start = time.perf_counter()
        report = await verify(data, solution, sandbox=sandbox, image="python", timeout=600, **kwargs)
        times.append(time.perf_counter() - start)
        passed = passed and report.all_passed
    return statistics.median(times), passed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--repeat", type=int, default=3, help="gradings of the 20,000-call task, after a warm one")
    parser.add_argument("--humaneval", type=int, default=20, help="HumanEval tasks graded one after another")
    parser.add_argument("--modes", default="isolated,inprocess")
    parser.add_argument("--quick", action="store_true", help="smoke test: one grading each, 3 HumanEval tasks")
    parser.add_argument("--out", type=Path, help="results file (default results/code_grading_cost_SANDBOX.json)")
    args = parser.parse_args()
    if args.quick:
        args.repeat, args.humaneval = 1, 3
    has_modes = "grading" in inspect.signature(verify).parameters
    modes = args.modes.split(",") if has_modes else [None]
    tasks = load_tasks()[: args.humaneval]
    out = {}
    for mode in modes:
        many, ok = await seconds(MANY, SOLUTION, args.sandbox, mode, args.repeat)
        start = time.perf_counter()
        he_ok = 0
        for task in tasks:
            kwargs = {} if mode is None else {"grading": mode}
            graded = await verify(task.data, task.data["prompt"] + task.data["canonical_solution"],
                                  sandbox=args.sandbox, image="python", timeout=60, **kwargs)
            he_ok += graded.all_passed
        he = (time.perf_counter() - start) / len(tasks)
        out[mode or "isolated (no modes)"] = {"20000_calls_s": round(many, 3), "20000_calls_passed": ok,
                                              "humaneval_s_per_task": round(he, 3),
                                              "humaneval_passed": f"{he_ok}/{len(tasks)}"}
    report: dict = {"info": run_info(), "args": run_args(args), "sandbox": args.sandbox, "repeat": args.repeat,
                    "modes": out}
    try:
        from agentgym.envs.code.dryrun import decide
    except ImportError:
        decide = None
    if decide is not None:
        start = time.perf_counter()
        kept = [(await decide(t.data, "isolated", sandbox=args.sandbox, image="python", timeout=60)).grading
                for t in tasks]
        report["dry_run"] = {"humaneval_s_per_task": round((time.perf_counter() - start) / len(tasks), 3),
                             "kept_isolated": f"{kept.count('isolated')}/{len(tasks)}"}
    print(json.dumps(report["modes"], indent=1))
    save_results(report, args.out or results_path(f"code_grading_cost_{args.sandbox}"))


if __name__ == "__main__":
    asyncio.run(main())
