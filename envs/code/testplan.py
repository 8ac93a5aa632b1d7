"""Reads a task's test source on the host: what the grader runs, and whether it tests anything at all.

A HumanEval test is a module with a ``check(candidate)`` function. The grader
(:mod:`~agentgym.envs.code.grader`) runs the module's other top-level code first, then each
statement of ``check``'s body on its own, so that each test's result is recorded. Splitting happens
here, once, so the grader's sandbox needs no parser and runs exactly the sources checked here; a
test that could never fail a submission (no ``check``, nothing in it that asserts) is refused with
its reason instead of grading every submission "0 of 0 tests".
"""

from __future__ import annotations

import ast
import functools
from typing import Any, NamedTuple


class TaskError(ValueError):
    """The task's test cannot grade anything: no ``check``, no test in it, or it cannot run."""


class Statement(NamedTuple):
    """One statement of ``check``'s body: its source as shown, the code that runs it (which compiles on
    its own), and whether it tests something."""

    source: str
    code: str
    is_test: bool


class TestPlan(NamedTuple):
    """What the grader runs: ``setup`` (the module without ``check``), then the statements, with
    ``candidate`` bound to ``parameter`` (``check``'s first parameter, if any) and to the entry point."""

    setup: str
    parameter: str | None
    statements: tuple[Statement, ...]
    uncrossable: str | None = None
    """What the test does with the candidate that cannot cross to a sandbox of its own, if anything:
    such a task can be graded ``inprocess`` only."""


def plan(test: Any, entry_point: Any, grading: str = "isolated") -> TestPlan:
    """Split a task's test source into what runs first and the statements of ``check`` (cached: a
    task is graded many times).

    A statement is a test when, outside the bodies of functions it defines, it has an ``assert``
    whose condition is not a constant, a ``raise``, or a call to a function of the test source that
    tests (``assert True, "..."`` cannot fail, so it tests nothing).

    Raises:
        TaskError: The test does not parse, defines no ``check``, has no test statement, never
            uses the candidate, has a statement that cannot run on its own (``return``), or does
            with the candidate what cannot cross to its sandbox (passes it a function, uses it as a
            type) and ``grading`` is ``isolated``.
    """
    if not isinstance(test, str) or not isinstance(entry_point, str):
        raise TaskError("the task's test and entry_point must be strings")
    found = _plan(test, entry_point)
    if found.uncrossable is not None and grading == "isolated":
        raise TaskError(found.uncrossable)
    return found


@functools.lru_cache(maxsize=1024)
def _plan(test: str, entry_point: str) -> TestPlan:
    try:
        module = ast.parse(test)
    except SyntaxError as e:
        raise TaskError(f"the task's test does not parse: {e}") from None
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if not checks:
        raise TaskError("the task's test defines no check(candidate) function")
    check = checks[-1]
    positional = check.args.posonlyargs + check.args.args
    parameter = positional[0].arg if positional else None
    testers = _testing_functions(module)
    lines = test.encode("utf-8").split(b"\n")
    statements = []
    for number, node in enumerate(check.body, 1):
        source, code = _segment(lines, node)
        try:
            compile(code, "<test>", "exec", dont_inherit=True)
        except SyntaxError as e:
            raise TaskError(f"statement {number} of check cannot run on its own: {e.msg}: {source[:200]}") from None
        statements.append(Statement(source, code, _tests(node, testers)))
    if not any(s.is_test for s in statements):
        raise TaskError("check(candidate) has no test statement: nothing in it asserts (an assert whose "
                        "condition is not a constant, or a raise)")
    names = {n for n in (parameter, entry_point) if n is not None}
    if not any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(check)):
        raise TaskError(f"check never uses the candidate ({' or '.join(sorted(names))})")
    crossing = _what_cannot_cross(module, names)
    uncrossable = None
    if crossing:
        uncrossable = (f"{crossing}; the candidate runs in a sandbox of its own and only plain data crosses to "
                       "it (docs/threat-model.md), so it would be graded differently from an in-process call: "
                       "grade this task with grading=\"inprocess\"")
    dropped = [(_first_line(check), check.end_lineno or check.lineno)]
    dropped += [(n.lineno, n.end_lineno or n.lineno) for n in module.body if _calls_check(n)]
    setup = b"\n".join(b"" if any(first <= number <= last for first, last in dropped) else line
                       for number, line in enumerate(lines, 1))
    return TestPlan(setup.decode("utf-8"), parameter, tuple(statements), uncrossable)


