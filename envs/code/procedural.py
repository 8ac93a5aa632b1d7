"""Procedural code tasks: small Python functions made from a seed, with hidden tests and a reference solution.

A spec names a difficulty level, a split and a seed range::

    procedural:easy:train:0-999      # up to 1,000 training tasks
    procedural:easy:heldout:0-99     # up to 100 held-out tasks

Each seed draws a template of the level (arithmetic, strings, lists, dicts, conditionals, loops; the
harder levels chain list steps) and its parameters. A task *is* its template and parameters (its
``key``): the function's name, docstring, example, hidden test inputs and expected values all follow
from the key alone, and the task id is a hash of it, so two seeds that draw the same function give
the same task, and a range lists it once. The split is decided by the key too (a fixed fifth of all
keys is held out), and a seed whose draw falls in the other split draws again: no seed range of one
split can ever hold a task of the other, whatever the ranges. The expected values come from running
the reference solution here, on the host: it is this module's own code, never a model's.

Levels: ``easy`` (one operation: ``x + 7``, reverse a string, count items above 3), ``medium`` (two list
steps, or a loop with a condition), ``hard`` (three list steps).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentgym.errors import DataError
from agentgym.types import Task

PREFIX = "procedural:"
LEVELS = ("easy", "medium", "hard")
SPLITS = ("train", "heldout")
HELDOUT_SHARE = 5
"""One key in this many is held out."""
TESTS = 6
"""Hidden test calls per task."""
MAX_SEEDS = 1_000_000
"""Most seeds one spec may name."""

WORDS = ("apple", "river", "stone", "cloud", "tiger", "lemon", "piano", "robot", "ocean", "maple", "candle",
         "forest", "silver", "garden", "rocket", "pepper", "window", "yellow", "bridge", "camera")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class Function:
    """One task's function: what the model sees (signature, docstring) and what grades it (body, inputs)."""

    name: str
    params: str
    returns: str
    doc: str
    body: str
    inputs: Callable[[random.Random], tuple[Any, ...]]

    @property
    def signature(self) -> str:
        return f"def {self.name}({self.params}) -> {self.returns}:"


# ------------------------------------------------------------------------------------------ inputs
def _int(rng: random.Random) -> int:
    return rng.randint(-20, 60)


def _nonneg(rng: random.Random) -> int:
    return rng.randint(0, 12)


def _word(rng: random.Random) -> str:
    word = rng.choice(WORDS)
    return word if rng.random() < 0.7 else word + rng.choice(WORDS)[: rng.randint(1, 4)]


def _ints(rng: random.Random, low: int = 0) -> list[int]:
    return [rng.randint(-9, 20) for _ in range(rng.randint(low, 7))]


def _dict(rng: random.Random) -> dict[str, int]:
    return {w: rng.randint(-5, 20) for w in rng.sample(WORDS, rng.randint(1, 5))}


def one(draw: Callable[[random.Random], Any]) -> Callable[[random.Random], tuple[Any, ...]]:
    return lambda rng: (draw(rng),)


INT, NONNEG, WORD = one(_int), one(_nonneg), one(_word)
INTS, INTS1, DICT = one(_ints), one(lambda rng: _ints(rng, 1)), one(_dict)
PAIR = lambda rng: (_int(rng), _int(rng))  # noqa: E731
WORD_NUM = lambda rng: (_word(rng), rng.randint(0, 4))  # noqa: E731


def _dict_and_key(rng: random.Random, key: str) -> tuple[Any, ...]:
    d = _dict(rng)
    if rng.random() < 0.5:
        d[key] = rng.randint(-5, 20)
    return (d,)


def _word_with(rng: random.Random, letter: str) -> tuple[Any, ...]:
    word = _word(rng)
    if rng.random() < 0.6:
        at = rng.randint(0, len(word))
        word = word[:at] + letter * rng.randint(1, 2) + word[at:]
    return (word,)


