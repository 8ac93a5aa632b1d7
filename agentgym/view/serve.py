"""Serve a report on 127.0.0.1 only, live: rebuilt as its runs grow, and the open page follows.

A person's own browser reads it; nothing else on the network can. The server watches the runs the
report was made from (their files' sizes and modification times, and a folder's new ``.jsonl``
files): when they change, the report is rebuilt and written again, and its version moves on. The
served page carries its version (in the ``agentgym-live`` meta tag, filled in as it is served) and
polls ``/__live__``; when the version there differs it reloads, keeping its filters, scroll and
open episode. The file itself, opened without the server, has no version and polls nothing.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agentgym.errors import DataError

HOST = "127.0.0.1"
LIVE_PATH = "/__live__"
_EMPTY_VERSION = b'<meta name="agentgym-live" content="">'
MIN_INTERVAL = 2.0
"""Seconds between rebuilds at least (and twice the last rebuild's time): a fast writer is not rebuilt per row."""


class LiveReport:
    """A report file kept up to date with its runs: :meth:`refresh` rebuilds it when they changed.

    ``build`` writes the report to ``path`` from ``runs`` (files or folders, as given to
    ``agentgym view``). A rebuild that fails (a run's file damaged mid-write) keeps the last good
    report and records the reason in :attr:`error`, shown on the page. Rebuilds are spaced by
    :data:`MIN_INTERVAL` or twice the last one's time, whichever is longer, so that a large run being
    written fast costs at most half the server's time; a change in between waits for the next one.
    """

    def __init__(self, path: Path, runs: list[str | Path], build: Callable[[], object]) -> None:
        self.path = Path(path).resolve()
        self.runs = runs
        self.build = build
        self.version = 0
        self.error: str | None = None
        self._seen = self._signature()
        self._lock = threading.Lock()
        self._next = 0.0

    def _signature(self) -> tuple[tuple[str, int, int], ...]:
        from agentgym.view.runs import run_files

        try:
            files = run_files(self.runs)
        except DataError:
            return ()
        return tuple((str(f), (s := f.stat()).st_size, s.st_mtime_ns) for f in files if f.exists())

    def refresh(self) -> int:
        """Rebuild the report if its runs changed since the last build; return the current version."""
        with self._lock:
            if time.monotonic() < self._next:
                return self.version
            now = self._signature()
            if now != self._seen:
                started = time.monotonic()
                self._seen = now
                try:
                    self.build()
                    self.error = None
                    self.version += 1
                except DataError as e:
                    self.error = str(e)
                took = time.monotonic() - started
                self._next = time.monotonic() + max(MIN_INTERVAL, 2 * took)
            return self.version


def make_server(live: LiveReport, port: int = 0) -> http.server.ThreadingHTTPServer:
    """An HTTP server on 127.0.0.1:``port`` (0: any free port) that answers ``/`` with the report.

    The report is refreshed (rebuilt if its runs changed) before it is served, with its version in
    the page; ``/__live__`` answers the version and the last rebuild's error. Any other path is 404:
    nothing beside the report is served.
    """
    path = live.path

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            where = self.path.split("?", 1)[0]
            if where == LIVE_PATH:
                self._send(json.dumps({"version": str(live.refresh()), "error": live.error}).encode(),
                           "application/json")
            elif where in ("/", "/" + path.name):
                version = live.refresh()
                body = path.read_bytes().replace(
                    _EMPTY_VERSION, f'<meta name="agentgym-live" content="{version}">'.encode(), 1)
                self._send(body, "text/html; charset=utf-8")
            else:
                self.send_error(404, "only the report is served here")

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # a report server that prints every request drowns the one line that matters: its URL

    return http.server.ThreadingHTTPServer((HOST, port), Handler)


def serve(live: LiveReport, port: int = 0, *, announce: Callable[[str], None] = print) -> None:
    """Serve the report until interrupted; ``announce`` gets the URL once the socket listens."""
    try:
        server = make_server(live, port)
    except OSError as e:  # the port is taken, or below 1024 for a user
        raise DataError(f"cannot serve on {HOST}:{port}: {e.strerror or e}") from e
    try:
        announce(f"http://{HOST}:{server.server_address[1]}/")
        server.serve_forever()
    finally:
        server.server_close()
