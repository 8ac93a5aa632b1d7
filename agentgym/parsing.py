"""One tool-call parser for every path: native OpenAI ``tool_calls`` and calls written in text.

Hosted chat models return structured ``tool_calls``; base models being trained write calls in text,
Hermes-style (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``). Both become
:class:`ParsedCall` values. Parsing never raises: a call that cannot be understood is still returned,
with ``error`` saying why, so the environment can answer it and the trajectory can count it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentgym.types import Message, ToolCall, ToolErrorKind

TOOL_CALL_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


@dataclass(slots=True)
class ParsedCall:
    """A tool call with its arguments decoded, or the reason they could not be.

    A plain dataclass: it is built from validated parts on every step and never leaves the process.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str = ""
    error: ToolErrorKind | None = None
    error_message: str | None = None


def _decode_arguments(call_id: str, name: str, raw: str) -> ParsedCall:
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as e:
        return ParsedCall(
            id=call_id, name=name, raw_arguments=raw, error="malformed_json",
            error_message=f"arguments are not valid JSON ({e.msg} at position {e.pos})",
        )
    if not isinstance(args, dict):
        return ParsedCall(
            id=call_id, name=name, raw_arguments=raw, error="malformed_json",
            error_message="arguments must be a JSON object",
        )
    return ParsedCall(id=call_id, name=name, arguments=args, raw_arguments=raw)


def parse_text_tool_calls(text: str, *, id_prefix: str = "call") -> list[ParsedCall]:
    """Find Hermes-style ``<tool_call>{...}</tool_call>`` blocks in text (an unclosed last block counts)."""
    calls = []
    for i, match in enumerate(TOOL_CALL_RE.finditer(text)):
        body = match.group(1)
        call_id = f"{id_prefix}_{i}"
        try:
            obj = json.loads(body)
        except json.JSONDecodeError as e:
            calls.append(ParsedCall(
                id=call_id, name="", raw_arguments=body, error="malformed_json",
                error_message=f"tool call is not valid JSON ({e.msg} at position {e.pos})",
            ))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            calls.append(ParsedCall(
                id=call_id, name="", raw_arguments=body, error="malformed_json",
                error_message='tool call must be a JSON object with a "name" and "arguments"',
            ))
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        raw = args if isinstance(args, str) else json.dumps(args)
        calls.append(_decode_arguments(call_id, obj["name"], raw))
    return calls


def parse_tool_calls(message: Message) -> list[ParsedCall]:
    """The tool calls of an assistant message: native ``tool_calls`` first, else calls written in text."""
    if message.tool_calls:
        return [_decode_arguments(c.id or f"call_{i}", c.name, c.arguments) for i, c in enumerate(message.tool_calls)]
    return parse_text_tool_calls(message.text)


def format_text_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Write a call the way :func:`parse_text_tool_calls` reads it (for base-model prompts and tests)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def native_tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> ToolCall:
    """Build an OpenAI-style tool call from a name and decoded arguments."""
    return ToolCall(id=call_id, name=name, arguments=json.dumps(arguments))
