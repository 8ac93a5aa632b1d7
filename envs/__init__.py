"""Built-in environment families, shipped as ``agentgym.envs.*``."""

from agentgym.registry import register


def register_builtin() -> None:
    """Register the built-in environments (called through the ``agentgym.envs`` entry point)."""
    register("code", "agentgym.envs.code.env:CodeEnv")


register_builtin()
