"""Names the test run resolves that a patch must not take over: the runner, its plugins, the stdlib,
installed modules and the graded test modules.

The repository is on the test run's ``sys.path`` ahead of everything else (``python -m`` puts the
working directory first, ``PYTHONPATH=src`` puts ``src`` there, pytest's prepend import mode inserts
each test file's root folder), so a new top-level ``pytest.py``, ``argparse.py``, ``iniconfig.py`` or
a package named like a graded test module would be imported instead of the real one and decide the
outcome. :func:`shadowing` finds such entries after the patch is applied: a new entry (one the base
does not have and the gold patch does not add) directly in one of the run's path folders whose module
name is one the image's Python resolves outside the repository, or a graded test module's. The
verifier then grades the patch 0 with the entry named, without running anything.

The names come from the image, before the patch (:data:`PROBE`, run isolated: ``python3 -I``).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentgym.sandboxes import Sandbox

PROBE = (
    "import json, pkgutil, sys; "
    "names = set(sys.stdlib_module_names) | set(sys.builtin_module_names) "
    "| {m.name for m in pkgutil.iter_modules()}; "
    "print(json.dumps({'names': sorted(names), 'path': [p for p in sys.path if p]}))"
)
"""Module names the image's Python resolves outside the repository, and its ``sys.path``."""
_PYTHONPATH = re.compile(r"(?:^|\s)PYTHONPATH=(\S+)")
_MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".pyi")


@dataclass(frozen=True)
class Resolved:
    """What the image's Python resolves before the patch: its module names and the path folders
    inside the repository (an editable install's ``src``), relative to it."""

    names: frozenset[str]
    repo_path: tuple[str, ...]


async def probe(sandbox: Sandbox, cwd: str) -> Resolved:
    """The image's module names and repository path folders; empty when its Python cannot say."""
    done = await sandbox.exec(f"python3 -I -c {shlex.quote(PROBE)}", cwd=cwd, timeout=60)
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1]) if done.exit_code == 0 else {}
        names = frozenset(n for n in data.get("names", []) if isinstance(n, str))
        inside = tuple(p[len(cwd):].strip("/") for p in data.get("path", [])
                       if isinstance(p, str) and (p == cwd or p.startswith(cwd + "/")))
    except (ValueError, IndexError, AttributeError):
        return Resolved(frozenset(), ())
    return Resolved(names, inside)


def path_folders(test_cmd: str, test_files: Iterable[str], resolved: Resolved, base: set[str]) -> set[str]:
    """The repository's folders (relative, ``""`` the root) that may be on the test run's path: the
    root, ``PYTHONPATH`` entries of the command, the image's own, and for each test file the folder
    pytest's prepend import mode inserts (the first above it, in ``base``, with no ``__init__.py``)."""
    folders = {"", *resolved.repo_path, *command_path(test_cmd)}
    for path in test_files:
        folder = path.rpartition("/")[0]
        while folder and f"{folder}/__init__.py" in base:
            folder = folder.rpartition("/")[0]
        folders.add(folder)
    return folders


def command_path(test_cmd: str) -> list[str]:
    """The repository folders (relative) that ``test_cmd`` puts on the path with ``PYTHONPATH=``, in its order."""
    folders: list[str] = []
    for match in _PYTHONPATH.finditer(test_cmd):
        for entry in match.group(1).strip("'\"").split(":"):
            entry = entry.removeprefix("/testbed").strip("/").removeprefix("./")
            if entry and ".." not in entry.split("/") and not entry.startswith("$") and entry not in folders:
                folders.append(entry)
    return folders


def test_names(test_files: Iterable[str]) -> set[str]:
    """Module names a graded test file can be imported by: its stem and every folder above it."""
    names: set[str] = set()
    for path in test_files:
        parts = path.split("/")
        names |= set(parts[:-1])
        names.add(parts[-1].removesuffix(".py"))
    return names


def module_name(entry: str) -> str | None:
    """The module an entry of a path folder is imported as (``x.py``, ``x.cpython-311.so``, ``x/``)."""
    if entry.endswith(_MODULE_SUFFIXES):
        return entry.rsplit(".", 1)[0]
    if entry.endswith((".so", ".pyd")):
        return entry.split(".", 1)[0]
    return entry if "." not in entry else None


def shadowing(
    listing: Sequence[tuple[str, str]], base: set[str], folders: set[str], names: Iterable[str],
    *, allowed: Iterable[str] = (),
) -> str | None:
    """Why the patched tree shadows a resolved name, or None.

    Args:
        listing: ``(type, path)`` of the patched tree (:func:`~agentgym.envs.swe.protect.to_remove`'s form).
        base: Every path of the base tree.
        folders: The run's path folders (:func:`path_folders`).
        names: Names taken: the image's and the graded test modules'.
        allowed: Paths the gold patch writes (a new module the fix itself adds is no shadow).
    """
    taken = set(names)
    gold = {"/".join(p.split("/")[:i]) for p in allowed for i in range(1, p.count("/") + 2)}
    packages = {path.rpartition("/")[0] for _, path in listing if path.rpartition("/")[2].startswith("__init__.")}
    for kind, path in listing:
        folder, _, entry = path.rpartition("/")
        if folder not in folders or path in base or path in gold or kind not in ("f", "d", "l"):
            continue
        if kind == "d" and path not in packages:
            continue  # a folder without __init__ is a namespace portion: any module or package elsewhere wins
        name = module_name(entry)
        if name is not None and name in taken:
            return (f"the patch adds {path!r}, which would be imported as the module {name!r} that the test "
                    "run resolves outside the repository (the runner, a plugin, the stdlib, an installed "
                    "package) or is a graded test module; it was not graded")
    return None
