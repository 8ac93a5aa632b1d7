"""Evaluate a policy on an environment: many episodes at once, streamed to JSONL, resumable."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

from agentgym.evaluation.metrics import Summary, summarize
from agentgym.policies.base import Policy
from agentgym.registry import make
from agentgym.rollout import run_many
from agentgym.types import Task, Trajectory, iter_jsonl

#: Outcomes that count as done on ``resume``; ``error`` and ``cancelled`` episodes are played again.
FINISHED = frozenset({"terminated", "truncated", "timeout"})


def _key(t: Trajectory) -> tuple[str, int | None]:
    return t.task_id, t.seed


async def evaluate(
    env_id: str,
    policy: Policy,
    *,
    tasks: Sequence[Task] | None = None,
    limit: int | None = None,
    samples: int = 1,
    seed: int = 0,
    concurrency: int = 8,
    out: str | Path | None = None,
    resume: bool = False,
    turn_timeout: float | None = None,
    episode_timeout: float | None = None,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
) -> tuple[Summary, list[Trajectory]]:
    """Play every task ``samples`` times and summarise.

    Each trajectory is appended to ``out`` (JSONL) the moment its episode ends, so a killed run
    loses at most the episodes that were running. With ``resume``, episodes already finished in
    ``out`` (same task and seed) are kept and not played again. The summary is written next to
    ``out`` as ``<name>.summary.json``.

    Args:
        env_id: A registered environment id.
        policy: The policy to evaluate.
        tasks: Tasks to play; the environment's own tasks by default.
        limit: Play only the first ``limit`` tasks.
        samples: Episodes per task (seeds ``seed`` .. ``seed + samples - 1``); gives pass@k.
        seed: First seed.
        concurrency: Episodes in flight at once.
        out: JSONL file for trajectories.
        resume: Keep finished episodes found in ``out`` instead of starting over.
        turn_timeout: Seconds allowed for one turn (policy call plus env step).
        episode_timeout: Seconds allowed for one episode.
        env_kwargs: Keyword arguments for ``make(env_id, ...)`` (``sandbox_backend="local"``...).
        progress: Show a progress bar on a terminal.
    """
    env_kwargs = dict(env_kwargs or {})

    def make_env() -> Any:
        return make(env_id, **env_kwargs)

    if tasks is None:
        probe = make_env()
        try:
            tasks = list(probe.tasks())
        finally:
            await probe.close()
    tasks = list(tasks)[:limit] if limit is not None else list(tasks)
    jobs = [(task, seed + s) for task in tasks for s in range(samples)]
    wanted = {(task.id, s) for task, s in jobs}
    done: dict[tuple[str, int | None], Trajectory] = {}
    out_path = Path(out) if out is not None else None
    if out_path is not None:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        if resume and out_path.exists():
            for t in iter_jsonl(out_path):
                if _key(t) in wanted and t.outcome in FINISHED:
                    done[_key(t)] = t
        elif out_path.exists():
            out_path.unlink()
    todo = [(task, s) for task, s in jobs if (task.id, s) not in done]
    # One small line per finished episode: a plain blocking write keeps the file ordered and costs microseconds.
    sink: TextIO | None = open(out_path, "a", encoding="utf-8") if out_path is not None else None  # noqa: ASYNC230
    bar = tqdm(total=len(jobs), initial=len(done), desc=f"{env_id} · {policy.name}", unit="ep",
               disable=None if progress else True, dynamic_ncols=True)
    results = dict(done)

    def on_result(t: Trajectory) -> None:
        results[_key(t)] = t
        if sink is not None:
            sink.write(t.model_dump_json() + "\n")
            sink.flush()
        bar.update(1)
        successes = sum(r.success for r in results.values())
        bar.set_postfix(success=f"{successes}/{len(results)}")

    started = time.monotonic()
    try:
        await run_many(make_env, policy, todo, on_result=on_result, concurrency=concurrency,
                       turn_timeout=turn_timeout, episode_timeout=episode_timeout)
    finally:
        bar.close()
        if sink is not None:
            sink.close()
    trajectories = [results[k] for k in ((t.id, s) for t, s in jobs) if k in results]
    summary = summarize(trajectories, env=env_id, policy=policy.name, wall_seconds=time.monotonic() - started)
    if out_path is not None:
        out_path.with_suffix(".summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
    return summary, trajectories
