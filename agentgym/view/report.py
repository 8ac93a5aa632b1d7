"""The HTML report: one self-contained file with the summary, plots, comparisons and every episode.

What a person reads first (summaries, costs, failures, comparisons) is rendered here as HTML.
Episodes are not: their index (one short row each) is embedded as JSON, and the trajectories
themselves as gzip-compressed JSON in chunks of :data:`CHUNK` episodes, one ``<script>`` tag each.
The page's script lists the index a page at a time and decompresses a chunk only when one of its
episodes is opened (``DecompressionStream``), so 10,000 episodes cost a page of rows in the DOM, not
10,000 rendered chats. Untrusted text (model output, tool output) reaches the DOM as text nodes only.

Plots are embedded as plotly JSON beside empty cells, and drawn by the page once every cell exists
(a plot drawn by its own inline script, before the next cell existed, took the page's whole width).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import html
import json
import re
from collections import Counter
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from agentgym.errors import DataError, reason_line
from agentgym.evaluation.metrics import cost_text
from agentgym.types import Trajectory
from agentgym.view import plots
from agentgym.view.pairing import by_env, pairings
from agentgym.view.runs import Run
from agentgym.view.stats import Comparison, compare

CHUNK = 100
"""Episodes per compressed chunk: opening one episode decompresses this many."""

_PLACEHOLDER = re.compile(r"/\*@(\w+)@\*/")


def judge_calls(trajectory: Trajectory) -> int:
    """LLM-judge requests spent scoring an episode, read from the reward info ``LLMJudge`` leaves.

    A judge records ``attempts`` (requests made) beside its ``reasoning`` or ``error``, at the top
    of the trajectory's info or under its criterion's name inside a rubric's.
    """

    def walk(value: Any) -> int:
        if not isinstance(value, dict):
            return 0
        own = value.get("attempts") if ("reasoning" in value or "error" in value) else None
        count = own if isinstance(own, int) and not isinstance(own, bool) else 0
        return count + sum(walk(v) for v in value.values())

    return walk(trajectory.info)


def failure_reason(trajectory: Trajectory) -> str | None:
    """The failure as one short line that keeps its cause (:func:`~agentgym.errors.reason_line`):
    episodes that failed alike group together."""
    return reason_line(trajectory.failure) if trajectory.failure else None


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _pct(x: float) -> str:
    return f"{x:.1%}"


def _table(table_id: str, head: list[str], rows: Iterable[list[str]], *, raw: bool = False,
           ids: tuple[int, ...] = (0,)) -> str:
    """An HTML table; cells are escaped unless ``raw`` (for cells built here from escaped parts).

    Columns ``ids`` hold names (runs, envs) that may break anywhere to fit a narrow page; other
    cells break between words only.
    """
    cell = (lambda c: c) if raw else _e

    def td(i: int, c: str) -> str:
        return f'<td class="id">{cell(c)}</td>' if i in ids else f"<td>{cell(c)}</td>"

    body = "".join("<tr>" + "".join(td(i, c) for i, c in enumerate(row)) + "</tr>" for row in rows)
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    return f'<table id="{table_id}" class="grid"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def summary_section(runs: list[Run]) -> str:
    ks = sorted({k for r in runs for k in r.summary.pass_at_k}, key=int)
    head = ["run", "env", "policy", "episodes", "success", "95% CI", "mean reward", "mean turns",
            *(f"pass@{k}" for k in ks), "outcomes"]
    rows = []
    for r in runs:
        s = r.summary
        lo, hi = s.success_ci95
        rows.append([r.name, s.env, s.policy, str(s.episodes), f"{s.successes}/{s.episodes} = {_pct(s.success_rate)}",
                     f"{_pct(lo)} – {_pct(hi)}", f"{s.mean_reward:.4f}", f"{s.mean_turns:.2f}",
                     *(_pct(s.pass_at_k[k]) if k in s.pass_at_k else "–" for k in ks),
                     ", ".join(f"{k} {v}" for k, v in sorted(s.outcomes.items()))])
    return _table("summary-table", head, rows, ids=(0, 1, 2))


def components_section(runs: list[Run]) -> str:
    """Mean reward components, a table per env: each env's rubric has its own components."""
    if not any(r.summary.reward_components for r in runs):
        return "<p>No reward components recorded.</p>"
    groups = by_env(runs)
    parts = []
    for k, (env, group) in enumerate(groups.items()):
        names = sorted({c for r in group for c in r.summary.reward_components})
        if len(groups) > 1:
            parts.append(f'<h3 class="env-head">{_e(env)}</h3>')
        if not names:
            parts.append("<p>No reward components recorded.</p>")
            continue
        rows = [[r.name, *(f"{r.summary.reward_components[c]:.4f}" if c in r.summary.reward_components else "–"
                           for c in names)] for r in group]
        parts.append(_table("components-table" if k == 0 else f"components-table-{k}", ["run", *names], rows))
    return "".join(parts)


