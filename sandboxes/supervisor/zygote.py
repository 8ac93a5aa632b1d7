"""The zygote: forked from the supervisor before any request, it forks each Python session (a fork
instead of a new interpreter) and reports how each one ended.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal.py's C half, see fork_session
import array
import errno
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any

from .cleaner import clean
from .process import close_all_but, quiet_stdio
from .session import Session, forget_supervisor, run_session
from .wire import read_available, send_reply, set_nonblocking

if TYPE_CHECKING:  # for annotations only: ops imports this module
    from .ops import Supervisor


ZYGOTE_WAIT = 5.0  # how long the supervisor waits for the zygote to fork a session
EXIT_WAIT = 1.0  # how long a killed session's exit status may take to arrive


ZYGOTE_RECORD = struct.Struct("=cii")  # kind (F: forked, E: fork failed, X: exited), pid, errno or wait status
ZYGOTE_REQUEST = struct.Struct("=cd")  # kind (F: a session, C: a session that cleans first), the wipe's deadline


class Zygote:
    """The supervisor's end of the zygote: asks it for sessions and learns how they ended."""

    def __init__(self, supervisor: Supervisor) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                zygote_main(supervisor, theirs)
            except BaseException:
                traceback.print_exc()  # to the supervisor's stderr: the host keeps it to explain a failure
            finally:
                os._exit(1)
        theirs.close()
        self.pid = pid
        self.sock = ours
        self.exits: dict[int, int] = {}  # pid -> wait status, for sessions that ended

    def spawn(self, clean_by: float | None = None) -> Session:
        """A new Python session, forked and ready to take code; with ``clean_by`` (a deadline), one that
        wipes the sandbox first and sends its verdict as its first reply (see :meth:`Supervisor.op_wipe`).

        Raises:
            OSError: The fork failed (e.g. out of processes) or the zygote is gone.
        """
        self.sock.send(ZYGOTE_REQUEST.pack(b"F", 0.0) if clean_by is None else ZYGOTE_REQUEST.pack(b"C", clean_by))
        deadline = time.monotonic() + ZYGOTE_WAIT
        while True:
            kind, pid, value, fds = self.receive(deadline)
            if kind == b"F":
                return Session(pid, fds)
            if kind == b"E":
                raise OSError(value, "could not start a Python session: " + os.strerror(value))

    def exit_status(self, pid: int) -> int | None:
        """The wait status of session ``pid`` once the zygote reaped it, or None if that takes too long."""
        deadline = time.monotonic() + EXIT_WAIT
        while pid not in self.exits:
            try:
                self.receive(deadline)
            except OSError:
                return None
        return self.exits.pop(pid)

    def receive(self, deadline: float) -> tuple[bytes, int, int, list[int]]:
        if not select.select([self.sock], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise OSError(errno.ETIMEDOUT, "the Python sessions' parent did not answer")
        message, ancillary, _, _ = self.sock.recvmsg(ZYGOTE_RECORD.size, socket.CMSG_SPACE(4 * 4))
        if not message:
            raise OSError(errno.EPIPE, "the Python sessions' parent exited")
        fds = array.array("i")
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        record, pid, value = ZYGOTE_RECORD.unpack(message)
        if record == b"X":
            self.exits[pid] = value
        return record, pid, value, list(fds)


def zygote_main(supervisor: Supervisor, sock: socket.socket) -> None:
    """The zygote's loop: a session forked on each request, every ended one reaped and reported."""
    quiet_stdio(keep=sock.fileno())
    wake_r, wake_w = os.pipe()
    set_nonblocking(wake_r)
    set_nonblocking(wake_w)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    # The first run in a fresh interpreter costs more (compiler, encoder, allocator warming up): pay it
    # here once, so that no session pays it.
    exec(compile("pass", "<python>", "exec"), {})
    json.dumps({"error": None, "broken": False})
    forget_supervisor()
    gc.freeze()  # no session's collector touches (and so copies) the objects it shares with this process
    while True:
        watched: list[Any] = [sock, wake_r]
        ready = select.select(watched, [], [])[0]
        if wake_r in ready:
            while read_available(wake_r):
                pass
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                sock.send(ZYGOTE_RECORD.pack(b"X", pid, status))
        if sock in ready:
            request = sock.recv(ZYGOTE_REQUEST.size)
            if not request:
                return
            kind, deadline = ZYGOTE_REQUEST.unpack(request)
            fork_session(supervisor, sock, deadline if kind == b"C" else None)


def fork_session(supervisor: Supervisor, sock: socket.socket, clean_by: float | None) -> None:
    """Fork one session and send its pid and the supervisor's ends of its pipes over ``sock``; with
    ``clean_by``, the session first wipes the sandbox and replies with its verdict, ``{"wiped": why not}``."""
    pipes: list[int] = []
    try:
        for _ in range(4):  # code in, replies out, stdout, stderr
            pipes += os.pipe()
        pid = os.fork()
    except OSError as e:
        for fd in pipes:
            os.close(fd)
        sock.send(ZYGOTE_RECORD.pack(b"E", 0, e.errno or errno.EAGAIN))
        return
    code_r, code_w, reply_r, reply_w, out_r, out_w, err_r, err_w = pipes
    if pid == 0:
        try:
            signal.set_wakeup_fd(-1)
            # _signal's, not signal.signal: its enum wrapping copies some 100 pages of the zygote's memory
            _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
            os.setsid()
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            close_all_but({0, 1, 2, code_r, reply_w})
            supervisor.child_setup()
            os.chdir(supervisor.workdir)
            if clean_by is not None:
                assert supervisor.user is not None  # the supervisor wipes only when code runs as a user of its own
                try:
                    problem = clean(supervisor.user[0], supervisor.writable, supervisor.baseline, clean_by)
                except BaseException as e:
                    problem = f"the wipe failed: {type(e).__name__}: {e}"
                send_reply(reply_w, {"wiped": problem})
                if problem is not None:
                    return
            if "random" in sys.modules:  # a forked session would otherwise repeat its parent's sequence
                sys.modules["random"].seed()
            run_session(code_r, reply_w, supervisor.cap)
        except BaseException:
            traceback.print_exc()  # on the session's stderr: the next python call reports it
        finally:
            os._exit(127)
    for fd in (code_r, reply_w, out_w, err_w):
        os.close(fd)
    ours = [code_w, reply_r, out_r, err_r]
    sock.sendmsg([ZYGOTE_RECORD.pack(b"F", pid, 0)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", ours))])
    for fd in ours:
        os.close(fd)
