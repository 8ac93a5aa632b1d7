"""The in-sandbox agent: one stdlib-only file that answers newline-delimited JSON requests on stdin.

The host starts ``python3 -u -c <bootstrap> <config json>`` and writes this source to its stdin (see
``agentgym.sandboxes.sandbox.BOOTSTRAP``), so it runs in any image that
has a ``python3`` (3.9 or newer: CI holds it to the sandbox contract on Debian bullseye's 3.9, the
``python-oldest`` recipe) and nothing needs baking into the image. Requests arrive on stdin, or
on a unix socket the host listens on (``"socket"`` in the config), and replies go back the same way.
Each request is one line,
``{"id": 1, "op": "exec", ...}``, and gets exactly one response line with the same ``id``:
``{"id": 1, "ok": true, ...}`` or ``{"id": 1, "ok": false, "error": "...", "errno": 2}``.

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

Five kinds of process, so that no user code ever runs where it could reach anything but its own session:

- The **agent** reads requests. When the host starts it as root (Docker; bubblewrap as root; the
  local backend's own namespaces as root) it keeps only the rights to switch user and to signal,
  and every process that runs code is another uid (``"user"`` in the config), which cannot signal,
  trace or read the agent.
- The **zygote** is forked from the agent before the first request, so its memory holds nothing a
  request brought. It forks one Python session (a worker) whenever the agent asks, which costs a
  fork instead of starting an interpreter, and reaps its workers, telling the agent how each ended.
- A **worker** becomes the code's uid right after the fork (limits, new session, closed file
  descriptors, reseeded ``random``) and runs code in a fresh ``__main__``.
- A **copier** is forked by the agent for a fork's snapshot or restore and becomes the code's uid:
  it writes the entries of the places code can write to a pipe, or makes them from a pipe.
- A wipe's **cleaner** is the next worker, before it takes any code: forked by the zygote like any
  session and already the code's uid (so it removes exactly what that uid may remove), it kills every
  other process of the uid with one ``kill(-1)`` and waits for each to end on its pidfd, removes
  SysV IPC objects, and deletes everything that was
  not there at start from every writable mount (found in ``/proc/self/mountinfo`` when the agent
  started, not from a fixed list); it sends its verdict as its first reply, then serves as the
  fresh session. Anything it cannot remove makes the wipe unclean (and the agent kills it).
  One fork per wipe, from the small zygote, rather than a cleaner forked from the agent and then a
  session.

Code cannot use kernel keyrings: every process that runs code gets a seccomp filter under which
``add_key``, ``request_key`` and ``keyctl`` fail with EPERM (as Docker's default profile does), so
code can leave nothing there for a wipe to find (a uid's persistent keyring outlives its processes).

The agent itself never runs user code: commands and the Python session are child processes whose
output it reads through pipes, keeping at most ``output_bytes`` of each stream and draining (and
dropping) the rest, so that nothing user code does (loop forever, print gigabytes, fork, exhaust
memory, close its file descriptors, exit) can stop it from answering. A session lent to the host
(``session``) is read by the host instead, with the same bounds (``agentgym.sandboxes.lent``); the
agent then only starts and kills sessions. Children get the rlimits in
the config and volunteer to be the out-of-memory killer's first choice. The agent exits after
``wall_seconds`` or when the request stream closes, taking every child with it.

With ``"jail"`` in the config (the local backend without bubblewrap) the agent first gives itself
private mount, IPC, UTS, pid and (unless the sandbox has network) network namespaces: every host
mount read-only, fresh size-limited tmpfs at ``/tmp``, ``/dev/shm`` and the working directory, a
``/proc`` of its own, and an init that reaps orphans.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal.py's C half, see fork_session
import array
import base64
import builtins
import contextlib
import ctypes
import errno
import fcntl
import gc
import json
import os
import re
import resource
import select
import signal
import socket
import stat
import struct
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: see Agent.spawn
    import subprocess

EXIT_TIMED_OUT = 124  # what coreutils' timeout(1) returns
DRAIN_AFTER_EXIT = 0.2  # how long a finished command's background children may keep its pipes open
READ_CHUNK = 1 << 16
QUIET_WAIT = 0.002  # how long a python call waits for the worker's answer before reading output as it comes
ZYGOTE_WAIT = 5.0  # how long the agent waits for the zygote to fork a session
EXIT_WAIT = 1.0  # how long a killed session's exit status may take to arrive
BASELINE_LIMIT = 20000  # entries in writable mounts past which a sandbox is not worth wiping (a host disk)

# Filesystems that hold no files code could leave behind (or that only root can write).
PSEUDO_FS = {
    "proc", "sysfs", "devpts", "cgroup", "cgroup2", "securityfs", "debugfs", "tracefs", "bpf", "fusectl",
    "configfs", "pstore", "binfmt_misc", "autofs", "nsfs", "efivarfs", "selinuxfs", "rpc_pipefs",
}
# Linux constants Python does not export.
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x20000, 0x4000000, 0x8000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 18, 1 << 21
MOUNT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
               "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
PR_SET_NO_NEW_PRIVS = 38
IPC_RMID = 0
KEYCTL_JOIN_SESSION_KEYRING = 1
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
BPF_LD_W_ABS, BPF_ALU_AND_K, BPF_JMP_JEQ_K, BPF_RET_K = 0x20, 0x54, 0x15, 0x06
SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
# The keyring system calls (add_key, request_key, keyctl) of every ABI a machine runs: (audit arch,
# mask applied to the call's number, the three numbers). x32 calls are x86-64's numbers with bit 30 set.
KEYRING_CALLS = {
    "x86_64": ((0xC000003E, 0xBFFFFFFF, (248, 249, 250)), (0x40000003, 0xFFFFFFFF, (286, 287, 288))),
    "aarch64": ((0xC00000B7, 0xFFFFFFFF, (217, 218, 219)), (0x40000028, 0xFFFFFFFF, (309, 310, 311))),
}
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "i686": 288, "i386": 288, "armv7l": 311,
              "ppc64le": 271, "ppc64": 271, "s390x": 280}
KEYCTL_NR = SYS_KEYCTL.get(os.uname().machine)  # None where its number is unknown
ZYGOTE_RECORD = struct.Struct("=cii")  # kind (F: forked, E: fork failed, X: exited), pid, errno or wait status
ZYGOTE_REQUEST = struct.Struct("=cd")  # kind (F: a session, C: a session that cleans first), the wipe's deadline


class Capture:
    """One output stream: the first ``cap`` bytes are kept, the rest counted as truncated."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def set_nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def read_available(fd: int, size: int = READ_CHUNK) -> bytes | None:
    """Whatever ``fd`` holds now (up to ``size`` bytes): bytes, b"" at end of file or on an error, None when
    it would block. The host's relays read their pipes with it too."""
    try:
        return os.read(fd, size)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def kill_group(pgid: int) -> None:
    """SIGKILL a process group. One signal is enough: the kernel lets no fork in the group escape it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def exit_status(returncode: int) -> int:
    """A shell-style exit code: 128 + signal for a process killed by a signal."""
    return 128 - returncode if returncode < 0 else returncode


def returncode(status: int) -> int:
    """A wait status as ``subprocess`` reports it: the exit code, or minus the signal."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def close_all_but(keep: set[int]) -> None:
    """Close every file descriptor not in ``keep``."""
    top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    top = top if 0 < top < 1 << 20 else 1 << 16
    low = 0
    for fd in [*sorted(keep), top]:
        if fd > low:  # closerange(n, n) would close everything from n up
            os.closerange(low, fd)
        low = fd + 1


