"""MCP servers as sources of tools: ``tools/list`` gives the specs the model sees, ``tools/call`` runs them.

A server is described by a spec: :class:`StdioServer` (a command on the host), :class:`HTTPServer`
(a streamable-HTTP URL) or :class:`SandboxServer` (a command run inside the episode's sandbox, whose
isolation then covers the server; see :mod:`~agentgym.mcp.sandbox_stdio`). :class:`MCPConnection`
holds one live connection through the official ``mcp`` SDK's :class:`mcp.Client`.

The connection lives in a task of its own, which enters and leaves the SDK's context (anyio task
groups must be left by the task that entered them); calls are made from any task of the same event
loop. A tool's error result (``isError``) and a JSON-RPC error for one call (unknown tool, invalid
parameters) become :class:`~agentgym.errors.ToolError`, which the env turns into a tool-error
observation like any other. A connection that closes or times out raises
:class:`~agentgym.errors.EnvError` and ends the episode with its reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agentgym.errors import EnvError, ToolError
from agentgym.types import ContentPart, ImagePart, TextPart, ToolSpec

if TYPE_CHECKING:
    from agentgym.sandboxes.contract import Sandbox

CONNECT_TIMEOUT = 60.0
CLOSE_TIMEOUT = 30.0

log = logging.getLogger(__name__)


class StdioServer(BaseModel):
    """An MCP server started on the host as a subprocess, spoken to over its stdin and stdout."""

    kind: Literal["stdio"] = "stdio"
    command: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    prefix: str = ""


class HTTPServer(BaseModel):
    """An MCP server reached over streamable HTTP at ``url`` (e.g. ``http://127.0.0.1:8000/mcp``)."""

    kind: Literal["http"] = "http"
    url: str
    prefix: str = ""


class SandboxServer(BaseModel):
    """An MCP stdio server started inside the episode's sandbox, with the sandbox's limits and no network.

    ``files`` are written into the sandbox first (path → text), e.g. the server's own source.
    """

    kind: Literal["sandbox"] = "sandbox"
    command: list[str]
    files: dict[str, str] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    prefix: str = ""


ServerSpec = StdioServer | HTTPServer | SandboxServer


def server_spec(value: ServerSpec | str | dict[str, Any]) -> ServerSpec:
    """A spec from what a user writes: a spec, a dict with ``kind``, a URL, or a command line.

    ``"http://127.0.0.1:8000/mcp"`` is an :class:`HTTPServer`; ``"sandbox: python3 srv.py"`` a
    :class:`SandboxServer`; any other string a :class:`StdioServer` command, split like a shell does.

    Raises:
        EnvError: The value describes no server.
    """
    if isinstance(value, StdioServer | HTTPServer | SandboxServer):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("http://", "https://")):
            return HTTPServer(url=text)
        if text.startswith("sandbox:"):
            return SandboxServer(command=shlex.split(text.removeprefix("sandbox:")))
        if not text:
            raise EnvError("an empty MCP server command")
        return StdioServer(command=shlex.split(text))
    if isinstance(value, dict):
        kinds: dict[str, type[ServerSpec]] = {"stdio": StdioServer, "http": HTTPServer, "sandbox": SandboxServer}
        kind = value.get("kind", "http" if "url" in value else "stdio")
        if kind not in kinds:
            raise EnvError(f"MCP server kind {kind!r}: expected one of {', '.join(kinds)}")
        try:
            return kinds[kind].model_validate({**value, "kind": kind})
        except ValueError as e:
            raise EnvError(f"bad MCP server {value!r}: {e}") from e
    raise EnvError(f"cannot read an MCP server from {value!r}")


