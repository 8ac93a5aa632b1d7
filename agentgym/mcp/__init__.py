"""The Model Context Protocol, both ways, through the official ``mcp`` SDK (``pip install 'agentgym[llm]'``).

- MCP servers as tool sources: :class:`MCPEnv` (registered as ``mcp``) offers the tools of any
  MCP servers, on the host (stdio), behind a URL (streamable HTTP) or inside the episode's
  sandbox; :class:`MCPConnection` is one connection, usable from any env.
- An env as an MCP server: ``agentgym mcp serve ENV`` (:mod:`agentgym.mcp.serve`) lets MCP clients
  drive episodes of any registered env.
"""

from agentgym.mcp.client import HTTPServer, MCPConnection, SandboxServer, StdioServer, server_spec
from agentgym.mcp.env import MCPEnv, MCPTool

__all__ = ["HTTPServer", "MCPConnection", "MCPEnv", "MCPTool", "SandboxServer", "StdioServer", "server_spec"]
