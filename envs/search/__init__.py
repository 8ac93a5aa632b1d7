"""Web search: answer questions with a search engine over an embedded corpus, the web, or an LLM.

    env = agentgym.make("search", split="nyt")                       # BM25 over the local corpus
    env = agentgym.make("search", backend="tavily", cache="runs/tavily.jsonl")   # recorded web search
"""

from agentgym.envs.search.backend import Document, SearchBackend, SearchProviderError, SearchResult
from agentgym.envs.search.cache import CacheMiss, RecordReplay
from agentgym.envs.search.env import SearchEnv, make_backend
from agentgym.envs.search.verify import exact_match, normalize_answer, score_answer, token_f1

__all__ = [
    "CacheMiss",
    "Document",
    "RecordReplay",
    "SearchBackend",
    "SearchEnv",
    "SearchProviderError",
    "SearchResult",
    "exact_match",
    "make_backend",
    "normalize_answer",
    "score_answer",
    "token_f1",
]
