"""One background event loop per process, where every adapted env lives.

TRL's ``environment_factory`` interface is synchronous (``reset``, tools and ``get_reward`` are plain
calls from the trainer's thread) while agentgym envs are async and may hold loop-bound resources
(sandbox connections, HTTP sessions). Running each coroutine with ``asyncio.run`` would give every
call a new loop and break those resources, so all env coroutines run on one long-lived loop in a
daemon thread. Sync callers either block on a result (:func:`run`) or start work now and collect it
later (:func:`submit`, then :func:`wait`), which is how a batch's env work overlaps.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_waited = 0.0


def _ensure_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="agentgym-trl-envs", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def started() -> bool:
    """Whether the env loop is running (it starts with the first env call)."""
    return _thread is not None and _thread.is_alive()


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Start ``coro`` on the env loop and return at once; :func:`wait` collects the result."""
    return asyncio.run_coroutine_threadsafe(coro, _ensure_loop())


def wait(future: Future[T], timeout: float | None = None) -> T:
    """The result of :func:`submit`'s future, from any thread but the loop's own; counts the wait."""
    if threading.current_thread() is _thread:
        raise RuntimeError("agentgym.trl: a sync env call from inside the env loop would deadlock")
    global _waited
    started = time.perf_counter()
    try:
        return future.result(timeout)
    finally:
        with _lock:
            _waited += time.perf_counter() - started


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the env loop and wait for its result, from any thread but the loop's own."""
    if threading.current_thread() is _thread:
        coro.close()
        raise RuntimeError("agentgym.trl: a sync env call from inside the env loop would deadlock")
    return wait(submit(coro), timeout)


def env_seconds() -> float:
    """Wall-clock seconds this process has spent waiting on env work (reset, tools, scoring)."""
    return _waited
