"""Search index benchmark: tantivy against bm25s on the real corpus, and the env's step latency.

For each engine: index build rate (docs/s) over all 9,750 paragraphs, query latency p50/p95 and
recall@1/5/10 of the gold paragraph over the questions (all 48,201 by default). Both index the same
text (title and paragraph) with English stemming; bm25s also drops English stop words, tantivy's
``en_stem`` tokenizer does not. Then the env itself (``agentgym.make("search")``, on the chosen
tantivy index): p50 of a ``search`` step and of an ``open`` step.

    python benchmarks/search_index.py                 # ~2 minutes on 2 cores
    python benchmarks/search_index.py --questions 5000

Prints a table and writes ``benchmarks/results/search_index.json``. The bm25s row needs
``pip install bm25s PyStemmer`` (the env itself does not use them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from results_file import results_path, save_results

import agentgym
from agentgym import Message, ToolCall
from agentgym.envs.search.data import Paragraph, Question, load_corpus
from agentgym.envs.search.local import BM25Index

RESULTS = results_path("search_index")
KS = (1, 5, 10)


def tantivy_engine(paragraphs: Sequence[Paragraph]) -> Callable[[str, int], list[str]]:
    """The env's own index (``agentgym.envs.search.local``)."""
    index = BM25Index(paragraphs)
    return lambda query, k: [p.id for p, _ in index.search(query, k)]


def bm25s_engine(paragraphs: Sequence[Paragraph]) -> Callable[[str, int], list[str]]:
    """bm25s with Snowball stemming and English stop words, over the same text."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    tokens = bm25s.tokenize([f"{p.title}\n{p.text}" for p in paragraphs], stopwords="en", stemmer=stemmer,
                            show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)

    def search(query: str, k: int) -> list[str]:
        q = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not q.vocab:
            return []
        found, scores = retriever.retrieve(q, k=k, show_progress=False, n_threads=1)
        return [paragraphs[int(i)].id for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return search


def measure(name: str, build: Callable[[Sequence[Paragraph]], Callable[[str, int], list[str]]],
            paragraphs: Sequence[Paragraph], questions: Sequence[Question]) -> dict[str, Any]:
    started = time.perf_counter()
    search = build(paragraphs)
    build_seconds = time.perf_counter() - started
    latencies, hits = [], dict.fromkeys(KS, 0)
    for q in questions:
        t = time.perf_counter()
        found = search(q.question, max(KS))
        latencies.append(time.perf_counter() - t)
        for k in KS:
            hits[k] += q.paragraph_id in found[:k]
    latencies.sort()
    return {
        "engine": name,
        "docs": len(paragraphs),
        "build_seconds": round(build_seconds, 3),
        "build_docs_per_s": round(len(paragraphs) / build_seconds),
        "query_p50_ms": round(statistics.median(latencies) * 1000, 3),
        "query_p95_ms": round(latencies[int(0.95 * (len(latencies) - 1))] * 1000, 3),
        "questions": len(questions),
        **{f"recall@{k}": round(hits[k] / len(questions), 4) for k in KS},
    }


async def env_steps(questions: Sequence[Question], n: int) -> dict[str, float]:
    """p50 of the env's search and open steps (tool-call parsing, backend, formatting included)."""
    env = agentgym.make("search", max_turns=1000)
    tasks = {t.id.split("/", 1)[1]: t for t in env.tasks()}
    search_times, open_times = [], []
    for i, q in enumerate(questions[:n]):
        await env.reset(tasks[q.id])
        for name, args, sink in (("search", {"query": q.question, "k": 5}, search_times),
                                 ("open", {"id_or_url": q.paragraph_id}, open_times)):
            action = Message(role="assistant", tool_calls=[ToolCall(id=f"c{i}", name=name,
                                                                    arguments=json.dumps(args))])
            t = time.perf_counter()
            await env.step(action)
            sink.append(time.perf_counter() - t)
    await env.close()
    return {"steps": n, "search_step_p50_ms": round(statistics.median(search_times) * 1000, 3),
            "open_step_p50_ms": round(statistics.median(open_times) * 1000, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=0, help="a random sample of this many (0 = all)")
    parser.add_argument("--steps", type=int, default=2000, help="env steps to time")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    corpus = load_corpus()
    questions = list(corpus.questions)
    if args.questions:
        questions = random.Random(0).sample(questions, args.questions)
    rows = [measure("tantivy", tantivy_engine, corpus.paragraphs, questions)]
    try:
        rows.append(measure("bm25s", bm25s_engine, corpus.paragraphs, questions))
    except ImportError:
        print("bm25s is not installed (pip install bm25s PyStemmer): comparison row left out")
    steps = asyncio.run(env_steps(random.Random(1).sample(list(corpus.questions), args.steps), args.steps))
    columns = ["engine", "build_docs_per_s", "query_p50_ms", "query_p95_ms", *(f"recall@{k}" for k in KS)]
    print(f"{len(corpus.paragraphs)} paragraphs, {len(questions)} questions")
    print(" | ".join(f"{c:>16}" for c in columns))
    for row in rows:
        print(" | ".join(f"{row[c]!s:>16}" for c in columns))
    print(f"env (tantivy): search step p50 {steps['search_step_p50_ms']} ms, open step p50 "
          f"{steps['open_step_p50_ms']} ms over {steps['steps']} episodes")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    save_results({"engines": rows, "env": steps, "machine": machine}, args.out)


if __name__ == "__main__":
    main()
