"""The GUI env's scripted policies per MiniWoB task: the DOM-reading reference against random clicks.

Plays every task the reference has a solver for (``names="reference"``) with each policy, ``--samples``
seeds per task, through ``agentgym.evaluation.evaluate`` on the browser sandbox (``--sandbox docker``
by default: Chromium in a container with no network), and reports per task the success rate (the
page's raw reward is 1), its 95% Wilson interval, and the mean turns. The same numbers come from

    agentgym eval gui --model reference --env-arg names=reference --samples 20 --sandbox docker
    agentgym eval gui --model random    --env-arg names=reference --samples 20 --sandbox docker

    python benchmarks/gui_reference.py                       # 20 seeds a task
    python benchmarks/gui_reference.py --samples 5 --names click-button,enter-text

Prints a Markdown table (pasted into docs/gui.md) and writes ``benchmarks/results/gui_reference.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from results_file import results_path, run_info, save_results

from agentgym.evaluation import evaluate
from agentgym.evaluation.metrics import wilson_interval
from agentgym.sandboxes import SandboxRuntime

RESULTS = results_path("gui_reference")
POLICIES = ("reference", "random")


async def run(names: str, samples: int, sandbox: str, concurrency: int) -> dict[str, Any]:
    from agentgym.envs.gui import GUIEnv

    per_task: dict[str, dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    async with SandboxRuntime():  # one for both policies: the second finds the browsers warm
        for name in POLICIES:
            policy = GUIEnv.scripted_policies()[name]()
            started = time.monotonic()
            _, trajectories = await evaluate("gui", policy, samples=samples, concurrency=concurrency,
                                             env_kwargs={"names": names, "sandbox_backend": sandbox}, progress=True)
            seconds[name] = round(time.monotonic() - started, 1)
            for t in trajectories:
                row = per_task.setdefault(t.task_id, {}).setdefault(name, {"episodes": 0, "successes": 0, "turns": 0,
                                                                           "errors": []})
                row["episodes"] += 1
                row["successes"] += t.success
                row["turns"] += len(t.turns)
                if t.outcome == "error":
                    row["errors"].append(t.failure)
    for rows in per_task.values():
        for row in rows.values():
            low, high = wilson_interval(row["successes"], row["episodes"])
            row.update(success=row["successes"] / row["episodes"], ci95=[round(low, 3), round(high, 3)],
                       mean_turns=round(row.pop("turns") / row["episodes"], 2))
    return {"samples": samples, "sandbox": sandbox, "seconds": seconds, "tasks": dict(sorted(per_task.items()))}


def table(results: dict[str, Any]) -> str:
    lines = ["| task | reference success | 95% CI | turns | random success | 95% CI |",
             "| --- | --- | --- | --- | --- | --- |"]
    for task, rows in results["tasks"].items():
        ref, rnd = rows["reference"], rows["random"]
        lines.append(f"| {task} | {ref['successes']}/{ref['episodes']} = {ref['success']:.2f} | "
                     f"{ref['ci95'][0]:.2f}–{ref['ci95'][1]:.2f} | {ref['mean_turns']:.1f} | "
                     f"{rnd['successes']}/{rnd['episodes']} = {rnd['success']:.2f} | "
                     f"{rnd['ci95'][0]:.2f}–{rnd['ci95'][1]:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--names", default="reference", help="tasks: reference, all, or comma-separated names")
    parser.add_argument("--samples", type=int, default=20, help="seeds per task and policy")
    parser.add_argument("--sandbox", default="docker", choices=["docker", "local", "auto"])
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    info = run_info()
    results = asyncio.run(run(args.names, args.samples, args.sandbox, args.concurrency))
    print(table(results))
    solved = [t for t, rows in results["tasks"].items() if rows["reference"]["success"] >= 0.95]
    print(f"reference >= 0.95 on {len(solved)} of {len(results['tasks'])} tasks")
    save_results({"run": info, **results}, RESULTS)


if __name__ == "__main__":
    main()
