"""Runs a task's ``check(candidate)`` where the submission never ran; ``candidate`` is a proxy.

This module is the grader's sandbox's Python session (stdlib only, Python 3.8+), sent there with
:mod:`plain` by :mod:`~agentgym.envs.code.verifier`. That session holds a :class:`Server` and
runs nothing else: for each verification it forks a child that runs the task's tests in a working
directory of its own, and when they end it kills the child's process group and removes that
directory, so the session stays as it was and the sandbox can grade again without a wipe. Nothing
of the submission's, code or object, ever exists in either process.

The child runs the task's prompt (so the tests can use its helpers, such as HumanEval's ``poly``:
the prompt's, never the submission's), the test module's top-level code, then each statement of
``check``'s body on its own (split by :mod:`~agentgym.envs.code.testplan` on the host), recording
each test's result. ``candidate`` (and the entry point's name) is a :class:`Candidate`: each call
is sent to the submission's sandbox as plain data, and what comes back is rebuilt by
:func:`plain.decode`, so every comparison the tests make is between plain values and runs here.

The host drives a verification with ``start(job, seconds)`` then one ``pump(reply, seconds)`` per
candidate call: the server hands the child the submission's reply, reads the child's messages until
its next call (or its end), and prints one frame, the verification's nonce followed by JSON on a
line. The nonce never reaches the submission's sandbox, so a string the submission returned cannot
pass for a frame (and what the tests print goes to ``/dev/null`` anyway).
"""

from __future__ import annotations

import builtins
import json
import os
import select
import shutil
import signal
import sys
import time
import traceback

TYPE_CHECKING = False  # typing is not imported at run time: the sandboxes would pay for it
if TYPE_CHECKING:
    from typing import Any, TextIO

try:
    from . import plain
except ImportError:  # in the grader's sandbox, where it is sent as a top-level module
    import agentgym_plain as plain  # type: ignore[import-not-found, no-redef]

SOURCE_CHARS = 300  # of each test's source, in its result
ERROR_CHARS = 500  # of each failure's message
MESSAGE_CHARS = 2000  # of an exception message from the submission
FRAME_RESULTS_BYTES = 32 << 10  # results per frame before the host is asked to pump again


