"""Rubric: weighted sums, weight-0 metrics, gates that zero or cap, bounds, nesting, sync and async."""

from __future__ import annotations

import pytest

from agentgym.rewards import Episode, Gate, Rubric, as_verifier
from agentgym.types import Reward, Task, Trajectory

EPISODE = Episode(task=Task(id="t", prompt="q"), trajectory=Trajectory(task_id="t", env="test"))


def const(value: float, name: str):  # type: ignore[no-untyped-def]
    def fn(episode: Episode) -> float:
        return value

    fn.__name__ = name
    return fn


async def async_half(episode: Episode) -> Reward:
    return Reward(value=0.5, info={"why": "async"})


async def test_weighted_sum_records_every_component() -> None:
    criteria = {"a": const(1.0, "a"), "b": async_half, "m": const(0.9, "m")}
    rubric = Rubric(criteria, weights={"b": 2.0, "m": 0.0})
    reward = await rubric.score(EPISODE)
    assert reward.value == pytest.approx(2.0)  # 1*1 + 2*0.5, and m is a metric only
    assert reward.components == {"a": 1.0, "b": 0.5, "m": 0.9}
    assert reward.info == {"b": {"why": "async"}}


async def test_a_failed_gate_zeroes_and_a_passed_gate_does_nothing() -> None:
    failed = Rubric([const(1.0, "correct"), const(0.0, "format")], weights={"format": 0.0},
                    gates=[Gate("format", threshold=1.0)])
    reward = await failed.score(EPISODE)
    assert reward.value == 0.0 and reward.components["gate/format"] == 0.0
    passed = Rubric([const(1.0, "correct"), const(1.0, "format")], weights={"format": 0.0},
                    gates=[Gate("format")])
    reward = await passed.score(EPISODE)
    assert reward.value == 1.0 and reward.components["gate/format"] == 1.0


async def test_a_gate_can_cap_instead_of_zeroing() -> None:
    rubric = Rubric([const(0.9, "correct"), const(0.2, "safety")], weights={"safety": 0.0},
                    gates=[Gate("safety", threshold=0.5, cap=0.3)])
    assert (await rubric.score(EPISODE)).value == pytest.approx(0.3)


async def test_bounds_clip_the_total() -> None:
    rubric = Rubric([const(3.0, "big"), const(-5.0, "small")], weights={"small": 0.0}, bounds=(0.0, 1.0))
    assert (await rubric.score(EPISODE)).value == 1.0
    negative = Rubric([const(-5.0, "small")], bounds=(-1.0, 1.0))
    assert (await negative.score(EPISODE)).value == -1.0


async def test_rubrics_nest_and_components_are_prefixed() -> None:
    inner = Rubric({"x": const(1.0, "x"), "y": const(0.0, "y")}, name="inner")
    outer = Rubric([inner, const(1.0, "z")], weights={"inner": 0.5})
    reward = await outer.score(EPISODE)
    assert reward.value == pytest.approx(1.5)
    assert reward.components == {"inner": 1.0, "inner.x": 1.0, "inner.y": 0.0, "z": 1.0}


async def test_plain_functions_are_verifiers_and_bad_returns_are_refused() -> None:
    assert (await as_verifier(lambda episode: True).score(EPISODE)).value == 1.0
    with pytest.raises(TypeError, match="must return a float"):
        await as_verifier(lambda episode: "yes").score(EPISODE)


def test_misconfigured_rubrics_fail_when_built() -> None:
    with pytest.raises(ValueError, match="distinct names"):
        Rubric([const(1.0, "a"), const(1.0, "a")])
    with pytest.raises(ValueError, match="unknown criteria"):
        Rubric([const(1.0, "a")], gates=[Gate("b")])
    with pytest.raises(ValueError, match="empty"):
        Rubric([const(1.0, "a")], bounds=(1.0, 0.0))
