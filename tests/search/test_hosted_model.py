"""A hosted model (litellm, against a local OpenAI-format server) plays the search env end to end."""

from __future__ import annotations

import json
from typing import Any

from agentgym.envs.search.data import Corpus
from agentgym.evaluation import evaluate
from agentgym.policies import LiteLLMPolicy
from agentgym.testing import FakeOpenAI, completion, tool_call
from agentgym.types import Task


def agent(request: dict[str, Any]) -> dict[str, Any]:
    """A scripted stand-in for a model: search, open the first result, answer from the page."""
    messages = request["messages"]
    tools = [m for m in messages if m["role"] == "tool"]
    if not tools:
        question = next(m["content"] for m in messages if m["role"] == "user")
        return completion(tool_calls=[tool_call("search", {"query": question, "k": 3})])
    last = tools[-1]["content"]
    if last.startswith("{"):
        first = json.loads(last)["results"][0]["id"]
        return completion(tool_calls=[tool_call("open", {"id_or_url": first})])
    return completion(content="Denver Broncos" if "Denver Broncos" in last else "I could not find it.")


async def test_a_hosted_model_searches_reads_and_answers(corpus: Corpus) -> None:
    q = next(q for q in corpus.questions if q.id == "56be4db0acb8001400a502ec")
    task = Task(id=f"squad/{q.id}", prompt=q.question,
                data={"answer": list(q.answers), "paragraph_ids": [q.paragraph_id]})
    with FakeOpenAI(agent, faults=["429"]) as server:
        policy = LiteLLMPolicy("openai/fake-model", api_base=server.base_url, api_key="sk-test", backoff=0.01)
        summary, [trajectory] = await evaluate("search", policy, tasks=[task], progress=False,
                                               env_kwargs={"hit_reward": 0.1})
    tools = server.requests[0]["tools"]
    assert [t["function"]["name"] for t in tools] == ["search", "open", "answer"]
    assert tools[0]["function"]["parameters"]["properties"]["k"] == {
        "default": 5, "description": "How many results to return, 1 to 20.", "type": "integer"}
    assert server.requests[0]["messages"][0]["role"] == "system"
    assert trajectory.outcome == "terminated" and len(trajectory.turns) == 3
    assert trajectory.reward_components == {"em": 1.0, "f1": 1.0} and trajectory.reward == 1.1
    assert summary.retries == 1 and summary.prompt_tokens > 0
