"""MCP servers as an env's tools (stdio on the host, streamable HTTP, stdio inside a sandbox) and an env as a server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentgym.errors import EnvError
from agentgym.mcp import HTTPServer, MCPEnv, SandboxServer, StdioServer, server_spec
from agentgym.rollout import rollout
from agentgym.testing import FakeOpenAI
from agentgym.testing.fake_openai import completion, tool_call
from agentgym.types import ImagePart, Message, Task, ToolCall, read_jsonl

HERE = Path(__file__).parent
CALC = StdioServer(command=[sys.executable, str(HERE / "calc_server.py")])
SANDBOXED = SandboxServer(command=["python3", "/tmp/mcp/server.py"],
                          files={"/tmp/mcp/server.py": (HERE / "sandbox_server.py").read_text()})
TASK = Task(id="sum", prompt="What is 2 + 3?", data={"answer": "5"})


def calls(*pairs: tuple[str, dict | str]) -> Message:
    return Message(role="assistant", tool_calls=[
        ToolCall(id=f"c{i}", name=name, arguments=args if isinstance(args, str) else json.dumps(args))
        for i, (name, args) in enumerate(pairs)])


async def check_calc_tools(env: MCPEnv) -> None:
    """The calc server's tools, as the model sees them and as they answer, errors included."""
    await env.reset(TASK)
    specs = {t.name: t for t in env.tools}
    assert list(specs) == ["add", "divide", "screenshot", "count"]
    assert specs["add"].description == "Add two numbers."
    assert specs["add"].parameters["required"] == ["a", "b"]
    assert specs["add"].parameters["properties"]["a"]["type"] == "number"
    step = await env.step(calls(("add", {"a": 2, "b": 3}), ("divide", {"a": 1, "b": 0}), ("screenshot", {}),
                                ("add", {"a": "two"}), ("subtract", {}), ("add", "{oops")))
    answers = [m.content for m in step.observation]
    assert answers[0] == "5.0"
    assert "cannot divide by zero" in answers[1] and answers[1].startswith("Error:")
    assert isinstance(answers[2], list) and isinstance(answers[2][0], ImagePart)
    assert answers[2][0].image_url["url"].startswith("data:image/png;base64,iVBOR")
    assert "'two' is not of type 'number'" in answers[3] and "'b' is a required property" in answers[3]
    assert "unknown tool 'subtract'" in answers[4]
    assert env.trajectory.turns[-1].tool_errors == ["tool_raised", "invalid_arguments", "unknown_tool",
                                                    "malformed_json"]
    end = await env.step(Message(role="assistant", content="5"))
    assert end.terminated and env.trajectory.outcome_reward == 1.0


async def test_stdio_server_on_the_host_serves_an_env(tmp_path):
    env = MCPEnv(servers=[CALC], tasks=[TASK], sandbox_backend="local")
    try:
        await check_calc_tools(env)
        counts = []
        for _ in range(2):  # a host server lives as long as the env: its state carries over episodes
            await env.reset(TASK)
            counts.append((await env.step(calls(("count", {})))).observation[0].content)
        assert counts[0].split()[0] == "1" and counts[1].split()[0] == "2"
        pid = int(counts[0].split("pid ")[1].rstrip(")"))
        os.kill(pid, 0)
    finally:
        await env.close()
    assert not await alive_after(pid, seconds=10)  # closing the env stopped the server


async def alive_after(pid: int, seconds: float) -> bool:
    """Whether process ``pid`` still exists after waiting up to ``seconds`` for it to go."""
    for _ in range(int(seconds / 0.05)):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_streamable_http_server_serves_an_env(http_server):
    assert server_spec(http_server) == HTTPServer(url=http_server)
    env = MCPEnv(servers=[http_server], tasks=[TASK])
    try:
        await check_calc_tools(env)
    finally:
        await env.close()