def tool_errors_section(runs: list[Run]) -> str:
    kinds = sorted({k for r in runs for k in r.summary.tool_errors})
    if not kinds:
        return "<p>No tool errors.</p>"
    rows = [[r.name, *(str(r.summary.tool_errors.get(k, 0)) for k in kinds)] for r in runs]
    return _table("tool-errors-table", ["run", *kinds], rows)


def cost_section(runs: list[Run]) -> str:
    head = ["run", "prompt tokens", "completion tokens", "cost (USD)", "sandbox seconds", "judge calls",
            "retries", "wall seconds"]
    rows = []
    for r in runs:
        s = r.summary
        cost = cost_text(s.cost_usd, s.unpriced_calls)
        rows.append([r.name, f"{s.prompt_tokens:,}", f"{s.completion_tokens:,}", cost,
                     f"{s.sandbox_seconds:.1f}", str(sum(judge_calls(t) for t in r.trajectories)),
                     str(s.retries), f"{s.wall_seconds:.1f}"])
    return _table("cost-table", head, rows)


def failures_section(runs: list[Run]) -> str:
    rows = []
    for i, r in enumerate(runs):
        counts = Counter(reason for t in r.trajectories if (reason := failure_reason(t)))
        for reason, n in counts.most_common():
            link = (f'<a href="#" class="failure-link" data-run="{i}" data-failure="{_e(reason)}">'
                    f"show episodes</a>")
            rows.append([_e(r.name), str(n), f"<code>{_e(reason)}</code>", link])
    if not rows:
        unsuccessful = sum(not t.success for r in runs for t in r.trajectories)
        if not unsuccessful:
            return "<p>No failed episodes.</p>"
        total = sum(len(r.trajectories) for r in runs)
        return (f"<p>No episode ended in an error, but {unsuccessful} of {total} did not succeed: "
                "the episode list has their rewards and conversations.</p>")
    return _table("failures-table", ["run", "episodes", "reason", ""], rows, raw=True)


def baseline_note(env: str, names: list[str], baseline: str | None) -> str:
    """How an env's runs were paired, for its heading: with the chosen baseline, or pairwise and why."""
    if baseline is None:
        return f"{env}: pairwise, the earlier run of each pair as its baseline"
    if baseline in names:
        return f"{env}: each run against the baseline {baseline} (--baseline)"
    return (f"{env}: pairwise, the earlier run of each pair as its baseline "
            f"(--baseline {baseline} is not a run of this env)")


