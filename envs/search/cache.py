"""Record and replay: any backend's answers, saved to a JSONL file keyed by request, served offline.

An evaluation run against a live web-search API can be recorded once and rerun identically with no
network and no key: the file holds one line per distinct request (``search`` with its query and
``k``, or ``open`` with its id), with the backend's answer. Keys leave the backend out, so use one
file per backend. A backend whose answers depend on the episode's task (``task_dependent = True``,
e.g. simulated search told the gold answer) is recorded per task too, and replay looks for the
task's own recording first.

Modes:
    ``record``: always ask the backend and (re)write the answer.
    ``replay``: answer only from the file; a request it lacks raises :class:`CacheMiss`.
    ``auto``: replay what the file has, ask the backend for the rest and record it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from agentgym.envs.search.backend import (
    Document,
    SearchBackend,
    SearchProviderError,
    SearchResult,
    current_task,
)
from agentgym.errors import ToolError

CacheMode = Literal["record", "replay", "auto"]


class CacheMiss(SearchProviderError):
    """A replay-only run met a request that was never recorded."""


def request_key(op: str, **request: Any) -> str:
    """A stable key for one request: sha256 of its canonical JSON."""
    canonical = json.dumps({"op": op, **request}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class RecordReplay:
    """Wrap ``backend`` so its answers are recorded to ``path`` and replayed from it.

    Args:
        backend: The backend to record; may be ``None`` in ``replay`` mode (no key, no network needed).
        path: The JSONL file; created on first record.
        mode: ``"record"``, ``"replay"`` or ``"auto"``.
    """

    def __init__(self, backend: SearchBackend | None, path: str | Path, *, mode: CacheMode = "auto") -> None:
        if backend is None and mode != "replay":
            raise ValueError("RecordReplay needs a backend unless mode='replay'")
        self.backend = backend
        self.path = Path(path)
        self.mode = mode
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self.entries[entry["key"]] = entry
        recorded = {str(e["backend"]) for e in self.entries.values() if e.get("backend")}
        fallback = recorded.pop() if len(recorded) == 1 else "replay"
        self.name: str = backend.name if backend is not None else fallback

    async def _answer(self, op: str, request: dict[str, Any]) -> Any:
        task = current_task.get()
        plain = request_key(op, **request)
        per_task = request_key(op, task=task.id, **request) if task is not None else None
        if self.mode != "record":
            for key in (per_task, plain):
                if key is not None and key in self.entries:
                    recorded = self.entries[key]
                    if "error" in recorded:
                        raise ToolError(recorded["error"])
                    return recorded["response"]
        if self.backend is None:
            raise CacheMiss(f"{self.path} has no recording of {op} {request}: record it first (mode='auto')")
        entry: dict[str, Any] = {"key": plain, "backend": self.backend.name, "op": op, "request": request}
        if task is not None and getattr(self.backend, "task_dependent", False):
            entry.update(key=per_task, request={**request, "task": task.id})
        try:
            if op == "search":
                results = await self.backend.search(request["query"], request["k"])
                entry["response"] = [r.model_dump() for r in results]
            else:
                entry["response"] = (await self.backend.open(request["id_or_url"])).model_dump()
        except ToolError as e:  # a page that would not open is part of the record too
            entry["error"] = str(e)
        self._write(entry)
        if "error" in entry:
            raise ToolError(entry["error"])
        return entry["response"]

    def _write(self, entry: dict[str, Any]) -> None:
        self.entries[entry["key"]] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")

    async def search(self, query: str, k: int) -> list[SearchResult]:
        answer = await self._answer("search", {"query": query, "k": k})
        return [SearchResult.model_validate(r) for r in answer]

    async def open(self, id_or_url: str) -> Document:
        return Document.model_validate(await self._answer("open", {"id_or_url": id_or_url}))

    async def close(self) -> None:
        if self.backend is not None:
            await self.backend.close()
