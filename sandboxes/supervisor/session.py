"""The Python session (a worker): the loop that runs code frames in a fresh ``__main__``, and the
supervisor's handle on one.
"""

from __future__ import annotations

import builtins
import os
import sys
import traceback
import types

from .wire import READ_CHUNK, cut_traceback, plain_reply, send_reply, set_nonblocking


def stdio() -> list[tuple[int, int]] | None:
    """Which files fds 1 and 2 are, or None when they are closed."""
    try:
        if sys.stdout.closed or sys.stderr.closed:
            return None
        return [(st.st_dev, st.st_ino) for st in map(os.fstat, (1, 2))]
    except (OSError, AttributeError):
        return None


def forget_supervisor() -> None:
    """Drop the supervisor's modules from ``sys.modules`` (the zygote does, once), so that code in a
    session imports what a plain interpreter would: a name of the supervisor's (the host sends them as
    ``agentgym.sandboxes.supervisor.*``) is looked up on ``sys.path`` like any other. The functions
    that run keep their globals."""
    package = __package__ or __name__
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


def run_session(code_in: int, replies: int, cap: int) -> None:
    """The worker's loop: run each length-prefixed code frame from ``code_in`` in one namespace.

    After each run it flushes stdout/stderr (pipes the supervisor or the host reads) and answers on
    ``replies`` with the traceback, if any (at most ``cap`` characters of it: the reply is read whole),
    and whether its stdout/stderr still work (if not, it exits and a new session is started). Never returns.
    """
    main = types.ModuleType("__main__")  # the session's own, so pickle and ``import __main__`` find its names
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.argv = [""]
    namespace = main.__dict__
    pipes = stdio()
    pending = b""
    # Touch now (copying the pages shared with the zygote) what the first run touches, so that the
    # first request after a wipe costs what any other does.
    exec(compile("pass", "<python>", "exec", dont_inherit=True), {})

    def read_some() -> bytes:
        chunk = os.read(code_in, READ_CHUNK)
        if not chunk:
            os._exit(0)
        return chunk

    while True:
        while len(pending) < 20:  # one read takes a whole small request (length, number, code) in the common case
            pending += read_some()
        size = 10 + int(pending[:10])
        parts, have = [pending], len(pending)
        while have < size:
            parts.append(read_some())
            have += len(parts[-1])
        data = b"".join(parts)
        pending = data[size:]
        call = int(data[10:20])
        error = None
        try:
            exec(compile(data[20:size].decode("utf-8"), "<python>", "exec", dont_inherit=True), namespace)
        except BaseException as e:
            tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
            error = cut_traceback("".join(traceback.format_exception(type(e), e, tb)), cap)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        intact = stdio() == pipes  # code that closed or replaced fds 1/2 leaves a session that cannot talk
        if error is None and intact:
            os.write(replies, plain_reply(call))
        else:
            send_reply(replies, {"call": call, "error": error, "broken": not intact})
        if not intact:
            os._exit(0)


class Session:
    """The supervisor's handle on one Python session: its pid and the supervisor's ends of its four pipes."""

    def __init__(self, pid: int, fds: list[int]) -> None:
        self.pid = pid
        self.code_in, self.replies, self.stdout, self.stderr = fds
        for fd in fds:
            set_nonblocking(fd)

    def close(self) -> None:
        for fd in (self.code_in, self.replies, self.stdout, self.stderr):
            os.close(fd)
