"""A ChatML chat template that shows tools, for local models whose own template does not.

Small instruct models (SmolLM2, for one) ship a ChatML template that drops the ``tools`` argument,
so a model served with it would never learn which tools exist. This template is Qwen2.5's layout:
the tool schemas in the system message inside ``<tools>``, calls written by the model as Hermes-style
``<tool_call>{...}</tool_call>`` text (what :func:`agentgym.parsing.parse_text_tool_calls` reads), and
tool results in a user turn inside ``<tool_response>``. :data:`COMPACT_TOOLS_TEMPLATE` is the same
with one line per tool instead of its JSON schema (:func:`use_tool_schemas`). Both render a
conversation's start as a prefix of the whole conversation, which the TRL rollout path needs to
splice env observations in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentgym.types import Message

HERMES_TOOLS_BLOCK = (
    "{%- if tools %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments "
    "within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, "
    "\"arguments\": <args-json-object>}\\n</tool_call>' }}"
    "{%- endif %}"
)
COMPACT_TOOLS_BLOCK = (
    "{%- if tools %}"
    "{{- '\\n\\nTools. Call one with <tool_call>{\"name\": NAME, \"arguments\": {ARG: VALUE}}</tool_call>:' }}"
    "{%- for tool in tools %}{%- set f = tool.get('function', tool) %}"
    "{{- '\\n- ' + f['name'] + '(' }}"
    "{%- for pname, p in (f.get('parameters') or {}).get('properties', {}).items() %}"
    "{{- (', ' if not loop.first else '') + pname + ': ' + (p.get('type') or 'any') | string }}"
    "{%- endfor %}"
    "{{- '): ' + (f.get('description') or '').split('\\n')[0] }}"
    "{%- endfor %}"
    "{%- endif %}"
)
HERMES_CHATML_TEMPLATE = (
    "{%- if messages and messages[0]['role'] == 'system' %}"
    "{%- set system = messages[0]['content'] %}{%- set rest = messages[1:] %}"
    "{%- else %}{%- set system = 'You are a helpful assistant.' %}{%- set rest = messages %}{%- endif %}"
    "{{- '<|im_start|>system\\n' + system }}"
    + HERMES_TOOLS_BLOCK +
    "{{- '<|im_end|>\\n' }}"
    "{%- for message in rest %}"
    "{%- if message['role'] == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message['content'] + '\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '') }}"
    "{%- for call in message.get('tool_calls') or [] %}"
    "{%- set function = call.get('function', call) %}"
    "{%- if message['content'] or not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + function['name'] + '\", \"arguments\": ' }}"
    "{%- if function['arguments'] is string %}{{- function['arguments'] }}"
    "{%- else %}{{- function['arguments'] | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

COMPACT_TOOLS_TEMPLATE = HERMES_CHATML_TEMPLATE.replace(HERMES_TOOLS_BLOCK, COMPACT_TOOLS_BLOCK)
"""The same ChatML layout with each tool on one line, ``- name(arg: type, ...): first line of its
description``, after one line saying how to call them: the full JSON schemas cost a small model
about 300 prompt tokens for the code env's two tools, this about 60."""

TOOL_SCHEMAS = ("full", "compact")


def use_tool_schemas(tokenizer: Any, schemas: str) -> bool:
    """Render tools as ``schemas`` says: ``"full"`` (the model's own template, or
    :data:`HERMES_CHATML_TEMPLATE` when that hides tools) or ``"compact"`` (:data:`COMPACT_TOOLS_TEMPLATE`,
    for ChatML models); True if the template was replaced.

    Raises:
        ValueError: An unknown ``schemas``, or ``"compact"`` for a tokenizer without ChatML tokens.
    """
    if schemas not in TOOL_SCHEMAS:
        raise ValueError(f"tool schemas {schemas!r}: use one of {', '.join(TOOL_SCHEMAS)}")
    if schemas == "full":
        return ensure_tool_template(tokenizer)
    _require_chatml(tokenizer, "the compact tool rendering is a ChatML template")
    tokenizer.chat_template = COMPACT_TOOLS_TEMPLATE
    return True


def chat_dicts(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Messages as chat-template input (tool calls in text stay in the content, as the model wrote them)."""
    out = []
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.text}
        if m.role == "tool":
            d["name"] = m.name or "tool"
        out.append(d)
    return out



_PROBE_TOOL = {"type": "function", "function": {"name": "agentgym_probe_tool", "description": "probe",
                                                "parameters": {"type": "object", "properties": {}}}}


def shows_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template puts the tool schemas it is given into the prompt."""
    if not getattr(tokenizer, "chat_template", None):
        return False
    try:
        text = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tools=[_PROBE_TOOL],
                                             tokenize=False, add_generation_prompt=True)
    except Exception:  # a template that fails on tools cannot show them
        return False
    return "agentgym_probe_tool" in str(text)


def ensure_tool_template(tokenizer: Any) -> bool:
    """Give a ChatML tokenizer whose template hides tools :data:`HERMES_CHATML_TEMPLATE`; True if replaced.

    Raises:
        ValueError: The template hides tools and the tokenizer has no ChatML tokens to use instead.
    """
    if shows_tools(tokenizer):
        return False
    _require_chatml(tokenizer, "the model's chat template does not show tools")
    tokenizer.chat_template = HERMES_CHATML_TEMPLATE
    return True


def _require_chatml(tokenizer: Any, why: str) -> None:
    if "<|im_start|>" not in tokenizer.get_vocab() or "<|im_end|>" not in tokenizer.get_vocab():
        raise ValueError(f"{why} and the model has no ChatML tokens (<|im_start|>, <|im_end|>): "
                         "give it a chat template that renders `tools`")
