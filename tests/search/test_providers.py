"""Web-search providers against a local server speaking each one's wire format, errors included."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import pytest

from agentgym import Message, ToolCall, make
from agentgym.envs.search.backend import SearchProviderError
from agentgym.envs.search.policies import ReferencePolicy
from agentgym.envs.search.providers import PROVIDERS, HTTPProvider, SearXNG, Tavily
from agentgym.errors import ToolError
from agentgym.evaluation import evaluate
from agentgym.rollout import rollout
from agentgym.types import Task
from tests.search.conftest import Serve
from tests.search.webfake import KEY, FakeWeb

NAMES = ["tavily", "brave", "serper", "searxng"]


def call(name: str, **arguments: object) -> Message:
    tool_call = ToolCall(id="c", name=name, arguments=json.dumps(arguments))
    return Message(role="assistant", tool_calls=[tool_call])


@pytest.fixture
async def fake(serve: Serve) -> AsyncIterator[FakeWeb]:
    web_ = FakeWeb()
    web_.base = await serve(web_.app())
    yield web_


def provider(fake: FakeWeb, name: str, **options: float) -> HTTPProvider:
    settings = {"timeout": 5.0, "retries": 3, "backoff": 0.01, "per_second": 1000.0, **options}
    key = None if name == "searxng" else KEY
    return PROVIDERS[name](api_key=key, base_url=f"{fake.base}/{name}", **settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NAMES)
async def test_search_speaks_each_providers_format(fake: FakeWeb, name: str) -> None:
    engine = provider(fake, name)
    results = await engine.search("who won super bowl 50", 2)
    await engine.close()
    assert [r.id for r in results] == [f"{fake.base}/pages/broncos", f"{fake.base}/pages/panthers"]
    assert results[0].url == results[0].id and results[0].title == "Super Bowl 50"
    assert results[0].snippet == "The AFC champion Denver Broncos defeated the Panthers."  # no <strong>
    assert results[0].score > results[1].score > 0
    sent = fake.requests[-1]
    if name == "tavily":
        assert sent["headers"]["Authorization"] == f"Bearer {KEY}"
        assert sent["body"] == {"query": "who won super bowl 50", "max_results": 2, "search_depth": "basic"}
    elif name == "brave":
        assert sent["headers"]["X-Subscription-Token"] == KEY
        assert sent["headers"]["Accept"] == "application/json"
        assert sent["query"] == {"q": "who won super bowl 50", "count": "2"}
    elif name == "serper":
        assert sent["headers"]["X-API-KEY"] == KEY
        assert sent["body"] == {"q": "who won super bowl 50", "num": 2}
    else:
        assert sent["query"] == {"q": "who won super bowl 50", "format": "json"}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("tavily", "HTTP 401: Unauthorized: missing or invalid API key.; check TAVILY_API_KEY"),
        ("brave", "HTTP 422: The provided subscription token is invalid."),
        ("serper", "HTTP 403: Unauthorized.; check SERPER_API_KEY"),
    ],
)
async def test_a_rejected_key_fails_at_once_in_its_words(fake: FakeWeb, name: str, message: str) -> None:
    engine = PROVIDERS[name](api_key="wrong", base_url=f"{fake.base}/{name}", backoff=0.01)
    with pytest.raises(SearchProviderError, match=message.replace(".", r"\.").replace("?", r"\?")):
        await engine.search("q", 3)
    await engine.close()
    assert len(fake.requests) == 1


async def test_searxng_without_json_format_says_how_to_fix_it(fake: FakeWeb) -> None:
    engine = SearXNG(base_url=f"{fake.base}/searxng", backoff=0.01)
    with pytest.raises(SearchProviderError, match="403: 403 Forbidden; is the json format enabled"):
        await engine._request("GET", f"{fake.base}/searxng/search", params={"q": "x", "format": "html"})
    await engine.close()


@pytest.mark.parametrize("name", NAMES)
async def test_rate_limits_and_server_errors_are_retried(fake: FakeWeb, name: str) -> None:
    fake.faults = ["429", "500"]
    engine = provider(fake, name)
    results = await engine.search("super bowl", 1)
    await engine.close()
    assert len(results) == 1 and len(fake.requests) == 3


async def test_retries_give_up_with_the_last_error(fake: FakeWeb) -> None:
    fake.faults = ["500", "500", "429", "500"]
    engine = provider(fake, "tavily")
    expected = r"tavily: HTTP 429: Rate limit exceeded\. \(gave up after 3 attempts\)"
    with pytest.raises(SearchProviderError, match=expected):
        await engine.search("super bowl", 1)
    await engine.close()
    assert len(fake.requests) == 3


async def test_a_hanging_provider_times_out_and_is_retried(fake: FakeWeb) -> None:
    fake.faults = ["hang"]  # the first request hangs for 30 s
    engine = provider(fake, "brave", timeout=2)
    started = time.monotonic()
    results = await engine.search("super bowl", 2)
    await engine.close()
    # Given up on and retried, not waited out. A loaded machine may answer a later request after the
    # client's 2 s too; that one is retried as well, so the count is a floor.
    assert len(results) == 2 and len(fake.requests) >= 2 and time.monotonic() - started < 30
    fake.faults = ["hang", "hang"]
    engine = provider(fake, "brave", timeout=2, retries=2)
    with pytest.raises(SearchProviderError, match="TimeoutError"):
        await engine.search("super bowl", 2)
    await engine.close()


async def test_requests_are_spaced_to_the_rate_limit_across_instances(fake: FakeWeb) -> None:
    engines = [provider(fake, "serper", per_second=10.0) for _ in range(2)]  # e.g. two concurrent envs
    assert engines[0].limiter is engines[1].limiter and engines[0].limiter.interval == 0.1  # one budget
    started = time.monotonic()
    await asyncio.gather(*(engine.search("q", 1) for engine in engines for _ in range(3)))
    elapsed = time.monotonic() - started
    for engine in engines:
        await engine.close()
    # Six calls, 0.1 s apart at least: 0.5 s at least. Only a floor: a loaded machine just spaces them more.
    assert elapsed >= 0.5 and len(fake.requests) == 6


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.delenv("SEARXNG_URL", raising=False)
    with pytest.raises(SearchProviderError, match="set TAVILY_API_KEY"):
        Tavily()
    with pytest.raises(SearchProviderError, match="set SEARXNG_URL"):
        SearXNG()
    monkeypatch.setenv("TAVILY_API_KEY", "from-env")
    monkeypatch.setenv("SEARXNG_URL", "http://127.0.0.1:1/")
    assert Tavily().api_key == "from-env" and SearXNG().base_url == "http://127.0.0.1:1"


async def test_open_extracts_a_pages_readable_text(fake: FakeWeb) -> None:
    engine = provider(fake, "tavily")
    page = await engine.open(f"{fake.base}/pages/broncos")
    assert page.title == "Super Bowl 50" and page.url == f"{fake.base}/pages/broncos"
    assert "Denver Broncos defeated" in page.text and "Levi's Stadium" in page.text
    assert "<p>" not in page.text and "Copyright notice" not in page.text
    plain = await engine.open(f"{fake.base}/pages/notes.txt")
    assert plain.text == "Plain notes: the Broncos won."
    for target, message in [
        (f"{fake.base}/pages/gone", "HTTP 404"),
        (f"{fake.base}/pages/report.pdf", "'application/pdf' is not a web page"),
        ("squad-12", "is not a URL"),
        ("http://127.0.0.1:9/nothing", "could not open"),
    ]:
        with pytest.raises(ToolError, match=message):
            await engine.open(target)
    await engine.close()


async def test_pages_are_retried_when_busy_and_given_up_on_with_a_tool_error(fake: FakeWeb) -> None:
    engine = provider(fake, "searxng", retries=3)
    fake.page_faults = [503, 429]
    page = await engine.open(f"{fake.base}/pages/panthers")
    assert page.text == "The Panthers play in Charlotte." and fake.page_hits == 3
    fake.page_faults = [500, 502, 503]
    with pytest.raises(ToolError, match=r"could not open .*: HTTP 503"):
        await engine.open(f"{fake.base}/pages/panthers")
    assert fake.page_hits == 6
    await engine.close()


async def test_a_long_page_is_read_whole_and_in_pages(fake: FakeWeb) -> None:
    engine = provider(fake, "tavily")
    env = make("search", backend=engine, max_turns=50)
    await env.reset(Task(id="long", prompt="?", data={"answer": ["x"]}))
    url = f"{fake.base}/pages/long"
    document = await env.backend.open(url)
    assert len(document.text) > 300_000 and document.text.rstrip().endswith("The end marker.")
    first = await env.step(call("open", id_or_url=url))
    pages = int(first.observation[0].text.split("\n")[1].rsplit(" of ", 1)[1].rstrip(")"))
    last = await env.step(call("open", id_or_url=url, page=pages))
    assert pages > 150 and last.observation[0].text.rstrip().endswith("The end marker.")
    await env.close()
    await engine.close()


async def test_an_episode_on_a_web_provider(fake: FakeWeb) -> None:
    engine = provider(fake, "serper")
    env = make("search", backend=engine, hit_reward=0.5)
    task = Task(id="web/1", prompt="Which team won Super Bowl 50?",
                data={"answer": ["Denver Broncos"], "paragraph_ids": ["squad-0"]})
    trajectory = await rollout(env, ReferencePolicy(), task)
    await env.close()
    await engine.close()
    search, opened, _ = trajectory.turns
    assert json.loads(search.observation[0].text)["results"][0]["id"] == f"{fake.base}/pages/broncos"
    assert search.reward == 0.5 and search.info["retrieval_hit"] is True  # the gold answer is in a snippet
    assert "(page 1 of 1)" in opened.observation[0].text
    assert trajectory.reward_components == {"em": 1.0, "f1": 1.0} and trajectory.reward == 1.5


async def test_concurrent_episodes_share_one_provider(fake: FakeWeb) -> None:
    engine = provider(fake, "brave")  # the caller owns it: envs closing must not close it under others
    gold = {"answer": ["Denver Broncos"]}
    tasks = [Task(id=f"web/{i}", prompt=f"Super Bowl 50 winner, take {i}", data=gold) for i in range(12)]
    summary, _ = await evaluate("search", ReferencePolicy(), tasks=tasks, concurrency=4,
                                progress=False, env_kwargs={"backend": engine})
    await engine.close()
    assert summary.outcomes == {"terminated": 12} and summary.reward_components["em"] == 1.0
    assert len(fake.requests) == 12
