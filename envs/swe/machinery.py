"""Library code that reaches for the test run itself: refused before grading.

A patch's library code runs inside the test process, so it can rewrite outcomes there (pytest's
report objects, its hooks, its JUnit writer) and tell the verifier's own tests from the suite's by
what the runner was given (``sys.argv``, the report path) or by walking the frames that call it.
No honest fix of a library needs any of that, so :func:`machinery` reads the lines a patch adds to
Python source that is not the verifier's (:func:`~agentgym.envs.swe.protect.is_protected`) and
names the first that mentions pytest, its hooks or internals, the runner's arguments, the JUnit
report or frame walking; the verifier grades such a patch 0 with that line as the reason. A token the
task's gold patch adds itself is allowed (a fix inside a pytest plugin names pytest).

This is a screen for the obvious, not a proof: code that builds the same names at run time
(``getattr(sys, "ar" + "gv")``) passes it (docs/threat-model.md, "Not defended").
"""

from __future__ import annotations

import re

from . import protect

TOKENS = re.compile(
    r"pytest|hookimpl|hookwrapper|pluggy|junit|xunit|sys\s*\.\s*argv|orig_argv|/proc/|cmdline|_getframe|"
    r"currentframe|f_back|f_globals|f_locals|tb_frame|inspect\s*\.\s*stack|getouterframes|getinnerframes|"
    r"settrace|setprofile|sys\s*\.\s*monitoring|get_referrers|gc\s*\.\s*get_objects|agentgym",
    re.IGNORECASE,
)
"""What library code that rewrites or steers the test run has to name."""
SOURCE_SUFFIXES = (".py", ".pyw", ".pyx", ".pxd", ".pxi")


def added_lines(patch: str) -> list[tuple[str, str]]:
    """``(file, line)`` for every line ``patch`` adds (a hunk's ``+`` lines, counted as git counts
    them), and ``(file, "GIT binary patch")`` for a binary hunk, whose content cannot be read."""
    lines = patch.splitlines()
    headers = dict(protect.header_lines(lines))
    out: list[tuple[str, str]] = []
    current = ""
    for index, line in enumerate(lines):
        if index in headers:
            if line.startswith("+++ ") or line.startswith("diff --git "):
                name = protect.unquote(line.split(" b/", 1)[-1] if line.startswith("diff") else line[4:])
                current = name.strip().strip('"').removeprefix("b/")
            elif line.startswith("GIT binary patch"):
                out.append((current, line))
        elif line.startswith("+"):
            out.append((current, line[1:]))
    return out


def machinery(patch: str, gold: str) -> str | None:
    """Why ``patch``'s library code must not be graded, or None (see the module docstring)."""
    allowed = {m.group(0).lower() for _, text in added_lines(gold) for m in TOKENS.finditer(text)}
    for path, text in added_lines(patch):
        if not path.endswith(SOURCE_SUFFIXES) or protect.is_protected(path):
            continue
        if text == "GIT binary patch" or text.startswith("GIT binary patch"):
            return f"the patch changes the Python source {path!r} as a binary; it was not graded"
        for match in TOKENS.finditer(text):
            if match.group(0).lower() not in allowed:
                return (f"the patch's library code names the test run's machinery ({match.group(0)!r} in "
                        f"{path}: {text.strip()[:100]!r}); it was not graded")
    return None
