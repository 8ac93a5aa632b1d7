"""An MCP server written with the official SDK, for the tests: run as a script it serves stdio.

Tools: ``add`` (numbers), ``divide`` (raises a tool error on zero), ``screenshot`` (an image),
``count`` (state kept by the server process between calls).
"""

from __future__ import annotations

import base64
import os

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# A 1x1 PNG: what a GUI tool's screenshot looks like on the wire.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def calc() -> MCPServer:
    server = MCPServer("calc")
    calls = {"n": 0}

    @server.tool()
    def add(a: float, b: float) -> str:
        """Add two numbers."""
        return str(a + b)

    @server.tool()
    def divide(a: float, b: float) -> str:
        """Divide a by b."""
        if b == 0:
            raise ToolError("cannot divide by zero")
        return str(a / b)

    @server.tool()
    def screenshot() -> Image:
        """Take a screenshot of the screen."""
        return Image(data=PIXEL, format="png")

    @server.tool()
    def count() -> str:
        """Count the calls of this tool so far, in this server process."""
        calls["n"] += 1
        return f"{calls['n']} (pid {os.getpid()})"

    return server


if __name__ == "__main__":
    calc().run("stdio")
