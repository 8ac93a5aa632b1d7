"""The code env's verifier: the task's tests, run against the submission where it cannot reach them.

The work is :mod:`~agentgym.envs.code.grading`'s (docs/threat-model.md); this is its reward.
"""

from __future__ import annotations

from agentgym.errors import DataError
from agentgym.rewards import Episode
from agentgym.types import Reward

from .dryrun import decide
from .grading import verify

DEFAULT_TIMEOUT = 20.0
"""Seconds the submission and its tests may take in all, by default."""


class PassesTests:
    """1 when every test of the task passes on the final answer, else 0; each test's result in ``info["tests"]``.

    It runs the tests where the episode's env draws its sandboxes (``episode.sandboxes``: the env's
    backend, image and runtime), which is why it scores live episodes only.
    """

    name = "tests"

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, grading: str = "isolated", dry_run: bool = False) -> None:
        """
        Args:
            timeout: Seconds the submission and its tests may take in all; past it the tests left fail.
            grading: ``isolated`` or ``inprocess`` (docs/threat-model.md, "Grading modes"), for tasks
                whose row does not say (a row's ``"grading"`` wins); ``auto``: isolated where the dry
                run agrees with plain Python, else in-process.
            dry_run: Grade a task isolated only after its dry run (:mod:`~agentgym.envs.code.dryrun`)
                agreed with plain Python; a task it refuses is an ``error`` with the reason.
        """
        self.timeout = timeout
        self.grading = grading
        self.dry_run = dry_run

    async def score(self, episode: Episode) -> Reward:
        supply = episode.sandboxes
        if supply is None:
            raise ValueError("PassesTests runs the tests in the env's sandboxes: it scores live episodes only")
        if not episode.final_answer:
            return Reward(value=0.0, info={"tests": [], "verifier": "no submission",
                                           "grading": episode.task.data.get("grading") or self.grading})
        grading = episode.task.data.get("grading") or self.grading
        if self.dry_run or grading == "auto":
            decision = await decide(episode.task.data, grading, sandbox=supply.backend, image=supply.image,
                                    timeout=self.timeout, runtime=supply.runtime)
            if decision.grading is None:
                raise DataError(f"task {episode.task.id} is refused: {decision.reason}")
            grading = decision.grading
        report = await verify(episode.task.data, episode.final_answer, sandbox=supply.backend, image=supply.image,
                              timeout=self.timeout, runtime=supply.runtime, grading=grading)
        return Reward(
            value=1.0 if report.all_passed else 0.0,
            components={"tests_passed_fraction": report.passed / report.total if report.total else 0.0},
            info={"tests": report.tests, "verifier": report.error or "ok", "tries": report.tries,
                  "grading": report.grading},
        )
