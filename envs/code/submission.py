"""Runs in the submission's sandbox: defines the submitted function, then answers requests with plain data.

Sent with :mod:`plain` into a fresh sandbox by :mod:`~agentgym.envs.code.grading` (stdlib only,
Python 3.9+). Nothing here is trusted: the submission runs in this process and can change any of it
(replace ``json.dumps``, print anything, walk the stack, exit). That is fine, because all the
grader accepts from here is one reply per request, rebuilt on its side as plain data; the worst a
submission can do to this code is choose what its own function appears to do, which it could do
anyway. Replies are printed as ``marker + JSON`` on a line so that the function's own prints
(captured while it runs) do not get in the way; the marker is not a secret.

A request (:meth:`Server.request`) is one operation on an object of the submission's: call it, get or
set an attribute, ``iter``, ``next``, ``len``, ``bool``, ``str``, ``repr``, ``in``, ``[]``. Object 0 is
the entry point; others are handles the grader was given for values that are not plain data (a
generator, an instance of the task's class). Its arguments are encoded with :class:`plain.Refs`, and
so is the reply, which is one of

- ``{"value": encoded}`` or ``{"raised": {"type", "bases", "message", "args", "attrs"}}`` (the
  exception's class name, the names of its MRO, its message, and its ``args`` and attributes where
  they are plain data), with what the operation did that a test in the same process would see:
  ``mutated`` (the new contents of each argument it changed), ``out`` and ``err`` (what it printed),
  ``stdin_read`` (characters it read of the stdin the test gave it) and ``warnings``;
- ``{"too_big": bytes}`` when all that is over what a reply may carry.
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback
import warnings

TYPE_CHECKING = False  # typing is not imported at run time: the sandboxes would pay for it
if TYPE_CHECKING:
    from typing import Any

try:
    from . import plain
except ImportError:  # in the submission's sandbox, where it is sent as a top-level module
    import agentgym_plain as plain  # type: ignore[import-not-found, no-redef]

MESSAGE_CHARS = 2000  # of an exception's message
MODULE_NAME = "solution"  # the solution's ``__name__``: not ``__main__``, so its main guard does not run
MUTABLE = (list, dict, set, bytearray)


class Server:
    """The submitted function, the objects handed out for it, and the way to operate on them.

    Args:
        job: ``{"marker", "prelude", "prompt", "solution", "entry_point", "reply_bytes"}``: the
            solution runs after the prompt (whose helpers it may use) or, when the prompt is not
            code, after ``prelude`` (the prompt's import lines); a solution that is only a function
            body (an ``IndentationError`` alone) is run appended to the prompt; ``reply_bytes``
            bounds a reply.
    """

    def __init__(self, job: dict[str, Any]) -> None:
        self.marker = job["marker"]
        self.reply_bytes = job["reply_bytes"]
        self.objects: list[Any] = [None]  # by handle; 0 is the entry point
        self.handles: dict[int, int] = {}  # id of a handed-out object -> its handle
        self.namespace: dict[str, Any] = {}  # the solution's module, where a test in its program would look names up
        out = sys.stdout, sys.stderr, sys.stdin
        sys.stdout = sys.stderr = open(os.devnull, "w")
        sys.stdin = io.StringIO("")
        try:
            self.objects[0] = _define(job, self.namespace)
            reply: dict[str, Any] = {"loaded": True}
        except BaseException as e:
            reply = {"error": "".join(traceback.format_exception_only(type(e), e)).strip()[:MESSAGE_CHARS]}
        finally:
            sys.stdout, sys.stderr, sys.stdin = out
        self._send(reply)

    def request(self, text: str) -> None:
        """Carry out the request in ``text`` (``{"op", "target", "args", "name"?, "stdin"?}``); print the reply."""
        spec = json.loads(text)
        refs = plain.Refs()
        call = plain.decode(spec["args"], refs, self._object, self.namespace)
        args, kwargs = call
        arguments = list(refs.objects)
        unseen = {id(call), id(args), id(kwargs)}  # the request's own wrappers: the function gets copies
        before = [_state(v) if isinstance(v, MUTABLE) and id(v) not in unseen else None for v in arguments]
        stdin = spec.get("stdin")
        printed: list[list[Any]] = []  # [stream, text] in the order written: 0 stdout, 1 stderr
        out, err = _Capture(0, printed), _Capture(1, printed)
        saved = sys.stdout, sys.stderr, sys.stdin
        sys.stdout, sys.stderr, sys.stdin = out, err, io.StringIO(stdin or "")
        given = sys.stdin
        caught: list[Any] = []
        value = failure = None
        try:
            with warnings.catch_warnings(record=True) as log:
                caught = log
                warnings.simplefilter("always")
                value = _operate(self._object(spec["target"]), spec["op"], spec.get("name"), args, kwargs)
        except BaseException as e:  # SystemExit and the rest: the grader decides what they mean
            failure = e
        finally:
            sys.stdout, sys.stderr, sys.stdin = saved
        try:
            reply: dict[str, Any] = {"raised": _exception(failure, self.namespace)} if failure is not None else {
                "value": plain.encode(value, refs, self._opaque(refs), exact=True)}
            mutated = [[index, _contents(arg, refs, self._opaque(refs))] for index, arg in enumerate(arguments)
                       if before[index] is not None and _state(arg) != before[index]]
        except RecursionError as e:
            reply, mutated = {"unsendable": f"a value nests too deeply to send: {e}"[:MESSAGE_CHARS]}, []
        if mutated:
            reply["mutated"] = mutated
        if printed:
            reply["printed"] = printed
        if stdin is not None and given.tell():
            reply["stdin_read"] = given.tell()
        if caught:
            reply["warnings"] = [[plain.origins(w.category, self.namespace), _message(w.message),
                                  w.lineno if type(w.lineno) is int else 0] for w in caught[:100]]
        self._send(reply)

    def _object(self, handle: Any) -> Any:
        if type(handle) is not int or not 0 <= handle < len(self.objects):
            raise plain.NotPlain(f"no object {handle!r}")
        return self.objects[handle]

    def _opaque(self, refs: plain.Refs) -> Any:
        """What stands for a value that is not of a plain type: the value with its class where
        :func:`plain.carried` can carry it (an ``OrderedDict``, a namedtuple, an enum member), else a handle."""
        def stand_in(value: Any) -> Any:
            found = plain.carried(value, self.namespace, refs, stand_in)
            return found if found is not None else self._handle(value)
        return stand_in

    def _handle(self, value: Any) -> dict[str, Any]:
        """A handle for a value that is not plain data: the same one for the same object."""
        handle = self.handles.get(id(value))
        if handle is None or self.objects[handle] is not value:
            handle = self.handles[id(value)] = len(self.objects)
            self.objects.append(value)
        return {"handle": [handle, type(value).__name__, _abilities(value)]}

    def _send(self, reply: dict[str, Any]) -> None:
        try:
            text = json.dumps(reply, allow_nan=False)
        except (ValueError, RecursionError) as e:
            text = json.dumps({"raised": {"classes": plain.origins(RecursionError, {}),
                                          "message": str(e)[:MESSAGE_CHARS], "args": None, "attrs": None}})
        if len(text) > self.reply_bytes:
            text = json.dumps({"too_big": len(text)})
        sys.stdout.write(self.marker + text + "\n")
        sys.stdout.flush()


def _define(job: dict[str, Any], namespace: dict[str, Any]) -> Any:
    """The entry point, defined in ``namespace`` as one program of prompt and solution would define it
    (``dont_inherit``: this module's ``from __future__`` must not change how the solution compiles)."""
    namespace["__name__"] = MODULE_NAME
    try:
        exec(compile(job["prompt"], "<prompt>", "exec", dont_inherit=True), namespace)
    except BaseException:
        namespace.clear()
        namespace["__name__"] = MODULE_NAME
        exec(compile(job["prelude"], "<prompt imports>", "exec", dont_inherit=True), namespace)
    try:
        exec(compile(job["solution"], "<submission>", "exec", dont_inherit=True), namespace)
    except IndentationError:
        exec(compile(job["prompt"] + job["solution"], "<submission>", "exec", dont_inherit=True), namespace)
    function = namespace.get(job["entry_point"])
    if not callable(function):
        raise NameError(f"the submission does not define {job['entry_point']!r}")
    return function


def _operate(target: Any, op: str, name: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if op == "call":
        return target(*args, **kwargs)
    if op == "getattr":
        return getattr(target, name)
    if op == "setattr":
        return setattr(target, name, args[0])
    if op == "delattr":
        return delattr(target, name)
    if op == "getitem":
        return target[args[0]]
    if op == "contains":
        return args[0] in target
    if op == "next":
        return next(target)
    if op == "signature":  # each parameter as [name, kind, has a default, the default]
        import inspect

        return [[p.name, int(p.kind), p.default is not p.empty, None if p.default is p.empty else p.default]
                for p in inspect.signature(target).parameters.values()]
    single: Any = {"iter": iter, "len": len, "bool": bool, "str": str, "repr": repr}.get(op)
    if single is None:
        raise plain.NotPlain(f"no operation {op!r}")
    return single(target)


ABILITIES = (("c", "__call__"), ("i", "__iter__"), ("n", "__next__"), ("l", "__len__"), ("g", "__getitem__"),
             ("o", "__contains__"), ("e", "__enter__"))


def _abilities(value: Any) -> str:
    """What the value's type can do that the grader's stand-in must answer alike (``callable``,
    ``Iterator``, ``hash``, ``with``...): a letter for each special method the type defines, and ``h``
    when its instances are hashable."""
    kind = type(value)
    found = "".join(letter for letter, method in ABILITIES if _special(kind, method) is not None)
    return found + ("h" if _special(kind, "__hash__") is not None else "")


def _special(kind: type, method: str) -> Any:
    """``method`` as the type defines it, looked up in its MRO as Python looks special methods up (not
    through the metaclass: a class has ``__call__`` from ``type``, its instances do not)."""
    for klass in kind.__mro__:
        if method in vars(klass):
            return vars(klass)[method]
    return None


def _state(value: Any) -> Any:
    """What a test could see of a mutable argument's contents, to tell whether the call changed them:
    its ``repr`` (which tells -0.0 from 0.0, and 1 from 1.0 and True) and which objects its parts that
    are containers are (a part replaced by an equal copy is a change, to a test that holds the part)."""
    if isinstance(value, bytearray):
        return bytes(value)
    parts = value.values() if isinstance(value, dict) else value
    try:
        return repr(value), [id(part) for part in parts if isinstance(part, plain.CONTAINERS)]
    except Exception:  # an int past str()'s digit limit, say: counted as changed, its contents sent back
        return object()


def _contents(value: Any, refs: plain.Refs, handle: Any) -> Any:
    """A mutable argument's new contents, encoded against ``refs`` (the argument itself is already in it)."""
    if isinstance(value, bytearray):
        return plain.encode(bytes(value))
    if isinstance(value, dict):
        return [[plain.encode(k, refs, handle, True), plain.encode(v, refs, handle, True)] for k, v in value.items()]
    return [plain.encode(v, refs, handle, True) for v in value]


class _Capture(io.StringIO):
    """A stream of the call's: what is written goes, in order, to the list shared by stdout and stderr,
    so the test's streams get the interleaving the candidate printed."""

    def __init__(self, stream: int, printed: list[list[Any]]) -> None:
        super().__init__()
        self.stream, self.printed = stream, printed

    def write(self, text: Any) -> int:
        written = super().write(text)
        if self.printed and self.printed[-1][0] == self.stream:
            self.printed[-1][1] += text
        else:
            self.printed.append([self.stream, str(text)])
        return written


def _exception(error: BaseException, namespace: dict[str, Any]) -> dict[str, Any]:
    return {"classes": plain.origins(type(error), namespace), "message": _message(error),
            "args": _plain_or_none(error.args), "attrs": _plain_or_none(_attributes(error))}


def _attributes(error: BaseException) -> dict[str, Any]:
    try:
        return {k: v for k, v in vars(error).items() if isinstance(k, str) and not k.startswith("__")}
    except TypeError:
        return {}


def _plain_or_none(value: Any) -> Any:
    try:
        return plain.encode(value)
    except BaseException:
        return None


def _message(error: Any) -> str:
    try:
        return str(error)[:MESSAGE_CHARS]
    except BaseException:
        return "(its message could not be read)"
