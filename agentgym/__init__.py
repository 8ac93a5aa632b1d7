"""agentgym: multi-turn, tool-calling environments for evaluating and training LLM agents.

``import agentgym`` is cheap: Docker, litellm and TRL are imported only where they are used.
"""

from agentgym.env import Dodge, Env, Feedback, Responder, ToolResult
from agentgym.errors import AgentgymError, EnvError, PolicyError, SandboxError, ToolError
from agentgym.policies.base import Policy, Reply
from agentgym.registry import make, register, registered
from agentgym.rewards.verifier import Episode
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
    "make",
    "read_jsonl",
    "register",
    "registered",
    "tool",
    "write_jsonl",
]

__version__ = "0.1.0"
