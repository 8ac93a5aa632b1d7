"""The reference policy's coverage of the MiniWoB tasks: its mean reward per task, and a wrong play's.

``agentgym gui coverage`` plays each task ``samples`` seeds with the reference
(:class:`~agentgym.envs.gui.policies.ReferencePolicy`) and with the same solvers playing wrong
(:class:`~agentgym.envs.gui.policies.WrongPlayPolicy`: the wrong element, the wrong text), through
:func:`agentgym.evaluation.evaluate` on a browser sandbox, and reports per task the mean reward of
each. A task is covered when the reference's mean reward is at least :data:`COVERED` and no wrong
play scored 1: the page's reward tells a right play from a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgym.types import Trajectory

COVERED = 0.95
"""The reference's mean reward on a task for it to count as covered."""


@dataclass
class TaskCoverage:
    """One task's rewards: the reference's and the wrong play's, one per seed, and any episode errors."""

    task: str
    reference: list[float] = field(default_factory=list)
    wrong: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return sum(self.reference) / len(self.reference) if self.reference else 0.0

    @property
    def wrong_mean(self) -> float:
        return sum(self.wrong) / len(self.wrong) if self.wrong else 0.0

    @property
    def covered(self) -> bool:
        """The reference solves it (mean reward >= :data:`COVERED`) and no wrong play got the full reward."""
        return bool(self.reference) and self.mean >= COVERED and all(r < 1 for r in self.wrong) and not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "wrong": self.wrong, "errors": self.errors, "mean": round(self.mean, 4),
                "wrong_mean": round(self.wrong_mean, 4), "covered": self.covered}


def tally(reference: list[Trajectory], wrong: list[Trajectory]) -> dict[str, TaskCoverage]:
    """Per task, the rewards of the reference's episodes and of the wrong plays' (sorted by task)."""
    tasks: dict[str, TaskCoverage] = {}
    for rewards, trajectories in (("reference", reference), ("wrong", wrong)):
        for t in trajectories:
            row = tasks.setdefault(t.task_id, TaskCoverage(t.task_id))
            getattr(row, rewards).append(t.reward)
            if t.outcome == "error":
                row.errors.append(f"{rewards} seed {t.seed}: {t.failure}")
    return dict(sorted(tasks.items()))


async def measure(names: str, *, samples: int, seed: int = 0, sandbox: str = "auto",
                  concurrency: int = 2) -> dict[str, TaskCoverage]:
    """Play ``names`` (``reference``, ``all`` or task names) ``samples`` seeds each with both policies."""
    from agentgym.envs.gui.policies import ReferencePolicy, WrongPlayPolicy
    from agentgym.evaluation import evaluate

    kwargs = {"names": names, "observation": "dom", "sandbox_backend": sandbox}
    runs = []
    for policy in (ReferencePolicy(), WrongPlayPolicy()):
        _, trajectories = await evaluate("gui", policy, samples=samples, seed=seed, concurrency=concurrency,
                                         env_kwargs=kwargs, progress=False)
        runs.append(trajectories)
    return tally(*runs)


def table(tasks: dict[str, TaskCoverage]) -> str:
    """A Markdown table, one row per task, and a closing line with the count of covered tasks."""
    lines = ["| task | reference mean reward | seeds | wrong play mean reward | covered |",
             "| --- | --- | --- | --- | --- |"]
    for row in tasks.values():
        lines.append(f"| {row.task} | {row.mean:.2f} | {len(row.reference)} | {row.wrong_mean:.2f} | "
                     f"{'yes' if row.covered else 'no'} |")
    covered = sum(row.covered for row in tasks.values())
    lines.append(f"\ncovered: {covered} of {len(tasks)} tasks (reference mean reward >= {COVERED}, "
                 "no wrong play at 1)")
    return "\n".join(lines)
