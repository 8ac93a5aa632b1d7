"""The Ray executor: a run's episodes played by workers on a Ray cluster, trajectories streamed back.

Each episode ships as a small :class:`EpisodeSpec` (env id, the pickled env class, env arguments and
policy, the task, the seed) to a worker: a Ray actor with its own event loop, and so its own warm
sandbox pools, which lasts the whole run. Trajectories come back to the driver as each episode ends;
the driver alone writes the run's files (see :func:`agentgym.evaluation.evaluate`).

Back-pressure: the driver holds the queue of episodes not yet started and gives each worker at most
``concurrency`` at once; nothing is queued inside Ray. A worker that dies (its process killed, its
node lost) takes the episodes it was playing with it: each goes back to the front of the queue, to
be played by another worker, at most ``max_retries`` more times. The losses are recorded in the
trajectory's ``info["lost_workers"]``, with ``info["attempts"]`` the times it was played; an episode
that exhausts its retries is recorded as an ``error`` saying so. A replacement worker is started for
each lost one. An episode is reported once: a lost worker's result never arrives, and a key already
reported is never reported again.

Ray is imported only here, and this module only when the ``ray`` executor is asked for:
``import agentgym`` does not import Ray.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import os
import signal
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from agentgym.env import Env
from agentgym.errors import AgentgymError, PolicyError, reason_line
from agentgym.evaluation.executors import FatalWatch, Job, Report, RunSpec, start_a_sandbox
from agentgym.registry import env_class, resolve
from agentgym.rollout import run_episode
from agentgym.types import Outcome, Task, Trajectory

if TYPE_CHECKING:
    from agentgym.sandboxes.runtime import SandboxRuntime

log = logging.getLogger(__name__)

READY_TIMEOUT = 600.0  # a worker's first sandbox may have to build the image (about a minute) on a busy node
CLOSE_TIMEOUT = 30.0


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode, as it travels to a worker: everything needed to play it, nothing else.

    ``setup`` is the pickled ``(env class, env arguments, policy)``, the same bytes for every
    episode of a run (a few hundred bytes for a hosted model or a scripted policy); a worker
    unpickles it once. ``lost`` lists the workers that died while playing it, with the reason.
    """

    env_id: str
    setup: bytes
    task: Task
    seed: int
    turn_timeout: float | None = None
    episode_timeout: float | None = None
    lost: tuple[str, ...] = field(default=())

    @property
    def key(self) -> tuple[str, int]:
        return self.task.id, self.seed


@dataclass(frozen=True)
class _Setup:
    env_id: str
    cls: type[Env]
    env_kwargs: dict[str, Any]
    policy: Any

    def make_env(self, runtime: SandboxRuntime) -> Env:
        env = self.cls(**self.env_kwargs, runtime=runtime)
        env.id = self.env_id  # type: ignore[misc]
        return env


class EpisodeWorker:
    """A Ray actor's body: plays episodes on its own event loop, keeping its sandbox pools warm between them
    in a sandbox runtime of its own, closed once by :meth:`close`."""

    def __init__(self) -> None:
        from agentgym.sandboxes.runtime import SandboxRuntime

        self._setups: dict[bytes, _Setup] = {}
        self.runtime = SandboxRuntime()

    def _built(self, env_id: str, setup: bytes) -> _Setup:
        """A run's ``setup``, unpickled once per worker."""
        if setup not in self._setups:
            import ray.cloudpickle

            self._setups[setup] = _Setup(env_id, *ray.cloudpickle.loads(setup))
        return self._setups[setup]

    async def ready(self, env_id: str, setup: bytes) -> dict[str, Any]:
        """Check this worker can play the run (its policy's credentials, a sandbox) and say who it is."""
        built = self._built(env_id, setup)
        check = getattr(built.policy, "check", None)
        if callable(check):
            check()
        await start_a_sandbox(built.cls, built.env_kwargs, self.runtime)
        return {"pid": os.getpid(), "host": socket.gethostname()}

    async def play(self, spec: EpisodeSpec) -> tuple[str, str | None]:
        """Play one episode: its trajectory as JSON, and the fatal policy error it met, if any."""
        built = self._built(spec.env_id, spec.setup)
        make_env, policy = functools.partial(built.make_env, self.runtime), built.policy
        watch = FatalWatch(policy)
        trajectory = await run_episode(make_env, watch, spec.task, seed=spec.seed, turn_timeout=spec.turn_timeout,
                                       episode_timeout=spec.episode_timeout)
        return trajectory.model_dump_json(), str(watch.error) if watch.error is not None else None

    async def close(self) -> None:
        """Destroy this worker's kept sandboxes, of every kind."""
        await self.runtime.close()


