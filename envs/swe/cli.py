"""``agentgym swe synthesize``: SWE tasks from a package on PyPI, as SWE-bench JSONL; ``agentgym swe rows``:
a row from a repository's own fix, its test lists computed; ``agentgym swe wheels``: the wheels a task's
Dockerfile installs its test requirements from, offline."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path


def add_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``swe`` and its subcommands on the ``agentgym`` command's subparsers."""
    from agentgym.envs.swe.mutate import OPERATORS
    from agentgym.envs.swe.testrun import DEFAULT_TEST_CMD

    swe = subparsers.add_parser("swe", help="SWE tasks: synthesize them from real packages")
    commands = swe.add_subparsers(dest="swe_command", required=True)
    syn = commands.add_parser(
        "synthesize", help="inject bugs into a PyPI package, keep those its tests catch, write SWE-bench rows",
        description="Builds the package's sdist image (no registry), runs its tests, mutates its modules and "
                    "keeps mutants that fail some tests while the rest pass. Needs Docker.",
        epilog=SYNTHESIZE_EXIT_STATUS, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    syn.add_argument("--package", required=True, help="a PyPI name whose sdist ships its tests (toolz)")
    syn.add_argument("--version", help="the release (default: the newest)")
    syn.add_argument("--count", type=_positive, default=20, help="tasks wanted")
    syn.add_argument("--seed", type=int, default=0, help="orders the mutants: same seed, same tasks")
    syn.add_argument("--out", required=True, help="the JSONL file to write (replaced)")
    syn.add_argument("--jobs", type=_positive, default=2, help="mutant test runs at once, one CPU each")
    syn.add_argument("--max-tries", type=_positive, help="mutants tried at most (default 20 x count)")
    syn.add_argument("--operators", type=lambda s: tuple(s.split(",")), default=OPERATORS,
                     help=f"comma-separated mutation operators (default all: {','.join(OPERATORS)})")
    syn.add_argument("--model", help="a litellm model string that writes the problem statements (default: a template)")
    syn.add_argument("--api-base", help="the model's endpoint (an OpenAI-compatible server)")
    syn.add_argument("--test-requirement", action="append", default=[], metavar="REQ", dest="test_requirements",
                     help="a requirement the package's tests need (hypothesis, a pytest plugin), installed in its "
                          "image; repeatable. The sdist's own test, tests and testing extras are installed anyway")
    syn.add_argument("--quiet", action="store_true", help="no line per mutant")
    syn.set_defaults(func=_synthesize)
    rows = commands.add_parser(
        "rows", help="a SWE-bench row from a repository's own fix: FAIL_TO_PASS / PASS_TO_PASS computed",
        description="Runs the test files the test change touches at the base (with the test change) and "
                    "with the fix, in a fresh container of the image, and appends the row to --out. Needs Docker.",
    )
    where = rows.add_mutually_exclusive_group(required=True)
    where.add_argument("--image", help="an image with the repository at /testbed")
    where.add_argument("--dockerfile", help="a Dockerfile (a path) that builds such an image")
    rows.add_argument("--base", required=True, help="the base commit (the bug), in the image's repository")
    fix = rows.add_mutually_exclusive_group(required=True)
    fix.add_argument("--fix", help="a later commit of the image's repository: its diff from --base, split "
                                   "into the fix and the test change")
    fix.add_argument("--patch", help="the fix, a diff file (with --test-patch)")
    rows.add_argument("--test-patch", help="the test change, a diff file (with --patch)")
    rows.add_argument("--instance-id", required=True)
    rows.add_argument("--repo", required=True, help="owner/name")
    rows.add_argument("--problem-statement", required=True, help="the issue's text, or @FILE")
    rows.add_argument("--test-cmd", help=f"a pytest command run in /testbed (default: {DEFAULT_TEST_CMD})")
    rows.add_argument("--out", required=True, help="the JSONL file the row is appended to")
    rows.set_defaults(func=_rows)
    wheels = commands.add_parser(
        "wheels", help="download the wheels a task's Dockerfile installs its test requirements from, pip's included",
        description="Downloads wheels for the requirements (and pip's own) from pip's configured index into --dest, "
                    "inside the Dockerfile's build context, and prints the Dockerfile steps that install them "
                    "with no index and no network: the SWE base image has no pip of its own.",
    )
    wheels.add_argument("requirements", nargs="+", metavar="REQ", help="pytest==9.0.3, hypothesis, ...")
    wheels.add_argument("--dest", required=True, help="a folder inside the Dockerfile's build context")
    wheels.set_defaults(func=_wheels)


NO_SUITE = 3
"""Exit status when the package could not be downloaded or built, or its suite does not run (2 is a bad option)."""
SYNTHESIZE_EXIT_STATUS = """\
exit status:
  0    every task asked for was written
  1    fewer tasks than --count qualified (those that did are written)
  2    a bad option: nothing was downloaded or built
  3    the package could not be downloaded or its image built, or its test suite does not run there
"""


def _rows(args: argparse.Namespace) -> int:
    import json

    from agentgym.envs.swe.rows import RowError, fix_diff, make_row, split_fix
    from agentgym.envs.swe.tasks import runs_pytest
    from agentgym.errors import AgentgymError, EnvError, SandboxError

    if (args.patch is None) != (args.test_patch is None):
        raise AgentgymError("--patch and --test-patch go together (or give --fix)")
    if args.test_cmd is not None and not runs_pytest(args.test_cmd):
        raise AgentgymError(f"--test-cmd {args.test_cmd!r} does not run pytest, which the verifier's guarded run "
                            "needs (pytest runs unittest tests too: python3 -m pytest -rA ...)")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise AgentgymError(f"--out {out}: no directory {out.parent}")
    statement = args.problem_statement
    row: dict[str, object] = {
        "instance_id": args.instance_id, "repo": args.repo, "base_commit": args.base,
        "problem_statement": _text(statement[1:]) if statement.startswith("@") else statement,
        **({"image": args.image} if args.image else {"dockerfile": str(Path(args.dockerfile).resolve())}),
        **({"test_cmd": args.test_cmd} if args.test_cmd else {}),
    }
    try:
        if args.fix:
            row["patch"], row["test_patch"] = split_fix(asyncio.run(fix_diff(row, args.fix)))
        else:
            row["patch"], row["test_patch"] = _text(args.patch), _text(args.test_patch)
        made = asyncio.run(make_row(row))
    except (RowError, EnvError, SandboxError, ValueError) as e:
        print(f"agentgym: error: {e}", file=sys.stderr)
        return 1
    with out.open("a", encoding="utf-8") as f:
        f.write(json.dumps(made) + "\n")
    print(f"{made['instance_id']}: {len(made['FAIL_TO_PASS'])} FAIL_TO_PASS, {len(made['PASS_TO_PASS'])} "
          f"PASS_TO_PASS -> {out}")
    return 0


def _wheels(args: argparse.Namespace) -> int:
    from agentgym.envs.swe.wheelhouse import dockerfile_lines, download
    from agentgym.errors import SandboxError

    dest = Path(args.dest)
    try:
        got = download(args.requirements, dest)
    except SandboxError as e:
        print(f"agentgym: error: {e}", file=sys.stderr)
        return 1
    print(f"{len(got)} wheels in {dest}. In the Dockerfile (paths relative to its build context):", file=sys.stderr)
    print(dockerfile_lines(args.dest, args.requirements), end="")
    return 0


def _text(path: str) -> str:
    from agentgym.errors import AgentgymError

    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AgentgymError(f"cannot read {path}: {e}") from None


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _synthesize(args: argparse.Namespace) -> int:
    from packaging.requirements import InvalidRequirement, Requirement

    from agentgym.envs.swe.mutate import OPERATORS
    from agentgym.envs.swe.synthesize import Stats, SynthesisError, synthesize, write_tasks
    from agentgym.errors import AgentgymError, SandboxError

    for requirement in args.test_requirements:
        try:
            Requirement(requirement)
        except InvalidRequirement as e:
            raise AgentgymError(f"--test-requirement {requirement!r}: {e}") from None
    unknown = set(args.operators) - set(OPERATORS)
    if unknown:
        raise AgentgymError(f"unknown operators {sorted(unknown)}; known: {', '.join(OPERATORS)}")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise AgentgymError(f"--out {out}: no directory {out.parent}")
    if args.model is not None:
        from agentgym.policies.litellm import LiteLLMPolicy

        LiteLLMPolicy(args.model, api_base=args.api_base).check()  # keys and provider before any build
    stats = Stats()
    started = time.monotonic()
    say = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        rows = asyncio.run(synthesize(
            args.package, version=args.version, count=args.count, seed=args.seed, jobs=args.jobs,
            max_tries=args.max_tries, operators=args.operators, model=args.model, api_base=args.api_base,
            test_requirements=args.test_requirements, stats=stats, progress=say,
        ))
    except (SandboxError, SynthesisError) as e:  # not a bad option: the package, its download or its suite
        print(f"agentgym: error: {e}", file=sys.stderr)
        return NO_SUITE
    write_tasks(rows, out)
    minutes = (time.monotonic() - started) / 60
    rejected = ", ".join(f"{n} {why}" for why, n in sorted(stats.rejected.items())) or "none"
    print(f"{len(rows)} tasks from {stats.tried} mutants in {minutes:.1f} min (rejected: {rejected}) -> {out}")
    return 0 if len(rows) == args.count else 1
