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

    The patch is read as ``git apply`` and ``patch`` read it (:func:`header_lines`): a hunk's lines are
    content however they start (a removed ``-- .git/`` SQL comment is not a header), everything
    outside a hunk is a header. Every header line that names a path (``diff --git``, ``---``/``+++``,
    ``***``, renames, copies, ``Index:``) is read with its C-style quoting undone (``"\\056git"`` is
    ``.git``): any ``.git`` component refuses the patch, whatever its case.
    A new symbolic link is refused when it points into ``.git``, at an absolute path or upwards.
    """
    lines = patch.splitlines()
    for index, line in header_lines(lines):
        header = _HEADER.match(line)
        if header is not None and _GIT_COMPONENT.search(unquote(header.group(1))):
            return f"the patch writes into .git/ ({line.strip()[:120]!r}); it was not applied"
        if _SYMLINK_MODE.match(line):
            target = _symlink_target(lines[index + 1:])
            if target is not None and (_GIT_COMPONENT.search(target) or target.startswith("/")
                                       or ".." in target.split("/")):
                return f"the patch makes a symbolic link to {target[:120]!r}; it was not applied"
    return None


_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def header_lines(lines: list[str]) -> list[tuple[int, str]]:
    """``(index, line)`` of every line of a unified diff that is not a hunk's content.

    A hunk header ``@@ -a,b +c,d @@`` is followed by exactly ``b`` old and ``d`` new lines (a
    context line counts for both, an empty line is an empty context line, ``\\ No newline`` for
    neither), as git's ``parse_fragment`` and ``patch`` count them; what follows is headers again.
    """
    out: list[tuple[int, str]] = []
    old = new = 0
    for index, line in enumerate(lines):
        if old > 0 or new > 0:
            kind = line[:1]
            if kind in (" ", ""):
                old, new = old - 1, new - 1
            elif kind == "-":
                old -= 1
            elif kind == "+":
                new -= 1
            elif kind == "\\":
                pass
            else:  # a short hunk: git stops reading it here, and so does this
                old = new = 0
                out.append((index, line))
            continue
        out.append((index, line))
        hunk = _HUNK.match(line)
        if hunk is not None:
            old = int(hunk.group(1)) if hunk.group(1) is not None else 1
            new = int(hunk.group(2)) if hunk.group(2) is not None else 1
    return out


def unquote(text: str) -> str:
    """``text`` with every C-style quoted name in it (git's ``core.quotePath`` form, which ``patch``
    reads too: ``"a/\\056git/x"``) decoded; bytes that are not UTF-8 stay as surrogates."""
    def decode(match: re.Match[str]) -> str:
        body, raw, i = match.group(1), bytearray(), 0
        while i < len(body):
            char = body[i]
            if char != "\\" or i + 1 >= len(body):
                raw += char.encode("utf-8", "surrogateescape")
                i += 1
            elif body[i + 1] in "01234567":
                digits = re.match(r"[0-7]{1,3}", body[i + 1:])
                assert digits is not None
                raw.append(int(digits.group(0), 8) & 0xFF)
                i += 1 + len(digits.group(0))
            else:
                raw.append(_ESCAPES.get(body[i + 1], ord(body[i + 1]) & 0xFF))
                i += 2
        return raw.decode("utf-8", "surrogateescape")

    return _QUOTED.sub(decode, text)


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
