"""``agentgym view`` (the HTML report) and ``agentgym export`` (datasets, parquet, SFT rows)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMATS = ("datasets", "parquet", "jsonl")

#: What the ``view`` extra installs: a command that finds one missing says so in one line.
VIEW_EXTRA = frozenset({"plotly", "numpy", "datasets", "pyarrow"})


def _needs_view_extra(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except ModuleNotFoundError as e:
            missing = (e.name or "").split(".")[0]
            if missing not in VIEW_EXTRA:
                raise
            from agentgym.errors import AgentgymError

            raise AgentgymError(f"agentgym {args.command} needs the view extra ({missing} is not installed): "
                                "pip install -e '.[view]'") from e

    return run


def _cmd_view(args: argparse.Namespace) -> int:
    from agentgym.view.report import write_report
    from agentgym.view.runs import load_runs
    from agentgym.view.serve import LiveReport, serve

    def build() -> tuple[Path, int, int]:
        runs = load_runs(args.runs)
        out = write_report(runs, args.out, title=args.title, baseline=args.baseline)
        return out, len(runs), sum(len(r.trajectories) for r in runs)

    # Watched from before the first build: rows appended while it is being built are seen.
    live = LiveReport(Path(args.out), args.runs, build) if args.serve else None
    out, runs, episodes = build()
    print(f"report: {out} ({runs} run{'s' * (runs != 1)}, {episodes} episodes)", flush=True)
    if live:
        try:
            serve(live, args.port, announce=lambda url: print(
                f"serving {url} (live: rebuilt as the runs grow; Ctrl-C to stop)", flush=True))
        except KeyboardInterrupt:
            pass
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from datasets.utils.logging import disable_progress_bar

    from agentgym.errors import DataError
    from agentgym.view import export

    to, dest = args.to
    if to == "harbor":
        from agentgym.envs.terminal.cli import export_tasks

        return export_tasks(args)
    if to not in FORMATS:
        raise DataError(f"--to {to}: expected one of {', '.join(FORMATS)}, or harbor")
    if Path(dest).exists() and not args.force:
        raise DataError(f"{dest} exists; pass --force to replace it")
    disable_progress_bar()
    trajectories = list(export.read_trajectories(args.source))
    if not trajectories:
        raise DataError(f"{args.source} holds no trajectory")
    if args.for_ == "sft":
        rows = export.sft_rows(trajectories, successful_only=args.successful_only)
        if not rows:
            raise DataError("no episode to export for SFT (none finished" + (" successfully)" if
                                                                             args.successful_only else ")"))
        out = export.write_sft(rows, dest, to)
        print(f"{out}: {len(rows)} SFT conversations of {len(trajectories)} episodes")
        return 0
    if args.successful_only:
        trajectories = [t for t in trajectories if t.success]
    out = export.write(trajectories, dest, to)
    print(f"{out}: {len(trajectories)} trajectories ({to})")
    return 0


def _port(text: str) -> int:
    """An argparse type for a TCP port: 0 (any free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {port}")
    return port


def add_commands(sub: Any) -> None:
    """Add ``view`` and ``export`` to the ``agentgym`` command's subparsers."""
    view = sub.add_parser("view", help="write an HTML report of runs (plots, comparisons, every episode)")
    view.add_argument("runs", nargs="+", metavar="RUN", help="a run's JSONL file, or a folder of them (runs/)")
    view.add_argument("--out", default="report.html", help="the HTML file to write (default report.html)")
    view.add_argument("--title", help="the report's title")
    view.add_argument("--baseline", metavar="NAME",
                      help="compare every run of its env with this run (a run's name, e.g. its file's stem); "
                           "default: every pair of runs of one env")
    view.add_argument("--serve", action="store_true",
                      help="then serve it on 127.0.0.1 until Ctrl-C, rebuilt as the runs grow (a run in progress)")
    view.add_argument("--port", type=_port, default=8765, help="port for --serve (0: any free port)")
    view.set_defaults(func=_needs_view_extra(_cmd_view))

    ex = sub.add_parser("export", help="convert runs to a Hugging Face dataset or parquet, and back; "
                                       "write an env's tasks as Harbor task folders")
    ex.add_argument("source", help="a run's JSONL, a folder of runs, a save_to_disk folder or a parquet file; "
                                   "for --to harbor, an env (code, swe)")
    ex.add_argument("--to", required=True, nargs=2, metavar=("FORMAT", "DEST"),
                    help="datasets DIR (save_to_disk), parquet FILE, jsonl FILE (back to a run), or harbor DIR "
                         "(the env's tasks, tests and oracle included, for any harness that reads Harbor folders)")
    ex.add_argument("--tasks", help="--to harbor: a task file in the env's format (default: the env's own; "
                                    "swe needs one)")
    ex.add_argument("--limit", type=int, help="--to harbor: the first N tasks only")
    ex.add_argument("--for", dest="for_", choices=["sft"],
                    help="sft: chat messages and tool schemas for TRL's SFTTrainer instead of full trajectories")
    ex.add_argument("--successful-only", action="store_true", help="only episodes that succeeded")
    ex.add_argument("--force", action="store_true", help="replace DEST if it exists")
    ex.set_defaults(func=_needs_view_extra(_cmd_export))

