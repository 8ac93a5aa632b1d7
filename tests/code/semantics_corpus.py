# ruff: noqa: E501  (solutions are source text: a line each reads best)
"""Task shapes whose tests observe more of a call than its return value, each with honest and wrong solutions.

The differential test (test_semantics.py) grades every solution here through the relay and by plain
Python (tests/code/oracle.py) and requires the same verdict on every test; the wrong ones must score
0. Each shape is one of the ways a test can observe a call that crossed between two sandboxes
(issue 23): mutation, identity, output, exceptions and their classes and ``args``, a main guard,
large values, generators, stdin, recursion, nested calls, classes and methods, floats at their
edges, warnings, the prompt's helpers. Tests loop so that the corpus makes over 1,000 calls.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    name: str
    prompt: str
    test: str
    entry_point: str
    honest: tuple[str, ...]
    wrong: tuple[str, ...]
    grading: str = "isolated"  # "inprocess": only that mode can grade it (the test passes what cannot cross)


SHAPES = [
    Shape(
        "mutation of an argument, nested and aliased",
        "def add_one(xs: list) -> None:\n    \"\"\"Append 1 to xs, and to each list in it, in place.\"\"\"\n",
        """
def check(candidate):
    for n in range(30):
        xs = [0] * n
        assert candidate(xs) is None
        assert xs == [0] * n + [1]
    inner = [5]
    outer = [inner, 2]
    candidate(outer)
    assert inner == [5, 1] and outer[0] is inner and outer == [[5, 1], 2, 1]
    same = []
    pair = [same, same]
    candidate(pair)
    assert pair[0] is pair[1] and same == [1, 1]
    huge = [10 ** 5000, -0.0]
    candidate(huge)
    assert huge == [10 ** 5000, 0.0, 1] and str(huge[1]) == "-0.0"
""",
        "add_one",
        ("def add_one(xs):\n    for x in xs:\n        if isinstance(x, list):\n            x.append(1)\n"
         "    xs.append(1)\n",
         "def add_one(xs):\n    for x in xs:\n        if type(x) is list:\n            x += [1]\n    xs += [1]\n"),
        ("def add_one(xs):\n    xs = xs + [1]\n",
         "def add_one(xs):\n    return xs + [1]\n"),
    ),
    Shape(
        "mutation of a dict, a set and a bytearray",
        "def scrub(d: dict, s: set, b: bytearray) -> int:\n"
        "    \"\"\"Drop d's odd values, s's negatives, zero b's bytes; return how many things changed.\"\"\"\n",
        """
def check(candidate):
    for n in range(25):
        d = {i: i for i in range(n)}
        s = set(range(-n, n))
        b = bytearray(b"ab" * n)
        changed = candidate(d, s, b)
        assert d == {i: i for i in range(0, n, 2)}
        assert s == set(range(n))
        assert b == bytearray(2 * n)
        assert changed == n // 2 + n + 2 * n
""",
        "scrub",
        ("def scrub(d, s, b):\n    odd = [k for k, v in d.items() if v % 2]\n    for k in odd:\n        del d[k]\n"
         "    neg = {x for x in s if x < 0}\n    s -= neg\n    b[:] = bytes(len(b))\n"
         "    return len(odd) + len(neg) + len(b)\n",),
        ("def scrub(d, s, b):\n    d = {k: v for k, v in d.items() if v % 2 == 0}\n    return len(b)\n",
         "def scrub(d, s, b):\n    d.clear()\n    s.clear()\n    return 0\n"),
    ),
    Shape(
        "identity of a returned argument",
        "def fresh(xs: list) -> list:\n    \"\"\"A new list equal to xs (not xs itself).\"\"\"\n",
        """
def check(candidate):
    for n in range(30):
        xs = list(range(n, 0, -1))
        ys = candidate(xs)
        assert ys == xs and ys is not xs
        pair = (xs, ys)
        assert candidate(pair[0]) is not pair[0]
""",
        "fresh",
        ("def fresh(xs):\n    return list(xs)\n", "def fresh(xs):\n    return xs[:]\n"),
        ("def fresh(xs):\n    return xs\n",),
    ),
    Shape(
        "what the candidate prints, either way",
        "def greet(name: str) -> None:\n    \"\"\"Print 'Hello, <name>!' and nothing else.\"\"\"\n",
        """
import contextlib
import io
import sys


def check(candidate):
    for name in ["Bob", "Ann", "", "Zoë"] * 6:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert candidate(name) is None
        assert out.getvalue() == f"Hello, {name}!\\n"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        candidate("x")
    assert err.getvalue() == ""
