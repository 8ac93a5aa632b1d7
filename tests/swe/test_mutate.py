"""mutate: every operator finds its sites and every mutant compiles, differs where it says, and only there."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

import pytest

from agentgym.envs.swe import mutate

SOURCE = '''\
import typing

if typing.TYPE_CHECKING:
    import os


def window(items, size=2, strict=False):
    """Windows of ``size`` over ``items`` (é: a non-ASCII character before the code on this line)."""
    out = []
    for i in range(len(items) - size + 1):  # comment with + and <
        if strict and i % 2 == 0:
            out.append(tuple(items[i:i + size]))
        else:
            out.append(items[i])
    while not out:
        out = [None] if size > 1 else []
    return divmod(len(out), size), out is not None, "é" + ("x" if size <= 3 else "y")


def only_if(x):
    if x in (1, 2):
        return x * 5
'''


def test_every_operator_has_sites_and_every_mutant_compiles_and_changes_the_ast() -> None:
    original = ast.dump(ast.parse(SOURCE))
    found = mutate.mutations(SOURCE, "m.py")
    assert {m.operator for m in found} == set(mutate.OPERATORS)
    for m in found:
        mutant = m.apply(SOURCE)
        assert mutant is not None, m
        assert ast.dump(ast.parse(mutant)) != original, m
        changed = [line for line in difflib.ndiff(SOURCE.splitlines(), mutant.splitlines()) if line[:1] in "+-"]
        assert changed and all("TYPE_CHECKING" not in line for line in changed), m


def edit(description_part: str, operator: str) -> str:
    """The one-line diff the mutation of ``operator`` whose description has ``description_part`` makes."""
    [m] = [m for m in mutate.mutations(SOURCE, "m.py", [operator]) if description_part in m.description]
    mutant = m.apply(SOURCE)
    assert mutant is not None
    return "".join(line for line in difflib.unified_diff(SOURCE.splitlines(True), mutant.splitlines(True), n=0)
                   if line[:1] in "+-" and line[:3] not in ("---", "+++"))


def test_each_operator_edits_only_its_node() -> None:
    # A token after a non-ASCII character on the same line (ast counts columns in UTF-8 bytes).
    assert edit("`<=` -> `<`", "operator_swap") == (
        '-    return divmod(len(out), size), out is not None, "é" + ("x" if size <= 3 else "y")\n'
        '+    return divmod(len(out), size), out is not None, "é" + ("x" if size < 3 else "y")\n')
    assert edit("`is not` -> `is`", "operator_swap").endswith('out is None, "é" + ("x" if size <= 3 else "y")\n')
    assert edit("`and` -> `or`", "operator_swap") == (
        "-        if strict and i % 2 == 0:\n+        if strict or i % 2 == 0:\n")
    assert edit("`in` -> `not in`", "operator_swap") == "-    if x in (1, 2):\n+    if x not in (1, 2):\n"
    assert edit("`5` -> `6`", "off_by_one") == "-        return x * 5\n+        return x * 6\n"
    assert edit("`False` -> `True`", "wrong_constant") == (
        "-def window(items, size=2, strict=False):\n+def window(items, size=2, strict=True):\n")
    assert edit("`len(out)` and `size`", "swapped_arguments").startswith(
        "-    return divmod(len(out), size)")
    assert "+    return divmod(size, len(out))," in edit("`len(out)` and `size`", "swapped_arguments")
    assert edit("`not out` -> `out`", "negated_condition") == "-    while not out:\n+    while out:\n"
    assert edit("`size > 1` -> `not (size > 1)`", "negated_condition") == (
        "-        out = [None] if size > 1 else []\n+        out = [None] if not (size > 1) else []\n")
    assert edit("`else:` of", "dropped_branch") == "-        else:\n-            out.append(items[i])\n"
    # The only statement of a block becomes `pass`, so the function still compiles.
    assert edit("`if x in (1, 2):` branch", "dropped_branch") == (
        "-    if x in (1, 2):\n-        return x * 5\n+    pass\n")


def test_sample_is_a_function_of_the_seed() -> None:
    files = {"a.py": SOURCE, "b.py": SOURCE.replace("window", "pane"), "broken.py": "def (:\n"}
    first = mutate.sample(files, seed=3)
    assert first == mutate.sample(dict(reversed(files.items())), seed=3)
    assert first != mutate.sample(files, seed=4)
    assert sorted(first, key=repr) == sorted(mutate.sample(files, seed=4), key=repr)  # the same sites, reordered
    assert {m.operator for m in first[: len(mutate.OPERATORS)]} == set(mutate.OPERATORS)  # operators take turns


def test_unknown_operator_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown mutation operators \\['typo'\\]"):
        mutate.mutations(SOURCE, "m.py", ["typo"])


def test_mutants_of_real_modules_compile() -> None:
    """Sites in this project's own modules (real code: decorators, f-strings, match, nested defs)."""
    root = Path(mutate.__file__).resolve().parents[2]
    files = {str(p.relative_to(root)): p.read_text(encoding="utf-8")
             for p in sorted((root / "agentgym").glob("*.py")) + sorted((root / "sandboxes").glob("*.py"))}
    picked = mutate.sample(files, seed=0)[:600]
    assert {m.operator for m in picked} == set(mutate.OPERATORS)
    failed = [m for m in picked if m.apply(files[m.path]) is None]
    assert failed == []
