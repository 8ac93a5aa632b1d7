"""SWE task synthesis rate: tasks per minute per package, from a built image to written rows.

For each package (pinned releases) it synthesizes ``--count`` tasks with ``--jobs`` mutant runs at
once, and reports tasks per minute over the whole synthesis (clean run, mutants, rows) and its
parts. The image build is timed apart (``build_s``): cold on a machine's first run, a tag check
after; ``--cold`` removes the package images first so the build is measured too.

    python benchmarks/swe_synthesis.py [--count 5] [--jobs 2] [--packages toolz cachetools more-itertools]

Writes benchmarks/results/swe_synthesis.json.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from results_file import results_path, run_info, save_results

from agentgym.envs.swe.synthesize import Stats, synthesize

RESULTS = results_path("swe_synthesis")
RELEASES = {"toolz": "1.2.0", "cachetools": "8.0.1", "more-itertools": "11.2.1"}


def remove_image(package: str) -> None:
    """Remove the package's sdist images (not the shared base), so the next build is cold."""
    from agentgym.envs.swe.sdist_image import REPOSITORY
    from agentgym.sandboxes import engine

    api = engine.client()
    for image in api.images.list(name=f"{REPOSITORY}/{package}"):
        for tag in image.tags:
            api.images.remove(tag, noprune=False)


async def measure(package: str, count: int, jobs: int, seed: int) -> dict[str, Any]:
    stats = Stats()
    started = time.monotonic()
    rows = await synthesize(package, version=RELEASES[package], count=count, seed=seed, jobs=jobs, stats=stats)
    total = time.monotonic() - started
    synthesis = total - stats.build_seconds
    return {
        "package": package,
        "version": RELEASES[package],
        "tasks": len(rows),
        "mutants_tried": stats.tried,
        "rejected": stats.rejected,
        "build_s": round(stats.build_seconds, 1),
        "baseline_s": round(stats.baseline_seconds, 1),
        "mutants_s": round(stats.mutant_seconds, 1),
        "seconds_per_mutant": round(stats.mutant_seconds / max(stats.tried, 1), 1),
        "tasks_per_minute": round(len(rows) / (synthesis / 60), 2),
        "tasks_per_minute_with_build": round(len(rows) / (total / 60), 2),
        "fail_to_pass_per_task": [len(r["FAIL_TO_PASS"]) for r in rows],
        "operators": [r["mutation"]["operator"] for r in rows],
    }


async def main(packages: list[str], count: int, jobs: int, seed: int, cold: bool) -> list[dict[str, Any]]:
    out = []
    for package in packages:
        if cold:
            remove_image(package)
        result = await measure(package, count, jobs, seed)
        print(f"{package}: {result['tasks']} tasks, {result['tasks_per_minute']} per minute "
              f"({result['seconds_per_mutant']} s per mutant, build {result['build_s']} s)")
        out.append(result)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=list(RELEASES), choices=list(RELEASES))
    parser.add_argument("--count", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cold", action="store_true", help="remove the package images first: time their build")
    parser.add_argument("--quick", action="store_true", help="one toolz task (a smoke run)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if args.quick:
        args.packages, args.count = ["toolz"], 1
    info = {**run_info(), "count": args.count, "jobs": args.jobs, "seed": args.seed, "cold": args.cold}
    results = asyncio.run(main(args.packages, args.count, args.jobs, args.seed, args.cold))
    save_results({"info": info, "packages": results}, Path(args.out))
