"""Simulated search (as in ZeroSearch and SSRL): an LLM writes the results a search engine would give.

Training against a live search API is slow, costly and unrepeatable; an LLM that writes plausible
results is none of those, and lets the difficulty be tuned. Each search asks the model, through
litellm, for ``k`` results as JSON, each with a title, a URL, a snippet and a short page of content.
``noise`` is the chance that any one result is asked to be *noisy*: on-topic-looking but unhelpful or
subtly wrong, as ZeroSearch's curriculum does. Which slots are noisy is drawn from a seeded RNG, so a
run is repeatable up to the model's own sampling (use ``temperature=0``, or record and replay).
``open`` returns the content the model wrote for that result.

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
from agentgym.errors import ToolError
from agentgym.llm import litellm_module
from agentgym.rewards import gold_answers

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
        retries: litellm's retries of a failed call; one more call is made if the JSON is unreadable.
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
        self.rng = random.Random(seed)
        self.api_base = api_base
        self.api_key = api_key
        self.temperature = temperature
        self.timeout = timeout
        self.retries = retries
        self.answer_hint = answer_hint
        self.task_dependent = answer_hint
        self.pages: dict[str, Document] = {}

    async def _complete(self, prompt: str) -> str:
        litellm = litellm_module()
        try:
            response = await litellm.acompletion(
                model=self.model,
                messages=[{"role": "user", "content": prompt}],
                temperature=self.temperature,
                api_base=self.api_base,
                api_key=self.api_key,
                timeout=self.timeout,
                num_retries=self.retries,
            )
        except Exception as e:  # litellm raises its own hierarchy; all of it means "no results"
            raise SearchProviderError(f"simulated search ({self.model}): {type(e).__name__}: {e}") from e
        return response.choices[0].message.content or ""

    async def search(self, query: str, k: int) -> list[SearchResult]:
        noisy = [self.rng.random() < self.noise for _ in range(k)]
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
            rid = url or "sim-" + hashlib.sha256(f"{query}|{rank}|{title}".encode()).hexdigest()[:12]
            text = str(entry.get("content") or snippet)
            self.pages[rid] = Document(id=rid, title=title, text=text, url=url)
            score = round(1 / rank, 4)
            results.append(SearchResult(id=rid, title=title, snippet=snippet, score=score, url=url))
        return results

    async def open(self, id_or_url: str) -> Document:
        page = self.pages.get(id_or_url.strip())
        if page is None:
            raise ToolError(f"no result {id_or_url!r} in this episode's searches: open takes a result's id")
        return page

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
