"""A stdlib-only MCP stdio server, small enough to run in the bare sandbox image (which has no SDK).

It speaks the 2025-06-18 handshake (``initialize``, ``tools/list``, ``tools/call``); any other
request gets JSON-RPC's "method not found", which is how the SDK's client learns to use the
handshake. Its tools report where they run, so a test can see the sandbox around them.
"""

import json
import os
import sys

TOOLS = [
    {"name": "whoami", "description": "Say which user, host and network interfaces the server sees.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "remember", "description": "Keep a note in the server's memory.",
     "inputSchema": {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}},
    {"name": "recall", "description": "Say the notes kept so far.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "crash", "description": "Exits the server.", "inputSchema": {"type": "object", "properties": {}}},
]
notes = []


def call(name, args):
    if name == "whoami":
        nets = sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else []
        return False, f"uid={os.getuid()} host={os.uname().nodename} net={','.join(nets)} cwd={os.getcwd()}"
    if name == "remember":
        notes.append(args["note"])
        return False, f"kept {len(notes)}"
    if name == "recall":
        return False, "; ".join(notes) or "nothing"
    if name == "fail":
        return True, "this tool always fails"
    if name == "crash":
        sys.stderr.write("crashing on purpose\n")
        os._exit(3)
    raise KeyError(name)


def answer(request):
    method, params = request.get("method"), request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "sandboxed", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        try:
            is_error, text = call(params["name"], params.get("arguments") or {})
        except KeyError as e:
            raise LookupError(f"unknown tool {e}") from None
        return {"content": [{"type": "text", "text": text}], "isError": is_error}
    raise NotImplementedError(method)


for line in sys.stdin:
    if not line.strip():
        continue
    request = json.loads(line)
    if "id" not in request:
        continue  # a notification
    reply = {"jsonrpc": "2.0", "id": request["id"]}
    try:
        reply["result"] = answer(request)
    except NotImplementedError as e:
        reply["error"] = {"code": -32601, "message": f"method not found: {e}"}
    except LookupError as e:
        reply["error"] = {"code": -32602, "message": str(e)}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
