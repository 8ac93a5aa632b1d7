"""The compact tool rendering: one line per tool, a prefix-preserving ChatML template, on both paths."""

from __future__ import annotations

import pytest

from agentgym import make
from agentgym.policies.chat_template import use_tool_schemas
from agentgym.trl.tiny import tiny_tokenizer


def test_compact_tools_are_one_line_each_and_shorter_than_the_schemas() -> None:
    pytest.importorskip("trl")
    from trl.chat_template_utils import is_chat_template_prefix_preserving

    env = make("code")
    tools = [t.to_openai() for t in env.tools]
    messages = [{"role": "user", "content": "Write add."}]
    tokenizer = tiny_tokenizer(["Write add. python submit code string Run Python"])
    use_tool_schemas(tokenizer, "full")
    full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    assert use_tool_schemas(tokenizer, "compact")
    compact = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False, add_generation_prompt=True)
    assert "- python(code: string): Run Python code in a persistent session and return what it printed.\n" in compact
    assert "- submit(code: string): Submit your solution and end the episode." in compact
    assert "<tool_call>" in compact and '"properties"' in full and '"properties"' not in compact
    assert len(compact) < len(full) / 2
    assert is_chat_template_prefix_preserving(tokenizer)  # what the rollout path needs to splice observations
    with pytest.raises(ValueError, match="tool schemas 'tiny'"):
        use_tool_schemas(tokenizer, "tiny")
