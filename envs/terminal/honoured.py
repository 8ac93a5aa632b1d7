"""Which ``task.toml`` fields the terminal env acts on, and the check that refuses the rest.

A Harbor task can ask for things this env does not do (a GPU, an MCP server, a network allow-list,
several steps). Running such a task anyway would grade the agent in a different world from the one the
task was written for, so every field set to anything but harbor's default must be in :data:`HONOURED`,
and some honoured fields take only the values the env can give (:func:`refused_value`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from agentgym.envs.terminal.config import NetworkMode

HONOURED: frozenset[str] = frozenset({
    "schema_version",  # also read from `version`; recorded, any value
    "task.*",  # [task]: `name` becomes the task's name; the rest is recorded
    "metadata.*",  # recorded, never read
    "source",  # recorded
    "agent.timeout_sec",
    "verifier.timeout_sec",
    "verifier.env",  # literal values only
    "verifier.environment_mode",  # "separate": the tests run in a copy of the agent's container
    "solution.env",  # literal values only
    "environment.build_timeout_sec",
    "environment.docker_image",
    "environment.cpus",
    "environment.memory_mb",  # also read from `memory = "2G"`
    "environment.storage_mb",  # also read from `storage = "10G"`
    "environment.gpus",  # 0 only (Terminal-Bench 2 tasks say `gpus = 0`)
    "environment.network_mode",  # "public" or "no-network"; also read from `allow_internet`
})
"""Dotted ``task.toml`` field names the terminal env acts on; ``x.*`` is ``x`` and everything under it.
Any other field set to a value other than harbor's default is refused at load, by name."""

_HOST_VARIABLE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
"""Harbor's template for a value read from the host's environment (``${VAR}``, ``${VAR:-default}``)."""


def is_honoured(dotted: str) -> bool:
    """Whether the field (or a section above it, through ``x.*``) is in :data:`HONOURED`."""
    parts = dotted.split(".")
    return dotted in HONOURED or any(".".join(parts[:n]) + ".*" in HONOURED for n in range(1, len(parts) + 1))


def departures(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Each field set to something other than its default, as ``(dotted name, value)``.

    A section (a model whose default is a model) is walked into unless it is honoured whole, so
    ``[agent] timeout_sec = 900`` is reported as ``agent.timeout_sec``, not as ``agent``; a model
    whose default is ``None`` (``[environment.healthcheck]``) is reported whole.
    """
    for name, field in type(model).model_fields.items():
        if field.exclude:
            continue  # allow_internet: already read into network_mode, and left None
        dotted = prefix + name
        value = getattr(model, name)
        default = field.get_default(call_default_factory=True)
        if value == default:
            continue
        if isinstance(value, BaseModel) and isinstance(default, BaseModel) and not is_honoured(dotted):
            yield from departures(value, dotted + ".")
        else:
            yield dotted, value


def _positive(value: Any) -> str | None:
    return None if value is None or value > 0 else "must be positive"


def _literal_env(value: dict[str, str]) -> str | None:
    """Harbor fills ``${VAR}`` values from the host running it; agentgym passes no host variables in."""
    templated = sorted(key for key, text in value.items() if _HOST_VARIABLE.fullmatch(text))
    if templated:
        return f"takes literal values only; {', '.join(templated)} would be read from the host's environment"
    return None


_VALUE_CHECKS: dict[str, Any] = {
    "agent.timeout_sec": _positive,
    "verifier.timeout_sec": _positive,
    "environment.build_timeout_sec": _positive,
    "environment.cpus": _positive,
    "environment.memory_mb": _positive,
    "environment.storage_mb": _positive,
    "environment.gpus": lambda v: None if v in (None, 0) else "only 0 is honoured: the terminal env gives no GPUs",
    "environment.network_mode": lambda v: None if v in (NetworkMode.PUBLIC, NetworkMode.NO_NETWORK)
    else "only 'public' and 'no-network' are honoured",
    "verifier.env": _literal_env,
    "solution.env": _literal_env,
}


def refused_value(dotted: str, value: Any) -> str | None:
    """Why an honoured field's value cannot be honoured, or ``None`` when it can."""
    check = _VALUE_CHECKS.get(dotted)
    return check(value) if check else None


def show(value: Any, limit: int = 80) -> str:
    """A field's value as ``task.toml`` readers would recognise it, cut to ``limit`` characters."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    elif isinstance(value, list):
        value = [item.model_dump(mode="json") if isinstance(item, BaseModel) else item for item in value]
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def refusals(config: BaseModel) -> list[tuple[str, str]]:
    """``(field, why)`` for each field that is set but not honoured, or honoured but set to a value the env
    cannot give."""
    found = []
    for dotted, value in departures(config):
        if not is_honoured(dotted):
            found.append((dotted, f"{dotted} = {show(value)} is not honoured by the terminal env"))
        elif reason := refused_value(dotted, value):
            found.append((dotted, f"{dotted} = {show(value)}: {reason}"))
    return found
