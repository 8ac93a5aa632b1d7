"""The pieces of the verifier that need no sandbox: the plain-data codec and the reading of a task's tests."""

from __future__ import annotations

import json
import math

import pytest

from agentgym.envs.code import plain
from agentgym.envs.code.testplan import TaskError, plan


class Liar(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


VALUES = [
    None, True, False, 0, -7, 1 << 70, -(1 << 90), 0.1, -0.0, math.inf, -math.inf, "", "naïve \ud800", b"\x00\xff",
    [1, [2, [3]]], (1, "a"), (), {"a": 1, 2: [3], (4, 5): None, None: {1.5}}, {1, 2}, frozenset({"x"}), 3 - 4j,
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_plain_values_round_trip_with_their_exact_types(value):
    back = plain.loads(plain.dumps(value))
    assert back == value and type(back) is type(value)


def test_nan_round_trips():
    assert math.isnan(plain.loads(plain.dumps(float("nan"))))


def test_subclasses_cross_as_their_base_type_and_other_objects_not_at_all():
    assert type(plain.loads(plain.dumps(Liar(3)))) is int and plain.loads(plain.dumps(Liar(3))) != 4
    for value in (object(), len, (x for x in []), [1, object()], {"a": print}, range(3)):
        with pytest.raises(plain.NotPlain):
            plain.dumps(value)
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(RecursionError):
        plain.dumps(loop)


@pytest.mark.parametrize("text", [
    "not json", '{"object": 1}', '{"tuple": 1}', '{"set": [[1]]}', '{"dict": [[1]]}', '{"dict": [[[1], 2]]}',
    '{"bytes": "%%%"}', '{"int": "xyz"}', '{"float": "1.5"}', '{"complex": ["a", 1]}', '{"tuple": [], "set": []}',
    "1" * 5000,
])
def test_malformed_encodings_are_refused(text):
    with pytest.raises(plain.NotPlain):
        plain.loads(text)


def test_deep_nesting_is_refused_not_crashing():
    with pytest.raises(RecursionError):
        plain.loads("[" * 100_000 + "]" * 100_000)


def test_refs_keep_aliases_cycles_and_the_original_objects():
    """Containers are numbered in the order both sides meet them: an alias or a cycle crosses as one
    object, and a reply's ``{"ref": n}`` is the sender's original."""
    inner = [1]
    loop: list = []
    loop.append(loop)
    value = [inner, inner, (inner,), loop, bytearray(b"ab")]
    sent = plain.Refs()
    data = json.loads(json.dumps(plain.encode(value, sent)))
    got = plain.decode(data, plain.Refs())
    assert got[0] is got[1] is got[2][0] and got[3][0] is got[3] and type(got[4]) is bytearray
    assert plain.decode({"ref": 1}, sent) is inner  # back on the sender's side: its own object
    for bad in ({"ref": 99}, {"ref": "0"}, {"tuple": [{"ref": 0}]}):
        with pytest.raises(plain.NotPlain):
            plain.decode(bad, plain.Refs())


def test_exact_encoding_hands_what_is_not_plain_to_opaque():
    handles: list[object] = []

    def opaque(value: object) -> dict:
        handles.append(value)
        return {"handle": len(handles) - 1}

    assert plain.encode([Liar(3), (x for x in [])], opaque=opaque, exact=True) == [{"handle": 0}, {"handle": 1}]
    assert plain.encode(Liar(3), opaque=opaque) == 3  # not exact: a subclass as its base
    assert plain.decode({"handle": 1}, handles=lambda n: handles[n]) is handles[1]


def test_a_plan_splits_check_into_statements_and_knows_which_test():
    test = '''
import math

def helper(f, x):
    assert f(x) == x

def check(candidate):
    """Docstring."""
    xs = [1, 2]
    assert True, "cannot fail"
    try:
        assert candidate(-1) is None
    except ValueError:
        pass
    x = 1; assert (candidate(x)
                   == 1)
    helper(candidate, 2)
    if candidate(3) != 3:
        raise AssertionError("three")
    @staticmethod
    def decorated():
        assert False
'''
    result = plan(test, "f")
    assert result.parameter == "candidate"
    shown = [(s.source.splitlines()[0], s.is_test) for s in result.statements]
    assert shown == [
        ('"""Docstring."""', False), ("xs = [1, 2]", False), ('assert True, "cannot fail"', False), ("try:", True),
        ("x = 1", False), ("assert (candidate(x)", True), ("helper(candidate, 2)", True),
        ("if candidate(3) != 3:", True), ("@staticmethod", False),
    ]
    for statement in result.statements:
        compile(statement.code, "<test>", "exec")
    assert "def helper" in result.setup and "def check" not in result.setup and "import math" in result.setup


@pytest.mark.parametrize(("test", "reason"), [
    ("x = 1", "defines no check"),
    ("def check(candidate):\n    pass", "has no test statement"),
    ("def check(candidate):\n    assert True\n    candidate(1)", "has no test statement"),
    ("def check(candidate):\n    assert 1 == 1", "never uses the candidate"),
    ("def check(candidate):\n    return\n    assert candidate(1)", "cannot run on its own"),
    ("def check(candidate:", "does not parse"),
    ("def check(candidate):\n    assert candidate(lambda x: x, [1]) == [1]", "passes the candidate a function"),
    ("def key(x):\n    return -x\n\ndef check(candidate):\n    assert candidate([1, 2], key=key) == [2, 1]",
     "passes the candidate a function"),
    ("def check(candidate):\n    assert isinstance(candidate(), candidate)", "uses the candidate as a type"),
    ("def check(candidate):\n    try:\n        candidate(1)\n    except candidate:\n        pass\n"
     "    assert candidate(2)", "catches the candidate as an exception class"),
    (None, "must be strings"),
    (["def check(c): assert c(1)"], "must be strings"),
])
def test_a_test_that_cannot_grade_is_refused_with_its_reason(test, reason):
    with pytest.raises(TaskError, match=reason):
        plan(test, "f")


def carry(value: object, sender: dict, receiver: dict) -> object:
    """``value`` sent with its class from a module ``sender`` to one ``receiver``, as the relay does."""
    refs = plain.Refs()

    def opaque(v: object) -> object:
        found = plain.carried(v, sender, refs, opaque)
        assert found is not None
        return found

    text = json.dumps(plain.encode(value, refs, opaque, exact=True))
    return plain.decode(json.loads(text), plain.Refs(), None, receiver)


def test_subclasses_of_plain_types_and_enum_members_cross_with_their_classes():
    import collections
    import enum

    point = collections.namedtuple("Point", "x y")
    color = enum.IntEnum("Color", "RED GREEN")
    both = {"Point": point, "Color": color}
    ordered = carry(collections.OrderedDict([(2, "b"), (1, "a")]), {}, {})
    assert type(ordered) is collections.OrderedDict and list(ordered) == [2, 1]
    counted = carry(collections.Counter("aab"), {}, {})
    assert type(counted) is collections.Counter and counted.most_common(1) == [("a", 2)]
    defaults = carry(collections.defaultdict(list, {1: [2]}), {}, {})
    assert defaults[5] == [] and type(defaults) is collections.defaultdict
    ring = carry(collections.deque([1, 2], maxlen=2), {}, {})
    assert type(ring) is collections.deque and ring.maxlen == 2
    assert type(carry(point(1, 2), both, both)) is point  # the receiver's own class, by the name it is bound to
    assert carry(color.GREEN, both, both) is color.GREEN
    alone = carry(point(1, 2), both, {})  # a class the receiver has no name for: one like it, made there
    assert type(alone) is not point and type(alone).__name__ == "Point" and alone.y == 2 and alone == (1, 2)
    member = carry(color.GREEN, both, {})
    assert member.name == "GREEN" and member == 2
    nested = carry([ordered, ordered], {}, {})
    assert nested[0] is nested[1]


def test_a_subclass_of_the_senders_own_is_rebuilt_with_the_base_types_behaviour_only():
    liar = carry(Liar(3), {"Liar": Liar}, {})  # its always-true __eq__ stays where it was defined
    assert type(liar) is not Liar and type(liar).__name__ == "Liar"
    assert liar != 4 and liar == 3
