"""Harbor task folders (the format Terminal-Bench 2.x ships in), read and checked before anything runs.

A folder::

    task-name/
      instruction.md      what the agent is told (leading canary comment lines are dropped, as harbor does)
      task.toml           read by :class:`~agentgym.envs.terminal.config.TaskConfig`
      environment/        Dockerfile and its build context, unless task.toml names a docker_image
      tests/test.sh       the verifier; writes /logs/verifier/reward.txt or reward.json
      solution/solve.sh   the oracle (optional)

Everything is checked at load, so a task the terminal env cannot run as written fails there, naming the
task and the field or file, and not halfway through a batch: an unknown ``task.toml`` key, a field that
is set but not honoured (:data:`~agentgym.envs.terminal.honoured.HONOURED`), a missing or empty
instruction, a missing ``tests/test.sh``, and no image source (neither a Dockerfile nor a docker_image).
"""

from __future__ import annotations

import hashlib
import re
import stat
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agentgym.envs.terminal.config import TaskConfig
from agentgym.envs.terminal.honoured import refusals
from agentgym.errors import DataError

_CANARY_LINE = re.compile(r"^(<!--.*canary.*-->|#.*canary.*)$", re.IGNORECASE)

NOT_HONOURED_FILES = {
    "environment/docker-compose.yaml": "extra services (docker compose) are not honoured",
    "environment/docker-compose.yml": "extra services (docker compose) are not honoured",
    "trajectory.json": "prior agent context (an ATIF trajectory) is not honoured",
}
"""Files harbor would act on that the terminal env does not, so a task holding one is refused."""


class TaskFormatError(DataError):
    """A Harbor task folder the terminal env cannot run as written.

    Attributes:
        task: The task folder.
        fields: The ``task.toml`` fields (dotted) or files at fault; empty when the fault is not one field's.
    """

    def __init__(self, task: Path, message: str, fields: tuple[str, ...] = ()) -> None:
        super().__init__(f"{task}: {message}")
        self.task = task
        self.fields = fields


@dataclass(frozen=True)
class HarborTask:
    """One task folder, checked.

    Attributes:
        name: ``[task].name`` when given (``org/name``), else the folder's name, as harbor names it.
        path: The task folder.
        instruction: ``instruction.md`` without its leading canary lines.
        config: ``task.toml``.
        environment_dir: The build context (``environment/``, holding the Dockerfile); ``None`` for a task
            that names only a ``docker_image``.
        docker_image: ``[environment].docker_image``: a prebuilt image, used when present; a task may ship
            its Dockerfile too (Terminal-Bench 2 does), which builds it when it is not.
        tests_dir: ``tests/``, copied to ``/tests`` to verify.
        solution: ``solution/solve.sh``, or ``None`` when the task ships no oracle.
    """

    name: str
    path: Path
    instruction: str
    config: TaskConfig
    environment_dir: Path | None
    docker_image: str | None
    tests_dir: Path
    solution: Path | None

    @property
    def test_script(self) -> Path:
        return self.tests_dir / "test.sh"

    def build_context_hash(self) -> str:
        """A sha256 that changes exactly when the image this task runs in would: names a cached image.

        Over ``environment/`` (sorted relative paths, kinds, exec bits, bytes, link targets) and the
        ``docker_image`` name when there is one; not over ``tests/``, ``solution/`` or ``instruction.md``,
        which go into a running container and never into the image. A base-image substitution the env
        makes is not in it: the env adds that to its own key.
        """
        digest = hashlib.sha256(b"harbor-build-context-v1\0")
        digest.update(f"image:{self.docker_image or ''}\0".encode())
        root = self.path / "environment"
        if root.is_dir():
            for entry in sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix()):
                digest.update(_entry_record(root, entry))
        return digest.hexdigest()


def _entry_record(root: Path, entry: Path) -> bytes:
    """One build-context entry, length-prefixed so that no two different trees hash alike."""
    relative = entry.relative_to(root).as_posix().encode()
    mode = entry.lstat().st_mode
    if stat.S_ISLNK(mode):
        kind, body = b"L", str(entry.readlink()).encode()
    elif stat.S_ISDIR(mode):
        kind, body = b"D", b""
    elif stat.S_ISREG(mode):
        kind, body = (b"X" if mode & 0o111 else b"F"), entry.read_bytes()
    else:
        raise TaskFormatError(root.parent, f"environment/{relative.decode()} is neither a file, a folder nor a link")
    return b"%s%d:%s%d:" % (kind, len(relative), relative, len(body)) + body


