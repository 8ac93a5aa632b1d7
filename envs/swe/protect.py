"""What of a repository the model's patch may change, and what the verifier puts back before grading.

A grade is the repository's own tests run on the model's library code. Everything else the test run
reads is the verifier's: the tests and their helpers, every ``conftest.py``, pytest's configuration
files, Python's path hooks (``sitecustomize``, ``usercustomize``, ``.pth`` files), package metadata
that declares plugins (``*.egg-info``, ``*.dist-info``) and compiled bytecode. :func:`is_protected`
names them by path alone; the verifier restores each from the base (or removes it, when the base
has none) after applying the patch, so what the model wrote there never reaches the test run.

:func:`refusal` reads a patch before any apply command runs: a patch that names a path inside
``.git`` (``git apply`` refuses it, swebench's last fallback, ``patch``, does not) or makes a
symbolic link out of the work tree or into ``.git`` is not applied at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TEST_DIRS = frozenset({"tests", "test", "testing"})
"""A path under a folder of one of these names is test code (helpers and ``__init__.py`` included)."""
CONFIG_NAMES = frozenset({
    "conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "setup.cfg",
    "pyproject.toml", "setup.py", "sitecustomize.py", "usercustomize.py",
})
"""Files that configure, extend or start the test run wherever they are: pytest reads its
configuration from the first of these it finds above the tests, and Python imports the path hooks
from any folder on ``sys.path`` (``PYTHONPATH=src`` puts a model-written one there)."""
METADATA_SUFFIXES = (".egg-info", ".dist-info")
"""Folders whose ``entry_points.txt`` can register a pytest plugin from any folder on ``sys.path``."""

_HEADER = re.compile(r"^(?:diff --git |--- |\+\+\+ |\*\*\* |rename (?:from|to) |copy (?:from|to) |Index: |"
                     r"Binary files |GIT binary patch)(.*)$")
_GIT_COMPONENT = re.compile(r"(?:^|[/\s\"'\\])\.git(?:$|[/\s\"'\\])", re.IGNORECASE)
_SYMLINK_MODE = re.compile(r"^(?:new file mode|new mode) 120000\s*$")


def is_protected(path: str) -> bool:
    """Whether ``path`` (relative to the repository) is the verifier's, not library source."""
    parts = [p for p in path.strip("/").split("/") if p not in ("", ".")]
    if not parts:
        return False
    name = parts[-1]
    if any(p in TEST_DIRS for p in parts[:-1]) or any(p.endswith(METADATA_SUFFIXES) for p in parts):
        return True
    if "__pycache__" in parts or name.endswith((".pyc", ".pyo", ".pth")):
        return True
    if name in CONFIG_NAMES:
        return True
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def refusal(patch: str) -> str | None:
    """Why ``patch`` must not be applied at all, or None.

    Every header line that names a path (``diff --git``, ``---``/``+++``, ``***``, renames, copies,
    ``Index:``) is read: any ``.git`` component among them refuses the patch, whatever its case.
    A new symbolic link is refused when it points into ``.git``, at an absolute path or upwards.
    """
    lines = patch.splitlines()
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if header is not None and _GIT_COMPONENT.search(header.group(1)):
            return f"the patch writes into .git/ ({line.strip()[:120]!r}); it was not applied"
        if _SYMLINK_MODE.match(line):
            target = _symlink_target(lines[index + 1:])
            if target is not None and (_GIT_COMPONENT.search(target) or target.startswith("/")
                                       or ".." in target.split("/")):
                return f"the patch makes a symbolic link to {target[:120]!r}; it was not applied"
    return None


def _symlink_target(rest: list[str]) -> str | None:
    """The target of the symbolic link whose header ``rest`` follows: the hunk's one added line."""
    for line in rest:
        if line.startswith("diff --git "):
            return None
        if line.startswith("+") and not line.startswith("+++"):
            return line[1:]
    return None


def to_remove(listing: Iterable[tuple[str, str]], base: set[str], *, allowed: Iterable[str] = ()) -> list[str]:
    """What to delete from the patched tree before the base's protected files are put back.

    Args:
        listing: ``(type, path)`` of every entry of the patched tree outside ``.git`` (``find``'s
            ``%y``: ``f`` file, ``d`` folder, ``l`` link...), paths relative to the repository.
        base: The protected files of the base, which are put back after.
        allowed: Protected paths the patch may change all the same (those the task's own fix changes).

    Returns every protected entry the base does not have (the model's conftest, a planted ``.pth``,
    bytecode), every base file's present entry, and whatever stands where a folder of a base file
    must be (a link, a file), so that putting them back writes through nothing the model made.
    """
    folders = {"/".join(p.split("/")[:i]) for p in base for i in range(1, p.count("/") + 1)}
    allowed = set(allowed)
    remove = []
    for kind, path in listing:
        if path in base:
            remove.append(path)  # whatever it is now (a link, a hard link to library code): put back anew
        elif path in folders:
            if kind != "d":
                remove.append(path)
        elif kind != "d" and is_protected(path) and path not in allowed:
            remove.append(path)
        elif kind == "d" and path.rsplit("/", 1)[-1] == "__pycache__":
            remove.append(path)
    return remove