""",
        "greet",
        ("def greet(name):\n    print(f'Hello, {name}!')\n",
         "import sys\ndef greet(name):\n    sys.stdout.write('Hello, ' + name + '!\\n')\n"),
        ("def greet(name):\n    return f'Hello, {name}!'\n",
         "import sys\ndef greet(name):\n    print('debug', file=sys.stderr)\n    print(f'Hello, {name}!')\n"),
    ),
    Shape(
        "built-in exceptions and their args",
        "def lookup(d: dict, key):\n    \"\"\"d[key]; KeyError(key) when it is missing, ValueError for a None key.\"\"\"\n",
        """
def check(candidate):
    for key in ["a", "b", 3, (1, 2)] * 6:
        try:
            candidate({}, key)
            assert False, "no error"
        except KeyError as e:
            assert e.args == (key,)
            assert str(e) == repr(key)
        assert candidate({key: 1}, key) == 1
    try:
        candidate({}, None)
    except ValueError:
        pass
    else:
        assert False
""",
        "lookup",
        ("def lookup(d, key):\n    if key is None:\n        raise ValueError('no key')\n    return d[key]\n",),
        ("def lookup(d, key):\n    if key is None:\n        raise ValueError\n    if key not in d:\n"
         "        raise KeyError(f'missing {key}')\n    return d[key]\n",
         "def lookup(d, key):\n    return d.get(key)\n"),
    ),
    Shape(
        "the prompt's own exception class, with its attributes",
        "class InsufficientFunds(Exception):\n    def __init__(self, needed):\n"
        "        super().__init__(f'need {needed} more')\n        self.needed = needed\n\n\n"
        "def withdraw(balance: int, amount: int) -> int:\n"
        "    \"\"\"balance - amount; InsufficientFunds(amount - balance) when short.\"\"\"\n",
        """
def check(candidate):
    for balance in range(20):
        assert candidate(balance + 5, 5) == balance
        try:
            candidate(balance, balance + 3)
            assert False
        except InsufficientFunds as e:
            assert e.needed == 3 and str(e) == "need 3 more" and e.args == ("need 3 more",)
""",
        "withdraw",
        ("def withdraw(balance, amount):\n    if amount > balance:\n        raise InsufficientFunds(amount - balance)\n"
         "    return balance - amount\n",),
        ("def withdraw(balance, amount):\n    if amount > balance:\n        raise ValueError(amount - balance)\n"
         "    return balance - amount\n",
         "def withdraw(balance, amount):\n    if amount > balance:\n        raise InsufficientFunds(amount)\n"
         "    return balance - amount\n"),
    ),
    Shape(
        "an exception class of the solution's own",
        "def parse(text: str) -> int:\n    \"\"\"int(text); a ValueError subclass whose args are (text, position) for a bad one.\"\"\"\n",
        """
def check(candidate):
    for n in range(20):
        assert candidate(str(n)) == n
        try:
            candidate(f"{n}x")
            assert False
        except ValueError as e:
            assert e.args == (f"{n}x", len(str(n)))
            assert type(e).__name__ == "ParseError" and type(e) is not ValueError
""",
        "parse",
        ("class ParseError(ValueError):\n    pass\n\n\ndef parse(text):\n    for i, c in enumerate(text):\n"
         "        if not c.isdigit():\n            raise ParseError(text, i)\n    return int(text)\n",),
        ("def parse(text):\n    return int(text)\n",),
    ),
    Shape(
        "an exception class of a module the test imports",
        "def parse_json(text: str):\n    \"\"\"json.loads(text); json.JSONDecodeError for bad JSON.\"\"\"\n",
        """
import json


def check(candidate):
    for n in range(15):
        assert candidate(f"[{n}]") == [n]
        try:
            candidate("[" * n + "x")
            assert False
        except json.JSONDecodeError as e:
            assert e.pos == n and e.msg == "Expecting value"
""",
        "parse_json",
        ("import json\ndef parse_json(text):\n    return json.loads(text)\n",),
        ("import json\ndef parse_json(text):\n    try:\n        return json.loads(text)\n    except ValueError as e:\n"
         "        raise ValueError(str(e))\n",),
    ),
    Shape(
        "a solution with a main guard",
        "def double(x: int) -> int:\n    \"\"\"Twice x.\"\"\"\n",
        """
def check(candidate):
    for x in range(-20, 20):
        assert candidate(x) == 2 * x
""",
        "double",
        ("def double(x):\n    return 2 * x\n\n\nif __name__ == '__main__':\n    import unittest\n\n"
         "    class T(unittest.TestCase):\n        def test(self):\n            self.assertEqual(double(2), 4)\n\n"
         "    unittest.main()\n",
         "def double(x):\n    return x + x\n\n\nif __name__ == '__main__':\n    assert double(2) == 5\n"),
        ("def double(x):\n    return x * x\n\n\nif __name__ == '__main__':\n    print(double(3))\n",),
    ),
    Shape(
        "large return values and arguments",
        "def repeat(s: str, n: int) -> str:\n    \"\"\"s repeated n times.\"\"\"\n",
        """
