"""Where benchmark scripts keep their figures: one JSON file each under ``benchmarks/results/``."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).parent / "results"


def results_path(name: str) -> Path:
    """The default results file of the benchmark ``name``."""
    return RESULTS_DIR / f"{name}.json"


def run_options(parser: argparse.ArgumentParser, name: str, *, repeat: int, quick: str,
                repeat_help: str | None = None, seconds: float | None = None) -> None:
    """Add the options every benchmark has: ``--repeat``, ``--quick`` (a smoke test; ``quick`` says what
    it runs), ``--out`` (default ``results/NAME.json``), and ``--seconds`` for one that measures windows."""
    if seconds is not None:
        parser.add_argument("--seconds", type=float, default=seconds, help="length of each measured window at least")
    parser.add_argument("--repeat", type=int, default=repeat, help=repeat_help)
    parser.add_argument("--quick", action="store_true", help=f"smoke test: {quick}")
    parser.add_argument("--out", type=Path, default=results_path(name))


def save_results(data: Any, path: Path) -> Path:
    """Write ``data`` as indented JSON to ``path`` (creating its folder) and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {path}")
    return path


def portable(value: object) -> str:
    """``value`` as text another machine can use: an absolute path of this one becomes its last part.

    Words are split at spaces, commas and ``=`` (``--versions /a/old,/b/new``, ``--data=/x/y``), the
    separators kept."""
    words = re.split(r"([\s,=]+)", str(value))
    return "".join(Path(word).name if os.path.isabs(word) else word for word in words)


def run_args(args: argparse.Namespace) -> dict[str, str]:
    """The script's options for its results file: paths only by name, and not where the file itself went."""
    return {key: portable(value) for key, value in vars(args).items() if key != "out"}


def run_info() -> dict[str, Any]:
    """When, on which commit and versions a benchmark ran, and how busy the machine was, for its results file.

    Only what another machine can use: no path of this one (the command line's ``--out`` is left out,
    other paths keep their last part)."""
    repo = Path(__file__).parent.parent

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    return {
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "command": " ".join([os.path.basename(sys.argv[0]), *_without_out(sys.argv[1:])]),
        "commit": git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        "cpus": os.cpu_count(),
        "load_average_1m_at_start": os.getloadavg()[0],
        "python": platform.python_version(),
    }


def _without_out(argv: list[str]) -> list[str]:
    """``argv`` less ``--out FILE`` (where this run's file went says nothing about the run), paths by name."""
    kept: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--out":
            skip = True
        elif not word.startswith("--out="):
            kept.append(portable(word))
    return kept