def _what_cannot_cross(module: ast.Module, names: set[str]) -> str | None:
    """What the test does with the candidate that cannot cross to the candidate's sandbox, if anything:
    passing it a function (a ``lambda`` or a function the test defines), or using it as a type
    (``isinstance(x, candidate)``, ``except candidate``)."""
    functions = {n.name for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(module):
        if _calls(node, names):
            assert isinstance(node, ast.Call)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                value = arg.value if isinstance(arg, ast.Starred) else arg
                if isinstance(value, ast.Lambda) or (isinstance(value, ast.Name) and value.id in functions):
                    return f"line {node.lineno}: the test passes the candidate a function"
        if _calls(node, {"isinstance", "issubclass"}):
            assert isinstance(node, ast.Call)
            if any(isinstance(n, ast.Name) and n.id in names for arg in node.args[1:] for n in ast.walk(arg)):
                return f"line {node.lineno}: the test uses the candidate as a type"
        if isinstance(node, ast.ExceptHandler) and node.type is not None:
            if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.type)):
                return f"line {node.lineno}: the test catches the candidate as an exception class"
    return None


def _calls_check(node: ast.stmt) -> bool:
    """A top-level ``check(...)`` statement, as a test file run as a script ends: the grader calls check
    itself (with the candidate), so the file's own call is left out, as HumanEval's harness would make it."""
    return isinstance(node, ast.Expr) and _calls(node.value, {"check"})


def _first_line(node: ast.stmt) -> int:
    """Where ``node`` starts, decorators included."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])


def _segment(lines: list[bytes], node: ast.stmt) -> tuple[str, str]:
    """The source of ``node`` to show, and to run on its own.

    A statement on one line is both. One over several lines keeps its lines' indentation inside an
    ``if 1:`` block (dedenting them could change a multi-line string); shown, its lines lose the
    indentation of its first. (``ast.get_source_segment`` would split the whole source per call.)
    """
    first, last = _first_line(node) - 1, (node.end_lineno or node.lineno) - 1
    if first == last:
        text = lines[first][node.col_offset : node.end_col_offset].decode("utf-8", "replace")
        return text, text
    indent = lines[first][: node.col_offset]
    start = indent if indent.isspace() else b" " * len(indent)  # after "x = 1; " on its line
    body = [start + lines[first][node.col_offset :], *lines[first + 1 : last], lines[last][: node.end_col_offset]]
    shown = [lines[first][node.col_offset :]] + [
        line[len(indent) :] if line.startswith(indent) else line for line in body[1:]
    ]
    return b"\n".join(shown).decode("utf-8", "replace"), b"\n".join([b"if 1:", *body]).decode("utf-8", "replace")


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """``node`` and its descendants, except inside the bodies of the functions, lambdas and classes it defines."""
    found, todo = [], [node]
    while todo:
        current = todo.pop()
        found.append(current)
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            skip = {id(n) for n in current.body}
        elif isinstance(current, ast.Lambda):
            skip = {id(current.body)}
        else:
            skip = set()
        todo.extend(child for child in ast.iter_child_nodes(current) if id(child) not in skip)
    return found


ASSERTING_METHODS = ("assert", "fail")
"""Prefixes of method names that assert when called: unittest's ``self.assertEqual``, ``self.fail``, a
mock's ``assert_called_once_with``, ``numpy.testing.assert_allclose``."""


def _asserts(node: ast.AST) -> bool:
    if isinstance(node, ast.Raise):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name.startswith(ASSERTING_METHODS) and (isinstance(func, ast.Attribute) or name.startswith("assert_"))
    return isinstance(node, ast.Assert) and not (isinstance(node.test, ast.Constant) and node.test.value)


def _calls(node: ast.AST, names: set[str]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _tests(node: ast.AST, testers: set[str]) -> bool:
    return any(_asserts(n) or _calls(n, testers) for n in _own_nodes(node))


def _testing_functions(module: ast.Module) -> set[str]:
    """Names of the test source's functions (``check`` aside) that assert, directly or through another one."""
    functions = [n for n in ast.walk(module) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    bodies = [(f.name, f.body) for f in functions if f.name != "check"]
    testers: set[str] = set()
    while True:
        found = {name for name, body in bodies if any(_tests(stmt, testers) for stmt in body)}
        if found <= testers:
            return testers
        testers |= found
