"""``agentgym tasks profile``: per-task pass rates with Wilson intervals, and the informative tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentgym.cli import main
from agentgym.envs.code.policies import PromptBaseline, ReferenceSolution
from agentgym.errors import DataError
from agentgym.evaluation.profile import read_informative
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolSpec

SEEN: dict[str, int] = {}  # first turns played, by task


class EveryOther:
    """Solves a task on its first, third... episode of it and submits the bare prompt otherwise."""

    name = "every-other"

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        if not any(m.role == "assistant" for m in messages):  # an episode's first turn
            SEEN[task.id] = SEEN.get(task.id, 0) + 1
        count = SEEN[task.id]
        solved = task.id.endswith(("0", "2", "4", "6", "8", "a", "c", "e")) or count % 2 == 1
        return await (ReferenceSolution() if solved else PromptBaseline()).act(messages, tools, task=task)


def test_profile_reports_rates_and_lists_the_informative_tasks(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "profile.json"
    status = main(["tasks", "profile", "code", "--model", f"policy:{__name__}:EveryOther", "--samples", "2",
                   "--tasks", "procedural:easy:heldout:0-5", "--sandbox", "local", "--concurrency", "1",
                   "--out", str(out)])
    assert status == 0
    data = json.loads(out.read_text())
    rates = {t["task_id"]: t for t in data["tasks"]}
    assert len(rates) == 6 and all(t["samples"] == 2 for t in rates.values())
    for task_id, t in rates.items():
        assert t["low"] <= t["rate"] <= t["high"]
        assert t["rate"] == (1.0 if task_id.endswith(("0", "2", "4", "6", "8", "a", "c", "e")) else 0.5)
    assert read_informative(out) == [i for i, t in rates.items() if t["rate"] == 0.5]
    assert "have a pass rate strictly between 0 and 1" in capsys.readouterr().out


def test_a_file_that_is_not_a_profile_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("[]")
    with pytest.raises(DataError, match="not a task profile"):
        read_informative(tmp_path / "x.json")
    assert main(["eval", "code", "--model", "openai/gpt-4o-mini", "--tool-schemas", "compact"]) == 2
