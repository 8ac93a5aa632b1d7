"""``task.toml`` as Harbor reads it: a field-for-field copy of ``harbor.models.task.config.TaskConfig``.

Harbor (the runner Terminal-Bench 2.x tasks are written for) needs Python 3.12 and brings litellm,
supabase and fastmcp with it, so agentgym cannot import its models; these mirror harbor 0.26.0's field
names, types and defaults instead, and ``tests/terminal/harbor_check.py`` checks the two parse every
fixture alike. Two things differ on purpose:

- every model forbids extra keys (harbor ignores them), so a field this copy does not know is refused
  by name instead of dropped without a word;
- values harbor drops or overwrites without saying are refused: ``version`` and ``schema_version``
  both given with different values, a ``memory``/``storage`` that is not a size string, a
  ``memory``/``memory_mb`` pair that disagree (harbor refuses that one too).

Harbor's legacy spellings are read as harbor reads them: ``version`` is ``schema_version``,
``[environment].memory = "2G"`` is ``memory_mb = 2048`` (``storage`` likewise), and
``allow_internet = false`` is ``network_mode = "no-network"`` unless ``network_mode`` or
``allowed_hosts`` is given. Validators of fields the terminal env refuses anyway (allow-list host
syntax, MCP header credentials, artifact paths, step names) are not copied: such a task is refused
before they would matter.
"""

from __future__ import annotations

import math
import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

HARBOR_VERSION = "0.26.0"
"""The harbor release these models copy."""

ORG_NAME_PATTERN = r"^[a-zA-Z0-9][a-zA-Z0-9._-]*/[a-zA-Z0-9][a-zA-Z0-9._-]*$"
"""``harbor.constants.ORG_NAME_PATTERN``: what ``[task].name`` must look like."""

MAIN_SERVICE_NAME = "main"


class _Model(BaseModel):
    """Frozen, and refusing keys it does not know (harbor's models silently ignore them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class NetworkMode(StrEnum):
    NO_NETWORK = "no-network"
    PUBLIC = "public"
    ALLOWLIST = "allowlist"


class TaskOS(StrEnum):
    LINUX = "linux"
    WINDOWS = "windows"


class VerifierEnvironmentMode(StrEnum):
    SHARED = "shared"
    SEPARATE = "separate"


class MultiStepRewardStrategy(StrEnum):
    MEAN = "mean"
    FINAL = "final"


def _check_network_policy(mode: NetworkMode | None, allowed_hosts: list[str] | None) -> None:
    """Harbor's rule: ``allowed_hosts`` only goes with ``network_mode = "allowlist"``."""
    if (mode is None and allowed_hosts is not None) or (mode != NetworkMode.ALLOWLIST and allowed_hosts):
        raise ValueError("allowed_hosts is only valid when network_mode='allowlist'.")


class PhaseNetworkPolicyConfig(_Model):
    """``[agent]``/``[verifier]`` network overrides (unset: the environment's policy applies)."""

    network_mode: NetworkMode | None = None
    allowed_hosts: list[str] | None = None

    @model_validator(mode="after")
    def _network_policy(self) -> PhaseNetworkPolicyConfig:
        _check_network_policy(self.network_mode, self.allowed_hosts)
        return self


class BaselineNetworkPolicyConfig(_Model):
    """An environment's own network policy; public unless the task says otherwise."""

    network_mode: NetworkMode = NetworkMode.PUBLIC
    allowed_hosts: list[str] | None = None

    @model_validator(mode="after")
    def _network_policy(self) -> BaselineNetworkPolicyConfig:
        _check_network_policy(self.network_mode, self.allowed_hosts)
        return self


class Author(_Model):
    name: str
    email: str | None = None


class PackageInfo(_Model):
    """``[task]``: the task's registry identity; ``name`` replaces the folder name as the task's name."""

    name: str
    version: str | None = Field(default=None, min_length=1)
    description: str = ""
    authors: list[Author] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _org_slash_name(cls, value: str) -> str:
        if not re.match(ORG_NAME_PATTERN, value) or ".." in value:
            raise ValueError(f"Package name must be in 'org/name' format, without '..'. Got: {value}")
        return value


class SolutionConfig(_Model):
    env: dict[str, str] = Field(default_factory=dict)


class AgentConfig(PhaseNetworkPolicyConfig):
    timeout_sec: float | None = None
    user: str | int | None = None


class HealthcheckConfig(_Model):
    command: str
    interval_sec: float = 5.0
    timeout_sec: float = 30.0
    start_period_sec: float = 0.0
    start_interval_sec: float = 5.0
    retries: int = 3


class TpuSpec(_Model):
    type: str = Field(min_length=1)
    topology: str

    @field_validator("topology")
    @classmethod
    def _topology(cls, value: str) -> str:
        if not re.match(r"^[1-9]\d*(x[1-9]\d*)+$", value.strip()):
            raise ValueError(f"Invalid TPU topology '{value}': expected e.g. '2x4' or '2x2x1'.")
        return value.strip()


