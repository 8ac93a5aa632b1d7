"""Per-task pass rates of a policy, with their intervals, and the tasks worth training on.

GRPO learns from a task only when its group of samples disagrees: a task the policy always solves,
or never does, gives every sample the same advantage, 0. :func:`profile_tasks` plays each task
``samples`` times and reports its pass rate with a 95 % Wilson interval; :func:`informative` keeps
the tasks whose rate is strictly between 0 and 1. ``agentgym tasks profile`` is the command line.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentgym.errors import DataError
from agentgym.evaluation.metrics import wilson_interval
from agentgym.types import Trajectory


class TaskProfile(BaseModel):
    """One task's pass rate over its samples, and the rate's 95 % Wilson interval."""

    task_id: str
    samples: int
    successes: int
    rate: float
    low: float
    high: float


def profiles(trajectories: Sequence[Trajectory]) -> list[TaskProfile]:
    """Each task's profile, in the order tasks first appear; an episode that failed counts as not solved."""
    by_task: dict[str, list[bool]] = {}
    for t in trajectories:
        by_task.setdefault(t.task_id, []).append(bool(t.success))
    out = []
    for task_id, solved in by_task.items():
        low, high = wilson_interval(sum(solved), len(solved))
        out.append(TaskProfile(task_id=task_id, samples=len(solved), successes=sum(solved),
                               rate=sum(solved) / len(solved), low=low, high=high))
    return out


def informative(found: Sequence[TaskProfile]) -> list[str]:
    """The ids of tasks whose pass rate is strictly between 0 and 1: the ones a GRPO group learns from."""
    return [p.task_id for p in found if 0 < p.successes < p.samples]


def write(found: Sequence[TaskProfile], path: str | Path, meta: dict[str, Any]) -> None:
    """A profile file: ``meta`` (env, policy, samples...) and one entry per task."""
    Path(path).write_text(json.dumps({**meta, "tasks": [p.model_dump() for p in found],
                                      "informative": informative(found)}, indent=1) + "\n")


def read_informative(path: str | Path) -> list[str]:
    """The informative task ids a profile file lists.

    Raises:
        DataError: The file is missing or is not a profile file.
    """
    try:
        data = json.loads(Path(path).read_text())
        return [str(i) for i in data["informative"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{path}: not a task profile (agentgym tasks profile --out writes one): {e}") from None
