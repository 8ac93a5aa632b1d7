"""The code env's verifier: the task's tests, run against the submission where it cannot reach them.

The work is :mod:`~agentgym.envs.code.grading`'s (docs/threat-model.md); this is its reward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from agentgym.rewards import Episode
from agentgym.types import Reward

if TYPE_CHECKING:
    from .env import CodeEnv


class PassesTests:
    """1 when every test of the task passes on the final answer, else 0; each test's result in ``info["tests"]``.

    It runs the tests through the env's ``run_tests`` (so on the env's sandbox backend, under its
    limits), which is why it scores live episodes only: ``episode.env`` must be the :class:`CodeEnv`.
    """

    name = "tests"

    async def score(self, episode: Episode) -> Reward:
        env = cast("CodeEnv", episode.env)
        if env is None:
            raise ValueError("PassesTests runs the tests in the env's sandboxes: it scores live episodes only")
        if not episode.final_answer:
            return Reward(value=0.0, info={"tests": [], "verifier": "no submission"})
        report = await env.run_tests(episode.task, episode.final_answer)
        return Reward(
            value=1.0 if report.all_passed else 0.0,
            components={"tests_passed_fraction": report.passed / report.total if report.total else 0.0},
            info={"tests": report.tests, "verifier": report.error or "ok", "tries": report.tries},
        )
