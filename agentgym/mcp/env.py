"""An environment whose tools come from MCP servers.

``MCPEnv(servers=[...])`` connects to each server, lists its tools and offers them to the model
beside the env's own; a call runs through ``tools/call``. Servers on the host or behind a URL are
connected on the first ``reset`` and kept for the env's life; a :class:`~agentgym.mcp.client.SandboxServer`
is started in each episode's fresh sandbox and stopped before the sandbox is given back, so an
episode's server state never leaks into the next one. Tool specs are known after ``reset``.

Registered as ``mcp``: ``agentgym eval mcp --model ... --tasks tasks.jsonl --env-arg servers='["python3 srv.py"]'``.
The tasks are :class:`~agentgym.types.Task` objects, one JSON object a line; the model ends an
episode by answering in text, scored 1 when it equals ``task.data["answer"]`` (after SQuAD-style
normalisation; a list gives accepted answers). Subclass and override :meth:`score` for anything else.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentgym.env import Env
from agentgym.errors import EnvError
from agentgym.mcp.client import MCPConnection, SandboxServer, ServerSpec, server_spec, tool_spec
from agentgym.rewards import Episode
from agentgym.rewards.components import exact_answer
from agentgym.tools import ToolFunction
from agentgym.types import Reward, Task, read_tasks


class MCPTool(ToolFunction):
    """A tool served by an MCP server, in the shape the env's tool table holds.

    Arguments are checked against the tool's JSON schema before the call, so a call that does not
    fit is an ``invalid_arguments`` tool error like for the env's own tools.
    """

    def __init__(self, connection: MCPConnection, tool: Any, prefix: str = "") -> None:
        import jsonschema

        self.connection = connection
        self.remote_name = tool.name
        self.spec = tool_spec(tool, prefix)
        self.name = self.spec.name
        self.final = False
        self.is_async = True
        self._validator = jsonschema.Draft202012Validator(self.spec.parameters)
        remote = tool.name

        async def call(env: Env, **arguments: Any) -> Any:
            return await connection.call(remote, arguments)

        self.fn = call

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        problems = [f"{'.'.join(str(p) for p in e.absolute_path) or 'arguments'}: {e.message}"
                    for e in self._validator.iter_errors(arguments)]
        if problems:
            raise ValueError("; ".join(problems))
        return arguments


def _exact_when_answered(episode: Episode) -> Reward:
    """Exact match against ``data.answer`` for tasks that carry one; 0 for open-ended tasks."""
    if "answer" not in episode.task.data:
        return Reward(value=0.0)
    value = exact_answer(episode)
    return Reward(value=value, components={"exact": value})


class MCPEnv(Env):
    """Answers questions with the tools MCP servers provide; ends when the model answers in text."""

    max_turns = 20
    branchable = False  # its servers hold state in processes that sandbox.fork does not copy (agentgym.branch)
    text_ends_episode = True
    verifier = _exact_when_answered

    def __init__(
        self,
        *,
        servers: Sequence[ServerSpec | str | dict[str, Any]],
        tasks: Sequence[Task] | None = None,
        tasks_path: str | Path | None = None,
        call_timeout: float = 300.0,
        **kwargs: Any,
    ) -> None:
        """
        Args:
            servers: MCP servers (specs, dicts, URLs or command lines: see
                :func:`~agentgym.mcp.client.server_spec`).
            tasks: The env's tasks; or ``tasks_path``, a JSONL of tasks.
            call_timeout: Seconds one tool call may take.
            **kwargs: ``max_turns``, ``sandbox_backend`` (see :class:`~agentgym.env.Env`).
        """
        super().__init__(**kwargs)
        self.servers = [server_spec(s) for s in servers]
        if not self.servers:
            raise EnvError("MCPEnv needs at least one MCP server")
        self._tasks = list(tasks) if tasks is not None else self.load_tasks(tasks_path) if tasks_path else []
        self.call_timeout = call_timeout
        if any(isinstance(s, SandboxServer) for s in self.servers):
            self.sandbox_image = "python"  # type: ignore[misc]
        self._host: list[MCPConnection] = []  # host and HTTP servers: connected once, kept
        self._episode: list[MCPConnection] = []  # sandbox servers: one per episode
        self._host_tools: dict[str, ToolFunction] = {}

    def tasks(self) -> Sequence[Task]:
        return self._tasks

    @classmethod
    def load_tasks(cls, path: str | Path) -> list[Task]:
        """Tasks from a JSONL file of :class:`~agentgym.types.Task` objects."""
        return read_tasks(path)

    async def setup(self, task: Task) -> None:
        if not self._host:
            await self._connect_host_servers()
        tools = dict(self._host_tools)
        for spec in self.servers:
            if isinstance(spec, SandboxServer):
                connection = MCPConnection(spec, sandbox=self.sandbox, call_timeout=self.call_timeout)
                self._episode.append(connection)
                await connection.connect()
                tools = self._merge(tools, connection)
        self._tools = {**type(self)._tools, **tools}  # type: ignore[misc]

    async def _connect_host_servers(self) -> None:
        """Connect every host and HTTP server, all or none: a failure closes the others and raises."""
        connected: list[MCPConnection] = []
        tools: dict[str, ToolFunction] = {}
        try:
            for spec in self.servers:
                if not isinstance(spec, SandboxServer):
                    connection = MCPConnection(spec, call_timeout=self.call_timeout)
                    await connection.connect()
                    connected.append(connection)
                    tools = self._merge(tools, connection)
        except BaseException:
            for connection in connected:
                await connection.close()
            raise
        self._host, self._host_tools = connected, tools

    def _merge(self, table: dict[str, ToolFunction], connection: MCPConnection) -> dict[str, ToolFunction]:
        out = dict(table)
        for tool in connection.tools:
            fn = MCPTool(connection, tool, connection.spec.prefix)
            if fn.name in out or fn.name in type(self)._tools:
                raise EnvError(f"two tools are named {fn.name!r} (from {connection.describe()}); "
                               "give one server a prefix")
            out[fn.name] = fn
        return out

    async def before_release(self) -> None:
        """Stop this episode's in-sandbox servers before the sandbox goes back."""
        episode, self._episode = self._episode, []
        for connection in episode:
            await connection.close()

    async def teardown(self) -> None:
        host, self._host = self._host, []
        for connection in host:
            await connection.close()

