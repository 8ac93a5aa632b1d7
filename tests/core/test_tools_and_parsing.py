import json

import pytest

from agentgym import Message, ToolCall, tool
from agentgym.parsing import format_text_tool_call, parse_text_tool_calls, parse_tool_calls
from agentgym.tools import ToolFunction, parse_docstring


async def search(query: str, k: int = 5, exact: bool = False) -> str:
    """Search the corpus for passages.

    Longer explanation that the model also reads.

    Args:
        query: Words to look for.
        k: How many results,
            at most 50.
        exact: Match the phrase exactly.

    Returns:
        Ranked results.
    """
    return query


def test_schema_comes_from_hints_and_docstring():
    spec = ToolFunction(search).spec
    assert spec.name == "search"
    assert spec.description.startswith("Search the corpus for passages.")
    assert "Longer explanation" in spec.description and "Ranked results" not in spec.description
    props = spec.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "Words to look for."}
    assert props["k"]["type"] == "integer" and props["k"]["default"] == 5
    assert props["k"]["description"] == "How many results, at most 50."
    assert props["exact"]["type"] == "boolean"
    assert spec.parameters["required"] == ["query"]
    assert spec.to_openai()["function"]["parameters"]["additionalProperties"] is False


def test_tool_without_description_or_type_is_refused():
    async def no_doc(x: int) -> str:
        return ""

    async def no_arg_doc(x: int) -> str:
        """Does things."""
        return ""

    async def no_hint(x) -> str:  # type: ignore[no-untyped-def]
        """Does things.

        Args:
            x: a thing.
        """
        return ""

    for fn, message in ((no_doc, "docstring"), (no_arg_doc, "description"), (no_hint, "type hint")):
        with pytest.raises(TypeError, match=message):
            tool(fn)


def test_validation_messages_name_the_field():
    fn = ToolFunction(search)
    assert fn.validate({"query": "x"}) == {"query": "x", "k": 5, "exact": False}
    with pytest.raises(ValueError, match="k"):
        fn.validate({"query": "x", "k": "many"})
    with pytest.raises(ValueError, match="query"):
        fn.validate({})
    with pytest.raises(ValueError, match="nope: Extra inputs"):
        fn.validate({"query": "x", "nope": 1})


def test_docstring_sections():
    doc = "Do it.\n\nArgs:\n    a (int): first\n    b: second\n        continued\nRaises:\n    X: y"
    desc, args = parse_docstring(doc)
    assert desc == "Do it."
    assert args == {"a": "first", "b": "second continued"}


def test_native_calls_parse_and_malformed_json_is_reported():
    msg = Message(role="assistant", tool_calls=[
        ToolCall(id="1", name="search", arguments='{"query": "a"}'),
        ToolCall(id="2", name="search", arguments='{"query": '),
        ToolCall(id="3", name="search", arguments="[1, 2]"),
    ])
    calls = parse_tool_calls(msg)
    assert calls[0].arguments == {"query": "a"} and calls[0].error is None
    assert calls[1].error == "malformed_json" and "not valid JSON" in calls[1].error_message
    assert calls[2].error == "malformed_json" and "object" in calls[2].error_message


def test_text_calls_hermes_style():
    text = "I will search.\n" + format_text_tool_call("search", {"query": "a b"}) + "\n<tool_call>{oops</tool_call>"
    calls = parse_text_tool_calls(text)
    assert [c.name for c in calls] == ["search", ""]
    assert calls[0].arguments == {"query": "a b"}
    assert calls[1].error == "malformed_json"
    unclosed = parse_text_tool_calls('<tool_call>{"name": "f", "arguments": {"x": 1}}')
    assert unclosed[0].name == "f" and unclosed[0].arguments == {"x": 1}
    string_args = parse_text_tool_calls('<tool_call>{"name": "f", "arguments": "{\\"x\\": 2}"}</tool_call>')
    assert string_args[0].arguments == {"x": 2}
    assert parse_text_tool_calls("no calls here") == []
    assert parse_tool_calls(Message(role="assistant", content=text))[0].raw_arguments == json.dumps({"query": "a b"})
