"""What every search backend returns, and the protocol it satisfies.

A backend is anything with ``name``, ``async search(query, k)``, ``async open(id_or_url)`` and
``async close()``: the embedded BM25 index, the web-search providers, the simulated LLM search, and
the record/replay cache that wraps any of them. The environment does paging, rewards and
formatting; backends only find and fetch.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from agentgym.errors import EnvError


class SearchResult(BaseModel):
    """One ranked hit. ``id`` is what ``open`` takes: a corpus id, or the URL for web backends."""

    id: str
    title: str
    snippet: str
    score: float
    url: str | None = None


class Document(BaseModel):
    """A page's readable text, as ``open`` returns it before the environment splits it into pages."""

    id: str
    title: str
    text: str
    url: str | None = None


class SearchProviderError(EnvError):
    """A search backend failed in a way retries could not fix (bad key, quota, provider down).

    It is not the model's fault, so it ends the episode as a recorded failure instead of going back to
    the model as a tool observation.
    """


@runtime_checkable
class SearchBackend(Protocol):
    """A search engine the environment can query."""

    name: str

    async def search(self, query: str, k: int) -> list[SearchResult]:
        """The top ``k`` results for ``query``, best first."""
        ...

    async def open(self, id_or_url: str) -> Document:
        """The full readable text behind a result id or URL; raises ``ToolError`` if there is none."""
        ...

    async def close(self) -> None:
        """Free connections; safe to call twice."""
        ...