@pytest.mark.parametrize("backend", [pytest.param("docker", marks=pytest.mark.docker), "local"])
async def test_stdio_server_inside_the_sandbox(backend):
    if backend == "docker":
        from tests.conftest import docker_or_skip

        docker_or_skip()
    env = MCPEnv(servers=[SANDBOXED], tasks=[TASK], sandbox_backend=backend)
    try:
        seen = []
        # One server per episode, in that episode's sandbox (a new one or a wiped one): no state carries over,
        # so each episode's server has kept exactly one note.
        for _ in range(2):
            await env.reset(TASK)
            assert [t.name for t in env.tools] == ["whoami", "remember", "recall", "fail", "crash"]
            step = await env.step(calls(("whoami", {}), ("remember", {"note": "n1"}), ("recall", {}), ("fail", {}),
                                        ("remember", {})))
            answers = [m.content for m in step.observation]
            seen.append(answers[0])
            assert answers[1:3] == ["kept 1", "n1"]
            assert answers[3] == "Error: this tool always fails"
            assert "'note' is a required property" in answers[4]
            assert env.trajectory.turns[-1].tool_errors == ["tool_raised", "invalid_arguments"]
            await env.step(Message(role="assistant", content="5"))
        fields = [dict(kv.split("=", 1) for kv in s.split()) for s in seen]
        assert all(f["net"] in ("lo", "") for f in fields)  # no network interface but loopback
        assert all(f["cwd"] == "/work" for f in fields)
        if backend == "docker":
            assert all(f["uid"] == "65534" for f in fields)  # the sandbox's code user, not root
        else:
            assert all(int(f["uid"]) != os.getuid() for f in fields)  # the sandbox's own uid, not ours
    finally:
        await env.close()


async def test_a_crashed_sandbox_server_ends_the_episode_with_its_reason():
    from agentgym.policies.base import Reply

    class Crash:
        name = "crash"

        async def act(self, messages, tools, *, task):
            return Reply(message=calls(("crash", {})))

    env = MCPEnv(servers=[SANDBOXED], tasks=[TASK], sandbox_backend="local", call_timeout=60)
    try:
        trajectory = await rollout(env, Crash(), TASK, episode_timeout=120)
    finally:
        await env.close()
    assert trajectory.outcome == "error"
    assert "EnvError" in trajectory.failure and "server.py" in trajectory.failure


def test_bad_server_specs_and_a_server_that_does_not_start():
    assert server_spec("sandbox: python3 s.py") == SandboxServer(command=["python3", "s.py"])
    assert server_spec({"command": ["srv"], "prefix": "x_"}) == StdioServer(command=["srv"], prefix="x_")
    for bad in ("", {"kind": "ftp"}, {"kind": "http"}, 42):
        with pytest.raises(EnvError):
            server_spec(bad)
    with pytest.raises(EnvError, match="at least one"):
        MCPEnv(servers=[])


async def test_a_missing_server_command_is_a_clear_error():
    env = MCPEnv(servers=["/nonexistent/mcp-server --flag"], tasks=[TASK], sandbox_backend="local")
    try:
        with pytest.raises(EnvError, match="/nonexistent/mcp-server"):
            await env.reset(TASK)
    finally:
        await env.close()


async def test_two_servers_with_one_tool_name_need_a_prefix(http_server):
    clash = MCPEnv(servers=[CALC, http_server], tasks=[TASK], sandbox_backend="local")
    try:
        with pytest.raises(EnvError, match="two tools are named 'add'"):
            await clash.reset(TASK)
    finally:
        await clash.close()
    both = MCPEnv(servers=[CALC, {"url": http_server, "prefix": "web_"}], tasks=[TASK], sandbox_backend="local")
    try:
        await both.reset(TASK)
        assert [t.name for t in both.tools] == ["add", "divide", "screenshot", "count", "web_add", "web_divide",
                                               "web_screenshot", "web_count"]
        step = await both.step(calls(("web_add", {"a": 1, "b": 1})))
        assert step.observation[0].content == "2.0"
    finally:
        await both.close()


