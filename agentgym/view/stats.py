"""Paired comparisons of runs on the episodes they share: McNemar for success, permutation for reward.

Two runs are compared episode by episode: an episode of one pairs with the episode of the other
that has the same task and seed (``agentgym eval`` gives sample ``s`` of every task the seed
``seed + s``, so two runs made with the same ``--seed`` and ``--samples`` pair up completely).
Pairing removes the variance between tasks, which dominates, so that a real difference shows
with far fewer tasks than two independent success rates would need.

- Success: McNemar's test on the discordant pairs, exact (two-sided binomial) and as the
  continuity-corrected chi-square.
- Reward: a two-sided sign-flip permutation test of the mean paired difference (exact when
  few pairs differ, else Monte Carlo), with a paired bootstrap 95 % interval of the difference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentgym.types import Trajectory

#: Pairs that differ, at most, for which the permutation test enumerates every sign assignment.
EXACT_MAX = 16


@dataclass(frozen=True)
class McNemar:
    """McNemar's test for paired successes.

    Attributes:
        both: Pairs where both runs succeeded. ``neither``: where both failed.
        only_a: Pairs where only the first run succeeded. ``only_b``: only the second.
        exact_p: Two-sided exact p-value: a binomial test of ``only_a`` in ``only_a + only_b`` at 1/2.
        chi2: The continuity-corrected statistic ``(|only_a - only_b| - 1)² / (only_a + only_b)``.
        chi2_p: Its p-value under chi-square with one degree of freedom.
    """

    both: int
    only_a: int
    only_b: int
    neither: int
    exact_p: float
    chi2: float
    chi2_p: float


def mcnemar(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """McNemar's test on paired outcomes ``a[i]``, ``b[i]``."""
    if len(a) != len(b):
        raise ValueError(f"paired outcomes need equal lengths, got {len(a)} and {len(b)}")
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    both = sum(1 for x, y in zip(a, b, strict=True) if x and y)
    n = only_a + only_b
    if n == 0:
        exact_p, chi2, chi2_p = 1.0, 0.0, 1.0
    else:
        tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
        exact_p = min(1.0, 2 * tail / 2**n)
        chi2 = max(0, abs(only_a - only_b) - 1) ** 2 / n
        chi2_p = math.erfc(math.sqrt(chi2 / 2))  # the chi-square(1) survival function
    return McNemar(both=both, only_a=only_a, only_b=only_b, neither=len(a) - n - both,
                   exact_p=exact_p, chi2=chi2, chi2_p=chi2_p)


@dataclass(frozen=True)
class PairedTest:
    """A paired test of mean rewards.

    Attributes:
        n: Pairs.
        mean_a, mean_b: Mean reward of each run over the pairs.
        mean_diff: ``mean_b - mean_a``.
        p_value: Two-sided p-value of the sign-flip permutation test of ``mean_diff``.
        exact: Whether every sign assignment was enumerated (else ``resamples`` random ones).
        resamples: Random sign assignments (and bootstrap resamples) drawn.
        ci95: Paired bootstrap 95 % percentile interval of ``mean_diff``.
    """

    n: int
    mean_a: float
    mean_b: float
    mean_diff: float
    p_value: float
    exact: bool
    resamples: int
    ci95: tuple[float, float]


BLOCK = 2_000_000
"""Random draws held at once by a resampling loop: 10,000 resamples of 10,000 pairs would be 800 MB."""


