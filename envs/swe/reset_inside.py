"""Run inside a SWE sandbox by the reset between episodes (stdlib only, ``python3 -I -S``, as the code's user).

``record REPO OUT``: write to ``OUT`` (JSON) what a fresh container holds that ``git reset`` does not
put back: the bytes and times of git's own files (``.git/index``, ``.git/ORIG_HEAD``, every reflog
under ``.git/logs``), every tracked file's access and modification times, every tracked entry's mode, link count and
extended attributes and every tracked folder's inode (none of which git models), and the state of every ignored
path that was there at start (type, size, times, mode of everything under it).

``restore REPO RECORD OUT SUPERVISOR``: after the episode's processes are dead and ``git reset`` ran, put
git's own files back as recorded, give every tracked file a new inode (:func:`renew`), put the tracked
entries' modes and extended attributes and the tracked files' times back as recorded, remove every SysV IPC object (the
sandbox wipe's own ``remove_ipc``, from the supervisor package written at ``SUPERVISOR``), and write to ``OUT`` the
ignored paths' state and the tracked entries' metadata now and what IPC objects are left, for the
caller to compare.

Nothing here trusts the repository: links are not followed, and only recorded paths are touched.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Iterator
from typing import Any

GIT_OWN = (".git/index", ".git/ORIG_HEAD", ".git/logs")


def git_own(repo: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for top in GIT_OWN:
        for path in walk(os.path.join(repo, top)):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    data = base64.b64encode(f.read()).decode()
                out[os.path.relpath(path, repo)] = [data, st.st_atime_ns, st.st_mtime_ns]
    return out


def walk(top: str) -> list[str]:
    """``top`` and everything under it, links not followed; [] when it does not exist."""
    if not os.path.lexists(top):
        return []
    found = [top]
    if stat.S_ISDIR(os.lstat(top).st_mode):
        for folder, dirs, files in os.walk(top):
            found += [os.path.join(folder, name) for name in sorted(dirs + files)]
    return found


def tracked(repo: str) -> list[str]:
    git = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "ls-files", "-z"]
    listed = subprocess.run(git, cwd=repo, capture_output=True, check=True,
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_GLOBAL": "/dev/null"})
    return [p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def times(repo: str) -> dict[str, list[int]]:
    """Access and modification times of every tracked file and of the folders that hold them."""
    files = tracked(repo)
    folders = {"/".join(p.split("/")[:i]) for p in files for i in range(p.count("/") + 1)}
    out = {}
    for path in [*files, *sorted(folders)]:
        try:
            st = os.lstat(os.path.join(repo, path))
        except FileNotFoundError:
            continue
        out[path] = [st.st_atime_ns, st.st_mtime_ns]
    return out


def tracked_entries(repo: str) -> list[str]:
    """Every tracked file, the folders that hold them and the repository's own folder (``""``)."""
    files = tracked(repo)
    return [*files, *sorted({"/".join(p.split("/")[:i]) for p in files for i in range(p.count("/") + 1)})]


def xattrs(path: str) -> dict[str, str]:
    """``path``'s extended attributes (base64 values), links not followed; {} where it has none to give."""
    try:
        names = os.listxattr(path, follow_symlinks=False)
        return {n: base64.b64encode(os.getxattr(path, n, follow_symlinks=False)).decode() for n in sorted(names)}
    except OSError:
        return {}


def _present(repo: str, rels: Iterable[str]) -> Iterator[tuple[str, str, os.stat_result]]:
    """Each of ``rels`` (paths in ``repo``) that exists, with its full path and ``lstat``."""
    for rel in rels:
        path = os.path.join(repo, rel)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        yield rel, path, st


def metadata(repo: str) -> dict[str, list[Any]]:
    """Mode (every bit, not only git's executable one), link count and extended attributes of every
    tracked entry, and a folder's inode: what git does not model, and so what ``git reset`` leaves
    as the episode made it. (A file's inode is new at every reset: :func:`renew`.)"""
    out: dict[str, list[Any]] = {}
    for rel, path, st in _present(repo, tracked_entries(repo)):
        folder = stat.S_ISDIR(st.st_mode)
        out[rel] = [st.st_mode, 0 if folder else st.st_nlink, xattrs(path), st.st_ino if folder else 0]
    return out


