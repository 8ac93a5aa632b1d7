"""The report's figures, drawn with plotly and embedded as HTML fragments (plotly.js is inlined once).

Each function takes runs and returns one ``<div>`` with its script; :func:`plotly_js` gives the
library itself, so that the report opens with no network.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from agentgym.evaluation.metrics import pass_at_k

if TYPE_CHECKING:
    from agentgym.view.runs import Run
    from agentgym.view.stats import Comparison

HEIGHT = 340
CONFIG = {"displaylogo": False, "responsive": True}


@functools.cache
def plotly_js() -> str:
    """plotly.js, minified, from the installed plotly package (no CDN)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _html(fig: Any, div_id: str) -> str:
    fig.update_layout(height=HEIGHT, margin={"l": 50, "r": 20, "t": 40, "b": 40}, template="plotly_white")
    return str(fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=CONFIG))


def success_plot(runs: list[Run]) -> str:
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
    return _html(fig, "plot-success")


def components_plot(runs: list[Run]) -> str:
    """Mean reward and the mean of each reward component, per run."""
    import plotly.graph_objects as go

    names = ["reward", *sorted({k for r in runs for k in r.summary.reward_components})]
    fig = go.Figure([
        go.Bar(name=r.name, x=names,
               y=[r.summary.mean_reward, *(r.summary.reward_components.get(k) for k in names[1:])])
        for r in runs
    ])
    fig.update_layout(title="Reward per component (mean over episodes)", barmode="group")
    return _html(fig, "plot-components")


def histogram_plot(runs: list[Run], what: str) -> str:
    """Histogram of turns (``what="turns"``) or tokens per episode, one trace per run."""
    import plotly.graph_objects as go

    def value(t: Any) -> int:
        return len(t.turns) if what == "turns" else t.usage.prompt_tokens + t.usage.completion_tokens

    fig = go.Figure([go.Histogram(name=r.name, x=[value(t) for t in r.trajectories], opacity=0.65) for r in runs])
    fig.update_layout(title=f"{what.capitalize()} per episode", barmode="overlay",
                      xaxis_title=what, yaxis_title="episodes")
    return _html(fig, f"plot-{what}")


def pass_at_k_curve(run: Run) -> tuple[list[int], list[float]]:
    """Unbiased pass@k for k = 1 .. the fewest samples any task has, averaged over tasks."""
    by_task: dict[str, list[bool]] = {}
    for t in run.trajectories:
        by_task.setdefault(t.task_id, []).append(t.success)
    most = min(len(v) for v in by_task.values())
    ks = list(range(1, most + 1))
    return ks, [sum(pass_at_k(len(v), sum(v), k) for v in by_task.values()) / len(by_task) for k in ks]


def pass_at_k_plot(runs: list[Run]) -> str:
    """pass@k curves, one per run (a single point for runs with one sample per task)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for r in runs:
        ks, values = pass_at_k_curve(r)
        fig.add_trace(go.Scatter(name=r.name, x=ks, y=values, mode="lines+markers"))
    fig.update_layout(title="pass@k", xaxis={"title": "k", "dtick": 1}, yaxis={"range": [0, 1.05], "tickformat": ".0%"})
    return _html(fig, "plot-pass-at-k")


def wins_plot(comparisons: list[Comparison]) -> str:
    """Per-task wins, ties and losses of each compared pair, stacked."""
    import plotly.graph_objects as go

    labels = [f"{c.b} vs {c.a}" for c in comparisons]
    fig = go.Figure([
        go.Bar(name="second wins", x=labels, y=[c.wins_b for c in comparisons], marker_color="#2ca02c"),
        go.Bar(name="tie", x=labels, y=[c.ties for c in comparisons], marker_color="#bbbbbb"),
        go.Bar(name="first wins", x=labels, y=[c.wins_a for c in comparisons], marker_color="#d62728"),
    ])
    fig.update_layout(title="Per-task wins (mean reward over paired episodes)", barmode="stack", yaxis_title="tasks")
    return _html(fig, "plot-wins")
