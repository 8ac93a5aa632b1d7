"""The pieces of the verifier that need no sandbox: the plain-data codec and the reading of a task's tests."""

from __future__ import annotations

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
