# ruff: noqa: E501  (solutions are source text: a line each reads best)
"""Task shapes as users write them (issue 33), each with honest and wrong solutions, for the differential test.

Where :mod:`semantics_corpus` holds what a test can observe of one call, these are the styles of
users' own task sets that plain Python grades and a relay got wrong: dataclasses in the solution and
in the test module, exception classes of the same name that are not the same class, output
interleaved between stdout and stderr, unittest-style assertions, a test file that ends by calling
``check``.
"""

from __future__ import annotations

from .semantics_corpus import Shape

SHAPES = [
    Shape(
        "a solution that defines a dataclass",
        "def total(xs: list) -> int:\n    \"\"\"The sum of xs.\"\"\"\n",
        """
def check(candidate):
    for n in range(20):
        assert candidate(list(range(n))) == n * (n - 1) // 2
""",
        "total",
        ("from dataclasses import dataclass, field\n\n@dataclass\nclass Acc:\n    total: int = 0\n    seen: list = field(default_factory=list)\n\n"
         "def total(xs):\n    a = Acc()\n    for x in xs:\n        a.total += x\n    return a.total\n",
         "from dataclasses import dataclass\n\n@dataclass\nclass Acc:\n    total: int = 0\n\n"
         "def total(xs):\n    assert Acc.__annotations__ == {'total': int}\n    return sum(xs, Acc().total)\n"),
        ("from dataclasses import dataclass\n\n@dataclass\nclass Acc:\n    total: int = 1\n\n"
         "def total(xs):\n    return sum(xs, Acc().total)\n",),
    ),
    Shape(
        "a prompt's dataclass and its annotations",
        "from dataclasses import dataclass\n\n\n@dataclass\nclass Item:\n    name: str\n    price: int\n\n\n"
        "def cheapest(rows: list) -> str:\n    \"\"\"rows are (name, price) pairs; build Items and return the cheapest's name.\"\"\"\n",
        """
def check(candidate):
    assert Item.__annotations__ == {"name": str, "price": int}
    for n in range(1, 20):
        rows = [(f"i{k}", (k * 7) % n) for k in range(n)]
        assert candidate(rows) == min(rows, key=lambda r: r[1])[0]
""",
        "cheapest",
        ("def cheapest(rows):\n    items = [Item(*r) for r in rows]\n    return min(items, key=lambda i: i.price).name\n",),
        ("def cheapest(rows):\n    items = [Item(*r) for r in rows]\n    return max(items, key=lambda i: i.price).name\n",),
    ),
    Shape(
        "a test module's own dataclass of cases",
        "def square(x: int) -> int:\n    \"\"\"x squared.\"\"\"\n",
        """
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    arg: int
    want: int


CASES = [Case(k, k * k) for k in range(-10, 11)]


def check(candidate):
    for case in CASES:
        assert candidate(case.arg) == case.want, case
""",
        "square",
        ("def square(x):\n    return x * x\n",),
        ("def square(x):\n    return abs(x) * x\n",),
    ),
    Shape(
        "an exception of a built-in's name that is not the built-in",
        "def parse_age(text: str) -> int:\n    \"\"\"The age in text; ValueError when it is not a number from 0 to 150.\"\"\"\n",
        """
def check(candidate):
    assert candidate("42") == 42
    for bad in ["x", "-1", "151", ""]:
        try:
            candidate(bad)
        except ValueError:
            pass
        else:
            raise AssertionError(bad)
""",
        "parse_age",
        ("def parse_age(text):\n    n = int(text)\n    if not 0 <= n <= 150:\n        raise ValueError(text)\n    return n\n",
         "class AgeError(ValueError):\n    pass\n\ndef parse_age(text):\n    if not text.isdigit() or int(text) > 150:\n        raise AgeError(text)\n    return int(text)\n"),
        ("def parse_age(text):\n    class ValueError(Exception):\n        pass\n    if not text.isdigit() or int(text) > 150:\n        raise ValueError(text)\n    return int(text)\n",
         "def parse_age(text):\n    ValueError = type('ValueError', (Exception,), {})\n    if not text.isdigit() or int(text) > 150:\n        raise ValueError(text)\n    return int(text)\n"),
    ),
    Shape(
        "a prompt's exception class, and one of the same name that is not it",
        "class InsufficientFunds(Exception):\n    pass\n\n\ndef withdraw(balance: int, amount: int) -> int:\n"
        "    \"\"\"The new balance; InsufficientFunds when amount exceeds it.\"\"\"\n",
        """
def check(candidate):
    assert candidate(10, 3) == 7
    for amount in range(11, 20):
        try:
            candidate(10, amount)
        except InsufficientFunds:
            pass
        else:
            raise AssertionError(amount)
""",
        "withdraw",
        ("def withdraw(balance, amount):\n    if amount > balance:\n        raise InsufficientFunds(amount)\n    return balance - amount\n",
         "class InsufficientFunds(Exception):\n    pass\n\ndef withdraw(balance, amount):\n    if amount > balance:\n        raise InsufficientFunds(amount)\n    return balance - amount\n"),
        ("def withdraw(balance, amount):\n    class InsufficientFunds(Exception):\n        pass\n    if amount > balance:\n        raise InsufficientFunds(amount)\n    return balance - amount\n",),
    ),
    Shape(
        "output interleaved between stdout and stderr",
        "def report(n: int) -> None:\n    \"\"\"Print 'ok i' on stdout for even i < n and 'bad i' on stderr for odd i, in order.\"\"\"\n",
        """
import io
from contextlib import redirect_stderr, redirect_stdout


def check(candidate):
    for n in range(1, 12):
        both = io.StringIO()
        with redirect_stdout(both), redirect_stderr(both):
            candidate(n)
        want = "".join(("ok %d\\n" if i % 2 == 0 else "bad %d\\n") % i for i in range(n))
        assert both.getvalue() == want, both.getvalue()
""",
        "report",
        ("import sys\ndef report(n):\n    for i in range(n):\n        if i % 2:\n            print('bad', i, file=sys.stderr)\n        else:\n            print('ok', i)\n",),
        ("import sys\ndef report(n):\n    for i in range(0, n, 2):\n        print('ok', i)\n    for i in range(1, n, 2):\n        print('bad', i, file=sys.stderr)\n",),
    ),
    Shape(
        "unittest-style assertions",
        "def clamp(x: int, lo: int, hi: int) -> int:\n    \"\"\"x limited to [lo, hi]; ValueError when lo > hi.\"\"\"\n",
        """
import unittest

tc = unittest.TestCase()


def check(candidate):
    for x in range(-5, 15):
        tc.assertEqual(candidate(x, 0, 9), min(max(x, 0), 9))
    tc.assertTrue(candidate(3, 3, 3) == 3)
    with tc.assertRaises(ValueError):
        candidate(1, 5, 2)
""",
        "clamp",
        ("def clamp(x, lo, hi):\n    if lo > hi:\n        raise ValueError((lo, hi))\n    return min(max(x, lo), hi)\n",),
        ("def clamp(x, lo, hi):\n    return min(max(x, lo), hi)\n",
         "def clamp(x, lo, hi):\n    if lo > hi:\n        raise ValueError\n    return max(x, lo)\n"),
    ),
    Shape(
        "a test file that ends by calling check",
        "def cube(x: int) -> int:\n    \"\"\"x cubed.\"\"\"\n",
        """
def check(candidate):
    for x in range(-6, 7):
        assert candidate(x) == x ** 3


check(cube)
""",
        "cube",
        ("def cube(x):\n    return x ** 3\n",),
        ("def cube(x):\n    return x * x * abs(x)\n",),
    ),
    Shape(
        "a LeetCode linked list",
        "class ListNode:\n    def __init__(self, val=0, next=None):\n        self.val = val\n        self.next = next\n\n\n"
        "def reverse_list(head):\n    \"\"\"Reverse the singly linked list; return its new head.\"\"\"\n",
        """
def build(values):
    head = None
    for v in reversed(values):
        head = ListNode(v, head)
    return head


def values(node):
    out = []
    while node is not None:
        out.append(node.val)
        node = node.next
    return out


def check(candidate):
    for n in range(8):
        assert values(candidate(build(list(range(n))))) == list(range(n))[::-1]
    node = build([1, 2])
    second = node.next
    assert candidate(node) is second
""",
        "reverse_list",
        ("def reverse_list(head):\n    prev = None\n    while head:\n        head.next, prev, head = prev, head, head.next\n    return prev\n",),
        ("def reverse_list(head):\n    vals = []\n    while head:\n        vals.append(head.val)\n        head = head.next\n"
         "    out = None\n    for v in vals:\n        out = ListNode(v, out)\n    return out\n",
         "def reverse_list(head):\n    return head\n"),
        grading="inprocess",
    ),
    Shape(
        "a key function and a comparator as arguments",
        "def order(xs: list, key) -> list:\n    \"\"\"xs sorted by key, stable.\"\"\"\n",
        """
import functools


def check(candidate):
    words = ["bb", "a", "ccc", "dd", "e"]
    assert candidate(words, key=len) == ["a", "e", "bb", "dd", "ccc"]
    assert candidate(words, key=functools.cmp_to_key(lambda a, b: (a > b) - (a < b))) == sorted(words)
    assert candidate(list(range(10)), key=lambda x: -x) == list(range(9, -1, -1))
""",
        "order",
        ("def order(xs, key):\n    return sorted(xs, key=key)\n",),
        ("def order(xs, key):\n    return sorted(xs)\n",),
        grading="inprocess",
    ),
    Shape(
        "a callback checked with a mock",
        "def notify_all(users: list, send) -> int:\n    \"\"\"Call send(user) once for each user; return how many.\"\"\"\n",
        """
from unittest import mock


def check(candidate):
    send = mock.Mock()
    assert candidate(["a", "b"], send) == 2
    send.assert_has_calls([mock.call("a"), mock.call("b")])
    assert send.call_count == 2
    empty = mock.Mock()
    candidate([], empty)
    empty.assert_not_called()
""",
        "notify_all",
        ("def notify_all(users, send):\n    for u in users:\n        send(u)\n    return len(users)\n",),
        ("def notify_all(users, send):\n    for u in users:\n        send(u)\n        send(u)\n    return len(users)\n",
         "def notify_all(users, send):\n    return len(users)\n"),
        grading="inprocess",
    ),
    Shape(
        "process state the candidate must leave as it was",
        "def shuffled(xs: list, seed: int) -> list:\n    \"\"\"A copy of xs shuffled with its own Random(seed); the global random state untouched.\"\"\"\n",
        """
import os
import random


def check(candidate):
    random.seed(7)
    state = random.getstate()
    cwd, env = os.getcwd(), dict(os.environ)
    out = candidate(list(range(20)), 3)
    assert sorted(out) == list(range(20))
    assert out == candidate(list(range(20)), 3)
    assert random.getstate() == state
    assert os.getcwd() == cwd and dict(os.environ) == env
""",
        "shuffled",
        ("import random\ndef shuffled(xs, seed):\n    out = list(xs)\n    random.Random(seed).shuffle(out)\n    return out\n",),
        ("import random\ndef shuffled(xs, seed):\n    random.seed(seed)\n    out = list(xs)\n    random.shuffle(out)\n    return out\n",
         "import os, random\ndef shuffled(xs, seed):\n    os.environ['SEEDED'] = '1'\n    out = list(xs)\n    random.Random(seed).shuffle(out)\n    return out\n"),
        grading="inprocess",
    ),
    Shape(
        "a randomised test seeded by the test",
        "def pick(xs: list) -> int:\n    \"\"\"random.choice(xs), from the global random state.\"\"\"\n",
        """
import random


def check(candidate):
    for seed in range(10):
        random.seed(seed)
        got = candidate([1, 2, 3, 4, 5])
        random.seed(seed)
        assert got == random.choice([1, 2, 3, 4, 5])
""",
        "pick",
        ("import random\ndef pick(xs):\n    return random.choice(xs)\n",),
        ("import random\ndef pick(xs):\n    return random.Random(0).choice(xs)\n",),
        grading="inprocess",
    ),
    Shape(
        "files the test writes and the candidate reads",
        "def count_lines(path: str) -> int:\n    \"\"\"How many lines the file at path has.\"\"\"\n",
        """
def check(candidate):
    for n in range(6):
        with open("data.txt", "w") as f:
            f.write("x\\n" * n)
        assert candidate("data.txt") == n
""",
        "count_lines",
        ("def count_lines(path):\n    with open(path) as f:\n        return sum(1 for _ in f)\n",),
        ("def count_lines(path):\n    with open(path) as f:\n        return f.read().count('x') + 1\n",),
        grading="inprocess",
    ),
    Shape(
        "a namedtuple and a test-defined class as arguments",
        "from collections import namedtuple\n\nPoint = namedtuple('Point', 'x y')\n\n\n"
        "def norm1(p) -> int:\n    \"\"\"|p.x| + |p.y|.\"\"\"\n",
        """
class Pt:
    def __init__(self, x, y):
        self.x, self.y = x, y


def check(candidate):
    for x in range(-3, 4):
        assert candidate(Point(x, 2 * x)) == 3 * abs(x)
        assert candidate(Pt(x, -x)) == 2 * abs(x)
""",
        "norm1",
        ("def norm1(p):\n    return abs(p.x) + abs(p.y)\n",),
        ("def norm1(p):\n    return abs(p.x + p.y)\n",),
        grading="inprocess",
    ),
    Shape(
        "a stateful object whose getter must not leak its list",
        "class Stack:\n    \"\"\"push(x), pop(), items() -> a copy of the items, bottom first.\"\"\"\n",
        """
def check(candidate):
    s = candidate()
    for k in range(5):
        s.push(k)
    view = s.items()
    view.append(99)
    assert s.items() == [0, 1, 2, 3, 4]
    assert s.pop() == 4 and s.items() == [0, 1, 2, 3]
    assert isinstance(s, Stack)
""",
        "Stack",
        ("class Stack:\n    def __init__(self):\n        self._xs = []\n    def push(self, x):\n        self._xs.append(x)\n"
         "    def pop(self):\n        return self._xs.pop()\n    def items(self):\n        return list(self._xs)\n",),
        ("class Stack:\n    def __init__(self):\n        self._xs = []\n    def push(self, x):\n        self._xs.append(x)\n"
         "    def pop(self):\n        return self._xs.pop()\n    def items(self):\n        return self._xs\n",),
        grading="inprocess",
    ),
    Shape(
        "callable() of a returned object",
        "def make_counter():\n    \"\"\"An object (not a function) with incr() and a value attribute, from 0.\"\"\"\n",
        """
def check(candidate):
    c = candidate()
    assert not callable(c)
    for k in range(1, 6):
        c.incr()
        assert c.value == k
""",
        "make_counter",
        ("class C:\n    def __init__(self):\n        self.value = 0\n    def incr(self):\n        self.value += 1\n\n"
         "def make_counter():\n    return C()\n",),
        ("def make_counter():\n    def c():\n        pass\n    c.value = 0\n    def incr():\n        c.value += 1\n"
         "    c.incr = incr\n    return c\n",),
    ),
    Shape(
        "an iterator, not only an iterable",
        "def evens(n: int):\n    \"\"\"An iterator over the even numbers below n.\"\"\"\n",
        """
from collections.abc import Iterator


def check(candidate):
    for n in range(8):
        it = candidate(n)
        assert isinstance(it, Iterator)
        assert hasattr(it, "__next__")
        assert list(it) == list(range(0, n, 2))
""",
        "evens",
        ("def evens(n):\n    return (k for k in range(0, n, 2))\n",
         "def evens(n):\n    return iter(range(0, n, 2))\n"),
        ("class Evens:\n    def __init__(self, n):\n        self.n = n\n    def __iter__(self):\n        return iter(range(0, self.n, 2))\n\n"
         "def evens(n):\n    return Evens(n)\n",),
    ),
    Shape(
        "a mutable value object must not be hashable",
        "def point(x: int, y: int):\n    \"\"\"A mutable point with x, y, equal by value, so not hashable.\"\"\"\n",
        """
def check(candidate):
    p = candidate(1, 2)
    assert (p.x, p.y) == (1, 2)
    try:
        {p: 1}
    except TypeError:
        pass
    else:
        raise AssertionError("hashable")
""",
        "point",
        ("class P:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n    def __eq__(self, other):\n"
         "        return (self.x, self.y) == (other.x, other.y)\n\ndef point(x, y):\n    return P(x, y)\n",),
        ("class P:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n\ndef point(x, y):\n    return P(x, y)\n",),
    ),
    Shape(
        "a context manager returned by the candidate",
        "def opened(name: str):\n    \"\"\"A context manager: .open is True inside the with block, False after; entering returns itself.\"\"\"\n",
        """
def check(candidate):
    r = candidate("f")
    with r as inside:
        assert inside.open
    assert not r.open
""",
        "opened",
        ("class R:\n    def __init__(self):\n        self.open = False\n    def __enter__(self):\n        self.open = True\n        return self\n"
         "    def __exit__(self, *exc):\n        self.open = False\n\ndef opened(name):\n    return R()\n",),
        ("class R:\n    def __init__(self):\n        self.open = True\n\ndef opened(name):\n    return R()\n",
         "class R:\n    def __init__(self):\n        self.open = False\n    def __enter__(self):\n        self.open = True\n        return self\n"
         "    def __exit__(self, *exc):\n        pass\n\ndef opened(name):\n    return R()\n"),
    ),
    Shape(
        "the candidate's docstring",
        "def square(x: int) -> int:\n    \"\"\"x squared.\"\"\"\n",
        """
def check(candidate):
    assert candidate(3) == 9
    assert candidate.__doc__ is not None and "squared" in candidate.__doc__
""",
        "square",
        ("def square(x):\n    \"\"\"Return x squared.\"\"\"\n    return x * x\n",),
        ("def square(x):\n    return x * x\n",),
    ),
]