def test_eval_a_hosted_model_on_mcp_tools(tmp_path):
    """`agentgym eval mcp`: the model (behind a fake OpenAI server) sees the MCP tools and calls them."""

    def model(request: dict) -> dict:
        messages = request["messages"]
        if messages[-1]["role"] == "tool":
            return completion(content=messages[-1]["content"].split(".")[0])
        return completion(tool_calls=[tool_call("add", {"a": 2, "b": 3})])

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(TASK.model_dump_json() + "\n")
    out = tmp_path / "run.jsonl"
    with FakeOpenAI(model) as server:
        done = subprocess.run(
            [sys.executable, "-m", "agentgym.cli", "eval", "mcp", "--model", "openai/fake", "--api-base",
             server.base_url, "--tasks", str(tasks), "--out", str(out), "--sandbox", "local",
             "--env-arg", "servers=" + json.dumps([CALC.model_dump()])],
            cwd=tmp_path, env={**os.environ, "OPENAI_API_KEY": "sk-test", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert offered == ["add", "divide", "screenshot", "count"]
    [trajectory] = read_jsonl(out)
    assert trajectory.turns[0].observation[0].content == "5.0" and trajectory.success


def mcp_client_session(argv: list[str]):
    from mcp import Client, StdioServerParameters

    return Client(StdioServerParameters(command=sys.executable, args=argv, env=dict(os.environ)))


async def play_toy(client) -> None:
    """Drive a toy episode through an MCP client: start, hint, say; then the episode is over."""
    names = [t.name for t in (await client.list_tools()).tools]
    assert names == ["start_episode", "end_episode", "hint", "say"]
    early = await client.call_tool("say", {"colour": "red"})
    assert early.is_error and "start_episode" in early.content[0].text
    started = await client.call_tool("start_episode", {"task_id": "green"})
    assert started.structured_content == {"task_id": "green"} and "Pick a colour." in started.content[0].text
    hint = await client.call_tool("hint", {})
    assert hint.content[0].text == "green" and hint.structured_content["reward"] == pytest.approx(-0.1)
    bad = await client.call_tool("say", {"shade": "green"})
    assert bad.is_error and "invalid arguments" in bad.content[0].text
    said = await client.call_tool("say", {"colour": "green"})
    assert not said.is_error and said.structured_content["terminated"]
    assert said.structured_content["episode_reward"] == pytest.approx(0.9)
    again = await client.call_tool("hint", {})
    assert again.is_error
    missing = await client.call_tool("start_episode", {"task_id": "purple"})
    assert missing.is_error and "no task 'purple'" in missing.content[0].text


async def test_mcp_serve_answers_a_real_mcp_client_over_stdio():
    async with mcp_client_session(["-m", "agentgym.cli", "mcp", "serve", "toy"]) as client:
        await play_toy(client)


async def test_mcp_serve_over_http_on_localhost(tmp_path):
    from mcp import Client

    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agentgym.cli", "mcp", "serve", "toy", "--transport", "http", "--port", "0",
        stderr=asyncio.subprocess.PIPE, cwd=tmp_path)
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 120)).decode()
        url = line.split()[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), line
        async with Client(url) as client:
            await play_toy(client)
    finally:
        proc.terminate()
        await proc.wait()


async def test_the_announced_http_address_takes_connections_at_once():
    """A client that connects the moment the address is printed is queued, not refused (this was a flake)."""
    import socket

    from agentgym.mcp.serve import serve

    class Announced(Exception):
        pass

    def connect_now(url: str) -> None:
        host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5):
            raise Announced(url)  # before the HTTP server has started: ends serve()

    with pytest.raises(Announced):
        await serve("toy", {}, transport="http", port=0, announce=connect_now)


def test_mcp_serve_refuses_an_unknown_env(tmp_path):
    done = subprocess.run([sys.executable, "-m", "agentgym.cli", "mcp", "serve", "toyy"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "Did you mean 'toy'" in done.stderr


async def test_no_dodge_holds_for_tools_from_an_mcp_server():
    """check_env's "no dodge" check on an env whose tools come from a server: malformed, wrong-typed and
    hostile calls of each of the server's tools end graded (MCP envs ship no reference for check_env itself)."""
    from agentgym.testing.no_dodge import check_no_dodge

    env = MCPEnv(servers=[CALC], tasks=[TASK], sandbox_backend="local")
    try:
        played = await check_no_dodge(env, "mcp", TASK, timeout=60)
    finally:
        await env.close()
    assert {"add with arguments of the wrong type", "divide with arguments of the wrong type",
            "huge reply"} <= set(played)
