"""A local stand-in for the web: four search APIs in their documented wire formats, and pages to open.

Each provider answers at its own path prefix with its own request checks, auth header, result shape
and error bodies; ``faults`` injects 429 (with ``Retry-After``), 500 and hangs, in order.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

KEY = "test-key"

PAGES = {
    "broncos": (
        "Super Bowl 50",
        "<html><head><title>Super Bowl 50 - Encyclopedia</title></head><body>"
        "<nav><a href='/'>Home</a> <a href='/about'>About us</a></nav>"
        "<article><h1>Super Bowl 50</h1>"
        "<p>Super Bowl 50 was an American football game to determine the champion of the National "
        "Football League for the 2015 season. The American Football Conference champion Denver Broncos "
        "defeated the National Football Conference champion Carolina Panthers 24–10.</p>"
        "<p>The game was played on February 7, 2016, at Levi's Stadium in Santa Clara, California.</p>"
        "</article><footer>Copyright notice</footer></body></html>",
    ),
    "panthers": ("Carolina Panthers", "<html><body><p>The Panthers play in Charlotte.</p></body></html>"),
}


class FakeWeb:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.faults: list[str] = []
        self.page_faults: list[int] = []
        self.page_hits = 0
        self.base = ""

    def results(self, count: int) -> list[tuple[str, str, str]]:
        """``(url, title, snippet)`` of the fake web's pages, best first."""
        snippets = {"broncos": "The AFC champion <strong>Denver Broncos</strong> defeated the Panthers.",
                    "panthers": "The Panthers play in Charlotte."}
        return [(f"{self.base}/pages/{n}", PAGES[n][0], snippets[n]) for n in PAGES][:count]

    async def _fault(self, kind: str) -> web.Response | None:
        if not self.faults:
            return None
        fault = self.faults.pop(0)
        if fault == "hang":
            await asyncio.sleep(30)
        if fault == "429":
            brave = {"id": "x", "status": 429, "code": "RATE_LIMITED", "detail": "Rate limit exceeded."}
            body = {
                "tavily": {"detail": {"error": "Rate limit exceeded."}},
                "brave": {"type": "ErrorResponse", "error": brave},
                "serper": {"message": "Too many requests.", "statusCode": 429},
            }.get(kind)
            if body is None:
                return web.Response(status=429, text="Too Many Requests", headers={"Retry-After": "0"})
            return web.json_response(body, status=429, headers={"Retry-After": "0"})
        return web.json_response({"message": "Internal server error"}, status=500)

    def _record(self, kind: str, request: web.Request, body: Any = None) -> None:
        headers, query = dict(request.headers), dict(request.query)
        self.requests.append({"provider": kind, "headers": headers, "query": query, "body": body})

    async def tavily(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._record("tavily", request, body)
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            error = {"detail": {"error": "Unauthorized: missing or invalid API key."}}
            return web.json_response(error, status=401)
        if (fault := await self._fault("tavily")) is not None:
            return fault
        results = [{"title": t, "url": u, "content": s.replace("<strong>", "").replace("</strong>", ""),
                    "score": round(0.9 - 0.1 * i, 2), "raw_content": None}
                   for i, (u, t, s) in enumerate(self.results(body["max_results"]))]
        return web.json_response({"query": body["query"], "answer": None, "images": [], "results": results,
                                  "response_time": 0.5})

    async def brave(self, request: web.Request) -> web.Response:
        self._record("brave", request)
        if request.headers.get("X-Subscription-Token") != KEY:
            error = {"id": "e1", "status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID",
                     "detail": "The provided subscription token is invalid."}
            return web.json_response({"type": "ErrorResponse", "error": error, "time": 1}, status=422)
        if (fault := await self._fault("brave")) is not None:
            return fault
        results = [{"type": "search_result", "title": t, "url": u, "description": s, "age": "2 days ago"}
                   for u, t, s in self.results(int(request.query["count"]))]
        return web.json_response({"type": "search", "query": {"original": request.query["q"]},
                                  "web": {"type": "search", "results": results}})

    async def serper(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._record("serper", request, body)
        if request.headers.get("X-API-KEY") != KEY:
            return web.json_response({"message": "Unauthorized.", "statusCode": 403}, status=403)
        if (fault := await self._fault("serper")) is not None:
            return fault
        organic = [{"title": t, "link": u, "snippet": s.replace("<strong>", "").replace("</strong>", ""),
                    "position": i} for i, (u, t, s) in enumerate(self.results(body["num"]), 1)]
        return web.json_response({"searchParameters": {"q": body["q"], "type": "search"}, "organic": organic})

    async def searxng(self, request: web.Request) -> web.Response:
        self._record("searxng", request)
        if request.query.get("format") != "json":
            return web.Response(status=403, text="<html><body>403 Forbidden</body></html>",
                                content_type="text/html")
        if (fault := await self._fault("searxng")) is not None:
            return fault
        results = [{"url": u, "title": t, "content": s, "engine": "wikipedia", "score": 2.0 / i,
                    "category": "general"} for i, (u, t, s) in enumerate(self.results(10), 1)]
        return web.json_response({"query": request.query["q"], "number_of_results": len(results),
                                  "results": results, "answers": [], "suggestions": []})

    async def page(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.page_hits += 1
        if self.page_faults:
            return web.Response(status=self.page_faults.pop(0), text="busy", headers={"Retry-After": "0"})
        if name == "report.pdf":
            return web.Response(body=b"%PDF-1.4", content_type="application/pdf")
        if name == "long":
            filler = "Filler words. " * 60
            body = "".join(f"<p>Paragraph {i} of a long article. {filler}</p>" for i in range(400))
            html = f"<html><body><article>{body}<p>The end marker.</p></article></body></html>"
            return web.Response(text=html, content_type="text/html")
        if name == "notes.txt":
            return web.Response(text="Plain notes: the Broncos won.", content_type="text/plain")
        if name not in PAGES:
            return web.Response(status=404, text="Not Found")
        return web.Response(text=PAGES[name][1], content_type="text/html", charset="utf-8")

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/tavily/search", self.tavily)
        app.router.add_get("/brave/res/v1/web/search", self.brave)
        app.router.add_post("/serper/search", self.serper)
        app.router.add_get("/searxng/search", self.searxng)
        app.router.add_get("/pages/{name}", self.page)
        return app