# ---------------------------------------------------------------------- Linux calls Python lacks
_libc: Any = None


def libc() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def checked(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def keyctl(*args: int) -> int:
    """The keyctl(2) system call (glibc has no wrapper); raises OSError (ENOSYS where its number is unknown)."""
    if KEYCTL_NR is None:
        raise OSError(errno.ENOSYS, "keyctl: unknown system call number on " + os.uname().machine)
    return checked(libc().syscall(KEYCTL_NR, *(ctypes.c_long(a) for a in args)), "keyctl")


def new_session_keyring() -> bool:
    """Join a new, empty session keyring; False where keyctl is refused (Docker's default seccomp
    profile), so that code cannot use keyrings at all.

    The agent joins one at start, since the one inherited is the host's: it holds the keys of
    whoever started agentgym, and nothing the agent starts should hold it. Code is then kept from
    keyrings altogether (:func:`keyring_filter`); only where that filter cannot be made does each
    process that runs code join a root-owned keyring of its own as well.
    """
    try:
        keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0)
    except OSError:
        return False
    return True


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def keyring_filter(machine: str) -> list[tuple[int, int, int, int]] | None:
    """A seccomp program (BPF instructions) under which the keyring calls fail with EPERM and all
    else is allowed; None on a machine whose call numbers are not in :data:`KEYRING_CALLS`.

    Per ABI, one block: load the arch; if it is not this ABI's, jump to the next block; load the
    call's number, mask it, and jump to the final EPERM if it is one of the three; else allow.
    """
    abis = KEYRING_CALLS.get(machine)
    if abis is None:
        return None
    block = 8  # instructions per ABI
    deny = block * len(abis) + 1  # after every block and one "allow" for any other ABI
    program: list[tuple[int, int, int, int]] = []
    for arch, mask, numbers in abis:
        program += [(BPF_LD_W_ABS, 0, 0, 4), (BPF_JMP_JEQ_K, 0, block - 2, arch),
                    (BPF_LD_W_ABS, 0, 0, 0), (BPF_ALU_AND_K, 0, 0, mask)]
        for number in numbers:
            program.append((BPF_JMP_JEQ_K, deny - len(program) - 1, 0, number))
        program.append((BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return [*program, (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.EPERM)]


def seccomp_program(program: list[tuple[int, int, int, int]]) -> SockFprog:
    """:func:`keyring_filter`'s program as the kernel takes it, made once in the agent: a session forked
    from the zygote then only installs it (building it there copied some 70 pages of shared memory)."""
    instructions = (SockFilter * len(program))(*(SockFilter(*insn) for insn in program))
    return SockFprog(len(program), instructions)  # which keeps ``instructions`` alive


def deny_keyrings(fprog: SockFprog) -> None:
    """Install :func:`seccomp_program` on this process and all it starts (needs no_new_privs)."""
    checked(libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


# ---------------------------------------------------------------------- the jail without bubblewrap
def mountinfo() -> list[tuple[str, list[str], str, list[str]]]:
    """(mount point, mount options, filesystem type, superblock options) of each mount we can see."""
    mounts = []
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f.read().splitlines():
            fields = line.split()
            tail = [t.decode("ascii", "replace") for t in fields[fields.index(b"-") + 1 :]]
            point = os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), fields[4]))
            options = fields[5].decode("ascii", "replace").split(",")
            mounts.append((point, options, tail[0], tail[2].split(",") if len(tail) > 2 else []))
    return mounts


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    args = [None if s is None else s.encode() for s in (source, target, fstype)]
    checked(libc().mount(*args, ctypes.c_ulong(flags), data and data.encode()), "mount " + target)


