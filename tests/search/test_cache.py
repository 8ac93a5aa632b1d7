"""Record and replay: a recorded evaluation reruns identically with no network and no key."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentgym import Message, ToolCall, Trajectory, make
from agentgym.envs.search import CacheMiss, RecordReplay
from agentgym.envs.search.policies import ReferencePolicy
from agentgym.envs.search.providers import Tavily
from agentgym.rollout import rollout
from agentgym.testing import FakeOpenAI, completion
from agentgym.types import Task
from tests.search.conftest import Serve
from tests.search.webfake import KEY, FakeWeb

TASKS = [
    Task(id="web/1", prompt="Which team won Super Bowl 50?", data={"answer": ["Denver Broncos"]}),
    Task(id="web/2", prompt="Where do the Panthers play?", data={"answer": ["Charlotte"]}),
    Task(id="web/3", prompt="When was Super Bowl 50 played?", data={"answer": ["February 7, 2016"]}),
]


@pytest.fixture
async def fake(serve: Serve) -> AsyncIterator[FakeWeb]:
    web_ = FakeWeb()
    web_.base = await serve(web_.app())
    yield web_


def stable(trajectory: Trajectory) -> dict[str, Any]:
    """A trajectory without its wall-clock timings, which no replay can reproduce."""
    data = trajectory.model_dump()
    data.pop("seconds")
    data.pop("policy_seconds")
    for turn in data["turns"]:
        turn.pop("env_seconds")
        turn.pop("policy_seconds")
    return data


async def play(backend: Any, tasks: list[Task]) -> list[Trajectory]:
    env = make("search", backend=backend, hit_reward=0.1, repeat_penalty=0.1)
    try:
        return [await rollout(env, ReferencePolicy(), task) for task in tasks]
    finally:
        await env.close()
        await backend.close()


async def test_a_recorded_web_run_replays_identically_offline(fake: FakeWeb, tmp_path: Path) -> None:
    cache = tmp_path / "tavily.jsonl"
    tavily = Tavily(api_key=KEY, base_url=f"{fake.base}/tavily", per_second=1000)
    recorded = await play(RecordReplay(tavily, cache, mode="record"), TASKS)
    live_requests = len(fake.requests)
    # the fake web ranks the Super Bowl page first for every query, so the Panthers question is missed
    assert live_requests == 3 and [t.reward_components["em"] for t in recorded] == [1.0, 0.0, 1.0]
    lines = [json.loads(line) for line in cache.read_text().splitlines()]
    assert [(e["op"], e["backend"]) for e in lines] == [("search", "tavily"), ("open", "tavily")] * 3

    replayed = await play(RecordReplay(None, cache, mode="replay"), TASKS)  # no key, no backend
    assert [stable(t) for t in replayed] == [stable(t) for t in recorded]
    assert len(fake.requests) == live_requests

    through_env = make("search", backend=tavily, cache=cache, hit_reward=0.1, repeat_penalty=0.1)  # auto
    try:
        again = [await rollout(through_env, ReferencePolicy(), task) for task in TASKS]
    finally:
        await through_env.close()
        await tavily.close()
    assert [stable(t) for t in again] == [stable(t) for t in recorded] and len(fake.requests) == live_requests


async def test_replay_of_an_unrecorded_request_fails_the_episode(tmp_path: Path) -> None:
    cache = tmp_path / "empty.jsonl"
    env = make("search", backend=RecordReplay(None, cache, mode="replay"))
    await env.reset(TASKS[0])
    search = ToolCall(id="c1", name="search", arguments='{"query": "x"}')
    action = Message(role="assistant", tool_calls=[search])
    with pytest.raises(CacheMiss, match="has no recording of search"):
        await env.step(action)
    trajectory = await rollout(env, ReferencePolicy(), TASKS[0])
    assert trajectory.outcome == "error" and "has no recording" in (trajectory.failure or "")
    with pytest.raises(ValueError, match="needs a backend"):
        RecordReplay(None, cache, mode="auto")


async def test_page_errors_are_recorded_and_replayed(fake: FakeWeb, tmp_path: Path) -> None:
    cache = tmp_path / "pages.jsonl"
    tavily = Tavily(api_key=KEY, base_url=f"{fake.base}/tavily")
    recorder = RecordReplay(tavily, cache, mode="auto")
    with pytest.raises(Exception, match="HTTP 404") as live:
        await recorder.open(f"{fake.base}/pages/gone")
    await tavily.close()
    with pytest.raises(type(live.value), match="HTTP 404"):
        await RecordReplay(None, cache, mode="replay").open(f"{fake.base}/pages/gone")


async def test_a_simulated_run_replays_identically_though_the_writer_changes(tmp_path: Path) -> None:
    from agentgym.envs.search.simulated import SimulatedSearch

    calls = {"n": 0}

    def drifting_writer(request: dict[str, Any]) -> dict[str, Any]:
        calls["n"] += 1  # a sampled LLM: each answer differs from the last
        results = [{"title": f"draft {calls['n']}", "url": f"https://sim.example/{calls['n']}",
                    "snippet": "Denver Broncos", "content": f"Denver Broncos (draft {calls['n']})"}]
        return completion(content=json.dumps({"results": results}))

    cache = tmp_path / "simulated.jsonl"
    with FakeOpenAI(drifting_writer) as server:
        writer = SimulatedSearch("openai/writer", api_base=server.base_url, api_key="sk-test")
        recorded = await play(RecordReplay(writer, cache, mode="record"), TASKS[:2])
        live = await play(writer, TASKS[:2])
    assert [stable(t) for t in live] != [stable(t) for t in recorded]
    replayed = await play(RecordReplay(None, cache, mode="replay"), TASKS[:2])
    assert [stable(t) for t in replayed] == [stable(t) for t in recorded]


async def test_task_dependent_results_are_recorded_per_task(tmp_path: Path) -> None:
    from agentgym.envs.search.simulated import SimulatedSearch

    from .test_simulated import hinted_writer

    same_question = [Task(id=f"q{i}", prompt="Who wrote it?", data={"answer": [name]})
                     for i, name in enumerate(["Ada", "Grace"])]
    cache = tmp_path / "hinted.jsonl"
    with FakeOpenAI(hinted_writer) as server:
        writer = SimulatedSearch("openai/w", api_base=server.base_url, api_key="k", answer_hint=True)
        recorded = await play(RecordReplay(writer, cache, mode="auto"), same_question)
        assert len(server.requests) == 2  # the same query, asked once per task
    assert [t.reward_components["em"] for t in recorded] == [1.0, 1.0]
    lines = [json.loads(line) for line in cache.read_text().splitlines()]
    # each page is recorded inside its search's results (opening it asks no backend): one URL, two pages
    assert [(e["op"], e["request"]["task"]) for e in lines] == [("search", "q0"), ("search", "q1")]
    assert [e["response"][0]["content"] for e in lines] == ["The answer is Ada.", "The answer is Grace."]
    assert {e["response"][0]["url"] for e in lines} == {"https://sim.example/1"}
    replayed = await play(RecordReplay(None, cache, mode="replay"), same_question)
    assert [stable(t) for t in replayed] == [stable(t) for t in recorded]


async def test_a_recording_gives_each_episode_its_own_page_at_a_reused_url(tmp_path: Path) -> None:
    """The writer puts every page at one URL; recorded and replayed, each episode still reads its own."""
    from agentgym.envs.search.simulated import SimulatedSearch

    from .test_simulated import same_url_writer

    questions = [Task(id=f"q{i}", prompt=p, data={"answer": [f"useful page written for {p}"]})
                 for i, p in enumerate(["Who won?", "Who lost?"])]
    cache = tmp_path / "reused.jsonl"
    with FakeOpenAI(same_url_writer) as server:
        writer = SimulatedSearch("openai/w", api_base=server.base_url, api_key="k")
        recorded = await play(RecordReplay(writer, cache, mode="auto"), questions)
    replayed = await play(RecordReplay(None, cache, mode="replay"), questions)
    assert [t.reward_components["em"] for t in recorded] == [1.0, 1.0]
    assert [stable(t) for t in replayed] == [stable(t) for t in recorded]
