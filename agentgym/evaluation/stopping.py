"""Stopping a run on a signal: Ctrl-C, SIGTERM and SIGHUP alike, within a grace period, at once on a second one.

``timeout``, ``kill``, Slurm and Kubernetes stop a process with SIGTERM (a closed terminal sends
SIGHUP), then SIGKILL some seconds later. So each of the three signals does what Ctrl-C does: the
run's task is cancelled, running episodes end as ``cancelled`` and are recorded, the summary is
written and sandboxes released. If that takes longer than the grace period, or a second signal
comes, the process exits at once: rows already written are whole (each is written in one call),
and the sandboxes still open end with the process (a local sandbox dies with its parent, a
container is removed when its connection closes, or reaped by the next run).

The handlers are plain ``signal.signal`` ones, not the event loop's: a second signal must end the
process even when the loop is stuck in a blocking call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(Exception):
    """The run was stopped by ``signum`` and wound down in time.

    Attributes:
        signum: The signal; the process should exit with status ``128 + signum``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def run_stoppable(main: Coroutine[Any, Any, T], *, grace: float, on_hard_stop: Callable[[str], None]) -> T:
    """``asyncio.run(main)``, with SIGINT, SIGTERM and SIGHUP cancelling ``main`` instead of killing the process.

    Args:
        main: The run.
        grace: Seconds the run has, after the first signal, to record its episodes and release its
            sandboxes; past them the process exits.
        on_hard_stop: Called with a one-line reason just before the process exits at once (a second
            signal, or the grace period over), to say what was and was not recorded.

    Raises:
        Interrupted: ``main`` was cancelled by a signal and ended within the grace period.
    """
    received: list[int] = []
    loop_task: list[asyncio.Task[T]] = []
    timers: list[threading.Timer] = []

    def hard_stop(signum: int, reason: str) -> None:
        with contextlib.suppress(Exception):
            on_hard_stop(reason)
            sys.stderr.flush()
        os._exit(128 + signum)

    def handler(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if received:
            hard_stop(received[0], f"{name} again: stopping now")
        received.append(signum)
        print(f"\n{name}: stopping: recording running episodes as cancelled, releasing sandboxes "
              f"(up to {grace:g} s; {name} again stops at once)", file=sys.stderr, flush=True)
        timer = threading.Timer(grace, hard_stop, (signum, f"not stopped within {grace:g} s of {name}: stopping now"))
        timer.daemon = True
        timer.start()
        timers.append(timer)
        if loop_task:
            loop_task[0].get_loop().call_soon_threadsafe(loop_task[0].cancel)

    async def guarded() -> T:
        current = asyncio.current_task()
        assert current is not None
        loop_task.append(current)
        if received:  # a signal before the loop ran: cancel at the first chance
            current.cancel()
        return await main

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        return asyncio.run(guarded())
    except (asyncio.CancelledError, KeyboardInterrupt):
        if received:
            raise Interrupted(received[0]) from None
        raise
    finally:
        for timer in timers:
            timer.cancel()
        for sig, old in previous.items():
            signal.signal(sig, old)
