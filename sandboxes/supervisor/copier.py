"""The copier of a fork: a child that runs as the code's uid and writes every place code can write
as a stream of entries (snapshot), or makes them here from one (restore).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import stat
import struct
import time
from typing import IO, TYPE_CHECKING, Any

from .cleaner import writable_by
from .linux import mountinfo
from .process import close_all_but
from .wire import set_nonblocking, write_all

if TYPE_CHECKING:  # for annotations only: ops imports this module
    from .ops import Supervisor


def fork_roots(workdir: str, user: list[int] | None) -> list[str]:
    """Where code can write that no container image holds, so a fork must copy it through the supervisor.

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

    The supervisor holds the other end (``fd``, non-blocking); :meth:`finish` collects the child's verdict.
    """

    def __init__(self, supervisor: Supervisor, job: Any, writes: bool) -> None:
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
                supervisor.child_setup()
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
