"""Simulated search: an LLM (here a local OpenAI-format server) writes the results, with noise."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from agentgym import Message, ToolCall, make
from agentgym.envs.search.backend import SearchProviderError
from agentgym.envs.search.data import Corpus
from agentgym.envs.search.policies import ReferencePolicy
from agentgym.envs.search.simulated import SimulatedSearch
from agentgym.errors import ToolError
from agentgym.rollout import rollout
from agentgym.testing import FakeOpenAI, completion
from agentgym.types import Task


def writer(request: dict[str, Any]) -> dict[str, Any]:
    """A fake writer model that follows the prompt: one result per requested slot, useful or noisy."""
    prompt = request["messages"][0]["content"]
    kinds = re.search(r"in this order: (.*)\.", prompt).group(1).split(", ")  # type: ignore[union-attr]
    query = prompt.rsplit("Query: ", 1)[1]
    results = [
        {"title": f"{kind.split()[1]} result {i} for {query}", "url": f"https://sim.example/{i}",
         "snippet": "Denver Broncos won." if "useful" in kind else "The Panthers are a team.",
         "content": ("The Denver Broncos won Super Bowl 50." if "useful" in kind else "Charlotte is a city.")}
        for i, kind in enumerate(kinds, 1)
    ]
    return completion(content="```json\n" + json.dumps({"results": results}) + "\n```")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(writer) as s:
        yield s


def simulated(server: FakeOpenAI, **options: Any) -> SimulatedSearch:
    return SimulatedSearch("openai/fake-writer", api_base=server.base_url, api_key="sk-test", **options)


async def test_results_follow_the_noise_setting(server: FakeOpenAI) -> None:
    clean = await simulated(server, noise=0.0).search("super bowl 50 winner", 3)
    assert [r.title for r in clean] == [f"useful result {i} for super bowl 50 winner" for i in (1, 2, 3)]
    assert [r.url for r in clean] == ["https://sim.example/1", "https://sim.example/2", "https://sim.example/3"]
    assert all(r.id.startswith("sim-") for r in clean) and len({r.id for r in clean}) == 3
    assert [r.score for r in clean] == [1.0, 0.5, 0.3333]
    noisy = await simulated(server, noise=1.0).search("q", 2)
    assert all(r.title.startswith("noisy") for r in noisy)
    first = [r.title.split()[0] for r in await simulated(server, noise=0.5, seed=3).search("q", 10)]
    busy = simulated(server, noise=0.5, seed=3)
    await busy.search("another episode's query", 10)  # other episodes' searches do not shift the draw
    again = [r.title.split()[0] for r in await busy.search("q", 10)]
    assert first == again and {"useful", "noisy"} == set(first)
    assert server.requests[0]["model"] == "fake-writer"


async def test_the_page_the_model_wrote_travels_with_its_result(server: FakeOpenAI) -> None:
    engine = simulated(server)
    results = await engine.search("super bowl", 1)
    assert results[0].content == "The Denver Broncos won Super Bowl 50."
    with pytest.raises(ToolError, match="no result"):  # the engine keeps no pages: the episode does
        await engine.open(results[0].id)


async def test_unreadable_output_is_asked_again_then_fails() -> None:
    replies = iter([completion(content="Sorry, I cannot."), completion(content='{"results": [{"title": "T", '
                                                                               '"snippet": "S"}]}')])
    with FakeOpenAI(lambda request: next(replies)) as s:
        results = await simulated(s).search("q", 1)
        assert [(r.title, r.snippet) for r in results] == [("T", "S")] and results[0].id.startswith("sim-")
        assert len(s.requests) == 2
    with FakeOpenAI(lambda request: completion(content="no json here")) as s:
        with pytest.raises(SearchProviderError, match="no readable JSON results twice"):
            await simulated(s).search("q", 1)


async def test_server_errors_are_retried() -> None:
    with FakeOpenAI(writer, faults=["500"]) as s:
        results = await simulated(s, retries=2).search("q", 2)
        assert len(results) == 2 and s.served == {"500": 1, "ok": 1}
    with FakeOpenAI(writer, faults=["500", "500", "500"]) as s:
        with pytest.raises(SearchProviderError, match="simulated search"):
            await simulated(s, retries=1).search("q", 2)


async def test_an_episode_with_simulated_search(server: FakeOpenAI) -> None:
    env = make("search", backend=simulated(server), hit_reward=0.25)
    task = Task(id="sim/1", prompt="Who won Super Bowl 50?", data={"answer": ["Denver Broncos"]})
    trajectory = await rollout(env, ReferencePolicy(), task)
    await env.close()
    assert trajectory.turns[0].info["retrieval_hit"] is True
    assert trajectory.reward_components == {"em": 1.0, "f1": 1.0} and trajectory.reward == 1.25


def hinted_writer(request: dict[str, Any]) -> dict[str, Any]:
    """A writer that uses the gold answer when the prompt gives it, as a real model would."""
    prompt = request["messages"][0]["content"]
    found = re.search(r"The correct answer is: (.*)", prompt)
    content = f"The answer is {found.group(1)}." if found else "Nobody knows."
    result = {"title": "Result", "url": "https://sim.example/1", "snippet": content, "content": content}
    return completion(content=json.dumps({"results": [result]}))


async def test_answer_hint_tells_the_writer_the_gold_answer(corpus: Corpus) -> None:
    question = next(q for q in corpus.questions if q.split == "reddit")
    task = next(t for t in make("search", split="reddit").tasks() if t.id.endswith(question.id))
    scores = {}
    with FakeOpenAI(hinted_writer) as s:
        for hint in (False, True):
            writer = SimulatedSearch("openai/writer", api_base=s.base_url, api_key="k", answer_hint=hint)
            env = make("search", backend=writer)
            trajectory = await rollout(env, ReferencePolicy(), task)
            scores[hint] = trajectory.reward_components["em"]
        prompts = [r["messages"][0]["content"] for r in s.requests]
    assert scores == {False: 0.0, True: 1.0}
    assert "The correct answer is" not in prompts[0]
    assert f"wants to answer: {question.question}\nThe correct answer is: {question.answers[0]}" in prompts[1]


def same_url_writer(request: dict[str, Any]) -> dict[str, Any]:
    """Every result at one URL, as a writer model often does; each page names the query it was written for,
    and the last slot of each search is a noisy page written after the useful ones."""
    prompt = request["messages"][0]["content"]
    query = prompt.rsplit("Query: ", 1)[1]
    results = [{"title": f"{kind} on {query}", "url": "https://sim.example/page", "snippet": f"{kind} snippet",
                "content": f"{kind} page written for {query}"} for kind in ("useful", "noisy")]
    return completion(content=json.dumps({"results": results}))


async def test_pages_belong_to_the_episode_that_saw_them() -> None:
    """Two concurrent episodes share one engine: each opens only the pages its own searches returned."""
    with FakeOpenAI(same_url_writer) as s:
        engine = SimulatedSearch("openai/w", api_base=s.base_url, api_key="k")
        first, second = make("search", backend=engine), make("search", backend=engine)
        await first.reset(Task(id="a", prompt="Who won?", data={"answer": ["x"]}))
        await second.reset(Task(id="b", prompt="Who lost?", data={"answer": ["y"]}))
        mine = json.loads((await first.step(call("search", query="winner", k=2))).observation[0].text)["results"]
        theirs = json.loads((await second.step(call("search", query="loser", k=2))).observation[0].text)["results"]
        page = (await first.step(call("open", id_or_url=mine[0]["id"]))).observation[0].text
        assert "useful page written for winner" in page
        stolen = (await second.step(call("open", id_or_url=mine[0]["id"]))).observation[0].text
        assert stolen.startswith("Error") and "no result" in stolen
        by_url = (await second.step(call("open", id_or_url="https://sim.example/page"))).observation[0]
        assert by_url.text.startswith("Error") and theirs[0]["id"] in by_url.text and "winner" not in by_url.text
        await first.close()
        await second.close()


async def test_a_reused_url_does_not_let_one_result_overwrite_another() -> None:
    """A useful and a noisy result at one URL stay two results, each opening its own page."""
    with FakeOpenAI(same_url_writer) as s:
        env = make("search", backend=SimulatedSearch("openai/w", api_base=s.base_url, api_key="k"))
        await env.reset(Task(id="a", prompt="Who won?", data={"answer": ["x"]}))
        listing = json.loads((await env.step(call("search", query="winner", k=2))).observation[0].text)["results"]
        assert len({r["id"] for r in listing}) == 2 and all("content" not in r for r in listing)
        pages = [(await env.step(call("open", id_or_url=r["id"]))).observation[0].text for r in listing]
        assert "useful page written for winner" in pages[0] and "noisy page written for winner" in pages[1]
        await env.close()


def call(name: str, **arguments: object) -> Message:
    return Message(role="assistant", tool_calls=[ToolCall(id=f"c-{name}", name=name, arguments=json.dumps(arguments))])


async def test_a_page_opens_by_its_url_when_only_one_result_has_it(server: FakeOpenAI) -> None:
    env = make("search", backend=simulated(server))
    await env.reset(Task(id="a", prompt="Who won Super Bowl 50?", data={"answer": ["Denver Broncos"]}))
    await env.step(call("search", query="super bowl 50", k=2))
    page = (await env.step(call("open", id_or_url="https://sim.example/2"))).observation[0].text
    assert page.startswith("useful result 2 for super bowl 50\nhttps://sim.example/2 (page 1 of 1)")
    await env.close()
