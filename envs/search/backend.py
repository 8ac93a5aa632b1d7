"""What every search backend returns, and the protocol it satisfies.

A backend is anything with ``name``, ``async search(query, k)``, ``async open(id_or_url)`` and
``async close()``: the embedded BM25 index, the web-search providers, the simulated LLM search, and
the record/replay cache that wraps any of them. One whose answers depend on the episode's task sets
``task_dependent = True`` and reads :data:`current_task`. The environment does paging, rewards and
formatting; backends only find and fetch.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from agentgym.errors import EnvError
from agentgym.types import Task

current_task: ContextVar[Task | None] = ContextVar("agentgym_search_task", default=None)
"""The task of the episode whose ``search`` or ``open`` call is running.

:class:`~agentgym.envs.search.env.SearchEnv` sets it around each backend call, so a backend that
depends on the task (simulated search told the gold answer, as ZeroSearch does) can read it
without the protocol carrying it. A context variable is per asyncio task, so episodes running
concurrently on one shared backend each see their own.
"""


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

    @property
    def name(self) -> str:
        """A short name for logs and cache keys."""
        ...

    async def search(self, query: str, k: int) -> list[SearchResult]:
        """The top ``k`` results for ``query``, best first."""
        ...

    async def open(self, id_or_url: str) -> Document:
        """The full readable text behind a result id or URL; raises ``ToolError`` if there is none."""
        ...

    async def close(self) -> None:
        """Free connections; safe to call twice."""
        ...
