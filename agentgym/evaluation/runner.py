"""Evaluate a policy on an environment: many episodes at once, streamed to JSONL, resumable."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agentgym.errors import AgentgymError, DataError, EnvError, PolicyError
from agentgym.evaluation.executors import Executor, RunSpec, get_executor
from agentgym.evaluation.metrics import Summary, summarize
from agentgym.evaluation.runfile import RunFiles, run_identity
from agentgym.evaluation.sink import RowSink, RowWriteError
from agentgym.policies.base import Policy
from agentgym.registry import arguments, make
from agentgym.types import Task, Trajectory

#: Outcomes that count as done on ``resume``; ``error`` and ``cancelled`` episodes are played again.
FINISHED = frozenset({"terminated", "truncated", "timeout"})


class RunStopped(AgentgymError):
    """A run stopped early because no later episode could succeed (the API key was refused...)."""


def _key(t: Trajectory) -> tuple[str, int | None]:
    return t.task_id, t.seed


async def evaluate(
    env_id: str,
    policy: Policy,
    *,
    tasks: Sequence[Task] | None = None,
    task_file: str | Path | None = None,
    limit: int | None = None,
    samples: int = 1,
    seed: int = 0,
    concurrency: int = 8,
    out: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    turn_timeout: float | None = None,
    episode_timeout: float | None = None,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = True,
    progress_interval: float = 30.0,
    executor: Executor | str | None = None,
) -> tuple[Summary, list[Trajectory]]:
    """Play every task ``samples`` times and summarise.

    What can be checked before the first episode is: the arguments, the policy (a hosted model's
    provider and credentials, see :meth:`~agentgym.policies.LiteLLMPolicy.check`), the tasks (no id
    twice), the output files (see :mod:`agentgym.evaluation.runfile`) and, for an env that needs
    sandboxes, that one starts. Each trajectory is appended to ``out`` (JSONL) the moment its
    episode ends, so a killed run loses at most the episodes that were running. With ``resume``,
    episodes already finished in ``out`` (same task and seed) are kept and not played again, if
    ``out`` was made by the same run (env, env arguments, policy settings, agentgym version, and
    every task it played among ``tasks``, unchanged). The summary is written next to ``out`` as
    ``<name>.summary.json``. Without ``resume`` or ``overwrite``, an ``out`` that holds this same
    run with every episode finished is not played again: its summary is returned, nothing written. One
    run at a time writes ``out``: it is locked for the whole run (:mod:`agentgym.evaluation.runlock`).
    Cancelled (Ctrl-C, a signal), the run records running episodes as ``cancelled`` and writes the
    summary of what it recorded before the cancellation propagates.

    Episodes are played by ``executor`` (see :mod:`agentgym.evaluation.executors`): in this process
    by default, or on a Ray cluster (``"ray"``, or a configured ``RayExecutor``). Either way only
    this process writes ``out``, and the executor is not part of the run's identity: a run started
    on one may be resumed on the other.

    Sandboxes (pools, browsers, SWE containers) come from the
    :class:`~agentgym.sandboxes.runtime.SandboxRuntime` opened around the call, which stays open for
    more; with none open, the run opens its own and closes it when it ends, so nothing it started is
    left running (:func:`~agentgym.sandboxes.warm_up` spares count only inside a runtime the caller opened).

    Args:
        env_id: A registered environment id.
        policy: The policy to evaluate.
        tasks: Tasks to play; the environment's own tasks by default.
        task_file: The file ``tasks`` were read from, if any: the run's files may not be it.
        limit: Play only the first ``limit`` tasks.
        samples: Episodes per task (seeds ``seed`` .. ``seed + samples - 1``); gives pass@k.
        seed: First seed.
        concurrency: Episodes in flight at once (per worker, with an executor that has several).
        out: JSONL file for trajectories; its directory must exist.
        resume: Keep finished episodes found in ``out`` instead of starting over.
        overwrite: Replace what ``out`` holds; without it (or ``resume``) a non-empty ``out`` is refused.
        turn_timeout: Seconds allowed for one turn (policy call plus env step).
        episode_timeout: Seconds allowed for one episode.
        env_kwargs: Keyword arguments for ``make(env_id, ...)`` (``sandbox_backend="local"``...).
        progress: Show a progress bar on a terminal; elsewhere (a log file, CI), a line on stderr
            every ``progress_interval`` seconds.
        progress_interval: Seconds between progress lines when stderr is not a terminal.
        executor: ``"local"`` (the default), ``"ray"``, or an :class:`~agentgym.evaluation.executors.Executor`.

    Raises:
        ValueError: ``limit``, ``samples`` or ``concurrency`` is below 1.
        AgentgymError: Something checked before the first episode is wrong; nothing was played.
        RunStopped: The policy failed in a way no later episode can get past (a refused API key), or
            a row or the summary could not be written (a full disk); finished episodes are in
            ``out``, and ``resume`` continues once it is fixed.
    """
    for name, value in (("limit", limit), ("samples", samples), ("concurrency", concurrency)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    check = getattr(policy, "check", None)
    if callable(check):
        check()
    env_kwargs = dict(env_kwargs or {})
    chosen = get_executor(executor)

    probe = make(env_id, **env_kwargs)  # built once even when tasks are given: its arguments are checked here
    try:
        tasks = list(tasks) if tasks is not None else _builtin_tasks(env_id, probe, env_kwargs)
    finally:
        await probe.close()
    task_set = list(tasks)  # before the limit: a resume may play more of them, but no other
    tasks = list(tasks)[:limit] if limit is not None else list(tasks)
    if not tasks:
        where = f"the task file {task_file}" if task_file else f"{env_id} has no built-in tasks, and no --tasks"
        raise DataError(f"no tasks to play: {where} (pass --tasks FILE in the env's format)")
    _refuse_duplicate_ids(tasks)
    jobs = [(task, seed + s) for task in tasks for s in range(samples)]
    inputs = [p for p in (task_file, env_kwargs.get("tasks_path")) if p]
    files = RunFiles(out, inputs=inputs) if out is not None else None
    from agentgym.sandboxes import runtime

    if files is not None:
        files.lock.acquire()  # one writer per run file, from before it is read until the run has ended
    try:
        async with runtime.scope():  # the run's sandboxes, closed with it unless the caller opened the runtime
            try:
                await chosen.prepare(RunSpec(env_id, policy, env_kwargs, concurrency, turn_timeout, episode_timeout))
                return await _play(env_id, policy, env_kwargs, task_set, tasks, jobs, files, chosen, resume=resume,
                                   overwrite=overwrite, progress=progress, progress_interval=progress_interval)
            finally:
                await chosen.close()
    finally:
        if files is not None:
            files.lock.release()


async def _play(env_id: str, policy: Policy, env_kwargs: dict[str, Any], task_set: list[Task], tasks: list[Task],
                jobs: list[tuple[Task, int]], files: RunFiles | None, executor: Executor, *, resume: bool,
                overwrite: bool, progress: bool, progress_interval: float) -> tuple[Summary, list[Trajectory]]:
    """Open the run's files, have ``executor`` play what is not done yet, write each episode as it ends."""
    done: dict[tuple[str, int | None], Trajectory] = {}
    sink: RowSink | None = None
    identity = run_identity(env_id, env_kwargs, policy)
    if files is not None and not (resume or overwrite):
        finished = _finished_before(files, identity, task_set, jobs)
        if finished is not None:
            if progress:
                print(f"{files.path} already holds this run, every episode finished: nothing to play "
                      "(--overwrite plays it again)", file=sys.stderr, flush=True)
            return summarize(finished, env=env_id, policy=policy.name), finished
    if files is not None:
        kept, sink = files.open(identity, tasks, resume=resume, overwrite=overwrite, task_set=task_set)
        wanted = {(task.id, s) for task, s in jobs}
        done = {_key(t): t for t in kept if _key(t) in wanted and t.outcome in FINISHED}
    todo = [(task, s) for task, s in jobs if (task.id, s) not in done]
    on_terminal = progress and sys.stderr.isatty()
    bar = tqdm(total=len(jobs), initial=len(done), desc=f"{env_id} · {policy.name}", unit="ep",
               disable=not on_terminal, dynamic_ncols=True)
    results = dict(done)
    successes = sum(t.success for t in done.values())  # kept as a count: a recount per episode is quadratic
    fatal: list[PolicyError] = []
    unwritable: list[RowWriteError] = []

    def on_result(t: Trajectory, error: PolicyError | None) -> None:
        nonlocal successes
        successes += t.success - (results[_key(t)].success if _key(t) in results else 0)
        results[_key(t)] = t
        if sink is not None and not unwritable:
            # One small line per finished episode: a plain blocking write keeps the file ordered.
            try:
                sink.write(t.model_dump_json() + "\n")
            except RowWriteError as e:  # a full disk: stop now, every row before this one intact
                unwritable.append(e)
                runner.cancel()
        bar.update(1)
        bar.set_postfix(success=f"{successes}/{len(results)}")
        if error is not None and not fatal:
            fatal.append(error)
            runner.cancel()

    started = time.monotonic()

    health = getattr(policy, "health", None)  # a hosted model's retries and last error, so an outage is not silence

    def progress_line() -> str:
        line = (f"{env_id} · {policy.name}: {len(results)}/{len(jobs)} episodes, {successes} succeeded, "
                f"{time.monotonic() - started:.0f} s")
        said = health() if callable(health) else None
        return f"{line}; {said}" if said else line

    ticker = (asyncio.ensure_future(_every(progress_interval, progress_line))
              if progress and not on_terminal and todo else None)
    runner = asyncio.ensure_future(executor.run(todo, on_result))
    try:
        await runner
    except asyncio.CancelledError:
        current = asyncio.current_task()
        interrupted = current is not None and current.cancelling() > 0
        if unwritable:
            e = unwritable[0]
            raise RunStopped(f"{e}; the {len(done) + e.rows} row(s) before it are intact: free some space and rerun "
                             "with --resume") from e.error
        if interrupted and files is not None:  # Ctrl-C, SIGTERM: the summary of what was recorded, cancelled too
            _write_summary(files, results, jobs, env_id, policy, started)
        if not fatal or interrupted:
            raise
        raise RunStopped(f"stopped after {len(results) - len(done)} episode(s): {fatal[0]}; nothing later "
                         "could succeed. Fix it and rerun with --resume") from fatal[0]
    finally:
        bar.close()
        if ticker is not None:
            ticker.cancel()
        if sink is not None:
            sink.close()
    if files is None:
        trajectories = _in_order(results, jobs)
        return summarize(trajectories, env=env_id, policy=policy.name, wall_seconds=time.monotonic() - started), \
            trajectories
    return _write_summary(files, results, jobs, env_id, policy, started)


