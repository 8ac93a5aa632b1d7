"""The supervisor's ops: one method per request, on the object that owns the zygote, the current
Python session and any fork's copier.

Ops:
    ping: ``{}`` -> ``{}``.
    exec: ``{"cmd", "timeout", "cwd"}`` -> ``{"exit_code", "stdout", "stderr", "timed_out", "truncated"}``.
        ``/bin/sh -c cmd`` in its own process group; a timeout kills the whole group.
    python: ``{"code", "timeout"}`` -> ``{"stdout", "stderr", "error", "timed_out", "truncated",
        "restarted"}``. Runs in a persistent Python session, so state carries over between calls.
    read_file: ``{"path"}`` -> ``{"data": base64}``.
    write_file: ``{"path", "data": base64}`` -> ``{}``; parent directories are created.
    wipe: ``{"timeout", "lend"}`` -> ``{"clean", "reason", "lent"}``: everything the code's user left is
        removed (checked) and a new Python session is ready; ``clean`` false means the sandbox must be
        destroyed. With ``lend``, a clean wipe lends the new session as ``session`` does (``lent``).
    snapshot: ``{"first", "size", "timeout"}`` -> ``{"data": base64, "done"}``: the next chunk of a
        stream of every place code can write (``first`` starts a new one), for a fork.
    restore: ``{"data": base64, "first", "last", "timeout"}`` -> ``{}``: a snapshot's chunks, unpacked
        as the code's user into this sandbox's own places.
    session: ``{"restart", "timeout"}`` -> ``{"note", "failed"}``: lend the host the Python session's four
        pipes (code in, replies, stdout, stderr), sent with ``SCM_RIGHTS`` on the lending socket (a
        second connection to ``"socket"``, or the descriptor ``"lend_fd"`` of the config) before the
        reply, so that the host's python calls go straight to the session and never wake this process.
        ``restart`` (``"timeout"``, ``"died"``, ``"broken"``, ``"garbled"``, ``"cut off"``) first kills the
        session the host gave up on; ``note`` says so as a python call would. ``failed``: no session could be started.
"""

from __future__ import annotations

import array
import base64
import contextlib
import errno
import fcntl
import os
import resource
import select
import signal
import socket
import stat
import time
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

from .cleaner import walk, writable_by, writable_mounts
from .copier import Copier, archive, extract, fork_roots
from .linux import deny_keyrings, keyring_filter, new_session_keyring, seccomp_program
from .process import exit_status, kill_group, returncode
from .session import Session
from .wire import (
    QUIET_WAIT,
    READ_CHUNK,
    Capture,
    code_frame,
    parse_reply,
    parse_verdict,
    read_available,
    reply_limit,
    set_nonblocking,
)
from .zygote import Zygote

if TYPE_CHECKING:  # imported where used: see Supervisor.spawn
    import subprocess

EXIT_TIMED_OUT = 124  # what coreutils' timeout(1) returns
DRAIN_AFTER_EXIT = 0.2  # how long a finished command's background children may keep its pipes open


BASELINE_LIMIT = 20000  # entries in writable mounts past which a sandbox is not worth wiping (a host disk)


