"""The report's figures: plotly figures as JSON, drawn by the page once its layout exists.

Each function takes runs and returns a :class:`Figure` (or ``None`` with a reason when the data
has nothing to show: a histogram of a constant is one bar that says less than a sentence). The page
draws every figure after all of its grid cells exist, so each plot is sized for its own cell from
the start. :func:`plotly_js` gives the library itself, inlined once, so the report needs no network.

Nothing drawn depends on the samples per task beyond a bounded number of points: pass@k is
computed at :func:`k_values` (1, 2, 5, 10, 20, 50, ... and the largest k), never at every k.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentgym.evaluation.metrics import pass_at_k

if TYPE_CHECKING:
    from agentgym.types import Trajectory
    from agentgym.view.runs import Run
    from agentgym.view.stats import Comparison

HEIGHT = 340
CONFIG = {"displaylogo": False, "responsive": True}
DISTINCT_BARS = 12
"""At most this many distinct values are drawn as one bar each; more as a box plot per run."""


@dataclass(frozen=True)
class Figure:
    """One plot: its element id and plotly's JSON (``data`` and ``layout``) for ``Plotly.newPlot``."""

    id: str
    spec: dict[str, Any]


@functools.cache
def plotly_js() -> str:
    """plotly.js, minified, from the installed plotly package (no CDN)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _figure(fig: Any, div_id: str) -> Figure:
    fig.update_layout(height=HEIGHT, margin={"l": 50, "r": 20, "t": 40, "b": 40}, template="plotly_white")
    return Figure(id=div_id, spec=json.loads(fig.to_json()))


def success_plot(runs: list[Run]) -> Figure:
    """Success rate per run with its 95 % Wilson interval."""
    import plotly.graph_objects as go

    rates = [r.summary.success_rate for r in runs]
    fig = go.Figure(go.Bar(
        x=[r.name for r in runs], y=rates,
        error_y={"type": "data", "array": [r.summary.success_ci95[1] - p for r, p in zip(runs, rates, strict=True)],
                 "arrayminus": [p - r.summary.success_ci95[0] for r, p in zip(runs, rates, strict=True)]},
        hovertemplate="%{x}: %{y:.1%}<extra></extra>",
    ))
    fig.update_layout(title="Success rate (95% Wilson interval)", yaxis={"range": [0, 1.05], "tickformat": ".0%"})
    return _figure(fig, "plot-success")


def components_plot(runs: list[Run]) -> Figure | str:
    """Mean reward and the mean of each reward component, per run (none recorded: a reason)."""
    import plotly.graph_objects as go

    components = sorted({k for r in runs for k in r.summary.reward_components})
    if not components:
        return "Reward components: none recorded (the mean reward is in the summary)."
    names = ["reward", *components]
    fig = go.Figure([
        go.Bar(name=r.name, x=names,
               y=[r.summary.mean_reward, *(r.summary.reward_components.get(k) for k in components)])
        for r in runs
    ])
    fig.update_layout(title="Reward per component (mean over episodes)", barmode="group")
    return _figure(fig, "plot-components")


def episode_turns(t: Trajectory) -> int:
    return len(t.turns)


def episode_tokens(t: Trajectory) -> int:
    return t.usage.prompt_tokens + t.usage.completion_tokens


def distribution_plot(runs: list[Run], what: str, value: Callable[[Trajectory], int]) -> Figure | str:
    """How ``value`` (turns, tokens) is spread over each run's episodes, in the form that shows it.

    Every run constant: no plot, a sentence (one bar per run says nothing a number does not).
    Few distinct values: one bar per value and run (counts). Many: a box plot per run.
    """
    import plotly.graph_objects as go

    values = {r.name: [value(t) for t in r.trajectories] for r in runs}
    if all(len(set(v)) == 1 for v in values.values()):
        each = "; ".join(f"{v[0]:,} in every episode of {name}" for name, v in values.items())
        return f"{what.capitalize()} per episode: {each}."
    distinct = sorted({x for v in values.values() for x in v})
    if len(distinct) <= DISTINCT_BARS:
        fig = go.Figure([go.Bar(name=name, x=[str(x) for x in distinct], y=[Counter(v)[x] for x in distinct])
                         for name, v in values.items()])
        fig.update_layout(barmode="group", xaxis={"title": what, "type": "category"}, yaxis_title="episodes")
    else:
        fig = go.Figure([go.Box(name=name, y=v, boxmean=True, boxpoints=False) for name, v in values.items()])
        fig.update_layout(showlegend=False, yaxis_title=what)
    fig.update_layout(title=f"{what.capitalize()} per episode")
    return _figure(fig, f"plot-{what}")


def k_values(most: int) -> list[int]:
    """The k at which pass@k is drawn: 1, 2, 5, 10, 20, 50, ... below ``most``, then ``most``.

    About three points a decade, so 3,334 samples per task cost 12 points, not 3,334.
    """
    ks: list[int] = []
    scale = 1
    while scale <= most:
        ks += [k for k in (scale, 2 * scale, 5 * scale) if k < most]
        scale *= 10
    return [*ks, most]


def pass_at_k_curve(run: Run) -> tuple[list[int], list[float]]:
    """Unbiased pass@k, averaged over tasks, at :func:`k_values` up to the fewest samples any task has."""
    by_task: dict[str, list[bool]] = {}
    for t in run.trajectories:
        by_task.setdefault(t.task_id, []).append(t.success)
    counts = [(len(v), sum(v)) for v in by_task.values()]
    ks = k_values(min(n for n, _ in counts))
    return ks, [sum(pass_at_k(n, c, k) for n, c in counts) / len(counts) for k in ks]


def pass_at_k_plot(runs: list[Run]) -> Figure | str:
    """pass@k curves, one per run with several samples per task (none has: a reason)."""
    import plotly.graph_objects as go

    curves = {r.name: pass_at_k_curve(r) for r in runs}
    curves = {name: c for name, c in curves.items() if len(c[0]) > 1}
    if not curves:
        return "pass@k: one sample per task in every run, so pass@1 is the success rate (eval --samples N for more)."
    fig = go.Figure([go.Scatter(name=name, x=ks, y=values, mode="lines+markers")
                     for name, (ks, values) in curves.items()])
    most = max(ks[-1] for ks, _ in curves.values())
    xaxis: dict[str, Any] = {"title": "k"}
    if most > 20:
        xaxis.update(type="log")
    else:
        xaxis.update(dtick=1)
    fig.update_layout(title="pass@k", xaxis=xaxis, yaxis={"range": [0, 1.05], "tickformat": ".0%"})
    return _figure(fig, "plot-pass-at-k")


def run_plots(runs: list[Run]) -> tuple[list[Figure], list[str]]:
    """The plots section: the figures worth drawing, and a sentence for each one left out."""
    made = [success_plot(runs), components_plot(runs), distribution_plot(runs, "turns", episode_turns),
            distribution_plot(runs, "tokens", episode_tokens), pass_at_k_plot(runs)]
    return [f for f in made if isinstance(f, Figure)], [f for f in made if isinstance(f, str)]


def wins_plot(comparisons: list[Comparison]) -> Figure:
    """Per-task wins, ties and losses of each compared pair, stacked."""
    import plotly.graph_objects as go

    labels = [f"{c.b} vs {c.a}" for c in comparisons]
    fig = go.Figure([
        go.Bar(name="run wins", x=labels, y=[c.wins_b for c in comparisons], marker_color="#2ca02c"),
        go.Bar(name="tie", x=labels, y=[c.ties for c in comparisons], marker_color="#bbbbbb"),
        go.Bar(name="baseline wins", x=labels, y=[c.wins_a for c in comparisons], marker_color="#d62728"),
    ])
    fig.update_layout(title="Per-task wins (mean reward over paired episodes)", barmode="stack", yaxis_title="tasks")
    return _figure(fig, "plot-wins")
