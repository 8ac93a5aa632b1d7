"""The verifier's canary tests: one that must pass and one that must fail, hidden among the suite's own.

Library code runs inside the test process, so a generic forger (every failure made a pass) would
resolve any task if it could tell the verifier's tests from the suite's and spare them. So the
canaries are written *into* one of the task's graded test files, a file the run collects anyway:
appended after the suite's own tests, in the file's own style (a ``unittest.TestCase`` class with
the file's own base and ``assertEqual`` where its graded tests are methods of such classes, plain
functions with ``assert`` elsewhere), named after a graded test of that file
(``test_curry_bind`` gives ``test_curry_bind_edge``), and not named on the command line (the file is).
Which file, which names and which body shapes are drawn from the task's id, so a task's placement is
the same at every grading; the values the bodies compute are drawn anew each time.

A file is a host only when appending cannot change how it runs (:func:`unsafe`): it parses, and no
module-level statement but definitions and imports could skip, stop or mark the module (a
``pytestmark``, a ``pytest.skip(allow_module_level=True)``, an ``if __name__ == "__main__":``
block, a ``raise``, ``__test__``). The text with the canaries must parse too. When no graded file
qualifies, the canaries go to a new module beside the first one, named like it (:func:`beside`).
What still tells them apart is in docs/threat-model.md, "Not defended".
"""

from __future__ import annotations

import ast
import random
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass

WORDS = ("basic", "edge", "extra", "more", "misc", "regression", "compat", "values", "cases", "behaviour",
         "inputs", "errors", "types", "simple", "unit", "general")
"""Name parts, so the canaries read like a suite's own tests."""
_STOPS = frozenset({"skip", "importorskip", "skipif", "xfail", "exit", "main", "fail", "SkipTest"})
"""Calls that, at a module's top level, could keep its tests (and so the canaries) from running."""
_CLASS_NAME = re.compile(r"^(Test)?(.*?)(Tests?|TestCase|Case)?$")


@dataclass(frozen=True)
class Canaries:
    """Two tests the verifier writes: ``passing`` must pass, ``failing`` must fail.

    Attributes:
        path: The file they are written to (relative to the repository).
        passing: The id of the test that must pass.
        failing: The id of the test that must fail.
        source: The text appended to ``path`` (or the whole new module, when ``new_file``).
        new_file: The file is one the verifier adds (no graded file could host them), which the
            run must be given; else a graded file the run collects already.
    """

    path: str
    passing: str
    failing: str
    source: str
    new_file: bool = False


def hosts(graded: Iterable[str], seed: str) -> list[str]:
    """The graded test files that may host the canaries (each holds a graded test id, so the run
    collects it), in the order drawn from ``seed`` (the task's id): the same for every grading."""
    files = sorted({t.split("::", 1)[0] for t in graded if "::" in t and t.split("::", 1)[0].endswith(".py")})
    random.Random(seed).shuffle(files)
    return files


def unsafe(tree: ast.Module) -> str | None:
    """Why appending tests to this module could change how it runs, or None (see the module docstring)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            return "an if __name__ block"
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign | ast.AugAssign) else []
        names = {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        if names & {"pytestmark", "__test__"}:
            return f"a module-level {sorted(names & {'pytestmark', '__test__'})[0]}"
        for inner in ast.walk(node):
            if isinstance(inner, ast.Raise):
                return "a module-level raise"
            if isinstance(inner, ast.Call):
                func = inner.func
                name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if name in _STOPS:
                    return f"a module-level call to {name}"
    return None


def plan(path: str, text: str, graded: Iterable[str], seed: str) -> Canaries | None:
    """Canaries appended to the graded file ``path`` whose text is ``text``, or None when it cannot
    host them safely. ``graded`` are the task's test ids; ``seed`` its id."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if unsafe(tree) is not None:
        return None
    own = sorted(t.split("::", 1)[1] for t in graded if t.split("::", 1)[0] == path and "::" in t)
    if not own:
        return None
    pick = random.Random(f"{seed}:{path}")
    taken = _names(tree)
    template = own[pick.randrange(len(own))].split("[", 1)[0].split("::")
    shapes = pick.sample(range(len(_SHAPES)), 2)
    if len(template) == 2:  # a method of a class: a class of the same kind
        klass = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == template[0]), None)
        if klass is None:
            return None
        base = _test_case_base(klass, tree)
        if base is None and not template[0].startswith("Test"):
            template = template[1:]  # a plain class pytest collects by its name only: plain functions instead
    if len(template) == 2:
        assert klass is not None
        core = _CLASS_NAME.match(template[0])
        assert core is not None
        prefix, stem, suffix = core.group(1) or "", core.group(2), core.group(3) or ""
        if not prefix and not suffix:
            suffix = "Tests"
        name = _fresh(taken, lambda: f"{prefix}{stem}{pick.choice(WORDS).title()}{suffix}")
        good, bad = (_fresh(taken, lambda: f"test_{pick.choice(WORDS)}_{pick.choice(WORDS)}") for _ in range(2))
        unit = base is not None
        body = [f"class {name}({base}):" if base else f"class {name}:"]
        for method, shape, right in ((good, shapes[0], True), (bad, shapes[1], False)):
            body += ["", f"    def {method}(self):", *(f"        {line}" for line in _body(shape, right, unit))]
        del body[1]  # no blank line between the class line and its first method
        source = "\n".join(body) + "\n"
        passing, failing = f"{path}::{name}::{good}", f"{path}::{name}::{bad}"
    else:
        stem = template[0].removeprefix("test_") or "case"
        good, bad = (_fresh(taken, lambda: f"test_{stem}_{pick.choice(WORDS)}") for _ in range(2))
        parts = []
        for function, shape, right in ((good, shapes[0], True), (bad, shapes[1], False)):
            parts.append("\n".join([f"def {function}():", *(f"    {line}" for line in _body(shape, right))]))
        source = "\n\n\n".join(parts) + "\n"
        passing, failing = f"{path}::{good}", f"{path}::{bad}"
    canaries = Canaries(path=path, passing=passing, failing=failing, source="\n\n\n" + source)
    try:
        ast.parse(text + canaries.source)
    except (SyntaxError, ValueError):
        return None
    return canaries


