# ruff: noqa: E501  (solutions are source text: a line each reads best)
"""More task shapes as users write them (issue 33), for the differential test: the classes the issue
names and what they suggest beyond them, each with honest and wrong solutions.

Subclasses of plain types and enum members as results, introspection, identity and aliasing across
calls, process state the candidate leaves or the tests set, LeetCode-style classes, linked lists and
trees, dataclasses, stateful objects, callbacks, generators, randomised and file-based tests,
exceptions, printing, mutation, recursion, big integers, floats and NaN, operators on returned
objects, async entry points, threads, and the plain styles of HumanEval-like tasks. ``grading`` says
what the dry run must decide: ``inprocess`` where the tests look at what isolated grading does not
carry (it is refused isolated, with the statement at fault).
"""

from __future__ import annotations

import textwrap

from .semantics_corpus import Shape


def task(name: str, signature: str, doc: str, body: str, honest: tuple[str, ...], wrong: tuple[str, ...],
         grading: str = "isolated", before: str = "", setup: str = "") -> Shape:
    """A shape whose prompt is ``before`` and ``def signature`` with ``doc``, and whose test is ``setup``
    and ``check`` with ``body``."""
    entry = signature.split("(")[0].replace("class ", "").strip()
    head = signature if signature.startswith("class ") else f"def {signature}"
    prompt = f"{before}{head}:\n    \"\"\"{doc}\"\"\"\n"
    test = f"{setup}\n\ndef check(candidate):\n{textwrap.indent(textwrap.dedent(body).strip(), '    ')}\n"
    return Shape(name, prompt, test, entry, honest, wrong, grading)


