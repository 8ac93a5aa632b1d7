"""Every agentgym module is imported from one tree: the checkout's ``agentgym/`` (whose ``envs`` and
``sandboxes`` are links to the required top-level folders), never from a second copy elsewhere."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

import agentgym

ROOT = Path(agentgym.__file__).resolve().parent.parent


def test_every_package_imports_from_the_same_tree() -> None:
    names = [m.name for m in pkgutil.walk_packages(agentgym.__path__, "agentgym.") if m.ispkg]
    assert {"agentgym.envs", "agentgym.envs.code", "agentgym.sandboxes", "agentgym.sandboxes.supervisor"} <= set(names)
    for name in names:
        module = importlib.import_module(name)
        path = Path(module.__file__ or "").resolve()
        assert path.is_relative_to(ROOT), f"{name} imported from {path}, outside {ROOT}"


def test_top_level_folders_are_not_a_second_package() -> None:
    """``envs`` and ``sandboxes`` exist only as ``agentgym.envs`` / ``agentgym.sandboxes``."""
    import agentgym.envs
    import agentgym.sandboxes

    assert Path(agentgym.envs.__file__ or "").resolve().parent == ROOT / "envs"
    assert Path(agentgym.sandboxes.__file__ or "").resolve().parent == ROOT / "sandboxes"
    assert "envs" not in sys.modules and "sandboxes" not in sys.modules