def check(candidate):
    for n in (0, 1, 1000, 100000, 300000):
        out = candidate("ab", n)
        assert len(out) == 2 * n and out == "ab" * n
    big = candidate("x", 200000)
    assert candidate(big, 2) == "x" * 400000
""",
        "repeat",
        ("def repeat(s, n):\n    return s * n\n", "def repeat(s, n):\n    return ''.join(s for _ in range(n))\n"),
        ("def repeat(s, n):\n    return s * min(n, 1000)\n",),
    ),
    Shape(
        "generators and iterators",
        "def count_up(n: int):\n    \"\"\"An iterator over 0, 1, ..., n - 1.\"\"\"\n",
        """
def check(candidate):
    g = candidate(4)
    assert iter(g) is g
    assert next(g) == 0
    assert list(g) == [1, 2, 3]
    assert list(g) == []
    for n in range(10):
        assert sum(candidate(n)) == n * (n - 1) // 2
    assert next(candidate(0), "empty") == "empty"
""",
        "count_up",
        ("def count_up(n):\n    yield from range(n)\n", "def count_up(n):\n    return iter(range(n))\n",
         "def count_up(n):\n    i = 0\n    while i < n:\n        yield i\n        i += 1\n"),
        ("def count_up(n):\n    return list(range(n))\n", "def count_up(n):\n    yield from range(1, n + 1)\n"),
    ),
    Shape(
        "stdin",
        "def read_sum() -> int:\n    \"\"\"Read one line of space-separated integers from stdin; return their sum.\"\"\"\n",
        """
import io
import sys


def check(candidate):
    for n in range(20):
        sys.stdin = io.StringIO(" ".join(map(str, range(n))) + "\\nnext line\\n")
        assert candidate() == n * (n - 1) // 2
        assert sys.stdin.readline() == "next line\\n"
    sys.stdin = sys.__stdin__
""",
        "read_sum",
        ("def read_sum():\n    return sum(map(int, input().split()))\n",
         "import sys\ndef read_sum():\n    return sum(int(x) for x in sys.stdin.readline().split())\n"),
        ("import sys\ndef read_sum():\n    return sum(int(x) for x in sys.stdin.read().split() if x.isdigit())\n",),
    ),
    Shape(
        "recursion through the candidate",
        "def step(x: int) -> int:\n    \"\"\"x + 1.\"\"\"\n",
        """
def depth(n):
    return 0 if n == 0 else step(depth(n - 1))


def check(candidate):
    assert depth(150) == 150
    total = 0
    for i in range(50):
        total = candidate(total)
    assert total == 50
""",
        "step",
        ("def step(x):\n    return x + 1\n", "def step(x):\n    return 1 if x == 0 else step(x - 1) + 1\n"),
        ("def step(x):\n    return x + 1 if x < 100 else x\n",),
    ),
    Shape(
        "candidate(candidate(x))",
        "def rotate(xs: list) -> list:\n    \"\"\"xs rotated left by one, as a new list.\"\"\"\n",
        """
def check(candidate):
    for n in range(1, 16):
        xs = list(range(n))
        assert candidate(candidate(xs)) == xs[2 % n:] + xs[:2 % n]
        assert xs == list(range(n))
""",
        "rotate",
        ("def rotate(xs):\n    return xs[1:] + xs[:1]\n",),
        ("def rotate(xs):\n    xs.append(xs.pop(0))\n    return xs\n", "def rotate(xs):\n    return xs[-1:] + xs[:-1]\n"),
    ),
    Shape(
        "a class as the entry point",
        "class Stack:\n    \"\"\"push(x), pop() (the last pushed), len(), top (an attribute: the last pushed or None), "
        "and 'in'.\"\"\"\n",
        """
def check(candidate):
    s = candidate()
    for i in range(20):
        s.push(i)
        assert s.top == i
    assert len(s) == 20 and 5 in s and 50 not in s and bool(s)
    for i in reversed(range(20)):
        assert s.pop() == i
    assert len(s) == 0 and s.top is None
    try:
        s.missing_method()
        assert False
    except AttributeError:
        pass