@dataclass
class _Worker:
    handle: Any
    node: str
    pid: int = 0
    host: str = ""
    playing: int = 0
    played: int = 0
    alive: bool = True

    @property
    def name(self) -> str:
        return f"pid {self.pid} on {self.host or self.node[:12]}"


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise AgentgymError("the ray executor needs Ray: pip install 'agentgym[ray]'") from e
    return ray


class RayExecutor:
    """Plays episodes on Ray workers (actors), ``concurrency`` at a time on each.

    Args:
        address: The cluster to join (``"127.0.0.1:6379"``, ``"ray://host:10001"``, ``"auto"``); by
            default ``RAY_ADDRESS`` if set, else a local cluster started for the run and stopped after it.
        workers: Workers to start; default one per node alive in the cluster. They are spread over
            the nodes, one node after another.
        max_retries: Times an episode is played again after the worker playing it died.
        init_kwargs: Further keyword arguments for ``ray.init`` (``runtime_env``, ``num_cpus``...).

    Workers read their own environment: a hosted model's credentials must be there (a local cluster
    inherits this process's), or be passed as ``init_kwargs={"runtime_env": {"env_vars": ...}}``.
    Each worker checks its policy's credentials and starts a sandbox before the first episode.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, workers: int | None = None, max_retries: int = 2,
                 init_kwargs: dict[str, Any] | None = None) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, got {max_retries}")
        self.address = address
        self.workers = workers
        self.max_retries = max_retries
        self.init_kwargs = dict(init_kwargs or {})
        self._pool: list[_Worker] = []
        self._run: RunSpec | None = None
        self._setup = b""
        self._env_id = ""
        self._started_ray = False
        self._replacing: set[asyncio.Task[None]] = set()

    @property
    def pool(self) -> list[_Worker]:
        """The workers of the last run, dead ones included (``alive`` says which are not; none after ``close``)."""
        return list(self._pool)

    async def prepare(self, run: RunSpec) -> None:
        ray = _ray()
        self._run = run
        self._env_id = resolve(run.env_id)
        try:
            self._setup = ray.cloudpickle.dumps((env_class(run.env_id), run.env_kwargs, run.policy))
        except Exception as e:
            raise AgentgymError(f"the ray executor ships the env class, its arguments and the policy to its workers, "
                                f"and they cannot be pickled: {type(e).__name__}: {e}") from e
        if not ray.is_initialized():
            options = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING,
                       **self.init_kwargs}
            # ray.init sets a SIGTERM handler of its own that exits on the spot; the caller's (agentgym
            # eval's records running episodes and releases sandboxes first) is put back after it.
            on_sigterm = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() \
                else None
            try:
                ray.init(address=self.address, **options)
            except Exception as e:
                where = self.address or os.environ.get("RAY_ADDRESS") or "a local cluster"
                raise AgentgymError(f"cannot join the Ray cluster at {where}: {type(e).__name__}: {e}") from e
            finally:
                if on_sigterm is not None:
                    signal.signal(signal.SIGTERM, on_sigterm)
            self._started_ray = True
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        count = self.workers or len(nodes)
        self._pool = [self._start(nodes[i % len(nodes)]) for i in range(count)]  # close() stops them, ready or not
        results = await asyncio.gather(*(self._ready(w) for w in self._pool), return_exceptions=True)
        for worker, result in zip(self._pool, results, strict=True):
            if isinstance(result, BaseException):
                raise AgentgymError(f"Ray worker on node {worker.node[:12]} cannot play this run: {_reason(result)}")

    def _start(self, node: str) -> _Worker:
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        assert self._run is not None
        actor = ray.remote(EpisodeWorker).options(
            num_cpus=0, max_concurrency=self._run.concurrency + 2,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=True))
        return _Worker(actor.remote(), node)

    async def _ready(self, worker: _Worker) -> None:
        info = await asyncio.wait_for(_result(worker.handle.ready.remote(self._env_id, self._setup)), READY_TIMEOUT)
        worker.pid, worker.host = info["pid"], info["host"]

    async def run(self, jobs: Sequence[Job], report: Report) -> None:
        ray = _ray()
        run = self._run
        if run is None:
            raise AgentgymError("RayExecutor.run() before prepare()")
        queue = collections.deque(EpisodeSpec(self._env_id, self._setup, task, seed, run.turn_timeout,
                                              run.episode_timeout) for task, seed in jobs)
        playing: dict[asyncio.Future[Any], tuple[_Worker, EpisodeSpec, Any]] = {}
        reported: set[tuple[str, int]] = set()
        lost_kinds = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError)

        def give(trajectory: Trajectory, spec: EpisodeSpec, fatal: PolicyError | None = None, *,
                 played: bool = True) -> None:
            """Report an episode once; ``played``: a worker finished it (it counts as an attempt)."""
            if spec.key in reported:
                log.error("episode %s seed %s came back twice; the second is dropped", *spec.key)
                return
            reported.add(spec.key)
            if spec.lost:
                trajectory.info["lost_workers"] = list(spec.lost)
                trajectory.info["attempts"] = len(spec.lost) + played
            report(trajectory, fatal)

        def fail(spec: EpisodeSpec, outcome: Outcome, failure: str) -> None:
            give(Trajectory(task_id=spec.task.id, env=spec.env_id, policy=run.policy.name, seed=spec.seed,
                            outcome=outcome, failure=failure), spec, played=False)

        try:
            while queue or playing:
                for worker in self._pool:
                    while queue and worker.alive and worker.playing < run.concurrency:
                        spec = queue.popleft()
                        ref = worker.handle.play.remote(spec)
                        worker.playing += 1
                        playing[asyncio.ensure_future(_result(ref))] = (worker, spec, ref)
                if queue and not playing and not self._replacing:
                    while queue:  # every worker is gone, and no replacement could start
                        spec = queue.popleft()
                        fail(spec, "error", f"no Ray worker left to play it (lost: {'; '.join(spec.lost)})")
                    break
                waiting: set[asyncio.Future[Any]] = {*playing, *self._replacing}
                done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for finished in done:
                    if finished not in playing:
                        continue  # a replacement worker started (or could not)
                    worker, spec, _ = playing.pop(finished)
                    worker.playing -= 1
                    try:
                        text, fatal = finished.result()
                    except lost_kinds as e:
                        self._lose(worker, e)
                        spec = replace(spec, lost=(*spec.lost, f"{worker.name}: {_reason(e)}"))
                        if len(spec.lost) > self.max_retries:
                            fail(spec, "error",
                                 f"the Ray worker playing it died {len(spec.lost)} times; last: {spec.lost[-1]}")
                        else:
                            queue.appendleft(spec)
                        continue
                    except Exception as e:  # the worker could not send its result back
                        fail(spec, "error", f"Ray worker {worker.name} could not return it: {_reason(e)}")
                        continue
                    worker.played += 1
                    give(Trajectory.model_validate_json(text), spec,
                         PolicyError(fatal, fatal=True) if fatal is not None else None)
        finally:
            for future, (worker, spec, ref) in playing.items():
                future.cancel()
                ray.cancel(ref)
                worker.playing -= 1
                fail(spec, "cancelled", "cancelled (interrupted or shut down)")

    def _lose(self, worker: _Worker, error: BaseException) -> None:
        """Mark ``worker`` dead (once) and start its replacement on the same node, or another if it is gone."""
        if not worker.alive:
            return
        worker.alive = False
        log.warning("Ray worker %s died (%s); its episodes go to other workers", worker.name, _reason(error))
        replacement = self._start(worker.node)

        async def join() -> None:
            try:
                await self._ready(replacement)
            except Exception as e:
                log.warning("could not replace Ray worker %s: %s", worker.name, _reason(e))
                return
            self._pool.append(replacement)

        task = asyncio.ensure_future(join())
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)

    async def close(self) -> None:
        for task in list(self._replacing):
            task.cancel()
        await asyncio.gather(*self._replacing, return_exceptions=True)
        if self._pool:
            ray = _ray()
            alive = [w for w in self._pool if w.alive]
            closing = [_result(w.handle.close.remote()) for w in alive]
            try:
                await asyncio.wait_for(asyncio.gather(*closing, return_exceptions=True), CLOSE_TIMEOUT)
            except TimeoutError:
                log.warning("Ray workers did not shut their sandbox pools within %gs; killing them", CLOSE_TIMEOUT)
            for worker in self._pool:
                ray.kill(worker.handle)
                worker.alive = False
        if self._started_ray:
            _ray().shutdown()
            self._started_ray = False


async def _result(ref: Any) -> Any:
    return await ref


def _reason(error: BaseException) -> str:
    """One line saying why: a worker's own exception rather than Ray's wrapper and traceback."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException):
        error = cause
    return reason_line(f"{type(error).__name__}: {error}", 300)
