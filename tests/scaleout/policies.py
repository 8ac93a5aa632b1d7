"""Scripted policies for the Counter toy env that Ray workers import: slow ones, logging ones, dying ones.

Workers find this module because Ray puts the driver's working directory (the checkout) on their path.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from agentgym.parsing import native_tool_call
from agentgym.policies.base import Reply
from agentgym.types import Message, Task, ToolSpec

_in_flight = 0  # acts running in this process now


class Counting:
    """Plays Counter right (``add`` 1 until the target, then ``submit``), ``delay`` seconds a turn.

    Args:
        delay: Seconds each turn takes.
        log_dir: Where each process writes ``<pid>.max``, the most turns it had in flight at once,
            and appends each task it played a turn of to ``<pid>.tasks``.
        die_on: Task ids whose episode kills its own process (SIGKILL) on its second turn, every time.
        die_once_on: Task ids whose episode kills its process only the first time it is played
            (``log_dir`` keeps the mark).
    """

    name = "counting"

    def __init__(self, delay: float = 0.0, log_dir: str | None = None, die_on: tuple[str, ...] = (),
                 die_once_on: tuple[str, ...] = ()) -> None:
        self.delay = delay
        self.log_dir = log_dir
        self.die_on = die_on
        self.die_once_on = die_once_on

    async def act(self, messages: list[Message], tools: list[ToolSpec], *, task: Task) -> Reply:
        global _in_flight
        total = sum(m.role == "tool" for m in messages)
        if total == 1:
            self._maybe_die(task)
        _in_flight += 1
        self._log(task)
        try:
            await asyncio.sleep(self.delay)
        finally:
            _in_flight -= 1
        if total < task.data["target"]:
            call = native_tool_call(f"call_{total}", "add", {"amount": 1})
        else:
            call = native_tool_call(f"call_{total}", "submit", {"total": total})
        return Reply(message=Message(role="assistant", tool_calls=[call]))

    def _maybe_die(self, task: Task) -> None:
        if task.id in self.die_once_on and self.log_dir is not None:
            mark = Path(self.log_dir) / f"died-on-{task.id}"
            if not mark.exists():
                mark.write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)
        if task.id in self.die_on:
            os.kill(os.getpid(), signal.SIGKILL)

    def _log(self, task: Task) -> None:
        if self.log_dir is None:
            return
        top = Path(self.log_dir) / f"{os.getpid()}.max"
        seen = int(top.read_text()) if top.exists() else 0
        if _in_flight > seen:
            top.write_text(str(_in_flight))
        with open(Path(self.log_dir) / f"{os.getpid()}.tasks", "a") as f:
            f.write(task.id + "\n")
