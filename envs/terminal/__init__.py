"""Terminal tasks in Harbor's folder format (Terminal-Bench 2.x): see :mod:`agentgym.envs.terminal.task`."""

from agentgym.envs.terminal.config import TaskConfig
from agentgym.envs.terminal.honoured import HONOURED
from agentgym.envs.terminal.task import HarborTask, TaskFormatError, load_task, load_tasks

__all__ = ["HONOURED", "HarborTask", "TaskConfig", "TaskFormatError", "load_task", "load_tasks"]
