"""A local HTTP server that speaks OpenAI's chat-completions wire format, for tests with no API key.

It stands in for a hosted LLM: requests go over real HTTP through litellm or the openai client, and
the server answers with real response bodies, including OpenAI's error shapes (429 rate limit, 500
server error, 4xx refusals, a 401 for a key it does not accept) and a response that never comes (a
hang), so retry, no-retry and timeout paths are exercised for real. It runs its own event loop in a
background thread so that sync code, async code and child processes (the CLI) can all talk to it.

    def answer(request: dict) -> dict:
        return completion(content="hello")

    with FakeOpenAI(answer, faults=["429", "500", "hang"]) as server:
        litellm.completion(model="openai/fake", api_base=server.base_url, api_key="x", ...)
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Literal

from aiohttp import web

Fault = Literal["400", "401", "403", "404", "429", "500", "503", "hang", "bad_json", "truncated"]
Responder = Callable[[dict[str, Any]], dict[str, Any]]

_ERRORS = {
    "400": (400, "invalid_request_error", None, "This model's maximum context length is 8192 tokens."),
    "401": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    "403": (403, "invalid_request_error", "unsupported_country_region_territory", "Country not supported."),
    "404": (404, "invalid_request_error", "model_not_found", "The model does not exist or you do not have access."),
    "429": (429, "rate_limit_exceeded", "requests", "Rate limit reached for requests. Please try again in 1s."),
    "500": (500, "server_error", None, "The server had an error while processing your request."),
    "503": (503, "server_error", None, "The engine is currently overloaded, please try again later."),
}


def tool_call(name: str, arguments: dict[str, Any] | str, call_id: str | None = None) -> dict[str, Any]:
    """One entry of a response message's ``tool_calls``."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id or f"call_{uuid.uuid4().hex[:12]}", "type": "function",
            "function": {"name": name, "arguments": args}}


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    model: str = "fake-model",
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
) -> dict[str, Any]:
    """A complete ``chat.completion`` response body."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class FakeOpenAI:
    """An OpenAI-compatible server on 127.0.0.1 with scripted answers and injected faults.

    Args:
        responder: Turns a request body (``model``, ``messages``, ``tools``...) into a response body,
            usually built with :func:`completion`.
        faults: Faults served, in order, before normal answers: an HTTP error by its status (``"429"``,
            ``"500"``, ``"503"``, ``"400"``, ``"401"``, ``"403"``, ``"404"``), ``"hang"`` (the
            response never comes until the client gives up), ``"bad_json"`` (a 200 whose body is not
            JSON), ``"truncated"`` (a 200 whose connection closes halfway through the promised body).
        fault_every: Instead of (or after) the ``faults`` queue, inject ``fault_cycle`` faults
            one request in every ``fault_every``.
        fault_cycle: The faults used with ``fault_every``, in rotation.
        api_key: The only key accepted; any other gets OpenAI's 401. By default any key is accepted
            (a request with none always gets the 401).
    """

    def __init__(
        self,
        responder: Responder,
        *,
        faults: Iterable[Fault] = (),
        fault_every: int = 0,
        fault_cycle: Iterable[Fault] = ("429", "500", "hang"),
        hang_seconds: float = 120.0,
        api_key: str | None = None,
    ) -> None:
        self.responder = responder
        self.api_key = api_key
        self.faults: list[Fault] = list(faults)
        self.fault_every = fault_every
        self.fault_cycle: list[Fault] = list(fault_cycle)
        self.hang_seconds = hang_seconds
        self.requests: list[dict[str, Any]] = []
        self.served: dict[str, int] = {}
        self.base_url = ""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    def _next_fault(self) -> Fault | None:
        with self._lock:
            n = len(self.requests)
            if self.faults:
                return self.faults.pop(0)
            if self.fault_every and self.fault_cycle and n % self.fault_every == 0:
                return self.fault_cycle[(n // self.fault_every) % len(self.fault_cycle)]
        return None

    def _count(self, kind: str) -> None:
        with self._lock:
            self.served[kind] = self.served.get(kind, 0) + 1

    def _refused(self, request: web.Request) -> web.Response | None:
        """OpenAI's 401 for a request without the accepted key, on every route; None when the key is fine."""
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and (self.api_key is None or auth == f"Bearer {self.api_key}"):
            return None
        self._count("401")
        return web.json_response({"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                            "param": None, "code": "invalid_api_key"}}, status=401)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        body = await request.json()
        with self._lock:
            self.requests.append(body)
        fault = self._next_fault()
        if fault == "hang":
            self._count("hang")
            await asyncio.sleep(self.hang_seconds)
            return web.json_response({"error": {"message": "hung", "type": "server_error"}}, status=504)
        if fault == "bad_json":
            self._count("bad_json")
            return web.Response(status=200, text="{not json", content_type="application/json")
        if fault == "truncated":
            self._count("truncated")
            return await self._truncated(request, body)
        if fault is not None:
            status, kind, code, message = _ERRORS[fault]
            self._count(fault)
            headers = {"retry-after": "0"} if status == 429 else {}
            return web.json_response({"error": {"message": message, "type": kind, "param": None, "code": code}},
                                     status=status, headers=headers)
        try:
            answer = self.responder(body)
        except Exception as e:  # a broken test responder should show up as a 500, not a dead server
            self._count("responder_error")
            return web.json_response({"error": {"message": f"responder failed: {e!r}", "type": "server_error"}},
                                     status=500)
        self._count("ok")
        return web.json_response(answer)

    async def _truncated(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        """Promise a whole answer's length, send half of it, and drop the connection."""
        whole = json.dumps(self.responder(body)).encode()
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                           "Content-Length": str(len(whole))})
        await response.prepare(request)
        await response.write(whole[: len(whole) // 2])
        if request.transport is not None:
            request.transport.close()
        return response

    async def _models(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    def start(self) -> str:
        """Start serving; returns the base URL (``http://127.0.0.1:PORT/v1``)."""
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self._chat)
            app.router.add_post("/chat/completions", self._chat)
            app.router.add_get("/v1/models", self._models)
            self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
            loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", 0)
            loop.run_until_complete(site.start())
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.base_url = f"http://127.0.0.1:{port}/v1"
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name="fake-openai", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self.base_url

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
