"""A run's files: the trajectories JSONL, the record of what the run is, and the summary beside them.

``run.jsonl`` gets one trajectory a line as episodes end; ``run.run.json`` says what produced them
(environment and its arguments, policy and its settings, agentgym's version, a hash of each task);
``run.summary.json`` is written when the run ends. The record is what makes ``resume`` safe: a run
resumes only into a file made by the same run, else two runs would be summarised as one.

Everything that can be wrong with these files is found before the first episode, with a one-line
message naming the file: a directory, a missing parent directory, an unwritable place, the task
file itself, a file from another run, a file that holds episodes but was not asked to be resumed
or overwritten. A torn last line (a run killed mid-write) is cut off before new rows are appended,
so that the next row does not glue onto it and vanish with it.

While a run has them, ``run.run.lock`` is locked (:mod:`agentgym.evaluation.runlock`): one writer per
run file. Rows go through :mod:`agentgym.evaluation.sink`, which lands each whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from agentgym.errors import DataError
from agentgym.evaluation.runlock import RunLock
from agentgym.evaluation.sink import RowSink
from agentgym.types import Task, Trajectory, iter_jsonl

#: Environment arguments that do not change what an episode is: either sandbox backend passes one
#: conformance suite, so a run started on Docker may be finished on the local backend.
NOT_IDENTITY = frozenset({"sandbox_backend"})


def current_episodes(rows: Iterable[Trajectory]) -> list[Trajectory]:
    """A run's episodes from its file's rows: the last row of each (task, seed), in first-seen order.

    ``--resume`` plays a run's ``cancelled`` and ``error`` episodes again and appends the new rows, so
    the file of a resumed run holds rows that a later one superseded. ``evaluate`` counts each episode
    once, by its last row; every reader of the file (the report, the exports) counts the same set.
    """
    latest: dict[tuple[str, int | None], Trajectory] = {}
    for t in rows:
        latest[(t.task_id, t.seed)] = t  # a replay takes its key's place, not a new one
    return list(latest.values())


def agentgym_version() -> str:
    try:
        return version("agentgym")
    except PackageNotFoundError:
        return "unknown"


def task_digest(task: Task) -> str:
    """A short hash of everything in a task, so that a resume notices a task that changed."""
    return hashlib.sha256(task.model_dump_json().encode()).hexdigest()[:16]


def json_value(value: Any) -> Any:
    """``value`` as JSON data; an object that is not (a backend instance) is recorded by its type."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def run_identity(env_id: str, env_kwargs: Mapping[str, Any], policy: Any) -> dict[str, Any]:
    """What a run is: the environment, its arguments, the policy and its settings, agentgym's version.

    With the tasks the record lists, which must all be among a resume's. Where things run is not part
    of it: the sandbox backend, the executor, the model's endpoint.
    """
    settings = policy.identity() if callable(getattr(policy, "identity", None)) else {}
    return {
        "env": env_id,
        "env_args": json_value({k: v for k, v in env_kwargs.items() if k not in NOT_IDENTITY}),
        "policy": json_value({"name": policy.name, **settings}),
        "agentgym": agentgym_version(),
    }


