"""The search environment: answer a question by searching, reading pages, and giving a short answer."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentgym.env import Env, ToolResult
from agentgym.envs.search.backend import SearchBackend, SearchResult, current_task
from agentgym.envs.search.cache import CacheMode, RecordReplay
from agentgym.envs.search.data import SPLITS, load_corpus
from agentgym.envs.search.verify import AnswerScore, normalize_answer
from agentgym.errors import DataError, EnvError, ToolError
from agentgym.rewards import gold_answers
from agentgym.tools import tool
from agentgym.types import Task, read_tasks

if TYPE_CHECKING:
    from agentgym.policies.base import Policy

SYSTEM_PROMPT = (
    "Answer the user's question. Use `search` to find documents and `open` to read one, then call "
    "`answer` with the shortest exact span from a document that answers it (a name, a number, a short "
    "phrase), not a sentence."
)
MAX_K = 20


@lru_cache(maxsize=len(SPLITS) + 1)
def corpus_tasks(split: str) -> tuple[Task, ...]:
    """The questions of one split (or ``"all"``) as tasks; shared by every env in the process."""
    return tuple(
        Task(id=f"{q.split}/{q.id}", prompt=q.question,
             data={"answer": list(q.answers), "paragraph_ids": [q.paragraph_id], "split": q.split})
        for q in load_corpus().questions if split in ("all", q.split)
    )


def make_backend(name: str) -> SearchBackend:
    """A backend by name: ``local``, ``tavily``, ``brave``, ``serper``, ``searxng``, ``simulated:MODEL``."""
    if name == "local":
        from agentgym.envs.search.local import LocalSearch

        return LocalSearch()
    if name.startswith("simulated:"):
        from agentgym.envs.search.simulated import SimulatedSearch

        return SimulatedSearch(name.partition(":")[2])
    from agentgym.envs.search.providers import PROVIDERS

    if name not in PROVIDERS:
        choices = ", ".join(["local", *PROVIDERS, "simulated:MODEL"])
        raise EnvError(f"unknown search backend {name!r}: use one of {choices}")
    return PROVIDERS[name]()


def _task_with_answer(row: dict[str, Any]) -> Task:
    """A task row that carries its gold answer; ``ValueError`` (which ``read_tasks`` places) when not."""
    task = Task.model_validate(row)
    try:
        gold_answers(task)
    except DataError as e:
        raise ValueError(str(e)) from e
    return task


class SearchEnv(Env):
    """Open-domain question answering with a search engine (SQuAD v1.1 dev and SQuADShifts).

    The model searches, opens results page by page, and calls ``answer``. The verifier
    (:class:`~agentgym.envs.search.verify.AnswerScore`) gives the SQuAD token F1 against every gold
    answer in ``task.data["answer"]`` (``metric="em"`` for exact match); both are reported as
    components. Two optional turn rewards shape the search itself: ``hit_reward`` the first time a
    gold paragraph shows up in the results (for web backends, whose results cannot be matched to
    paragraphs, the first time a gold answer shows up in a snippet), and ``-repeat_penalty`` for a
    query the episode already ran. Whether each search hit or repeated is always in the turn's info.

    Args:
        split: Which questions :meth:`tasks` offers: ``"all"`` or one of squad, new_wiki, nyt,
            reddit, amazon. The searched corpus is always the whole one.
        backend: A :class:`SearchBackend`, or a name for :func:`make_backend` (default ``"local"``).
            A backend made from a name is closed with the env; one passed in is the caller's to close,
            so that many envs (an evaluation's concurrent episodes) can share one client and one
            rate limit.
        cache: A JSONL file to record results into and replay them from (see :class:`RecordReplay`).
        cache_mode: ``"auto"`` (replay what is there, record the rest), ``"record"`` or ``"replay"``.
        metric: Which score is the outcome reward.
        hit_reward: Turn reward for the first search that retrieves gold evidence.
        repeat_penalty: Subtracted from the turn reward for each repeated query.
        page_chars: Characters per page of ``open``.
        tasks_path: A JSONL file of :class:`~agentgym.types.Task` objects (``data.answer`` holds the
            gold answer or a list of them) to use instead of the corpus's questions, e.g. for a web
            backend; read by :meth:`load_tasks`.
        **kwargs: ``max_turns``, ``verifier``... as for :class:`~agentgym.env.Env`.
    """

    max_turns = 8
    sandbox_image = None

    def __init__(
        self,
        *,
        split: str = "all",
        backend: SearchBackend | str = "local",
        cache: str | Path | None = None,
        cache_mode: CacheMode = "auto",
        metric: Literal["f1", "em"] = "f1",
        hit_reward: float = 0.0,
        repeat_penalty: float = 0.0,
        page_chars: int = 2000,
        tasks_path: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("verifier", AnswerScore(metric))
        super().__init__(**kwargs)
        if split != "all" and split not in SPLITS:
            raise EnvError(f"unknown split {split!r}: use all, {', '.join(SPLITS)}")
        if page_chars < 200:
            raise EnvError("page_chars must be at least 200")
        self.split = split
        self.tasks_path = Path(tasks_path) if tasks_path is not None else None
        self._owns_backend = isinstance(backend, str)
        engine = make_backend(backend) if isinstance(backend, str) else backend
        self.backend: SearchBackend = (RecordReplay(engine, cache, mode=cache_mode) if cache is not None
                                       else engine)
        self.hit_reward = hit_reward
        self.repeat_penalty = repeat_penalty
        self.page_chars = page_chars
        self._queries: set[str] = set()
        self._hit = False

    def tasks(self) -> Sequence[Task]:
        return self.load_tasks(self.tasks_path) if self.tasks_path is not None else corpus_tasks(self.split)

    @classmethod
    def load_tasks(cls, path: str | Path) -> list[Task]:
        """:class:`~agentgym.types.Task` objects, one JSON a line, each with its gold answer(s) in ``data.answer``."""
        return read_tasks(path, to_task=_task_with_answer)

    def system_prompt(self, task: Task) -> str:
        return SYSTEM_PROMPT

    async def setup(self, task: Task) -> None:
        gold_answers(task)  # a task with no gold answer is refused now, not scored 0 at the end
        self._queries, self._hit = set(), False

    async def teardown(self) -> None:
        if self._owns_backend:
            await self.backend.close()

    @classmethod
    def scripted_policies(cls) -> dict[str, Callable[[], Policy]]:
        from agentgym.envs.search.policies import BaselinePolicy, ReferencePolicy

        return {"reference": ReferencePolicy, "baseline": BaselinePolicy}

    # ----------------------------------------------------------------- tools
    @tool
    async def search(self, query: str, k: int = 5) -> ToolResult:
        """Search the document collection; returns JSON with ranked results (id, title, snippet, score).

        Args:
            query: What to look for, in words.
            k: How many results to return, 1 to 20.
        """
        if not query.strip():
            raise ToolError("query is empty")
        if not 1 <= k <= MAX_K:
            raise ToolError(f"k must be between 1 and {MAX_K}")
        token = current_task.set(self.task)
        try:
            results = await self.backend.search(query, k)
        finally:
            current_task.reset(token)
        key = " ".join(query.lower().split())
        repeated = key in self._queries
        self._queries.add(key)
        hit = self._is_hit(results)
        reward = -self.repeat_penalty if repeated else 0.0
        if hit and not self._hit:
            reward += self.hit_reward
        self._hit = self._hit or hit
        listing = [r.model_dump(exclude_none=True) for r in results]
        content = json.dumps({"query": query, "results": listing}, ensure_ascii=False)
        return ToolResult(content, reward=reward, info={"retrieval_hit": hit, "repeated_query": repeated})

    @tool
    async def open(self, id_or_url: str, page: int = 1) -> str:
        """Read a search result: its title and text, one page at a time.

        Args:
            id_or_url: A result's ``id`` from search (a URL for web results).
            page: Which page to read, from 1; the header says how many there are.
        """
        token = current_task.set(self.task)
        try:
            document = await self.backend.open(id_or_url)
        finally:
            current_task.reset(token)
        pages = paginate(document.text, self.page_chars)
        if not 1 <= page <= len(pages):
            raise ToolError(f"page {page} does not exist: {document.id} has {len(pages)} page(s)")
        where = document.url or document.id
        return f"{document.title}\n{where} (page {page} of {len(pages)})\n\n{pages[page - 1]}"

    @tool(final=True)
    async def answer(self, answer: str) -> str:
        """Give the final answer and end the episode.

        Args:
            answer: The shortest exact span that answers the question.
        """
        return answer

    # ----------------------------------------------------------------- scoring
    async def final_state(self) -> dict[str, bool]:
        """Whether any search retrieved gold evidence: the verifier records it beside the answer's score."""
        return {"retrieval_hit": self._hit}

    def _is_hit(self, results: list[SearchResult]) -> bool:
        assert self.task is not None
        gold_ids = set(self.task.data.get("paragraph_ids", []))
        if any(r.id in gold_ids for r in results):
            return True
        if self.backend.name == "local":
            return False
        golds = [normalize_answer(a) for a in gold_answers(self.task)]
        snippets = [normalize_answer(f"{r.title} {r.snippet}") for r in results]
        return any(g and g in s for g in golds for s in snippets)


def paginate(text: str, size: int) -> list[str]:
    """Split ``text`` into pages of at most ``size`` characters, breaking at whitespace."""
    pages: list[str] = []
    text = text.strip()
    while len(text) > size:
        cut = text.rfind(" ", 0, size)
        cut = cut if cut > size // 2 else size
        pages.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    pages.append(text)
    return pages