def _in_order(results: dict[tuple[str, int | None], Trajectory], jobs: list[tuple[Task, int]]) -> list[Trajectory]:
    return [results[k] for k in ((t.id, s) for t, s in jobs) if k in results]


def _write_summary(files: RunFiles, results: dict[tuple[str, int | None], Trajectory], jobs: list[tuple[Task, int]],
                   env_id: str, policy: Policy, started: float) -> tuple[Summary, list[Trajectory]]:
    """Summarise the recorded episodes in the order of ``jobs`` and write the summary beside the run.

    Raises:
        RunStopped: The summary cannot be written (a full disk): every row is in the trajectories file.
    """
    trajectories = _in_order(results, jobs)
    summary = summarize(trajectories, env=env_id, policy=policy.name, wall_seconds=time.monotonic() - started)
    try:
        files.write_summary(summary.model_dump_json(indent=2) + "\n")
    except DataError as e:
        raise RunStopped(f"{e}; every episode is in {files.path}: free some space and rerun with --resume") from e
    return summary, trajectories


async def _every(interval: float, line: Callable[[], str]) -> None:
    """Print ``line()`` to stderr every ``interval`` seconds: progress for a log file, where a bar is not drawn."""
    while True:
        await asyncio.sleep(interval)
        print(line(), file=sys.stderr, flush=True)


