"""SWE tasks in SWE-bench's format, read from JSONL, a ``datasets`` dataset saved to disk, or the Hub.

SWE-bench, SWE-bench Verified, SWE-Gym and SWE-smith share one row schema: ``instance_id``, ``repo``,
``base_commit``, ``problem_statement``, ``patch`` (the gold fix), ``test_patch`` (the tests that
check it), ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (test ids; a list or, as on the Hub, a JSON string),
``version``. :class:`SWETask` reads that row and the optional fields that say how to run it here:

- where it runs (one of, see :mod:`~agentgym.envs.swe.images`): ``image`` (an existing image),
  ``dockerfile`` (a Dockerfile to build), ``source_archive`` (an sdist named by ``package``,
  ``version`` and ``sha256``, built by
  :func:`~agentgym.envs.swe.sdist_image.build_sdist_image`), else the official SWE-bench instance image;
- how its tests run: ``test_cmd`` (a shell command run in ``/testbed``; the test ids to run are
  appended to it), or swebench 5's ``eval_script`` (the whole script, test patch included);
- how the log is read: ``log_parser``, a name in swebench's ``PARSER_REGISTRY`` (by default the one
  swebench maps ``repo`` to, else ``parse_log_pytest``), and ``eval_type``.

Unknown fields are kept (``SWETask.model_extra``), so a row round-trips whatever else it carries.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentgym.errors import DataError
from agentgym.types import Task, read_tasks

REPO_DIR = "/testbed"

INSTRUCTIONS = (
    "You are working in a checkout of the repository {repo} at {testbed}. Fix the issue below by editing "
    "the repository's source files. Use `bash`, `view`, `str_replace` and `create` to explore and edit, "
    "`run_tests` to run the task's tests, and call `submit` when you are done: your changes (the `git diff` "
    "against the starting commit, new files included) are graded by running the repository's tests. "
    "Do not edit the existing tests: they are replaced by the graders' own.\n\n"
    "<issue>\n{problem_statement}\n</issue>"
)


class SWETask(BaseModel):
    """One SWE-bench-format row; see the module docstring for what each field is for."""

    model_config = ConfigDict(extra="allow", frozen=True)

    instance_id: str = Field(min_length=1)
    repo: str
    base_commit: str = Field(min_length=1)
    problem_statement: str
    patch: str = ""
    test_patch: str = ""
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = Field(default_factory=list)
    version: str = ""
    hints_text: str = ""
    environment_setup_commit: str = ""
    created_at: str = ""
    image: str | None = None
    dockerfile: str | None = None
    source_archive: dict[str, str] | None = None
    test_cmd: str | None = None
    eval_script: str | None = None
    log_parser: str | None = None
    eval_type: str = "pass_and_fail"

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        """The Hub stores the test lists as JSON strings; a list is taken as it is."""
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else []
            except ValueError as e:
                raise ValueError(f"not a JSON list of test ids: {value[:60]!r}") from e
        return value

    @field_validator("source_archive")
    @classmethod
    def _names_a_package(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and not value.get("package"):
            raise ValueError("source_archive must name its package: {\"package\", \"version\", \"sha256\"}")
        return value

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int | float) else value

    @field_validator("FAIL_TO_PASS")
    @classmethod
    def _some_failing_test(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("FAIL_TO_PASS is empty: nothing would tell a fix from no fix")
        return value

    @model_validator(mode="after")
    def _pytest_command(self) -> SWETask:
        """The verifier owns a pytest run (a JUnit report, canaries, its options appended), so a
        ``test_cmd`` that runs another runner would grade every patch, the gold one too, as tampered."""
        if self.test_cmd is not None and not self.eval_script and not runs_pytest(self.test_cmd):
            raise ValueError(f"test_cmd {self.test_cmd[:80]!r} does not run pytest: the verifier's guarded "
                             "run needs pytest (which also runs unittest tests: python3 -m pytest -rA ...), "
                             "or give the row an eval_script")
        return self

    def to_task(self) -> Task:
        """The env's :class:`~agentgym.types.Task`: the issue as the prompt, every field in ``data``."""
        prompt = INSTRUCTIONS.format(repo=self.repo, testbed=REPO_DIR, problem_statement=self.problem_statement)
        return Task(id=self.instance_id, prompt=prompt, data=self.model_dump())

    @classmethod
    def of(cls, task: Task) -> SWETask:
        """The SWE row behind an env task (its ``data``)."""
        return cls.model_validate(task.data)


_PYTEST = re.compile(r"(?:^|[\s/;&|(])(?:py\.test|pytest)(?:$|[\s;&|)])|-m\s+pytest\b")


def runs_pytest(test_cmd: str) -> bool:
    """Whether ``test_cmd`` runs pytest (``python3 -m pytest``, ``pytest``, ``py.test``), not another runner."""
    return _PYTEST.search(test_cmd) is not None


def task_from_row(row: dict[str, Any]) -> Task:
    """One SWE-bench row as a task; a malformed row is a ``ValueError`` naming the field."""
    return SWETask.model_validate(row).to_task()


def load_tasks(source: str | Path, *, split: str = "test", limit: int | None = None) -> list[Task]:
    """Tasks from a JSONL file, a dataset saved with ``Dataset.save_to_disk``, or a Hub dataset name.

    Args:
        source: A ``.jsonl`` (or ``.jsonl.gz``) file; a directory written by ``save_to_disk`` (a
            ``DatasetDict`` is read at ``split``); or a Hub name such as ``princeton-nlp/SWE-bench_Verified``
            (read with ``datasets.load_dataset``, which needs the Hub or its cache).
        split: The split of a ``DatasetDict`` or Hub dataset.
        limit: Keep the first ``limit`` tasks.

    Raises:
        DataError: The source cannot be read or a row is malformed; the message says which and why.
    """
    path = Path(source)
    if path.is_file():
        tasks = read_tasks(path, task_from_row)
    else:
        tasks = _from_dataset(str(source), path, split)
    return tasks[:limit] if limit is not None else tasks


def _from_dataset(source: str, path: Path, split: str) -> list[Task]:
    try:
        import datasets
    except ImportError as e:
        raise DataError(f"reading {source!r} needs the datasets package: pip install 'agentgym[swe]'") from e
    try:
        if path.is_dir():
            loaded = datasets.load_from_disk(str(path))
        else:
            loaded = datasets.load_dataset(source, split=split)
    except Exception as e:  # datasets raises many kinds (FileNotFoundError, ConnectionError, DatasetNotFoundError)
        where = "directory" if path.is_dir() else "file or Hub dataset"
        raise DataError(f"could not read SWE tasks from {where} {source!r}: {type(e).__name__}: {e}") from e
    if isinstance(loaded, datasets.DatasetDict):
        if split not in loaded:
            raise DataError(f"{source}: no split {split!r}; it has {', '.join(loaded)}")
        loaded = loaded[split]
    tasks: list[Task] = []
    seen: set[str] = set()
    for index, row in enumerate(loaded):
        try:
            task = task_from_row(dict(row))
        except (ValueError, ValidationError) as e:
            raise DataError(f"{source}: row {index}: {e}") from e
        if task.id in seen:
            raise DataError(f"{source}: row {index}: duplicate instance_id {task.id!r}")
        seen.add(task.id)
        tasks.append(task)
    return tasks