S = task
SHAPES = [
    # Subclasses of plain types and enum members, as results.
    S("an OrderedDict compared in order", "ordered(pairs: list)", "An OrderedDict of the pairs, in their order.",
      """
      from collections import OrderedDict
      for n in range(1, 6):
          pairs = [(k, str(k)) for k in range(n, 0, -1)]
          assert candidate(pairs) == OrderedDict(pairs)
      """,
      ("from collections import OrderedDict\ndef ordered(pairs):\n    return OrderedDict(pairs)\n",),
      ("from collections import OrderedDict\ndef ordered(pairs):\n    return OrderedDict(sorted(pairs))\n",)),
    S("a Counter's zeros and most_common", "tally(text: str, drop: str)", "Counter(text) minus Counter(drop), zeros kept (subtract).",
      """
      from collections import Counter
      r = candidate("aabbc", "ab")
      assert isinstance(r, Counter)
      assert r == Counter({"a": 1, "b": 1, "c": 1}) and r["z"] == 0
      r = candidate("ab", "ab")
      assert set(r) == {"a", "b"} and r["a"] == 0
      """,
      ("from collections import Counter\ndef tally(text, drop):\n    c = Counter(text)\n    c.subtract(drop)\n    return c\n",),
      ("from collections import Counter\ndef tally(text, drop):\n    return Counter(text) - Counter(drop)\n",
       "def tally(text, drop):\n    d = {}\n    for ch in text:\n        d[ch] = d.get(ch, 0) + 1\n    for ch in drop:\n        d[ch] -= 1\n    return d\n")),
    S("a defaultdict's default", "groups(words: list)", "A defaultdict(list) of the words by first letter.",
      """
      r = candidate(["ab", "ac", "b"])
      assert r["a"] == ["ab", "ac"] and r["b"] == ["b"]
      assert r["zzz"] == []
      """,
      ("from collections import defaultdict\ndef groups(words):\n    d = defaultdict(list)\n    for w in words:\n        d[w[0]].append(w)\n    return d\n",),
      ("def groups(words):\n    d = {}\n    for w in words:\n        d.setdefault(w[0], []).append(w)\n    return d\n",)),
    S("a defaultdict whose factory is a lambda", "scores(names: list)", "A defaultdict giving 10 for a missing name, 1 for each listed.",
      """
      r = candidate(["a", "b"])
      assert r["a"] == 1 and r["nobody"] == 10
      assert len(r) == 3
      """,
      ("from collections import defaultdict\ndef scores(names):\n    d = defaultdict(lambda: 10)\n    for n in names:\n        d[n] = 1\n    return d\n",),
      ("from collections import defaultdict\ndef scores(names):\n    d = defaultdict(int)\n    for n in names:\n        d[n] = 1\n    return d\n",)),
    S("a deque and its maxlen", "window(xs: list, k: int)", "A deque of the last k items of xs, with maxlen k.",
      """
      from collections import deque
      r = candidate([1, 2, 3, 4], 2)
      assert r == deque([3, 4]) and r.maxlen == 2
      r.append(5)
      assert list(r) == [4, 5]
      """,
      ("from collections import deque\ndef window(xs, k):\n    return deque(xs, maxlen=k)\n",),
      ("from collections import deque\ndef window(xs, k):\n    return deque(xs[-k:])\n",
       "def window(xs, k):\n    return xs[-k:]\n")),
    S("a prompt's namedtuple", "split_point(text: str)", "'x,y' as a Point.",
      """
      r = candidate("3,4")
      assert r == Point(3, 4) and type(r) is Point and r.x == 3
      """,
      ("def split_point(text):\n    x, y = text.split(',')\n    return Point(int(x), int(y))\n",),
      ("def split_point(text):\n    x, y = text.split(',')\n    return (int(x), int(y))\n",),
      before="from collections import namedtuple\n\nPoint = namedtuple('Point', 'x y')\n\n\n"),
    S("a namedtuple the solution defines", "minmax(xs: list)", "A namedtuple with fields lo and hi.",
      """
      r = candidate([3, 1, 2])
      assert (r.lo, r.hi) == (1, 3) and r == (1, 3) and r._fields == ("lo", "hi")
      """,
      ("from collections import namedtuple\nR = namedtuple('R', 'lo hi')\ndef minmax(xs):\n    return R(min(xs), max(xs))\n",),
      ("from collections import namedtuple\nR = namedtuple('R', 'low high')\ndef minmax(xs):\n    return R(min(xs), max(xs))\n",
       "def minmax(xs):\n    return (min(xs), max(xs))\n")),
    S("a prompt's IntEnum member", "level(n: int)", "Level.LOW under 10, else Level.HIGH.",
      """
      assert candidate(3) is Level.LOW
      assert candidate(30).name == "HIGH" and candidate(30) == 2
      """,
      ("def level(n):\n    return Level.LOW if n < 10 else Level.HIGH\n",),
      ("def level(n):\n    return 1 if n < 10 else 2\n",),
      before="import enum\n\n\nclass Level(enum.IntEnum):\n    LOW = 1\n    HIGH = 2\n\n\n"),
    S("a prompt's Enum member, compared by identity", "opposite(c)", "Color.RED for Color.BLUE and back.",
      """
      assert candidate(Color.RED) is Color.BLUE
      assert candidate(Color.BLUE) is Color.RED
      """,
      ("def opposite(c):\n    return Color.BLUE if c is Color.RED else Color.RED\n",),
      ("def opposite(c):\n    return 'BLUE' if c is Color.RED else 'RED'\n", "def opposite(c):\n    return c\n"),
      before="import enum\n\n\nclass Color(enum.Enum):\n    RED = 'r'\n    BLUE = 'b'\n\n\n"),
    S("an IntEnum the solution defines", "weekday(n: int)", "An IntEnum member named MON..SUN for 0..6.",
      """
      r = candidate(2)
      assert r == 2 and r.name == "WED"
      """,
      ("import enum\nDay = enum.IntEnum('Day', 'MON TUE WED THU FRI SAT SUN', start=0)\ndef weekday(n):\n    return Day(n)\n",),
      ("import enum\nDay = enum.IntEnum('Day', 'MON TUE WED THU FRI SAT SUN')\ndef weekday(n):\n    return Day(n)\n",)),
    S("a dict subclass of the solution's, with an attribute", "tagged(d: dict, tag: str)", "A dict subclass copy of d with a .tag attribute.",
      """
      r = candidate({"a": 1}, "t")
      assert r == {"a": 1} and r.tag == "t" and type(r) is not dict and isinstance(r, dict)
      """,
      ("class Tagged(dict):\n    pass\ndef tagged(d, tag):\n    r = Tagged(d)\n    r.tag = tag\n    return r\n",),
      ("def tagged(d, tag):\n    return dict(d)\n",)),
    S("a frozenset, not a set", "unique(xs: list)", "The distinct items, as a frozenset.",
      """
      r = candidate([1, 1, 2])
      assert r == {1, 2} and type(r) is frozenset
      assert hash(r) == hash(frozenset({1, 2}))
      """,
      ("def unique(xs):\n    return frozenset(xs)\n",),
      ("def unique(xs):\n    return set(xs)\n",)),
    S("exactly a dict, not an OrderedDict", "as_dict(pairs: list)", "A plain dict of the pairs.",
      """
      r = candidate([(1, 2)])
      assert type(r) is dict and r == {1: 2}
      """,
      ("def as_dict(pairs):\n    return dict(pairs)\n",),
      ("from collections import OrderedDict\ndef as_dict(pairs):\n    return OrderedDict(pairs)\n",)),
    S("exactly an int, not a bool", "count_true(xs: list)", "How many items are truthy, as an int.",
      """
      assert candidate([1, 0]) == 1 and type(candidate([1, 0])) is int
      assert candidate([]) == 0
      """,
      ("def count_true(xs):\n    return sum(1 for x in xs if x)\n",),
      ("def count_true(xs):\n    n = sum(1 for x in xs if x)\n    return True if n == 1 else n\n",)),
    S("a str subclass", "shout(s: str)", "s upper-cased, as a str subclass Loud with a .volume of len(s).",
      """
      r = candidate("hi")
      assert r == "HI" and r.volume == 2 and isinstance(r, str)
      """,
      ("class Loud(str):\n    pass\ndef shout(s):\n    r = Loud(s.upper())\n    r.volume = len(s)\n    return r\n",),
      ("def shout(s):\n    return s.upper()\n",)),
    S("a Counter handed to the candidate", "top(c)", "The most common key of Counter c.",
      """
      from collections import Counter
      assert candidate(Counter("abbccc")) == "c"
      assert candidate(Counter({"x": 1})) == "x"
      """,
      ("def top(c):\n    return c.most_common(1)[0][0]\n",),
      ("def top(c):\n    return min(c)\n",)),
    S("an OrderedDict handed over and changed", "rotate(d)", "Move d's first key to the end, in place; return None.",
      """
      from collections import OrderedDict
      d = OrderedDict([(1, 'a'), (2, 'b'), (3, 'c')])
      assert candidate(d) is None
      assert list(d) == [2, 3, 1]
      """,
      ("def rotate(d):\n    d.move_to_end(next(iter(d)))\n",),
      ("def rotate(d):\n    d.move_to_end(next(iter(d)), last=False)\n",)),
    # Introspection.
    S("inspect.signature of the candidate", "area(width, height=1)", "width * height.",
      """
      import inspect
      params = inspect.signature(candidate).parameters
      assert list(params) == ["width", "height"] and params["height"].default == 1
      assert candidate(3) == 3
      """,
      ("def area(width, height=1):\n    return width * height\n",),
      ("def area(*args):\n    return args[0] * (args[1] if len(args) > 1 else 1)\n",
       "def area(width, height=2):\n    return width * height\n")),
    S("the candidate's name", "double(x)", "2 * x.",
      """
      assert candidate.__name__ == "double"
      assert candidate(4) == 8
      """,
      ("def double(x):\n    return 2 * x\n",),
      ("def _d(x):\n    return 2 * x\ndouble = _d\n",)),
    S("an lru_cache's statistics", "fib(n: int)", "Fibonacci, memoised with functools.lru_cache.",
      """
      assert candidate(30) == 832040
      info = candidate.cache_info()
      assert info.misses == 31 and info.hits >= 28
      """,
      ("import functools\n@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",),
      ("import functools\n@functools.lru_cache(maxsize=2)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",)),
    # Identity and aliasing.
    S("a fresh list from every call", "empty()", "A new empty list each call.",
      """
      a = candidate()
      b = candidate()
      assert a == [] and a is not b
      a.append(1)
      assert candidate() == []
      """,
      ("def empty():\n    return []\n",),
      ("_SHARED = []\ndef empty():\n    return _SHARED\n",),
      grading="inprocess"),
    S("the same object from every call", "registry()", "The one module-level registry dict, the same object each call.",
      """
      assert candidate() is candidate()
      candidate()["k"] = 1
      assert candidate()["k"] == 1
      """,
      ("_REG = {}\ndef registry():\n    return _REG\n",),
      ("def registry():\n    return {}\n",),
      grading="inprocess"),
    S("a constructor that copies the caller's list", "class Bag", "Bag(items): items() returns the items it was made with, later changes to the caller's list not seen.",
      """
      xs = [1, 2]
      b = candidate(xs)
      xs.append(3)
      assert b.items() == [1, 2]
      """,
      ("class Bag:\n    def __init__(self, items):\n        self._items = list(items)\n    def items(self):\n        return list(self._items)\n",),
      ("class Bag:\n    def __init__(self, items):\n        self._items = items\n    def items(self):\n        return list(self._items)\n",),
      grading="inprocess"),
    S("a snapshot that later calls do not change", "class Log", "add(x); snapshot() is a list of the items so far, unchanged by later adds.",
      """
      log = candidate()
      log.add(1)
      snap = log.snapshot()
      log.add(2)
      assert snap == [1] and log.snapshot() == [1, 2]
      """,
      ("class Log:\n    def __init__(self):\n        self.xs = []\n    def add(self, x):\n        self.xs.append(x)\n    def snapshot(self):\n        return self.xs[:]\n",),
      ("class Log:\n    def __init__(self):\n        self.xs = []\n    def add(self, x):\n        self.xs.append(x)\n    def snapshot(self):\n        return self.xs\n",),
      grading="inprocess"),
    S("the argument itself, returned", "tidy(xs: list)", "Sort xs in place and return xs itself.",
      """
      xs = [3, 1, 2]
      assert candidate(xs) is xs and xs == [1, 2, 3]
      """,
      ("def tidy(xs):\n    xs.sort()\n    return xs\n",),
      ("def tidy(xs):\n    return sorted(xs)\n",)),
    S("a copy, never the argument", "sorted_copy(xs: list)", "A sorted copy; xs unchanged.",
      """
      xs = [3, 1, 2]
      r = candidate(xs)
      assert r == [1, 2, 3] and r is not xs and xs == [3, 1, 2]
      """,
      ("def sorted_copy(xs):\n    return sorted(xs)\n",),
      ("def sorted_copy(xs):\n    xs.sort()\n    return xs\n",)),
    S("a mutable default argument", "collect(x, into=None)", "A list of x, appended to into when given, else a new list.",
      """
      assert candidate(1) == [1]
      assert candidate(2) == [2]
      acc = []
      candidate(3, acc)
      assert acc == [3]
      """,
      ("def collect(x, into=None):\n    into = [] if into is None else into\n    into.append(x)\n    return into\n",),
      ("def collect(x, into=[]):\n    into.append(x)\n    return into\n",)),
    S("an alias inside the result", "pair()", "A list holding the same inner list twice.",
      """
      r = candidate()
      assert r[0] is r[1]
      r[0].append(1)
      assert r == [[1], [1]]
      """,
      ("def pair():\n    inner = []\n    return [inner, inner]\n",),
      ("def pair():\n    return [[], []]\n",)),
    # Process state.
    S("os.environ left as it was", "config(key: str)", "os.environ.get(key, 'none'), without changing os.environ.",
      """
      import os
      before = dict(os.environ)
      assert candidate("AGENTGYM_NOT_SET") == "none"
      assert dict(os.environ) == before
      """,
      ("import os\ndef config(key):\n    return os.environ.get(key, 'none')\n",),
      ("import os\ndef config(key):\n    return os.environ.setdefault(key, 'none')\n",),
      grading="inprocess"),
    S("the working directory left as it was", "listing(path: str)", "sorted(os.listdir(path)), the working directory unchanged.",
      """
      import os
      here = os.getcwd()
      assert isinstance(candidate("/"), list)
      assert os.getcwd() == here
      """,
      ("import os\ndef listing(path):\n    return sorted(os.listdir(path))\n",),
      ("import os\ndef listing(path):\n    os.chdir(path)\n    return sorted(os.listdir('.'))\n",),
      grading="inprocess"),
    S("sys.stdout put back", "quietly(x: int)", "x * 2, printing nothing, sys.stdout left as it was.",
      """
      import sys
      out = sys.stdout
      assert candidate(2) == 4
      assert sys.stdout is out
      """,
      ("def quietly(x):\n    return x * 2\n",),
      ("import io, sys\ndef quietly(x):\n    sys.stdout = io.StringIO()\n    return x * 2\n",),
      grading="inprocess"),
    S("the recursion limit put back", "depth(n: int)", "n, computed recursively; sys.getrecursionlimit() left as it was.",
      """
      import sys
      limit = sys.getrecursionlimit()
      assert candidate(50) == 50
      assert sys.getrecursionlimit() == limit
      """,
      ("def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n",),
      ("import sys\ndef depth(n):\n    sys.setrecursionlimit(10 ** 5)\n    return 0 if n == 0 else 1 + depth(n - 1)\n",),
      grading="inprocess"),
    S("a recursion limit the test raises", "nest(n: int)", "n, computed recursively, one call per level.",
      """
      import sys
      sys.setrecursionlimit(6000)
      assert candidate(3000) == 3000
      """,
      ("def nest(n):\n    return 0 if n == 0 else 1 + nest(n - 1)\n",),
      ("def nest(n):\n    return 0 if n == 0 else 2 + nest(n - 1)\n",),
      grading="inprocess"),
    S("sys.argv the test sets", "first_arg()", "sys.argv[1].",
      """
      import sys
      sys.argv = ["prog", "hello"]
      assert candidate() == "hello"
      """,
      ("import sys\ndef first_arg():\n    return sys.argv[1]\n",),
      ("import sys\ndef first_arg():\n    return sys.argv[0]\n",),
      grading="inprocess"),
    S("a decimal context the test sets", "third()", "Decimal(1) / Decimal(3) in the current context.",
      """
      import decimal
      decimal.getcontext().prec = 5
      assert str(candidate()) == "0.33333"
      """,
      ("from decimal import Decimal\ndef third():\n    return Decimal(1) / Decimal(3)\n",),
      ("from decimal import Decimal, localcontext\ndef third():\n    with localcontext() as c:\n        c.prec = 28\n        return Decimal(1) / Decimal(3)\n",),
      grading="inprocess"),
    S("a logging handler the test installs", "warn_once(msg: str)", "Log msg at WARNING on the root logger.",
      """
      import logging
      seen = []
      class Keep(logging.Handler):
          def emit(self, record):
              seen.append(record.getMessage())
      logging.getLogger().addHandler(Keep())
      candidate("careful")
      assert seen == ["careful"]
      """,
      ("import logging\ndef warn_once(msg):\n    logging.getLogger().warning(msg)\n",),
      ("import logging\ndef warn_once(msg):\n    logging.getLogger().info(msg)\n",),
      grading="inprocess"),
    S("random's state left as it was", "roll(n: int)", "n dice from random.Random(0), the global state untouched.",
      """
      import random
      random.seed(1)
      state = random.getstate()
      r = candidate(5)
      assert len(r) == 5 and all(1 <= x <= 6 for x in r)
      assert random.getstate() == state
      """,
      ("import random\ndef roll(n):\n    g = random.Random(0)\n    return [g.randint(1, 6) for _ in range(n)]\n",),
      ("import random\ndef roll(n):\n    return [random.randint(1, 6) for _ in range(n)]\n",),
      grading="inprocess"),
    # LeetCode-style classes.
    S("a LeetCode Solution class", "class Solution", "twoSum(nums, target): indices of the two numbers adding to target.",
      """
      s = candidate()
      assert sorted(s.twoSum([2, 7, 11, 15], 9)) == [0, 1]
      assert sorted(s.twoSum([3, 2, 4], 6)) == [1, 2]
      """,
      ("class Solution:\n    def twoSum(self, nums, target):\n        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n                return [seen[target - x], i]\n            seen[x] = i\n",),
      ("class Solution:\n    def twoSum(self, nums, target):\n        return [0, 1]\n",)),
    S("a MinStack", "class MinStack", "push, pop, top, getMin in O(1).",
      """
      s = candidate()
      for x in [5, 3, 7, 3, 1]:
          s.push(x)
      assert s.getMin() == 1
      s.pop()
      assert s.getMin() == 3 and s.top() == 3
      s.pop(); s.pop()
      assert s.getMin() == 3
      s.pop()
      assert s.getMin() == 5
      """,
      ("class MinStack:\n    def __init__(self):\n        self.s = []\n    def push(self, x):\n        self.s.append((x, min(x, self.s[-1][1]) if self.s else x))\n    def pop(self):\n        self.s.pop()\n    def top(self):\n        return self.s[-1][0]\n    def getMin(self):\n        return self.s[-1][1]\n",),
      ("class MinStack:\n    def __init__(self):\n        self.s = []\n        self.m = None\n    def push(self, x):\n        self.s.append(x)\n        self.m = x if self.m is None else min(self.m, x)\n    def pop(self):\n        self.s.pop()\n    def top(self):\n        return self.s[-1]\n    def getMin(self):\n        return self.m\n",)),
    S("an LRU cache", "class LRUCache", "LRUCache(capacity): get(key) -> value or -1, put(key, value), least recently used evicted.",
      """
      c = candidate(2)
      c.put(1, 1); c.put(2, 2)
      assert c.get(1) == 1
      c.put(3, 3)
      assert c.get(2) == -1
      c.put(4, 4)
      assert c.get(1) == -1 and c.get(3) == 3 and c.get(4) == 4
      """,
      ("from collections import OrderedDict\nclass LRUCache:\n    def __init__(self, capacity):\n        self.c, self.d = capacity, OrderedDict()\n    def get(self, k):\n        if k not in self.d:\n            return -1\n        self.d.move_to_end(k)\n        return self.d[k]\n    def put(self, k, v):\n        self.d[k] = v\n        self.d.move_to_end(k)\n        if len(self.d) > self.c:\n            self.d.popitem(last=False)\n",),
      ("class LRUCache:\n    def __init__(self, capacity):\n        self.c, self.d = capacity, {}\n    def get(self, k):\n        return self.d.get(k, -1)\n    def put(self, k, v):\n        self.d[k] = v\n        if len(self.d) > self.c:\n            del self.d[next(iter(self.d))]\n",)),
    S("a Trie", "class Trie", "insert(word), search(word), startsWith(prefix).",
      """
      t = candidate()
      for w in ["apple", "app", "bat"]:
          t.insert(w)
      assert t.search("app") and not t.search("ap") and t.startsWith("ap") and not t.startsWith("c")
      """,
      ("class Trie:\n    def __init__(self):\n        self.root = {}\n    def insert(self, w):\n        n = self.root\n        for ch in w:\n            n = n.setdefault(ch, {})\n        n['$'] = True\n    def _find(self, w):\n        n = self.root\n        for ch in w:\n            if ch not in n:\n                return None\n            n = n[ch]\n        return n\n    def search(self, w):\n        n = self._find(w)\n        return bool(n and '$' in n)\n    def startsWith(self, p):\n        return self._find(p) is not None\n",),
      ("class Trie:\n    def __init__(self):\n        self.words = []\n    def insert(self, w):\n        self.words.append(w)\n    def search(self, w):\n        return any(x.startswith(w) for x in self.words)\n    def startsWith(self, p):\n        return any(x.startswith(p) for x in self.words)\n",)),
    S("a queue made of two stacks", "class MyQueue", "push, pop, peek, empty.",
      """
      q = candidate()
      q.push(1); q.push(2)
      assert q.peek() == 1 and q.pop() == 1 and not q.empty()
      assert q.pop() == 2 and q.empty()
      """,
      ("class MyQueue:\n    def __init__(self):\n        self.a, self.b = [], []\n    def push(self, x):\n        self.a.append(x)\n    def _move(self):\n        if not self.b:\n            while self.a:\n                self.b.append(self.a.pop())\n    def pop(self):\n        self._move()\n        return self.b.pop()\n    def peek(self):\n        self._move()\n        return self.b[-1]\n    def empty(self):\n        return not self.a and not self.b\n",),
      ("class MyQueue:\n    def __init__(self):\n        self.a = []\n    def push(self, x):\n        self.a.append(x)\n    def pop(self):\n        return self.a.pop()\n    def peek(self):\n        return self.a[-1]\n    def empty(self):\n        return not self.a\n",)),
    S("a binary tree's depth", "max_depth(root)", "The depth of the tree of TreeNode.",
      """
      assert candidate(None) == 0
      assert candidate(TreeNode(1, TreeNode(2, TreeNode(3)), TreeNode(4))) == 3
      assert candidate(TreeNode(1, None, TreeNode(2, None, TreeNode(3)))) == 3
      """,
      ("def max_depth(root):\n    return 0 if root is None else 1 + max(max_depth(root.left), max_depth(root.right))\n",),
      ("def max_depth(root):\n    return 0 if root is None else 1 + max_depth(root.left)\n",
       "def max_depth(root):\n    return 1\n"),
      grading="inprocess",
      before="class TreeNode:\n    def __init__(self, val=0, left=None, right=None):\n        self.val, self.left, self.right = val, left, right\n\n\n"),
    S("merging two sorted linked lists", "merge(a, b)", "The merged sorted list of ListNode.",
      """
      def build(xs):
          head = None
          for x in reversed(xs):
              head = ListNode(x, head)
          return head
      def values(n):
          out = []
          while n:
              out.append(n.val); n = n.next
          return out
      assert values(candidate(build([1, 3, 5]), build([2, 4]))) == [1, 2, 3, 4, 5]
      assert values(candidate(None, build([1]))) == [1]
      """,
      ("def merge(a, b):\n    dummy = tail = ListNode()\n    while a and b:\n        if a.val <= b.val:\n            tail.next, a = a, a.next\n        else:\n            tail.next, b = b, b.next\n        tail = tail.next\n    tail.next = a or b\n    return dummy.next\n",),
      ("def merge(a, b):\n    return a or b\n",),
      grading="inprocess",
      before="class ListNode:\n    def __init__(self, val=0, next=None):\n        self.val, self.next = val, next\n\n\n"),
    S("a codec that round-trips", "class Codec", "encode(list of str) -> str; decode(str) -> the list.",
      """
      c = candidate()
      for words in [[], [""], ["a", "b#c", "3#"], ["#" * 5]]:
          assert c.decode(c.encode(words)) == words
      """,
      ("class Codec:\n    def encode(self, words):\n        return ''.join(f'{len(w)}#{w}' for w in words)\n    def decode(self, s):\n        out, i = [], 0\n        while i < len(s):\n            j = s.index('#', i)\n            n = int(s[i:j])\n            out.append(s[j + 1:j + 1 + n])\n            i = j + 1 + n\n        return out\n",),
      ("class Codec:\n    def encode(self, words):\n        return '#'.join(words)\n    def decode(self, s):\n        return s.split('#') if s else []\n",)),
    S("a bank account that refuses overdrafts", "class Account", "deposit(n), withdraw(n) raising ValueError past the balance, balance attribute.",
      """
      a = candidate()
      a.deposit(10)
      a.withdraw(3)
      assert a.balance == 7
      try:
          a.withdraw(8)
      except ValueError:
          pass
      else:
          raise AssertionError("overdraft")
      assert a.balance == 7
      """,
      ("class Account:\n    def __init__(self):\n        self.balance = 0\n    def deposit(self, n):\n        self.balance += n\n    def withdraw(self, n):\n        if n > self.balance:\n            raise ValueError(n)\n        self.balance -= n\n",),
      ("class Account:\n    def __init__(self):\n        self.balance = 0\n    def deposit(self, n):\n        self.balance += n\n    def withdraw(self, n):\n        self.balance -= n\n        if self.balance < 0:\n            raise ValueError(n)\n",)),
    # Dataclasses.
    S("a prompt's dataclass returned and compared", "make_item(name: str, price: int)", "An Item.",
      """
      assert candidate("a", 3) == Item("a", 3)
      """,
      ("def make_item(name, price):\n    return Item(name, price)\n",),
      ("def make_item(name, price):\n    return Item(name, price + 1)\n",),
      grading="inprocess",
      before="from dataclasses import dataclass\n\n\n@dataclass\nclass Item:\n    name: str\n    price: int\n\n\n"),
    S("a solution's dataclass read by its fields", "stats(xs: list)", "An object with .mean and .count.",
      """
      r = candidate([1, 2, 3])
      assert r.mean == 2 and r.count == 3
      """,
      ("from dataclasses import dataclass\n@dataclass\nclass Stats:\n    mean: float\n    count: int\ndef stats(xs):\n    return Stats(sum(xs) / len(xs), len(xs))\n",),
      ("from dataclasses import dataclass\n@dataclass\nclass Stats:\n    mean: float\n    count: int\ndef stats(xs):\n    return Stats(sum(xs) // 2, len(xs))\n",)),
    S("dataclasses.asdict of the result", "record(k: str, v: int)", "A dataclass instance with fields k and v.",
      """
      import dataclasses
      assert dataclasses.asdict(candidate("a", 1)) == {"k": "a", "v": 1}
      """,
      ("from dataclasses import dataclass\n@dataclass\nclass R:\n    k: str\n    v: int\ndef record(k, v):\n    return R(k, v)\n",),
      ("from dataclasses import dataclass\n@dataclass\nclass R:\n    v: int\n    k: str\ndef record(k, v):\n    return R(k, v)\n",),
      grading="inprocess"),
    S("an order on a prompt's dataclass", "youngest(people: list)", "The Person with the least age.",
      """
      people = [Person("a", 30), Person("b", 20), Person("c", 40)]
      assert candidate(people).name == "b"
      """,
      ("def youngest(people):\n    return min(people, key=lambda p: p.age)\n",),
      ("def youngest(people):\n    return max(people, key=lambda p: p.age)\n",),
      grading="inprocess",
      before="from dataclasses import dataclass\n\n\n@dataclass(order=True)\nclass Person:\n    name: str\n    age: int\n\n\n"),
    # Stateful objects and operators on them.
    S("a counter object", "class Counter2", "incr(), decr(), value().",
      """
      c = candidate()
      for _ in range(5):
          c.incr()
      c.decr()
      assert c.value() == 4
      """,
      ("class Counter2:\n    def __init__(self):\n        self.n = 0\n    def incr(self):\n        self.n += 1\n    def decr(self):\n        self.n -= 1\n    def value(self):\n        return self.n\n",),
      ("class Counter2:\n    def __init__(self):\n        self.n = 0\n    def incr(self):\n        self.n += 1\n    def decr(self):\n        pass\n    def value(self):\n        return self.n\n",)),
    S("an iterator class", "class Countdown", "Countdown(n) iterates n, n-1, ..., 1.",
      """
      assert list(candidate(3)) == [3, 2, 1]
      it = iter(candidate(2))
      assert next(it) == 2 and next(it) == 1
      """,
      ("class Countdown:\n    def __init__(self, n):\n        self.n = n\n    def __iter__(self):\n        return iter(range(self.n, 0, -1))\n",),
      ("class Countdown:\n    def __init__(self, n):\n        self.n = n\n    def __iter__(self):\n        return iter(range(self.n, -1, -1))\n",)),
    S("vectors added with +", "vec(x: int, y: int)", "A vector supporting + and ==.",
      """
      assert candidate(1, 2) + candidate(3, 4) == candidate(4, 6)
      """,
      ("class V:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n    def __add__(self, o):\n        return V(self.x + o.x, self.y + o.y)\n    def __eq__(self, o):\n        return (self.x, self.y) == (o.x, o.y)\ndef vec(x, y):\n    return V(x, y)\n",),
      ("class V:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n    def __add__(self, o):\n        return V(self.x + o.x, self.y)\n    def __eq__(self, o):\n        return (self.x, self.y) == (o.x, o.y)\ndef vec(x, y):\n    return V(x, y)\n",),
      grading="inprocess"),
    S("sorting returned objects", "card(rank: int)", "A card ordered by rank (<).",
      """
      cards = [candidate(r) for r in (3, 1, 2)]
      assert [c.rank for c in sorted(cards)] == [1, 2, 3]
      """,
      ("class C:\n    def __init__(self, r):\n        self.rank = r\n    def __lt__(self, o):\n        return self.rank < o.rank\ndef card(rank):\n    return C(rank)\n",),
      ("class C:\n    def __init__(self, r):\n        self.rank = r\n    def __lt__(self, o):\n        return self.rank > o.rank\ndef card(rank):\n    return C(rank)\n",),
      grading="inprocess"),
    S("setting an item on a returned object", "grid(n: int)", "An n x n grid object: g[i, j] = v stores, g[i, j] reads (0 by default).",
      """
      g = candidate(3)
      g[1, 2] = 5
      assert g[1, 2] == 5 and g[0, 0] == 0
      """,
      ("class G:\n    def __init__(self, n):\n        self.d = {}\n    def __setitem__(self, k, v):\n        self.d[k] = v\n    def __getitem__(self, k):\n        return self.d.get(k, 0)\ndef grid(n):\n    return G(n)\n",),
      ("class G:\n    def __init__(self, n):\n        self.d = {}\n    def __setitem__(self, k, v):\n        pass\n    def __getitem__(self, k):\n        return self.d.get(k, 0)\ndef grid(n):\n    return G(n)\n",),
      grading="inprocess"),
    S("isinstance of a prompt's class", "shape(kind: str)", "A Square() or a Circle() for 'square' or 'circle'.",
      """
      assert isinstance(candidate("square"), Square)
      assert isinstance(candidate("circle"), Circle)
      """,
      ("def shape(kind):\n    return Square() if kind == 'square' else Circle()\n",),
      ("def shape(kind):\n    return Square()\n",),
      grading="inprocess",
      before="class Square:\n    pass\n\n\nclass Circle:\n    pass\n\n\n"),
    S("subclassing the entry point", "class Base", "greet() returns 'hi ' + self.name(); name() returns 'base'.",
      """
      class Child(candidate):
          def name(self):
              return "child"
      assert Child().greet() == "hi child"
      """,
      ("class Base:\n    def greet(self):\n        return 'hi ' + self.name()\n    def name(self):\n        return 'base'\n",),
      ("class Base:\n    def greet(self):\n        return 'hi base'\n    def name(self):\n        return 'base'\n",),
      grading="inprocess"),
    S("an async entry point", "fetch(x: int)", "async: x + 1.",
      """
      import asyncio
      assert asyncio.run(candidate(1)) == 2
      """,
      ("async def fetch(x):\n    return x + 1\n",),
      ("async def fetch(x):\n    return x\n", "def fetch(x):\n    return x + 1\n"),
      grading="inprocess"),
    # Callbacks.
    S("a lambda as a key", "best(xs: list, key)", "The item with the largest key(item).",
      """
      assert candidate(["a", "ccc", "bb"], key=len) == "ccc"
      assert candidate([3, -5, 4], key=lambda x: abs(x)) == -5
      """,
      ("def best(xs, key):\n    return max(xs, key=key)\n",),
      ("def best(xs, key):\n    return max(xs)\n",),
      grading="inprocess"),
    S("a test's function applied twice", "twice(f, x)", "f(f(x)).",
      """
      def inc(v):
          return v + 1
      assert candidate(inc, 1) == 3
      """,
      ("def twice(f, x):\n    return f(f(x))\n",),
      ("def twice(f, x):\n    return f(x)\n",),
      grading="inprocess"),
    S("a retry of a flaky callback", "retry(fn, times: int)", "Call fn until it does not raise, at most times; return its value or re-raise.",
      """
      calls = []
      def flaky():
          calls.append(1)
          if len(calls) < 3:
              raise OSError("again")
          return "ok"
      assert candidate(flaky, 5) == "ok" and len(calls) == 3
      """,
      ("def retry(fn, times):\n    for i in range(times):\n        try:\n            return fn()\n        except Exception:\n            if i == times - 1:\n                raise\n",),
      ("def retry(fn, times):\n    try:\n        return fn()\n    except Exception:\n        return 'ok'\n",),
      grading="inprocess"),
    S("a returned closure", "adder(n: int)", "A function adding n.",
      """
      add3 = candidate(3)
      assert add3(4) == 7 and callable(add3)
      assert candidate(0)(5) == 5
      """,
      ("def adder(n):\n    return lambda x: x + n\n",),
      ("def adder(n):\n    return lambda x: x + 3\n",)),
    S("a decorator the solution writes", "shouting(f)", "A decorator: the wrapped function's str result upper-cased.",
      """
      def hi():
          return "hi"
      assert candidate(hi)() == "HI"
      """,
      ("def shouting(f):\n    def w(*a, **k):\n        return f(*a, **k).upper()\n    return w\n",),
      ("def shouting(f):\n    return f\n",),
      grading="inprocess"),
    # Generators.
    S("a generator of Fibonacci numbers", "fibs()", "An infinite generator 0, 1, 1, 2, ...",
      """
      import itertools
      assert list(itertools.islice(candidate(), 8)) == [0, 1, 1, 2, 3, 5, 8, 13]
      """,
      ("def fibs():\n    a, b = 0, 1\n    while True:\n        yield a\n        a, b = b, a + b\n",),
      ("def fibs():\n    a, b = 1, 1\n    while True:\n        yield a\n        a, b = b, a + b\n",)),
    S("a generator that takes send()", "averager()", "A coroutine generator: after priming, send(x) returns the running mean.",
      """
      g = candidate()
      next(g)
      assert g.send(2) == 2 and g.send(4) == 3
      """,
      ("def averager():\n    total = n = 0\n    mean = None\n    while True:\n        x = yield mean\n        total += x\n        n += 1\n        mean = total / n\n",),
      ("def averager():\n    mean = None\n    while True:\n        x = yield mean\n        mean = x\n",)),
    S("a generator's type", "squares(n: int)", "A generator of the first n squares.",
      """
      import types
      g = candidate(3)
      assert isinstance(g, types.GeneratorType)
      assert list(g) == [0, 1, 4]
      """,
      ("def squares(n):\n    for i in range(n):\n        yield i * i\n",),
      ("def squares(n):\n    return iter([i * i for i in range(n)])\n",),
      grading="inprocess"),
    S("yield from", "flatten(xs: list)", "A generator over the items of nested lists, depth first.",
      """
      assert list(candidate([1, [2, [3, 4]], 5])) == [1, 2, 3, 4, 5]
      assert list(candidate([])) == []
      """,
      ("def flatten(xs):\n    for x in xs:\n        if isinstance(x, list):\n            yield from flatten(x)\n        else:\n            yield x\n",),
      ("def flatten(xs):\n    for x in xs:\n        if isinstance(x, list):\n            yield from x\n        else:\n            yield x\n",)),
    S("an exhausted generator", "once(x)", "A generator yielding x once.",
      """
      g = candidate(5)
      assert next(g) == 5
      try:
          next(g)
      except StopIteration:
          pass
      else:
          raise AssertionError("more")
      """,
      ("def once(x):\n    yield x\n",),
      ("def once(x):\n    while True:\n        yield x\n",)),
    # Randomised tests.
    S("random inputs checked against a reference", "median(xs: list)", "The median (the mean of the middle two for an even count).",
      """
      import random
      rng = random.Random(5)
      for _ in range(60):
          xs = [rng.randint(-50, 50) for _ in range(rng.randint(1, 9))]
          s = sorted(xs)
          m = len(s) // 2
          want = s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
          assert candidate(xs) == want, xs
      """,
      ("def median(xs):\n    s = sorted(xs)\n    m = len(s) // 2\n    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2\n",),
      ("def median(xs):\n    s = sorted(xs)\n    return s[len(s) // 2]\n",)),
    S("unseeded random inputs", "is_sorted(xs: list)", "True when xs is sorted ascending.",
      """
      import random
      for _ in range(40):
          xs = sorted(random.sample(range(100), 5))
          assert candidate(xs) is True
          assert candidate(xs[::-1]) is False
      assert candidate([1, 1, 2]) is True
      """,
      ("def is_sorted(xs):\n    return all(a <= b for a, b in zip(xs, xs[1:]))\n",),
      ("def is_sorted(xs):\n    return all(a < b for a, b in zip(xs, xs[1:]))\n", "def is_sorted(xs):\n    return 1 if xs == sorted(xs) else 0\n")),
    S("a Random instance handed over", "pick_from(rng, xs: list)", "rng.choice(xs).",
      """
      import random
      for seed in range(5):
          assert candidate(random.Random(seed), [1, 2, 3]) == random.Random(seed).choice([1, 2, 3])
      """,
      ("def pick_from(rng, xs):\n    return rng.choice(xs)\n",),
      ("import random\ndef pick_from(rng, xs):\n    return random.choice(xs)\n",),
      grading="inprocess"),
    # Files.
    S("a file the candidate writes and the test reads", "save(path: str, lines: list)", "Write the lines to path, one per line.",
      """
      candidate("out.txt", ["a", "b"])
      with open("out.txt") as f:
          assert f.read().splitlines() == ["a", "b"]
      """,
      ("def save(path, lines):\n    with open(path, 'w') as f:\n        f.write('\\n'.join(lines) + '\\n')\n",),
      ("def save(path, lines):\n    with open(path, 'w') as f:\n        f.write(''.join(lines))\n",),
      grading="inprocess"),
    S("a JSON file the test writes", "load_total(path: str)", "The sum of the numbers in the JSON list at path.",
      """
      import json
      with open("nums.json", "w") as f:
          json.dump([1, 2, 3], f)
      assert candidate("nums.json") == 6
      """,
      ("import json\ndef load_total(path):\n    with open(path) as f:\n        return sum(json.load(f))\n",),
      ("import json\ndef load_total(path):\n    with open(path) as f:\n        return len(json.load(f))\n",),
      grading="inprocess"),
    S("paths as strings only", "stem(path: str)", "The file name without its last suffix.",
      """
      assert candidate("/a/b/c.tar.gz") == "c.tar"
      assert candidate("x") == "x"
      """,
      ("import os\ndef stem(path):\n    return os.path.splitext(os.path.basename(path))[0]\n",),
      ("def stem(path):\n    return path.split('/')[-1].split('.')[0]\n",)),
    # Exceptions.
    S("a KeyError's args", "lookup(d: dict, k)", "d[k], or KeyError(k) when missing.",
      """
      assert candidate({1: 2}, 1) == 2
      try:
          candidate({}, "x")
      except KeyError as e:
          assert e.args == ("x",)
      else:
          raise AssertionError("no error")
      """,
      ("def lookup(d, k):\n    return d[k]\n",),
      ("def lookup(d, k):\n    if k not in d:\n        raise KeyError('missing')\n    return d[k]\n",)),
    S("an exception's cause", "parse(s: str)", "int(s); on failure raise ValueError('bad') from the original error.",
      """
      try:
          candidate("x")
      except ValueError as e:
          assert str(e) == "bad" and isinstance(e.__cause__, ValueError)
      else:
          raise AssertionError("no error")
      """,
      ("def parse(s):\n    try:\n        return int(s)\n    except ValueError as e:\n        raise ValueError('bad') from e\n",),
      ("def parse(s):\n    try:\n        return int(s)\n    except ValueError:\n        raise ValueError('bad') from None\n",),
      grading="inprocess"),
    S("the exception message", "safe_div(a: int, b: int)", "a / b; ZeroDivisionError('b is zero') when b == 0.",
      """
      assert candidate(6, 3) == 2
      try:
          candidate(1, 0)
      except ZeroDivisionError as e:
          assert str(e) == "b is zero"
      else:
          raise AssertionError("no error")
      """,
      ("def safe_div(a, b):\n    if b == 0:\n        raise ZeroDivisionError('b is zero')\n    return a / b\n",),
      ("def safe_div(a, b):\n    return a / b\n",)),
    S("assertRaises with a regex", "positive(x: int)", "x, or ValueError('negative: x') when x < 0.",
      """
      import unittest
      tc = unittest.TestCase()
      with tc.assertRaisesRegex(ValueError, r"negative: -3"):
          candidate(-3)
      tc.assertEqual(candidate(2), 2)
      """,
      ("def positive(x):\n    if x < 0:\n        raise ValueError(f'negative: {x}')\n    return x\n",),
      ("def positive(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",)),
    S("an exception raised from a generator", "checked(xs: list)", "A generator of xs, raising ValueError at the first negative.",
      """
      g = candidate([1, -1, 2])
      assert next(g) == 1
      try:
          next(g)
      except ValueError:
          pass
      else:
          raise AssertionError("no error")
      """,
      ("def checked(xs):\n    for x in xs:\n        if x < 0:\n            raise ValueError(x)\n        yield x\n",),
      ("def checked(xs):\n    for x in xs:\n        if x >= 0:\n            yield x\n",)),
    S("a custom exception's attributes", "validate(age: int)", "age, or raise InvalidAge with .age set.",
      """
      try:
          candidate(-1)
      except InvalidAge as e:
          assert e.age == -1
      else:
          raise AssertionError("no error")
      assert candidate(5) == 5
      """,
      ("def validate(age):\n    if age < 0:\n        e = InvalidAge('bad')\n        e.age = age\n        raise e\n    return age\n",),
      ("def validate(age):\n    if age < 0:\n        raise InvalidAge('bad')\n    return age\n",),
      before="class InvalidAge(Exception):\n    pass\n\n\n"),
    S("an exception hierarchy caught by its base", "fetch_item(i: int)", "Raise NotFound (a LookupError) for i < 0, else i.",
      """
      try:
          candidate(-1)
      except LookupError as e:
          assert type(e).__name__ == "NotFound"
      else:
          raise AssertionError("no error")
      """,
      ("class NotFound(LookupError):\n    pass\ndef fetch_item(i):\n    if i < 0:\n        raise NotFound(i)\n    return i\n",),
      ("class NotFound(Exception):\n    pass\ndef fetch_item(i):\n    if i < 0:\n        raise NotFound(i)\n    return i\n",)),
    S("SystemExit from the candidate", "main(argv: list)", "Return 0 for argv == [], else 1; never exit the process.",
      """
      assert candidate([]) == 0
      assert candidate(["x"]) == 1
      """,
      ("def main(argv):\n    return 0 if not argv else 1\n",),
      ("import sys\ndef main(argv):\n    if argv:\n        sys.exit(1)\n    return 0\n",)),
    # Printing.
    S("print with end and sep", "row(xs: list)", "Print the items separated by ', ' and ending with ';'.",
      """
      import io
      from contextlib import redirect_stdout
      buf = io.StringIO()
      with redirect_stdout(buf):
          candidate([1, 2, 3])
      assert buf.getvalue() == "1, 2, 3;"
      """,
      ("def row(xs):\n    print(*xs, sep=', ', end=';')\n",),
      ("def row(xs):\n    print(*xs, sep=', ')\n",)),
    S("sys.stdout.write", "emit(s: str)", "Write s to sys.stdout, no newline.",
      """
      import io, sys
      old = sys.stdout
      sys.stdout = io.StringIO()
      try:
          candidate("abc")
          got = sys.stdout.getvalue()
      finally:
          sys.stdout = old
      assert got == "abc"
      """,
      ("import sys\ndef emit(s):\n    sys.stdout.write(s)\n",),
      ("def emit(s):\n    print(s)\n",)),
    S("print to stderr", "complain(s: str)", "Print s to stderr only.",
      """
      import io
      from contextlib import redirect_stderr, redirect_stdout
      out, err = io.StringIO(), io.StringIO()
      with redirect_stdout(out), redirect_stderr(err):
          candidate("no")
      assert out.getvalue() == "" and err.getvalue() == "no\\n"
      """,
      ("import sys\ndef complain(s):\n    print(s, file=sys.stderr)\n",),
      ("def complain(s):\n    print(s)\n",)),
    S("printed and returned", "show(x: int)", "Print x and return x * 2.",
      """
      import io
      from contextlib import redirect_stdout
      buf = io.StringIO()
      with redirect_stdout(buf):
          r = candidate(4)
      assert r == 8 and buf.getvalue() == "4\\n"
      """,
      ("def show(x):\n    print(x)\n    return x * 2\n",),
      ("def show(x):\n    return x * 2\n", "def show(x):\n    print(x * 2)\n    return x * 2\n")),
    S("a doctest of the prompt", "triple(x: int)", ">>> triple(2)\n    6",
      """
      import doctest
      assert candidate(2) == 6
      assert candidate(-1) == -3
      """,
      ("def triple(x):\n    return 3 * x\n",),
      ("def triple(x):\n    return x + 4\n",)),
    # Mutation.
    S("an in-place sort of nested lists", "sort_rows(m: list)", "Sort each row of m in place.",
      """
      m = [[3, 1], [2, 0]]
      rows = list(m)
      candidate(m)
      assert m == [[1, 3], [0, 2]] and m[0] is rows[0]
      """,
      ("def sort_rows(m):\n    for r in m:\n        r.sort()\n",),
      ("def sort_rows(m):\n    m[:] = [sorted(r) for r in m]\n",)),
    S("an input that must not change", "without_max(xs: list)", "A copy of xs without its largest item; xs unchanged.",
      """
      xs = [1, 5, 3]
      assert candidate(xs) == [1, 3] and xs == [1, 5, 3]
      """,
      ("def without_max(xs):\n    ys = list(xs)\n    ys.remove(max(ys))\n    return ys\n",),
      ("def without_max(xs):\n    xs.remove(max(xs))\n    return xs\n",)),
    S("a dict updated in place", "bump(d: dict, k)", "Add 1 to d[k] (0 when missing); return None.",
      """
      d = {"a": 1}
      assert candidate(d, "a") is None and candidate(d, "b") is None
      assert d == {"a": 2, "b": 1}
      """,
      ("def bump(d, k):\n    d[k] = d.get(k, 0) + 1\n",),
      ("def bump(d, k):\n    d = dict(d)\n    d[k] = d.get(k, 0) + 1\n",)),
    S("a set changed in place", "drop_evens(s: set)", "Remove the even numbers from s in place.",
      """
      s = {1, 2, 3, 4}
      candidate(s)
      assert s == {1, 3}
      """,
      ("def drop_evens(s):\n    for x in [x for x in s if x % 2 == 0]:\n        s.discard(x)\n",),
      ("def drop_evens(s):\n    s = {x for x in s if x % 2}\n",)),
    S("a matrix rotated in place", "rotate(m: list)", "Rotate the square matrix m 90 degrees clockwise, in place.",
      """
      m = [[1, 2], [3, 4]]
      candidate(m)
      assert m == [[3, 1], [4, 2]]
      """,
      ("def rotate(m):\n    m[:] = [list(r) for r in zip(*m[::-1])]\n",),
      ("def rotate(m):\n    m[:] = [list(r) for r in zip(*m)]\n",)),
    # Recursion, big integers, floats.
    S("deep recursion within the default limit", "count_down(n: int)", "A list n..1, built recursively.",
      """
      assert candidate(800) == list(range(800, 0, -1))
      """,
      ("def count_down(n):\n    return [] if n == 0 else [n] + count_down(n - 1)\n",),
      ("def count_down(n):\n    return [] if n == 0 else [n] + count_down(n - 2 if n > 1 else 0)\n",)),
    S("a deeply nested result", "nest_list(n: int)", "A list nested n deep: [[[...[]...]]].",
      """
      r = candidate(400)
      d = 0
      while r:
          r = r[0]
          d += 1
      assert d == 399
      """,
      ("def nest_list(n):\n    r = []\n    for _ in range(n - 1):\n        r = [r]\n    return r\n",),
      ("def nest_list(n):\n    r = []\n    for _ in range(n):\n        r = [r]\n    return r\n",),
      grading="inprocess"),
    S("a big factorial", "fact(n: int)", "n!.",
      """
      import math
      assert candidate(100) == math.factorial(100)
      assert candidate(0) == 1
      """,
      ("def fact(n):\n    r = 1\n    for k in range(2, n + 1):\n        r *= k\n    return r\n",),
      ("def fact(n):\n    r = 1.0\n    for k in range(2, n + 1):\n        r *= k\n    return r\n",)),
    S("huge and negative integers", "neg_pow(b: int, e: int)", "-(b ** e).",
      """
      assert candidate(7, 300) == -(7 ** 300)
      assert candidate(2, 64) == -18446744073709551616
      """,
      ("def neg_pow(b, e):\n    return -(b ** e)\n",),
      ("def neg_pow(b, e):\n    return -(b ** e) & ((1 << 64) - 1)\n",)),
    S("digits of a big power", "digit_sum(n: int)", "The sum of the decimal digits of 2 ** n.",
      """
      assert candidate(1000) == 1366
      assert candidate(15) == 26
      """,
      ("def digit_sum(n):\n    return sum(map(int, str(2 ** n)))\n",),
      ("def digit_sum(n):\n    return sum(map(int, str(2 ** n)[:50]))\n",)),
    S("NaN inside a list", "with_nan(xs: list)", "xs with float('nan') appended.",
      """
      import math
      r = candidate([1.0])
      assert r[0] == 1.0 and math.isnan(r[1]) and len(r) == 2
      """,
      ("def with_nan(xs):\n    return xs + [float('nan')]\n",),
      ("def with_nan(xs):\n    return xs + [None]\n",)),
    S("the prompt's own NaN, compared inside a list", "missing_marker()", "[MISSING], the prompt's NaN.",
      """
      assert candidate() == [MISSING]
      """,
      ("def missing_marker():\n    return [MISSING]\n",),
      ("def missing_marker():\n    return [float('nan')]\n",),
      grading="inprocess",
      before="MISSING = float('nan')\n\n\n"),
    S("negative zero", "neg(x: float)", "-x.",
      """
      import math
      assert math.copysign(1, candidate(0.0)) == -1
      assert candidate(2.5) == -2.5
      """,
      ("def neg(x):\n    return -x\n",),
      ("def neg(x):\n    return 0 - x\n",)),
    S("infinities", "safe_inv(x: float)", "1 / x, or inf with x's sign for a zero.",
      """
      import math
      assert candidate(0.0) == math.inf and candidate(-0.0) == -math.inf and candidate(4) == 0.25
      """,
      ("import math\ndef safe_inv(x):\n    return math.copysign(math.inf, x) if x == 0 else 1 / x\n",),
      ("import math\ndef safe_inv(x):\n    return math.inf if x == 0 else 1 / x\n",)),
    S("floats compared with a tolerance", "mean(xs: list)", "The arithmetic mean.",
      """
      import math
      assert math.isclose(candidate([0.1] * 10), 0.1)
      assert abs(candidate([1, 2]) - 1.5) < 1e-12
      """,
      ("def mean(xs):\n    return sum(xs) / len(xs)\n",),
      ("def mean(xs):\n    return sum(xs) // len(xs)\n",)),
    S("exact float sums", "exact_sum(xs: list)", "math.fsum(xs).",
      """
      assert candidate([0.1] * 10) == 1.0
      assert candidate([1e100, 1.0, -1e100]) == 1.0
      """,
      ("import math\ndef exact_sum(xs):\n    return math.fsum(xs)\n",),
      ("def exact_sum(xs):\n    return sum(xs)\n",)),
    S("a float's repr", "third_str()", "repr(1 / 3).",
      """
      assert candidate() == "0.3333333333333333"
      """,
      ("def third_str():\n    return repr(1 / 3)\n",),
      ("def third_str():\n    return str(round(1 / 3, 6))\n",)),
    S("complex numbers", "roots(a: float, b: float, c: float)", "The two roots of ax^2+bx+c as complex numbers, + root first.",
      """
      r = candidate(1, 0, 1)
      assert r == (1j, -1j)
      """,
      ("import cmath\ndef roots(a, b, c):\n    d = cmath.sqrt(b * b - 4 * a * c)\n    return ((-b + d) / (2 * a), (-b - d) / (2 * a))\n",),
      ("import cmath\ndef roots(a, b, c):\n    d = cmath.sqrt(b * b - 4 * a * c)\n    return ((-b - d) / (2 * a), (-b + d) / (2 * a))\n",)),
    # Threads.
    S("the test's threads call the candidate at once", "slow_square(x: int)", "x * x.",
      """
      import threading
      results = {}
      def work(k):
          results[k] = candidate(k)
      threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
      for t in threads:
          t.start()
      for t in threads:
          t.join()
      assert results == {k: k * k for k in range(8)}
      """,
      ("import time\ndef slow_square(x):\n    time.sleep(0.01)\n    return x * x\n",),
      ("def slow_square(x):\n    return x * 2\n",)),
    # Plain styles of HumanEval-like tasks.
    S("a string reversed by words", "reverse_words(s: str)", "The words of s in reverse order, single-spaced.",
      """
      assert candidate("a b  c") == "c b a"
      assert candidate("") == ""
      """,
      ("def reverse_words(s):\n    return ' '.join(reversed(s.split()))\n",),
      ("def reverse_words(s):\n    return s[::-1]\n",)),
    S("a palindrome check", "is_palindrome(s: str)", "True when s reads the same backwards, ignoring case and non-letters.",
      """
      assert candidate("A man, a plan, a canal: Panama") is True
      assert candidate("ab") is False
      """,
      ("def is_palindrome(s):\n    t = [c.lower() for c in s if c.isalnum()]\n    return t == t[::-1]\n",),
      ("def is_palindrome(s):\n    return s == s[::-1]\n",)),
    S("a tuple result", "divmod2(a: int, b: int)", "(a // b, a % b).",
      """
      assert candidate(7, 2) == (3, 1)
      assert type(candidate(7, 2)) is tuple
      """,
      ("def divmod2(a, b):\n    return (a // b, a % b)\n",),
      ("def divmod2(a, b):\n    return [a // b, a % b]\n",)),
    S("None as an answer", "find(xs: list, x)", "The index of x in xs, or None.",
      """
      assert candidate([1, 2], 2) == 1
      assert candidate([1, 2], 3) is None
      """,
      ("def find(xs, x):\n    return xs.index(x) if x in xs else None\n",),
      ("def find(xs, x):\n    return xs.index(x) if x in xs else -1\n",)),
    S("bytes in and out", "xor_bytes(a: bytes, b: bytes)", "The bytewise xor.",
      """
      assert candidate(b"\\x01\\x02", b"\\x03\\x03") == b"\\x02\\x01"
      assert type(candidate(b"", b"")) is bytes
      """,
      ("def xor_bytes(a, b):\n    return bytes(x ^ y for x, y in zip(a, b))\n",),
      ("def xor_bytes(a, b):\n    return bytearray(x ^ y for x, y in zip(a, b))\n",)),
    S("a stable sort by key", "by_length(words: list)", "The words sorted by length, ties in their order.",
      """
      assert candidate(["cc", "a", "bb", "d"]) == ["a", "d", "cc", "bb"]
      """,
      ("def by_length(words):\n    return sorted(words, key=len)\n",),
      ("def by_length(words):\n    return sorted(words, key=lambda w: (len(w), w))\n",)),
    S("a set result compared to a set", "letters(s: str)", "The set of letters in s.",
      """
      assert candidate("hello") == {"h", "e", "l", "o"}
      """,
      ("def letters(s):\n    return set(s)\n",),
      ("def letters(s):\n    return list(set(s))\n",)),
    S("a dict of lists", "index_words(text: str)", "A dict from each word to the positions where it occurs.",
      """
      assert candidate("a b a") == {"a": [0, 2], "b": [1]}
      """,
      ("def index_words(text):\n    d = {}\n    for i, w in enumerate(text.split()):\n        d.setdefault(w, []).append(i)\n    return d\n",),
      ("def index_words(text):\n    return {w: [i] for i, w in enumerate(text.split())}\n",)),
    S("a boolean that must be a bool", "has_dupes(xs: list)", "True when xs has a repeated item.",
      """
      assert candidate([1, 2, 1]) is True and candidate([1]) is False
      """,
      ("def has_dupes(xs):\n    return len(set(xs)) != len(xs)\n",),
      ("def has_dupes(xs):\n    return len(xs) - len(set(xs))\n",)),
    S("a string with unicode", "initials(name: str)", "The upper-cased first letters of each word.",
      """
      assert candidate("émile zola") == "ÉZ"
      assert candidate("") == ""
      """,
      ("def initials(name):\n    return ''.join(w[0].upper() for w in name.split())\n",),
      ("def initials(name):\n    return ''.join(w[0] for w in name.split())\n",)),
    S("a list of tuples sorted", "pairs_sorted(d: dict)", "d's items sorted by value descending, then key.",
      """
      assert candidate({"a": 1, "b": 2, "c": 2}) == [("b", 2), ("c", 2), ("a", 1)]
      """,
      ("def pairs_sorted(d):\n    return sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))\n",),
      ("def pairs_sorted(d):\n    return sorted(d.items(), key=lambda kv: kv[1], reverse=True)[::-1]\n",)),
    S("a matrix transpose", "transpose(m: list)", "The transpose, as a list of lists.",
      """
      assert candidate([[1, 2, 3], [4, 5, 6]]) == [[1, 4], [2, 5], [3, 6]]
      assert candidate([]) == []
      """,
      ("def transpose(m):\n    return [list(r) for r in zip(*m)]\n",),
      ("def transpose(m):\n    return list(zip(*m))\n",)),
    S("a helper of the prompt used by the test", "encode_shift(s: str)", "Each letter shifted by 5.",
      """
      for s in ["abc", "xyz", "hello"]:
          assert decode_shift(candidate(s)) == s
      """,
      ("def encode_shift(s):\n    return ''.join(chr((ord(c) - 97 + 5) % 26 + 97) for c in s)\n",),
      ("def encode_shift(s):\n    return ''.join(chr((ord(c) - 97 + 4) % 26 + 97) for c in s)\n",),
      before="def decode_shift(s: str) -> str:\n    return ''.join(chr((ord(c) - 97 - 5) % 26 + 97) for c in s)\n\n\n"),
    S("many calls in a loop", "collatz_len(n: int)", "The number of terms in n's Collatz sequence.",
      """
      def ref(n):
          k = 1
          while n != 1:
              n = n // 2 if n % 2 == 0 else 3 * n + 1
              k += 1
          return k
      for n in range(1, 300):
          assert candidate(n) == ref(n), n
      """,
      ("def collatz_len(n):\n    k = 1\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        k += 1\n    return k\n",),
      ("def collatz_len(n):\n    k = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n        k += 1\n    return k\n",)),
    S("keyword-only arguments", "clip(x: float, *, lo: float, hi: float)", "x limited to [lo, hi].",
      """
      assert candidate(5, lo=0, hi=3) == 3
      try:
          candidate(5, 0, 3)
      except TypeError:
          pass
      else:
          raise AssertionError("positional accepted")
      """,
      ("def clip(x, *, lo, hi):\n    return min(max(x, lo), hi)\n",),
      ("def clip(x, lo=0, hi=1):\n    return min(max(x, lo), hi)\n",)),
    S("variadic arguments", "total(*xs, start=0)", "start plus the sum of xs.",
      """
      assert candidate() == 0 and candidate(1, 2, 3) == 6 and candidate(1, start=10) == 11
      """,
      ("def total(*xs, start=0):\n    return start + sum(xs)\n",),
      ("def total(*xs, start=0):\n    return sum(xs)\n",)),
    S("a string of a returned object", "money(cents: int)", "An object whose str is like '$1.05'.",
      """
      assert str(candidate(105)) == "$1.05"
      assert f"{candidate(7)}" == "$0.07"
      """,
      ("class M:\n    def __init__(self, c):\n        self.c = c\n    def __str__(self):\n        return f'${self.c // 100}.{self.c % 100:02d}'\ndef money(cents):\n    return M(cents)\n",),
      ("class M:\n    def __init__(self, c):\n        self.c = c\n    def __str__(self):\n        return f'${self.c / 100:.1f}'\ndef money(cents):\n    return M(cents)\n",)),
    S("len and truth of a returned object", "bag_of(xs: list)", "An object with len() of the distinct items, falsy when empty.",
      """
      assert len(candidate([1, 1, 2])) == 2
      assert not candidate([])
      """,
      ("class B:\n    def __init__(self, xs):\n        self.s = set(xs)\n    def __len__(self):\n        return len(self.s)\ndef bag_of(xs):\n    return B(xs)\n",),
      ("class B:\n    def __init__(self, xs):\n        self.xs = xs\n    def __len__(self):\n        return len(self.xs)\ndef bag_of(xs):\n    return B(xs)\n",)),
    S("membership in a returned object", "evens_upto(n: int)", "An object: k in it when k is even and 0 <= k <= n.",
      """
      e = candidate(10)
      assert 4 in e and 5 not in e and 12 not in e
      """,
      ("class E:\n    def __init__(self, n):\n        self.n = n\n    def __contains__(self, k):\n        return 0 <= k <= self.n and k % 2 == 0\ndef evens_upto(n):\n    return E(n)\n",),
      ("class E:\n    def __init__(self, n):\n        self.n = n\n    def __contains__(self, k):\n        return k % 2 == 0\ndef evens_upto(n):\n    return E(n)\n",)),
    S("a mock's assert_called_once_with", "ping(client, host: str)", "client.send('ping', host) once.",
      """
      from unittest import mock
      c = mock.Mock()
      candidate(c, "h")
      c.send.assert_called_once_with("ping", "h")
      """,
      ("def ping(client, host):\n    client.send('ping', host)\n",),
      ("def ping(client, host):\n    client.send('ping', host)\n    client.send('ping', host)\n",),
      grading="inprocess"),
    S("mock.patch of what the candidate calls", "now_year()", "time.localtime().tm_year.",
      """
      import time
      from unittest import mock
      with mock.patch("time.localtime", return_value=time.struct_time((1999, 1, 1, 0, 0, 0, 0, 1, 0))):
          assert candidate() == 1999
      """,
      ("import time\ndef now_year():\n    return time.localtime().tm_year\n",),
      ("def now_year():\n    return 2024\n",),
      grading="inprocess"),
]
