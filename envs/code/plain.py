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
"""

from __future__ import annotations

import base64
import json
import math

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


def dumps(value: Any) -> str:
    """``value`` encoded as ASCII JSON text."""
    return json.dumps(encode(value), allow_nan=False)


def decode(data: Any, refs: Refs | None = None, handles: Callable[[Any], Any] | None = None) -> Any:
    """The plain value ``data`` (parsed JSON) encodes.

    Args:
        refs: Containers met so far, which ``{"ref": n}`` may name; those built here are added.
        handles: Gives the stand-in for ``{"handle": n}``; None: a handle is not well-formed.

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
        return _filled([], refs, lambda out: out.extend(decode(v, refs, handles) for v in data))
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
        if tag == "tuple":
            return _built(refs, lambda: tuple(decode(v, refs, handles) for v in _items(payload)))
        if tag == "frozenset":
            return _built(refs, lambda: frozenset(decode(v, refs, handles) for v in _items(payload)))
        if tag == "set":
            return _filled(set(), refs, lambda out: out.update(decode(v, refs, handles) for v in _items(payload)))
        if tag == "dict":
            return _filled({}, refs, lambda out: out.update(
                (decode(k, refs, handles), decode(v, refs, handles)) for k, v in (_pair(p) for p in _items(payload))))
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
