"""Where the OpenEnv peer harness is: found from the checkout, never at a path of one machine.

The harness (``bench.py``, ``setup.sh``) lives outside this repository, in a ``shared/peers/openenv``
folder beside the checkout (``../shared/peers/openenv``) or beside a folder above it (a worktree
under ``../wt/NAME`` finds ``../../shared``). Its venv is where ``setup.sh`` makes it:
``$OPENENV_VENV``, default ``openenv-venv`` in the temporary directory. ``OPENENV_BENCH`` and
``OPENENV_PY`` name other copies.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]
RELATIVE = Path("shared/peers/openenv/bench.py")


def bench_py() -> Path:
    """``$OPENENV_BENCH``, else the first ``shared/peers/openenv/bench.py`` beside the checkout or above it."""
    if os.environ.get("OPENENV_BENCH"):
        return Path(os.environ["OPENENV_BENCH"])
    candidates = [folder / RELATIVE for folder in CHECKOUT.parents]
    return next((c for c in candidates if c.is_file()), CHECKOUT.parent / RELATIVE)


def venv_python() -> Path:
    """``$OPENENV_PY``, else the python of the venv ``setup.sh`` makes (``$OPENENV_VENV`` or its default)."""
    if os.environ.get("OPENENV_PY"):
        return Path(os.environ["OPENENV_PY"])
    venv = os.environ.get("OPENENV_VENV") or os.path.join(tempfile.gettempdir(), "openenv-venv")
    return Path(venv) / "bin" / "python"
