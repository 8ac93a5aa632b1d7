"""Problem statements written by a model: agentgym's litellm policy against a real HTTP server (FakeOpenAI)."""

from __future__ import annotations

from typing import Any

import pytest

from agentgym.envs.swe import synthesize as syn
from agentgym.testing.fake_openai import FakeOpenAI, completion
from tests.conftest import docker_or_skip

pytestmark = pytest.mark.docker

REPORT = "Binding keyword arguments twice loses the first ones."


def writer(request: dict[str, Any]) -> dict[str, Any]:
    return completion(content=f"  {REPORT}\n")


async def test_the_model_writes_the_problem_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    docker_or_skip()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(writer, faults=["429"]) as server:  # one rate limit first: the policy's retry is used
        [row] = await syn.synthesize("toolz", version="1.2.0", count=1, seed=0, model="openai/fake-model",
                                     api_base=server.base_url)
    assert row["problem_statement"] == REPORT
    [request] = server.requests[-1:]
    system, user = request["messages"]
    assert system == {"role": "system", "content": syn.SYSTEM_PROMPT}
    assert row["FAIL_TO_PASS"][0] in user["content"] and "The first failure:" in user["content"]
    assert server.served.get("429") == 1 and request["temperature"] == 0.0