class MCPServerConfig(_Model):
    name: str
    transport: Literal["stdio", "sse", "streamable-http"] = "sse"
    url: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("transport", mode="before")
    @classmethod
    def _http_alias(cls, value: Any) -> Any:
        return "streamable-http" if value == "http" else value

    @model_serializer(mode="wrap")
    def _without_empty_headers(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Harbor leaves empty ``headers`` out of dumps (its ``exclude_if``, which needs pydantic 2.12)."""
        data: dict[str, Any] = handler(self)
        if not self.headers:
            data.pop("headers", None)
        return data


class ArtifactConfig(_Model):
    source: str
    destination: str | None = None
    exclude: list[str] = Field(default_factory=list)
    service: str | None = None


class VerifierCollectConfig(_Model):
    command: str
    service: str = MAIN_SERVICE_NAME
    timeout_sec: float = 60.0
    user: str | int | None = None


def _size_to_mb(size: str) -> int:
    """Harbor's ``EnvironmentConfig._parse_size_to_mb``: ``"2G"`` is 2048, ``"512M"`` 512, ``"2048K"`` 2."""
    size = size.strip().upper()
    units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
    if size[-1:] not in units:
        raise ValueError(f"Invalid size format: {size}. Expected format like '1G', '512M', etc.")
    return int(float(size[:-1]) * units[size[-1]])


def _legacy_size(data: dict[str, Any], old: str, new: str) -> None:
    """``memory``/``storage`` (size strings) become ``memory_mb``/``storage_mb``, as harbor does."""
    if old not in data:
        return
    value = data.pop(old)
    if not isinstance(value, str):
        raise ValueError(f"'{old}' must be a size string like '2G' (harbor would drop {value!r} silently)")
    megabytes = _size_to_mb(value)
    if new in data and data[new] != megabytes:
        raise ValueError(f"Conflicting '{old}' and '{new}' values: {old}={value!r} ({megabytes} MB) != {data[new]!r}.")
    data.setdefault(new, megabytes)


class EnvironmentConfig(BaselineNetworkPolicyConfig):
    build_timeout_sec: float = 600.0
    docker_image: str | None = None
    os: TaskOS = TaskOS.LINUX
    cpus: int | float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    gpu_types: list[str] | None = None
    tpu: TpuSpec | None = None
    mcp_servers: list[MCPServerConfig] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    skills_dir: str | None = None
    healthcheck: HealthcheckConfig | None = None
    workdir: str | None = None
    allow_internet: bool | None = Field(default=None, exclude=True)
    """Deprecated in harbor: read into ``network_mode`` and left ``None``, as harbor leaves it."""

    @model_validator(mode="before")
    @classmethod
    def _legacy_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        _legacy_size(data, "memory", "memory_mb")
        _legacy_size(data, "storage", "storage_mb")
        allow_internet = data.pop("allow_internet", None)
        if allow_internet is not None:
            if not isinstance(allow_internet, bool):
                raise ValueError(f"allow_internet must be true or false, not {allow_internet!r}")
            if "network_mode" not in data and data.get("allowed_hosts") is None:
                data["network_mode"] = NetworkMode.PUBLIC if allow_internet else NetworkMode.NO_NETWORK
        return data

    @field_validator("cpus")
    @classmethod
    def _whole_cpus(cls, value: int | float | None) -> int | float | None:
        """Harbor's ``normalize_cpus``: ``2.0`` is ``2``; NaN and infinity are refused."""
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"cpus must be a finite number; got {value}.")
            if value.is_integer():
                return int(value)
        return value

    @field_validator("os", mode="before")
    @classmethod
    def _lower_os(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value


class VerifierConfig(PhaseNetworkPolicyConfig):
    timeout_sec: float = 600.0
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    environment_mode: VerifierEnvironmentMode | None = None
    environment: EnvironmentConfig | None = None
    collect: list[VerifierCollectConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _mode_matches_environment(self) -> VerifierConfig:
        if self.environment_mode == VerifierEnvironmentMode.SHARED and self.environment is not None:
            raise ValueError("[verifier].environment_mode='shared' is incompatible with [verifier.environment].")
        return self


class StepConfig(_Model):
    name: str
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    min_reward: float | dict[str, float] | None = None
    healthcheck: HealthcheckConfig | None = None
    artifacts: list[str | ArtifactConfig] = Field(default_factory=list)


class TaskConfig(_Model):
    """A whole ``task.toml``."""

    schema_version: str = "1.4"
    task: PackageInfo | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier: VerifierConfig = Field(default_factory=VerifierConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    solution: SolutionConfig = Field(default_factory=SolutionConfig)
    source: str | None = None
    multi_step_reward_strategy: MultiStepRewardStrategy | None = None
    steps: list[StepConfig] | None = None
    artifacts: list[str | ArtifactConfig] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _version_is_schema_version(cls, data: Any) -> Any:
        """Harbor renames ``version`` (the only spelling Terminal-Bench 2 tasks use) to ``schema_version``."""
        if isinstance(data, dict) and "version" in data:
            data = dict(data)
            version = data.pop("version")
            if data.setdefault("schema_version", version) != version:
                raise ValueError(
                    f"version = {version!r} and schema_version = {data['schema_version']!r} disagree "
                    "(harbor would drop version silently)"
                )
        return data
