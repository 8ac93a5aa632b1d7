"""The ``agentgym`` command: list environments, evaluate models, manage sandboxes."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from pathlib import Path

from agentgym.errors import AgentgymError


def _cmd_envs(args: argparse.Namespace) -> int:
    from agentgym.registry import env_class, registered

    for env_id in registered():
        try:
            cls = env_class(env_id)
        except AgentgymError as e:
            print(f"{env_id:<12} (cannot load: {e})")
            continue
        doc = (cls.__doc__ or "").strip().splitlines()
        tools = ", ".join(cls._tools)
        scripted = ", ".join(cls.scripted_policies())
        print(f"{env_id:<12} {doc[0] if doc else ''}")
        print(f"{'':<12} tools: {tools}; scripted policies: {scripted or 'none'}")
    return 0


def _default_out(env_id: str, model: str) -> Path:
    return Path("runs") / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', env_id)}__{re.sub(r'[^A-Za-z0-9_.-]+', '_', model)}.jsonl"


def _cmd_eval(args: argparse.Namespace) -> int:
    from agentgym.evaluation import evaluate
    from agentgym.policies import load_policy
    from agentgym.registry import env_class

    cls = env_class(args.env)
    options = {"api_base": args.api_base, "temperature": args.temperature, "max_tokens": args.max_tokens,
               "timeout": args.request_timeout, "concurrency": args.concurrency}
    policy = load_policy(args.model, cls, **{k: v for k, v in options.items() if v is not None})
    env_kwargs: dict[str, object] = {"sandbox": args.sandbox}
    if args.max_turns is not None:
        env_kwargs["max_turns"] = args.max_turns
    if args.tasks is not None:
        env_kwargs["tasks_path"] = args.tasks
    env_kwargs.update(dict(args.env_arg))
    out = Path(args.out) if args.out else _default_out(args.env, args.model)

    async def run() -> int:
        from agentgym.sandboxes import shutdown_pools

        try:
            summary, _ = await evaluate(
                args.env, policy, limit=args.limit, samples=args.samples, seed=args.seed,
                concurrency=args.concurrency, out=out, resume=args.resume, turn_timeout=args.turn_timeout,
                episode_timeout=args.episode_timeout, env_kwargs=env_kwargs,
            )
        finally:
            await shutdown_pools()
        print(summary.table())
        print(f"trajectories: {out}\nsummary:      {out.with_suffix('.summary.json')}")
        return 0

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished episodes are in {out}; rerun with --resume to continue", file=sys.stderr)
        return 130


def _cmd_data_fetch(args: argparse.Namespace) -> int:
    import importlib

    from agentgym.envs import DATA_FETCHERS

    if args.name not in DATA_FETCHERS:
        raise AgentgymError(f"no data set {args.name!r}; known: {', '.join(sorted(DATA_FETCHERS))}")
    module, _, attr = DATA_FETCHERS[args.name].partition(":")
    path = getattr(importlib.import_module(module), attr)(force=args.force)
    print(path)
    return 0


def _env_arg(text: str) -> tuple[str, object]:
    """``key=value`` with the value read as JSON when it parses (numbers, booleans), else as a string."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("envs", help="list registered environments").set_defaults(func=_cmd_envs)

    ev = sub.add_parser("eval", help="evaluate a model (or a scripted policy) on an environment")
    ev.add_argument("env", help="environment id, e.g. code")
    ev.add_argument("--model", required=True,
                    help="a litellm model string (openai/gpt-4o-mini, anthropic/...), or a scripted policy the "
                         "env ships (reference, baseline)")
    ev.add_argument("--limit", type=int, help="only the first N tasks")
    ev.add_argument("--samples", type=int, default=1, help="episodes per task (reports pass@k)")
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--concurrency", type=int, default=8, help="episodes (and model calls) in flight")
    ev.add_argument("--sandbox", default="auto", choices=["auto", "docker", "local"])
    ev.add_argument("--tasks", help="a JSONL file of tasks in the env's format")
    ev.add_argument("--max-turns", type=int)
    ev.add_argument("--env-arg", type=_env_arg, action="append", default=[], metavar="KEY=VALUE",
                    help="a keyword argument for the environment (repeatable), e.g. split=nyt")
    ev.add_argument("--out", help="trajectories JSONL (default runs/ENV__MODEL.jsonl)")
    ev.add_argument("--resume", action="store_true", help="keep finished episodes in --out, play the rest")
    ev.add_argument("--turn-timeout", type=float, default=600.0, help="seconds for one turn")
    ev.add_argument("--episode-timeout", type=float, default=3600.0, help="seconds for one episode")
    ev.add_argument("--api-base", help="endpoint for the model's provider (an OpenAI-compatible server)")
    ev.add_argument("--temperature", type=float)
    ev.add_argument("--max-tokens", type=int)
    ev.add_argument("--request-timeout", type=float, help="seconds to wait for one model response")
    ev.set_defaults(func=_cmd_eval)

    data = sub.add_parser("data", help="download and cache the data sets environments use")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    fetch = data_sub.add_parser("fetch", help="download, verify and cache a data set (e.g. search)")
    fetch.add_argument("name")
    fetch.add_argument("--force", action="store_true", help="download again even if cached")
    fetch.set_defaults(func=_cmd_data_fetch)

    from agentgym.mcp.cli import add_commands as add_mcp_commands
    from agentgym.rewards.cli import add_commands as add_judge_commands
    from agentgym.sandboxes.cli import add_commands as add_sandbox_commands
    from agentgym.view.cli import add_commands as add_view_commands

    add_sandbox_commands(sub)
    add_judge_commands(sub)
    add_view_commands(sub)
    add_mcp_commands(sub, _env_arg)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AgentgymError as e:
        print(f"agentgym: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
