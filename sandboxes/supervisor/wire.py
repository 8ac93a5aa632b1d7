"""The wire format, the one module the host and the supervisor share.

Two streams cross the sandbox's wall. Requests and replies between the host and the supervisor are
one line of JSON each (:func:`message_line`): ``{"id": 1, "op": "exec", ...}`` answered by
``{"id": 1, "ok": true, ...}`` (the ops are listed in :mod:`.ops`). Python calls to a session are
length-prefixed frames (:func:`code_frame`, :func:`plain_reply`, :func:`reply_frame`), read whole and
by their exact shape (:func:`parse_reply`) by whichever side holds the session's pipes: the
supervisor, or the host when the session is lent to it (``agentgym.sandboxes.direct_session``). Output is kept
by :class:`Capture` and pipes are read with :func:`read_available` on both sides, so a reader's
bounds are the same whoever reads.

Stdlib only and Python 3.9, like the whole package: the host imports it as
``agentgym.sandboxes.supervisor.wire`` and the sandbox gets its source over stdin.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from typing import Any

READ_CHUNK = 1 << 16
LENGTH_DIGITS = 10  # a session's frame is its length in ten ASCII digits, then that many bytes
LENT_FDS = 4  # a lent session's pipes: code in, replies, stdout, stderr, in the order they are sent
QUIET_WAIT = 0.002  # how long a python call waits for the worker's answer before reading output as it comes


class Capture:
    """One output stream: the first ``cap`` bytes are kept, the rest counted as truncated."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def set_nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def read_available(fd: int, size: int = READ_CHUNK) -> bytes | None:
    """Whatever ``fd`` holds now (up to ``size`` bytes): bytes, b"" at end of file or on an error, None when
    it would block. The host's relays read their pipes with it too."""
    try:
        return os.read(fd, size)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def message_line(message: dict[str, Any]) -> bytes:
    """A request or a reply between the host and the supervisor as it travels: one line of JSON
    (ASCII: JSON escapes every other character, so no newline can hide inside)."""
    return json.dumps(message).encode("ascii") + b"\n"


def reply_frame(reply: dict[str, Any]) -> bytes:
    """A session's reply as it travels: its length in ten digits, then its JSON."""
    data = json.dumps(reply).encode("utf-8")
    return b"%010d" % len(data) + data


def reply_limit(cap: int) -> int:
    """The longest reply frame a session may send: its traceback, as JSON, is cut to about ``cap`` bytes
    (:func:`cut_traceback`), and the frame's other fields are a few dozen."""
    return cap + REPLY_SLACK


REPLY_SLACK = 4096
_REPLY_HEAD = re.compile(rb'\{"call": (\d{1,10}), "error": ')
_REPLY_TAILS = ((b', "broken": false}', False), (b', "broken": true}', True))


def cut_traceback(error: str, cap: int) -> str:
    """``error``, cut so that as JSON (which writes a character outside ASCII as up to 12 bytes) it
    takes at most ``cap`` bytes and a note."""
    if len(error) <= cap and len(json.dumps(error)) <= cap:
        return error
    error = error[:cap]
    encoded = len(json.dumps(error))
    while encoded > cap:
        error = error[: max(0, len(error) * cap // encoded - 1)]
        encoded = len(json.dumps(error))
    return error + f"\n[the traceback is cut at {cap} characters]\n"


def parse_reply(body: bytes) -> dict[str, Any] | None:
    """A session's reply (the frame after its length), or None when it is not one a session writes.

    It is read by its exact shape, ``{"call": N, "error": null | "...", "broken": false | true}``, and
    only the error string is parsed as JSON: what a session's code forges costs one linear scan of
    at most :func:`reply_limit` bytes, and nothing in it can nest.
    """
    head = _REPLY_HEAD.match(body)
    if head is None:
        return None
    tail, broken = next(((t, b) for t, b in _REPLY_TAILS if body.endswith(t)), (b"", None))
    if broken is None:
        return None
    middle = body[head.end() : len(body) - len(tail)]
    if middle == b"null":
        error = None
    elif middle[:1] == b'"':
        try:
            error = json.loads(middle.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError included; and a string with more behind it
            return None
    else:
        return None
    return {"call": int(head.group(1)), "error": error, "broken": broken}


def parse_verdict(body: bytes) -> dict[str, Any] | None:
    """The cleaner's verdict, ``{"wiped": null | "why not"}`` (written before any code of the session's runs)."""
    try:
        verdict = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return verdict if isinstance(verdict, dict) and set(verdict) == {"wiped"} else None


def code_frame(call: int, code: bytes) -> bytes:
    """A python call as the session reads it: the frame's length in ten digits, the call's number in
    ten, then the code. The session answers with the number (:func:`plain_reply`), so that a reply the
    code forged to end its call early is found out when the real one comes: its number is not the
    next call's."""
    return b"%010d%010d" % (10 + len(code), call) + code


def plain_reply(call: int) -> bytes:
    """The reply to call ``call`` when it raised nothing and left stdout and stderr working: most
    replies, so written (and recognised by a host reading a lent session) from a template, with no
    JSON to write or parse."""
    body = b'{"call": %d, "error": null, "broken": false}' % call
    return b"%010d" % len(body) + body


def send_reply(replies: int, reply: dict[str, Any]) -> None:
    os.write(replies, reply_frame(reply))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
