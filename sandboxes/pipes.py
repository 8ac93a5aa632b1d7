"""Writing to a non-blocking pipe from the event loop: the host's one way to do it.

Two relays write to pipes whose reader may be slow: the direct Python session's code frames
(:mod:`~agentgym.sandboxes.direct_session`) and the browser's direct DevTools pipe
(:mod:`~agentgym.sandboxes.browser.direct`). A blocking write would stall the whole event loop on a
reader that never drains, so what the pipe does not take at once is queued and sent as it drains. Reads
need no class: :func:`~agentgym.sandboxes.supervisor.wire.read_available` (the wire format's) serves both sides.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable


class PipeWriter:
    """Non-blocking writes to ``fd``: what the pipe does not take at once is queued, and sent as it drains.

    ``on_broken`` runs once when the reader has gone (a write fails other than with "would block"); by
    default the writer closes itself. Queued data is sent in order, after what was queued before it.
    """

    def __init__(self, fd: int, *, on_broken: Callable[[], None] | None = None) -> None:
        self.fd = fd
        self._loop = asyncio.get_running_loop()
        self._pending = bytearray()
        self._watching = False  # a writer callback is registered: the pipe was full
        self._closed = False
        self._on_broken = on_broken or self.close

    @property
    def pending(self) -> int:
        """Bytes queued, waiting for the pipe to drain."""
        return len(self._pending)

    def write(self, data: bytes) -> None:
        """Send ``data`` now as far as the pipe takes it; queue the rest."""
        if self._closed or not data:
            return
        if self._pending:
            self._pending += data
            return
        written = self._send(data)
        if written is not None and written < len(data):
            self._pending += data[written:]
            self._loop.add_writer(self.fd, self._drain)
            self._watching = True

    def drop(self) -> None:
        """Forget what is queued and stop watching the pipe (the reader will not want it)."""
        self._pending.clear()
        self._unwatch()

    def flush_blocking(self) -> None:
        """Send what is queued, waiting for the pipe if need be (when the relay stops)."""
        if self._closed or not self._pending:
            return
        self._unwatch()
        with contextlib.suppress(OSError):
            os.set_blocking(self.fd, True)
            os.write(self.fd, self._pending)
        self._pending.clear()

    def close(self) -> None:
        """Drop what is queued and close ``fd``; later writes do nothing."""
        if self._closed:
            return
        self._closed = True
        self.drop()
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def _send(self, data: bytes | bytearray) -> int | None:
        """Bytes written (0 when the pipe is full), or None when the reader is gone."""
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0
        except OSError:
            self.drop()
            self._on_broken()
            return None

    def _drain(self) -> None:
        written = self._send(self._pending)
        if written is None:
            return
        del self._pending[:written]
        if not self._pending:
            self._unwatch()

    def _unwatch(self) -> None:
        if self._watching:
            self._watching = False
            with contextlib.suppress(ValueError, OSError):  # the fd is closed already: nothing to remove
                self._loop.remove_writer(self.fd)
