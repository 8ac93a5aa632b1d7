"""An MCP stdio server run inside a sandbox, spoken to through the sandbox's own calls.

The sandbox API (:class:`~agentgym.sandboxes.contract.Sandbox`) runs a command and returns when it
ends; it has no stream to a long-running process's stdin and stdout. This transport builds one
from what it has, so it works on every backend and keeps the sandbox's isolation around the server:

- start: one ``exec`` starts the server in the background (``nohup``), its stdin a FIFO opened
  read-write (so the server never sees end of input between messages), its stdout and stderr
  files, as the sandbox's code user with the sandbox's limits and no network;
- send: each JSON-RPC message is written to a file (``write_file``) and appended to the FIFO
  (``exec``), so no message is bounded by a command line's length;
- receive: while a request is unanswered, ``exec`` reads what the server wrote past the last
  offset (base64, so bytes survive), polling quickly after activity and backing off when quiet.
  Nothing polls while no request is pending, so an idle connection costs the sandbox nothing;
- close: the server's process is killed and its files removed.

A server that exits is noticed by the next poll; the read stream then closes, so the pending
request fails instead of hanging.
"""

from __future__ import annotations

import base64
import logging
import shlex
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from agentgym.sandboxes.contract import Sandbox

log = logging.getLogger(__name__)

READ_BYTES = 32_768  # per poll; base64 makes it 44 KB, under a sandbox call's default 64 KB output cap
FIRST_POLL = 0.002
MAX_POLL = 0.1


def start_script(root: str, command: Sequence[str], cwd: str | None, env: dict[str, str]) -> str:
    """The shell script that starts ``command`` in the background with a FIFO for its stdin."""
    exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
    where = f"cd {shlex.quote(cwd)} && " if cwd else ""
    argv = " ".join(shlex.quote(c) for c in command)
    r = shlex.quote(root)
    return (f"set -e; umask 077; mkdir -p {r}; mkfifo {r}/in; : > {r}/out; : > {r}/err; "
            f"( {where}{exports}exec nohup {argv} 0<>{r}/in >{r}/out 2>{r}/err ) & echo $! > {r}/pid")


@asynccontextmanager
async def sandbox_stdio_client(
    sandbox: Sandbox, command: Sequence[str], *, cwd: str | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """Start ``command`` in ``sandbox`` and yield the ``(read, write)`` streams an MCP client needs.

    Args:
        sandbox: Any :class:`~agentgym.sandboxes.contract.Sandbox` (``exec``, ``write_file``).
        command: The server's argv, e.g. ``["python3", "/work/server.py"]``.
        cwd: Working directory inside the sandbox (the sandbox's own by default).
        env: Extra environment variables for the server.

    Raises:
        SandboxError: The server could not be started.
    """
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    from agentgym.errors import SandboxError

    root = f"/tmp/.mcp-{uuid.uuid4().hex[:12]}"
    started = await sandbox.exec(start_script(root, command, cwd, env or {}))
    if started.exit_code != 0:
        raise SandboxError(f"could not start the MCP server {list(command)} in the sandbox: {started.output.strip()}")

    to_client, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_stream, from_client = anyio.create_memory_object_stream[SessionMessage](16)
    pending = 0  # requests sent and not yet answered: the only time anything is read
    wake = anyio.Event()

    async def stderr_tail() -> str:
        try:
            res = await sandbox.exec(f"tail -c 2000 {root}/err")
        except (SandboxError, OSError):
            return ""
        return res.stdout.strip()

    async def reader() -> None:
        nonlocal pending, wake
        offset, buffer, delay = 0, b"", FIRST_POLL
        async with to_client:
            while True:
                if pending <= 0:
                    await wake.wait()
                    wake = anyio.Event()
                    delay = FIRST_POLL
                    continue
                res = await sandbox.exec(
                    f"tail -c +{offset + 1} {root}/out | head -c {READ_BYTES} | base64 | tr -d '\\n'; echo; "
                    f"kill -0 $(cat {root}/pid) 2>/dev/null && echo alive || echo exited"
                )
                encoded, _, state = res.stdout.partition("\n")
                chunk = base64.b64decode(encoded)
                offset += len(chunk)
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError as e:
                        await to_client.send(e)
                        continue
                    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                        pending -= 1
                    await to_client.send(SessionMessage(message))
                if chunk:
                    delay = FIRST_POLL
                    continue
                if state.strip() != "alive":
                    log.warning("the MCP server in sandbox %s exited: %s", getattr(sandbox, "id", "?"),
                                await stderr_tail())
                    return  # closing the read stream fails the pending request
                await anyio.sleep(delay)
                delay = min(delay * 2, MAX_POLL)

    async def writer() -> None:
        nonlocal pending
        async with from_client:
            async for message in from_client:
                line = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                name = f"{root}/msg-{uuid.uuid4().hex[:8]}"
                await sandbox.write_file(name, line)
                if isinstance(message.message, types.JSONRPCRequest):
                    pending += 1
                sent = await sandbox.exec(f"cat {name} >> {root}/in && rm -f {name}")
                if sent.exit_code != 0:
                    raise SandboxError(f"could not write to the MCP server: {sent.output.strip()}")
                wake.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await sandbox.exec(f"kill -9 $(cat {root}/pid) 2>/dev/null; rm -rf {root}", timeout=10)
            except (SandboxError, OSError) as e:
                log.info("MCP server cleanup in sandbox %s: %s", getattr(sandbox, "id", "?"), e)
