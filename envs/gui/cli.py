"""``agentgym gui dataset`` (action-prediction records from the reference policy's GUI episodes) and
``agentgym gui coverage`` (the reference's mean reward per task, and a wrong play's)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``gui`` and its ``dataset`` subcommand; each sets ``func(args) -> exit code``."""
    gui = subparsers.add_parser("gui", help="GUI environment tools")
    commands = gui.add_subparsers(dest="gui_command", required=True)
    dataset = commands.add_parser(
        "dataset", help="record (screenshot, instruction, DOM, gold action with its box) from reference episodes")
    dataset.add_argument("--out", required=True, help="the records' JSONL file (its episodes go beside it)")
    add_episode_options(dataset, samples="episodes (seeds) per task")
    dataset.set_defaults(func=run_dataset)
    coverage = commands.add_parser(
        "coverage", help="the reference's mean reward per task, and a wrong play's (agentgym.envs.gui.coverage)")
    add_episode_options(coverage, samples="episodes (seeds) per task and policy")
    coverage.add_argument("--out", help="also write the rewards per task and seed to this JSON file")
    coverage.set_defaults(func=run_coverage)


def add_episode_options(command: argparse.ArgumentParser, *, samples: str) -> None:
    """The options every ``agentgym gui`` command that plays episodes takes: which tasks, how many, where."""
    command.add_argument("--names", default="reference",
                         help="tasks: 'reference' (those the reference solves), 'all', or comma-separated names")
    command.add_argument("--samples", type=int, default=5, help=samples)
    command.add_argument("--seed", type=int, default=0, help="first seed")
    command.add_argument("--concurrency", type=int, default=2, help="episodes in flight (one browser each)")
    command.add_argument("--sandbox", default="auto", choices=["auto", "docker", "local"],
                         help="where the browser runs (local: the host's Chromium, no network isolation)")


def run_dataset(args: argparse.Namespace) -> int:
    from agentgym.envs.gui.dataset import write_records
    from agentgym.envs.gui.policies import ReferencePolicy
    from agentgym.evaluation import evaluate
    from agentgym.sandboxes import SandboxRuntime

    out = Path(args.out)
    if args.samples < 1 or args.concurrency < 1:
        raise SystemExit("agentgym gui dataset: --samples and --concurrency must be at least 1")
    episodes = out.with_name(out.stem + ".episodes.jsonl")

    async def run() -> int:
        async with SandboxRuntime():
            summary, trajectories = await evaluate(
                "agentgym/gui-v0", ReferencePolicy(), samples=args.samples, seed=args.seed,
                concurrency=args.concurrency, out=episodes, overwrite=True,
                env_kwargs={"names": args.names, "observation": "both", "sandbox_backend": args.sandbox})
        n = write_records(out, trajectories)
        print(summary.table())
        print(f"records:  {n} from {summary.successes} successful episodes -> {out}\nepisodes: {episodes}")
        return 0 if n else 1

    return asyncio.run(run())


def run_coverage(args: argparse.Namespace) -> int:
    """Print the coverage table; exit 1 when a task listed is not covered."""
    from agentgym.envs.gui.coverage import TaskCoverage, measure, table
    from agentgym.sandboxes import SandboxRuntime

    if args.samples < 1 or args.concurrency < 1:
        raise SystemExit("agentgym gui coverage: --samples and --concurrency must be at least 1")

    async def run() -> dict[str, TaskCoverage]:
        async with SandboxRuntime():
            return await measure(args.names, samples=args.samples, seed=args.seed, sandbox=args.sandbox,
                                 concurrency=args.concurrency)

    tasks = asyncio.run(run())
    print(table(tasks))
    if args.out:
        Path(args.out).write_text(json.dumps({
            "names": args.names, "samples": args.samples, "seed": args.seed, "sandbox": args.sandbox,
            "tasks": {name: row.as_dict() for name, row in tasks.items()}}, indent=1) + "\n")
    return 0 if all(row.covered for row in tasks.values()) else 1
