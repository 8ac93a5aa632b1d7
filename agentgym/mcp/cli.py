"""``agentgym mcp serve ENV``: serve an environment's tools to MCP clients."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any


def _cmd_serve(args: argparse.Namespace) -> int:
    from agentgym.mcp.serve import serve

    env_kwargs: dict[str, Any] = {"sandbox_backend": args.sandbox, **dict(args.env_arg)}
    if args.tasks is not None:
        env_kwargs["tasks_path"] = args.tasks
    try:
        asyncio.run(serve(args.env, env_kwargs, transport=args.transport, port=args.port,
                          announce=lambda url: print(f"serving {url} (Ctrl-C to stop)", file=sys.stderr, flush=True)))
    except KeyboardInterrupt:
        pass
    return 0


def add_commands(sub: Any, env_arg: Any) -> None:
    """Add ``mcp serve`` to the ``agentgym`` command; ``env_arg`` parses ``--env-arg key=value``."""
    mcp = sub.add_parser("mcp", help="the Model Context Protocol: serve an env's tools to MCP clients")
    mcp_sub = mcp.add_subparsers(dest="mcp_command", required=True)
    serve = mcp_sub.add_parser("serve", help="expose an env's tools as an MCP server (stdio, or HTTP on 127.0.0.1)")
    serve.add_argument("env", help="environment id, e.g. code")
    serve.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    serve.add_argument("--port", type=int, default=8000, help="port for --transport http (0: any free port)")
    serve.add_argument("--sandbox", default="auto", choices=["auto", "docker", "local"])
    serve.add_argument("--tasks", help="a JSONL file of tasks in the env's format")
    serve.add_argument("--env-arg", type=env_arg, action="append", default=[], metavar="KEY=VALUE",
                       help="a keyword argument for the environment (repeatable)")
    serve.set_defaults(func=_cmd_serve)
