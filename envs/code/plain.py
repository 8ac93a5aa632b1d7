"""Plain data as JSON text: the only form in which values cross between a submission and its grader.

Runs on both sides of the boundary (stdlib only, Python 3.8+): the grader encodes the arguments of
each call and decodes the submission's return value; the submission's sandbox does the opposite.
:func:`decode` builds nothing but ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``,
``bytes``, ``list``, ``tuple``, ``dict``, ``set`` and ``frozenset`` of exactly those types, so a
value from the submission carries no code of its own: an object whose ``__eq__`` always returns
True, or an ``int`` subclass that lies about equality, cannot be rebuilt on the grader's side.

JSON arrays are lists; every other kind is a one-key object: ``{"tuple": [...]}``, ``{"set": [...]}``,
``{"frozenset": [...]}``, ``{"dict": [[key, value], ...]}`` (any hashable keys, in order),
``{"bytes": base64}``, ``{"complex": [real, imag]}``, ``{"float": "inf" | "-inf" | "nan"}`` and
``{"int": hex}`` for integers past 64 bits (JSON's own integers stay small enough to parse fast).
"""

from __future__ import annotations

import base64
import json
import math

TYPE_CHECKING = False  # typing is not imported at run time: the sandboxes would pay for it
if TYPE_CHECKING:
    from typing import Any

BIG = 1 << 63


class NotPlain(TypeError):
    """A value that has no plain-data form, or text that is not a well-formed encoding."""


def encode(value: Any) -> Any:
    """``value`` as JSON-ready data; subclasses of plain types are encoded as their base type.

    Raises:
        NotPlain: Something in ``value`` is not plain data (a function, an object, a generator...).
        RecursionError: ``value`` contains itself, or nests deeper than the recursion limit.
    """
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        number = int.__index__(value)
        return number if -BIG <= number < BIG else {"int": hex(number)}
    if isinstance(value, float):
        real = float.__float__(value)
        return real if math.isfinite(real) else {"float": repr(real)}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, list):
        return [encode(v) for v in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in dict.items(value)]}
    if isinstance(value, frozenset):
        return {"frozenset": [encode(v) for v in frozenset.__iter__(value)]}
    if isinstance(value, set):
        return {"set": [encode(v) for v in set.__iter__(value)]}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, complex):
        return {"complex": [encode(value.real), encode(value.imag)]}
    raise NotPlain(f"a value of type {type(value).__name__} is not plain data")


def dumps(value: Any) -> str:
    """``value`` encoded as ASCII JSON text."""
    return json.dumps(encode(value), allow_nan=False)


def decode(data: Any) -> Any:
    """The plain value ``data`` (parsed JSON) encodes.

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
        return [decode(v) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise NotPlain(f"not a plain-data encoding: {type(data).__name__}")
    ((tag, payload),) = data.items()
    try:
        if tag == "tuple":
            return tuple(decode(v) for v in _items(payload))
        if tag == "set":
            return {decode(v) for v in _items(payload)}
        if tag == "frozenset":
            return frozenset(decode(v) for v in _items(payload))
        if tag == "dict":
            return {decode(k): decode(v) for k, v in (_pair(p) for p in _items(payload))}
        if tag == "bytes" and isinstance(payload, str):
            return base64.b64decode(payload.encode("ascii"), validate=True)
        if tag == "complex":
            real, imag = _pair(payload)
            return complex(_number(decode(real)), _number(decode(imag)))
        if tag == "float" and payload in ("inf", "-inf", "nan"):
            return float(payload)
        if tag == "int" and isinstance(payload, str):
            return int(payload, 16)
    except (TypeError, ValueError) as e:  # unhashable keys, bad base64, bad hex
        raise NotPlain(f"a malformed {tag!r} encoding: {e}") from None
    raise NotPlain(f"not a plain-data encoding: tag {tag!r}")


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