def strip_canary(text: str) -> str:
    """Harbor's ``strip_canary``: leading canary comment lines (and the blank lines after them) are for
    training-data filters, not for the agent."""
    lines = text.split("\n")
    start = 0
    while start < len(lines) and _CANARY_LINE.match(lines[start].strip()):
        start += 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    return "\n".join(lines[start:])


_UNION_TAGS = {"int", "float", "str", "bool", "none"}
"""Besides model class names and parametrised types (``dict[str,float]``): the member names pydantic puts
in an error's location when a value matches no member of a union (``environment.cpus.int``)."""


def _where(loc: tuple[int | str, ...]) -> str:
    """An error's location as the dotted field name ``task.toml`` readers know, without union member tags."""
    models = {cls.__name__ for cls in _all_models(TaskConfig)}
    parts = [part for part in loc if isinstance(part, int) or not (
        part in _UNION_TAGS or part in models or "[" in part or part.startswith("function-"))]
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in parts).lstrip(".")


def _all_models(model: type[BaseModel]) -> set[type[BaseModel]]:
    found = {model}
    for field in model.model_fields.values():
        for inner in _models_in(field.annotation):
            if inner not in found:
                found |= _all_models(inner)
    return found


def _models_in(annotation: object) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def read_config(folder: Path) -> TaskConfig:
    """``task.toml``, parsed and validated; every problem in it is named in one :class:`TaskFormatError`."""
    path = folder / "task.toml"
    if not path.is_file():
        raise TaskFormatError(folder, "no task.toml")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskFormatError(folder, f"task.toml is not TOML: {exc}") from None
    try:
        return TaskConfig.model_validate(data)
    except ValidationError as exc:
        problems: dict[str, list[str]] = {}  # by field: each member of a union adds its own
        for error in exc.errors():
            problems.setdefault(_where(error["loc"]), []).append(
                "" if error["type"] == "extra_forbidden" else error["msg"])
        lines = [f"unknown field {where} (harbor's task.toml has no such field)" if messages == [""]
                 else f"{where or 'task.toml'}: {' or '.join(dict.fromkeys(messages))}"
                 for where, messages in problems.items()]
        raise TaskFormatError(folder, "task.toml: " + "; ".join(lines), tuple(problems)) from None


def load_task(folder: Path) -> HarborTask:
    """One task folder, checked as the module docstring says."""
    folder = Path(folder)
    config = read_config(folder)
    refused = refusals(config)
    refused += [(name, f"{name}: {why}") for name, why in NOT_HONOURED_FILES.items() if (folder / name).exists()]
    if refused:
        raise TaskFormatError(folder, "; ".join(why for _, why in refused), tuple(name for name, _ in refused))

    instruction_path = folder / "instruction.md"
    if not instruction_path.is_file():
        raise TaskFormatError(folder, "no instruction.md", ("instruction.md",))
    instruction = strip_canary(instruction_path.read_text(encoding="utf-8"))
    if not instruction.strip():
        raise TaskFormatError(folder, "instruction.md is empty", ("instruction.md",))
    if not (folder / "tests" / "test.sh").is_file():
        raise TaskFormatError(folder, "no tests/test.sh (the verifier)", ("tests/test.sh",))

    dockerfile = folder / "environment" / "Dockerfile"
    image = config.environment.docker_image
    if not image and not dockerfile.is_file():
        raise TaskFormatError(folder, "neither environment/Dockerfile nor environment.docker_image is given",
                              ("environment/Dockerfile", "environment.docker_image"))

    solve = folder / "solution" / "solve.sh"
    return HarborTask(
        name=config.task.name if config.task else folder.name,
        path=folder,
        instruction=instruction,
        config=config,
        environment_dir=dockerfile.parent if dockerfile.is_file() else None,
        docker_image=image,
        tests_dir=folder / "tests",
        solution=solve if solve.is_file() else None,
    )


def load_tasks(path: Path | str) -> list[HarborTask]:
    """The task in ``path`` (a folder holding task.toml), or every task folder directly inside it.

    In a folder of tasks, each folder that is not hidden must be a task: a stray one is refused rather
    than skipped, since a task left out of a run without a word looks like one that ran. Names are unique.
    """
    root = Path(path)
    if not root.is_dir():
        raise TaskFormatError(root, "not a folder")
    if (root / "task.toml").exists():
        return [load_task(root)]
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    if not folders:
        raise TaskFormatError(root, "holds no task.toml and no task folders")
    tasks = [load_task(folder) for folder in folders]
    seen: dict[str, Path] = {}
    for task in tasks:
        if task.name in seen:
            raise TaskFormatError(task.path, f"task name {task.name!r} is also {seen[task.name]}'s", ("task.name",))
        seen[task.name] = task.path
    return tasks
