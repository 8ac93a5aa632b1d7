"""``agentgym export code|swe --to harbor DIR``: the code or SWE env's tasks written as Harbor task folders."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from agentgym.errors import DataError

EXPORTABLE = ("code", "swe")
"""Envs whose tasks ``--to harbor`` writes."""


def export_tasks(args: argparse.Namespace) -> int:
    """``agentgym export ENV --to harbor DEST``: ENV's tasks (``--tasks``, else its own; ``--limit``) as folders."""
    if args.source not in EXPORTABLE:
        raise DataError(f"--to harbor exports an env's tasks: expected one of {', '.join(EXPORTABLE)}, "
                        f"got {args.source!r}")
    if args.source == "swe" and not args.tasks:
        raise DataError("agentgym export swe --to harbor needs --tasks: a SWE-bench-format JSONL file or dataset")
    dest = Path(args.to[1])
    if dest.exists():
        if not args.force:
            raise DataError(f"{dest} exists; pass --force to replace it")
        shutil.rmtree(dest)
    if args.source == "code":
        from agentgym.envs.code.tasks import load_tasks as load_code
        from agentgym.envs.terminal.export import export_code_tasks

        written = export_code_tasks(load_code(args.tasks)[: args.limit], dest)
    else:
        from agentgym.envs.swe.tasks import load_tasks as load_swe
        from agentgym.envs.terminal.export_swe import export_swe_tasks

        written = export_swe_tasks(load_swe(args.tasks)[: args.limit], dest)
    print(f"{dest}: {len(written)} Harbor task folders ({args.source})")
    return 0
