"""Harbor's own reading of the fixture tasks, for ``test_harbor_agrees``: run it under harbor's Python.

    $HARBOR_PYTHON tests/terminal/harbor_check.py tests/terminal/tasks [more/task.toml ...]

prints one JSON object: ``harbor`` (its version), ``schema`` (every ``TaskConfig`` field, dotted, with
its type and default, from :func:`schema`), ``tasks`` (per task folder, the name, instruction and
``config.model_dump(mode="json")`` that ``harbor.models.task.task.Task`` gives it) and ``configs`` (per
``.toml`` argument, the dump of ``TaskConfig.model_validate_toml``). Harbor needs Python
3.12 and agentgym's tests run on 3.11, hence a subprocess; HARBOR_VENV.md says how to make that Python.
This file imports neither agentgym nor (at module level) harbor, so both sides can use :func:`schema`.
"""

from __future__ import annotations

import enum
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined, to_jsonable_python


def shape(annotation: Any) -> str:
    """A type as text that reads the same for harbor's classes and agentgym's copies of them."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "None"
    if annotation is Any:
        return "Any"
    if origin in (typing.Union, types.UnionType):
        return " | ".join(sorted(shape(arg) for arg in args))
    if origin is typing.Literal:
        return "Literal[" + ", ".join(sorted(repr(arg) for arg in args)) + "]"
    if origin is not None:
        return f"{getattr(origin, '__name__', origin)}[{', '.join(shape(arg) for arg in args)}]"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "enum[" + ", ".join(sorted(str(member.value) for member in annotation)) + "]"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def schema(model: type[BaseModel], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every field of ``model`` and of the models inside it, by dotted name (``[]`` for a list's items)."""
    fields: dict[str, dict[str, Any]] = {}
    for name, field in model.model_fields.items():
        dotted = prefix + name
        default = field.get_default(call_default_factory=True)
        fields[dotted] = {
            "type": shape(field.annotation),
            "default": "<required>" if default is PydanticUndefined else to_jsonable_python(default),
            "exclude": bool(field.exclude),
        }
        for inner in _models_in(field.annotation):
            is_list = "list[" in shape(field.annotation)
            fields.update(schema(inner, dotted + ("[]." if is_list else ".")))
    return fields


def main(roots: list[str]) -> None:
    from importlib.metadata import version

    from harbor.models.task.config import TaskConfig  # type: ignore[import-not-found]
    from harbor.models.task.task import Task  # type: ignore[import-not-found]

    tasks, configs = {}, {}
    for root in map(Path, roots):
        if root.suffix == ".toml":  # a task.toml alone, read by TaskConfig (harbor's Task wants a whole folder)
            configs[root.name] = TaskConfig.model_validate_toml(root.read_text()).model_dump(mode="json")
            continue
        folders = [root] if (root / "task.toml").exists() else sorted(p for p in root.iterdir() if p.is_dir())
        for folder in folders:
            task = Task(folder)
            tasks[folder.name] = {
                "name": task.name,
                "instruction": task.instruction,
                "config": task.config.model_dump(mode="json"),
            }
    report = {"harbor": version("harbor"), "schema": schema(TaskConfig), "tasks": tasks, "configs": configs}
    json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
