"""Serve a report on 127.0.0.1 only: a person's own browser reads it; nothing else on the network can."""

from __future__ import annotations

import http.server
from collections.abc import Callable
from pathlib import Path

HOST = "127.0.0.1"


def make_server(report: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1:``port`` (0: any free port) that answers ``/`` with the report.

    The file is read on every request, so rewriting the report and reloading the page shows the
    new one. Any other path is 404: nothing beside the report is served.
    """
    path = Path(report).resolve()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?", 1)[0] not in ("/", "/" + path.name):
                self.send_error(404, "only the report is served here")
                return
            body = path.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # a report server that prints every request drowns the one line that matters: its URL

    return http.server.ThreadingHTTPServer((HOST, port), Handler)


def serve(report: Path, port: int = 0, *, announce: Callable[[str], None] = print) -> None:
    """Serve ``report`` until interrupted; ``announce`` gets the URL once the socket listens."""
    server = make_server(report, port)
    try:
        announce(f"http://{HOST}:{server.server_address[1]}/")
        server.serve_forever()
    finally:
        server.server_close()