def to_content(result: Any) -> str | list[ContentPart]:
    """An MCP tool result's content as a tool message's content: text, or text and image parts.

    Text stays a string when there is nothing but text. Images become ``data:`` URI image parts;
    embedded text resources become text; what a chat model cannot read (audio, binary resources,
    links) becomes a line saying what it was.
    """
    parts: list[ContentPart] = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(TextPart(text=block.text))
        elif kind == "image":
            parts.append(ImagePart(image_url={"url": f"data:{block.mime_type};base64,{block.data}"}))
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(TextPart(text=text if text is not None else
                                  f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'})]"))
        elif kind == "resource_link":
            parts.append(TextPart(text=f"[resource {block.uri}]"))
        else:
            parts.append(TextPart(text=f"[{kind or 'unknown'} content omitted]"))
    if not parts and result.structured_content is not None:
        parts.append(TextPart(text=json.dumps(result.structured_content)))
    if all(isinstance(p, TextPart) for p in parts):
        return "\n".join(p.text for p in parts if isinstance(p, TextPart))
    return parts


class MCPConnection:
    """One live connection to an MCP server: its tools, and calls to them.

    Usage::

        connection = MCPConnection(server_spec("python3 my_server.py"))
        tools = await connection.connect()          # tools/list (every page)
        content = await connection.call("add", {"a": 1, "b": 2})
        await connection.close()

    Args:
        spec: Which server.
        sandbox: The sandbox a :class:`SandboxServer` runs in.
        call_timeout: Seconds one ``tools/call`` may take.
    """

    def __init__(self, spec: ServerSpec, *, sandbox: Sandbox | None = None, call_timeout: float = 300.0) -> None:
        if isinstance(spec, SandboxServer) and sandbox is None:
            raise EnvError("an MCP server that runs in the sandbox needs the env's sandbox")
        self.spec = spec
        self.sandbox = sandbox
        self.call_timeout = call_timeout
        self.tools: list[Any] = []
        self._client: Any = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def describe(self) -> str:
        if isinstance(self.spec, HTTPServer):
            return self.spec.url
        where = "in the sandbox" if isinstance(self.spec, SandboxServer) else "on the host"
        return f"{shlex.join(self.spec.command)} ({where})"

    def _target(self) -> Any:
        from mcp import StdioServerParameters

        spec = self.spec
        if isinstance(spec, HTTPServer):
            return spec.url
        if isinstance(spec, StdioServer):
            return StdioServerParameters(command=spec.command[0], args=spec.command[1:], env=spec.env or None,
                                         cwd=spec.cwd)
        from agentgym.mcp.sandbox_stdio import sandbox_stdio_client

        assert self.sandbox is not None  # the constructor refuses a SandboxServer without one
        return sandbox_stdio_client(self.sandbox, spec.command, cwd=spec.cwd, env=spec.env)

    async def connect(self, timeout: float = CONNECT_TIMEOUT) -> list[Any]:
        """Start the server (or reach it), list its tools, and return them (``mcp.types.Tool``).

        Raises:
            EnvError: The server did not start or answer within ``timeout`` seconds.
        """
        if isinstance(self.spec, SandboxServer):
            assert self.sandbox is not None  # the constructor refuses a SandboxServer without one
            for path, text in self.spec.files.items():
                await self.sandbox.write_file(path, text)
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp {self.describe()}")
        try:
            self.tools = await asyncio.wait_for(asyncio.shield(ready), timeout)
        except Exception as e:
            await self.close()
            reason = f"no answer within {timeout:g} s" if isinstance(e, TimeoutError) else f"{type(e).__name__}: {e}"
            raise EnvError(f"MCP server {self.describe()}: {reason}") from e
        return self.tools

    async def _hold(self, ready: asyncio.Future[list[Any]]) -> None:
        """Own the SDK's client for the connection's lifetime: enter, list tools, wait for close, leave."""
        from mcp import Client

        try:
            async with Client(self._target(), read_timeout_seconds=self.call_timeout) as client:
                tools: list[Any] = []
                cursor = None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        break
                self._client = client
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else EnvError(f"connection cancelled: {e!r}"))
            if not isinstance(e, Exception):
                raise
        finally:
            self._client = None

    async def call(self, name: str, arguments: dict[str, Any]) -> str | list[ContentPart]:
        """Call tool ``name`` and return its content for a tool message.

        Raises:
            ToolError: The tool reported an error, or the server refused this call.
            EnvError: The connection is gone or the call timed out.
        """
        import mcp_types as types
        from mcp import MCPError

        if self._client is None:
            raise EnvError(f"MCP server {self.describe()} is not connected")
        try:
            result = await self._client.call_tool(name, arguments)
        except MCPError as e:
            if e.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                raise EnvError(f"MCP server {self.describe()}: {e.message}") from e
            raise ToolError(e.message) from e
        except (OSError, TimeoutError) as e:  # a broken pipe or socket, a sandbox that went away
            raise EnvError(f"MCP server {self.describe()}: {type(e).__name__}: {e}") from e
        content = to_content(result)
        if result.is_error:
            raise ToolError(content if isinstance(content, str) else
                            "\n".join(p.text for p in content if isinstance(p, TextPart)))
        return content

    async def close(self) -> None:
        """Close the connection (and stop a server this process started); safe to call twice."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            try:
                await asyncio.wait_for(task, CLOSE_TIMEOUT)  # cancels the task when it runs out
            except TimeoutError:
                log.warning("MCP server %s did not shut down within %g s", self.describe(), CLOSE_TIMEOUT)


def tool_spec(tool: Any, prefix: str = "") -> ToolSpec:
    """An MCP tool as the model sees it: name (with ``prefix``), description, JSON schema of its arguments."""
    schema = dict(tool.input_schema or {"type": "object", "properties": {}})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return ToolSpec(name=prefix + tool.name, description=tool.description or tool.title or tool.name,
                    parameters=schema)