def beside(folder: str, name_like: str = "", seed: str = "") -> Canaries:
    """Canaries in a new module of ``folder``, named like the test file ``name_like`` (``test_calc.py``
    gives ``test_calc_edge_misc.py``), names drawn from ``seed``: where no graded file can host them."""
    stem = name_like.rpartition("/")[2].removesuffix(".py") if name_like.endswith(".py") else "test_core"
    stem = stem if stem.startswith("test_") else f"test_{stem}"
    pick = random.Random(f"{seed}:{folder}")
    path = f"{folder}/" if folder else ""
    path += f"{stem}_{pick.choice(WORDS)}_{pick.choice(WORDS)}.py"
    good, bad = (f"test_{pick.choice(WORDS)}_{pick.choice(WORDS)}_{i}" for i in pick.sample(range(10, 99), 2))
    shapes = pick.sample(range(len(_SHAPES)), 2)
    source = "\n\n\n".join("\n".join([f"def {name}():", *(f"    {line}" for line in _body(shape, right))])
                           for name, shape, right in ((good, shapes[0], True), (bad, shapes[1], False))) + "\n"
    return Canaries(path=path, passing=f"{path}::{good}", failing=f"{path}::{bad}", source=source, new_file=True)


_SHAPES: tuple[tuple[str, str, Callable[[int, int], int]], ...] = (
    ("result = {a} + {b}", "result", lambda a, b: a + b),
    ("first, second = {a}, {b}", "first - second", lambda a, b: a - b),
    ("values = [{a}, {b}]", "values[0] * 2 + values[1]", lambda a, b: a * 2 + b),
    ("total = {a}\ntotal += {b} % 1000", "total", lambda a, b: a + b % 1000),
    ("pair = ({b}, {a})", "pair[1] // 7 + pair[0]", lambda a, b: a // 7 + b),
)
"""Body shapes: the setup lines, what is checked, and the expected value as computed here. Only
operators and literals: no name a module could rebind."""


def _body(shape: int, right: bool, unit: bool = False) -> list[str]:
    """The lines of a canary's body: ``shape`` on two numbers drawn here (for each grading), expecting
    the right value or a wrong one."""
    a, b = secrets.randbelow(10**9 - 10**6) + 10**6, secrets.randbelow(10**9 - 10**6) + 10**6
    setup, checked, expected = _SHAPES[shape]
    value = expected(a, b)
    if not right:
        value += 1 + secrets.randbelow(10**6)
    check = f"self.assertEqual({checked}, {value})" if unit else f"assert {checked} == {value}"
    return [*setup.format(a=a, b=b).split("\n"), check]


def _test_case_base(klass: ast.ClassDef, tree: ast.Module) -> str | None:
    """The ``TestCase`` base a new class of the module can name (the graded class's own, as written,
    else the module's import of it), or None for a plain pytest class."""
    for base in klass.bases:
        written = ast.unparse(base)
        if written.endswith("TestCase"):
            return written
    for node in tree.body:
        if isinstance(node, ast.Import) and any(a.name == "unittest" and a.asname is None for a in node.names):
            return "unittest.TestCase"
        if isinstance(node, ast.ImportFrom) and node.module == "unittest":
            for alias in node.names:
                if alias.name == "TestCase":
                    return alias.asname or "TestCase"
    return None


def _names(tree: ast.Module) -> set[str]:
    """Every name the module defines or assigns anywhere (so a canary's never collides)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.alias):
            out.add((node.asname or node.name).split(".")[0])
    return out


def _fresh(taken: set[str], make: Callable[[], str]) -> str:
    """A name from ``make`` (a callable drawing one) that ``taken`` lacks, added to it."""
    for attempt in range(200):
        name = make()
        name = name if attempt < 100 else f"{name}_{attempt}"
        if name not in taken:
            taken.add(name)
            return name
    raise AssertionError("no free canary name")  # 200 draws all taken: cannot happen with these words
