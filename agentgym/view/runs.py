"""Runs as the report sees them: the trajectories of one JSONL file, with their summary.

A run is what ``agentgym eval`` wrote: ``runs/ENV__MODEL.jsonl`` beside ``ENV__MODEL.summary.json``.
Its episodes are the file's rows less those a resume superseded (:func:`current_episodes`), the set
``eval`` counts. The summary is recomputed from them (so a run cut short still adds up); only the wall
time, which the trajectories cannot tell, is taken from the saved summary when there is one. A file
that holds no episode (a run that played nothing) is skipped with a line, not an error, when others load.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentgym.errors import DataError
from agentgym.evaluation.metrics import Summary, summarize
from agentgym.evaluation.runfile import current_episodes
from agentgym.types import Trajectory, iter_jsonl


class EmptyRun(DataError):
    """A run file that holds no episode."""


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class Run:
    """One run: a name for people, where it came from, its episodes and their summary."""

    name: str
    path: Path
    trajectories: list[Trajectory]
    summary: Summary


def run_files(paths: list[str | Path]) -> list[Path]:
    """The JSONL files named by ``paths``: files as they are, folders by their ``*.jsonl`` files.

    Raises:
        DataError: A path does not exist, or a folder holds no ``.jsonl`` file.
    """
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.glob("*.jsonl"))
            if not found:
                raise DataError(f"{path} holds no .jsonl run")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise DataError(f"no such run: {path}")
    return files


def load_run(path: Path, name: str | None = None) -> Run:
    """Read one run's trajectories and summarise them.

    Raises:
        DataError: The file holds no trajectory (lines that do not parse are skipped, as for
            ``--resume``: a run killed mid-write still opens).
    """
    try:
        trajectories = current_episodes(iter_jsonl(path))
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"cannot read {path}: {e}") from e
    if not trajectories:
        raise EmptyRun(f"{path} holds no trajectory (is it an agentgym run's JSONL?)")
    wall = 0.0
    saved = path.with_suffix(".summary.json")
    if saved.is_file():
        try:
            wall = float(json.loads(saved.read_text(encoding="utf-8")).get("wall_seconds") or 0.0)
        except (OSError, ValueError, AttributeError):
            wall = 0.0  # a damaged summary costs the wall time only; everything else is recomputed
    envs = sorted({t.env for t in trajectories})
    policies = sorted({t.policy for t in trajectories})
    summary = summarize(trajectories, env="+".join(envs), policy="+".join(policies), wall_seconds=wall)
    return Run(name=name or path.stem, path=path, trajectories=trajectories, summary=summary)


def load_runs(paths: list[str | Path], skipped: Callable[[str], None] = _say) -> list[Run]:
    """Load every run named by ``paths`` (files or folders); names are file stems, made unique.

    A file that holds no episode is left out, and ``skipped`` told so in one line, when another loads.

    Raises:
        DataError: Nothing to load, a missing path, or no file with an episode.
    """
    files = run_files(paths)
    if not files:
        raise DataError("no run given")
    stems = [f.stem for f in files]
    taken: set[str] = set()
    runs = []
    empty: list[EmptyRun] = []
    for path, stem in zip(files, stems, strict=True):
        name = stem if stems.count(stem) == 1 else f"{path.parent.name}/{stem}"
        while name in taken:
            name += "'"
        try:
            run = load_run(path, name)
        except EmptyRun as e:
            empty.append(e)
            continue
        taken.add(name)
        runs.append(run)
    if empty and not runs:
        raise empty[0]
    for error in empty:
        skipped(f"skipped: {error}")
    return runs