def jail(spec: dict[str, Any]) -> None:
    """Private namespaces for a local sandbox without bubblewrap (as root, or in a user namespace).

    Mount, IPC, UTS, pid and (without ``network``) network namespaces. Every mount becomes read-only,
    so the only places code can write are the fresh tmpfs mounted at ``/tmp``, ``/dev/shm`` and the
    working directory; the host's ``/tmp`` is out of sight, and a new ``/proc`` shows only the
    sandbox's processes. Returns in the agent, which is pid 2 under an init that reaps orphans.

    Raises:
        OSError: A namespace or mount could not be made (the host then runs without them).
    """
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | (0 if spec.get("network") else CLONE_NEWNET)
    checked(libc().unshare(flags | (CLONE_NEWUSER if uid != 0 else 0)), "unshare")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here reaches the host
    for point, options, fstype, _ in mountinfo():
        if "rw" not in options or fstype in PSEUDO_FS or point == "/proc" or point.startswith("/proc/"):
            continue
        kept = sum(MOUNT_FLAGS.get(o, 0) for o in options)  # a user namespace may not drop these
        try:
            mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept)
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.ENOENT, errno.ESTALE):  # hidden or unreachable mounts
                raise
    tmpfs = f"size={int(spec['disk_mb'])}m,mode=1777"
    for point in ("/tmp", spec["workdir"], "/dev/shm"):
        if os.path.isdir(point):
            mount("tmpfs", point, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs)
    checked(libc().sethostname(b"sandbox", 7), "sethostname")
    become_init()
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def become_init() -> None:
    """Fork the new pid namespace's init, which forks the agent and reaps every orphan until it ends.

    The first process stays to report init's exit status; init's end kills all in the namespace.
    Returns only in the agent (pid 2).
    """
    init = os.fork()
    if init:
        quiet_stdio()
        os._exit(returncode(os.waitpid(init, 0)[1]) & 0xFF)
    agent = os.fork()
    if agent == 0:
        return
    quiet_stdio()
    while True:
        pid, status = os.wait()
        if pid == agent:
            os._exit(returncode(status) & 0xFF)


def quiet_stdio(keep: int = 2) -> None:
    """Let go of the host's request stream (only the agent may hold it, so that its end is seen at once)
    and of every other descriptor but stderr and ``keep``."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    close_all_but({0, 1, 2, keep})


# ---------------------------------------------------------------------- the Python session (a worker)
def stdio() -> list[tuple[int, int]] | None:
    """Which files fds 1 and 2 are, or None when they are closed."""
    try:
        if sys.stdout.closed or sys.stderr.closed:
            return None
        return [(st.st_dev, st.st_ino) for st in map(os.fstat, (1, 2))]
    except (OSError, AttributeError):
        return None


def reply_frame(reply: dict[str, Any]) -> bytes:
    """A session's reply as it travels: its length in ten digits, then its JSON."""
    data = json.dumps(reply).encode("utf-8")
    return b"%010d" % len(data) + data


def reply_limit(cap: int) -> int:
    """The longest reply frame a session may send: its traceback, as JSON, is cut to about ``cap`` bytes
    (:func:`cut_traceback`), and the frame's other fields are a few dozen."""
    return cap + REPLY_SLACK


REPLY_SLACK = 4096
_REPLY_HEAD = re.compile(rb'\{"call": (\d{1,10}), "error": ')
_REPLY_TAILS = ((b', "broken": false}', False), (b', "broken": true}', True))


