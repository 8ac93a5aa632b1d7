"""Plain data as JSON text: the only form in which values cross between a submission and its grader.

Runs on both sides of the boundary (stdlib only, Python 3.9+): the grader encodes the arguments of
each call and decodes the submission's return value; the submission's sandbox does the opposite.
:func:`decode` builds nothing but ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``,
``bytes``, ``bytearray``, ``list``, ``tuple``, ``dict``, ``set`` and ``frozenset`` of exactly those
types, so a value from the submission carries no code of its own: an object whose ``__eq__`` always
returns True, or an ``int`` subclass that lies about equality, cannot be rebuilt on the grader's side.

JSON arrays are lists; every other kind is a one-key object: ``{"tuple": [...]}``, ``{"set": [...]}``,
``{"frozenset": [...]}``, ``{"dict": [[key, value], ...]}`` (any hashable keys, in order),
``{"bytes": base64}``, ``{"bytearray": base64}``, ``{"complex": [real, imag]}``,
``{"float": "inf" | "-inf" | "nan"}`` and ``{"int": hex}`` for integers past 64 bits (JSON's own
integers stay small enough to parse fast).

Two more kinds keep what Python's call semantics need across the boundary (envs/code/grader.py):

- ``{"ref": n}``: the same object as the ``n``-th container (list, dict, set, frozenset, tuple,
  bytearray) met so far in one call's stream of encodings (:class:`Refs`), so a function that returns
  its argument returns *that* object, and one that mutates it has its changes copied back into the
  test's object; an alias or a cycle crosses as one too.
- ``{"handle": n}``: an object that is not plain data (a generator, an instance of a class the task
  asks for), kept where it lives; the other side stands a proxy for it (``opaque`` and ``handles``).

And two carry a value of a subclass of a plain type, or an enum member, with its class, so that an
``OrderedDict`` is not compared as a dict, a ``Counter`` keeps its zeros, a namedtuple its fields and
an ``IntEnum`` its name (:func:`carried`, rebuilt by :func:`decode` given a ``namespace``):

- ``{"inst": [classes, storage, items, attrs, extra]}``: ``classes`` the value's MRO as
  :func:`origins` names it, ``storage`` the plain (or ``collections``) type holding its data,
  ``items`` that data, ``attrs`` its instance attributes, ``extra`` a namedtuple's fields, a deque's
  ``maxlen`` or a defaultdict's factory. It is rebuilt as the class a name of the receiving side
  reaches by identity (a built-in, the prompt's or the test's, ``collections``'), else as a class of
  its name made under the nearest such base (a namedtuple with its fields).
- ``{"enum": [classes, name, value]}``: the member of the enum class reached so, else of one made
  with that member.
"""

from __future__ import annotations

import base64
import builtins
import collections
import json
import math
import sys

TYPE_CHECKING = False  # typing is not imported at run time: the sandboxes would pay for it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

BIG = 1 << 63
CONTAINERS = (list, dict, set, frozenset, tuple, bytearray)  # what a ``ref`` may stand for
_UNBUILT = object()  # a tuple or frozenset being decoded: its own parts cannot refer to it


class NotPlain(TypeError):
    """A value that has no plain-data form, or text that is not a well-formed encoding."""


class Refs:
    """The containers met so far in one call's encodings, in order, on either side of the boundary.

    Both sides meet them in the same order (the order of the JSON), so an index names the same
    object on both: the grader's original where the submission's sandbox holds its copy.
    """

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.objects: list[Any] = []

    def add(self, value: Any) -> int:
        self.index[id(value)] = len(self.objects)
        self.objects.append(value)
        return len(self.objects) - 1


