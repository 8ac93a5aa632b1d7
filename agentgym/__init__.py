"""agentgym: multi-turn, tool-calling environments for evaluating and training LLM agents.

``import agentgym`` is cheap: Docker, litellm and TRL are imported only where they are used, and
:func:`evaluate` and :func:`check_env` (which bring in the runner and the test kit) on first use.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from agentgym.env import Dodge, Env, Feedback, Responder, ToolResult
from agentgym.errors import AgentgymError, EnvError, PolicyError, SandboxError, ToolError
from agentgym.policies.base import Policy, Reply
from agentgym.registry import make, register, registered
from agentgym.rewards.verifier import Episode
from agentgym.rollout import rollout  # the function: it shadows the module of that name on this package
from agentgym.tools import tool
from agentgym.types import (
    Message,
    Reward,
    StepResult,
    Task,
    ToolCall,
    ToolSpec,
    Trajectory,
    Turn,
    Usage,
    read_jsonl,
    write_jsonl,
)

if _TYPE_CHECKING:
    from agentgym.evaluation import evaluate
    from agentgym.testing import check_env

#: Names imported on first use, and the module each comes from.
_LAZY = {"evaluate": "agentgym.evaluation", "check_env": "agentgym.testing"}


def __getattr__(name: str) -> _Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'agentgym' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AgentgymError",
    "Dodge",
    "Env",
    "EnvError",
    "Episode",
    "Feedback",
    "Message",
    "Policy",
    "PolicyError",
    "Reply",
    "Responder",
    "Reward",
    "SandboxError",
    "StepResult",
    "Task",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "Trajectory",
    "Turn",
    "Usage",
    "check_env",
    "evaluate",
    "make",
    "read_jsonl",
    "register",
    "registered",
    "rollout",
    "tool",
    "write_jsonl",
]

__version__ = "0.1.0"
