"""Backward correction makes a noisy verifier's expected reward the true correctness."""

from __future__ import annotations

import random

import pytest

from agentgym.rewards import Episode, NoisyCorrected, ProbeReport, backward_corrected, rates_from_probe
from agentgym.types import Task, Trajectory


def test_expected_corrected_reward_is_the_truth() -> None:
    fpr, fnr = 0.2, 0.1
    for truth in (0.0, 1.0):
        accept = fpr if truth == 0 else 1 - fnr
        expected = accept * backward_corrected(1.0, fpr=fpr, fnr=fnr) + (1 - accept) * backward_corrected(
            0.0, fpr=fpr, fnr=fnr)
        assert expected == pytest.approx(truth)
    with pytest.raises(ValueError, match="fpr \\+ fnr < 1"):
        backward_corrected(1.0, fpr=0.6, fnr=0.4)


async def test_a_hack_the_judge_sometimes_accepts_earns_nothing_on_average() -> None:
    rng = random.Random(0)

    def gullible(episode: Episode) -> float:  # accepts the hack 30 % of the time, a right answer 90 %
        return float(rng.random() < (0.9 if episode.final_answer == "42" else 0.3))

    corrected = NoisyCorrected(gullible, fpr=0.3, fnr=0.1)
    task = Task(id="q", prompt="?")
    hack, honest = (Episode(task, Trajectory(task_id="q", env="x", final_answer=a)) for a in (":", "42"))
    raw_hack = sum([gullible(hack) for _ in range(4000)]) / 4000
    hacked = [(await corrected.score(hack)).value for _ in range(4000)]
    right = [(await corrected.score(honest)).value for _ in range(4000)]
    assert raw_hack > 0.25  # uncorrected, the hack pays
    assert abs(sum(hacked) / len(hacked)) < 0.05 and abs(sum(right) / len(right) - 1.0) < 0.05
    assert corrected.name == "corrected_gullible"


def test_rates_come_from_a_probe_report() -> None:
    report = ProbeReport(model="m", false_positive_rate=0.25, by_hack={}, control_pass_rate=0.875, threshold=0.5, n=48)
    assert rates_from_probe(report) == (0.25, 0.125)
