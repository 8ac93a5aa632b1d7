"""Which runs of a report are compared with which: runs of one env, never across envs.

A paired comparison means something only between runs that ran the same tasks, so runs are grouped
by env first (a code run and a search run share no task). Within an env, every run is compared with
the user's baseline when it is one of them (``agentgym view --baseline NAME``), else every pair of
runs is compared, the earlier run (in the order given) as the baseline of the pair.
"""

from __future__ import annotations

from itertools import combinations

from agentgym.errors import DataError
from agentgym.view.runs import Run


def by_env(runs: list[Run]) -> dict[str, list[Run]]:
    """Runs grouped by their env (a run of several envs is its own group, named ``a+b``), in order."""
    groups: dict[str, list[Run]] = {}
    for r in runs:
        groups.setdefault(r.summary.env, []).append(r)
    return groups


def pairings(runs: list[Run], baseline: str | None = None) -> list[tuple[Run, Run]]:
    """The (baseline, run) pairs to compare, env by env (see the module's docstring).

    Raises:
        DataError: ``baseline`` names no run of the report.
    """
    names = [r.name for r in runs]
    if baseline is not None and baseline not in names:
        raise DataError(f"--baseline {baseline}: no such run (the runs are: {', '.join(names)})")
    pairs: list[tuple[Run, Run]] = []
    for group in by_env(runs).values():
        base = next((r for r in group if r.name == baseline), None)
        if base is not None:
            pairs += [(base, r) for r in group if r is not base]
        else:
            pairs += list(combinations(group, 2))
    return pairs
