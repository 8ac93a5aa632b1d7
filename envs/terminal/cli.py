"""``agentgym export code --to harbor DIR``: the code env's tasks written as Harbor task folders."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from agentgym.errors import DataError

EXPORTABLE = ("code",)
"""Envs whose tasks ``--to harbor`` writes."""


def export_tasks(args: argparse.Namespace) -> int:
    """``agentgym export ENV --to harbor DEST``: ENV's tasks (``--tasks``, else its own; ``--limit``) as folders."""
    from agentgym.envs.code.tasks import load_tasks
    from agentgym.envs.terminal.export import export_code_tasks

    if args.source not in EXPORTABLE:
        raise DataError(f"--to harbor exports an env's tasks: expected one of {', '.join(EXPORTABLE)}, "
                        f"got {args.source!r}")
    dest = Path(args.to[1])
    if dest.exists():
        if not args.force:
            raise DataError(f"{dest} exists; pass --force to replace it")
        shutil.rmtree(dest)
    tasks = load_tasks(args.tasks)[: args.limit]
    written = export_code_tasks(tasks, dest)
    print(f"{dest}: {len(written)} Harbor task folders ({args.source})")
    return 0
