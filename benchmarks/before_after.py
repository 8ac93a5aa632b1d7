"""A change's cost, side by side: the sandbox layer's benchmarks run under two checkouts, rounds interleaved.

A redesign of the sandbox layer (such as one runtime, or the supervisor as a package) must make no
benchmark slower beyond its spread. Each checkout runs *its own* copy of each benchmark script (so an
older checkout needs none of the newer API) with ``PYTHONPATH`` set to it, and in every round the two
run back to back, which goes first alternating; ratios NEW/OLD are taken within the round, so a load
that drifts over the run moves both arms. What is compared, per benchmark, is a few figures of its
results file: whole code-env episodes (``humaneval_reference.py``, CPU per episode and episodes per
second), code gradings (``code_grading_cost.py``, isolated: a 20,000-call task and HumanEval tasks),
wipes (``wipe_cost.py``), acquires from a warm pool (``pool_acquire.py``), GUI env steps
(``gui_browser.py``) and SWE resets (``swe_env.py``). A checkout
older than a script runs the newer checkout's copy of it (such a script says how it adapts).

    python benchmarks/before_after.py --versions ../before,. --repeat 2
    python benchmarks/before_after.py --versions ../before,. --only wipe --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from results_file import run_args, run_info, run_options, save_results
from stats import fmt, spread

Figures = Callable[[dict[str, Any]], dict[str, float]]


@dataclass(frozen=True)
class Bench:
    """One benchmark script, the options of its run here, and the figures read from its results file."""

    script: str
    args: tuple[str, ...]
    figures: Figures
    lower_is_better: tuple[str, ...]  # the figures that are costs; the others are rates
    newest_script: bool = False  # both checkouts run the newer copy (its API is the same in both)


def _humaneval(result: dict[str, Any]) -> dict[str, float]:
    out = {}
    for row in result["rows"]:
        run = row["runs"][0]
        out[f"{row['run']} CPU-ms/episode"] = float(run["cpu_ms_per_episode"])
        out[f"{row['run']} episodes/s"] = float(run["episodes_per_s"])
    return out


def _grading(result: dict[str, Any]) -> dict[str, float]:
    found = result["modes"].get("isolated") or result["modes"]["isolated (no modes)"]
    return {"isolated 20,000-call task s": float(found["20000_calls_s"]),
            "isolated HumanEval s/task": float(found["humaneval_s_per_task"])}


def _wipe(result: dict[str, Any]) -> dict[str, float]:
    return {f"{level['backend']} x{level['sessions']} {name}": float(level["summary"][name]["median"])
            for level in result["levels"] for name in ("cpu_ms_per_wipe", "close_to_answer_p50_ms")}


def _gui(result: dict[str, Any]) -> dict[str, float]:
    return {f"{backend} {name}": float(data["summary"][name]["median"])
            for backend, data in result["backends"].items() for name in ("env_step_ms", "env_reset_ms")}


def _pool(result: dict[str, Any]) -> dict[str, float]:
    return {f"{backend} {name}": float(row[name]) for backend, row in result.items()
            for name in ("warm_p50_ms", "cold_p50_ms")}


def _swe(result: dict[str, Any]) -> dict[str, float]:
    return {name: float(result["summary"][name]["median"]) for name in ("reset_warm_ms", "give_back_ms", "verify_s")}


BENCHES: dict[str, Bench] = {
    "code episodes": Bench("humaneval_reference.py", ("--kinds", "docker,local", "--repeat", "1", "--limit", "40"),
                           _humaneval, ("CPU-ms/episode",)),
    "code grading": Bench("code_grading_cost.py", ("--sandbox", "local", "--repeat", "3", "--modes", "isolated"),
                          _grading, (" s",)),
    "wipe": Bench("wipe_cost.py", ("--repeat", "1", "--seconds", "3"), _wipe, ("cpu_ms_per_wipe", "p50_ms")),
    "gui step": Bench("gui_browser.py", ("--samples", "20", "--repeats", "1", "--starts", "1"), _gui, ("_ms",)),
    "pool acquire": Bench("pool_acquire.py", ("--samples", "30"), _pool, ("_ms",), newest_script=True),
    "swe reset": Bench("swe_env.py", ("--samples", "4", "--runs", "1"), _swe, ("_ms", "_s")),
}


def run_once(bench: Bench, checkout: Path, newer: Path, scratch: Path, tag: str) -> dict[str, float]:
    """``bench`` as ``checkout`` has it (else as ``newer`` has it), with ``checkout`` on ``PYTHONPATH``; its figures."""
    out = scratch / f"{tag}.json"
    script = checkout / "benchmarks" / bench.script
    if bench.newest_script or not script.exists():
        script = newer / "benchmarks" / bench.script
    done = subprocess.run([sys.executable, str(script), *bench.args, "--out", str(out)],
                          env={**os.environ, "PYTHONPATH": str(checkout)}, cwd=checkout,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{bench.script} under {checkout.name} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return bench.figures(json.loads(out.read_text()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", required=True, help="OLD,NEW: two agentgym checkouts")
    parser.add_argument("--only", default=",".join(BENCHES), help=f"comma-separated of: {', '.join(BENCHES)}")
    run_options(parser, "before_after", repeat=2, quick="one round of the wipe benchmark only",
                repeat_help="rounds: in each, both checkouts run every benchmark, which goes first alternating")
    args = parser.parse_args()
    versions = [Path(v).resolve() for v in args.versions.split(",")]
    if len(versions) != 2:
        raise SystemExit("--versions takes two checkouts: OLD,NEW")
    names = ["wipe"] if args.quick else args.only.split(",")
    unknown = set(names) - set(BENCHES)
    if unknown:
        raise SystemExit(f"unknown benchmarks {sorted(unknown)}; known: {', '.join(BENCHES)}")
    rounds = 1 if args.quick else args.repeat
    info = run_info()
    figures: dict[str, dict[str, list[dict[str, float]]]] = {n: {"old": [], "new": []} for n in names}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(rounds):
            for name in names:
                order = [("old", versions[0]), ("new", versions[1])]
                for arm, checkout in order if round_ % 2 == 0 else order[::-1]:
                    print(f"round {round_ + 1}/{rounds}: {name} under {arm} ({checkout.name})", flush=True)
                    tag = f"{round_}-{name}-{arm}"
                    figures[name][arm].append(run_once(BENCHES[name], checkout, versions[1], Path(scratch), tag))
    rows = []
    print(f"\nNEW ({versions[1].name}) over OLD ({versions[0].name}), median (min–max) of {rounds} round(s)")
    for name in names:
        bench, old, new = BENCHES[name], figures[name]["old"], figures[name]["new"]
        for figure in old[0]:
            ratios = [n[figure] / o[figure] for o, n in zip(old, new, strict=True) if o[figure]]
            cost = any(mark in figure for mark in bench.lower_is_better)
            before, after = spread([o[figure] for o in old]), spread([n[figure] for n in new])
            ratio = spread(ratios) if ratios else None
            rows.append({"benchmark": name, "figure": figure, "kind": "cost" if cost else "rate",
                         "old": before, "new": after, "new_over_old": ratio})
            shown = fmt(ratio, "{:.2f}x") if ratio else "-"
            print(f"  {name:<14} {figure:<44} old {before['median']:>10.2f}  new {after['median']:>10.2f}  "
                  f"ratio {shown} ({'lower' if cost else 'higher'} is better)")
    save_results({"info": info, "args": run_args(args), "versions": [v.name for v in versions], "rows": rows},
                 args.out)


if __name__ == "__main__":
    main()
