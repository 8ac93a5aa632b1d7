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
         "import typing\nfrom dataclasses import dataclass\n\n@dataclass\nclass Acc:\n    total: int = 0\n\n"
         "def total(xs):\n    assert typing.get_type_hints(Acc) == {'total': int}\n    return sum(xs, Acc().total)\n"),
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
]