class Supervisor:
    """Handles requests one at a time; owns the Python session."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.cap = int(config.get("output_bytes", 65536))
        self.default_timeout = float(config.get("exec_timeout", 30.0))
        self.deadline = time.monotonic() + float(config.get("wall_seconds", 1800.0))
        self.rlimits = config.get("rlimits", {})
        self.workdir = config.get("workdir", "/work")
        # [uid, gid] that user code runs as, when the supervisor itself runs as root (with only the
        # capabilities to switch user and to signal): then user code cannot kill the supervisor.
        self.user = config.get("user")
        self.zygote: Zygote | None = None
        self.worker: Session | None = None
        self.calls = 0  # python calls sent to sessions, numbering them (see code_frame)
        self.copier: Copier | None = None  # a snapshot or restore under way (see fork)
        self.lender: socket.socket | None = None  # where the session's pipes go to the host (op_session)
        self.baseline: set[str] = set()  # every entry of every writable mount, before any code ran
        self.writable: list[str] = []  # the directories among them that code may write in
        self.unwipeable: str | None = "code runs as the supervisor's own user" if not self.user else None
        self.keyrings = False  # keyctl works here (the supervisor joined a session keyring of its own)
        program = keyring_filter(os.uname().machine)  # what keeps code from keyrings
        self.keyring_filter = None if program is None else seccomp_program(program)

    def take_baseline(self) -> None:
        """Record what the writable mounts hold before any code runs: a wipe removes everything else.

        Mounts come from ``/proc/self/mountinfo``, not from a list: any that is writable counts.
        """
        if self.unwipeable is not None:
            return
        for point in writable_mounts():
            if not walk(point, self.baseline, BASELINE_LIMIT):
                self.unwipeable = f"the writable mount {point} holds too much to check"
                return
        assert self.user is not None  # no user makes the sandbox unwipeable, which returned above
        uid, gid = self.user
        for path in sorted(self.baseline):
            st = os.lstat(path)
            if st.st_uid == uid or (stat.S_ISREG(st.st_mode) and writable_by(st, uid, gid)):
                self.unwipeable = f"{path} belongs to the code's user from the start"  # it could mark it
                return
            if stat.S_ISDIR(st.st_mode) and writable_by(st, uid, gid):
                if not st.st_mode & stat.S_ISVTX and any(p.startswith(path + "/") for p in self.baseline):
                    self.unwipeable = f"code could delete or rename what {path} held from the start"
                    return
                self.writable.append(path)

    # ------------------------------------------------------------------ children
    def child_setup(self) -> None:
        """Runs in each child that runs code: limits, first in line for the OOM killer, no keyrings
        (or, where they cannot be denied, a session keyring of its own), the code's uid."""
        for name, value in self.rlimits.items():
            kind = getattr(resource, "RLIMIT_" + name)
            hard = resource.getrlimit(kind)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))
        try:  # os-level calls: a file object would copy some 40 pages of a zygote's memory in a session
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            try:
                os.write(fd, b"1000")
            finally:
                os.close(fd)
        except OSError:
            pass
        if self.keyring_filter is not None:
            deny_keyrings(self.keyring_filter)
        elif self.keyrings and not new_session_keyring():  # root's, and this process's only
            raise OSError(errno.EAGAIN, "could not give the code a session keyring of its own")
        if self.user:
            os.setgid(self.user[1])
            os.setuid(self.user[0])  # from root to another uid: every capability is dropped too

    @contextlib.contextmanager
    def as_user(self) -> Iterator[None]:
        """File operations run as the code's user, so they obey (and create) the files it owns."""
        if not self.user:
            yield
            return
        os.setegid(self.user[1])
        os.seteuid(self.user[0])
        try:
            yield
        finally:
            os.seteuid(0)
            os.setegid(0)

    def spawn(self, argv: list[str], cwd: str) -> subprocess.Popen[bytes]:
        """Start a command (``exec``). ``subprocess`` is imported here, after the zygote is forked: it
        brings ``threading``, whose at-fork handler runs in every forked child and made each session's
        fork cost twice what it does without."""
        import subprocess

        proc = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, preexec_fn=self.child_setup,
        )
        for stream in (proc.stdout, proc.stderr):
            set_nonblocking(stream.fileno())  # type: ignore[union-attr]
        return proc

    def pump(
        self, streams: dict[int, Capture], deadline: float, done_fd: int = -1,
        proc: subprocess.Popen[bytes] | None = None,
    ) -> str:
        """Read ``streams`` (fd -> Capture) until an end condition; say which one.

        Ends with "done" when ``done_fd`` becomes readable, "eof" when every stream closed,
        "exited" when ``proc`` exited and its pipes stayed open past a short grace, or "timeout".
        """
        open_fds = list(streams)
        exited_at = None
        while True:
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if not open_fds and done_fd < 0:
                return "eof"
            if proc is not None and exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > DRAIN_AFTER_EXIT:
                return "exited"
            wait = deadline - now
            if proc is not None:
                wait = min(wait, 0.05)  # to notice the shell exiting while background jobs hold its pipes
            watch = open_fds + ([done_fd] if done_fd >= 0 else [])
            ready, _, _ = select.select(watch, [], [], wait)
            for fd in ready:
                if fd == done_fd:
                    continue
                chunk = read_available(fd)
                if chunk:
                    streams[fd].feed(chunk)
                elif chunk == b"":
                    open_fds.remove(fd)
            if done_fd in ready:
                self.drain(streams)
                return "done"

    def wait_quietly(self, streams: dict[int, Capture], deadline: float) -> str | None:
        """"done" if the worker answers within :data:`QUIET_WAIT`, else None (then pump).

        Most snippets finish within a millisecond; waiting for the answer alone lets the worker's
        output sit in the pipes (64 KiB each) instead of waking the supervisor once per write.
        """
        assert self.worker is not None
        wait = min(QUIET_WAIT, deadline - time.monotonic())
        if wait <= 0 or not select.select([self.worker.replies], [], [], wait)[0]:
            return None
        self.drain(streams)
        return "done"

    def drain(self, streams: dict[int, Capture]) -> None:
        """Take what is already in the pipes without waiting for more."""
        for fd, capture in streams.items():
            while True:
                chunk = read_available(fd)
                if not chunk:
                    break
                capture.feed(chunk)

    # ------------------------------------------------------------------ ops
    def op_ping(self, req: dict[str, Any]) -> dict[str, Any]:
        return {}

    def op_exec(self, req: dict[str, Any]) -> dict[str, Any]:
        import subprocess  # not at the top: see spawn

        deadline = self.call_deadline(req)
        out, err = Capture(self.cap), Capture(self.cap)
        try:
            proc = self.spawn(["/bin/sh", "-c", req["cmd"]], req.get("cwd") or self.workdir)
        except OSError as e:
            return {"exit_code": 126, "stdout": "", "stderr": f"could not start the command: {e}\n",
                    "timed_out": False, "truncated": False}
        streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}  # type: ignore[union-attr]
        ended = self.pump(streams, deadline, proc=proc)
        if ended == "eof":  # background jobs that let go of the pipes may keep running
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                ended = "timeout"
        if ended != "eof":
            kill_group(proc.pid)
            self.pump(streams, time.monotonic() + 1.0)
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]
        code = proc.wait()
        timed_out = ended == "timeout"
        return {
            "exit_code": EXIT_TIMED_OUT if timed_out else exit_status(code),
            "stdout": out.text(), "stderr": err.text(),
            "timed_out": timed_out, "truncated": out.truncated or err.truncated,
        }

    def op_python(self, req: dict[str, Any]) -> dict[str, Any]:
        deadline = self.call_deadline(req)
        out, err = Capture(self.cap), Capture(self.cap)
        if self.worker is None:
            try:
                self.start_worker()
            except OSError as e:
                return {"stdout": "", "stderr": "", "error": f"could not start the Python session: {e}",
                        "timed_out": False, "truncated": False, "restarted": True}
        worker = self.worker
        assert worker is not None
        streams = {worker.stdout: out, worker.stderr: err}
        code = req["code"].encode("utf-8", "surrogatepass")  # a lone surrogate fails in the session, as code
        self.calls += 1
        reply = None
        try:
            self.send_code(code_frame(self.calls, code), streams, deadline)
            ended = self.wait_quietly(streams, deadline) or self.pump(streams, deadline, done_fd=worker.replies)
            if ended == "done":
                reply = self.read_reply(deadline)
        except OSError:
            ended = "died"
        except ValueError:  # not a reply the session writes: the code wrote to its reply pipe
            ended = "garbled"
        if reply is not None and reply.get("call") != self.calls:  # an earlier call's, or forged
            ended, reply = "garbled", None
        error = reply["error"] if reply is not None else None
        restarted = reply is None or reply["broken"]
        if restarted:
            why = "broken" if reply is not None else ended if ended in ("timeout", "garbled") else "died"
            note = self.restart_note(why, self.stop_worker(streams), req)
            error = (error or "") + note if why == "broken" else note
            try:
                self.start_worker()
            except OSError:
                pass  # out of processes: the next call tries again
        return {"stdout": out.text(), "stderr": err.text(), "error": error, "timed_out": ended == "timeout",
                "truncated": out.truncated or err.truncated, "restarted": restarted}

    def restart_note(self, why: str, status: int | None, req: dict[str, Any]) -> str:
        """What a python call says of a session restarted because it timed out, died or broke its output."""
        if why == "broken":
            return "the code closed the Python session's output; it was restarted\n"
        if why == "garbled":  # a lent session (see op_session) wrote to its reply pipe itself
            return "the Python session sent a reply that was not its own; it was restarted\n"
        if why == "cut off":  # the host gave up on a lent session's call (its caller was cancelled)
            return "the last call was cancelled; the Python session was restarted\n"
        if why == "timeout":
            seconds = float(req.get("timeout") or self.default_timeout)
            return f"TimeoutError: the code ran longer than {seconds:.3g} s; the session was restarted\n"
        if status is None:
            how = "ended"
        elif status < 0:
            how = f"was killed by signal {-status}"
        else:
            how = f"exited ({status})"
        hint = " (out of memory?)" if status == -signal.SIGKILL else ""
        return f"the Python session {how}{hint}; it was restarted\n"

    def op_session(self, req: dict[str, Any]) -> dict[str, Any]:
        """Lend the session's pipes to the host (see the module's docstring), restarting it first if asked."""
        if self.lender is None:
            raise RuntimeError("this sandbox has no socket to lend its Python session on")
        note = None
        why = req.get("restart")
        if why is not None and self.worker is not None:
            note = self.restart_note(str(why), self.stop_worker({}), req)
        if self.worker is None:
            try:
                self.start_worker()
            except OSError as e:
                return {"note": note, "failed": f"could not start the Python session: {e}"}
        self.lend()
        return {"note": note, "failed": None}

    def lend(self) -> None:
        """Send the session's four pipes to the host on the lending socket (before the reply that says so)."""
        worker = self.worker
        assert worker is not None and self.lender is not None
        fds = array.array("i", (worker.code_in, worker.replies, worker.stdout, worker.stderr))
        self.lender.sendmsg([b"S"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])

    def op_read_file(self, req: dict[str, Any]) -> dict[str, Any]:
        with self.as_user(), self.open_regular(req["path"], os.O_RDONLY) as f:
            return {"data": base64.b64encode(f.read()).decode("ascii")}

    def op_write_file(self, req: dict[str, Any]) -> dict[str, Any]:
        path = self.path(req["path"])
        parent = os.path.dirname(path)
        with self.as_user():
            if parent:
                os.makedirs(parent, exist_ok=True)
            with self.open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) as f:
                f.write(base64.b64decode(req["data"]))
        return {}

    def op_snapshot(self, req: dict[str, Any]) -> dict[str, Any]:
        """The next ``size`` bytes (at most) of a tar stream of every place code can write; ``first`` starts it."""
        deadline = self.call_deadline(req)
        if req.get("first"):
            self.stop_copier()
            roots = fork_roots(self.workdir, self.user)
            self.copier = Copier(self, lambda fd: archive(roots, self.workdir, fd), writes=True)
        copier = self.copier
        if copier is None or not copier.writes:
            raise RuntimeError("no snapshot is under way")
        size = int(req.get("size") or READ_CHUNK)
        data = bytearray()
        done = False
        while len(data) < size and not done:
            if not select.select([copier.fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                self.stop_copier()
                raise RuntimeError("the snapshot did not finish in time")
            chunk = read_available(copier.fd)
            done = chunk == b""
            data += chunk or b""
        if done:
            self.copier = None
            problem = copier.finish(deadline)
            if problem is not None:
                raise RuntimeError(f"could not copy the sandbox's files: {problem}")
        return {"data": base64.b64encode(bytes(data)).decode("ascii"), "done": done}

    def op_restore(self, req: dict[str, Any]) -> dict[str, Any]:
        """Feed the next chunk of a snapshot to the unpacker (``first`` starts it, ``last`` ends it)."""
        deadline = self.call_deadline(req)
        if req.get("first"):
            self.stop_copier()
            roots = fork_roots(self.workdir, self.user)
            self.copier = Copier(self, lambda fd: extract(fd, self.workdir, roots), writes=False)
        copier = self.copier
        if copier is None or copier.writes:
            raise RuntimeError("no restore is under way")
        view = memoryview(base64.b64decode(req.get("data", "")))
        stopped = False
        while view and not stopped:
            if not select.select([], [copier.fd], [], max(0.0, deadline - time.monotonic()))[1]:
                self.stop_copier()
                raise RuntimeError("the restore did not finish in time")
            try:
                view = view[os.write(copier.fd, view):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                stopped = True  # the unpacker gave up: its verdict says why
        if req.get("last") or stopped:
            self.copier = None
            problem = copier.finish(deadline)
            if problem is not None or stopped:
                raise RuntimeError(f"could not restore the files: {problem or 'the unpacker stopped early'}")
        return {}

    def stop_copier(self) -> None:
        if self.copier is not None:
            copier, self.copier = self.copier, None
            with contextlib.suppress(ProcessLookupError):
                os.kill(copier.pid, signal.SIGKILL)
            copier.finish(time.monotonic())

    def op_wipe(self, req: dict[str, Any]) -> dict[str, Any]:
        """Back to fresh: a new session removes all the code's user left (the cleaner), then serves."""
        self.stop_copier()
        if self.worker is not None:
            self.worker.close()  # the cleaner kills it with the rest
            self.worker = None
        problem = self.unwipeable or self.clean(self.call_deadline(req))
        lent = problem is None and bool(req.get("lend")) and self.lender is not None
        if lent:
            self.lend()
        return {"clean": problem is None, "reason": problem or "", "lent": lent}

    def open_regular(self, path: str, flags: int) -> IO[bytes]:
        """Open a regular file only: a FIFO would block the supervisor and /dev/zero never ends."""
        fd = os.open(self.path(path), flags | os.O_NONBLOCK, 0o644)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(errno.EINVAL, "not a regular file", path)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb" if flags == os.O_RDONLY else "wb")

    # ------------------------------------------------------------------ sessions and wipes
    def start_worker(self) -> None:
        if self.zygote is None:
            raise OSError(errno.ECHILD, "no parent for Python sessions")
        self.worker = self.zygote.spawn()

    def stop_worker(self, streams: dict[int, Capture]) -> int | None:
        """Kill the session's process group; its exit status (as ``returncode``) when the zygote reports it."""
        worker = self.worker
        assert worker is not None and self.zygote is not None
        kill_group(worker.pid)
        self.pump(streams, time.monotonic() + 0.5)
        worker.close()
        self.worker = None
        status = self.zygote.exit_status(worker.pid)
        return None if status is None else returncode(status)

    def clean(self, deadline: float) -> str | None:
        """Fork the cleaner (the next session) and wait for its verdict: None when clean, else what is left.

        An unclean or silent cleaner is killed; the sandbox is then left with no session.
        """
        if self.zygote is None:
            return "no parent for Python sessions"
        self.zygote.exits.clear()
        try:
            self.worker = self.zygote.spawn(clean_by=deadline)
        except OSError as e:
            return str(e)
        try:
            verdict = self.read_reply(deadline + 1.0, parse_verdict)
        except (OSError, ValueError) as e:
            verdict = {"wiped": f"the cleaner's verdict is unreadable: {e}"}
        if verdict is None:
            problem: str | None = "the wipe did not finish in time"
        else:
            problem = verdict.get("wiped") if "wiped" in verdict else "the cleaner sent no verdict"
        if problem is not None:
            self.stop_worker({})
        return problem

    def send_code(self, frame: bytes, streams: dict[int, Capture], deadline: float) -> None:
        """Write the request, reading output meanwhile so a chatty worker cannot deadlock us."""
        assert self.worker is not None
        view = memoryview(frame)
        while view:
            if time.monotonic() >= deadline:
                raise OSError("timed out sending code")
            try:
                view = view[os.write(self.worker.code_in, view):]
            except BlockingIOError:
                self.pump(dict(streams), min(deadline, time.monotonic() + 0.01))

    def read_reply(self, deadline: float, parse: Callable[[bytes], dict[str, Any] | None] = parse_reply
                   ) -> dict[str, Any] | None:
        """The worker's reply after a run (``call``, ``error``, ``broken``), or None if the worker died.

        Raises:
            ValueError: What came is not one reply frame (code wrote to the reply pipe).
        """
        assert self.worker is not None
        fd = self.worker.replies
        data = b""
        while True:
            chunk = read_available(fd)
            if chunk == b"":
                return None
            if chunk:
                data += chunk
                if len(data) < 10:
                    continue
                size = int(data[:10])  # int() refuses what is not digits
                if size > reply_limit(self.cap):
                    raise ValueError("a reply longer than any the session writes")
                if len(data) >= 10 + size:
                    reply = parse(data[10:])  # a frame with more behind it is none
                    if reply is None:
                        raise ValueError("not a reply the session writes")
                    return reply
                continue
            if time.monotonic() >= deadline:
                return None
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ plumbing
    def call_deadline(self, req: dict[str, Any]) -> float:
        timeout = float(req.get("timeout") or self.default_timeout)
        return min(time.monotonic() + timeout, self.deadline)

    def path(self, path: str) -> str:
        return os.path.join(self.workdir, path)

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = getattr(self, "op_" + str(req.get("op")), None)
        if op is None:
            reply = {"ok": False, "error": "unknown op {!r}".format(req.get("op"))}
        else:
            try:
                reply = op(req)
                reply["ok"] = True
            except OSError as e:
                reply = {"ok": False, "error": e.strerror or str(e), "errno": e.errno, "filename": e.filename}
            except Exception as e:
                reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        reply["id"] = req.get("id")
        return reply

    def shutdown(self) -> None:
        self.stop_copier()
        if self.worker is not None:
            kill_group(self.worker.pid)
