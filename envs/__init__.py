"""Built-in environment families, shipped as ``agentgym.envs.*``."""

from agentgym.registry import register

DATA_FETCHERS: dict[str, str] = {
    "search": "agentgym.envs.search.data:fetch",
}
"""``agentgym data fetch NAME``: each name's ``module:function(force=False, index_url=None) -> Path``."""


def register_builtin() -> None:
    """Register the built-in environments (called through the ``agentgym.envs`` entry point).

    Each has a versioned id and its old short name as an alias (``code`` is ``agentgym/code-v0``).
    """
    register("agentgym/code-v0", "agentgym.envs.code.env:CodeEnv", aliases=["code"])
    register("agentgym/toy-v0", "agentgym.envs.toy.env:ColourEnv", aliases=["toy"])
    register("agentgym/search-v0", "agentgym.envs.search.env:SearchEnv", aliases=["search"])
    register("agentgym/swe-v0", "agentgym.envs.swe.env:SWEEnv", aliases=["swe"])
    register("agentgym/terminal-v0", "agentgym.envs.terminal.env:TerminalEnv", aliases=["terminal"])
    register("agentgym/mcp-v0", "agentgym.mcp.env:MCPEnv", aliases=["mcp"])
    register("agentgym/gui-v0", "agentgym.envs.gui.env:GUIEnv", aliases=["gui"])
    register("agentgym/gui-predict-v0", "agentgym.envs.gui.predict:GUIPredictEnv", aliases=["gui-predict"])


register_builtin()
