"""A responder for FakeOpenAI that plays the Counter toy env correctly, over the real wire format."""

from __future__ import annotations

import re
from typing import Any

from agentgym.testing import completion, tool_call


def counter_model(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    target = int(re.search(r"Reach (\d+)", messages[-1]["content"] if messages[-1]["role"] == "user"
                           else next(m["content"] for m in messages if m["role"] == "user")).group(1))
    total = sum(1 for m in messages if m["role"] == "tool")
    assert {t["function"]["name"] for t in request["tools"]} == {"add", "submit"}
    if total < target:
        return completion(tool_calls=[tool_call("add", {"amount": 1})], prompt_tokens=20, completion_tokens=7)
    return completion(tool_calls=[tool_call("submit", {"total": total})], prompt_tokens=30, completion_tokens=9)