class RunFiles:
    """The trajectories file ``out`` and its run record and summary, checked before a run starts.

    Args:
        out: The trajectories JSONL file.
        inputs: Files the run reads (a task file): none of the run's files may be one of them.
    """

    def __init__(self, out: str | Path, inputs: Iterable[str | Path] = ()) -> None:
        self.path = Path(out)
        if self.path.is_dir() or not self.path.name:  # ``.`` or ``runs/``: no name to put suffixes on
            raise DataError(f"{out} is a directory; --out takes a file name, e.g. {self.path / 'run.jsonl'}")
        self.record_path = self.path.with_suffix(".run.json")
        self.summary_path = self.path.with_suffix(".summary.json")
        self.lock = RunLock(self.path)
        self._check_places([Path(p) for p in inputs])

    def _check_places(self, inputs: list[Path]) -> None:
        for path in (self.path, self.record_path, self.summary_path, self.lock.path):
            for given in inputs:
                if path.resolve() == given.resolve():
                    raise DataError(f"{path} is also the task file {given}: the run would overwrite its tasks; "
                                    "choose another --out")
            if path.is_dir():
                raise DataError(f"{path} is a directory; --out takes a file name, e.g. {path / 'run.jsonl'}")
        parent = self.path.parent
        if not parent.exists():
            raise DataError(f"cannot write {self.path}: directory {parent} does not exist")
        if not parent.is_dir():
            raise DataError(f"cannot write {self.path}: {parent} is not a directory")

    def open(self, identity: dict[str, Any], tasks: Sequence[Task], *, resume: bool, overwrite: bool,
             task_set: Sequence[Task] | None = None) -> tuple[list[Trajectory], RowSink]:
        """Check the record against ``identity``, write it, and open ``out`` for appending.

        Args:
            identity: :func:`run_identity` of this run.
            tasks: The tasks this run plays; their hashes join the record.
            resume: Keep the trajectories already in ``out`` (only if the record matches).
            overwrite: Start over even if ``out`` holds trajectories.
            task_set: Every task the run could play (``tasks`` before a limit; ``tasks`` by default):
                a resume is refused unless each task the record lists is one of them, unchanged.

        Returns:
            The trajectories already in ``out`` (empty unless resuming), and ``out`` open for appending.

        Raises:
            DataError: The file cannot be written, belongs to another run, or holds episodes that
                neither ``resume`` nor ``overwrite`` says what to do with.
        """
        digests = {t.id: task_digest(t) for t in tasks}
        held = self.path.exists() and self.path.stat().st_size > 0
        kept: list[Trajectory] = []
        if held and resume:
            recorded = self._read_record()
            _refuse_other_run(self.path, recorded, identity, _digests(task_set or tasks))
            digests = {**recorded.get("tasks", {}), **digests}
            self._cut_torn_tail()
            kept = list(iter_jsonl(self.path))
        elif held and not overwrite:
            raise DataError(f"{self.path} already holds trajectories: pass --resume to continue that run "
                            "or --overwrite to replace it")
        record = {**identity, "tasks": digests, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        sink: RowSink | None = None
        try:
            sink = RowSink(self.path, append=resume)
            _write_atomically(self.record_path, json.dumps(record, indent=1) + "\n")
        except OSError as e:
            if sink is not None:
                sink.close()
            raise DataError(f"cannot write {e.filename or self.path}: {e.strerror or e}") from e
        if not resume:
            self.summary_path.unlink(missing_ok=True)  # a summary of the replaced run would now be wrong
        return kept, sink

    def this_run(self, identity: dict[str, Any], tasks: Sequence[Task]) -> list[Trajectory] | None:
        """The trajectories ``out`` holds if this same run made them (the record matches), else None.

        ``tasks`` is the run's whole task set: every task the record lists must be among them.

        None as well for an empty or missing file, one without a readable record, or one that does not
        read back whole (a torn last line): what :meth:`open` then says about it stands.
        """
        if not (self.path.exists() and self.path.stat().st_size > 0):
            return None
        try:
            _refuse_other_run(self.path, self._read_record(), identity, _digests(tasks))
            return list(iter_jsonl(self.path))
        except DataError:
            return None

    def write_summary(self, text: str) -> None:
        """Write the summary whole (through a temporary file).

        Raises:
            DataError: It cannot be written (a full disk); the message names the file and the errno.
        """
        try:
            _write_atomically(self.summary_path, text)
        except OSError as e:
            raise DataError(f"cannot write {self.summary_path}: [Errno {e.errno}] {e.strerror}") from e

    def _read_record(self) -> dict[str, Any]:
        try:
            record = json.loads(self.record_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise DataError(f"cannot resume {self.path}: it has no run record ({self.record_path.name}), so "
                            "nothing says which run made it; choose another --out or pass --overwrite") from None
        except (OSError, ValueError) as e:
            raise DataError(f"cannot resume {self.path}: unreadable run record {self.record_path}: {e}") from e
        if not isinstance(record, dict):
            raise DataError(f"cannot resume {self.path}: {self.record_path} is not a run record")
        return record

    def _cut_torn_tail(self) -> None:
        """End ``out`` at a newline: a torn last row is cut off, a whole one missing its newline gets it."""
        with open(self.path, "rb+") as f:
            size = f.seek(0, os.SEEK_END)
            tail_start = 0  # just after the last newline
            end = size
            while end > 0:
                start = max(0, end - (1 << 16))
                f.seek(start)
                newline = f.read(end - start).rfind(b"\n")
                if newline >= 0:
                    tail_start = start + newline + 1
                    break
                end = start
            if tail_start == size:
                return
            f.seek(tail_start)
            try:
                Trajectory.model_validate_json(f.read())
            except ValueError:
                f.truncate(tail_start)
            else:
                f.write(b"\n")


def _refuse_other_run(path: Path, recorded: dict[str, Any], identity: dict[str, Any],
                      digests: dict[str, str]) -> None:
    was = _flat({k: recorded.get(k) for k in identity})
    now = _flat(identity)
    differences = [f"{key} was {json.dumps(was.get(key))}, now {json.dumps(now.get(key))}"
                   for key in sorted(was.keys() | now.keys()) if was.get(key) != now.get(key)]
    old = recorded.get("tasks") or {}
    gone = [task_id for task_id in old if task_id not in digests]
    if gone:
        more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
        differences.insert(0, f"another task set: its task {gone[0]!r}{more} is not among this one's (--tasks "
                              "names other tasks, or none where the run had a file)")
    changed = [task_id for task_id, digest in digests.items() if old.get(task_id, digest) != digest]
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        differences.append(f"task {changed[0]!r}{more} changed")
    if differences:
        shown = "; ".join(differences[:3]) + (f"; {len(differences) - 3} more" if len(differences) > 3 else "")
        raise DataError(f"cannot resume {path}: it holds another run ({shown}); "
                        "choose another --out, or pass --overwrite to replace it")


def _digests(tasks: Sequence[Task]) -> dict[str, str]:
    return {t.id: task_digest(t) for t in tasks}


def _flat(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as ``{"policy.model": ...}``, so that a difference is named by its path."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping):  # an empty one adds no keys: {} and absent are the same settings
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file, so a crash leaves the old file or the new one."""
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        scratch.write_text(text, encoding="utf-8")
        os.replace(scratch, path)
    finally:
        scratch.unlink(missing_ok=True)
