"""Bugs injected by AST mutation, as small text edits: the rest of the file keeps its formatting and comments.

Each operator finds its sites with :mod:`ast` and edits only the text of the node it changes (an
operator token, a literal, a condition, two arguments, the lines of a branch), so the diff between
the original and the mutant is the bug and nothing else; the reverse of that diff is a task's gold
patch. A site is a :class:`Mutation`: where, what, and the edits, not the whole mutated file
(a large module has thousands of sites); :meth:`Mutation.apply` makes the mutant and checks that it
still compiles. Every operator changes the AST (a swap of two equal arguments is no site).

Operators (:data:`OPERATORS`):

- ``operator_swap``: ``+``/``-``, ``*``/``//``, ``<``/``<=``, ``==``/``!=``, ``in``/``not in``, ``and``/``or``, ...
- ``off_by_one``: an integer literal ``n`` becomes ``n + 1`` or ``n - 1``
- ``wrong_constant``: ``True``/``False`` swapped, ``None`` where a number was, a number becomes 0 (1 if it was 0)
- ``dropped_branch``: an ``if`` with no ``else`` deleted, or the ``else`` of an ``if`` deleted
- ``swapped_arguments``: two neighbouring positional arguments of a call exchanged
- ``negated_condition``: the test of an ``if``, ``while`` or conditional expression negated

:func:`sample` orders the sites of many files for a seed: the same files and seed give the same order.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import random
import re
from collections.abc import Iterator, Mapping, Sequence

OPERATORS = (
    "operator_swap", "off_by_one", "wrong_constant", "dropped_branch", "swapped_arguments", "negated_condition",
)

Edit = tuple[int, int, str]
"""``(start, end, text)``: characters ``start:end`` of the file become ``text``."""

BINARY_SWAPS: dict[type[ast.operator], tuple[str, str]] = {
    ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*"),
    ast.Div: ("/", "*"), ast.Mod: ("%", "//"), ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&"),
    ast.LShift: ("<<", ">>"), ast.RShift: (">>", "<<"), ast.Pow: ("**", "*"),
}
COMPARE_SWAPS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in"),
    ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
}
BOOL_SWAPS: dict[type[ast.boolop], tuple[str, str]] = {ast.And: ("and", "or"), ast.Or: ("or", "and")}
# Conditions whose negation breaks nothing a test can see, or breaks everything at import.
SKIP_TESTS = re.compile(r"^\s*(not\s+)?(TYPE_CHECKING|typing\.TYPE_CHECKING|__name__\s*==\s*['\"]__main__['\"])\s*$")


@dataclasses.dataclass(frozen=True)
class Mutation:
    """One bug that can be injected into one file.

    Attributes:
        operator: One of :data:`OPERATORS`.
        path: The file, relative to the repository.
        line: The line of the changed node (1-based).
        description: What changes, e.g. ``"`<` -> `<=`"``.
        edits: The text edits, in file order, that make the mutant.
    """

    operator: str
    path: str
    line: int
    description: str
    edits: tuple[Edit, ...]

    def apply(self, source: str) -> str | None:
        """The mutant of ``source``, or None when it would not compile."""
        parts: list[str] = []
        at = 0
        for start, end, text in self.edits:
            parts += [source[at:start], text]
            at = end
        mutant = "".join(parts) + source[at:]
        try:
            compile(mutant, self.path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return None
        return mutant


def mutations(source: str, path: str, operators: Sequence[str] = OPERATORS) -> list[Mutation]:
    """Every site in ``source`` for ``operators``, in file order (then by operator).

    Raises:
        SyntaxError: ``source`` is not valid Python.
        ValueError: An unknown operator name.
    """
    unknown = set(operators) - set(OPERATORS)
    if unknown:
        raise ValueError(f"unknown mutation operators {sorted(unknown)}; known: {', '.join(OPERATORS)}")
    tree = ast.parse(source)
    finder = _Sites(source, path)
    found: list[Mutation] = []
    for node in ast.walk(tree):
        for operator in operators:
            found.extend(getattr(finder, operator)(node))
    found.sort(key=lambda m: (m.edits[0][0], OPERATORS.index(m.operator), m.description))
    return found


def sample(files: Mapping[str, str], seed: int, operators: Sequence[str] = OPERATORS) -> list[Mutation]:
    """The sites of ``files`` (path to source), ordered for ``seed``, the operators taking turns.

    Operators take turns so that one with many sites (integer literals) does not crowd out the
    others; within an operator the order is a seeded shuffle. Files that do not parse are skipped.
    """
    rng = random.Random(seed)
    by_operator: dict[str, list[Mutation]] = {op: [] for op in operators}
    for path in sorted(files):
        try:
            for mutation in mutations(files[path], path, operators):
                by_operator[mutation.operator].append(mutation)
        except SyntaxError:
            continue
    queues = [by_operator[op] for op in operators if by_operator[op]]
    for queue in queues:
        rng.shuffle(queue)
    ordered: list[Mutation] = []
    while queues:
        rng.shuffle(queues)
        for queue in queues:
            ordered.append(queue.pop())
        queues = [q for q in queues if q]
    return ordered


class _Sites:
    """Finds the sites of each operator in one file; offsets are character offsets into the source."""

    def __init__(self, source: str, path: str) -> None:
        self.source = source
        self.path = path
        self.lines = source.splitlines(keepends=True)
        self.line_starts = [0]
        for line in self.lines:
            self.line_starts.append(self.line_starts[-1] + len(line))

    # ------------------------------------------------------------------ positions
    def offset(self, lineno: int, col: int) -> int:
        """Character offset of ``(lineno, col)``; ``ast`` columns count UTF-8 bytes."""
        line = self.lines[lineno - 1]
        return self.line_starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", errors="ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def text(self, node: ast.AST) -> str:
        start, end = self.span(node)
        return self.source[start:end]

    def make(self, operator: str, node: ast.AST, description: str, *edits: Edit) -> Mutation:
        return Mutation(operator, self.path, node.lineno, description, tuple(sorted(edits)))  # type: ignore[attr-defined]

    def token_between(self, left: ast.AST, right: ast.AST, token: str) -> tuple[int, int] | None:
        """Where ``token`` stands between two operands: the gap holds only it, brackets, space and comments."""
        start, end = self.span(left)[1], self.span(right)[0]
        gap = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), self.source[start:end])
        words = r"\s+".join(re.escape(w) for w in token.split())
        match = re.match(rf"[\s()\\]*({words})[\s()\\]*$", gap)
        return (start + match.start(1), start + match.end(1)) if match else None

    # ------------------------------------------------------------------ operators
    def operator_swap(self, node: ast.AST) -> Iterator[Mutation]:
        if isinstance(node, ast.BinOp) and type(node.op) in BINARY_SWAPS:
            old, new = BINARY_SWAPS[type(node.op)]
            pairs = [(node.left, node.right, old, new)]
        elif isinstance(node, ast.Compare):
            pairs = []
            for left, op, right in zip([node.left, *node.comparators], node.ops, node.comparators, strict=False):
                if type(op) in COMPARE_SWAPS:
                    pairs.append((left, right, *COMPARE_SWAPS[type(op)]))
        elif isinstance(node, ast.BoolOp):
            old, new = BOOL_SWAPS[type(node.op)]
            pairs = [(left, right, old, new) for left, right in zip(node.values, node.values[1:], strict=False)]
        else:
            return
        for left, right, old, new in pairs:
            where = self.token_between(left, right, old)
            if where is not None:
                yield self.make("operator_swap", node, f"`{old}` -> `{new}`", (*where, new))

    def off_by_one(self, node: ast.AST) -> Iterator[Mutation]:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            start, end = self.span(node)
            for delta in (1, -1):
                value = node.value + delta
                yield self.make("off_by_one", node, f"`{node.value}` -> `{value}`", (start, end, repr(value)))

    def wrong_constant(self, node: ast.AST) -> Iterator[Mutation]:
        if not isinstance(node, ast.Constant):
            return
        value = node.value
        if isinstance(value, bool):
            new = repr(not value)
        elif isinstance(value, int | float):
            new = "1" if value == 0 else "0"
        else:
            return
        start, end = self.span(node)
        yield self.make("wrong_constant", node, f"`{self.source[start:end]}` -> `{new}`", (start, end, new))

    def dropped_branch(self, node: ast.AST) -> Iterator[Mutation]:
        for block in _blocks(node):
            for stmt in block:
                if not isinstance(stmt, ast.If) or SKIP_TESTS.match(self.text(stmt.test)) or not self.whole_lines(stmt):
                    continue
                if not stmt.orelse:
                    lines = (stmt.lineno, stmt.end_lineno or stmt.lineno)
                    yield self.delete_lines("dropped_branch", stmt, lines, alone=len(block) == 1,
                                            description=f"`if {self.text(stmt.test)}:` branch removed")
                elif not self.is_elif(stmt):
                    else_line = self.else_line(stmt)
                    if else_line is not None:
                        lines = (else_line, stmt.end_lineno or stmt.lineno)
                        yield self.delete_lines("dropped_branch", stmt, lines, alone=False,
                                                description=f"`else:` of `if {self.text(stmt.test)}:` removed")

    def swapped_arguments(self, node: ast.AST) -> Iterator[Mutation]:
        if not isinstance(node, ast.Call):
            return
        args = node.args
        for first, second in itertools.pairwise(args):
            if isinstance(first, ast.Starred) or isinstance(second, ast.Starred):
                continue
            a, b = self.text(first), self.text(second)
            if a == b:
                continue
            yield self.make(
                "swapped_arguments", node, f"arguments `{a}` and `{b}` of `{self.text(node.func)}` swapped",
                (*self.span(first), b), (*self.span(second), a),
            )

    def negated_condition(self, node: ast.AST) -> Iterator[Mutation]:
        if not isinstance(node, ast.If | ast.While | ast.IfExp):
            return
        test = node.test
        text = self.text(test)
        if SKIP_TESTS.match(text):
            return
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            new = self.text(test.operand)
            if isinstance(test.operand, ast.BoolOp | ast.Compare | ast.IfExp | ast.NamedExpr):
                new = f"({new})"
        else:
            loose = isinstance(test, ast.BoolOp | ast.Compare | ast.IfExp | ast.NamedExpr)
            new = f"not ({text})" if loose else f"not {text}"
        yield self.make("negated_condition", node, f"`{text}` -> `{new}`", (*self.span(test), new))

    # ------------------------------------------------------------------ statements
    def whole_lines(self, stmt: ast.stmt) -> bool:
        """Whether ``stmt`` alone fills its lines (no ``a; if x: b`` or a statement after it)."""
        before = self.lines[stmt.lineno - 1].encode()[: stmt.col_offset].strip()
        after = self.lines[(stmt.end_lineno or stmt.lineno) - 1].encode()[stmt.end_col_offset or 0 :].strip()
        return not before and (not after or after.startswith(b"#"))

    def is_elif(self, stmt: ast.If) -> bool:
        return len(stmt.orelse) == 1 and isinstance(stmt.orelse[0], ast.If) and \
            self.lines[stmt.orelse[0].lineno - 1].lstrip().startswith("elif")

    def else_line(self, stmt: ast.If) -> int | None:
        indent = self.lines[stmt.lineno - 1][: stmt.col_offset]
        for lineno in range((stmt.body[-1].end_lineno or stmt.lineno) + 1, stmt.orelse[0].lineno + 1):
            line = self.lines[lineno - 1]
            if line.startswith(indent + "else") and re.match(r"else\s*:", line[len(indent):]):
                return lineno
        return None

    def delete_lines(self, operator: str, stmt: ast.stmt, lines: tuple[int, int], *, alone: bool,
                     description: str) -> Mutation:
        start, end = self.line_starts[lines[0] - 1], self.line_starts[lines[1]]
        indent = self.lines[stmt.lineno - 1][: stmt.col_offset]
        return self.make(operator, stmt, description, (start, end, f"{indent}pass\n" if alone else ""))


def _blocks(node: ast.AST) -> Iterator[list[ast.stmt]]:
    """The statement lists directly inside ``node`` (bodies, else parts, handlers)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for handler in getattr(node, "handlers", []) or []:
        yield handler.body
    for case in getattr(node, "cases", []) or []:
        yield case.body
