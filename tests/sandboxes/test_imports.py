"""The sandboxes' import graph: no circle inside ``agentgym.sandboxes``, and no private name used from outside.

Imports inside functions count (a deferred import that closes a circle is still a circle: the
modules cannot be read, tested or replaced one at a time); imports under ``if TYPE_CHECKING:`` do
not (they run for the type checker only). Read with ``ast``, so nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "agentgym.sandboxes"


def modules() -> dict[str, Path]:
    """Every module of the sandboxes package by dotted name."""
    found = {}
    for path in sorted((ROOT / "sandboxes").rglob("*.py")):
        parts = path.relative_to(ROOT / "sandboxes").with_suffix("").parts
        name = ".".join([PACKAGE, *parts]).removesuffix(".__init__")
        found[name] = path
    return found


def runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` but those under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in runtime_imports(ast.Module([child], [])))
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from runtime_imports(node)


def imported(node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> Iterator[tuple[str, str | None]]:
    """(module, name taken from it or None) for each thing ``node`` imports."""
    if isinstance(node, ast.Import):
        yield from ((alias.name, None) for alias in node.names)
    elif node.module and node.level == 0:
        for alias in node.names:
            submodule = f"{node.module}.{alias.name}"
            yield (submodule, None) if submodule in known else (node.module, alias.name)


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = {m for node in runtime_imports(ast.parse(path.read_text())) for m, _ in imported(node, known)}
        edges[name] = {t for t in targets if t in known and t != name}
    return edges


def find_circle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``edges`` as a path that ends where it starts, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return None
        for target in sorted(edges[node]):
            if circle := visit(target, [*path, node]):
                return circle
        done.add(node)
        return None

    for start in sorted(edges):
        if circle := visit(start, []):
            return circle
    return None


def test_no_import_circle_inside_the_sandboxes_package() -> None:
    edges = graph()
    assert len(edges) > 20, "the graph missed the package's modules"
    circle = find_circle(edges)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_the_circle_finder_finds_a_circle() -> None:
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set()}) is None


def test_nothing_outside_the_sandboxes_uses_their_private_names() -> None:
    known = modules()
    offences = []
    outside = [p for folder in ("envs", "agentgym") for p in (ROOT / folder).rglob("*.py")
               if "sandboxes" not in p.relative_to(ROOT).parts]
    assert len(outside) > 30
    for path in outside:
        tree = ast.parse(path.read_text())
        aliases: dict[str, str] = {}
        for node in runtime_imports(tree):
            for module, name in imported(node, known):
                if not module.startswith(PACKAGE):
                    continue
                if name is not None and name.startswith("_"):
                    offences.append(f"{path.relative_to(ROOT)}: from {module} import {name}")
                if name is None and isinstance(node, ast.ImportFrom):
                    aliases[module.rsplit(".", 1)[1]] = module
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id in aliases):
                offences.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not offences, "private names of agentgym.sandboxes used outside it:\n" + "\n".join(offences)


def test_no_handle_is_cloned_redirected_or_detached() -> None:
    """One way to lend and take back (the pool's leases): no module of the package clones a sandbox
    object (``copy.copy``), gives one a callback to its pool (``return_to``) or detaches its finalizer."""
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            text = ast.unparse(node) if isinstance(node, ast.Call | ast.Attribute) else ""
            if isinstance(node, ast.Attribute) and node.attr == "return_to":
                found.append(f"{name}: {text}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    (node.func.attr in ("copy", "deepcopy") and ast.unparse(node.func.value) == "copy")
                    or (node.func.attr == "detach" and "finalize" in ast.unparse(node.func.value))):
                found.append(f"{name}: {text}")
            elif isinstance(node, ast.ImportFrom) and node.module == "copy":
                found.append(f"{name}: from copy import ...")
    assert found == []


FRONT_DOORS = ("agentgym.sandboxes", "agentgym.sandboxes.browser")
IMAGE_TOOLS = {"builder", "engine"}
"""Modules of the package an env family that builds images may use by name: the image builder and the engine client."""


def test_envs_import_only_the_sandboxes_front_doors() -> None:
    """Env families use what ``agentgym.sandboxes`` (and its browser package) export, never a module below,
    so that how sandboxes are lent, cleaned and shut down can change without touching an env."""
    import importlib

    exported = {door: set(importlib.import_module(door).__all__) for door in FRONT_DOORS}
    offences, seen = [], 0
    for path in sorted((ROOT / "envs").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                offences += [f"{where}: import {a.name}" for a in node.names if a.name.startswith(PACKAGE)]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PACKAGE):
                seen += 1
                module = node.module or ""
                if module not in exported:
                    offences.append(f"{where}: from {module} import ...")
                    continue
                offences += [f"{where}: {a.name} is not in {module}.__all__" for a in node.names
                             if a.name not in exported[module] | (IMAGE_TOOLS if module == PACKAGE else set())]
    assert seen > 20  # the walk saw the env families' imports
    assert not offences, "envs/ reaches below the sandboxes' front door:\n" + "\n".join(offences)
