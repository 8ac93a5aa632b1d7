"""Test doubles that ship with agentgym: a local OpenAI-format server for runs with no API key."""

from agentgym.testing.fake_openai import FakeOpenAI, completion, tool_call

__all__ = ["FakeOpenAI", "completion", "tool_call"]