class Server:
    """The grader sandbox's session: one verification at a time, each in a child process."""

    def __init__(self) -> None:
        # Nothing is imported from a working directory, where tests may write files: only the
        # standard library and installed packages.
        sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
        self.child = 0
        self.workdir = ""  # the child's, removed with it
        self.nonce = ""
        self.sources: list[list[Any]] = []
        self.finished = 0  # statements the child has finished
        self.to_child: TextIO | None = None
        self.from_child = -1
        self.pending = b""
        self.timed_out = False

    def start(self, job: str, seconds: float) -> None:
        """Start the tests of ``job`` (JSON: see :func:`_check`) in a child; print the first frame.

        A verification still running (its host gave up on it) is ended first.
        """
        self._end()
        spec = json.loads(job)
        self.nonce, self.sources, self.finished, self.pending = spec["nonce"], spec["statements"], 0, b""
        self.workdir = os.path.join(os.getcwd(), "check-" + os.urandom(8).hex())
        os.mkdir(self.workdir, 0o700)
        down_read, down_write = os.pipe()
        up_read, up_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run the tests, then leave without running anything of the parent's
            try:
                os.chdir(self.workdir)
                _child(spec, down_read, up_write)
            finally:
                os._exit(0)
        try:
            os.setpgid(pid, pid)  # as the child does: whichever runs first, the group exists before a kill
        except OSError:
            pass
        os.close(down_read)
        os.close(up_write)
        self.child, self.to_child, self.from_child = pid, os.fdopen(down_write, "w"), up_read
        self.pump(None, seconds)

    def pump(self, reply: str | None, seconds: float) -> None:
        """Hand ``reply`` to the child's pending candidate call (if any); print the next frame.

        A frame has the ``results`` finished since the last one and one of: ``call`` (the next call's
        arguments: pump again with the submission's reply), ``more`` (pump again with None),
        ``done``, or ``task_error`` (the test's own top-level code failed). When nothing comes for
        ``seconds`` the tests are stuck: the running statement and the tests after it fail.
        """
        if not self.child:  # nothing running (the host asked twice)
            self._emit({"results": [], "done": True})
            return
        if reply is not None and self.to_child is not None:
            try:
                self.to_child.write(json.dumps(reply) + "\n")
                self.to_child.flush()
            except OSError:
                pass  # the child is gone: reading says so
        results: list[dict[str, Any]] = []
        size = 0
        deadline = time.monotonic() + seconds
        while True:
            message = self._receive(deadline)
            if message is None or message[0] == "done":
                if message is None:
                    results += self._unfinished(seconds)
                self._end()
                self._emit({"results": results, "done": True})
                return
            kind = message[0]
            if kind == "finished":
                self.finished = message[1] + 1
                if message[2] is not None:
                    results.append(message[2])
                    size += len(json.dumps(message[2]))
                    if size > FRAME_RESULTS_BYTES:
                        self._emit({"results": results, "more": True})
                        return
            elif kind == "call":
                self._emit({"results": results, "call": message[1]})
                return
            else:  # task_error
                self._end()
                self._emit({"results": results, "task_error": message[1]})
                return

    def _receive(self, deadline: float) -> list[Any] | None:
        """The child's next message; None when it timed out or the child died (:attr:`timed_out` says which)."""
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.from_child], [], [], left)[0]:
                self.timed_out = True
                return None
            chunk = os.read(self.from_child, 1 << 16)
            if not chunk:
                self.timed_out = False
                return None
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        message: list[Any] = json.loads(line)
        return message

    def _unfinished(self, seconds: float) -> list[dict[str, Any]]:
        """Failures for the statement that never finished and for the tests after it."""
        if self.timed_out:
            why = f"TimeoutError: the tests ran out of time here ({seconds:.3g} s without a result)"
        else:
            why = "the tests' process died here"
        out = []
        for index, (source, _code, is_test) in enumerate(self.sources[self.finished :]):
            if index == 0:
                out.append(_result(source, why))
            elif is_test:
                out.append(_result(source, "not run: the tests stopped before this one"))
        return out

    def _emit(self, frame: dict[str, Any]) -> None:
        sys.stdout.write(self.nonce + json.dumps(frame) + "\n")
        sys.stdout.flush()

    def _end(self) -> None:
        """Kill the child's process group (it may have started processes), reap it, remove its files."""
        if not self.child:
            return
        for kill in (os.killpg, os.kill):
            try:
                kill(self.child, signal.SIGKILL)
            except OSError:
                pass
        os.waitpid(self.child, 0)
        if self.to_child is not None:
            try:
                self.to_child.close()
            except OSError:
                pass
        os.close(self.from_child)
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.child, self.to_child, self.from_child = 0, None, -1


def _child(spec: dict[str, Any], down: int, up: int) -> None:
    """Run the tests in this (forked) process: a group of its own, no fd of the session's but its pipes."""
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2 and int(name) not in (down, up):
            try:
                os.close(int(name))
            except OSError:
                pass
    sys.stdout = sys.stderr = open(os.devnull, "w")
    _check(spec, Channel(down, up))


class Channel:
    """The child's end of its pipes to the server: JSON lines each way."""

    def __init__(self, down: int, up: int) -> None:
        self.down = os.fdopen(down, "r")
        self.up = os.fdopen(up, "w")

    def send(self, *message: Any) -> None:
        self.up.write(json.dumps(message) + "\n")
        self.up.flush()

    def receive(self) -> str:
        line = self.down.readline()
        if not line:
            os._exit(0)  # the server is gone
        reply: str = json.loads(line)
        return reply