def encode(value: Any, refs: Refs | None = None, opaque: Callable[[Any], Any] | None = None,
           exact: bool = False) -> Any:
    """``value`` as JSON-ready data.

    Args:
        refs: Containers already met (a repeat becomes ``{"ref": n}``); None: every one is copied.
        opaque: Gives what is not plain data a JSON-ready stand-in (``{"handle": n}``); None: refused.
        exact: Subclasses of plain types go to ``opaque`` too; else they are encoded as their base type.

    Raises:
        NotPlain: Something in ``value`` is not plain data and ``opaque`` refused it.
        RecursionError: ``value`` contains itself (without ``refs``), or nests deeper than the recursion limit.
    """
    if value is None or value is True or value is False:
        return value
    kind = type(value)
    if exact and kind not in _EXACT:
        return _opaque(value, opaque)
    if refs is not None and isinstance(value, CONTAINERS):
        seen = refs.index.get(id(value))
        if seen is not None:
            return {"ref": seen}
        refs.add(value)
    if isinstance(value, int):
        number = int.__index__(value)
        return number if -BIG <= number < BIG else {"int": hex(number)}
    if isinstance(value, float):
        real = float.__float__(value)
        return real if math.isfinite(real) else {"float": repr(real)}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [encode(v, refs, opaque, exact) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"tuple": [encode(v, refs, opaque, exact) for v in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"dict": [[encode(k, refs, opaque, exact), encode(v, refs, opaque, exact)]
                         for k, v in dict.items(value)]}
    if isinstance(value, frozenset):
        return {"frozenset": [encode(v, refs, opaque, exact) for v in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"set": [encode(v, refs, opaque, exact) for v in set.__iter__(value)]}
    if isinstance(value, bytearray):
        return {"bytearray": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, complex):
        return {"complex": [encode(value.real), encode(value.imag)]}
    return _opaque(value, opaque)


_EXACT = frozenset({int, float, str, list, tuple, dict, frozenset, set, bytearray, bytes, complex})


def _opaque(value: Any, opaque: Callable[[Any], Any] | None) -> Any:
    if opaque is None:
        raise NotPlain(f"a value of type {type(value).__name__} is not plain data")
    return opaque(value)


STORAGE: dict[str, type] = {kind.__name__: kind for kind in (
    collections.OrderedDict, collections.defaultdict, collections.deque, dict, list, set, frozenset, tuple,
    bytearray, bytes, str, int, float, complex)}
"""What holds the data of a value :func:`carried` carries, nearest first (``OrderedDict`` before ``dict``)."""
SCALARS = (bytes, str, int, float, complex)
MODULE_NAME = "solution"  # the solution's and the tests' ``__name__``: where a class made here claims to be from
VALUE_MODULES = ("collections",)  # whose classes a carried value may be rebuilt as, besides built-ins and globals


def origins(cls: Any, namespace: dict[str, Any]) -> list[list[str]]:
    """``cls``'s MRO, each class as ``[name, origin, module, qualname]``: where a program of the solution
    and its tests would find that very class, by identity, not by name. ``builtin``: it is the built-in of
    that name; ``global``: ``namespace`` binds its name to it (the prompt's class, or the module's own);
    ``module``: an importable module's (``json.JSONDecodeError``); ``local``: none of these (a class
    made inside a function), so no name of the other side refers to it."""
    out = []
    for c in getattr(cls, "__mro__", ())[:50]:
        name, module, qualname = _text(c.__name__), _text(getattr(c, "__module__", "")), _text(c.__qualname__)
        if getattr(builtins, name, None) is c:
            origin = "builtin"
        elif namespace.get(name) is c:
            origin = "global"
        elif module != MODULE_NAME and _find(module, qualname) is c:
            origin = "module"
        else:
            origin = "local"
        out.append([name, origin, module, qualname])
    return out


def _find(module: str, qualname: str) -> Any:
    found: Any = sys.modules.get(module)
    for part in qualname.split(".") if found is not None else ():
        found = getattr(found, part, None) if part.isidentifier() else None
    return found


def _text(value: Any) -> str:
    return value[:200] if isinstance(value, str) else ""


def carried(value: Any, namespace: dict[str, Any], refs: Refs | None, opaque: Callable[[Any], Any]) -> Any:
    """``value`` as an ``inst`` or ``enum`` encoding (see the module docstring), or None when it is
    neither an enum member nor of a subclass of a plain type (the caller gives it a handle).

    ``namespace`` is this side's module (the solution's, or the tests'), for :func:`origins`.
    """
    kind = type(value)
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(value, enum.Enum):
        return {"enum": [origins(kind, namespace), value.name, encode(value.value, refs, opaque, True)]}
    storage: Any = next((s for s in STORAGE.values() if isinstance(value, s)), None)
    if storage is None:
        return None
    if refs is not None:
        seen = refs.index.get(id(value))
        if seen is not None:
            return {"ref": seen}
        refs.add(value)
    def part(v: Any) -> Any:
        return encode(v, refs, opaque, True)
    if storage in SCALARS:
        items = encode(storage(value) if storage is not complex else complex(value.real, value.imag))
    elif issubclass(storage, dict):
        items = [[part(k), part(v)] for k, v in dict.items(value)]
    else:
        items = [part(v) for v in storage.__iter__(value)]
    state = getattr(value, "__dict__", None)
    attrs = [[k, part(v)] for k, v in dict.items(state) if type(k) is str] if isinstance(state, dict) else []
    extra: Any = None
    if storage is collections.deque:
        extra = value.maxlen
    elif storage is collections.defaultdict and value.default_factory is not None:
        factory = value.default_factory
        extra = ({"class": origins(factory, namespace)} if isinstance(factory, type)
                 and origins(factory, namespace)[0][1] != "local" else part(factory))
    elif storage is tuple:
        extra = _fields(kind)
    return {"inst": [origins(kind, namespace), storage.__name__, items, attrs, extra]}


def _fields(kind: Any) -> list[str] | None:
    fields: Any = getattr(kind, "_fields", None)
    named = isinstance(fields, tuple) and all(isinstance(f, str) and f.isidentifier() for f in fields)
    return list(fields) if named else None


def _reached(classes: Any, namespace: dict[str, Any], root: type, modules: tuple[str, ...] | None) -> tuple[Any, int]:
    """The first class of ``classes`` (as :func:`origins` names them) that a name of this side reaches and
    that is a subclass of ``root``, and its index. ``modules``: the modules whose classes may be
    reached (None: any module the tests imported)."""
    if not isinstance(classes, list) or not classes or not all(
            isinstance(c, list) and len(c) == 4 and all(isinstance(p, str) for p in c) for c in classes):
        raise NotPlain("a malformed class")
    for index, (name, origin, module, qualname) in enumerate(classes[:50]):
        found: Any = None
        if origin == "builtin":
            found = getattr(builtins, name, None)
        elif origin == "global":
            found = namespace.get(name)
        if (found is None and origin in ("global", "module") and (modules is None or module in modules)
                and not module.startswith("agentgym")):  # a name the other side's module bound, imported here
            found = _find(module, qualname)
        if isinstance(found, type) and issubclass(found, root):
            return found, index
    raise NotPlain(f"no class of {classes[0][0]!r} is a {root.__name__} here")


def _instance(payload: Any, refs: Refs | None, handles: Callable[[Any], Any] | None,
              namespace: dict[str, Any]) -> Any:
    parts: list[Any] = _items(payload) if len(_items(payload)) == 5 else [None] * 5
    classes, storage_name, items, attrs, extra = parts
    storage: Any = STORAGE.get(storage_name) if isinstance(storage_name, str) else None
    if storage is None:
        raise NotPlain("a malformed instance")
    found, index = _reached(classes, namespace, storage, VALUE_MODULES)
    name = classes[0][0] if classes[0][0].isidentifier() else "Value"
    cls: Any = found
    if index != 0 and storage is tuple and isinstance(extra, list) and found is tuple:
        cls = collections.namedtuple(name, [str(f) for f in extra])  # type: ignore[misc, no-redef]
        cls.__module__ = MODULE_NAME
    elif index != 0:
        cls = type(name, (found,), {"__module__": MODULE_NAME})
    def part(v: Any) -> Any:
        return decode(v, refs, handles, namespace)
    if refs is not None:
        refs.objects.append(_UNBUILT)
        at = len(refs.objects) - 1
    if storage in SCALARS:
        value = storage.__new__(cls, decode(items))
    elif storage in (tuple, frozenset):
        value = storage.__new__(cls, [part(v) for v in _items(items)])
    else:
        value = cls.__new__(cls)
        if storage is collections.defaultdict:
            classed = isinstance(extra, dict) and "class" in extra  # else a handle, decoded after the items
            collections.defaultdict.__init__(value, _reached(extra["class"], namespace, object, None)[0]
                                             if classed else None)
        elif storage is collections.deque:
            collections.deque.__init__(value, (), extra if type(extra) is int and extra >= 0 else None)
        elif storage is collections.OrderedDict:
            collections.OrderedDict.__init__(value)
        if issubclass(storage, dict):
            setitem = collections.OrderedDict.__setitem__ if storage is collections.OrderedDict else dict.__setitem__
            for pair in _items(items):
                k, v = _pair(pair)
                setitem(value, part(k), part(v))
        elif storage is collections.deque:
            collections.deque.extend(value, [part(v) for v in _items(items)])
        else:
            add: Any = {list: list.extend, set: set.update, bytearray: bytearray.extend}[storage]
            add(value, [part(v) for v in _items(items)])
    for pair in _items(attrs):
        k, v = _pair(pair)
        if isinstance(k, str) and k.isidentifier():
            vars(value)[k] = part(v)
    if storage is collections.defaultdict and extra is not None and not (isinstance(extra, dict) and "class" in extra):
        value.default_factory = part(extra)
    if refs is not None:
        refs.objects[at] = value
        refs.index[id(value)] = at
    return value


def _member(payload: Any, refs: Refs | None, handles: Callable[[Any], Any] | None,
            namespace: dict[str, Any]) -> Any:
    import enum

    parts: list[Any] = _items(payload) if len(_items(payload)) == 3 else [None] * 3
    classes, name, encoded = parts
    value = decode(encoded, refs, handles, namespace)
    found: Any
    found, index = _reached(classes, namespace, enum.Enum, None)
    if index != 0:
        made = classes[0][0] if classes[0][0].isidentifier() else "Enum"
        found = found(made, [(name, value)], module=MODULE_NAME)
    return found[name] if isinstance(name, str) and name in found.__members__ else found(value)


def dumps(value: Any) -> str:
    """``value`` encoded as ASCII JSON text."""
    return json.dumps(encode(value), allow_nan=False)


def decode(data: Any, refs: Refs | None = None, handles: Callable[[Any], Any] | None = None,
           namespace: dict[str, Any] | None = None) -> Any:
    """The plain value ``data`` (parsed JSON) encodes.

    Args:
        refs: Containers met so far, which ``{"ref": n}`` may name; those built here are added.
        handles: Gives the stand-in for ``{"handle": n}``; None: a handle is not well-formed.
        namespace: This side's module, whose classes ``inst`` and ``enum`` values may be rebuilt as;
            None: those are not well-formed.

    Raises:
        NotPlain: ``data`` is not a well-formed encoding (an unknown tag, an unhashable key...).
        RecursionError: ``data`` nests deeper than the recursion limit.
    """
    if data is None or isinstance(data, (bool, str)):
        return data
    if isinstance(data, int):
        return int(data)
    if isinstance(data, float):
        return float(data)
    if isinstance(data, list):
        return _filled([], refs, lambda out: out.extend(decode(v, refs, handles, namespace) for v in data))
    if not isinstance(data, dict) or len(data) != 1:
        raise NotPlain(f"not a plain-data encoding: {type(data).__name__}")
    ((tag, payload),) = data.items()
    try:
        if tag == "ref" and refs is not None and type(payload) is int and 0 <= payload < len(refs.objects):
            found = refs.objects[payload]
            if found is _UNBUILT:
                raise NotPlain("a tuple or frozenset that contains itself")
            return found
        if tag == "handle" and handles is not None:
            return handles(payload)
        if tag == "inst" and namespace is not None:
            return _instance(payload, refs, handles, namespace)
        if tag == "enum" and namespace is not None:
            return _member(payload, refs, handles, namespace)
        if tag == "tuple":
            return _built(refs, lambda: tuple(decode(v, refs, handles, namespace) for v in _items(payload)))
        if tag == "frozenset":
            return _built(refs, lambda: frozenset(decode(v, refs, handles, namespace) for v in _items(payload)))
        if tag == "set":
            return _filled(set(), refs, lambda out: out.update(
                decode(v, refs, handles, namespace) for v in _items(payload)))
        if tag == "dict":
            return _filled({}, refs, lambda out: out.update(
                (decode(k, refs, handles, namespace), decode(v, refs, handles, namespace))
                for k, v in (_pair(p) for p in _items(payload))))
        if tag in ("bytes", "bytearray") and isinstance(payload, str):
            raw = base64.b64decode(payload.encode("ascii"), validate=True)
            return raw if tag == "bytes" else _filled(bytearray(raw), refs, lambda out: None)
        if tag == "complex":
            real, imag = _pair(payload)
            return complex(_number(decode(real)), _number(decode(imag)))
        if tag == "float" and payload in ("inf", "-inf", "nan"):
            return float(payload)
        if tag == "int" and isinstance(payload, str):
            return int(payload, 16)
    except (TypeError, ValueError) as e:  # unhashable keys, bad base64, bad hex
        if isinstance(e, NotPlain):
            raise
        raise NotPlain(f"a malformed {tag!r} encoding: {e}") from None
    raise NotPlain(f"not a plain-data encoding: tag {tag!r}")


def _filled(out: Any, refs: Refs | None, fill: Callable[[Any], None]) -> Any:
    """A mutable container, known to ``refs`` before its parts are decoded (they may refer to it)."""
    if refs is not None:
        refs.add(out)
    fill(out)
    return out


def _built(refs: Refs | None, build: Callable[[], Any]) -> Any:
    """An immutable container, which takes its place in ``refs`` before its parts (the encoder's order)."""
    if refs is None:
        return build()
    refs.objects.append(_UNBUILT)
    at = len(refs.objects) - 1
    value = build()
    refs.objects[at] = value
    refs.index[id(value)] = at
    return value


def loads(text: str) -> Any:
    """The plain value the JSON ``text`` encodes.

    Raises:
        NotPlain: ``text`` is not JSON or not a well-formed encoding.
        RecursionError: It nests deeper than the recursion limit.
    """
    try:
        data = json.loads(text)
    except ValueError as e:
        raise NotPlain(f"not JSON: {e}") from None
    return decode(data)


def _items(payload: Any) -> list[Any]:
    if not isinstance(payload, list):
        raise NotPlain(f"expected a list, got {type(payload).__name__}")
    return payload


def _pair(payload: Any) -> tuple[Any, Any]:
    if not isinstance(payload, list) or len(payload) != 2:
        raise NotPlain("expected a [key, value] pair")
    return payload[0], payload[1]


def _number(value: Any) -> float:
    if type(value) not in (int, float):
        raise NotPlain("a complex number's parts must be numbers")
    return value
