"""Terminal tasks in Harbor's folder format (Terminal-Bench 2.x): read and checked by
:mod:`agentgym.envs.terminal.task`, played by :class:`agentgym.envs.terminal.env.TerminalEnv` (``terminal``),
graded by :mod:`agentgym.envs.terminal.verifier`. The env is not imported here: loading tasks needs no
sandbox machinery."""

from agentgym.envs.terminal.config import TaskConfig
from agentgym.envs.terminal.honoured import HONOURED
from agentgym.envs.terminal.task import HarborTask, TaskFormatError, load_task, load_tasks

__all__ = ["HONOURED", "HarborTask", "TaskConfig", "TaskFormatError", "load_task", "load_tasks"]
