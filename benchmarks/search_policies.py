"""Scripted policies on the search env: the reference against the fixed-answer baseline, per split.

Runs ``agentgym.evaluation.evaluate`` with each scripted policy over every question of each split
(or a seeded sample of ``--per-split`` questions) on the local BM25 backend, and reports mean exact
match and F1. The reference scores when the top hit holds a gold answer (it opens only that hit
and answers only with a gold span it finds there); the baseline shows what a constant answer gets.
The same numbers come from ``agentgym eval search --model reference``.

    python benchmarks/search_policies.py                  # all 48,201 questions, a few minutes
    python benchmarks/search_policies.py --per-split 500

Prints a table and writes ``benchmarks/results/search_policies.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from pathlib import Path
from typing import Any

from results_file import results_path, save_results

from agentgym.envs.search import SearchEnv
from agentgym.envs.search.data import SPLITS
from agentgym.envs.search.env import corpus_tasks
from agentgym.evaluation import evaluate

RESULTS = results_path("search_policies")


async def run(per_split: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for split in SPLITS:
        tasks = list(corpus_tasks(split))
        if per_split and per_split < len(tasks):
            tasks = random.Random(0).sample(tasks, per_split)
        for name, factory in SearchEnv.scripted_policies().items():
            started = time.monotonic()
            summary, _ = await evaluate("search", factory(), tasks=tasks, concurrency=8, progress=False)
            components = summary.reward_components
            rows.append({
                "split": split, "policy": name, "episodes": summary.episodes,
                "em": components.get("em", 0.0), "f1": components.get("f1", 0.0),
                "episodes_per_s": round(summary.episodes / (time.monotonic() - started), 1),
            })
            report(rows[-1])
    for name in SearchEnv.scripted_policies():
        mine = [r for r in rows if r["policy"] == name]
        total = sum(r["episodes"] for r in mine)
        mean = {m: sum(r[m] * r["episodes"] for r in mine) / total for m in ("em", "f1")}
        rows.append({"split": "all", "policy": name, "episodes": total, **mean})
        report(rows[-1])
    return rows


def report(row: dict[str, Any]) -> None:
    rate = f"  ({row['episodes_per_s']} episodes/s)" if "episodes_per_s" in row else ""
    print(f"{row['split']:>9} {row['policy']:>10} {row['episodes']:>6} episodes"
          f"  em {row['em']:.4f}  f1 {row['f1']:.4f}{rate}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-split", type=int, default=0, help="questions sampled per split (0 = all)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = asyncio.run(run(args.per_split))
    save_results({"per_split": args.per_split, "rows": rows}, args.out)


if __name__ == "__main__":
    main()