def renew(repo: str) -> None:
    """Give every tracked file and symbolic link a new inode, a copy renamed over it, in path order.

    ``git reset`` rewrites only the files the episode changed, so their new inodes (``ls -i``), and
    the old one of a file the episode replaced by a copy of itself, would tell the next episode which
    files those were. After this every one is new at every reset, whatever the episode did (its
    mode and extended attributes copied, its times put back after)."""
    for _, path, st in _present(repo, tracked(repo)):
        fresh = os.path.join(os.path.dirname(path), f".agentgym-renew-{os.getpid()}")
        try:
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(path), fresh)
            elif stat.S_ISREG(st.st_mode):
                shutil.copy2(path, fresh, follow_symlinks=False)  # bytes, mode, extended attributes
            else:
                continue
            os.rename(fresh, path)
        except OSError:  # a folder the image made read-only: the file keeps its inode
            if os.path.lexists(fresh):
                os.unlink(fresh)


def restore_metadata(repo: str, recorded: dict[str, list[Any]]) -> None:
    """Put every recorded entry's mode and extended attributes back (links keep theirs: none can be set)."""
    for rel, (mode, _, attrs, _) in sorted(recorded.items(), key=lambda kv: -kv[0].count("/")):
        path = os.path.join(repo, rel)
        try:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                continue
            if st.st_mode != mode:
                os.chmod(path, stat.S_IMODE(mode))
            now = xattrs(path)
            for name in now.keys() - attrs.keys():
                os.removexattr(path, name, follow_symlinks=False)
            for name, value in attrs.items():
                if now.get(name) != value:
                    os.setxattr(path, name, base64.b64decode(value), follow_symlinks=False)
        except OSError:
            continue  # left as it is: the comparison that follows names it


def ignored_state(repo: str, paths: list[str]) -> list[list[Any]]:
    """Type, size, mode, modification and change times of every entry under the ignored ``paths``.

    The change time is the kernel's: no call a process can make sets it back, so an edit inside an
    ignored folder shows even when its modification time was put back."""
    out = []
    for top in paths:
        for path in walk(os.path.join(repo, top.strip("/"))):
            st = os.lstat(path)
            out.append([os.path.relpath(path, repo), stat.S_IFMT(st.st_mode), st.st_size, st.st_mode,
                        st.st_mtime_ns, st.st_ctime_ns])
    return out


def record(repo: str, out: str, ignored: list[str]) -> None:
    state = {"git_own": git_own(repo), "times": times(repo), "ignored_paths": ignored,
             "ignored": ignored_state(repo, ignored), "metadata": metadata(repo)}
    with open(out, "w") as f:
        json.dump(state, f)


def restore(repo: str, record_path: str, out: str, package: str) -> None:
    with open(record_path) as f:
        state = json.load(f)
    for top in GIT_OWN:
        path = os.path.join(repo, top)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
    for rel, (data, atime, mtime) in state["git_own"].items():
        path = os.path.join(repo, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        os.utime(path, ns=(atime, mtime))
    restore_metadata(repo, state["metadata"])  # folders writable again as they were, before the copies
    renew(repo)
    for rel, (atime, mtime) in state["times"].items():  # files first, then their folders
        try:
            os.utime(os.path.join(repo, rel), ns=(atime, mtime), follow_symlinks=False)
        except FileNotFoundError:
            pass
    sys.path.insert(0, os.path.dirname(package))
    from supervisor.cleaner import remove_ipc  # type: ignore[import-not-found]  # written beside this file

    left = remove_ipc()
    with open(out, "w") as f:
        json.dump({"ignored": ignored_state(repo, state["ignored_paths"]), "ipc": left,
                   "metadata": metadata(repo)}, f)


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
    else:
        restore(*sys.argv[2:6])