def cut_traceback(error: str, cap: int) -> str:
    """``error``, cut so that as JSON (which writes a character outside ASCII as up to 12 bytes) it
    takes at most ``cap`` bytes and a note."""
    if len(error) <= cap and len(json.dumps(error)) <= cap:
        return error
    error = error[:cap]
    encoded = len(json.dumps(error))
    while encoded > cap:
        error = error[: max(0, len(error) * cap // encoded - 1)]
        encoded = len(json.dumps(error))
    return error + f"\n[the traceback is cut at {cap} characters]\n"


def parse_reply(body: bytes) -> dict[str, Any] | None:
    """A session's reply (the frame after its length), or None when it is not one a session writes.

    It is read by its exact shape, ``{"call": N, "error": null | "...", "broken": false | true}``, and
    only the error string is parsed as JSON: what a session's code forges costs one linear scan of
    at most :func:`reply_limit` bytes, and nothing in it can nest.
    """
    head = _REPLY_HEAD.match(body)
    if head is None:
        return None
    tail, broken = next(((t, b) for t, b in _REPLY_TAILS if body.endswith(t)), (b"", None))
    if broken is None:
        return None
    middle = body[head.end() : len(body) - len(tail)]
    if middle == b"null":
        error = None
    elif middle[:1] == b'"':
        try:
            error = json.loads(middle.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError included; and a string with more behind it
            return None
    else:
        return None
    return {"call": int(head.group(1)), "error": error, "broken": broken}


def parse_verdict(body: bytes) -> dict[str, Any] | None:
    """The cleaner's verdict, ``{"wiped": null | "why not"}`` (written before any code of the session's runs)."""
    try:
        verdict = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return verdict if isinstance(verdict, dict) and set(verdict) == {"wiped"} else None


def code_frame(call: int, code: bytes) -> bytes:
    """A python call as the session reads it: the frame's length in ten digits, the call's number in
    ten, then the code. The session answers with the number (:func:`plain_reply`), so that a reply the
    code forged to end its call early is found out when the real one comes: its number is not the
    next call's."""
    return b"%010d%010d" % (10 + len(code), call) + code


def plain_reply(call: int) -> bytes:
    """The reply to call ``call`` when it raised nothing and left stdout and stderr working: most
    replies, so written (and recognised by a host reading a lent session) from a template, with no
    JSON to write or parse."""
    body = b'{"call": %d, "error": null, "broken": false}' % call
    return b"%010d" % len(body) + body


def send_reply(replies: int, reply: dict[str, Any]) -> None:
    os.write(replies, reply_frame(reply))


def run_session(code_in: int, replies: int, cap: int) -> None:
    """The worker's loop: run each length-prefixed code frame from ``code_in`` in one namespace.

    After each run it flushes stdout/stderr (pipes the agent or the host reads) and answers on
    ``replies`` with the traceback, if any (at most ``cap`` characters of it: the reply is read whole),
    and whether its stdout/stderr still work (if not, it exits and a new session is started). Never returns.
    """
    main = types.ModuleType("__main__")  # the session's own, so pickle and ``import __main__`` find its names
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    sys.argv = [""]
    namespace = main.__dict__
    pipes = stdio()
    pending = b""
    # Touch now (copying the pages shared with the zygote) what the first run touches, so that the
    # first request after a wipe costs what any other does.
    exec(compile("pass", "<python>", "exec"), {})

    def read_some() -> bytes:
        chunk = os.read(code_in, READ_CHUNK)
        if not chunk:
            os._exit(0)
        return chunk

    while True:
        while len(pending) < 20:  # one read takes a whole small request (length, number, code) in the common case
            pending += read_some()
        size = 10 + int(pending[:10])
        parts, have = [pending], len(pending)
        while have < size:
            parts.append(read_some())
            have += len(parts[-1])
        data = b"".join(parts)
        pending = data[size:]
        call = int(data[10:20])
        error = None
        try:
            exec(compile(data[20:size].decode("utf-8"), "<python>", "exec"), namespace)
        except BaseException as e:
            tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
            error = cut_traceback("".join(traceback.format_exception(type(e), e, tb)), cap)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        intact = stdio() == pipes  # code that closed or replaced fds 1/2 leaves a session that cannot talk
        if error is None and intact:
            os.write(replies, plain_reply(call))
        else:
            send_reply(replies, {"call": call, "error": error, "broken": not intact})
        if not intact:
            os._exit(0)


class Session:
    """The agent's handle on one Python session: its pid and the agent's ends of its four pipes."""

    def __init__(self, pid: int, fds: list[int]) -> None:
        self.pid = pid
        self.code_in, self.replies, self.stdout, self.stderr = fds
        for fd in fds:
            set_nonblocking(fd)

    def close(self) -> None:
        for fd in (self.code_in, self.replies, self.stdout, self.stderr):
            os.close(fd)


# ---------------------------------------------------------------------- the zygote
class Zygote:
    """The agent's end of the zygote: asks it for sessions and learns how they ended."""

    def __init__(self, agent: Agent) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                zygote_main(agent, theirs)
            except BaseException:
                traceback.print_exc()  # to the agent's stderr: the host keeps it to explain a failure
            finally:
                os._exit(1)
        theirs.close()
        self.pid = pid
        self.sock = ours
        self.exits: dict[int, int] = {}  # pid -> wait status, for sessions that ended

    def spawn(self, clean_by: float | None = None) -> Session:
        """A new Python session, forked and ready to take code; with ``clean_by`` (a deadline), one that
        wipes the sandbox first and sends its verdict as its first reply (see :meth:`Agent.op_wipe`).

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


def zygote_main(agent: Agent, sock: socket.socket) -> None:
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
            fork_session(agent, sock, deadline if kind == b"C" else None)


def fork_session(agent: Agent, sock: socket.socket, clean_by: float | None) -> None:
    """Fork one session and send its pid and the agent's ends of its pipes over ``sock``; with
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
            agent.child_setup()
            os.chdir(agent.workdir)
            if clean_by is not None:
                assert agent.user is not None  # the agent wipes only when code runs as a user of its own
                try:
                    problem = clean(agent.user[0], agent.writable, agent.baseline, clean_by)
                except BaseException as e:
                    problem = f"the wipe failed: {type(e).__name__}: {e}"
                send_reply(reply_w, {"wiped": problem})
                if problem is not None:
                    return
            if "random" in sys.modules:  # a forked session would otherwise repeat its parent's sequence
                sys.modules["random"].seed()
            run_session(code_r, reply_w, agent.cap)
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


# ---------------------------------------------------------------------- the cleaner
def writable_mounts() -> list[str]:
    """Mount points that are writable and hold files: where code could leave something."""
    found = set()
    for point, options, fstype, superblock in mountinfo():
        if "rw" in options and "ro" not in superblock and fstype not in PSEUDO_FS:
            found.add(point)
    return sorted(found)


def walk(root: str, seen: set[str], limit: int) -> bool:
    """Add every path under ``root`` (itself included) to ``seen``; False past ``limit`` entries."""
    stack = [root]
    while stack:
        path = stack.pop()
        seen.add(path)
        if len(seen) > limit:
            return False
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            with os.scandir(path) as entries:
                stack += [e.path for e in entries]
        except OSError:
            continue  # unreadable here: the wipe checks whether code could have written in it
    return True


def read_proc(path: str) -> bytes:
    """A /proc file's bytes (raw reads: no codec to look up in a freshly forked cleaner)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks: list[bytes] = []
        while True:
            chunk = os.read(fd, READ_CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def field(status: bytes, name: bytes) -> bytes:
    """The first word of a ``Name:`` line of /proc/PID/status."""
    start = status.index(b"\n" + name + b":") + len(name) + 2
    return status[start : status.index(b"\n", start)].split()[0]


def processes_of(uid: int) -> tuple[list[int], list[int]]:
    """Processes whose real uid is ``uid``, other than this one: (live ones, zombies)."""
    me = os.getpid()
    live: list[int] = []
    zombies: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            status = read_proc(f"/proc/{entry}/status")
        except OSError:
            continue
        if int(field(status, b"Uid")) == uid:
            (zombies if field(status, b"State") in (b"Z", b"X") else live).append(int(entry))
    return live, zombies


def wait_for_exit(pids: list[int], deadline: float) -> None:
    """Until one of ``pids`` ends (each one's pidfd), or ``deadline``; no sleeping loop."""
    poller, fds = select.poll(), []
    try:
        for pid in pids:
            try:
                fds.append(os.pidfd_open(pid))  # type: ignore[attr-defined]
            except ProcessLookupError:
                return  # already gone
            except (AttributeError, OSError):  # Python < 3.9 or Linux < 5.3
                time.sleep(0.001)
                return
            poller.register(fds[-1], select.POLLIN)
        poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
    finally:
        for fd in fds:
            os.close(fd)


def kill_everything(uid: int, deadline: float) -> str | None:
    """Kill every process of ``uid`` (this one is ``uid`` already), wait until each is gone and reaped."""
    while True:
        with contextlib.suppress(ProcessLookupError):
            os.kill(-1, signal.SIGKILL)  # every process we may signal but ourselves, forks in flight included
        live, zombies = processes_of(uid)
        if not live and not zombies:
            return None
        if time.monotonic() >= deadline:
            return f"processes survived: {(live + zombies)[:10]}"
        if live:
            wait_for_exit(live, deadline)
        else:  # dead, and their parents (init, the zygote: both root) reap them within microseconds
            time.sleep(0.0002)


def ipc_ids(table: str) -> list[int]:
    try:
        lines = read_proc("/proc/sysvipc/" + table).splitlines()[1:]
    except FileNotFoundError:
        return []  # no SysV IPC in this kernel
    return [int(line.split()[1]) for line in lines if line.strip()]


def remove_ipc() -> str | None:
    """Remove every SysV shared memory segment, message queue and semaphore set in the IPC namespace."""
    remove = {"shm": lambda i: libc().shmctl(i, IPC_RMID, None), "msg": lambda i: libc().msgctl(i, IPC_RMID, None),
              "sem": lambda i: libc().semctl(i, 0, IPC_RMID)}
    left = []
    for table, rm in remove.items():
        for ident in ipc_ids(table):
            rm(ident)
        left += [f"{table} {i}" for i in ipc_ids(table)]
    return f"IPC objects left: {left[:10]}" if left else None


def writable_by(st: os.stat_result, uid: int, gid: int) -> bool:
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IWUSR)
    if st.st_gid == gid:
        return bool(st.st_mode & stat.S_IWGRP)
    return bool(st.st_mode & stat.S_IWOTH)


def remove_tree(path: str, st: os.stat_result, problems: list[str]) -> None:
    """Delete ``path`` and all under it, making our own directories searchable first.

    Walks down by changing directory, a level at a time, and names entries relative to where it is:
    code can build a tree deeper than a path can name (PATH_MAX) or than Python may recurse, by
    changing directory as it goes, and such a tree must not make the wipe fail. It holds no file
    descriptor per level either; the working directory is put back after. No process of the code's
    uid is left meanwhile that could swap a directory for a link.
    """
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(path)
        except OSError as e:
            problems.append(f"{path}: {e.strerror}")
        return
    parent, name = os.path.split(path)
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    below: list[str] = []  # the directories entered, from ``path`` down
    try:
        os.chdir(parent)
        enter(name)
        below.append(name)
        while below:
            child = None  # the first subdirectory; files before it are removed on the way
            with os.scandir(".") as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = entry.name
                        break
                    os.unlink(entry.name)
            if child is not None:
                enter(child)
                below.append(child)
            else:  # empty now
                os.chdir("..")
                os.rmdir(below.pop())
    except OSError as e:
        problems.append(f"{path}: {e.strerror} ({len(below)} levels down)")
    finally:
        os.fchdir(here)
        os.close(here)


def enter(name: str) -> None:
    """Change into directory ``name``, first giving ourselves (its owner) the right to list, enter and empty it."""
    if os.lstat(name).st_mode & 0o700 != 0o700:
        os.chmod(name, 0o700)
    os.chdir(name)


def scrub(path: str, baseline: set[str], problems: list[str]) -> None:
    """Remove from directory ``path`` every entry that was not there at start, with all under it."""
    try:
        with os.scandir(path) as entries:
            children = [(e.path, e.stat(follow_symlinks=False)) for e in entries]
    except OSError as e:
        problems.append(f"{path}: cannot be checked ({e.strerror})")
        return
    for child, st in children:
        if child not in baseline:
            remove_tree(child, st, problems)


def clean(uid: int, writable: list[str], baseline: set[str], deadline: float) -> str | None:
    """Run in the cleaner, as the code's uid ``uid``: remove all it left; None when all is gone, else why not.

    ``writable`` are the directories the code's uid could write to at start; it cannot have made
    any other writable (it owns none of them, and none of their parents), so whatever it left is in them.
    """
    if os.getuid() != uid or os.geteuid() != uid:
        return "the cleaner is not the code's user"
    problems = [p for p in (kill_everything(uid, deadline), remove_ipc()) if p]
    found: list[str] = []
    for path in writable:
        scrub(path, baseline, found)
    problems += found[:10]
    return "; ".join(problems) or None


# ---------------------------------------------------------------------- the copier (fork)
def fork_roots(workdir: str, user: list[int] | None) -> list[str]:
    """Where code can write that no container image holds, so a fork must copy it through the agent.

    Every writable tmpfs the code's user may write in (``/tmp``, ``/dev/shm``, the working directory
    and whatever else the backend mounted), found in ``/proc/self/mountinfo``; or the working
    directory alone where it is no mount of its own (a local sandbox with no jail, whose ``/tmp`` is
    the host's). Changes to a writable container root are the engine's to copy (``docker commit``).
    """
    if not os.path.ismount(workdir):
        return [workdir]
    roots = set()
    for point, options, fstype, superblock in mountinfo():
        if fstype != "tmpfs" or "rw" not in options or "ro" in superblock:
            continue
        try:
            st = os.stat(point)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and (writable_by(st, *user) if user else os.access(point, os.W_OK)):
            roots.add(point)
    return sorted(roots)


def archive_name(root: str, workdir: str) -> str:
    """A root's name in the archive: the working directory by role (its path differs between local
    sandboxes), any other root by its path."""
    return "workdir" if root == workdir else "root" + root


def grant(path: str, st: os.stat_result, bits: int, granted: list[tuple[str, int]]) -> None:
    """Give our own entry the mode ``bits`` until the copy ends (code may have taken them from itself)."""
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid == os.geteuid() and mode & bits != bits:
        os.chmod(path, mode | bits)
        granted.append((path, mode))


def archive(roots: list[str], workdir: str, out: int) -> None:
    """Run in the copier as the code's uid: write every entry under ``roots`` to ``out`` as a stream.

    Each entry is a 4-byte length, a JSON header (name, kind, mode, mtime in ns; a file's size, a
    link's target) and, for a file, its bytes. Regular files, directories, symlinks, hard links and
    FIFOs are kept; sockets and devices (which code cannot make) and other mounts are left out.
    Entries that code made unreadable to itself are opened for the moment and given their modes back.
    A file that shrinks while it is read is padded with zeros to the size in its header.
    """
    granted: list[tuple[str, int]] = []
    seen: dict[tuple[int, int], str] = {}  # (device, inode) of files with several names -> the first name
    try:
        for root in roots:
            device = os.lstat(root).st_dev
            stack = [(root, archive_name(root, workdir))]
            while stack:
                path, name = stack.pop()
                for entry in sorted(os.listdir(path)):
                    child, child_name = os.path.join(path, entry), name + "/" + entry
                    st = os.lstat(child)
                    kind = COPIED_KINDS.get(stat.S_IFMT(st.st_mode))
                    if st.st_dev != device or kind is None:
                        continue
                    header: dict[str, Any] = {"name": child_name, "kind": kind, "mode": stat.S_IMODE(st.st_mode),
                                              "mtime": st.st_mtime_ns}
                    if kind == "file" and st.st_nlink > 1:
                        first = seen.setdefault((st.st_dev, st.st_ino), child_name)
                        if first != child_name:
                            header.update(kind="link", target=first)
                    if header["kind"] == "file":
                        grant(child, st, stat.S_IRUSR, granted)
                        send_file(out, child, header)
                        continue
                    if kind == "symlink":
                        header["target"] = os.readlink(child)
                    send(out, header, b"")
                    if kind == "dir":
                        grant(child, st, stat.S_IRUSR | stat.S_IXUSR, granted)
                        stack.append((child, child_name))
    finally:
        for path, mode in reversed(granted):
            os.chmod(path, mode)
        os.close(out)


COPIED_KINDS = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink", stat.S_IFIFO: "fifo"}
COPY_CHUNK = 1 << 20


def send(out: int, header: dict[str, Any], data: bytes) -> None:
    encoded = json.dumps(header).encode("ascii")  # ASCII: undecodable name bytes are escaped surrogates
    write_all(out, struct.pack(">I", len(encoded)) + encoded + data)


def send_file(out: int, path: str, header: dict[str, Any]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        size = header["size"] = os.fstat(fd).st_size
        data = os.read(fd, min(size, COPY_CHUNK))
        send(out, header, data)
        sent = len(data)
        while sent < size:
            data = os.read(fd, min(size - sent, COPY_CHUNK)) or bytes(min(size - sent, COPY_CHUNK))
            write_all(out, data)
            sent += len(data)
    finally:
        os.close(fd)


def destination(name: str, workdir: str, roots: list[str]) -> str:
    """Where archive member ``name`` goes here: under the working directory or under one of ``roots``.

    Raises:
        OSError: The name leaves its root, or this sandbox has no writable place for it.
    """
    head, _, rest = name.partition("/")
    parts = rest.split("/")
    if not rest or any(p in ("", ".", "..") for p in parts):
        raise OSError(errno.EINVAL, "bad name in the archive", name)
    if head == "workdir":
        return os.path.join(workdir, rest)
    target = "/" + rest
    if head == "root" and any(target.startswith(root.rstrip("/") + "/") for root in roots):
        return target
    raise OSError(errno.EXDEV, "this sandbox has no writable place for it", target)


def extract(source: int, workdir: str, roots: list[str]) -> None:
    """Run in the copier as the code's uid: make here every entry of a stream from :func:`archive`.

    Files become the code's own here, as if its code had written them; directories get their modes
    and times last, so that a read-only one can still be filled.

    Raises:
        OSError: An entry could not be made, or has no writable place here.
        EOFError: The stream ends inside an entry.
    """
    directories = []
    with os.fdopen(source, "rb") as stream:
        while True:
            length = stream.read(4)
            if not length:
                break
            header = json.loads(read_exactly(stream, struct.unpack(">I", read_exactly(stream, 4, length))[0]))
            target = destination(header["name"], workdir, roots)
            kind, mode, times = header["kind"], header["mode"], (header["mtime"], header["mtime"])
            if kind == "dir":
                with contextlib.suppress(FileExistsError):
                    os.mkdir(target, 0o700)
                directories.append((target, mode, times))
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)  # only in a sandbox that already held something there
            if kind == "file":
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    left = header["size"]
                    while left:
                        chunk = read_exactly(stream, min(left, COPY_CHUNK))
                        write_all(fd, chunk)
                        left -= len(chunk)
                    os.fchmod(fd, mode)
                    os.utime(fd, ns=times)
                finally:
                    os.close(fd)
            elif kind == "link":
                os.link(destination(header["target"], workdir, roots), target)
            elif kind == "symlink":
                os.symlink(header["target"], target)
                os.utime(target, ns=times, follow_symlinks=False)
            elif kind == "fifo":
                os.mkfifo(target, 0o600)
                os.chmod(target, mode)
                os.utime(target, ns=times)
            else:
                raise OSError(errno.EINVAL, "unknown kind of entry " + repr(kind), target)
    for target, mode, times in reversed(directories):
        os.chmod(target, mode)
        os.utime(target, ns=times)


def read_exactly(stream: IO[bytes], size: int, start: bytes = b"") -> bytes:
    """``size`` bytes of ``stream`` (``start`` counts as its first ones)."""
    data = start + stream.read(size - len(start))
    if len(data) < size:
        raise EOFError("the stream of files ends inside an entry")
    return data


class Copier:
    """A child that runs as the code's uid at one end of a pipe: it writes a stream of files, or reads one.

    The agent holds the other end (``fd``, non-blocking); :meth:`finish` collects the child's verdict.
    """

    def __init__(self, agent: Agent, job: Any, writes: bool) -> None:
        data_r, data_w = os.pipe()
        verdict_r, verdict_w = os.pipe()
        theirs, ours = (data_w, data_r) if writes else (data_r, data_w)
        try:
            pid = os.fork()
        except OSError:  # out of processes
            for fd in (data_r, data_w, verdict_r, verdict_w):
                os.close(fd)
            raise
        if pid == 0:
            problem = ""
            try:
                close_all_but({2, theirs, verdict_w})
                agent.child_setup()
                job(theirs)
            except BaseException as e:
                problem = str(e) or type(e).__name__
            try:
                os.write(verdict_w, problem.encode("utf-8", "replace")[:4000] or b"-")
            finally:
                os._exit(0)
        os.close(theirs)
        os.close(verdict_w)
        set_nonblocking(ours)
        self.pid, self.fd, self.verdict, self.writes = pid, ours, verdict_r, writes

    def finish(self, deadline: float) -> str | None:
        """Close our end and wait for the child: None when it succeeded, else what went wrong."""
        os.close(self.fd)
        verdict = b""
        try:
            while select.select([self.verdict], [], [], max(0.0, deadline - time.monotonic()))[0]:
                chunk = os.read(self.verdict, 4096)
                if not chunk:
                    break
                verdict += chunk
        finally:
            os.close(self.verdict)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)  # overdue (or done: then a no-op on its zombie)
            os.waitpid(self.pid, 0)
        if not verdict:
            return "it did not finish in time"
        return None if verdict == b"-" else verdict.decode("utf-8", "replace")


class Agent:
    """Handles requests one at a time; owns the Python session."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.cap = int(config.get("output_bytes", 65536))
        self.default_timeout = float(config.get("exec_timeout", 30.0))
        self.deadline = time.monotonic() + float(config.get("wall_seconds", 1800.0))
        self.rlimits = config.get("rlimits", {})
        self.workdir = config.get("workdir", "/work")
        # [uid, gid] that user code runs as, when the agent itself runs as root (with only the
        # capabilities to switch user and to signal): then user code cannot kill the agent.
        self.user = config.get("user")
        self.zygote: Zygote | None = None
        self.worker: Session | None = None
        self.calls = 0  # python calls sent to sessions, numbering them (see code_frame)
        self.copier: Copier | None = None  # a snapshot or restore under way (see fork)
        self.lender: socket.socket | None = None  # where the session's pipes go to the host (op_session)
        self.baseline: set[str] = set()  # every entry of every writable mount, before any code ran
        self.writable: list[str] = []  # the directories among them that code may write in
        self.unwipeable: str | None = "code runs as the agent's own user" if not self.user else None
        self.keyrings = False  # keyctl works here (the agent joined a session keyring of its own)
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
        output sit in the pipes (64 KiB each) instead of waking the agent once per write.
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
        """Open a regular file only: a FIFO would block the agent and /dev/zero never ends."""
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


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def connect(path: str) -> socket.socket:
    """The host's socket (Docker with a local engine), connected before anything else runs.

    The host accepts two connections (requests, then the lending socket of :meth:`Agent.op_session`)
    and unlinks the socket before its first request, so by the time any user code exists there is
    nothing left to connect to.
    """
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    channel.connect(path)
    return channel


def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    if config.get("jail"):
        jail(config["jail"])
        if config.get("probe"):  # the host only asked whether the jail can be made here
            return
    channel = connect(config["socket"]) if config.get("socket") else None
    lender = connect(config["socket"]) if channel else None  # the host accepts a second connection for it
    if config.get("lend_fd") is not None:
        lender = socket.socket(fileno=int(config["lend_fd"]))
    requests, replies = (channel.fileno(), channel.fileno()) if channel else (0, 1)
    agent = Agent(config)
    agent.lender = lender
    if agent.user:
        os.setgroups([])
    # No privilege gain through setuid files for anything started from here.
    checked(libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl")
    agent.keyrings = new_session_keyring()
    if agent.keyrings and agent.keyring_filter is None and agent.unwipeable is None:
        # Code could leave keys under its uid (its persistent keyring outlives it) that no wipe clears.
        agent.unwipeable = "code can use keyrings on " + os.uname().machine
    if config.get("cores"):  # no CPU quota on this backend: the nearest thing is a few cores of its own
        os.sched_setaffinity(0, config["cores"])
    os.makedirs(agent.workdir, exist_ok=True)
    if agent.user:  # root's, sticky and world-writable like /tmp: code owns nothing here it could mark
        os.chmod(agent.workdir, 0o1777)
    os.chdir(agent.workdir)
    agent.take_baseline()
    agent.zygote = Zygote(agent)  # before any request: its memory holds nothing a request brought
    try:
        agent.start_worker()
    except OSError:
        pass  # the first python call reports it
    pending = bytearray()
    try:
        while True:
            remaining = agent.deadline - time.monotonic()
            if remaining <= 0:
                break
            if not select.select([requests], [], [], remaining)[0]:
                continue
            chunk = os.read(requests, READ_CHUNK)  # under malloc's mmap threshold: no mmap per request
            if not chunk:
                break
            end = chunk.find(b"\n")  # only new bytes are searched: a 100 MB write_file stays linear
            while end >= 0:
                pending += chunk[:end]
                chunk = chunk[end + 1 :]
                if pending:
                    write_all(replies, answer(agent, bytes(pending)))
                pending.clear()
                end = chunk.find(b"\n")
            pending += chunk
    finally:
        agent.shutdown()


def answer(agent: Agent, line: bytes) -> bytes:
    try:
        req = json.loads(line)
    except ValueError as e:
        reply = {"id": None, "ok": False, "error": f"bad frame: {e}"}
    else:
        reply = agent.handle(req)
    return json.dumps(reply).encode("utf-8") + b"\n"


if __name__ == "__main__":
    main()
