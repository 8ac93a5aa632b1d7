"""Runs a task's ``check(candidate)`` where the submission never ran; ``candidate`` is a proxy.

This module is the grader's sandbox's Python session (stdlib only, Python 3.9+), sent there with
:mod:`plain` by :mod:`~agentgym.envs.code.grading`. That session holds a :class:`Server` and
runs nothing else: for each verification it forks a child that runs the task's tests in a working
directory of its own, and when they end it kills the child's process group and removes that
directory, so the session stays as it was and the sandbox can grade again without a wipe. Nothing
of the submission's, code or object, ever exists in either process.

The child runs the task's prompt (so the tests can use its helpers, such as HumanEval's ``poly``:
the prompt's, never the submission's), the test module's top-level code, then each statement of
``check``'s body on its own (split by :mod:`~agentgym.envs.code.testplan` on the host), recording
each test's result. ``candidate`` (and the entry point's name) is a :class:`Remote` for the
submitted function: each call is sent to the submission's sandbox as plain data by the
:class:`Relay`, and what comes back is rebuilt by :func:`plain.decode`, so every comparison the
tests make is between plain values and runs here. What else a test in the candidate's process would
see of the call comes back with it and is made to happen here (the arguments' changes, output,
stdin read, warnings, the exception's class and ``args``): for every honest solution the verdict is
plain Python's (docs/threat-model.md, "A call means what it means in Python").

The host drives a verification with ``start(job, seconds)`` then one ``pump(reply, seconds)`` per
candidate call: the server hands the child the submission's reply, reads the child's messages until
its next call (or its end), and prints one frame, the verification's nonce followed by JSON on a
line. The nonce never reaches the submission's sandbox, so a string the submission returned cannot
pass for a frame (and what the tests print goes to ``/dev/null`` anyway).
"""

from __future__ import annotations