def _in_blocks(resamples: int, width: int, draw: Callable[[int], Any]) -> Any:
    """``draw(rows)`` for blocks of rows, concatenated: one row per resample, at most :data:`BLOCK` values a block.

    The generator's stream is drawn in the same order as in one block, so the results do not change.
    """
    import numpy as np

    step = max(1, BLOCK // max(1, width))
    return np.concatenate([draw(min(step, resamples - start)) for start in range(0, resamples, step)])


def paired_permutation(
    a: Sequence[float], b: Sequence[float], *, resamples: int = 10_000, seed: int = 0
) -> PairedTest:
    """Sign-flip permutation test of the mean of ``b[i] - a[i]``, two-sided.

    Under the null hypothesis each pair's two rewards are exchangeable, so each difference is as
    likely to have either sign. The p-value is the share of sign assignments whose mean is at
    least as far from zero as the observed one (with scipy's tolerance for float ties), counted
    over all ``2^k`` assignments when ``k <= EXACT_MAX`` pairs differ, else estimated from
    ``resamples`` random ones as ``(hits + 1) / (resamples + 1)``. Pairs that do not differ
    flip to themselves and leave the share unchanged, so they are left out of the enumeration.
    """
    import numpy as np

    if len(a) != len(b):
        raise ValueError(f"paired rewards need equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return PairedTest(n=0, mean_a=0.0, mean_b=0.0, mean_diff=0.0, p_value=1.0, exact=True, resamples=0,
                          ci95=(0.0, 0.0))
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = xb - xa
    observed = float(diff.mean())
    nonzero = diff[diff != 0]
    k = len(nonzero)
    rng = np.random.default_rng(seed)
    exact = k <= EXACT_MAX
    if k == 0:
        p_value = 1.0
    else:
        if exact:
            codes = np.arange(2**k, dtype=np.int64)[:, None] >> np.arange(k, dtype=np.int64) & 1
            null = ((1.0 - 2.0 * codes) * nonzero).sum(axis=1) / n
        else:
            null = _in_blocks(resamples, k, lambda rows: (rng.choice([-1.0, 1.0], size=(rows, k)) * nonzero)
                              .sum(axis=1) / n)
        gamma = abs(observed) * np.finfo(float).eps * 100  # scipy's slack for float ties
        greater = int((null >= observed - gamma).sum())
        less = int((null <= observed + gamma).sum())
        if exact:
            p_value = min(1.0, 2 * min(greater, less) / len(null))
        else:
            p_value = min(1.0, 2 * (min(greater, less) + 1) / (resamples + 1))
    boot = _in_blocks(resamples, n, lambda rows: diff[rng.integers(0, n, size=(rows, n))].mean(axis=1))
    low, high = np.percentile(boot, [2.5, 97.5])
    return PairedTest(n=n, mean_a=float(xa.mean()), mean_b=float(xb.mean()), mean_diff=observed,
                      p_value=float(p_value), exact=exact, resamples=0 if exact and k else resamples,
                      ci95=(float(low), float(high)))


@dataclass(frozen=True)
class TaskDiff:
    """One shared task: each run's mean reward and success rate over the task's paired episodes."""

    task_id: str
    reward_a: float
    reward_b: float
    success_a: float
    success_b: float


@dataclass(frozen=True)
class Comparison:
    """Run ``b`` against run ``a`` on their shared episodes.

    Attributes:
        a, b: The runs' names.
        pairs: Episodes paired by (task, seed).
        tasks: Shared tasks, one row each.
        wins_a, wins_b, ties: Tasks where ``a``'s mean reward is higher, ``b``'s is, or neither.
        success: McNemar's test on the pairs' successes.
        reward: The permutation test on the pairs' rewards.
    """

    a: str
    b: str
    pairs: int
    tasks: list[TaskDiff] = field(repr=False)
    wins_a: int
    wins_b: int
    ties: int
    success: McNemar
    reward: PairedTest


def pair_episodes(
    a: Sequence[Trajectory], b: Sequence[Trajectory]
) -> list[tuple[Trajectory, Trajectory]]:
    """Episodes of ``a`` and ``b`` with the same task and seed, in ``a``'s order (a repeat keeps the last)."""
    by_key = {(t.task_id, t.seed): t for t in b}
    mine = {(t.task_id, t.seed): t for t in a}
    return [(t, by_key[key]) for key, t in mine.items() if key in by_key]


def compare(
    a: Sequence[Trajectory], b: Sequence[Trajectory], *, names: tuple[str, str] = ("a", "b"), seed: int = 0
) -> Comparison:
    """Compare run ``b`` with run ``a`` on their paired episodes (see the module's docstring)."""
    pairs = pair_episodes(a, b)
    per_task: dict[str, list[tuple[Trajectory, Trajectory]]] = {}
    for x, y in pairs:
        per_task.setdefault(x.task_id, []).append((x, y))
    tasks = []
    for task_id, group in per_task.items():
        m = len(group)
        tasks.append(TaskDiff(
            task_id=task_id,
            reward_a=sum(x.reward for x, _ in group) / m, reward_b=sum(y.reward for _, y in group) / m,
            success_a=sum(x.success for x, _ in group) / m, success_b=sum(y.success for _, y in group) / m,
        ))
    return Comparison(
        a=names[0], b=names[1], pairs=len(pairs), tasks=tasks,
        wins_a=sum(t.reward_a > t.reward_b for t in tasks), wins_b=sum(t.reward_b > t.reward_a for t in tasks),
        ties=sum(t.reward_a == t.reward_b for t in tasks),
        success=mcnemar([x.success for x, _ in pairs], [y.success for _, y in pairs]),
        reward=paired_permutation([x.reward for x, _ in pairs], [y.reward for _, y in pairs], seed=seed),
    )
