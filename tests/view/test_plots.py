"""Which plots the report draws for which data, pass@k at a bounded set of k, and which runs are paired."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentgym.errors import DataError
from agentgym.evaluation.metrics import pass_at_k, summarize
from agentgym.types import Message, Trajectory, Turn, Usage
from agentgym.view import plots
from agentgym.view.pairing import pairings
from agentgym.view.report import build_report, natural_key, task_table
from agentgym.view.runs import Run


def episode(task: str, seed: int, ok: bool, *, env: str = "code", turns: int = 1, tokens: int = 0) -> Trajectory:
    turn = Turn(action=Message(role="assistant", content="x"), usage=Usage(prompt_tokens=tokens))
    return Trajectory(task_id=task, env=env, seed=seed, turns=[turn] * turns, reward=float(ok),
                      outcome_reward=float(ok))


def run(name: str, trajectories: list[Trajectory]) -> Run:
    env = "+".join(sorted({t.env for t in trajectories}))
    return Run(name=name, path=Path(f"{name}.jsonl"), trajectories=trajectories,
               summary=summarize(trajectories, env=env, policy="p"))


def shaped(tasks: int, samples: int) -> Run:
    """``tasks`` x ``samples`` episodes, two in three successful."""
    return run(f"{tasks}x{samples}", [episode(f"t/{t}", s, (t * 7 + s) % 3 != 0)
                                      for t in range(tasks) for s in range(samples)])


def test_pass_at_k_is_drawn_at_a_bounded_set_of_k():
    assert plots.k_values(1) == [1]
    assert plots.k_values(10) == [1, 2, 5, 10]
    assert plots.k_values(3334) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 3334]
    assert len(plots.k_values(10**9)) == 28  # three a decade
    big = shaped(3, 3334)
    ks, values = plots.pass_at_k_curve(big)
    assert ks == plots.k_values(3334)
    by_task = [[t.success for t in big.trajectories if t.task_id == f"t/{i}"] for i in range(3)]
    for k, v in zip(ks, values, strict=True):  # the unbiased estimator, averaged over tasks
        assert v == pytest.approx(sum(pass_at_k(len(s), sum(s), k) for s in by_task) / 3)
    assert values[0] == pytest.approx(big.summary.success_rate, abs=1e-3)
    figure = plots.pass_at_k_plot([big])
    assert isinstance(figure, plots.Figure)
    assert len(figure.spec["data"][0]["x"]) == 12 and figure.spec["layout"]["xaxis"]["type"] == "log"


def plotted_points(html: str) -> int:
    """Points in every figure the page will draw (the ``plots`` of the report's data)."""
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    return sum(len(trace.get("x") or trace.get("y") or []) for f in data["plots"].values() for trace in f["data"])


def test_the_plotted_work_does_not_depend_on_the_runs_shape():
    few, many = build_report([shaped(3, 3334)]), build_report([shaped(10_002, 1)])
    assert plotted_points(few) <= 20 and plotted_points(many) <= 20
    assert 'id="plot-pass-at-k"' in few and 'id="plot-pass-at-k"' not in many


def test_plots_say_something_for_the_data():
    constant = [run("a", [episode("t", s, True, turns=2) for s in range(4)]),
                run("b", [episode("t", s, True, turns=3) for s in range(4)])]
    assert plots.distribution_plot(constant, "turns", plots.episode_turns) == \
        "Turns per episode: 2 in every episode of a; 3 in every episode of b."
    assert plots.pass_at_k_plot([run("one", [episode("t", 0, True)])]).startswith("pass@k: one sample per task")
    assert isinstance(plots.components_plot(constant), str)  # no components recorded: no empty plot

    few = [run("a", [episode("t", s, True, turns=1 + s % 3) for s in range(9)])]
    bars = plots.distribution_plot(few, "turns", plots.episode_turns)
    assert isinstance(bars, plots.Figure) and bars.spec["data"][0]["type"] == "bar"
    assert bars.spec["data"][0]["x"] == ["1", "2", "3"] and bars.spec["data"][0]["y"] == [3, 3, 3]

    spread = [run("a", [episode("t", s, True, tokens=100 * s) for s in range(40)])]
    box = plots.distribution_plot(spread, "tokens", plots.episode_tokens)
    assert isinstance(box, plots.Figure) and box.spec["data"][0]["type"] == "box"

    figures, notes = plots.run_plots(constant)
    assert [f.id for f in figures] == ["plot-success", "plot-pass-at-k"]
    assert len(notes) == 3  # components, turns, tokens: each left out with its reason


def test_runs_pair_within_an_env_pairwise_or_with_the_baseline():
    c1, c2, c3 = (run(f"c{i}", [episode("t", 0, True)]) for i in range(1, 4))
    s1 = run("s1", [episode("q", 0, True, env="search")])
    s2 = run("s2", [episode("q", 0, False, env="search")])
    names = lambda pairs: [(a.name, b.name) for a, b in pairs]  # noqa: E731
    assert names(pairings([c1, s1, c2, c3, s2])) == [("c1", "c2"), ("c1", "c3"), ("c2", "c3"), ("s1", "s2")]
    assert names(pairings([c1, s1, c2, c3, s2], "c2")) == [("c2", "c1"), ("c2", "c3"), ("s1", "s2")]
    assert names(pairings([c1, s1])) == []
    with pytest.raises(DataError, match=r"--baseline c9: no such run \(the runs are: c1, s1\)"):
        pairings([c1, s1], "c9")


def test_tasks_are_listed_in_id_order():
    ids = ["b/10", "a", "b/2", "b/1", "HumanEval/11", "HumanEval/3"]
    assert sorted(ids, key=natural_key) == ["HumanEval/3", "HumanEval/11", "a", "b/1", "b/2", "b/10"]
    table = task_table([run("r", [episode(t, 0, True) for t in ids])])
    assert table["tasks"] == ["HumanEval/3", "HumanEval/11", "a", "b/1", "b/2", "b/10"]
