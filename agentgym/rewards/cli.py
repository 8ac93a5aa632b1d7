"""``agentgym judge probe``: measure an LLM judge's false-positive rate on known hacks."""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import asdict


def add_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``judge`` and its ``probe`` subcommand; each sets ``func(args) -> exit code``."""
    judge = subparsers.add_parser("judge", help="check LLM judges")
    commands = judge.add_subparsers(dest="judge_command", required=True)
    probe = commands.add_parser(
        "probe", help="report a judge's false-positive rate on known hacks (':', 'Thought process:', ...)"
    )
    probe.add_argument("--model", required=True, help="litellm name of the judge, e.g. openai/gpt-4o-mini")
    probe.add_argument("--api-base", default=None, help="OpenAI-compatible endpoint for the judge")
    probe.add_argument("--api-key", default=None, help="API key (default: provider env var)")
    probe.add_argument("--threshold", type=float, default=0.5, help="score that counts as accepted")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.add_argument("--max-fpr", type=float, default=None,
                       help="exit with status 1 when the false-positive rate exceeds this")
    probe.set_defaults(func=run_probe)


def run_probe(args: argparse.Namespace) -> int:
    from agentgym.rewards.judge import LLMJudge
    from agentgym.rewards.probes import probe_judge

    judge = LLMJudge(args.model, api_base=args.api_base, api_key=args.api_key)
    report = asyncio.run(probe_judge(judge, threshold=args.threshold))
    print(json.dumps(asdict(report), indent=2) if args.json else report.table())
    if report.n and report.errors >= report.n:
        return 2  # nothing was graded: the judge is unreachable or never answers in the verdict format
    if args.max_fpr is not None and report.false_positive_rate > args.max_fpr:
        return 1
    return 0
