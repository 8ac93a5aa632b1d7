"""Runs in the submission's sandbox: defines the submitted function, then answers calls with plain data.

Sent with :mod:`plain` into a fresh sandbox by :mod:`~agentgym.envs.code.verifier` (stdlib only,
Python 3.8+). Nothing here is trusted: the submission runs in this process and can change any of it
(replace ``json.dumps``, print anything, walk the stack, exit). That is fine, because all the
grader accepts from here is one reply per call, rebuilt on its side as plain data; the worst a
submission can do to this code is choose what its own function appears to return, which it could
do anyway. Replies are printed as ``marker + JSON`` on a line so that the function's own prints
(sent to a sink while it runs) do not get in the way; the marker is not a secret.

A reply is one of ``{"value": encoded}``, ``{"raised": {"type", "bases", "message"}}`` (the
exception's class name, the names of its classes' MRO, and its message) or ``{"unsendable": why}``.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

TYPE_CHECKING = False  # typing is not imported at run time: the sandboxes would pay for it
if TYPE_CHECKING:
    from typing import Any

try:
    from . import plain
except ImportError:  # in the submission's sandbox, where it is sent as a top-level module
    import agentgym_plain as plain  # type: ignore[import-not-found, no-redef]

MESSAGE_CHARS = 2000  # of an exception's message


class Server:
    """The submitted function and the way to call it.

    Args:
        job: ``{"marker", "prelude", "prompt", "solution", "entry_point", "reply_bytes"}``:
            ``prelude`` is the prompt's import lines, run before the solution (which may forget
            them); a solution that is only a function body (an ``IndentationError`` alone) is run
            after the prompt; ``reply_bytes`` bounds a reply.
    """

    def __init__(self, job: dict[str, Any]) -> None:
        self.marker = job["marker"]
        self.reply_bytes = job["reply_bytes"]
        self.function: Any = None
        out = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = open(os.devnull, "w")
        try:
            self.function = _define(job)
            reply: dict[str, Any] = {"loaded": True}
        except BaseException as e:
            reply = {"error": "".join(traceback.format_exception_only(type(e), e)).strip()[:MESSAGE_CHARS]}
        finally:
            sys.stdout, sys.stderr = out
        self._send(reply)

    def call(self, request: str) -> None:
        """Call the function with the arguments in ``request`` (plain JSON); print the reply."""
        call = plain.loads(request)
        out = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = open(os.devnull, "w")
        try:
            value = self.function(*call["args"], **call["kwargs"])
            try:
                reply: dict[str, Any] = {"value": plain.encode(value)}
            except (plain.NotPlain, RecursionError) as e:
                reply = {"unsendable": f"the function returned something that is not plain data: {e}"}
        except BaseException as e:
            reply = {"raised": {"type": type(e).__name__, "bases": [c.__name__ for c in type(e).__mro__],
                                "message": _message(e)}}
        finally:
            sys.stdout, sys.stderr = out
        self._send(reply)

    def _send(self, reply: dict[str, Any]) -> None:
        text = json.dumps(reply, allow_nan=False)
        if len(text) > self.reply_bytes:
            text = json.dumps({"unsendable": f"the return value takes {len(text)} bytes as plain data, "
                                             f"over the {self.reply_bytes} a call may return"})
        sys.stdout.write(self.marker + text + "\n")
        sys.stdout.flush()


def _define(job: dict[str, Any]) -> Any:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(job["prelude"], "<prompt imports>", "exec"), namespace)
    try:
        exec(compile(job["solution"], "<submission>", "exec"), namespace)
    except IndentationError:
        exec(compile(job["prompt"] + job["solution"], "<submission>", "exec"), namespace)
    function = namespace.get(job["entry_point"])
    if not callable(function):
        raise NameError(f"the submission does not define {job['entry_point']!r}")
    return function


def _message(error: BaseException) -> str:
    try:
        return str(error)[:MESSAGE_CHARS]
    except BaseException:
        return "(its message could not be read)"
