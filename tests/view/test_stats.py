"""The comparison's statistics against scipy's, on a constructed pair of runs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sp

from agentgym.types import Trajectory
from agentgym.view.stats import EXACT_MAX, compare, mcnemar, paired_permutation


def episode(task: str, seed: int, reward: float, success: bool) -> Trajectory:
    return Trajectory(task_id=task, env="code", seed=seed, reward=reward, outcome_reward=1.0 if success else 0.0)


def constructed_pair() -> tuple[list[Trajectory], list[Trajectory]]:
    """40 tasks × 2 seeds; run b solves more; a has 3 episodes b lacks and b one that a lacks."""
    rng = np.random.default_rng(7)
    a, b = [], []
    for i in range(40):
        for seed in (0, 1):
            sa, sb = rng.random() < 0.45, rng.random() < 0.7
            a.append(episode(f"t{i}", seed, float(sa) + rng.normal(0, 0.1), sa))
            b.append(episode(f"t{i}", seed, float(sb) + rng.normal(0.05, 0.1), sb))
    a += [episode("only-a", s, 1.0, True) for s in range(3)]
    b.append(episode("only-b", 0, 0.0, False))
    return a, b


def test_mcnemar_on_constructed_runs_matches_scipy():
    a, b = constructed_pair()
    c = compare(a, b, names=("base", "new"))
    assert c.pairs == 80 and len(c.tasks) == 40  # the unpaired episodes are left out
    m = c.success
    assert m.both + m.only_a + m.only_b + m.neither == 80
    assert m.only_b > m.only_a > 0
    assert m.exact_p == pytest.approx(sp.binomtest(m.only_a, m.only_a + m.only_b, 0.5).pvalue, rel=1e-12)
    chi2 = (abs(m.only_a - m.only_b) - 1) ** 2 / (m.only_a + m.only_b)
    assert m.chi2 == pytest.approx(chi2) and m.chi2_p == pytest.approx(sp.chi2.sf(chi2, 1), rel=1e-9)
    assert c.wins_a + c.wins_b + c.ties == 40 and c.wins_b > c.wins_a


def test_mcnemar_edges():
    same = mcnemar([True, False, True], [True, False, True])
    assert (same.exact_p, same.chi2_p, same.only_a, same.only_b) == (1.0, 1.0, 0, 0)
    one_sided = mcnemar([False] * 12, [True] * 12)
    assert one_sided.exact_p == pytest.approx(sp.binomtest(0, 12, 0.5).pvalue)
    with pytest.raises(ValueError):
        mcnemar([True], [True, False])


def test_permutation_exact_matches_scipy_exact():
    rng = np.random.default_rng(3)
    a = rng.random(15)
    b = a + rng.normal(0.15, 0.3, 15)
    b[:2] = a[:2]  # equal pairs flip to themselves
    mine = paired_permutation(a, b)
    theirs = sp.permutation_test((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), vectorized=True,
                                 permutation_type="samples", n_resamples=np.inf)
    assert mine.exact and mine.n == 15
    assert mine.mean_diff == pytest.approx(theirs.statistic)
    assert mine.p_value == pytest.approx(theirs.pvalue, rel=1e-12)
    assert mine.ci95[0] < mine.mean_diff < mine.ci95[1]


def test_permutation_monte_carlo_agrees_with_scipy():
    rng = np.random.default_rng(11)
    xa = rng.random(60)
    xb = xa + rng.normal(0.02, 0.25, 60)  # a small effect: p far from 0 and 1, so agreement means something
    mine = paired_permutation(xa, xb, resamples=20_000)
    theirs = sp.permutation_test((xa, xb), lambda x, y, axis: np.mean(y - x, axis=axis), vectorized=True,
                                 permutation_type="samples", n_resamples=20_000, random_state=1)
    assert not mine.exact and mine.resamples == 20_000 and 60 > EXACT_MAX
    assert mine.mean_diff == pytest.approx(theirs.statistic)
    assert 0.05 < theirs.pvalue < 0.8
    assert mine.p_value == pytest.approx(theirs.pvalue, abs=0.015)  # two Monte Carlo estimates, sd < 0.004 each
    assert mine.ci95[0] < mine.mean_diff < mine.ci95[1]


def test_no_shared_episodes():
    c = compare([episode("x", 0, 1.0, True)], [episode("y", 0, 1.0, True)])
    assert c.pairs == 0 and c.reward.p_value == 1.0 and c.success.exact_p == 1.0


def test_resampling_in_blocks_changes_nothing(monkeypatch):
    """Large runs resample in blocks (bounded memory); the random stream and so the results are the same."""
    from agentgym.view import stats

    rng = np.random.default_rng(5)
    a = rng.random(400)
    b = a + rng.normal(0.02, 0.3, 400)
    whole = paired_permutation(a, b, resamples=3_000)
    monkeypatch.setattr(stats, "BLOCK", 1_000)  # 2 resamples a block
    assert paired_permutation(a, b, resamples=3_000) == whole