""",
        "Stack",
        ("class Stack:\n    def __init__(self):\n        self.items = []\n        self.top = None\n"
         "    def push(self, x):\n        self.items.append(x)\n        self.top = x\n"
         "    def pop(self):\n        x = self.items.pop()\n        self.top = self.items[-1] if self.items else None\n"
         "        return x\n    def __len__(self):\n        return len(self.items)\n"
         "    def __contains__(self, x):\n        return x in self.items\n",),
        ("class Stack:\n    def __init__(self):\n        self.items = []\n        self.top = None\n"
         "    def push(self, x):\n        self.items.append(x)\n        self.top = x\n"
         "    def pop(self):\n        return self.items.pop(0)\n    def __len__(self):\n        return len(self.items)\n"
         "    def __contains__(self, x):\n        return x in self.items\n",),
    ),
    Shape(
        "a class's methods: a classmethod and bound methods",
        "class Tally:\n    \"\"\"Tally.of(xs) counts xs; .count(x), .total(), .add(x) returns self.\"\"\"\n",
        """
def check(candidate):
    for n in range(12):
        t = candidate.of(list(range(n)) * 2)
        assert t.total() == 2 * n
        count = t.count
        assert all(count(i) == 2 for i in range(n))
        assert t.add(99) is t and count(99) == 1
""",
        "Tally",
        ("class Tally:\n    def __init__(self):\n        self.counts = {}\n    @classmethod\n"
         "    def of(cls, xs):\n        t = cls()\n        for x in xs:\n            t.add(x)\n        return t\n"
         "    def add(self, x):\n        self.counts[x] = self.counts.get(x, 0) + 1\n        return self\n"
         "    def count(self, x):\n        return self.counts.get(x, 0)\n    def total(self):\n"
         "        return sum(self.counts.values())\n",),
        ("class Tally:\n    def __init__(self):\n        self.counts = {}\n    @classmethod\n"
         "    def of(cls, xs):\n        t = cls()\n        for x in set(xs):\n            t.add(x)\n        return t\n"
         "    def add(self, x):\n        self.counts[x] = self.counts.get(x, 0) + 1\n        return self\n"
         "    def count(self, x):\n        return self.counts.get(x, 0)\n    def total(self):\n"
         "        return sum(self.counts.values())\n",),
    ),
    Shape(
        "floats at the edges of a tolerance",
        "def halve(x: float) -> float:\n    \"\"\"x / 2, exactly as IEEE division gives it.\"\"\"\n",
        """
import math


def check(candidate):
    assert candidate(1e-323) == 5e-324
    assert candidate(5e-324) == 0.0
    assert math.copysign(1.0, candidate(-0.0)) == -1.0
    assert math.isnan(candidate(float("nan")))
    assert candidate(float("inf")) == float("inf")
    assert candidate(0.30000000000000004) == 0.15000000000000002
    for i in range(30):
        x = 0.1 * i
        assert abs(candidate(x) - x / 2) <= 0.0
        assert math.isclose(candidate(x), x / 2, rel_tol=1e-15, abs_tol=0.0)
""",
        "halve",
        ("def halve(x):\n    return x / 2\n", "def halve(x):\n    return x * 0.5\n"),
        ("def halve(x):\n    return x * 0.5000000000000001\n", "def halve(x):\n    return abs(x) / 2\n"),
    ),
    Shape(
        "warnings",
        "def old_api(x: int) -> int:\n    \"\"\"x, with a DeprecationWarning('old_api is deprecated').\"\"\"\n",
        """
import warnings


def check(candidate):
    for x in range(20):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert candidate(x) == x
        assert len(caught) == 1 and caught[0].category is DeprecationWarning
        assert str(caught[0].message) == "old_api is deprecated"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            candidate(1)
            assert False
        except DeprecationWarning:
            pass
""",
        "old_api",
        ("import warnings\ndef old_api(x):\n    warnings.warn('old_api is deprecated', DeprecationWarning)\n    return x\n",
         "import warnings\ndef old_api(x):\n    warnings.warn(DeprecationWarning('old_api is deprecated'))\n"
         "    return x\n"),
        ("def old_api(x):\n    return x\n",
         "import warnings\ndef old_api(x):\n    warnings.warn('old_api is deprecated')\n    return x\n"),
    ),
    Shape(
        "tests calling the prompt's helpers",
        "def poly(xs: list, x: float) -> float:\n    return sum(c * x ** i for i, c in enumerate(xs))\n\n\n"
        "def find_zero(xs: list) -> float:\n    \"\"\"A zero of the polynomial with coefficients xs (odd degree).\"\"\"\n",
        """
def check(candidate):
    for k in range(1, 25):
        xs = [-k, 1.0]
        assert abs(poly(xs, candidate(xs))) < 1e-6
""",
        "find_zero",
        ("def find_zero(xs):\n    lo, hi = -1e3, 1e3\n    for _ in range(200):\n        mid = (lo + hi) / 2\n"
         "        if poly(xs, lo) * poly(xs, mid) <= 0:\n            hi = mid\n        else:\n            lo = mid\n"
         "    return lo\n",
         "    return -xs[0] / xs[1]\n"),
        ("def find_zero(xs):\n    return 0.0\n",),
    ),
]