def _check(spec: dict[str, Any], channel: Channel) -> None:
    """Run the tests: ``spec`` is ``{"nonce", "prompt", "setup", "statements", "parameter", "entry_point",
    "request_bytes"}``, the fields of a ``TestPlan`` (``statements`` as ``[source, code, is_test]``)
    and the most one call's arguments may take (they must fit in the sandbox's output)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    _run_prompt(spec["prompt"], namespace)
    try:
        exec(compile(spec["setup"], "<test>", "exec"), namespace)
    except BaseException as e:
        channel.send("task_error", "the task's test code failed before check ran: " + _describe(e))
        return
    candidate = Candidate(channel, spec["request_bytes"])
    for name in (spec["parameter"], spec["entry_point"]):
        if name:
            namespace[name] = candidate
    for index, (source, code, is_test) in enumerate(spec["statements"]):
        candidate.failure = None
        error = None
        try:
            exec(compile(code, "<test>", "exec"), namespace)
        except BaseException as e:
            error = _describe(e)
        if error is None and candidate.failure is not None:
            error = "the test caught a failed call: " + candidate.failure
        channel.send("finished", index, _result(source, error) if is_test or error is not None else None)
    channel.send("done")


class CandidateFailure(BaseException):
    """A call that did not return a plain value or raise an exception: it timed out, crashed, or sent junk.

    A ``BaseException``, so that a test's ``except Exception`` cannot swallow it; and a statement in
    which one happened fails even if the test caught it.
    """


class Candidate:
    """Stands for the submitted function: sends each call's arguments to it and rebuilds what comes back.

    Attributes:
        failure: The last :class:`CandidateFailure` in the current statement, caught or not.
    """

    def __init__(self, channel: Channel, request_bytes: int) -> None:
        self.channel = channel
        self.request_bytes = request_bytes
        self.failure: str | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            request = plain.dumps({"args": list(args), "kwargs": kwargs})
        except (plain.NotPlain, ValueError, RecursionError) as e:
            raise TypeError(f"the test passed the candidate something that is not plain data: {e}") from None
        if len(request) > self.request_bytes:
            raise ValueError(f"the arguments take {len(request)} bytes as plain data, over the "
                             f"{self.request_bytes} the grader's sandbox can pass on")
        self.channel.send("call", request)
        try:
            return _outcome(self.channel.receive())
        except CandidateFailure as e:
            self.failure = str(e)
            raise


def _outcome(reply: str) -> Any:
    """The value the submission's reply stands for; raise what it raised, or CandidateFailure."""
    try:
        message = json.loads(reply)
        if not isinstance(message, dict) or len(message) != 1:
            raise plain.NotPlain("not a one-key object")
        ((kind, body),) = message.items()
        if kind == "value":
            return plain.decode(body)
        if kind == "raised":
            error = _rebuild(body)
        elif kind in ("failed", "unsendable") and isinstance(body, str):
            error = CandidateFailure(body[:MESSAGE_CHARS])
        else:
            raise plain.NotPlain(f"an unknown reply {kind!r}")
    except (ValueError, plain.NotPlain, RecursionError) as e:
        error = CandidateFailure(f"the submission's reply is not plain data: {str(e)[:200]}")
    raise error


def _run_prompt(prompt: str, namespace: dict[str, Any]) -> None:
    """Define the prompt's helpers (task data, not the submission's); a prompt that is not code gives its imports."""
    try:
        exec(compile(prompt, "<prompt>", "exec"), namespace)
        return
    except BaseException:
        pass
    for line in prompt.splitlines():
        if line.startswith(("import ", "from ")):
            try:
                exec(compile(line, "<prompt>", "exec"), namespace)
            except BaseException:
                pass


def _rebuild(raised: Any) -> BaseException:
    """The exception the submission's function raised, as the nearest built-in exception class.

    A class the grader does not have (``MyError(ValueError)``) becomes a subclass of its nearest
    built-in base with the same name, so ``except ValueError`` still catches it. Exits and
    interrupts (``SystemExit``, ``KeyboardInterrupt``) are failures, not exceptions a test could
    catch; so is ``StopIteration``, which would otherwise end a test's loop early
    (``all(map(lambda x: candidate(x) == f(x), xs))`` would pass having checked nothing).
    """
    if not isinstance(raised, dict):
        raise plain.NotPlain("a malformed exception")
    name, bases, message = raised.get("type"), raised.get("bases"), raised.get("message")
    if not (isinstance(name, str) and isinstance(message, str) and isinstance(bases, list)):
        raise plain.NotPlain("a malformed exception")
    message = message[:MESSAGE_CHARS]
    if not name.isidentifier():
        name = "CandidateError"
    for base in [name, *bases[:50]]:
        cls = getattr(builtins, base, None) if isinstance(base, str) else None
        if not (isinstance(cls, type) and issubclass(cls, BaseException)):
            continue
        if not issubclass(cls, Exception) or issubclass(cls, (StopIteration, StopAsyncIteration)):
            return CandidateFailure(f"the candidate raised {name}: {message}")
        try:
            return (cls if cls.__name__ == name else type(name, (cls,), {"__module__": "submission"}))(message)
        except Exception:  # e.g. UnicodeDecodeError needs five arguments: try its base
            continue
    return type(name, (Exception,), {"__module__": "submission"})(message)


def _describe(error: BaseException) -> str:
    if isinstance(error, CandidateFailure):
        return f"CandidateFailure: {error}"[:ERROR_CHARS]
    return "".join(traceback.format_exception_only(type(error), error)).strip()[:ERROR_CHARS]


def _result(source: str, error: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"test": source[:SOURCE_CHARS], "passed": error is None}
    if error is not None:
        result["error"] = error
    return result
