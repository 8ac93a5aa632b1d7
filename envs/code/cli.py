"""``agentgym tasks check FILE``: how each code task of a file will be graded, or why it is refused."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

CHECK_EXIT_STATUS = """\
exit status:
  0  every task will be graded (a line per task says how)
  1  a task is refused (its line says why and the statement at fault)
  2  the file cannot be read, or a bad argument
"""


def add_commands(tasks_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``check`` on the subparsers of ``agentgym tasks``."""
    check = tasks_commands.add_parser(
        "check", help="per task of a HumanEval-format file: how it will be graded, or why it is refused",
        description="Reads each row, checks its test, and dry-runs its canonical solution, a broken one and the "
                    "canonical one probed for process state and aliasing, isolated and by plain Python (in one "
                    "interpreter): a task whose grades differ is refused with the statement at fault, or graded "
                    "in-process under --grading auto.",
        epilog=CHECK_EXIT_STATUS, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    check.add_argument("file", help="a HumanEval-format JSONL file (task_id, prompt, test, entry_point, ...)")
    check.add_argument("--grading", choices=("isolated", "inprocess", "auto"), default="isolated",
                       help="the task set's mode, for rows that do not name theirs (default isolated)")
    check.add_argument("--sandbox", choices=("docker", "local"), default="local")
    check.add_argument("--timeout", type=float, default=20.0, help="seconds per grading")
    check.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    return asyncio.run(_check_file(args))


async def _check_file(args: argparse.Namespace) -> int:
    from agentgym.envs.code.dryrun import decide
    from agentgym.envs.code.tasks import _task_from_row
    from agentgym.errors import DataError
    from agentgym.sandboxes import SandboxRuntime
    from agentgym.types import iter_json_lines

    rows: list[tuple[int, Any]] = []
    try:
        rows = list(iter_json_lines(args.file))
    except (OSError, DataError) as e:
        print(f"agentgym: error: {e}", file=sys.stderr)
        return 2
    refused = 0
    async with SandboxRuntime() as runtime:
        for lineno, row in rows:
            if row is None:
                continue
            name = row.get("task_id", f"line {lineno}") if isinstance(row, dict) else f"line {lineno}"
            try:
                if not isinstance(row, dict):
                    raise ValueError("not a JSON object")
                task = _task_from_row(row, args.grading)
            except ValueError as e:
                refused += 1
                print(f"{name}: refused: {e}")
                continue
            grading = task.data.get("grading") or args.grading
            try:
                decision = await decide(task.data, grading, sandbox=args.sandbox, image="python",
                                        timeout=args.timeout, runtime=runtime)
            except DataError as e:
                decision_line = f"refused: {e}"
                refused += 1
            else:
                if decision.grading is None:
                    refused += 1
                    decision_line = f"refused: {decision.reason}"
                else:
                    decision_line = f"graded {decision.grading}: {decision.reason}"
            print(f"{json.dumps(name) if not isinstance(name, str) else name}: {decision_line}")
    return 1 if refused else 0
