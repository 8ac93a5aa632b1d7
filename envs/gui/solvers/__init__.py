"""The reference GUI policy's solvers, one small function per MiniWoB task, grouped by family.

:data:`SOLVERS` maps a task name to its solver (see :mod:`.base` for what a solver sees and
returns); importing this package imports every family module, which registers its solvers.
"""

from agentgym.envs.gui.solvers import (
           clicks,
           cube,
           email,
           forms,
           pointer,
           puzzles,
           shapes,
           social,
           strokes,
           tables,
           text,
)
from agentgym.envs.gui.solvers.base import SOLVERS, Action, Page, Solver

__all__ = ["SOLVERS", "Action", "Page", "Solver", "clicks", "cube", "email", "forms", "pointer", "puzzles", "shapes",
           "social", "strokes", "tables", "text"]
