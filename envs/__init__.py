"""Built-in environment families, shipped as ``agentgym.envs.*``."""

from agentgym.registry import register

DATA_FETCHERS: dict[str, str] = {
    "search": "agentgym.envs.search.data:fetch",
}
"""``agentgym data fetch NAME``: each name's ``module:function(force: bool = False) -> Path``."""


def register_builtin() -> None:
    """Register the built-in environments (called through the ``agentgym.envs`` entry point)."""
    register("code", "agentgym.envs.code.env:CodeEnv")
    register("toy", "agentgym.envs.toy.env:ColourEnv")
    register("search", "agentgym.envs.search.env:SearchEnv")
    register("mcp", "agentgym.mcp.env:MCPEnv")


register_builtin()