import builtins
import io
import json
import os
import select
import shutil
import signal
import sys
import threading
import time
import traceback
import warnings

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
ORIGINAL_STDIN, ORIGINAL_INPUT = sys.stdin, builtins.input  # before any test could replace them
MODULE_NAME = "solution"
"""The tests' ``__name__``, as the solution's (not ``__main__``): what an in-process test of the solution
module would see, and a main guard in either does not run."""


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
                frame: dict[str, Any] = {"results": results, "done": True}
                if message is None:
                    results += self._unfinished(seconds)
                    frame["timed_out"] = self.timed_out
                self._end()
                self._emit(frame)
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
    "request_bytes", "reply_bytes"}``, the fields of a ``TestPlan`` (``statements`` as ``[source, code,
    is_test]``), the most one request may take (it must fit in the sandbox's output) and the most a reply may."""
    namespace: dict[str, Any] = {"__name__": MODULE_NAME}
    _run_prompt(spec["prompt"], namespace)
    prompt_classes = {name: value for name, value in namespace.items()
                      if isinstance(value, type) and issubclass(value, BaseException)}
    try:
        exec(compile(spec["setup"], "<test>", "exec", dont_inherit=True), namespace)
    except BaseException as e:
        channel.send("task_error", "the task's test code failed before check ran: " + _describe(e))
        return
    relay = Relay(channel, spec["request_bytes"], spec["reply_bytes"], prompt_classes, namespace)
    candidate = relay.remote([0, "function", "ch"])
    for name in (spec["parameter"], spec["entry_point"]):
        if name:
            namespace[name] = candidate
    for index, (source, code, is_test) in enumerate(spec["statements"]):
        relay.failure = None
        error = None
        try:
            exec(compile(code, "<test>", "exec", dont_inherit=True), namespace)
        except BaseException as e:
            error = _describe(e)
        if error is None and relay.failure is not None:
            error = "the test caught a failed call: " + relay.failure
        channel.send("finished", index, _result(source, error) if is_test or error is not None else None)
    channel.send("done")


class CandidateFailure(BaseException):
    """A call that did not return a plain value or raise an exception: it timed out, crashed, or sent junk.

    A ``BaseException``, so that a test's ``except Exception`` cannot swallow it; and a statement in
    which one happened fails even if the test caught it.
    """


class RelayFailure(BaseException):
    """The relay could not carry a call as an in-process call would go: the test passed something that
    cannot cross (a function, an object), or more than a request may carry. Not the candidate's doing,
    so never an exception of the kind the candidate raises: like :class:`CandidateFailure`, a test
    cannot catch it, and the statement fails with the reason."""


class Relay:
    """Carries the tests' operations on the submission's objects (the candidate, and what it returned
    that is not plain data) to the submission's sandbox, and what they did back.

    What crosses back is what a test in the candidate's process would have seen: the return value
    (the test's own argument where the candidate returned it), the exception with its ``args`` (as
    the prompt's own class where the prompt defines one by that name), the new contents of the
    arguments it changed (copied into the test's objects), what it printed (written to the test's
    ``sys.stdout`` and ``sys.stderr``), what it read of the test's ``sys.stdin`` and the warnings it
    issued (issued again here, under the test's filters).

    Attributes:
        failure: The last failure (:class:`CandidateFailure`, :class:`RelayFailure`) in the current
            statement, caught or not.
    """

    def __init__(self, channel: Channel, request_bytes: int, reply_bytes: int,
                 prompt_classes: dict[str, type[BaseException]], namespace: dict[str, Any]) -> None:
        self.channel = channel
        self.namespace = namespace  # the tests' module: the classes a carried value is rebuilt as
        self.lock = threading.RLock()
        self.request_bytes = request_bytes
        self.reply_bytes = reply_bytes
        self.prompt_classes = prompt_classes
        self.remotes: dict[int, Remote] = {}
        self.failure: str | None = None
        self.stdin, self.input = ORIGINAL_STDIN, ORIGINAL_INPUT
        self.warned: dict[Any, Any] = {}  # the warnings registry of the submission's "module"

    def remote(self, payload: Any) -> Remote:
        """The proxy for the submission's object ``[handle, type name]``: one per handle."""
        if not (isinstance(payload, list) and len(payload) == 3 and type(payload[0]) is int
                and isinstance(payload[1], str) and isinstance(payload[2], str)):
            raise plain.NotPlain("a malformed handle")
        found = self.remotes.get(payload[0])
        if found is None:
            found = self.remotes[payload[0]] = _stand_in(payload[2])(self, payload[0], payload[1][:100])
        return found

    def ask(self, target: Remote, op: str, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None,
            name: str | None = None) -> Any:
        """Carry out ``op`` on ``target`` in the submission's sandbox; its result, or raise what it raised.

        One at a time: the tests' threads calling the candidate at once each get their own call's reply.
        """
        try:
            with self.lock:
                return self._ask(target, op, args, kwargs, name)
        except (CandidateFailure, RelayFailure) as e:
            self.failure = f"{type(e).__name__}: {e}"
            raise

    def _ask(self, target: Remote, op: str, args: tuple[Any, ...], kwargs: dict[str, Any] | None,
             name: str | None) -> Any:
        refs = plain.Refs()
        try:
            payload = plain.encode([list(args), dict(kwargs or {})], refs, self._opaque(refs), exact=True)
        except (plain.NotPlain, RecursionError) as e:
            raise RelayFailure(f"the test passed the candidate what cannot cross to its sandbox: {e}") from None
        request: dict[str, Any] = {"op": op, "target": target._agentgym_handle, "args": payload}
        if name is not None:
            request["name"] = name
        stdin = self._stdin()
        if stdin is not None:
            request["stdin"] = stdin[1]
        text = json.dumps(request)
        size = len(text) + text.count('"') + text.count("\\") + 2  # as it travels, a JSON string in a frame
        if size > self.request_bytes:
            raise RelayFailure(f"the arguments take {size} bytes as plain data, over the "
                               f"{self.request_bytes} the relay can pass on")
        self.channel.send("call", text)
        return self._outcome(self.channel.receive(), refs, op, stdin)

    def _opaque(self, refs: plain.Refs) -> Any:
        """What stands for an argument that is not of a plain type: the submission's own object for its
        proxy, the value with its class where :func:`plain.carried` can carry it; else it cannot cross."""
        def stand_in(value: Any) -> Any:
            if isinstance(value, Remote) and value._agentgym_relay is self:
                return {"handle": value._agentgym_handle}
            found = plain.carried(value, self.namespace, refs, stand_in)
            if found is None:
                raise plain.NotPlain(f"a value of type {type(value).__name__} is not plain data")
            return found
        return stand_in

    def _stdin(self) -> tuple[io.StringIO, str] | None:
        """The test's own stdin, when it gave the candidate one (an ``io.StringIO``), and what is left of it."""
        if builtins.input is not self.input:
            raise RelayFailure("the test replaced input(), which the candidate's sandbox cannot see: "
                               "give it sys.stdin = io.StringIO(...) instead")
        stdin = sys.stdin
        if stdin is self.stdin or stdin is sys.__stdin__:
            return None
        if type(stdin) is not io.StringIO:
            raise RelayFailure(f"the test's sys.stdin is a {type(stdin).__name__}, which cannot cross: "
                               "only an io.StringIO can")
        return stdin, stdin.getvalue()[stdin.tell():]

    def _outcome(self, reply: str, refs: plain.Refs, op: str, stdin: tuple[io.StringIO, str] | None) -> Any:
        """What the submission's ``reply`` stands for; its side effects made here first."""
        try:
            message = json.loads(reply)
            if not isinstance(message, dict):
                raise plain.NotPlain("not an object")
            arguments = len(refs.objects)
            if "value" in message:
                value = plain.decode(message["value"], refs, self.remote, self.namespace)
                error = None
            elif "raised" in message:
                error = self._rebuild(message["raised"], op)
            else:
                raise CandidateFailure(_failure(message, self.reply_bytes))
            self._mutate(message.get("mutated", []), refs, arguments)
            self._effects(message, stdin)
        except (ValueError, plain.NotPlain, RecursionError, AttributeError, TypeError) as e:
            raise CandidateFailure(f"the submission's reply is not plain data: {str(e)[:200]}") from None
        if error is not None:
            raise error
        return value

    def _mutate(self, mutated: Any, refs: plain.Refs, arguments: int) -> None:
        """Copy the new contents of the arguments the call changed (``arguments``: the first ones in
        ``refs``) into the test's own objects."""
        if not isinstance(mutated, list):
            raise plain.NotPlain("malformed mutations")
        for index, contents in mutated:
            target = refs.objects[index] if type(index) is int and 0 <= index < arguments else None
            if not isinstance(target, (list, dict, set, bytearray)) or not isinstance(contents, (list, dict)):
                raise plain.NotPlain("a mutation of no mutable argument")
            if isinstance(target, bytearray):
                target[:] = plain.decode(contents)
            elif isinstance(target, dict):
                items = [(plain.decode(k, refs, self.remote, self.namespace),
                          plain.decode(v, refs, self.remote, self.namespace)) for k, v in contents]
                target.clear()
                target.update(items)
            else:
                parts = [plain.decode(v, refs, self.remote, self.namespace) for v in contents]
                if isinstance(target, list):
                    target[:] = parts
                else:
                    target.clear()
                    target.update(parts)

    def _effects(self, message: dict[str, Any], stdin: tuple[io.StringIO, str] | None) -> None:
        """What the call printed, read and warned, as a test in its process would see it."""
        read = message.get("stdin_read", 0)
        if stdin is not None and type(read) is int and 0 < read <= len(stdin[1]):
            stdin[0].seek(stdin[0].tell() + read)
        printed = message.get("printed", [])
        if not isinstance(printed, list):
            raise plain.NotPlain("malformed output")
        for stream, text in printed:  # in the order the candidate wrote them
            if isinstance(text, str):
                (sys.stderr if stream == 1 else sys.stdout).write(text)
        for classes, text, line in message.get("warnings", [])[:100]:
            category = self._class(classes, Warning, UserWarning)
            warnings.warn_explicit(str(text), category, "<submission>", int(line), module=MODULE_NAME,
                                   registry=self.warned)

    def _class(self, classes: Any, root: type[BaseException], default: type[BaseException]) -> Any:
        """The class the submission's ``classes`` (its MRO, as ``[name, origin, module, qualname]``, see
        ``plain.origins``) stands for, as a test in its program would catch it: the very class
        where a name of the test's reaches it (a built-in, the prompt's, a module's the tests imported),
        else one made under the nearest base that is one of those. A class of the same name that is
        not that one (a ``ValueError`` defined inside the candidate) is not taken for it."""
        if not isinstance(classes, list) or not classes or not all(
                isinstance(c, list) and len(c) == 4 and all(isinstance(p, str) for p in c) for c in classes):
            raise plain.NotPlain("a malformed class")
        name = classes[0][0] if classes[0][0].isidentifier() else "CandidateError"
        for index, (base, origin, module, qualname) in enumerate(classes[:50]):
            found: Any = None
            if origin == "builtin":
                found = getattr(builtins, base, None)
            elif origin == "global":
                found = self.prompt_classes.get(base, getattr(builtins, base, None))
            elif origin == "module":
                found = _imported_class(module, qualname)
            if isinstance(found, type) and issubclass(found, root):
                return found if index == 0 else type(name, (found,), {"__module__": MODULE_NAME})
        return type(name, (default,), {"__module__": MODULE_NAME})

    def _rebuild(self, raised: Any, op: str) -> BaseException:
        """The exception the submission raised, as the test would have caught it.

        Its class is found by identity (:meth:`_class`): the built-in, the prompt's or an imported
        module's class it is, else a class of its name under its nearest such base (``except ValueError``
        catches a ``MyError(ValueError)``); its ``args`` and attributes are the original's where they
        are plain data. Exits and interrupts (``SystemExit``, ``KeyboardInterrupt``) are failures, not exceptions
        a test could catch; so is ``StopIteration`` except from ``next()``, which would otherwise end a
        test's loop early (``all(map(lambda x: candidate(x) == f(x), xs))`` would pass having checked nothing).
        """
        if not isinstance(raised, dict):
            raise plain.NotPlain("a malformed exception")
        message = raised.get("message")
        if not isinstance(message, str):
            raise plain.NotPlain("a malformed exception")
        message = message[:MESSAGE_CHARS]
        cls = self._class(raised.get("classes"), BaseException, Exception)
        name = cls.__name__
        stops = issubclass(cls, (StopIteration, StopAsyncIteration)) and not (op == "next" and cls is StopIteration)
        if not issubclass(cls, Exception) or stops:
            return CandidateFailure(f"the candidate raised {name}: {message}")
        args = raised.get("args")
        args = tuple(plain.decode(args)) if isinstance(args, dict) and "tuple" in args else (message,)
        try:
            error = cls(*args) if cls.__module__ == "builtins" else cls.__new__(cls, *args)
            error.args = args
        except Exception:  # e.g. UnicodeDecodeError needs five arguments
            error = type(str(name), (Exception,), {"__module__": MODULE_NAME})(*args)
        attrs = raised.get("attrs")
        if isinstance(attrs, dict) and "dict" in attrs:
            for key, value in plain.decode(attrs).items():
                if isinstance(key, str) and key.isidentifier() and not key.startswith("__"):
                    try:
                        setattr(error, key, value)
                    except Exception:
                        pass
        return error


class Remote:
    """Stands for an object of the submission's (the candidate itself, a generator or an instance it
    returned): attributes, ``bool``, ``str``, ``repr`` and, where the real object's type has them
    (:func:`_stand_in`), calls, iteration, ``len``, ``in``, ``[]`` and ``with`` are carried to it.
    Comparisons are not: the grader never asks the submission whether its object equals something, so
    a remote object equals only itself."""

    __slots__ = ("_agentgym_handle", "_agentgym_relay", "_agentgym_type")

    def __init__(self, relay: Relay, handle: int, kind: str) -> None:
        object.__setattr__(self, "_agentgym_relay", relay)
        object.__setattr__(self, "_agentgym_handle", handle)
        object.__setattr__(self, "_agentgym_type", kind)

    def __getattr__(self, name: str) -> Any:
        return self._agentgym_relay.ask(self, "getattr", name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._agentgym_relay.ask(self, "setattr", (value,), name=name)

    def __delattr__(self, name: str) -> None:
        self._agentgym_relay.ask(self, "delattr", name=name)

    def __bool__(self) -> bool:
        return self._agentgym_relay.ask(self, "bool")  # type: ignore[no-any-return]

    def __str__(self) -> str:
        return self._agentgym_relay.ask(self, "str")  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return self._agentgym_relay.ask(self, "repr")  # type: ignore[no-any-return]

    __hash__ = object.__hash__

    @property
    def __doc__(self) -> Any:  # type: ignore[override]
        return self._agentgym_relay.ask(self, "getattr", name="__doc__")


def _call(self: Remote, *args: Any, **kwargs: Any) -> Any:
    return self._agentgym_relay.ask(self, "call", args, kwargs)


def _signature(self: Remote) -> Any:
    """The real callable's ``inspect.signature``, its parameters' names, kinds and defaults (not annotations)."""
    import inspect

    parameters = self._agentgym_relay.ask(self, "signature")
    kind_of: Any = type(inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not isinstance(parameters, list) or not all(isinstance(p, list) and len(p) == 4 for p in parameters):
        raise CandidateFailure("a malformed signature")
    try:
        return inspect.Signature([inspect.Parameter(str(name), kind_of(kind),
                                                    default=default if has else inspect.Parameter.empty)
                                  for name, kind, has, default in parameters])
    except (TypeError, ValueError) as e:
        raise CandidateFailure(f"a malformed signature: {e}") from None


def _enter(self: Remote) -> Any:
    return self._agentgym_relay.ask(self, "getattr", name="__enter__")()


def _exit(self: Remote, *exc: Any) -> Any:
    return self._agentgym_relay.ask(self, "getattr", name="__exit__")(*[None] * 3)


ABILITIES: dict[str, dict[str, Any]] = {
    "c": {"__call__": _call, "__signature__": property(_signature)},
    "i": {"__iter__": lambda self: self._agentgym_relay.ask(self, "iter")},
    "n": {"__next__": lambda self: self._agentgym_relay.ask(self, "next")},
    "l": {"__len__": lambda self: self._agentgym_relay.ask(self, "len")},
    "g": {"__getitem__": lambda self, key: self._agentgym_relay.ask(self, "getitem", (key,))},
    "o": {"__contains__": lambda self, item: self._agentgym_relay.ask(self, "contains", (item,))},
    "e": {"__enter__": _enter, "__exit__": _exit},
}
"""The special methods a stand-in has for each ability letter of the real object's type (``submission._abilities``)."""
_STAND_INS: dict[str, type[Remote]] = {}


def _stand_in(abilities: str) -> type[Remote]:
    """The proxy class for a real object whose type has ``abilities``: ``callable``, ``iter``,
    ``isinstance(x, Iterator)``, ``hash`` and ``with`` answer as they would for the real object, not
    yes for everything."""
    key = "".join(sorted(set(abilities) & set(ABILITIES) | ({"h"} & set(abilities))))
    found = _STAND_INS.get(key)
    if found is None:
        methods: dict[str, Any] = {"__slots__": (), "__doc__": vars(Remote)["__doc__"]}
        for letter in key:
            methods.update(ABILITIES.get(letter, {}))
        if "h" not in key:
            methods["__hash__"] = None
        found = _STAND_INS[key] = type("Remote", (Remote,), methods)
    return found


def _imported_class(module: Any, qualname: Any) -> type[BaseException] | None:
    """``module.qualname`` when the tests (or the prompt) imported that module and it names an exception
    class; nothing is imported for it, and the grader's own modules are not looked in."""
    if not (isinstance(module, str) and isinstance(qualname, str)) or module.startswith(("agentgym", "builtins")):
        return None
    found: Any = sys.modules.get(module)
    for part in qualname.split(".") if found is not None else ():
        found = getattr(found, part, None) if part.isidentifier() else None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def _failure(message: dict[str, Any], reply_bytes: int) -> str:
    """Why a reply carries no outcome: the host's word for a call that failed, or the submission's
    for a value it could not send."""
    if type(message.get("too_big")) is int:
        return (f"the call's reply (its return value, what it printed and changed) takes {message['too_big']} "
                f"bytes, over the {reply_bytes} one call may return")
    for key in ("failed", "unsendable"):
        if isinstance(message.get(key), str):
            return str(message[key])[:MESSAGE_CHARS]
    raise plain.NotPlain("an unknown reply")


def _run_prompt(prompt: str, namespace: dict[str, Any]) -> None:
    """Define the prompt's helpers (task data, not the submission's); a prompt that is not code gives its imports."""
    try:
        exec(compile(prompt, "<prompt>", "exec", dont_inherit=True), namespace)
        return
    except BaseException:
        pass
    for line in prompt.splitlines():
        if line.startswith(("import ", "from ")):
            try:
                exec(compile(line, "<prompt>", "exec", dont_inherit=True), namespace)
            except BaseException:
                pass


def _describe(error: BaseException) -> str:
    """``error`` as its class and message; only its class when the message cannot be had (a test's
    ``assert x, x`` with ``x`` a proxy whose ``str`` call fails)."""
    if isinstance(error, (CandidateFailure, RelayFailure)):
        return f"{type(error).__name__}: {error}"[:ERROR_CHARS]
    try:
        return "".join(traceback.format_exception_only(type(error), error)).strip()[:ERROR_CHARS]
    except BaseException:
        return f"{type(error).__name__}: (its message could not be read)"[:ERROR_CHARS]


def _result(source: str, error: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {"test": source[:SOURCE_CHARS], "passed": error is None}
    if error is not None:
        result["error"] = error
    return result
