"""``agentgym mcp serve ENV``: an environment's tools as an MCP server, so MCP clients can drive episodes.

The server lists the env's tools as they are, plus two of its own: ``start_episode`` (reset to a
task, by id or drawn with a seed; returns the opening messages) and ``end_episode`` (score the
episode as it stands). Each call of an env tool is one env step holding that one call: its result
is the tool's observation (text and images), ``isError`` when the env recorded a tool error, and
``structuredContent`` carries the turn's reward and whether the episode has ended (and then its
total reward). One env serves one episode at a time, for whichever client calls; a stdio server
has one client by nature. Over HTTP the server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from agentgym.env import Env
from agentgym.errors import AgentgymError
from agentgym.types import ContentPart, ImagePart, Message, Task, TextPart, ToolCall

START = "start_episode"
END = "end_episode"
HOST = "127.0.0.1"


def _content(value: str | list[ContentPart] | None) -> list[Any]:
    import mcp_types as types

    if value is None or isinstance(value, str):
        return [types.TextContent(type="text", text=value or "")]
    out: list[Any] = []
    for part in value:
        if isinstance(part, TextPart):
            out.append(types.TextContent(type="text", text=part.text))
        elif isinstance(part, ImagePart):
            url = part.image_url.get("url", "")
            head, _, data = url.partition(",")
            if head.startswith("data:") and head.endswith(";base64"):
                out.append(types.ImageContent(type="image", data=data, mime_type=head[5:-7]))
            else:
                out.append(types.TextContent(type="text", text=f"[image {url}]"))
    return out


class EpisodeServer:
    """Plays episodes of one env on behalf of MCP clients (the handlers of the MCP server)."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any]) -> None:
        from agentgym.sandboxes.runtime import SandboxRuntime

        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self.env: Env | None = None
        self.runtime = SandboxRuntime()  # the env's sandboxes, all closed once by close()
        self.lock = asyncio.Lock()
        self.ids = itertools.count(1)
        self._tasks: dict[str, Task] | None = None

    def _env(self) -> Env:
        if self.env is None:
            from agentgym.registry import make

            self.env = make(self.env_id, **self.env_kwargs, runtime=self.runtime)
        return self.env

    def tools(self) -> list[Any]:
        import mcp_types as types

        env = self._env()
        control = [
            types.Tool(name=START, description=(
                f"Start an episode of the {self.env_id!r} environment: on the task with id `task_id`, or on a "
                "task drawn with `seed`. Returns the task's opening messages; then call the other tools."),
                input_schema={"type": "object", "properties": {
                    "task_id": {"type": "string", "description": "the task's id"},
                    "seed": {"type": "integer", "description": "draws a task when no task_id is given"}}}),
            types.Tool(name=END, description="End the episode now and score it as it stands.",
                       input_schema={"type": "object", "properties": {}}),
        ]
        return control + [types.Tool(name=t.name, description=t.description, input_schema=t.parameters)
                          for t in env.tools]

    async def call(self, name: str, arguments: dict[str, Any]) -> Any:
        import mcp_types as types

        async with self.lock:
            try:
                if name == START:
                    return await self._start(arguments)
                if name == END:
                    env = self._env()
                    if env.trajectory is None or env.done:
                        raise AgentgymError(f"no episode is running: call {START}")
                    reward = await env.end("truncated")
                    return types.CallToolResult(
                        content=_content(f"Episode ended. Reward {env.trajectory.reward:g}."),
                        structured_content={"reward": reward.value, "terminated": False, "truncated": True,
                                            "episode_reward": env.trajectory.reward,
                                            "components": reward.components})
                return await self._step(name, arguments)
            except AgentgymError as e:
                return types.CallToolResult(content=[types.TextContent(type="text", text=str(e))], is_error=True)

    async def _start(self, arguments: dict[str, Any]) -> Any:
        import mcp_types as types

        env = self._env()
        task = None
        if arguments.get("task_id") is not None:
            if self._tasks is None:
                self._tasks = {t.id: t for t in env.tasks()}
            task = self._tasks.get(str(arguments["task_id"]))
            if task is None:
                raise AgentgymError(f"no task {arguments['task_id']!r} in {self.env_id!r}")
        messages = await env.reset(task, seed=arguments.get("seed"))
        assert env.task is not None
        text = "\n\n".join(f"[{m.role}]\n{m.text}" for m in messages)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content={"task_id": env.task.id})

    async def _step(self, name: str, arguments: dict[str, Any]) -> Any:
        import mcp_types as types

        env = self._env()
        if env.trajectory is None or env.done:
            raise AgentgymError(f"no episode is running: call {START} first")
        call = ToolCall(id=f"mcp_{next(self.ids)}", name=name, arguments=json.dumps(arguments))
        result = await env.step(Message(role="assistant", tool_calls=[call]))
        turn = env.trajectory.turns[-1]
        answer = next((m for m in result.observation if m.tool_call_id == call.id), None)
        content = _content(answer.content if answer is not None else
                           " ".join(m.text for m in result.observation))
        ended = result.terminated or result.truncated
        structured: dict[str, Any] = {"reward": result.reward, "terminated": result.terminated,
                                      "truncated": result.truncated}
        if ended:
            structured["episode_reward"] = env.trajectory.reward
            structured["components"] = env.trajectory.reward_components
            content.append(types.TextContent(type="text", text=f"Episode ended. Reward {env.trajectory.reward:g}."))
        return types.CallToolResult(content=content, is_error=bool(turn.tool_errors), structured_content=structured)

    async def close(self) -> None:
        if self.env is not None:
            await self.env.close()
        await self.runtime.close()


def build_server(episodes: EpisodeServer) -> Any:
    """The MCP server (the SDK's low-level ``Server``) answering with ``episodes``."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=episodes.tools())

    async def call_tool(ctx: Any, params: Any) -> Any:
        return await episodes.call(params.name, dict(params.arguments or {}))

    return Server(f"agentgym-{episodes.env_id}", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(env_id: str, env_kwargs: dict[str, Any], *, transport: str = "stdio", port: int = 8000,
                announce: Any = None) -> None:
    """Serve ``env_id`` over stdio, or streamable HTTP on 127.0.0.1:``port``, until the client leaves or Ctrl-C."""
    episodes = EpisodeServer(env_id, env_kwargs)
    episodes._env()  # a bad env id or argument fails now, not at the client's first call
    server = build_server(episodes)
    try:
        if transport == "stdio":
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        else:
            import socket

            import uvicorn

            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((HOST, port))
            sock.listen(128)  # before the address is announced: a client that connects at once waits, not refused
            app = server.streamable_http_app(host=HOST)
            if announce is not None:
                announce(f"http://{HOST}:{sock.getsockname()[1]}/mcp")
            await uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).serve(sockets=[sock])
    finally:
        await episodes.close()
