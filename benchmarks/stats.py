"""Percentiles and the median-with-range of repeated runs, as every benchmark script reports them.

One run on a shared 2-core machine is noisy, so scripts repeat a measurement and report the median
of the runs with their lowest and highest value, never a single run.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile with linear interpolation (numpy's default); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median, lowest and highest of repeated runs' values."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The :func:`spread` of every number the runs share (nested dicts too, e.g. a CPU breakdown)."""
    out: dict[str, Any] = {}
    for key, first in runs[0].items():
        if isinstance(first, bool):
            continue
        if isinstance(first, int | float):
            out[key] = spread([r[key] for r in runs])
        elif isinstance(first, dict):
            out[key] = summarize([r[key] for r in runs])
    return out


def fmt(s: dict[str, float], form: str = "{:.0f}") -> str:
    """``median (min–max)`` of a :func:`spread`."""
    return f"{form.format(s['median'])} ({form.format(s['min'])}–{form.format(s['max'])})"
