"""Simulated search (as in ZeroSearch and SSRL): an LLM writes the results a search engine would give.

Training against a live search API is slow, costly and unrepeatable; an LLM that writes plausible
results is none of those, and lets the difficulty be tuned. Each search asks the model, through
litellm, for ``k`` results as JSON, each with a title, a URL, a snippet and a short page of content.
``noise`` is the chance that any one result is asked to be *noisy*: on-topic-looking but unhelpful or
subtly wrong, as ZeroSearch's curriculum does. Which slots are noisy is drawn from an RNG seeded with
``seed``, the query and ``k``, so a run is repeatable up to the model's own sampling (use
``temperature=0``, or record and replay), and one episode's draws never depend on what other episodes
searched before it.

The page the model wrote for each result travels with the result (:attr:`SearchResult.content`); the
engine keeps no pages, so the environment of the episode that searched is the only place ``open`` can
find it. A result's id is a hash of what the model wrote for it, so two results at one URL (models reuse
URLs) stay two results, and a recording replays to the same ids.

With ``answer_hint=True`` the writer is also told the episode's question and gold answer (read from
:data:`~agentgym.envs.search.backend.current_task`), as ZeroSearch does, so that useful results
really contain the answer and noisy ones really do not; without it, results hold only what the
writer model knows, which for most SQuADShifts questions (Reddit posts, product reviews) is nothing.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from agentgym.envs.search.backend import Document, SearchProviderError, SearchResult, current_task
from agentgym.errors import PolicyError, ToolError
from agentgym.policies.litellm import LiteLLMPolicy
from agentgym.rewards import gold_answers
from agentgym.types import Message, Task

_PROMPT = """You are a web search engine. Write the top {k} results for the query below, as JSON:
{{"results": [{{"title": "...", "url": "https://...", "snippet": "one or two sentences", \
"content": "the page's main text, about 150 words"}}]}}
Write exactly {k} results, in this order: {kinds}.
A useful result is relevant and factually correct, and its content answers the query if it can.
A noisy result looks related but does not answer the query, or states something subtly wrong.
Answer with the JSON object only.
{hint}
Query: {query}"""

_HINT = """
The person searching wants to answer: {question}
The correct answer is: {answer}
Useful results must state this answer in their content; noisy results must not.
"""

_NO_TASK = Task(id="simulated-search", prompt="")  # the writer model plays no task; a policy's act() takes one
_JSON = re.compile(r"\{.*\}", re.DOTALL)


class SimulatedSearch:
    """Search results written by an LLM.

    Args:
        model: Any litellm model name, e.g. ``"openai/gpt-4o-mini"``.
        noise: Probability in [0, 1] that each result is asked to be noisy.
        seed: Seeds the draw of noisy slots.
        api_base: Passed to litellm (an OpenAI-compatible server, a proxy).
        api_key: Passed to litellm; else the provider's usual environment variable.
        temperature: Sampling temperature of the writer model.
        timeout: Seconds for one model call.
        retries: Further tries of a failed call; one more call is made if the JSON is unreadable.
        answer_hint: Tell the writer the episode's question and first gold answer.
    """

    name = "simulated"

    def __init__(
        self,
        model: str,
        *,
        noise: float = 0.0,
        seed: int = 0,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        timeout: float = 60.0,
        retries: int = 3,
        answer_hint: bool = False,
    ) -> None:
        if not model:
            raise SearchProviderError("simulated search needs a model, e.g. simulated:openai/gpt-4o-mini")
        if not 0.0 <= noise <= 1.0:
            raise ValueError("noise must be between 0 and 1")
        self.model = model
        self.noise = noise
        self.seed = seed
        self.api_base = api_base
        self.api_key = api_key
        self.temperature = temperature
        self.timeout = timeout
        self.retries = retries
        self.answer_hint = answer_hint
        self.task_dependent = answer_hint
        self._writer = LiteLLMPolicy(model, api_base=api_base, api_key=api_key, temperature=temperature,
                                     timeout=timeout, max_attempts=retries + 1)

    async def _complete(self, prompt: str) -> str:
        """The writer model's page for ``prompt``, called as every LLM in agentgym is (a
        :class:`~agentgym.policies.LiteLLMPolicy`: retries with backoff, a per-call timeout)."""
        try:
            reply = await self._writer.act([Message(role="user", content=prompt)], [], task=_NO_TASK)
        except PolicyError as e:  # every way a call fails means "no results"
            raise SearchProviderError(f"simulated search: {e}") from e
        return reply.message.text

    async def search(self, query: str, k: int) -> list[SearchResult]:
        rng = random.Random(f"{self.seed}|{k}|{query}")
        noisy = [rng.random() < self.noise for _ in range(k)]
        kinds = ", ".join(f"{i} {'noisy' if n else 'useful'}" for i, n in enumerate(noisy, 1))
        task = current_task.get() if self.answer_hint else None
        answers = gold_answers(task) if task is not None else None
        hint = _HINT.format(question=task.prompt, answer=answers[0]) if task is not None and answers else ""
        prompt = _PROMPT.format(k=k, kinds=kinds, query=query, hint=hint)
        entries: list[dict[str, Any]] | None = None
        for _ in range(2):
            entries = _parse(await self._complete(prompt))
            if entries is not None:
                break
        if entries is None:
            raise SearchProviderError(f"simulated search ({self.model}) wrote no readable JSON results twice")
        results = []
        for rank, entry in enumerate(entries[:k], 1):
            title, snippet = str(entry.get("title", "")), str(entry.get("snippet", ""))
            url = str(entry.get("url") or "") or None
            text = str(entry.get("content") or snippet)
            written = json.dumps([url, title, snippet, text], ensure_ascii=False)
            rid = "sim-" + hashlib.sha256(written.encode()).hexdigest()[:16]
            results.append(SearchResult(id=rid, title=title, snippet=snippet, score=round(1 / rank, 4),
                                        url=url, content=text))
        return results

    async def open(self, id_or_url: str) -> Document:
        """Never finds a page: the pages are in the results, held by the episode that searched."""
        raise ToolError(f"no result {id_or_url!r} in this episode's searches: open takes a result's id")

    async def close(self) -> None:
        return None


def _parse(text: str) -> list[dict[str, Any]] | None:
    """The ``results`` list from a model's reply, tolerating code fences and prose around the JSON."""
    match = _JSON.search(text)
    if match is None:
        return None
    try:
        data = json.loads(match.group(0))
    except ValueError:
        return None
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        return None
    return [r for r in results if isinstance(r, dict)]
