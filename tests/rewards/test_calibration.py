"""Calibration: the stated confidence is read, scored by a proper rule, and honest confidence wins."""

from __future__ import annotations

import json
import random
import re

import pytest

from agentgym.evaluation.metrics import summarize
from agentgym.rewards import Calibration, Episode, Rubric, calibration_report, proper_score, stated_confidence
from agentgym.types import Message, Task, ToolCall, Trajectory, Turn

TASK = Task(id="q", prompt="Capital of France?", data={"answer": "Paris"})


def right(episode: Episode) -> float:
    return float((episode.final_answer or "").startswith("Paris"))


def episode(answer: str, *, text: str = "", arguments: dict[str, object] | None = None) -> Episode:
    call = ToolCall(id="c", name="answer", arguments=json.dumps({"answer": answer, **(arguments or {})}))
    turn = Turn(action=Message(role="assistant", content=text, tool_calls=[call]))
    return Episode(TASK, Trajectory(task_id="q", env="qa", turns=[turn], final_answer=answer))


def test_confidence_is_read_from_an_argument_a_tag_or_a_line() -> None:
    assert stated_confidence(episode("Paris", arguments={"confidence": 0.7}).trajectory) == 0.7
    assert stated_confidence(episode("Paris", arguments={"confidence": "80%"}).trajectory) == 0.8
    assert stated_confidence(episode("Paris", text="sure <confidence>0.9</confidence>").trajectory) == 0.9
    assert stated_confidence(episode("Paris <confidence>65%</confidence>").trajectory) == 0.65
    assert stated_confidence(episode("Paris", text="Confidence: 0.4").trajectory) == 0.4
    assert stated_confidence(episode("Paris", text="<confidence>1.7</confidence>").trajectory) is None
    assert stated_confidence(episode("Paris").trajectory) is None


async def test_brier_and_log_values_on_known_episodes() -> None:
    brier, log = Calibration(correct=right), Calibration(correct=right, rule="log")
    assert (await brier.score(episode("Paris", arguments={"confidence": 0.8}))).value == pytest.approx(1 - 0.04)
    assert (await brier.score(episode("Lyon", arguments={"confidence": 0.8}))).value == pytest.approx(1 - 0.64)
    assert (await log.score(episode("Paris", arguments={"confidence": 0.5}))).value == pytest.approx(0.8495, abs=1e-4)
    assert (await log.score(episode("Paris", arguments={"confidence": 1.0}))).value == pytest.approx(1.0)
    assert (await log.score(episode("Lyon", arguments={"confidence": 1.0}))).value == pytest.approx(0.0)
    assert (await log.score(episode("Lyon", arguments={"confidence": 0.25}))).value == pytest.approx(0.9375, abs=1e-4)
    unstated = await brier.score(episode("Paris"))
    assert unstated.value == 0.0 and unstated.components == {"confidence": -1.0, "correct": 1.0}
    with pytest.raises(ValueError, match="unknown scoring rule"):
        Calibration(correct=right, rule="hinge")  # type: ignore[arg-type]


@pytest.mark.parametrize("rule", ["brier", "log"])
def test_constant_confidence_is_worse_than_honest_confidence(rule: str) -> None:
    # A policy right 70 % of the time: saying 0.7 beats always 0.5, always 1.0, and any other constant.
    accuracy = 0.7

    def expected(c: float) -> float:
        return accuracy * proper_score(c, True, rule) + (1 - accuracy) * proper_score(c, False, rule)  # type: ignore[arg-type]

    honest = expected(0.7)
    assert honest > expected(0.5) + 0.01 and honest > expected(1.0) + 0.01
    assert all(honest >= expected(c / 20) for c in range(1, 20))
    assert expected(0.0) < honest  # and saying "no idea, I am wrong" for everything does not pay either


def test_ece_and_reliability_bins() -> None:
    rng = random.Random(0)
    calibrated = [(c, rng.random() < c) for c in (rng.choice([0.2, 0.5, 0.9]) for _ in range(3000))]
    good = calibration_report([c for c, _ in calibrated], [y for _, y in calibrated])
    overconfident = calibration_report([1.0] * 3000, [y for _, y in calibrated])
    assert good.ece < 0.03 and overconfident.ece > 0.3
    nine = next(b for b in good.bins if b.low == 0.9)
    assert nine.count > 800 and abs(nine.accuracy - 0.9) < 0.03
    report = calibration_report([0.9, None, 0.1], [True, False, False], bins=2)
    assert (report.stated, report.unstated) == (2, 1) and report.ece == pytest.approx(0.1)


async def test_the_summary_reports_ece_per_calibration_criterion() -> None:
    rubric = Rubric({"correct": right, "calibration": Calibration(correct=right)}, weights={"calibration": 0.1})
    trajectories = []
    for answer, confidence in (("Paris", 0.9), ("Lyon", 0.9), ("Paris", 0.6), ("Lyon", None)):
        e = episode(answer, arguments={} if confidence is None else {"confidence": confidence})
        e.trajectory.reward_components = (await rubric.score(e)).components
        trajectories.append(e.trajectory)
    summary = summarize(trajectories, env="qa", policy="p")
    report = summary.calibration["calibration"]
    assert (report.stated, report.unstated) == (3, 1)
    # bins: 0.6 (right) -> |0.6-1|; 0.9 (one right, one wrong) -> |0.9-0.5|
    assert report.ece == pytest.approx((0.4 + 2 * 0.4) / 3)
    assert re.search(r"calibration\[calibration\] +ECE 0.400 over 3 stated \(1 unstated\)", summary.table())
    assert "reliability[calibration]" in summary.table()


def test_the_tag_never_makes_a_right_answer_fail_an_exact_match() -> None:
    from agentgym.rewards import exact_answer

    assert exact_answer(episode("Paris <confidence>0.9</confidence>")) == 1.0
    assert stated_confidence(episode("Paris <confidence>0.9</confidence>").trajectory) == 0.9
