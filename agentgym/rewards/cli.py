"""``agentgym judge probe``: measure an LLM judge's false-positive rate on known hacks.

The exit status is the judge's verdict: 0 when it accepts at least ``--min-tpr`` of the correct answers
and (with ``--max-fpr``) no more than that share of hacks; 1 otherwise; 2 when nothing could be graded,
or the judge's credentials are missing or refused (checked before the first grading, as ``eval`` does).
"""

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
    probe.add_argument("--threshold", type=rate, default=0.5, help="score that counts as accepted")
    probe.add_argument("--json", action="store_true", help="print the report as JSON")
    probe.add_argument("--max-fpr", type=rate, default=None,
                       help="exit with status 1 when the false-positive rate exceeds this")
    probe.add_argument("--min-tpr", type=rate, default=0.9,
                       help="exit with status 1 when the judge accepts fewer of the correct answers (default 0.9)")
    probe.set_defaults(func=run_probe)


def rate(text: str) -> float:
    """A share from 0 to 1, for ``--max-fpr`` and ``--min-tpr``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def run_probe(args: argparse.Namespace) -> int:
    from agentgym.rewards.judge import LLMJudge
    from agentgym.rewards.probes import probe_judge

    judge = LLMJudge(args.model, api_base=args.api_base, api_key=args.api_key)
    judge.check()  # a missing or refused key: one line and exit status 2, before any grading
    report = asyncio.run(probe_judge(judge, threshold=args.threshold))
    failures = report.failures(max_fpr=args.max_fpr, min_tpr=args.min_tpr)
    if args.json:
        print(json.dumps({**asdict(report), "max_fpr": args.max_fpr, "min_tpr": args.min_tpr,
                          "failures": failures}, indent=2))
    else:
        print(report.table())
        print("\n".join(f"FAIL: {reason}" for reason in failures) or "PASS")
    if report.errors >= report.n + report.controls:
        return 2  # nothing was graded: the judge is unreachable or never answers in the verdict format
    return 1 if failures else 0
