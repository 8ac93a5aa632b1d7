"""Web-search providers over aiohttp: Tavily, Brave, Serper and SearXNG, plus page fetching.

Each provider speaks its documented API, reads its key from an environment variable, spaces its
requests to a rate limit, and retries what can succeed later (connection errors, timeouts, 429 and
5xx, honouring ``Retry-After``) with tenacity. What cannot (a bad key, a bad request, a spent
quota) raises :class:`SearchProviderError` with the provider's own message: it ends the episode as
a recorded failure, since it is not the model's doing. ``open`` fetches the page and extracts its
readable text with trafilatura; a page that cannot be had goes back to the model as a tool error.

=========  ==================  =======================================  ==============================
provider   key variable        request                                  results
=========  ==================  =======================================  ==============================
tavily     TAVILY_API_KEY      POST /search, Bearer key, JSON body      ``results[]``: title, url,
                                                                        content, score
brave      BRAVE_API_KEY       GET /res/v1/web/search?q=&count=,        ``web.results[]``: title, url,
                               X-Subscription-Token                     description
serper     SERPER_API_KEY      POST /search, X-API-KEY, JSON body       ``organic[]``: title, link,
                                                                        snippet, position
searxng    SEARXNG_URL (base)  GET /search?q=&format=json               ``results[]``: title, url,
                                                                        content, score
=========  ==================  =======================================  ==============================
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import aiohttp
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from agentgym.envs.search.backend import Document, SearchBackend, SearchProviderError, SearchResult
from agentgym.errors import ToolError

_TAGS = re.compile(r"<[^>]+>")
T = TypeVar("T")
MAX_PAGE_BYTES = 4 << 20


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimiter:
    """Space calls at least ``1 / per_second`` seconds apart, across all tasks sharing it.

    Each caller books the next free slot before it sleeps; with no ``await`` between reading and
    booking, no lock is needed, and one limiter serves any number of event loops in turn.
    """

    def __init__(self, per_second: float) -> None:
        self.interval = 1.0 / per_second if per_second > 0 else 0.0
        self._next = 0.0

    async def wait(self) -> None:
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + self.interval
        if slot > now:
            await asyncio.sleep(slot - now)


_LIMITERS: dict[tuple[str, str, float], RateLimiter] = {}


def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    """``Retry-After`` in seconds, when the server sent it as a number."""
    after = response.headers.get("Retry-After", "")
    return float(after) if after.replace(".", "", 1).isdigit() else None


def _error_message(body: Any, text: str) -> str:
    """The provider's own words from an error body (each provider nests them differently)."""
    if isinstance(body, dict):
        detail = body.get("detail")
        if isinstance(detail, dict) and detail.get("error"):  # Tavily
            return str(detail["error"])
        error = body.get("error")
        if isinstance(error, dict):  # Brave
            return str(error.get("detail") or error.get("code") or error)
        for key in ("message", "error", "detail"):  # Serper, others
            if body.get(key):
                return str(body[key])
    return _TAGS.sub(" ", text).strip()[:300] or "(empty body)"