def comparison_section(comparisons: list[Comparison], envs: dict[str, str],
                       baseline: str | None = None) -> tuple[str, list[plots.Figure]]:
    """The comparison table, a row per compared pair under its env's heading, and the wins plot's figure.

    The heading says how that env's runs were paired, naming the baseline the user chose (or why it
    was not used there); each row names its run and its baseline.
    """
    if not comparisons:
        return ("<p>Nothing to compare: a comparison pairs runs of one env, and no env has two runs here.</p>",
                [])
    head = ["run vs baseline", "paired episodes", "tasks: run wins / ties / baseline wins",
            "success: only baseline / only run", "McNemar p: exact (χ², p)",
            "mean reward: baseline → run, Δ (95% bootstrap CI)", "permutation p"]
    rows = []
    env = None
    for c in comparisons:
        if envs[c.b] != env:
            env = envs[c.b]
            note = baseline_note(env, [name for name, e in envs.items() if e == env], baseline)
            rows.append(f'<tr class="env-row"><th colspan="{len(head)}">{_e(note)}</th></tr>')
        cells = [f'<td class="id">{_e(f"{c.b} vs {c.a}")}</td>']
        if not c.pairs:
            cells += ["<td>0: no task and seed in common</td>", *["<td>–</td>"] * (len(head) - 2)]
        else:
            m, p = c.success, c.reward
            kind = "exact" if p.exact else f"{p.resamples:,} resamples"
            cells += [f"<td>{_e(v)}</td>" for v in (
                str(c.pairs), f"{c.wins_b} / {c.ties} / {c.wins_a}", f"{m.only_a} / {m.only_b}",
                f"{m.exact_p:.4g} (χ² {m.chi2:.3f}, p {m.chi2_p:.4g})",
                f"{p.mean_a:.4f} → {p.mean_b:.4f}, Δ {p.mean_diff:+.4f} ({p.ci95[0]:+.4f}, {p.ci95[1]:+.4f})",
                f"{p.p_value:.4g} ({kind})")]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    table = (f'<table id="comparison-table" class="grid"><thead><tr>{header}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table>')
    note = ("<p class='note'>Runs are compared within an env only: with the baseline when one is named "
            "(<code>--baseline</code>), else pair by pair. Episodes pair by task and seed. McNemar's test uses "
            "the pairs where exactly one run succeeded; the permutation test flips the sign of each paired "
            "reward difference.</p>")
    paired = [c for c in comparisons if c.pairs]
    figures = [plots.wins_plot(paired)] if paired else []
    return table + note + "".join(_plot_cell(f) for f in figures), figures


def episode_index(runs: list[Run]) -> dict[str, list[Any]]:
    """One short row per episode, column by column (compact JSON, quick to filter in the page)."""
    columns: dict[str, list[Any]] = {k: [] for k in
                                     ("run", "task", "seed", "outcome", "success", "reward", "turns", "tokens",
                                      "errors", "failure")}
    for i, r in enumerate(runs):
        for t in r.trajectories:
            columns["run"].append(i)
            columns["task"].append(t.task_id)
            columns["seed"].append(t.seed)
            columns["outcome"].append(t.outcome)
            columns["success"].append(int(t.success))
            columns["reward"].append(round(t.reward, 6))
            columns["turns"].append(len(t.turns))
            columns["tokens"].append(t.usage.prompt_tokens + t.usage.completion_tokens)
            columns["errors"].append(sum(t.tool_errors.values()))
            columns["failure"].append(failure_reason(t))
    return columns


