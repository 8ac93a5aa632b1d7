"""Linux calls Python lacks, through ``ctypes``: mounts, namespaces' flags, keyrings and the seccomp
filter that keeps code from them.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
from typing import Any

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

    The supervisor joins one at start, since the one inherited is the host's: it holds the keys of
    whoever started agentgym, and nothing the supervisor starts should hold it. Code is then kept from
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
    """:func:`keyring_filter`'s program as the kernel takes it, made once in the supervisor: a session forked
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