class HTTPProvider:
    """Shared HTTP machinery: session, timeout, rate limit, retries, error mapping, page fetching.

    Args:
        api_key: The key; read from :attr:`key_env` when not given.
        base_url: The API's base URL; the provider's public one when not given.
        timeout: Seconds for one request, connection included.
        retries: Attempts in all for a request that failed in a retryable way.
        backoff: First retry wait in seconds (doubling up to 30 s) when no ``Retry-After`` is given.
        per_second: Request rate limit, shared by every instance in the process with the same
            provider, base URL and rate (an evaluation makes one env, so one provider, per episode).
    """

    name: ClassVar[str] = ""
    key_env: ClassVar[str] = ""
    """The environment variable holding the key; empty for a provider that takes none."""
    url_env: ClassVar[str] = ""
    """An environment variable that may hold the base URL (for self-hosted providers)."""
    default_url: ClassVar[str] = ""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 20.0,
        retries: int = 4,
        backoff: float = 1.0,
        per_second: float = 1.0,
    ) -> None:
        if api_key is None:
            api_key = os.environ.get(self.key_env, "") if self.key_env else ""
        self.api_key = api_key
        if self.key_env and not self.api_key:
            raise SearchProviderError(f"{self.name}: set {self.key_env} (or pass api_key=)")
        url = base_url or (os.environ.get(self.url_env, "") if self.url_env else "") or self.default_url
        if not url:
            raise SearchProviderError(f"{self.name}: set {self.url_env} to its URL or pass base_url=")
        self.base_url = url.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self.retries = retries
        self.backoff = backoff
        self.limiter = _LIMITERS.setdefault((self.name, self.base_url, per_second), RateLimiter(per_second))
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"User-Agent": "agentgym-search/0.1"}
            self._session = aiohttp.ClientSession(timeout=self.timeout, headers=headers)
        return self._session

    def _wait(self, state: Any) -> float:
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, _Retryable) and error.retry_after is not None:
            return min(error.retry_after, 60.0)
        return float(wait_exponential(multiplier=self.backoff, max=30)(state))

    async def _with_retries(self, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` until it succeeds, raises something not retryable, or attempts run out."""
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.retries),
            wait=self._wait,
            retry=retry_if_exception_type((_Retryable, aiohttp.ClientConnectionError, asyncio.TimeoutError)),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await call()
        raise AssertionError("tenacity neither returned nor raised")

    async def _request(self, method: str, url: str, **kwargs: Any) -> Any:
        """One API call with rate limit and retries; returns the decoded JSON body."""

        async def once() -> Any:
            await self.limiter.wait()
            return await self._api_call(method, url, **kwargs)

        try:
            return await self._with_retries(once)
        except (_Retryable, TimeoutError, aiohttp.ClientError) as e:
            reason = str(e) if isinstance(e, _Retryable) else f"{type(e).__name__}: {e}"
            raise SearchProviderError(f"{self.name}: {reason} (gave up after {self.retries} attempts)") from e

    async def _api_call(self, method: str, url: str, **kwargs: Any) -> Any:
        async with self._client().request(method, url, **kwargs) as response:
            text = await response.text()
            try:
                body = await response.json(content_type=None)
            except ValueError:
                body = None
            if response.status == 429 or response.status >= 500:
                message = f"HTTP {response.status}: {_error_message(body, text)}"
                raise _Retryable(message, _retry_after(response))
            if response.status >= 400:
                hint = f"; check {self.key_env}" if response.status in (401, 403) and self.key_env else ""
                if response.status == 403 and not self.key_env:
                    hint = "; is the json format enabled on the instance (search.formats)?"
                message = _error_message(body, text)
                raise SearchProviderError(f"{self.name}: HTTP {response.status}: {message}{hint}")
            if body is None:
                raise _Retryable(f"HTTP {response.status} with a body that is not JSON")
            return body

    async def open(self, id_or_url: str) -> Document:
        """Fetch a web page (retrying 429, 5xx and dropped connections) and extract its readable text.

        Extraction (trafilatura) runs off the event loop. A page that cannot be had, or has no text,
        raises ``ToolError``: the model chose the URL, and can choose another.
        """
        url = id_or_url.strip()
        if not url.startswith(("http://", "https://")):
            raise ToolError(f"{id_or_url!r} is not a URL: open takes a result's id (its URL)")
        try:
            raw, kind, charset = await self._with_retries(lambda: self._page(url))
        except (_Retryable, TimeoutError, aiohttp.ClientError) as e:
            raise ToolError(f"could not open {url}: {e or type(e).__name__}") from e
        text = raw.decode(charset, errors="replace")
        if kind == "text/plain":
            return Document(id=url, title=url, text=text, url=url)
        if "html" not in kind and "xml" not in kind:
            raise ToolError(f"cannot read {url}: content type {kind!r} is not a web page")
        title, body = await asyncio.to_thread(extract_text, text, url)
        if not body:
            raise ToolError(f"{url} has no readable text")
        return Document(id=url, title=title or url, text=body, url=url)

    async def _page(self, url: str) -> tuple[bytes, str, str]:
        async with self._client().get(url, allow_redirects=True) as response:
            if response.status == 429 or response.status >= 500:
                raise _Retryable(f"HTTP {response.status}", _retry_after(response))
            if response.status >= 400:
                raise ToolError(f"could not open {url}: HTTP {response.status}")
            chunks, size = [], 0
            async for chunk in response.content.iter_chunked(1 << 16):
                chunks.append(chunk)
                size += len(chunk)
                if size >= MAX_PAGE_BYTES:  # a page this long is cut, not refused
                    break
            return b"".join(chunks)[:MAX_PAGE_BYTES], response.content_type, response.charset or "utf-8"

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def extract_text(html: str, url: str | None = None) -> tuple[str, str]:
    """``(title, main text)`` of an HTML page: trafilatura's extraction, its plain-text fallback if empty."""
    import trafilatura

    found = trafilatura.bare_extraction(html, url=url, with_metadata=True, favor_recall=True,
                                        include_comments=False)
    title = getattr(found, "title", None) or ""
    text = getattr(found, "text", None) or trafilatura.html2txt(html) or ""
    return title, text.strip()


def _result(url: str, title: str | None, snippet: str | None, score: float) -> SearchResult:
    """A web result: its id is its URL; highlight tags (Brave's ``<strong>``) are dropped."""
    title = _TAGS.sub("", title or "").strip() or url
    return SearchResult(id=url, url=url, title=title, snippet=_TAGS.sub("", snippet or "").strip(),
                        score=round(score, 4))


class Tavily(HTTPProvider):
    """Tavily's search API (``api.tavily.com``), which returns a relevance score per result."""

    name = "tavily"
    key_env = "TAVILY_API_KEY"
    default_url = "https://api.tavily.com"

    async def search(self, query: str, k: int) -> list[SearchResult]:
        body = await self._request(
            "POST", f"{self.base_url}/search", headers={"Authorization": f"Bearer {self.api_key}"},
            json={"query": query, "max_results": k, "search_depth": "basic"},
        )
        results = body.get("results", [])[:k]
        return [_result(r["url"], r.get("title"), r.get("content"), float(r.get("score") or 0.0))
                for r in results]


class Brave(HTTPProvider):
    """Brave Search's web endpoint; it gives no score, so results are scored 1/rank."""

    name = "brave"
    key_env = "BRAVE_API_KEY"
    default_url = "https://api.search.brave.com"

    async def search(self, query: str, k: int) -> list[SearchResult]:
        body = await self._request(
            "GET", f"{self.base_url}/res/v1/web/search", params={"q": query, "count": str(min(k, 20))},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        results = (body.get("web") or {}).get("results", [])[:k]
        return [_result(r["url"], r.get("title"), r.get("description"), 1 / rank)
                for rank, r in enumerate(results, 1)]


class Serper(HTTPProvider):
    """Serper's Google search (``google.serper.dev``); results are scored 1/position."""

    name = "serper"
    key_env = "SERPER_API_KEY"
    default_url = "https://google.serper.dev"

    async def search(self, query: str, k: int) -> list[SearchResult]:
        body = await self._request("POST", f"{self.base_url}/search", headers={"X-API-KEY": self.api_key},
                                   json={"q": query, "num": k})
        results = body.get("organic", [])[:k]
        return [_result(r["link"], r.get("title"), r.get("snippet"), 1 / int(r.get("position") or rank))
                for rank, r in enumerate(results, 1)]


class SearXNG(HTTPProvider):
    """A SearXNG instance's JSON API (the instance must enable ``json`` in ``search.formats``)."""

    name = "searxng"
    url_env = "SEARXNG_URL"

    async def search(self, query: str, k: int) -> list[SearchResult]:
        body = await self._request("GET", f"{self.base_url}/search", params={"q": query, "format": "json"})
        results = body.get("results", [])[:k]
        return [_result(r["url"], r.get("title"), r.get("content"), float(r.get("score") or 1 / rank))
                for rank, r in enumerate(results, 1)]


PROVIDERS: dict[str, Callable[[], SearchBackend]] = {p.name: p for p in (Tavily, Brave, Serper, SearXNG)}
