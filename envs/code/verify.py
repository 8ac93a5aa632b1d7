"""The code env's verifier: the task's tests, run against the submission in a fresh sandbox."""

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
        passed = bool(report.get("loaded")) and report["total"] > 0 and report["passed"] == report["total"]
        return Reward(
            value=1.0 if passed else 0.0,
            components={"tests_passed_fraction": report["passed"] / report["total"] if report.get("total") else 0.0},
            info={"tests": report.get("tests", []), "verifier": report.get("error") or "ok"},
        )
