"""MiniWoB++ tasks, read from the ``miniwob`` wheel: every page under ``miniwob/html/miniwob/``.

The wheel ships the task pages with the scripts they load (``core/``, ``common/``); nothing is
downloaded. A task is one page; an episode is one problem the page generates from a seed.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from agentgym.errors import EnvError
from agentgym.types import Task


@lru_cache(maxsize=1)
def html_root() -> Path:
    """The wheel's ``html`` directory (``core/``, ``common/``, ``miniwob/``, ``flight/``).

    Raises:
        EnvError: The ``miniwob`` package is not installed.
    """
    try:
        import miniwob
    except ImportError as e:
        raise EnvError("the GUI env needs the miniwob package: pip install 'agentgym[gui]'") from e
    root = Path(miniwob.__file__).parent / "html"
    if not (root / "miniwob").is_dir():
        raise EnvError(f"the miniwob package at {root.parent} has no html/miniwob/ directory")
    return root


@lru_cache(maxsize=1)
def task_names() -> tuple[str, ...]:
    """Every MiniWoB++ task the wheel ships, sorted (``click-button``, ``enter-text``, ...)."""
    return tuple(sorted(p.stem for p in (html_root() / "miniwob").glob("*.html")))


def miniwob_task(name: str) -> Task:
    """The :class:`Task` for one page; its prompt is filled in per episode (the page writes it).

    Raises:
        EnvError: No task of that name.
    """
    if name not in task_names():
        import difflib

        close = difflib.get_close_matches(name, task_names(), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise EnvError(f"no MiniWoB task {name!r}{hint}; see agentgym.envs.gui.task_names()")
    return Task(id=name, prompt=f"MiniWoB task {name}: the page states the instruction.", data={"miniwob": name})