# ------------------------------------------------------------------------------------------ easy
def _easy(rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A template name and parameters of the easy level."""
    name = rng.choice(sorted(EASY))
    return name, EASY[name][0](rng)


Params = Callable[[random.Random], dict[str, Any]]
Make = Callable[[dict[str, Any]], Function]
NONE: Params = lambda rng: {}  # noqa: E731


def k_in(low: int, high: int) -> Params:
    return lambda rng: {"k": rng.randint(low, high)}


LETTER: Params = lambda rng: {"c": rng.choice(LETTERS)}  # noqa: E731
SUFFIX: Params = lambda rng: {"w": rng.choice(WORDS)}  # noqa: E731

EASY: dict[str, tuple[Params, Make]] = {
    # arithmetic
    "add": (k_in(1, 50), lambda p: Function(f"add_{p['k']}", "x: int", "int", f"Return x plus {p['k']}.",
                                             f"return x + {p['k']}", INT)),
    "subtract": (k_in(1, 50), lambda p: Function(f"minus_{p['k']}", "x: int", "int", f"Return x minus {p['k']}.",
                                                 f"return x - {p['k']}", INT)),
    "multiply": (k_in(2, 12), lambda p: Function(f"times_{p['k']}", "x: int", "int",
                                                 f"Return x multiplied by {p['k']}.", f"return x * {p['k']}", INT)),
    "affine": (lambda rng: {"a": rng.randint(2, 9), "b": rng.randint(1, 9)},
               lambda p: Function("scale_and_shift", "x: int", "int", f"Return x times {p['a']}, plus {p['b']}.",
                                  f"return x * {p['a']} + {p['b']}", INT)),
    "remainder": (k_in(2, 9), lambda p: Function(f"mod_{p['k']}", "x: int", "int",
                                                 f"Return the remainder of x divided by {p['k']}.",
                                                 f"return x % {p['k']}", INT)),
    "floor_div": (k_in(2, 9), lambda p: Function(f"div_{p['k']}", "x: int", "int",
                                                 f"Return x divided by {p['k']}, rounded down (floor division).",
                                                 f"return x // {p['k']}", INT)),
    "sum_two": (NONE, lambda p: Function("add", "a: int, b: int", "int", "Return the sum of a and b.",
                                         "return a + b", PAIR)),
    "square": (NONE, lambda p: Function("square", "x: int", "int", "Return x squared.", "return x * x", INT)),
    # strings
    "upper": (NONE, lambda p: Function("shout", "s: str", "str", "Return s in upper case.", "return s.upper()",
                                       WORD)),
    "reverse": (NONE, lambda p: Function("reverse", "s: str", "str", "Return the string s reversed.",
                                         "return s[::-1]", WORD)),
    "length": (NONE, lambda p: Function("length", "s: str", "int", "Return the number of characters in s.",
                                        "return len(s)", WORD)),
    "repeat": (k_in(2, 5), lambda p: Function(f"repeat_{p['k']}", "s: str", "str",
                                              f"Return s repeated {p['k']} times.", f"return s * {p['k']}", WORD)),
    "append": (SUFFIX, lambda p: Function(f"add_{p['w']}", "s: str", "str", f"Return s followed by {p['w']!r}.",
                                          f"return s + {p['w']!r}", WORD)),
    "prefix": (k_in(1, 4), lambda p: Function(f"first_{p['k']}", "s: str", "str",
                                              f"Return the first {p['k']} characters of s.",
                                              f"return s[:{p['k']}]", WORD)),
    "count_letter": (LETTER, lambda p: Function(f"count_{p['c']}", "s: str", "int",
                                                f"Return how many times the letter {p['c']!r} appears in s.",
                                                f"return s.count({p['c']!r})",
                                                lambda rng: _word_with(rng, p["c"]))),
    "has_letter": (LETTER, lambda p: Function(f"has_{p['c']}", "s: str", "bool",
                                              f"Return True if s contains the letter {p['c']!r}, else False.",
                                              f"return {p['c']!r} in s", lambda rng: _word_with(rng, p["c"]))),
    # lists
    "list_sum": (NONE, lambda p: Function("total", "xs: list[int]", "int", "Return the sum of the numbers in xs.",
                                          "return sum(xs)", INTS)),
    "list_max": (NONE, lambda p: Function("largest", "xs: list[int]", "int",
                                          "Return the largest number in xs (xs is not empty).", "return max(xs)",
                                          INTS1)),
    "list_min": (NONE, lambda p: Function("smallest", "xs: list[int]", "int",
                                          "Return the smallest number in xs (xs is not empty).", "return min(xs)",
                                          INTS1)),
    "list_last": (NONE, lambda p: Function("last", "xs: list[int]", "int",
                                           "Return the last item of xs (xs is not empty).", "return xs[-1]", INTS1)),
    "list_add": (k_in(1, 20), lambda p: Function(f"add_{p['k']}_to_each", "xs: list[int]", "list[int]",
                                                 f"Return a new list with {p['k']} added to each number in xs.",
                                                 f"return [x + {p['k']} for x in xs]", INTS)),
    "list_count_above": (k_in(0, 10), lambda p: Function(
        f"count_above_{p['k']}", "xs: list[int]", "int",
        f"Return how many numbers in xs are greater than {p['k']}.",
        f"return sum(1 for x in xs if x > {p['k']})", INTS)),
    "list_keep_above": (k_in(0, 10), lambda p: Function(
        f"keep_above_{p['k']}", "xs: list[int]", "list[int]",
        f"Return the numbers in xs that are greater than {p['k']}, in order.",
        f"return [x for x in xs if x > {p['k']}]", INTS)),
    # dicts
    "dict_get": (lambda rng: {"w": rng.choice(WORDS), "d": rng.randint(0, 9)}, lambda p: Function(
        f"get_{p['w']}", "d: dict[str, int]", "int",
        f"Return d[{p['w']!r}], or {p['d']} if d has no key {p['w']!r}.", f"return d.get({p['w']!r}, {p['d']})",
        lambda rng: _dict_and_key(rng, p["w"]))),
    "dict_has": (SUFFIX, lambda p: Function(f"has_{p['w']}", "d: dict[str, int]", "bool",
                                            f"Return True if d has the key {p['w']!r}, else False.",
                                            f"return {p['w']!r} in d", lambda rng: _dict_and_key(rng, p["w"]))),
    "dict_total": (NONE, lambda p: Function("total_values", "d: dict[str, int]", "int",
                                            "Return the sum of the values of d.", "return sum(d.values())", DICT)),
    "dict_keys": (NONE, lambda p: Function("sorted_keys", "d: dict[str, int]", "list[str]",
                                           "Return the keys of d, sorted alphabetically.", "return sorted(d)", DICT)),
    # conditionals
    "is_even": (NONE, lambda p: Function("is_even", "x: int", "bool", "Return True if x is even, else False.",
                                         "return x % 2 == 0", INT)),
    "above": (k_in(0, 50), lambda p: Function(f"above_{p['k']}", "x: int", "bool",
                                              f"Return True if x is greater than {p['k']}, else False.",
                                              f"return x > {p['k']}", INT)),
    "divisible": (k_in(2, 12), lambda p: Function(f"divisible_by_{p['k']}", "x: int", "bool",
                                                  f"Return True if x is divisible by {p['k']}, else False.",
                                                  f"return x % {p['k']} == 0", INT)),
    "cap": (k_in(0, 40), lambda p: Function(f"cap_at_{p['k']}", "x: int", "int",
                                            f"Return x, but at most {p['k']}.", f"return min(x, {p['k']})", INT)),
    "floor": (k_in(0, 40), lambda p: Function(f"at_least_{p['k']}", "x: int", "int",
                                              f"Return x, but at least {p['k']}.", f"return max(x, {p['k']})", INT)),
    "absolute": (NONE, lambda p: Function("absolute", "x: int", "int", "Return the absolute value of x.",
                                          "return abs(x)", INT)),
    "bigger": (NONE, lambda p: Function("bigger", "a: int, b: int", "int", "Return the larger of a and b.",
                                        "return max(a, b)", PAIR)),
    # loops
    "sum_to_n": (NONE, lambda p: Function("sum_to", "n: int", "int", "Return 1 + 2 + ... + n (0 when n is 0).",
                                          "return sum(range(1, n + 1))", NONNEG)),
    "count_down": (NONE, lambda p: Function("count_down", "n: int", "list[int]",
                                            "Return the list [n, n - 1, ..., 1] (empty when n is 0).",
                                            "return list(range(n, 0, -1))", NONNEG)),
    "repeat_letter": (LETTER, lambda p: Function(f"{p['c']}_times", "n: int", "str",
                                                 f"Return the letter {p['c']!r} repeated n times.",
                                                 f"return {p['c']!r} * n", NONNEG)),
    "multiples": (k_in(2, 9), lambda p: Function(f"multiples_of_{p['k']}", "n: int", "list[int]",
                                                 f"Return the first n multiples of {p['k']}, starting at {p['k']}.",
                                                 f"return [{p['k']} * i for i in range(1, n + 1)]", NONNEG)),
}


# ------------------------------------------------------------------------------------------ medium, hard
# List steps chained into a pipeline: map, then filter, then reduce. Each step: (phrase, code).
MAPS: dict[str, Callable[[int], tuple[str, str]]] = {
    "add": lambda k: (f"add {k} to each number", f"x + {k}"),
    "mul": lambda k: (f"multiply each number by {k}", f"x * {k}"),
    "sub": lambda k: (f"subtract {k} from each number", f"x - {k}"),
}
FILTERS: dict[str, Callable[[int], tuple[str, str]]] = {
    "above": lambda k: (f"keep the numbers greater than {k}", f"x > {k}"),
    "below": lambda k: (f"keep the numbers less than {k}", f"x < {k}"),
    "div": lambda k: (f"keep the numbers divisible by {k}", f"x % {k} == 0"),
    "even": lambda k: ("keep the even numbers", "x % 2 == 0"),
}
REDUCES: dict[str, tuple[str, str, str]] = {  # phrase, code over the list ``ys``, return type
    "sum": ("return their sum", "sum(ys)", "int"),
    "count": ("return how many there are", "len(ys)", "int"),
    "list": ("return them as a list, in order", "ys", "list[int]"),
    "max": ("return the largest (0 if there are none)", "max(ys, default=0)", "int"),
}


def _pipeline(params: dict[str, Any]) -> Function:
    steps: list[str] = []
    codes: list[str] = []
    value, condition = "x", ""
    if "map" in params:
        phrase, value = MAPS[params["map"]](params["mk"])
        steps.append(phrase)
    if "filter" in params:
        phrase, condition = FILTERS[params["filter"]](params["fk"])
        if "map" in params:
            phrase = phrase.replace("the numbers", "the results").replace("the even numbers", "the even results")
        steps.append(phrase)
    reduce_phrase, reduce_code, returns = REDUCES[params["reduce"]]
    steps.append(reduce_phrase)
    if condition and value != "x":
        expression = f"[y for y in ({value} for x in xs) if {condition.replace('x', 'y')}]"
    elif condition:
        expression = f"[x for x in xs if {condition}]"
    else:
        expression = f"[{value} for x in xs]"
    codes.append(f"ys = {expression}")
    codes.append(f"return {reduce_code}")
    sentence = ", ".join(steps[:-1]) + ", and " + steps[-1] if len(steps) > 1 else steps[0]
    doc = f"Take the numbers in xs: {sentence}."
    return Function("transform", "xs: list[int]", returns, doc, "\n    ".join(codes), INTS)


def _pipeline_params(rng: random.Random, steps: int) -> dict[str, Any]:
    params: dict[str, Any] = {"reduce": rng.choice(sorted(REDUCES))}
    kinds = ["map", "filter"] if steps == 3 else [rng.choice(["map", "filter"])]
    for kind in kinds:
        if kind == "map":
            params.update({"map": rng.choice(sorted(MAPS)), "mk": rng.randint(2, 9)})
        else:
            params.update({"filter": rng.choice(sorted(FILTERS)), "fk": rng.randint(2, 9)})
    if params.get("filter") == "even":
        params["fk"] = 0
    return params


MEDIUM_LOOPS: dict[str, tuple[Params, Make]] = {
    "count_vowels": (NONE, lambda p: Function("count_vowels", "s: str", "int",
                                              "Return how many vowels (a, e, i, o, u) are in s.",
                                              "return sum(1 for ch in s if ch in 'aeiou')", WORD)),
    "factorial": (NONE, lambda p: Function("factorial", "n: int", "int", "Return n! (1 when n is 0).",
                                           "result = 1\n    for i in range(2, n + 1):\n        result *= i\n"
                                           "    return result", NONNEG)),
    "digit_sum": (NONE, lambda p: Function("digit_sum", "n: int", "int",
                                           "Return the sum of the decimal digits of n (n >= 0).",
                                           "return sum(int(d) for d in str(n))",
                                           one(lambda rng: rng.randint(0, 99999)))),
    "label": (lambda rng: {"k": rng.randint(2, 7), "a": rng.choice(WORDS), "b": rng.choice(WORDS)},
              lambda p: Function("label", "x: int", "str",
                                 f"Return {p['a']!r} if x is divisible by {p['k']}, else {p['b']!r}.",
                                 f"return {p['a']!r} if x % {p['k']} == 0 else {p['b']!r}", INT)),
    "drop_letter": (LETTER, lambda p: Function(f"drop_{p['c']}", "s: str", "str",
                                               f"Return s with every {p['c']!r} removed.",
                                               f"return s.replace({p['c']!r}, '')",
                                               lambda rng: _word_with(rng, p["c"]))),
    "max_key": (NONE, lambda p: Function("max_key", "d: dict[str, int]", "str",
                                         "Return the key of d with the largest value (the first such key in d's "
                                         "order if several tie; d is not empty).", "return max(d, key=d.get)", DICT)),
}


def draw(level: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A template name and parameters of ``level``: the task's key, before it is made."""
    if level == "easy":
        return _easy(rng)
    if level == "medium":
        if rng.random() < 0.5:
            name = rng.choice(sorted(MEDIUM_LOOPS))
            return name, MEDIUM_LOOPS[name][0](rng)
        return "pipeline", _pipeline_params(rng, 2)
    return "pipeline", _pipeline_params(rng, 3)


def function(template: str, params: dict[str, Any]) -> Function:
    """The function a key stands for."""
    if template == "pipeline":
        return _pipeline(params)
    table = EASY if template in EASY else MEDIUM_LOOPS
    return table[template][1](params)


# ------------------------------------------------------------------------------------------ tasks
def content_key(level: str, template: str, params: dict[str, Any]) -> str:
    """What makes a task the task it is; equal keys are the same task."""
    return json.dumps([level, template, params], sort_keys=True)


def split_of(key: str) -> str:
    """The split a task belongs to, fixed by its key alone."""
    digest = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    return "heldout" if digest % HELDOUT_SHARE == 0 else "train"


def task_row(level: str, split: str, seed: int) -> dict[str, Any]:
    """The HumanEval-format row seed ``seed`` draws in ``level`` and ``split`` (redrawing until the key is in it)."""
    rng = random.Random(f"{level}:{split}:{seed}")
    while True:
        template, params = draw(level, rng)
        key = content_key(level, template, params)
        if split_of(key) == split:
            break
    fn = function(template, params)
    cases = _cases(fn, key)
    example_args, example_value = cases[0]
    call = f"{fn.name}({', '.join(map(repr, example_args))})"
    prompt = f'{fn.signature}\n    """{fn.doc}\n    >>> {call}\n    {example_value!r}\n    """\n'
    test = "def check(candidate):\n" + "".join(
        f"    assert candidate({', '.join(map(repr, args))}) == {value!r}\n" for args, value in cases)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return {"task_id": f"procedural/{level}/{digest}", "prompt": prompt, "canonical_solution": f"    {fn.body}\n",
            "entry_point": fn.name, "test": test, "procedural": {"key": key, "seed": seed, "split": split}}


def _cases(fn: Function, key: str) -> list[tuple[tuple[Any, ...], Any]]:
    """``TESTS`` distinct argument tuples drawn from the key, with what the reference returns for each.

    Cases are picked so that the results differ as much as they can (a function that answers True
    for one input in eight is still tested on one such input: ``return False`` must fail), and the
    first, which the docstring shows, is a mid-sized one.
    """
    namespace: dict[str, Any] = {}
    exec(f"{fn.signature}\n    {fn.body}\n", namespace)  # this module's reference, not a submission
    reference = namespace[fn.name]
    rng = random.Random(key)
    pool: dict[str, tuple[tuple[Any, ...], Any]] = {}
    for _ in range(TESTS * 40):
        args = fn.inputs(rng)
        pool.setdefault(repr(args), (args, reference(*args)))
    chosen: list[tuple[tuple[Any, ...], Any]] = []
    outputs: set[str] = set()
    for args, value in pool.values():  # first one case per distinct result, then the rest in order
        if repr(value) not in outputs and len(chosen) < TESTS:
            outputs.add(repr(value))
            chosen.append((args, value))
    chosen += [c for c in pool.values() if c not in chosen][: TESTS - len(chosen)]
    sizes = sorted(chosen, key=lambda c: len(repr(c[0])))
    example = sizes[len(sizes) // 2]
    return [example, *(c for c in chosen if c is not example)]


_SPEC = re.compile(r"procedural:(?P<level>[a-z]+):(?P<split>[a-z]+):(?P<low>\d+)-(?P<high>\d+)")


def parse_spec(spec: str) -> tuple[str, str, range]:
    """``procedural:LEVEL:SPLIT:LOW-HIGH`` as (level, split, seeds); the range includes HIGH.

    Raises:
        DataError: The spec is malformed, or names an unknown level or split, or too many seeds.
    """
    match = _SPEC.fullmatch(spec.strip())
    if match is None:
        raise DataError(f"{spec!r}: expected procedural:LEVEL:SPLIT:LOW-HIGH, e.g. procedural:easy:train:0-999 "
                        f"(levels {', '.join(LEVELS)}; splits {', '.join(SPLITS)})")
    level, split, low, high = match["level"], match["split"], int(match["low"]), int(match["high"])
    if level not in LEVELS:
        raise DataError(f"{spec!r}: no level {level!r}; use one of {', '.join(LEVELS)}")
    if split not in SPLITS:
        raise DataError(f"{spec!r}: no split {split!r}; use one of {', '.join(SPLITS)}")
    if high < low or high - low + 1 > MAX_SEEDS:
        raise DataError(f"{spec!r}: the seed range must run upwards and hold at most {MAX_SEEDS:,} seeds")
    return level, split, range(low, high + 1)


def procedural_rows(spec: str) -> list[dict[str, Any]]:
    """The rows a spec names, in seed order, each task once (a later seed drawing a listed task adds nothing)."""
    level, split, seeds = parse_spec(spec)
    rows: dict[str, dict[str, Any]] = {}
    for seed in seeds:
        row = task_row(level, split, seed)
        rows.setdefault(row["task_id"], row)
    return list(rows.values())


def is_spec(text: object) -> bool:
    return isinstance(text, str) and text.startswith(PREFIX)


def procedural_tasks(spec: str, to_task: Callable[[dict[str, Any]], Task]) -> list[Task]:
    """The tasks a spec names, each row made a task by ``to_task`` (the code env's HumanEval reader)."""
    tasks = []
    for row in procedural_rows(spec):
        task = to_task(row)
        task.data["procedural"] = row["procedural"]
        tasks.append(task)
    return tasks
