"""Group-relative rewards and advantages: known values, and the dodges they must not pay."""

from __future__ import annotations

import random
import statistics

import pytest

from agentgym.rewards import (
    component_advantages,
    median_tool_efficiency,
    summed_advantages,
    unit_test_weights,
    weighted_test_credit,
    zero_signal_groups,
)


def test_component_advantages_match_the_formula_on_a_known_group() -> None:
    rows = [{"a": 1.0, "b": 10.0}, {"a": 0.0, "b": 30.0}, {"a": 1.0, "b": 20.0}, {"a": 0.0, "b": 20.0}]
    out = component_advantages(rows, {"a": 1.0, "b": 0.5}, group_size=4, batch_normalise=False)
    sa, sb = statistics.stdev([1, 0, 1, 0]), statistics.stdev([10, 30, 20, 20])
    expected = [(1 - 0.5) / (sa + 1e-4) + 0.5 * (10 - 20) / (sb + 1e-4),
                (0 - 0.5) / (sa + 1e-4) + 0.5 * (30 - 20) / (sb + 1e-4),
                (1 - 0.5) / (sa + 1e-4), (0 - 0.5) / (sa + 1e-4)]
    assert out == pytest.approx(expected)
    crashed = component_advantages([*rows[:3], None], {"a": 1.0}, group_size=4, batch_normalise=False)
    assert crashed[3] == 0.0 and crashed[0] == pytest.approx((1 - 2 / 3) / (statistics.stdev([1, 0, 1]) + 1e-4))


def test_a_component_100x_smaller_still_moves_the_advantage() -> None:
    # "big" is noise on a scale of 100; "small" (0/1) says which rollouts were right.
    rng = random.Random(1)
    small = [1.0, 0.0] * 4
    rows = [{"big": 100 * rng.random(), "small": s} for s in small]
    weights = {"big": 1.0, "small": 1.0}
    summed = summed_advantages(rows, weights, group_size=8)
    per_component = component_advantages(rows, weights, group_size=8)
    # Flip only the small component of rollout 0: per component it moves rollout 0's advantage by a
    # unit of that component's spread, summed it moves it by ~1/100 of the big one's.
    flipped = [dict(r) for r in rows]
    flipped[0]["small"] = 0.0
    moved = abs(component_advantages(flipped, weights, group_size=8)[0] - per_component[0])
    moved_summed = abs(summed_advantages(flipped, weights, group_size=8)[0] - summed[0])
    assert moved > 0.5 and moved_summed < 0.05
    # And the small component's correlation with the advantage survives only per component.
    def corr(x: list[float], y: list[float]) -> float:
        return statistics.correlation(x, y)
    assert corr(small, per_component) > 0.5 and abs(corr(small, summed)) < 0.3


def test_zero_signal_groups_are_found() -> None:
    rewards = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.5, 0.5]
    assert zero_signal_groups(rewards, group_size=2) == [True, True, False, True]
    assert zero_signal_groups([[1.0, 0.0], [1.0, 1.0]], group_size=2) == [False]  # a component still differs
    assert zero_signal_groups([1.0, None], group_size=2) == [True]  # one scored rollout: nothing to compare
    with pytest.raises(ValueError, match="whole number of groups"):
        zero_signal_groups([1.0] * 3, group_size=2)


def test_median_tool_efficiency_values_and_dodges() -> None:
    calls, correct = [2, 4, 8, 0], [1.0, 1.0, 1.0, 0.0]
    assert median_tool_efficiency(calls, correct) == [1.0, 1.0, 0.5, 0.0]  # median of the right ones: 4
    assert median_tool_efficiency([0, 0], [0.0, 0.0]) == [0.0, 0.0]  # nobody right, nobody paid


def test_difficulty_weighted_test_credit() -> None:
    # Test 0 every rollout passes, test 1 half, test 2 one in four.
    results = [[True, True, True], [True, True, False], [True, False, False], [True, False, False]]
    weights = unit_test_weights(results)
    assert weights == pytest.approx([0.0, 0.5 / 1.25, 0.75 / 1.25])
    credit = weighted_test_credit(results)
    assert credit == pytest.approx([1.0, 0.4, 0.0, 0.0])
    # The dodge: passing only the test everyone passes earns nothing (beyond the floor).
    assert weighted_test_credit(results)[3] == 0.0
    assert weighted_test_credit(results, floor=0.1)[3] == pytest.approx(0.1 / 1.35)
    assert unit_test_weights([[True, True]] * 3) == [0.5, 0.5]  # all passed by all: uniform


def test_group_test_credit_reads_the_code_envs_test_results() -> None:
    from agentgym.rewards import group_test_credit
    from agentgym.types import Trajectory

    def ran(*passed: bool) -> Trajectory:
        tests = [{"test": f"assert f({i}) == {i}", "passed": p} for i, p in enumerate(passed)]
        return Trajectory(task_id="t", env="code", info={"tests": tests})

    group = [ran(True, True, True), ran(True, True, False), ran(True, False, False),
             Trajectory(task_id="t", env="code", info={"tests": []})]  # submitted nothing
    credit = group_test_credit(group)
    # pass rates 3/4, 2/4, 1/4 -> weights 0.25, 0.5, 0.75 (normalised by 1.5)
    assert credit == pytest.approx([1.0, 0.75 / 1.5, 0.25 / 1.5, 0.0])
    assert group_test_credit([Trajectory(task_id="t", env="code")]) == [0.0]