def _finished_before(files: RunFiles, identity: dict[str, Any], tasks: list[Task],
                     jobs: list[tuple[Task, int]]) -> list[Trajectory] | None:
    """The trajectories of ``jobs`` if ``files`` holds this same run with every one of them finished, else None."""
    held = files.this_run(identity, tasks)
    finished = {_key(t): t for t in held or [] if t.outcome in FINISHED}
    if held is None or any((task.id, s) not in finished for task, s in jobs):
        return None
    return [finished[(task.id, s)] for task, s in jobs]


def _builtin_tasks(env_id: str, env: Any, env_kwargs: dict[str, Any]) -> list[Task]:
    """``env.tasks()``, with an error of the env's own (a ``tasks_path`` that is no path) said as the caller's."""
    try:
        return list(env.tasks())
    except AgentgymError:
        raise
    except Exception as e:
        raise EnvError(f"{env_id}: cannot list its tasks with {arguments(env_kwargs)}: {type(e).__name__}: {e}") from e


def _refuse_duplicate_ids(tasks: Sequence[Task]) -> None:
    """Two tasks with one id would share one key in the results and be counted twice in the summary."""
    first: dict[str, int] = {}
    for i, task in enumerate(tasks):
        if task.id in first:
            raise DataError(f"task id {task.id!r} is used twice (tasks #{first[task.id] + 1} and #{i + 1}); "
                            "every task needs its own id")
        first[task.id] = i
