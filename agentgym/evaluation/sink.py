"""The trajectories file as rows are appended to it: each row lands whole, or the file is left as before it.

Rows are written with ``os.write`` on an unbuffered descriptor, so that nothing waits in a buffer
to fail again at close. A write that fails part-way (a full disk takes what fits, then refuses
the rest) is cut back to the end of the last whole row, so every row before it reads back intact
and ``--resume`` starts from a clean end. After a failure the sink takes no more rows.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from agentgym.errors import DataError


class RowWriteError(DataError):
    """A row could not be written to the trajectories file (a full disk, an I/O error).

    Attributes:
        rows: Rows this sink wrote before the failure, all intact.
        error: The ``OSError`` the write met.
    """

    def __init__(self, message: str, *, rows: int, error: OSError) -> None:
        super().__init__(message)
        self.rows = rows
        self.error = error


class RowSink:
    """Appends one line per row to ``path``: truncated first unless ``append``.

    Raises:
        OSError: From the constructor, when ``path`` cannot be opened.
    """

    def __init__(self, path: Path, *, append: bool) -> None:
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | (0 if append else os.O_TRUNC)
        self._fd: int | None = os.open(path, flags, 0o644)
        self._end = os.lseek(self._fd, 0, os.SEEK_END)
        self.rows = 0
        self.failed: RowWriteError | None = None

    def write(self, line: str) -> None:
        """Append ``line`` (one row, ending in a newline), all of it or none of it.

        Raises:
            RowWriteError: The write failed (also every later call, once one has); the message is one
                line naming the file and the errno.
        """
        if self.failed is not None:
            raise self.failed
        if self._fd is None:
            raise ValueError(f"write to {self.path} after close()")
        encoded = line.encode()
        data = memoryview(encoded)
        try:
            while data:
                data = data[os.write(self._fd, data):]
        except OSError as e:
            with contextlib.suppress(OSError):  # a shrink needs no space
                os.ftruncate(self._fd, self._end)
            code = errno.errorcode.get(e.errno or 0, str(e.errno))
            self.failed = RowWriteError(f"cannot write {self.path}: [Errno {e.errno}] {code}, {e.strerror}",
                                        rows=self.rows, error=e)
            raise self.failed from e
        self._end += len(encoded)
        self.rows += 1

    def close(self) -> None:
        """Close the file; a second call does nothing."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
