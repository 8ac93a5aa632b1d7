"""Group-relative rewards and advantages: what needs the other rollouts of the same task.

GRPO samples a group of rollouts per task and compares them. Some rewards are only defined against
that group, and some advantages only make sense per component of it:

- :func:`component_advantages` normalises each named reward component within its group and sums the
  results with weights (GDPO / MARBLE; the formula of TRL's ``multi_objective_aggregation=
  "normalize_then_sum"``), so a component on a 100x larger scale cannot drown a small one, as it
  does when the weighted sum is normalised (:func:`summed_advantages`, GRPO's default);
- :func:`zero_signal_groups` finds the groups whose rewards are all equal, which give GRPO no
  gradient at all (DAPO's dynamic sampling replaces them; see ``agentgym.trl``);
- :func:`median_tool_efficiency` rewards fewer tool calls than the group's median, gated on
  correctness (TGRL's tool-efficiency term);
- :func:`unit_test_weights` and :func:`weighted_test_credit` give partial credit by unit
  tests, each test weighted by how rarely the group passes it (VeRPO); :func:`group_test_credit`
  reads the code env's per-test results off a group's trajectories.

Groups are consecutive rows of ``group_size``, the layout TRL uses. Rows that are ``None`` (a
crashed episode) are left out of their group's statistics and get advantage 0, as TRL does.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from agentgym.types import Trajectory

EPS = 1e-4
"""Added to a standard deviation before dividing by it (TRL's value)."""


def _groups(n: int, group_size: int) -> range:
    if group_size < 1 or n % group_size:
        raise ValueError(f"batch of {n} is not a whole number of groups of {group_size}")
    return range(0, n, group_size)


def _std(values: Sequence[float]) -> float:
    """Sample standard deviation (Bessel's correction, as TRL's ``nanstd``); 0 for fewer than two values."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _normalised(values: Sequence[float | None], group_size: int) -> list[float | None]:
    out: list[float | None] = [None] * len(values)
    for g in _groups(len(values), group_size):
        kept = [v for v in values[g:g + group_size] if v is not None]
        if not kept:
            continue
        mean, std = sum(kept) / len(kept), _std(kept)
        for i in range(g, g + group_size):
            v = values[i]
            out[i] = None if v is None else (v - mean) / (std + EPS)
    return out


def component_advantages(
    rows: Sequence[Mapping[str, float] | None],
    weights: Mapping[str, float],
    *,
    group_size: int,
    batch_normalise: bool = True,
) -> list[float]:
    """Per-rollout advantages from per-component rewards normalised within each group, then weighted.

    ``A_i = Σ_c w_c · (r_{i,c} − mean_g(r_c)) / (std_g(r_c) + ε)``, then (``batch_normalise``, as TRL
    does after the sum) standardised over the batch. A component missing from a row counts as absent
    for that row (left out of its group's mean and std).

    Args:
        rows: Each rollout's components (``trajectory.reward_components``), ``None`` for a crash.
        weights: Weight per component; components not named here are ignored.
        group_size: Rollouts per task (consecutive rows).
        batch_normalise: Standardise the weighted sums over the batch, as TRL's ``normalize_then_sum``.
    """
    if not weights:
        raise ValueError("component_advantages needs at least one weighted component")
    sums: list[float | None] = [None if r is None else 0.0 for r in rows]
    for name, weight in weights.items():
        column = [None if r is None else r.get(name) for r in rows]
        for i, z in enumerate(_normalised(column, group_size)):
            if z is not None and sums[i] is not None:
                sums[i] = (sums[i] or 0.0) + weight * z
    kept = [s for s in sums if s is not None]
    if batch_normalise and kept:
        mean, std = sum(kept) / len(kept), _std(kept)
        return [0.0 if s is None else (s - mean) / (std + EPS) for s in sums]
    return [0.0 if s is None else s for s in sums]


def summed_advantages(rows: Sequence[Mapping[str, float] | None], weights: Mapping[str, float], *,
                      group_size: int) -> list[float]:
    """GRPO's default for comparison: the weighted sum of components, normalised within each group."""
    totals = [None if r is None else sum(w * r.get(n, 0.0) for n, w in weights.items()) for r in rows]
    return [0.0 if z is None else z for z in _normalised(totals, group_size)]


def zero_signal_groups(rewards: Sequence[float | Sequence[float] | None], *, group_size: int,
                       tolerance: float = 1e-9) -> list[bool]:
    """For each group, whether it carries no learning signal: every scored rollout's reward is the same.

    A reward may be a vector (one entry per weighted component): the group is zero-signal only when
    every entry is constant across it. A group with fewer than two scored rollouts has no signal.
    """
    out = []
    for g in _groups(len(rewards), group_size):
        kept = [r for r in rewards[g:g + group_size] if r is not None]
        vectors = [[float(r)] if isinstance(r, int | float) else [float(x) for x in r] for r in kept]
        flat = len(vectors) < 2 or all(
            max(column) - min(column) <= tolerance for column in zip(*vectors, strict=True))
        out.append(flat)
    return out


def median_tool_efficiency(calls: Sequence[int], correct: Sequence[float]) -> list[float]:
    """Per rollout of one group: ``correct × min(1, median / calls)`` over the group's correct rollouts' calls.

    A right answer reached with no more calls than the group's correct rollouts' median scores 1;
    with twice as many, 0.5. A wrong answer scores 0 however few calls it made, so doing nothing
    never pays. When no rollout is correct, every score is 0.
    """
    if len(calls) != len(correct):
        raise ValueError("calls and correct differ in length")
    right = [c for c, y in zip(calls, correct, strict=True) if y > 0]
    if not right:
        return [0.0] * len(calls)
    median = statistics.median(right)
    return [max(0.0, min(1.0, y)) * (1.0 if c <= median else median / c) for c, y in zip(calls, correct, strict=True)]


def unit_test_weights(results: Sequence[Sequence[bool]], *, floor: float = 0.0) -> list[float]:
    """One weight per test from the group's pass rates: ``1 − pass_rate`` (harder tests weigh more).

    A test every rollout passes weighs ``floor`` (it separates no one); weights are normalised to sum
    to 1, and are uniform when every test is passed by all (nothing to tell apart).

    Args:
        results: ``results[i][t]``: whether rollout ``i`` passed test ``t``; every row the same length.
        floor: The least weight a test gets.
    """
    if not results:
        return []
    width = len(results[0])
    if any(len(r) != width for r in results):
        raise ValueError("every rollout must report the same tests")
    rates = [sum(r[t] for r in results) / len(results) for t in range(width)]
    raw = [max(floor, 1.0 - p) for p in rates]
    total = sum(raw)
    return [w / total for w in raw] if total > 0 else [1.0 / width] * width


def weighted_test_credit(results: Sequence[Sequence[bool]], *, floor: float = 0.0) -> list[float]:
    """Per rollout: the difficulty-weighted share of tests passed (VeRPO-style partial credit).

    Beside ``tests_passed_fraction`` (every test alike), this pays more for the test few rollouts
    pass: passing only the easy tests every rollout passes earns nothing beyond ``floor``.
    """
    weights = unit_test_weights(results, floor=floor)
    return [math.fsum(w for w, passed in zip(weights, r, strict=True) if passed) for r in results]


def group_test_credit(trajectories: Sequence[Trajectory], *, floor: float = 0.0) -> list[float]:
    """:func:`weighted_test_credit` for a group of code-env episodes, read off ``trajectory.info["tests"]``.

    The code env's verifier records one ``{"test", "passed"}`` per test there. Tests are matched by
    their text across the group; a test an episode has no result for (it submitted nothing, or its
    run stopped early) counts as failed, so submitting nothing earns 0.
    """
    per_episode = [{str(t["test"]): bool(t.get("passed")) for t in tr.info.get("tests") or []} for tr in trajectories]
    names = sorted({name for results in per_episode for name in results})
    if not names:
        return [0.0] * len(trajectories)
    return weighted_test_credit([[results.get(n, False) for n in names] for results in per_episode], floor=floor)