def natural_key(text: str) -> list[Any]:
    """Sort key that orders the numbers inside ids by value: ``task/2`` before ``task/10``."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)]


def task_table(runs: list[Run]) -> dict[str, Any]:
    """Per task and run: episodes, successes, mean reward (``null`` where a run lacks it), env by env.

    Tasks are grouped by env (in the order the runs first show it), then in task-id order. ``env``
    gives each task's group in ``envs``, whose ``runs`` are the runs with an episode of that env: the
    page shows a table per env with those runs as its columns, so a code run's column never fills a
    search task's row with dashes.
    """
    stats: list[dict[tuple[str, str], list[float]]] = []
    order: dict[str, int] = {}
    for r in runs:
        acc: dict[tuple[str, str], list[float]] = {}
        for t in r.trajectories:
            order.setdefault(t.env, len(order))
            row = acc.setdefault((t.env, t.task_id), [0, 0, 0.0])
            row[0] += 1
            row[1] += t.success
            row[2] += t.reward
        stats.append(acc)
    keys = sorted({k for s in stats for k in s}, key=lambda k: (order[k[0]], natural_key(k[1])))
    cells = [[[int(s[k][0]), int(s[k][1]), round(s[k][2] / s[k][0], 6)] if k in s else None for s in stats]
             for k in keys]
    envs = [{"env": env, "runs": [i for i, s in enumerate(stats) if any(k[0] == env for k in s)]} for env in order]
    return {"tasks": [k[1] for k in keys], "env": [order[k[0]] for k in keys], "envs": envs, "cells": cells}


def chunks(runs: list[Run]) -> list[str]:
    """The trajectories, in index order, as base64 gzip JSON arrays of :data:`CHUNK` each."""
    flat = [t for r in runs for t in r.trajectories]
    out = []
    for start in range(0, len(flat), CHUNK):
        body = "[" + ",".join(t.model_dump_json() for t in flat[start:start + CHUNK]) + "]"
        out.append(base64.b64encode(gzip.compress(body.encode("utf-8"), compresslevel=6, mtime=0)).decode())
    return out


def _script_json(data: object) -> str:
    """JSON safe inside a ``<script>`` element: no ``<`` can close it."""
    return json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")


def _asset(name: str) -> str:
    return resources.files("agentgym.view").joinpath("assets", name).read_text(encoding="utf-8")


def _plot_cell(figure: plots.Figure) -> str:
    """An empty cell for a figure: the page draws it once every cell exists (so each is sized right)."""
    return f'<div class="plot" id="{_e(figure.id)}"></div>'


def report_title(runs: list[Run]) -> str:
    """The runs' names while they fit a line, else their count: the sticky header stays one line high."""
    names = ", ".join(r.name for r in runs)
    if len(runs) <= 2 and len(names) <= 60:
        return f"agentgym report: {names}"
    envs = by_env(runs)
    return f"agentgym report: {len(runs)} runs of {len(envs)} env{'s' if len(envs) > 1 else ''}"


def build_report(runs: list[Run], *, title: str | None = None, baseline: str | None = None) -> str:
    """The report's HTML for ``runs``: runs of one env are compared with ``baseline`` (a run's name) or pairwise.

    Raises:
        DataError: ``baseline`` names no run.
    """
    comparisons = [compare(a.trajectories, b.trajectories, names=(a.name, b.name)) for a, b in pairings(runs, baseline)]
    figures, left_out = plots.run_plots(runs)
    comparison, wins = comparison_section(comparisons, {r.name: r.summary.env for r in runs}, baseline)
    notes = "".join(f"<p class='note'>{_e(n)}</p>" for n in left_out)
    sections = {
        "SUMMARY": summary_section(runs),
        "PLOTS": '<div class="plots">' + "".join(_plot_cell(f) for f in figures) + "</div>" + notes,
        "COMPARISON": comparison,
        "COMPONENTS": components_section(runs),
        "TOOL_ERRORS": tool_errors_section(runs),
        "COST": cost_section(runs),
        "FAILURES": failures_section(runs),
    }
    data = {"runs": [r.name for r in runs], "chunk": CHUNK, "index": episode_index(runs), "tasks": task_table(runs),
            "plots": {f.id: f.spec for f in [*figures, *wins]}, "plotConfig": plots.CONFIG}
    chunk_tags = "".join(f'<script type="text/plain" id="chunk-{i}">{c}</script>' for i, c in enumerate(chunks(runs)))
    values = {
        "TITLE": _e(title or report_title(runs)),
        "STYLE": _asset("report.css"),
        "PLOTLY": plots.plotly_js(),
        "DATA": _script_json(data),
        "CHUNKS": chunk_tags,
        "SCRIPT": _asset("highlight.js") + "\n" + _asset("report.js"),
        **sections,
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], _asset("report.html"))


def write_report(runs: list[Run], out: str | Path, *, title: str | None = None, baseline: str | None = None) -> Path:
    """Write the report to ``out`` (parent folders are made; written whole, then renamed) and return its path.

    Raises:
        DataError: ``out`` is a directory, or cannot be written (the message names it and why).
    """
    path = Path(out)
    if path.is_dir() or not path.name:
        raise DataError(f"{out} is a directory; --out takes the report's file name, e.g. {path / 'report.html'}")
    text = build_report(runs, title=title, baseline=baseline)
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)  # a server reading the report never sees half of one
    except OSError as e:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise DataError(f"cannot write {path}: {e.strerror or e}") from e
    return path
